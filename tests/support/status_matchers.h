#ifndef TESTS_STATUS_MATCHERS_H_
#define TESTS_STATUS_MATCHERS_H_

// GoogleTest matchers for absl::Status and absl::StatusOr<T>:
//   EXPECT_THAT(DoIt(), IsOk());
//   EXPECT_THAT(Parse(x), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("slot")));

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace breaker::testing {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }

template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

MATCHER(IsOk, "is OK") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status is " << status.ToString();
  return status.ok();
}

MATCHER_P(StatusIs, code, "has status code " + absl::StatusCodeToString(code)) {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status is " << status.ToString();
  return status.code() == code;
}

MATCHER_P2(StatusIs, code, message_matcher,
           "has status code " + absl::StatusCodeToString(code) + " and a matching message") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status is " << status.ToString();
  return status.code() == code &&
         ::testing::ExplainMatchResult(message_matcher, std::string(status.message()),
                                       result_listener);
}

}  // namespace breaker::testing

#endif  // TESTS_STATUS_MATCHERS_H_
