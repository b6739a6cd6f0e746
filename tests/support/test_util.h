#ifndef TESTS_TEST_UTIL_H_
#define TESTS_TEST_UTIL_H_

// Small helpers shared by the tests that run a real breakerd.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "ctl/unary_call.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/status.h"
#include "gtest/gtest.h"

namespace breaker::testing {

// How many times slower than a plain build the code under test runs. A bound that states a
// goal of the product in real time (health answers within 1 s) is multiplied by it: a build
// under ThreadSanitizer or AddressSanitizer checks threads and memory, not latency.
#if defined(__SANITIZE_THREAD__)
inline constexpr int kSanitizerSlowdown = 5;
#elif defined(__SANITIZE_ADDRESS__)
inline constexpr int kSanitizerSlowdown = 2;
#else
inline constexpr int kSanitizerSlowdown = 1;
#endif

// Polls `condition` every `interval` until it holds or `timeout` of real time has passed;
// returns whether it holds. The timeout is generous: sanitizers slow everything down. (Polling
// for a condition with a deadline, never a fixed sleep.) The one such loop of the tests.
inline bool WaitFor(const std::function<bool()>& condition,
                    absl::Duration timeout = absl::Seconds(30),
                    absl::Duration interval = absl::Milliseconds(2)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(interval);
  }
  return true;
}

// A directory of its own for the running test: TEST_TMPDIR is shared by the whole binary.
inline std::string TestDir() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string dir =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/", info->test_suite_name(), ".", info->name());
  std::filesystem::create_directories(dir);
  return dir;
}

// The test side's conversion of a call's status, for the status matchers.
// A loopback port that nothing listens on (bound, then closed): connections to it are refused.
inline int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  close(fd);
  return ntohs(address.sin_port);
}

inline absl::Status FromGrpc(const grpc::Status& status) { return ctl::DescribedStatus(status); }

// Calls a unary rpc of `stub` with a 10 s deadline and waits for it (see ctl/unary_call.h: through
// the callback API, which ThreadSanitizer can follow).
template <typename Stub, typename Async, typename Request, typename Response>
absl::StatusOr<Response> CallUnary(Stub& stub,
                                   void (Async::*method)(grpc::ClientContext*, const Request*,
                                                         Response*,
                                                         std::function<void(grpc::Status)>),
                                   const Request& request) {
  return ctl::CallUnary(stub, method, request, absl::Seconds(10));
}

// Calls grpc.health.v1.Health/Check on 127.0.0.1:`port` for `service` ("": the overall health)
// with a deadline of `timeout`, and returns "SERVING", "NOT_SERVING" or "error: <why>". Without
// generated stubs (the system's gRPC ships none for health): the request is {service: 1}; the
// answer {status: SERVING} is the two bytes 08 01, {status: NOT_SERVING} 08 02.
inline std::string CheckHealth(int port, const std::string& service = "",
                               absl::Duration timeout = absl::Seconds(10)) {
  grpc::GenericStub stub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  std::string request_bytes;
  if (!service.empty()) {
    // Field 1, length-delimited; service names are shorter than 128 bytes.
    request_bytes = std::string("\x0a", 1) + static_cast<char>(service.size()) + service;
  }
  grpc::Slice request_slice(request_bytes);
  grpc::ByteBuffer request(&request_slice, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status status) { done.set_value(status); });
  const grpc::Status status = done.get_future().get();
  if (!status.ok()) return absl::StrCat("error: ", status.error_message());
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return "error: unreadable answer";
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  if (bytes == std::string("\x08\x01", 2)) return "SERVING";
  if (bytes == std::string("\x08\x02", 2)) return "NOT_SERVING";
  return absl::StrCat("error: unexpected answer of ", bytes.size(), " bytes");
}

}  // namespace breaker::testing

#endif  // TESTS_TEST_UTIL_H_
