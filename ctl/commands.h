#ifndef CTL_COMMANDS_H_
#define CTL_COMMANDS_H_

// breakerctl's commands. Each is a function from what the user typed, an Admin stub and the
// output streams to an absl::Status; the status decides the exit code (exit_codes.h), and
// ReportResult is the one place that prints an error and its hint.
//
// Output: aligned tables for people by default; with --json, the response protos as proto
// JSON, one document per command (`watch`: one policy per line). Commands write through Output
// (format.h), which escapes every string shown to people.

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "common/clock.h"
#include "ctl/command_line.h"
#include "ctl/format.h"

namespace breaker::ctl {

struct CommandContext {
  const GlobalOptions& options;
  const CommandLine& line;
  // Null for the commands that run offline (help, simulate).
  breaker::v1::Admin::Stub* admin;
  Output& out;
  Output& err;
  // What `watch` stamps its lines with. Null for a hint (ReportResult), which reads no time.
  const Clock* clock;
};

struct Command {
  CommandSpec spec;
  absl::Status (*run)(const CommandContext& context) = nullptr;
  // Whether the command talks to breakerd (false: it runs offline and gets no stub).
  bool calls_service = true;
  // What to do about an error breakerd returned to this command, beyond its message; empty
  // when there is nothing to add. Null: no command-specific hints.
  std::string (*hint)(const CommandContext& context, const absl::Status& status) = nullptr;
};

// Every command, in the order `breakerctl --help` lists them.
const std::vector<Command>& Commands();
std::vector<const CommandSpec*> CommandSpecs();

// The Admin stub for `options.target`, with its TLS and bearer token: the one place a channel
// is made. An InputError when a TLS or token file cannot be read.
absl::StatusOr<std::unique_ptr<breaker::v1::Admin::Stub>> NewAdminStub(
    const GlobalOptions& options);

// Prints the help that `line` asks for (--help): the command's, or the program's when no
// command is given. Returns the exit code, 0.
int PrintHelp(const CommandLine& line, std::ostream& out);

// Runs the command of `line`, on `clock` (SystemClock() but in tests). REQUIRES: `line`
// parsed without error and names a command.
absl::Status RunCommand(const CommandLine& line, const GlobalOptions& options, const Clock& clock,
                        std::ostream& out, std::ostream& err);

// Prints `status` to `err` unless it is OK: a usage error with the command's usage, an error
// of breakerd with its gRPC code name and a hint. The message is escaped (format.h's
// ForTerminal): breakerd's messages may quote what a node sent. Returns the exit code
// (ExitCodeFor).
int ReportResult(const CommandLine& line, const GlobalOptions& options, const absl::Status& status,
                 std::ostream& err);

}  // namespace breaker::ctl

#endif  // CTL_COMMANDS_H_
