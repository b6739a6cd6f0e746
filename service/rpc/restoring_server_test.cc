#include "service/rpc/restoring_server.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::testing::CallUnary;
using ::breaker::testing::CheckHealth;
using ::breaker::testing::StatusIs;
using ::testing::HasSubstr;

TEST(RestoringServerTest, HealthIsNotServingAndCallsAreUnavailable) {
  absl::StatusOr<std::unique_ptr<RestoringServer>> restoring =
      RestoringServer::Start("127.0.0.1:0", grpc::InsecureServerCredentials());
  ASSERT_TRUE(restoring.ok()) << restoring.status();
  const int port = (*restoring)->port();
  ASSERT_GT(port, 0);
  for (const char* service : {"", "breaker.v1.Breaker", "breaker.v1.Admin"}) {
    EXPECT_EQ(CheckHealth(port, service), "NOT_SERVING") << service;
  }
  auto admin = v1::Admin::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  EXPECT_THAT(CallUnary(*admin, &v1::Admin::Stub::async::GetPolicy, v1::GetPolicyRequest()),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("restoring its state")));
}

TEST(RestoringServerTest, ReleasesItsPortForTheServerThatFollows) {
  absl::StatusOr<std::unique_ptr<RestoringServer>> restoring =
      RestoringServer::Start("127.0.0.1:0", grpc::InsecureServerCredentials());
  ASSERT_TRUE(restoring.ok()) << restoring.status();
  const std::string address = WithPort("127.0.0.1:0", (*restoring)->port());
  restoring->reset();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  std::unique_ptr<grpc::Server> next = builder.BuildAndStart();
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(absl::StrCat("127.0.0.1:", port), address);
}

TEST(RestoringServerTest, ATakenAddressIsRefused) {
  absl::StatusOr<std::unique_ptr<RestoringServer>> first =
      RestoringServer::Start("127.0.0.1:0", grpc::InsecureServerCredentials());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(RestoringServer::Start(WithPort("127.0.0.1:0", (*first)->port()),
                                     grpc::InsecureServerCredentials()),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("address in use")));
}

TEST(WithPortTest, ReplacesThePort) {
  EXPECT_EQ(WithPort("127.0.0.1:0", 4242), "127.0.0.1:4242");
  EXPECT_EQ(WithPort("[::1]:0", 4242), "[::1]:4242");
  EXPECT_EQ(WithPort("localhost:50051", 50051), "localhost:50051");
  EXPECT_EQ(WithPort("unix:/run/breakerd.sock", 1), "unix:/run/breakerd.sock");
}

}  // namespace
}  // namespace breaker::service
