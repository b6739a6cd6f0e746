// breakerctl: the operators' command-line tool over breakerd's Admin API. See
// `breakerctl --help` and ctl/commands.h.

#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "ctl/command_line.h"
#include "ctl/commands.h"

namespace ctl = ::breaker::ctl;

int main(int argc, char** argv) {
  // Under `bazel run`, file arguments (simulate's) are relative to where the command was
  // typed, not to Bazel's runfiles tree.
  if (const char* dir = std::getenv("BUILD_WORKING_DIRECTORY"); dir != nullptr) {
    if (chdir(dir) != 0) std::cerr << "breakerctl: cannot enter " << dir << "\n";
  }

  ctl::CommandLine line;
  const absl::Status parsed = ctl::ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc),
                                                    ctl::CommandSpecs(), &line);
  if (!parsed.ok()) return ctl::ReportResult(line, ctl::GlobalOptions(), parsed, std::cerr);
  if (line.help) return ctl::PrintHelp(line, std::cout);

  const absl::StatusOr<ctl::GlobalOptions> options = ctl::GlobalOptionsFrom(line);
  if (!options.ok())
    return ctl::ReportResult(line, ctl::GlobalOptions(), options.status(), std::cerr);

  return ctl::ReportResult(
      line, *options, ctl::RunCommand(line, *options, breaker::SystemClock(), std::cout, std::cerr),
      std::cerr);
}
