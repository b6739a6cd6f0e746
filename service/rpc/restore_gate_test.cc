#include "service/rpc/restore_gate.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "common/replica_trailer.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::testing::CheckHealth;
using ::breaker::testing::FromGrpc;
using ::breaker::testing::StatusIs;
using ::breaker::testing::WaitFor;
using ::testing::HasSubstr;

constexpr absl::Duration kLongHold = absl::Minutes(10);
constexpr absl::Duration kCallDeadline = absl::Seconds(30);

// Answers GetPolicy with version 7: what the gate lets calls through to.
class FakeAdmin : public v1::Admin::CallbackService {
 public:
  grpc::ServerUnaryReactor* GetPolicy(grpc::CallbackServerContext* context,
                                      const v1::GetPolicyRequest*, v1::Policy* response) override {
    response->set_version(7);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

// A server on loopback with `gate`'s interceptor and `service`.
class GatedServer {
 public:
  GatedServer(RestoreGate& gate, grpc::Service* service) {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
    creators.push_back(gate.InterceptorFactory());
    builder.experimental().SetInterceptorCreators(std::move(creators));
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service);
    server_ = builder.BuildAndStart();
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_),
                                   grpc::InsecureChannelCredentials());
  }
  ~GatedServer() { server_->Shutdown(std::chrono::system_clock::now()); }

  int port() const { return port_; }
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

// A GetPolicy call in flight, with a deadline.
struct PendingGetPolicy {
  explicit PendingGetPolicy(v1::Admin::Stub& stub) {
    context.set_deadline(absl::ToChronoTime(absl::Now() + kCallDeadline));
    stub.async()->GetPolicy(&context, &request, &response, [this](grpc::Status answer) {
      status = FromGrpc(answer);
      done.Notify();
    });
  }
  bool Done() { return done.WaitForNotificationWithTimeout(kCallDeadline); }

  grpc::ClientContext context;
  v1::GetPolicyRequest request;
  v1::Policy response;
  absl::Status status;
  absl::Notification done;
};

TEST(RestoreGateTest, HoldsCallsUntilItOpensAndLetsHealthThrough) {
  FakeAdmin admin;
  RestoreGate gate(kLongHold);
  GatedServer server(gate, &admin);
  std::unique_ptr<v1::Admin::Stub> stub = v1::Admin::NewStub(server.channel());
  PendingGetPolicy held(*stub);
  ASSERT_TRUE(WaitFor([&] { return gate.held() == 1; }));
  // Health is not breakerd's own service: it answers while the call waits.
  EXPECT_EQ(CheckHealth(server.port()), "SERVING");
  EXPECT_FALSE(held.done.HasBeenNotified());
  EXPECT_EQ(gate.held(), 1);

  gate.Open();
  ASSERT_TRUE(held.Done());
  EXPECT_TRUE(held.status.ok()) << held.status;
  EXPECT_EQ(held.response.version(), 7u);
  EXPECT_EQ(gate.held(), 0);
  EXPECT_TRUE(gate.open());
  EXPECT_TRUE(gate.status().ok());

  // Once open, calls go through at once.
  PendingGetPolicy later(*stub);
  ASSERT_TRUE(later.Done());
  EXPECT_EQ(later.response.version(), 7u);
}

TEST(RestoreGateTest, AFailureEndsTheHeldCallsAndLaterOnesWithItsStatus) {
  RestoreGate gate(kLongHold);
  GatedAdminService admin(&gate);
  GatedServer server(gate, &admin);
  std::unique_ptr<v1::Admin::Stub> stub = v1::Admin::NewStub(server.channel());
  PendingGetPolicy held(*stub);
  ASSERT_TRUE(WaitFor([&] { return gate.held() == 1; }));

  gate.Fail(absl::UnavailableError("the state could not be restored"));
  ASSERT_TRUE(held.Done());
  EXPECT_THAT(held.status, StatusIs(absl::StatusCode::kUnavailable,
                                    HasSubstr("the state could not be restored")));
  PendingGetPolicy later(*stub);
  ASSERT_TRUE(later.Done());
  EXPECT_THAT(later.status, StatusIs(absl::StatusCode::kUnavailable,
                                     HasSubstr("the state could not be restored")));
  // Open after a failure changes nothing.
  gate.Open();
  EXPECT_FALSE(gate.open());
  EXPECT_THAT(gate.status(), StatusIs(absl::StatusCode::kUnavailable));
}

