#ifndef CTL_COMMAND_LINE_H_
#define CTL_COMMAND_LINE_H_

// breakerctl's command line: `breakerctl [GLOBAL FLAGS] COMMAND [ARGS] [FLAGS]`.
//
// Each command declares its arguments and flags, so that `breakerctl COMMAND --help` shows
// only what that command takes (absl's flag library would list every flag of the binary).
// Flags are written --name=value or --name value; a boolean flag is --name or --name=false.
// Global flags go before or after the command, the command's own after it. `--` ends the
// flags. --help (or -h) anywhere asks for help instead of running anything.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/channel_security.h"

namespace breaker::ctl {

struct FlagSpec {
  std::string name;
  // The value's placeholder in the help ("TEXT", "N"); empty for a boolean flag.
  std::string value_name;
  std::string help;
  // Running the command without it is a usage error.
  bool required = false;

  bool boolean() const { return value_name.empty(); }
};

struct ArgSpec {
  std::string name;
  std::string help;
  // May be left out; only trailing arguments may be optional.
  bool optional = false;
};

struct CommandSpec {
  std::string name;
  // The command's usage line after "breakerctl ", e.g. "ban INDEX --reason=TEXT [--until_epoch=N]".
  std::string synopsis;
  // One line for the command list.
  std::string summary;
  // The command's help: what it does and what it prints.
  std::string description;
  std::vector<ArgSpec> args;
  std::vector<FlagSpec> flags;
  // One or more example lines.
  std::string example;
};

// The flags every command takes.
const std::vector<FlagSpec>& GlobalFlags();

// What the user typed, checked against the command's spec.
struct CommandLine {
  // The command, null until it is known (none given, or an unknown name).
  const CommandSpec* spec = nullptr;
  std::vector<std::string> args;
  // Flags given, by name; "true"/"false" for a boolean flag. A repeated flag keeps the last.
  std::map<std::string, std::string> flags;
  // --help was given.
  bool help = false;

  bool Has(const std::string& flag) const { return flags.count(flag) > 0; }
  // The flag's value, or `fallback` when not given.
  std::string Flag(const std::string& flag, const std::string& fallback = "") const;
  bool BoolFlag(const std::string& flag) const { return Flag(flag, "false") == "true"; }
};

// Parses the arguments after the program's name into `line`. `commands` are the known ones.
// Returns a UsageError naming the problem (unknown command or flag, a flag without its value,
// a bad boolean, too few or too many arguments, a missing required flag); `line->spec` is then
// the command, when it was recognised, for its usage. With --help, returns OK whatever else is
// wrong, as long as the command (if any) is known.
absl::Status ParseCommandLine(const std::vector<std::string>& argv,
                              const std::vector<const CommandSpec*>& commands, CommandLine* line);

// The options every command runs with, from the global flags.
struct GlobalOptions {
  std::string target = "127.0.0.1:50051";
  bool json = false;
  // Deadline of each call.
  absl::Duration timeout = absl::Seconds(10);
  // TLS towards breakerd: any of the files turns it on.
  client::ChannelSecurityFiles security;
  // A file holding the bearer token sent with every call; empty: none.
  std::string token_file;
};

// Returns a UsageError for an empty --target or a --timeout that is not a positive duration.
absl::StatusOr<GlobalOptions> GlobalOptionsFrom(const CommandLine& line);

// Typed values of arguments and flags. Each returns a UsageError naming `what` (e.g. "INDEX",
// "--until_epoch") and the bad text.
absl::StatusOr<uint64_t> ParseUint64(absl::string_view what, absl::string_view text);

// `breakerctl --help`: the commands, the global flags and the exit codes.
std::string ProgramHelp(const std::vector<const CommandSpec*>& commands);
// `breakerctl help COMMAND`: usage, description, arguments, flags, global flags, example.
std::string CommandHelp(const CommandSpec& spec);
// The short reminder printed after a usage error: the usage line and where to read more.
std::string UsageReminder(const CommandSpec* spec);

}  // namespace breaker::ctl

#endif  // CTL_COMMAND_LINE_H_
