#ifndef TESTS_TEST_UTIL_H_
#define TESTS_TEST_UTIL_H_

// Small helpers shared by the tests that run a real breakerd.

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "ctl/unary_call.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"
#include "gtest/gtest.h"

namespace breaker::testing {

// Polls `condition` every 2 ms until it holds or `timeout` of real time has passed; returns
// whether it holds. The timeout is generous: sanitizers slow everything down. (Polling for a
// condition with a deadline, never a fixed sleep.)
inline bool WaitFor(const std::function<bool()>& condition,
                    absl::Duration timeout = absl::Seconds(30)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(2));
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
inline absl::Status FromGrpc(const grpc::Status& status) { return ctl::FromGrpcStatus(status); }

// Calls a unary rpc of `stub` with a 10 s deadline and waits for it (see ctl/unary_call.h: through
// the callback API, which ThreadSanitizer can follow).
template <typename Stub, typename Request, typename Response>
absl::StatusOr<Response> CallUnary(Stub& stub,
                                   void (Stub::async::*method)(grpc::ClientContext*, const Request*,
                                                               Response*,
                                                               std::function<void(grpc::Status)>),
                                   const Request& request) {
  return ctl::CallUnary(stub, method, request, absl::Seconds(10));
}

}  // namespace breaker::testing

#endif  // TESTS_TEST_UTIL_H_
