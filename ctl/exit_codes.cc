#include "ctl/exit_codes.h"

#include "absl/strings/cord.h"

namespace breaker::ctl {

namespace {

// The payload that marks an error as the tool's own; its value says which kind.
constexpr char kKindUrl[] = "type.breakerctl/error-kind";
constexpr char kUsage[] = "usage";
constexpr char kInput[] = "input";
constexpr char kExpectation[] = "expectation";

absl::Status Mark(absl::Status status, absl::string_view kind) {
  status.SetPayload(kKindUrl, absl::Cord(kind));
  return status;
}

bool HasKind(const absl::Status& status, absl::string_view kind) {
  const absl::optional<absl::Cord> payload = status.GetPayload(kKindUrl);
  return payload.has_value() && *payload == kind;
}

}  // namespace

absl::Status UsageError(absl::string_view message) {
  return Mark(absl::InvalidArgumentError(message), kUsage);
}

absl::Status InputError(const absl::Status& status) { return Mark(status, kInput); }

absl::Status ExpectationsFailed(absl::string_view message) {
  return Mark(absl::FailedPreconditionError(message), kExpectation);
}

bool IsUsageError(const absl::Status& status) { return HasKind(status, kUsage); }

bool IsInputError(const absl::Status& status) { return HasKind(status, kInput); }

ExitCode ExitCodeFor(const absl::Status& status) {
  if (status.ok()) return kExitOk;
  if (IsUsageError(status) || IsInputError(status)) return kExitUsage;
  if (HasKind(status, kExpectation)) return kExitExpectationFailed;
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return kExitUnreachable;
    default:
      return kExitRefused;
  }
}

}  // namespace breaker::ctl
