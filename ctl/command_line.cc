#include "ctl/command_line.h"

#include <algorithm>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "ctl/exit_codes.h"

namespace breaker::ctl {

namespace {

const FlagSpec* FindFlag(const std::vector<FlagSpec>& flags, absl::string_view name) {
  for (const FlagSpec& flag : flags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

// "--name=VALUE" or "--name" for the help and usage lines.
std::string FlagForm(const FlagSpec& flag) {
  return flag.boolean() ? absl::StrCat("--", flag.name)
                        : absl::StrCat("--", flag.name, "=", flag.value_name);
}

// Two-column lines: the name padded to the widest, then its help.
std::string Described(const std::vector<std::pair<std::string, std::string>>& entries) {
  size_t width = 0;
  for (const auto& [name, help] : entries) width = std::max(width, name.size());
  std::string text;
  for (const auto& [name, help] : entries) {
    absl::StrAppend(&text, "  ", name, std::string(width - name.size() + 3, ' '), help, "\n");
  }
  return text;
}

std::string DescribedFlags(const std::vector<FlagSpec>& flags) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const FlagSpec& flag : flags) {
    entries.emplace_back(FlagForm(flag),
                         flag.required ? absl::StrCat(flag.help, " (required)") : flag.help);
  }
  return Described(entries);
}

}  // namespace

const std::vector<FlagSpec>& GlobalFlags() {
  static const std::vector<FlagSpec>* const flags = new std::vector<FlagSpec>{
      {"target", "HOST:PORT[,...]",
       "breakerd's address (default 127.0.0.1:50051), or every replica's on etcd, comma-separated: "
       "each is tried in turn while it answers UNAVAILABLE (a standby, or down)"},
      {"json", "", "print proto JSON: one document per command (watch: one line per version)"},
      {"timeout", "DURATION", "deadline of each call, e.g. 10s, 500ms, 1m (default 10s)"},
      {"tls_ca", "PEM",
       "CA certificates breakerd's certificate must chain to; any --tls_* flag "
       "turns TLS on (empty: the system's roots)"},
      {"tls_cert", "PEM", "this client's certificate, for mutual TLS (with --tls_key)"},
      {"tls_key", "PEM", "the private key of --tls_cert"},
      {"token_file", "FILE", "a file holding the bearer token sent with every call"},
  };
  return *flags;
}

std::string CommandLine::Flag(const std::string& flag, const std::string& fallback) const {
  auto it = flags.find(flag);
  return it == flags.end() ? fallback : it->second;
}

absl::Status ParseCommandLine(const std::vector<std::string>& argv,
                              const std::vector<const CommandSpec*>& commands, CommandLine* line) {
  // The first problem found; reported unless --help makes it moot.
  std::optional<absl::Status> problem;
  auto note = [&problem](absl::Status status) {
    if (!problem.has_value()) problem = std::move(status);
  };
  bool command_seen = false;
  bool flags_ended = false;

  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& token = argv[i];
    const bool is_flag = !flags_ended && absl::StartsWith(token, "-") && token.size() > 1;
    if (!is_flag) {
      if (command_seen) {
        line->args.push_back(token);
        continue;
      }
      command_seen = true;
      for (const CommandSpec* spec : commands) {
        if (spec->name == token) line->spec = spec;
      }
      if (line->spec == nullptr) {
        // Nothing after an unknown command can be understood; not even --help helps.
        return UsageError(absl::StrCat("unknown command '", token, "'"));
      }
      continue;
    }
    if (token == "--") {
      flags_ended = true;
      continue;
    }
    if (token == "--help" || token == "-h" || token == "-help") {
      line->help = true;
      continue;
    }
    if (!absl::StartsWith(token, "--")) {
      note(UsageError(absl::StrCat("unknown flag ", token, " (flags start with --)")));
      continue;
    }
    const size_t equals = token.find('=');
    const std::string name = token.substr(2, equals == std::string::npos ? equals : equals - 2);
    const FlagSpec* flag = FindFlag(GlobalFlags(), name);
    if (flag == nullptr && line->spec != nullptr) flag = FindFlag(line->spec->flags, name);
    if (flag == nullptr) {
      note(UsageError(
          absl::StrCat("unknown flag --", name,
                       command_seen ? "" : " (a command's own flags go after the command)")));
      continue;
    }
    std::string value;
    if (equals != std::string::npos) {
      value = token.substr(equals + 1);
    } else if (flag->boolean()) {
      value = "true";
    } else if (i + 1 < argv.size()) {
      value = argv[++i];
    } else {
      note(UsageError(absl::StrCat("--", name, " needs a value: ", FlagForm(*flag))));
      continue;
    }
    if (flag->boolean()) {
      bool parsed = false;
      if (!absl::SimpleAtob(value, &parsed)) {
        note(UsageError(absl::StrCat("--", name, " takes true or false, not '", value, "'")));
        continue;
      }
      value = parsed ? "true" : "false";
    }
    line->flags[name] = value;
  }

  if (line->help) return absl::OkStatus();
  if (problem.has_value()) return *problem;
  if (line->spec == nullptr) return UsageError("no command given");

