#include "ctl/command_line.h"

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "ctl/exit_codes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::ctl {
namespace {

using ::breaker::testing::IsOk;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

const CommandSpec kBan{"ban",
                       "ban INDEX --reason=TEXT [--until_epoch=N]",
                       "ban a builder",
                       "Bans a builder.\n",
                       {{"INDEX", "the builder's index"}},
                       {{"reason", "TEXT", "why", true}, {"until_epoch", "N", "until when"}},
                       "breakerctl ban 42 --reason=x"};
const CommandSpec kBuilders{"builders",
                            "builders [--banned]",
                            "list builders",
                            "Lists.\n",
                            {},
                            {{"banned", "", "only banned"}},
                            ""};
// As breakerctl's own: a builder INDEX or --relay=URL (the command checks that it is one).
const CommandSpec kUnban{"unban",
                         "unban INDEX | unban --relay=URL",
                         "lift a ban",
                         "Lifts a ban.\n",
                         {{"INDEX", "the builder's index", true}},
                         {{"relay", "URL", "a relay instead of a builder"}},
                         "breakerctl unban 42"};
const std::vector<const CommandSpec*> kCommands = {&kBan, &kBuilders, &kUnban};

absl::Status Parse(const std::vector<std::string>& argv, CommandLine* line) {
  return ParseCommandLine(argv, kCommands, line);
}

TEST(ParseCommandLineTest, FlagsInBothFormsAndGlobalsAnywhere) {
  CommandLine line;
  ASSERT_THAT(Parse({"--target", "h:1", "ban", "5", "--reason", "withheld twice", "--until_epoch=9",
                     "--json"},
                    &line),
              IsOk());
  EXPECT_EQ(line.spec, &kBan);
  EXPECT_THAT(line.args, ElementsAre("5"));
  EXPECT_THAT(line.flags,
              UnorderedElementsAre(Pair("target", "h:1"), Pair("reason", "withheld twice"),
                                   Pair("until_epoch", "9"), Pair("json", "true")));
  absl::StatusOr<GlobalOptions> options = GlobalOptionsFrom(line);
  ASSERT_THAT(options, IsOk());
  EXPECT_EQ(options->target, "h:1");
  EXPECT_TRUE(options->json);
  EXPECT_EQ(options->timeout, absl::Seconds(10));
}

TEST(ParseCommandLineTest, RelayFlagInsteadOfAnOptionalIndex) {
  CommandLine line;
  ASSERT_THAT(Parse({"unban", "--relay=HTTPS://Relay.Example.com/"}, &line), IsOk());
  EXPECT_EQ(line.spec, &kUnban);
  EXPECT_THAT(line.args, ElementsAre());
  EXPECT_THAT(line.flags, UnorderedElementsAre(Pair("relay", "HTTPS://Relay.Example.com/")));
  line = CommandLine();
  ASSERT_THAT(Parse({"unban", "--relay", "relay.example.com:18550", "--json"}, &line), IsOk());
  EXPECT_EQ(line.Flag("relay"), "relay.example.com:18550");
  EXPECT_TRUE(line.BoolFlag("json"));
  // Both parse: which one is given is the command's to check.
  line = CommandLine();
  ASSERT_THAT(Parse({"unban", "5", "--relay=r:1"}, &line), IsOk());
  EXPECT_THAT(line.args, ElementsAre("5"));
  line = CommandLine();
  const absl::Status missing = Parse({"unban", "--relay"}, &line);
  EXPECT_TRUE(IsUsageError(missing));
  EXPECT_THAT(std::string(missing.message()), HasSubstr("--relay needs a value: --relay=URL"));
  line = CommandLine();
  EXPECT_TRUE(IsUsageError(Parse({"unban", "5", "6"}, &line)));
  EXPECT_THAT(CommandHelp(kUnban), HasSubstr("INDEX   the builder's index (optional)"));
}

TEST(ParseCommandLineTest, BooleanFlags) {
  CommandLine line;
  ASSERT_THAT(Parse({"builders", "--banned=false"}, &line), IsOk());
  EXPECT_FALSE(line.BoolFlag("banned"));
  line = CommandLine();
  ASSERT_THAT(Parse({"builders", "--banned"}, &line), IsOk());
  EXPECT_TRUE(line.BoolFlag("banned"));
  line = CommandLine();
  EXPECT_TRUE(IsUsageError(Parse({"builders", "--banned=maybe"}, &line)));
}

TEST(ParseCommandLineTest, UsageErrorsNameTheProblem) {
  struct Case {
    std::vector<std::string> argv;
    std::string message;
  };
  const Case cases[] = {
      {{}, "no command given"},
      {{"frobnicate"}, "unknown command 'frobnicate'"},
      {{"ban", "--reason=x"}, "missing INDEX"},
      {{"ban", "5"}, "missing --reason=TEXT"},
      {{"ban", "5", "6", "--reason=x"}, "unexpected argument '6'"},
      {{"ban", "5", "--reason"}, "--reason needs a value"},
      {{"ban", "5", "--reason=x", "--color"}, "unknown flag --color"},
      {{"--banned", "builders"}, "a command's own flags go after the command"},
      {{"builders", "-x"}, "unknown flag -x"},
  };
  for (const Case& c : cases) {
    CommandLine line;
    const absl::Status status = Parse(c.argv, &line);
    EXPECT_TRUE(IsUsageError(status)) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
    EXPECT_EQ(ExitCodeFor(status), kExitUsage);
  }
}

TEST(ParseCommandLineTest, HelpWinsOverMissingArguments) {
  CommandLine line;
  ASSERT_THAT(Parse({"ban", "--help"}, &line), IsOk());
  EXPECT_TRUE(line.help);
  EXPECT_EQ(line.spec, &kBan);
  line = CommandLine();
  ASSERT_THAT(Parse({"-h"}, &line), IsOk());
  EXPECT_TRUE(line.help);
  EXPECT_EQ(line.spec, nullptr);
}

TEST(ParseCommandLineTest, DoubleDashEndsFlags) {
  CommandLine line;
  ASSERT_THAT(Parse({"ban", "--reason=x", "--", "--5"}, &line), IsOk());
  EXPECT_THAT(line.args, ElementsAre("--5"));
}

TEST(GlobalOptionsTest, BadValues) {
  CommandLine line;
  line.flags["timeout"] = "soon";
  EXPECT_TRUE(IsUsageError(GlobalOptionsFrom(line).status()));
  line.flags["timeout"] = "-1s";
  EXPECT_TRUE(IsUsageError(GlobalOptionsFrom(line).status()));
  line.flags["timeout"] = "250ms";
  ASSERT_THAT(GlobalOptionsFrom(line), IsOk());
  EXPECT_EQ(GlobalOptionsFrom(line)->timeout, absl::Milliseconds(250));
  line.flags["target"] = "";
  EXPECT_TRUE(IsUsageError(GlobalOptionsFrom(line).status()));
}

TEST(ParseUint64Test, OnlyDigits) {
  EXPECT_EQ(*ParseUint64("INDEX", "18446744073709551615"), 18446744073709551615u);
  for (const char* bad : {"", "-1", "+1", " 1", "1x", "18446744073709551616"}) {
    const absl::Status status = ParseUint64("INDEX", bad).status();
    EXPECT_TRUE(IsUsageError(status)) << bad;
    EXPECT_THAT(std::string(status.message()), HasSubstr("INDEX takes a whole number"));
  }
}

TEST(HelpTest, CommandHelpShowsUsageArgumentsFlagsAndExample) {
  const std::string help = CommandHelp(kBan);
  EXPECT_THAT(help, HasSubstr("Usage: breakerctl ban INDEX --reason=TEXT [--until_epoch=N]"));
  EXPECT_THAT(help, HasSubstr("INDEX   the builder's index"));
  EXPECT_THAT(help, HasSubstr("--reason=TEXT     why (required)"));
  EXPECT_THAT(help, HasSubstr("--target=HOST:PORT"));
  EXPECT_THAT(help, HasSubstr("Example:\n  breakerctl ban 42 --reason=x\n"));
}

TEST(HelpTest, ProgramHelpListsCommandsAndExitCodes) {
  const std::string help = ProgramHelp(kCommands);
  EXPECT_THAT(help, HasSubstr("  ban        ban a builder\n"));
  EXPECT_THAT(help, HasSubstr("  3   breakerd could not be reached"));
}

TEST(ExitCodeTest, ServiceErrorsByReachability) {
  EXPECT_EQ(ExitCodeFor(absl::OkStatus()), kExitOk);
  EXPECT_EQ(ExitCodeFor(absl::NotFoundError("not banned")), kExitRefused);
  EXPECT_EQ(ExitCodeFor(absl::InvalidArgumentError("bad")), kExitRefused);
  EXPECT_EQ(ExitCodeFor(absl::UnavailableError("down")), kExitUnreachable);
  EXPECT_EQ(ExitCodeFor(absl::DeadlineExceededError("slow")), kExitUnreachable);
  EXPECT_EQ(ExitCodeFor(InputError(absl::NotFoundError("no file"))), kExitUsage);
  EXPECT_EQ(ExitCodeFor(ExpectationsFailed("1 failed")), kExitExpectationFailed);
}

}  // namespace
}  // namespace breaker::ctl
