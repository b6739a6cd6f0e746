#include "tests/support/sidecar_process.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"

namespace breaker::testing {

absl::StatusOr<std::unique_ptr<Subprocess>> StartSidecarProcess(const std::string& config_path,
                                                                const std::string& name) {
  Subprocess::Options options;
  options.binary = kSidecarBinary;
  options.name = name;
  options.args = {absl::StrCat("--config=", config_path)};
  return Subprocess::Start(std::move(options));
}

absl::Status WaitSidecarReady(const Subprocess& sidecar, absl::Time deadline) {
  const bool ready =
      sidecar
          .WaitForLine(
              Subprocess::Stream::kStdout,
              [](absl::string_view line) { return absl::StrContains(line, "sidecar ready"); },
              deadline)
          .has_value();
  if (ready) return absl::OkStatus();
  if (absl::Now() < deadline) {
    return absl::FailedPreconditionError(absl::StrCat(
        sidecar.name(), " ended its output before printing 'sidecar ready' (its log is above)"));
  }
  return absl::DeadlineExceededError(
      absl::StrCat(sidecar.name(), " did not print 'sidecar ready' in time (its log is above)"));
}

absl::StatusOr<std::unique_ptr<Subprocess>> StartReadySidecar(const std::string& config_path,
                                                              const std::string& name,
                                                              absl::Time deadline) {
  absl::StatusOr<std::unique_ptr<Subprocess>> sidecar = StartSidecarProcess(config_path, name);
  if (!sidecar.ok()) return sidecar.status();
  if (absl::Status ready = WaitSidecarReady(**sidecar, deadline); !ready.ok()) return ready;
  return sidecar;
}

}  // namespace breaker::testing
