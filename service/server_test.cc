#include "service/server.h"

#include <chrono>
#include <cstdlib>
#include <future>
#include <string>
#include <vector>

#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/status_matchers.h"

namespace breaker::service {
namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::HasSubstr;

std::string TempDir() { return std::getenv("TEST_TMPDIR"); }

ServerOptions LoopbackOptions() {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.state_dir = TempDir() + "/state";
  return options;
}

// Calls grpc.health.v1.Health/Check for the overall health without generated stubs: the
// request is the empty message; the answer {status: SERVING} is the two bytes 08 01.
std::string CheckHealth(int port) {
  auto channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice empty_message("");
  grpc::ByteBuffer request(&empty_message, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                 &response, [&done](grpc::Status status) { done.set_value(status); });
  grpc::Status status = done.get_future().get();
  if (!status.ok()) return "error: " + status.error_message();
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

TEST(Server, ServesHealthOnAnEphemeralPort) {
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(LoopbackOptions());
  ASSERT_THAT(server, IsOk());
  ASSERT_GT((*server)->port(), 0);
  EXPECT_EQ(CheckHealth((*server)->port()), std::string("\x08\x01", 2));
}

TEST(Server, RefusesAStateDirectoryThatIsAFile) {
  ServerOptions options = LoopbackOptions();
  options.state_dir = "/dev/null";
  EXPECT_THAT(Server::Start(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--state_dir")));
}

TEST(Server, RefusesAnAddressInUse) {
  absl::StatusOr<std::unique_ptr<Server>> first = Server::Start(LoopbackOptions());
  ASSERT_THAT(first, IsOk());
  ServerOptions options = LoopbackOptions();
  options.listen_address = "127.0.0.1:" + std::to_string((*first)->port());
  EXPECT_THAT(Server::Start(options),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("--listen")));
}

}  // namespace
}  // namespace breaker::service
