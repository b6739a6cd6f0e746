#ifndef CTL_EXIT_CODES_H_
#define CTL_EXIT_CODES_H_

// breakerctl's exit codes, which scripts rely on, and the errors that lead to them. A command
// returns an absl::Status; ExitCodeFor is the one place that turns it into an exit code.
//
// An error without a mark came from the service (or from gRPC on the way to it); the tool's
// own errors are marked with a payload, because their codes overlap the service's (a missing
// scenario file and an unbanned builder are both NOT_FOUND, yet exit differently).

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace breaker::ctl {

enum ExitCode : int {
  kExitOk = 0,
  // breakerd answered, and refused the request.
  kExitRefused = 1,
  // The command line is wrong (or a file it names cannot be used); nothing was sent.
  kExitUsage = 2,
  // breakerd could not be reached in time: UNAVAILABLE or DEADLINE_EXCEEDED.
  kExitUnreachable = 3,
  // `simulate` ran, and an expectation of the scenario did not hold.
  kExitExpectationFailed = 4,
};

// A mistake in the command line (unknown command or flag, bad or missing argument or value).
// Reported with the command's usage.
absl::Status UsageError(absl::string_view message);
// A file named on the command line cannot be used (missing, malformed). Reported as is (it
// names the file and line), without the usage. Keeps `status`'s code and message.
absl::Status InputError(const absl::Status& status);
// `simulate`: the scenario's expectations did not all hold.
absl::Status ExpectationsFailed(absl::string_view message);

bool IsUsageError(const absl::Status& status);
bool IsInputError(const absl::Status& status);

// The exit code for a command's result.
ExitCode ExitCodeFor(const absl::Status& status);

}  // namespace breaker::ctl

#endif  // CTL_EXIT_CODES_H_