TEST(RestoreGateTest, AHeldNodeStreamEndsWithTheFailure) {
  RestoreGate gate(kLongHold);
  GatedNodeService node(&gate);
  GatedServer server(gate, &node);
  std::unique_ptr<v1::Breaker::Stub> stub = v1::Breaker::NewStub(server.channel());
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kCallDeadline));
  std::unique_ptr<grpc::ClientReaderWriter<v1::NodeMessage, v1::ServerMessage>> stream =
      stub->Connect(&context);
  v1::NodeMessage hello;
  hello.mutable_hello()->set_node_id("node-1");
  stream->Write(hello);
  ASSERT_TRUE(WaitFor([&] { return gate.held() == 1; }));

  gate.Fail(absl::UnavailableError("breakerd could not restore its state"));
  v1::ServerMessage message;
  EXPECT_FALSE(stream->Read(&message));
  EXPECT_THAT(FromGrpc(stream->Finish()),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("breakerd could not restore its state")));
}

TEST(RestoreGateTest, ACallWhoseHoldRunsOutIsToldToRetry) {
  // The shortest hold: the call goes on at once, the gate still closed.
  RestoreGate gate(absl::Nanoseconds(1));
  GatedAdminService admin(&gate);
  GatedServer server(gate, &admin);
  std::unique_ptr<v1::Admin::Stub> stub = v1::Admin::NewStub(server.channel());
  PendingGetPolicy call(*stub);
  ASSERT_TRUE(call.Done());
  EXPECT_THAT(call.status,
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("still restoring its state")));
  EXPECT_EQ(gate.held(), 0);
}

TEST(RestoreGateTest, ARefusingGateEndsCallsAtOnceUntilItHoldsThemAgain) {
  RestoreGate gate(kLongHold);
  GatedAdminService admin(&gate);
  GatedServer server(gate, &admin);
  std::unique_ptr<v1::Admin::Stub> stub = v1::Admin::NewStub(server.channel());
  PendingGetPolicy held(*stub);
  ASSERT_TRUE(WaitFor([&] { return gate.held() == 1; }));

  // A standby: the call held and every later one end with the refusal.
  gate.Refuse(absl::UnavailableError("a standby; the leader is at 10.0.0.1:50051"),
              "10.0.0.1:50051");
  ASSERT_TRUE(held.Done());
  EXPECT_THAT(held.status,
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("leader is at 10.0.0.1:50051")));
  PendingGetPolicy refused(*stub);
  ASSERT_TRUE(refused.Done());
  EXPECT_THAT(refused.status, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("standby")));
  // The leader's address, for clients, in the trailer.
  const auto trailers = refused.context.GetServerTrailingMetadata();
  const auto leader = trailers.find(kLeaderTrailer);
  ASSERT_NE(leader, trailers.end());
  EXPECT_EQ(std::string(leader->second.data(), leader->second.size()), "10.0.0.1:50051");
  EXPECT_EQ(gate.held(), 0);

  // It leads and restores: calls wait again, and go through once it opens.
  gate.HoldCalls();
  PendingGetPolicy waiting(*stub);
  ASSERT_TRUE(WaitFor([&] { return gate.held() == 1; }));
  EXPECT_FALSE(waiting.done.HasBeenNotified());
  gate.Open();
  ASSERT_TRUE(waiting.Done());
  EXPECT_TRUE(waiting.status.ok()) << waiting.status;
}

TEST(RestoreGateTest, DestroyedClosedItEndsTheHeldCalls) {
  auto gate = std::make_unique<RestoreGate>(kLongHold);
  GatedAdminService gated(gate.get());
  GatedServer server(*gate, &gated);
  std::unique_ptr<v1::Admin::Stub> stub = v1::Admin::NewStub(server.channel());
  PendingGetPolicy held(*stub);
  ASSERT_TRUE(WaitFor([&] { return gate->held() == 1; }));
  gate.reset();  // no call is made after this one
  ASSERT_TRUE(held.Done());
  EXPECT_THAT(held.status, StatusIs(absl::StatusCode::kUnavailable,
                                    HasSubstr("stopping before it restored its state")));
}

}  // namespace
}  // namespace breaker::service