  const std::vector<ArgSpec>& args = line->spec->args;
  const size_t required =
      std::count_if(args.begin(), args.end(), [](const ArgSpec& arg) { return !arg.optional; });
  if (line->args.size() < required) {
    return UsageError(absl::StrCat("missing ", args[line->args.size()].name));
  }
  if (line->args.size() > args.size()) {
    return UsageError(absl::StrCat("unexpected argument '", line->args[args.size()], "'"));
  }
  for (const FlagSpec& flag : line->spec->flags) {
    if (flag.required && !line->Has(flag.name)) {
      return UsageError(absl::StrCat("missing ", FlagForm(flag)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<GlobalOptions> GlobalOptionsFrom(const CommandLine& line) {
  GlobalOptions options;
  options.target = line.Flag("target", options.target);
  if (absl::StrContains(absl::StrCat(",", options.target, ","), ",,") ||
      absl::StripAsciiWhitespace(options.target).empty()) {
    return UsageError("--target needs an address, HOST:PORT, or several, HOST:PORT,HOST:PORT");
  }
  options.json = line.BoolFlag("json");
  options.security.tls_ca_file = line.Flag("tls_ca");
  options.security.tls_cert_file = line.Flag("tls_cert");
  options.security.tls_key_file = line.Flag("tls_key");
  if (options.security.tls_cert_file.empty() != options.security.tls_key_file.empty()) {
    return UsageError("--tls_cert and --tls_key go together: give both, or neither");
  }
  options.token_file = line.Flag("token_file");
  if (line.Has("timeout")) {
    const std::string text = line.Flag("timeout");
    if (!absl::ParseDuration(text, &options.timeout) || options.timeout <= absl::ZeroDuration() ||
        options.timeout == absl::InfiniteDuration()) {
      return UsageError(absl::StrCat(
          "--timeout takes a positive duration such as 10s or 500ms, not '", text, "'"));
    }
  }
  return options;
}

absl::StatusOr<uint64_t> ParseUint64(absl::string_view what, absl::string_view text) {
  uint64_t value = 0;
  // SimpleAtoi accepts a leading '+' and surrounding blanks; a number is all digits here.
  if (text.empty() || !std::all_of(text.begin(), text.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(text, &value)) {
    return UsageError(absl::StrCat(
        what, " takes a whole number from 0 to 18446744073709551615, not '", text, "'"));
  }
  return value;
}

std::string ProgramHelp(const std::vector<const CommandSpec*>& commands) {
  std::vector<std::pair<std::string, std::string>> command_lines;
  for (const CommandSpec* spec : commands) command_lines.emplace_back(spec->name, spec->summary);
  return absl::StrCat(
      "breakerctl: the operators' tool for breakerd, the staking pool's shared builder circuit\n"
      "breaker. It talks to breakerd's Admin service (simulate runs offline).\n\n"
      "Usage: breakerctl [--target=HOST:PORT] [--json] [--timeout=DURATION]\n"
      "                  [--tls_ca=PEM [--tls_cert=PEM --tls_key=PEM]] [--token_file=FILE]\n"
      "                  COMMAND [ARGS]\n\n"
      "Commands:\n",
      Described(command_lines), "\nGlobal flags (before or after the command):\n",
      DescribedFlags(GlobalFlags()),
      "\nExit codes:\n"
      "  0   success\n"
      "  1   breakerd refused the request (its gRPC code and message are printed)\n"
      "  2   usage error: unknown command, bad or missing argument or flag, unusable input file\n"
      "  3   breakerd could not be reached in time (UNAVAILABLE, DEADLINE_EXCEEDED)\n"
      "  4   simulate: an expectation of the scenario did not hold\n\n"
      "Run 'breakerctl help COMMAND' or 'breakerctl COMMAND --help' for a command's arguments,\n"
      "flags and an example.\n");
}

std::string CommandHelp(const CommandSpec& spec) {
  std::string text = absl::StrCat("Usage: breakerctl ", spec.synopsis, "\n\n", spec.description);
  if (!absl::EndsWith(text, "\n")) text += "\n";
  if (!spec.args.empty()) {
    std::vector<std::pair<std::string, std::string>> entries;
    for (const ArgSpec& arg : spec.args) {
      entries.emplace_back(arg.name,
                           arg.optional ? absl::StrCat(arg.help, " (optional)") : arg.help);
    }
    absl::StrAppend(&text, "\nArguments:\n", Described(entries));
  }
  if (!spec.flags.empty()) absl::StrAppend(&text, "\nFlags:\n", DescribedFlags(spec.flags));
  absl::StrAppend(&text, "\nGlobal flags:\n", DescribedFlags(GlobalFlags()));
  if (!spec.example.empty()) {
    absl::StrAppend(&text, "\nExample:\n  ",
                    absl::StrJoin(absl::StrSplit(spec.example, '\n'), "\n  "), "\n");
  }
  absl::StrAppend(&text,
                  "\nExit codes: 0 success, 1 refused by breakerd, 2 usage error, 3 breakerd "
                  "unreachable,\n4 simulate: an expectation failed.\n");
  return text;
}

std::string UsageReminder(const CommandSpec* spec) {
  if (spec == nullptr) {
    return "Usage: breakerctl [GLOBAL FLAGS] COMMAND [ARGS]\n"
           "Run 'breakerctl --help' for the commands.\n";
  }
  return absl::StrCat("Usage: breakerctl ", spec->synopsis, "\nRun 'breakerctl help ", spec->name,
                      "' for its arguments, flags and an example.\n");
}

}  // namespace breaker::ctl
