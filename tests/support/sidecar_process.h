#ifndef TESTS_SUPPORT_SIDECAR_PROCESS_H_
#define TESTS_SUPPORT_SIDECAR_PROCESS_H_

// breaker-sidecar as a child process, for the tests that run it as it runs in production. The
// binary must be in the test's data: //sidecar:breaker-sidecar.

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/support/subprocess.h"

namespace breaker::testing {

// The binary, from the runfiles root of the workspace (the test's working directory).
inline constexpr char kSidecarBinary[] = "sidecar/breaker-sidecar";

// Starts breaker-sidecar on the configuration file at `config_path`; its log lines are
// prefixed with `name`. Does not wait for it: for a sidecar expected to refuse to start.
absl::StatusOr<std::unique_ptr<Subprocess>> StartSidecarProcess(const std::string& config_path,
                                                                const std::string& name);

// Waits until `sidecar` prints "sidecar ready" (every port it serves listens). Returns
// DEADLINE_EXCEEDED at `deadline`, FAILED_PRECONDITION when it exits first; either names the
// sidecar, whose log is in the test's.
absl::Status WaitSidecarReady(const Subprocess& sidecar, absl::Time deadline);

// StartSidecarProcess, then WaitSidecarReady.
absl::StatusOr<std::unique_ptr<Subprocess>> StartReadySidecar(const std::string& config_path,
                                                              const std::string& name,
                                                              absl::Time deadline);

}  // namespace breaker::testing

#endif  // TESTS_SUPPORT_SIDECAR_PROCESS_H_
