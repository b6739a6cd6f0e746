#include "service/rpc/restore_gate.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "common/fake_clock.h"
#include "common/replica_trailer.h"
#include "core/chain_time.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "service/fleet.h"
#include "service/rpc/admin_service.h"
#include "service/rpc/authorizer.h"
#include "service/rpc/node_service.h"
#include "service/rpc/served_fleet.h"
#include "service/storage/memory_state_store.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::testing::CheckHealth;
using ::breaker::testing::FromGrpc;
using ::breaker::testing::IsOk;
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

// A server on loopback with `gate`'s interceptor and `services`.
class GatedServer {
 public:
  GatedServer(RestoreGate& gate, const std::vector<grpc::Service*>& services) {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
    creators.push_back(gate.InterceptorFactory());
    builder.experimental().SetInterceptorCreators(std::move(creators));
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    for (grpc::Service* service : services) builder.RegisterService(service);
    server_ = builder.BuildAndStart();
    channel_ =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials());
  }
  ~GatedServer() { server_->Shutdown(std::chrono::system_clock::now()); }

  int port() const { return port_; }
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

// breakerd's services behind `gate`, as Server::Start registers them: they have no fleet
// until Serve.
class GatedServices {
 public:
  explicit GatedServices(RestoreGate& gate)
      : gate_(gate),
        served_(std::make_shared<ServedFleet>(&gate)),
        node_(served_, &authorizer_),
        admin_(served_, &authorizer_),
        server_(gate, {&node_, &admin_}) {}

  // What Server::Serve does once the state is restored: a fleet (on an empty store), bound,
  // then the gate opened.
  void Serve() {
    Fleet::Options options;
    options.store = std::make_unique<MemoryStateStore>();
    options.clock = &clock_;
    options.run_ticker = false;
    absl::StatusOr<std::unique_ptr<Fleet>> fleet = Fleet::Open(std::move(options));
    ASSERT_THAT(fleet, IsOk());
    fleet_ = *std::move(fleet);
    served_->Bind(fleet_.get());
    gate_.Open();
  }

  Fleet& fleet() { return *fleet_; }
  std::shared_ptr<grpc::Channel> channel() const { return server_.channel(); }

 private:
  RestoreGate& gate_;
  ::breaker::testing::FakeClock clock_{core::StartOf(1000, core::ChainSpec())};
  const Authorizer authorizer_{std::nullopt};
  std::unique_ptr<Fleet> fleet_;
  const std::shared_ptr<ServedFleet> served_;
  NodeService node_;
  AdminService admin_;
  GatedServer server_;
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
  ::breaker::testing::FakeClock clock(absl::UnixEpoch());
  RestoreGate gate(clock, kLongHold);
  GatedServer server(gate, {&admin});
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
  ::breaker::testing::FakeClock clock(absl::UnixEpoch());
  RestoreGate gate(clock, kLongHold);
  GatedServices services(gate);
  std::unique_ptr<v1::Admin::Stub> stub = v1::Admin::NewStub(services.channel());
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
  ::breaker::testing::FakeClock clock(absl::UnixEpoch());
  RestoreGate gate(clock, kLongHold);
  GatedServices services(gate);
  std::unique_ptr<v1::Breaker::Stub> stub = v1::Breaker::NewStub(services.channel());
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
  EXPECT_THAT(
      FromGrpc(stream->Finish()),
      StatusIs(absl::StatusCode::kUnavailable, HasSubstr("breakerd could not restore its state")));
}

TEST(RestoreGateTest, ACallWhoseHoldRunsOutIsToldToRetry) {
  ::breaker::testing::FakeClock clock(absl::UnixEpoch());
  RestoreGate gate(clock, kLongHold);
  GatedServices services(gate);
  std::unique_ptr<v1::Admin::Stub> stub = v1::Admin::NewStub(services.channel());
  PendingGetPolicy call(*stub);
  ASSERT_TRUE(WaitFor([&] { return gate.held() == 1; }));
  // Held until its hold has run out on the gate's clock, not a moment before.
  clock.Advance(kLongHold - absl::Seconds(1));
  EXPECT_FALSE(call.done.WaitForNotificationWithTimeout(absl::Milliseconds(300)));
  EXPECT_EQ(gate.held(), 1);
  clock.Advance(absl::Seconds(1));
  ASSERT_TRUE(call.Done());
  EXPECT_THAT(call.status,
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("still restoring its state")));
  EXPECT_EQ(gate.held(), 0);
}

// The leader's address, for clients, in the trailer.
std::string LeaderTrailer(const grpc::ClientContext& context) {
  const auto trailers = context.GetServerTrailingMetadata();
  const auto leader = trailers.find(kLeaderTrailer);
  if (leader == trailers.end()) return "";
  return std::string(leader->second.data(), leader->second.size());
}

TEST(RestoreGateTest, ARefusingGateEndsCallsAtOnceUntilItHoldsThemAgain) {
  ::breaker::testing::FakeClock clock(absl::UnixEpoch());
  RestoreGate gate(clock, kLongHold);
  GatedServices services(gate);
  std::unique_ptr<v1::Admin::Stub> stub = v1::Admin::NewStub(services.channel());
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
  EXPECT_EQ(LeaderTrailer(refused.context), "10.0.0.1:50051");
  EXPECT_EQ(gate.held(), 0);

  // A node's report, and its stream, are refused alike.
  std::unique_ptr<v1::Breaker::Stub> node = v1::Breaker::NewStub(services.channel());
  grpc::ClientContext report_context;
  report_context.set_deadline(absl::ToChronoTime(absl::Now() + kCallDeadline));
  v1::ReportRequest report;
  report.set_node_id("node-1");
  v1::ReportResponse report_response;
  EXPECT_THAT(FromGrpc(node->Report(&report_context, report, &report_response)),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("standby")));
  EXPECT_EQ(LeaderTrailer(report_context), "10.0.0.1:50051");
  grpc::ClientContext stream_context;
  stream_context.set_deadline(absl::ToChronoTime(absl::Now() + kCallDeadline));
  std::unique_ptr<grpc::ClientReaderWriter<v1::NodeMessage, v1::ServerMessage>> stream =
      node->Connect(&stream_context);
  v1::ServerMessage message;
  EXPECT_FALSE(stream->Read(&message));
  EXPECT_THAT(FromGrpc(stream->Finish()),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("standby")));
  EXPECT_EQ(LeaderTrailer(stream_context), "10.0.0.1:50051");

  // It leads and restores: calls wait again, and reach the services once it opens.
  gate.HoldCalls();
  PendingGetPolicy waiting(*stub);
  ASSERT_TRUE(WaitFor([&] { return gate.held() == 1; }));
  EXPECT_FALSE(waiting.done.HasBeenNotified());
  ASSERT_NO_FATAL_FAILURE(services.Serve());
  ASSERT_TRUE(waiting.Done());
  EXPECT_TRUE(waiting.status.ok()) << waiting.status;
  EXPECT_EQ(waiting.response.fleet_id(), services.fleet().fleet_id());
  PendingGetPolicy later(*stub);
  ASSERT_TRUE(later.Done());
  EXPECT_EQ(later.response.fleet_id(), services.fleet().fleet_id());
}

TEST(RestoreGateTest, DestroyedClosedItEndsTheHeldCalls) {
  ::breaker::testing::FakeClock clock(absl::UnixEpoch());
  auto gate = std::make_unique<RestoreGate>(clock, kLongHold);
  const Authorizer authorizer(std::nullopt);
  AdminService admin(std::make_shared<ServedFleet>(gate.get()), &authorizer);
  GatedServer server(*gate, {&admin});
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
