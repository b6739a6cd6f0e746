#include "ctl/format.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace breaker::ctl {
namespace {

namespace v1 = ::breaker::v1;

std::string Printed(const Table& table) {
  std::ostringstream out;
  table.Print(out);
  return out.str();
}

TEST(TableTest, AlignsColumnsAndLeavesTheLastUnpadded) {
  Table table({"INDEX", "KIND", "REASON"});
  table.AddRow({"5", "failure", "slot 3207"});
  table.AddRow({"1234", "-", "-"});
  EXPECT_EQ(Printed(table),
            "INDEX  KIND     REASON\n"
            "5      failure  slot 3207\n"
            "1234   -        -\n");
}

TEST(TableTest, WithoutHeaderAndShortRowsHasNoTrailingBlanks) {
  Table table;
  table.AddRow({"mode", "ALL_BUILDERS"});
  table.AddRow({"policy version", "3"});
  table.AddRow({"x"});
  EXPECT_EQ(Printed(table),
            "mode            ALL_BUILDERS\n"
            "policy version  3\n"
            "x\n");
  EXPECT_TRUE(Table().empty());
}

TEST(ForTerminalTest, PrintableAsciiIsShownAsItIsButTheBackslash) {
  EXPECT_EQ(ForTerminal("bn-1 test-node/1.0 (x=1; y='2')"), "bn-1 test-node/1.0 (x=1; y='2')");
  // A literal "\x1b" in a string must not look like an escaped ESC.
  EXPECT_EQ(ForTerminal("a\\x1b"), "a\\\\x1b");
}

TEST(ForTerminalTest, ControlBytesAreEscaped) {
  EXPECT_EQ(ForTerminal("\x1b[2J"), "\\x1b[2J");
  EXPECT_EQ(ForTerminal("a\r\nb\tc"), "a\\r\\nb\\tc");
  EXPECT_EQ(ForTerminal(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(ForTerminal("\x7f\x07\x08"), "\\x7f\\x07\\x08");
}

TEST(ForTerminalTest, InvisibleFormatAndBidiCharactersAreEscaped) {
  // The bidi embeddings, overrides and isolates.
  EXPECT_EQ(ForTerminal("\u202a\u202b\u202c\u202d\u202e"), "\\u202a\\u202b\\u202c\\u202d\\u202e");
  EXPECT_EQ(ForTerminal("\u2066\u2067\u2068\u2069"), "\\u2066\\u2067\\u2068\\u2069");
  // Zero-width space, joiner, left-to-right mark, byte order mark, soft hyphen, no-break space.
  EXPECT_EQ(ForTerminal("\u200b\u200d\u200e\ufeff\u00ad\u00a0"),
            "\\u200b\\u200d\\u200e\\ufeff\\u00ad\\u00a0");
  // C1 controls (CSI, NEL), a combining mark, a line separator, a tag character.
  EXPECT_EQ(ForTerminal("\u009b\u0085e\u0301\u2028\U000E0041"),
            "\\u009b\\u0085e\\u0301\\u2028\\U000e0041");
  // Scripts that run right to left or take two columns, and emoji.
  EXPECT_EQ(ForTerminal("\u05d0\u0627\u4e2d\U0001F600"), "\\u05d0\\u0627\\u4e2d\\U0001f600");
}

TEST(ForTerminalTest, LatinGreekAndCyrillicLettersPassThrough) {
  EXPECT_EQ(ForTerminal("Überprüfung façade"), "Überprüfung façade");
  EXPECT_EQ(ForTerminal("Ελλάδα Россия Łódź ẞ"), "Ελλάδα Россия Łódź ẞ");
  // But not the signs beside them: multiplication, Greek question mark (';' look-alike).
  EXPECT_EQ(ForTerminal("\u00d7\u037e"), "\\u00d7\\u037e");
}

TEST(ForTerminalTest, InvalidUtf8IsEscapedByteByByte) {
  EXPECT_EQ(ForTerminal("a\xff"
                        "b"),
            "a\\xffb");
  EXPECT_EQ(ForTerminal("\x80"), "\\x80");                             // a stray continuation byte
  EXPECT_EQ(ForTerminal("\xc3"), "\\xc3");                             // truncated
  EXPECT_EQ(ForTerminal("\xc3x"), "\\xc3x");                           // truncated before ASCII
  EXPECT_EQ(ForTerminal("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(ForTerminal("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");           // overlong '/'
  EXPECT_EQ(ForTerminal("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(ForTerminal("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  // An overlong ESC does not become one.
  EXPECT_EQ(ForTerminal("\xc0\x9b"), "\\xc0\\x9b");
}

// What a node could send to forge rows or clear the screen.
constexpr char kHostileBytes[] = "v\x1b[2J\r\nbn-9  connected\0\xe2\x80\xae\xff";
const std::string kHostile(kHostileBytes, sizeof(kHostileBytes) - 1);
constexpr char kHostileShown[] = "v\\x1b[2J\\r\\nbn-9  connected\\x00\\u202e\\xff";

TEST(TableTest, HostileCellsStayInTheirRow) {
  Table table({"NODE", "CLIENT", "LAG"});
  table.AddRow({"bn-1", kHostile, "0"});
  table.AddRow({"bn-2", "ok", "1"});
  const size_t width = std::string(kHostileShown).size();
  EXPECT_EQ(Printed(table), absl::StrCat("NODE  CLIENT", std::string(width - 6 + 2, ' '), "LAG\n",
                                         "bn-1  ", kHostileShown, "  0\n",  //
                                         "bn-2  ok", std::string(width - 2 + 2, ' '), "1\n"));
}

TEST(TableTest, LettersCountOneColumnEach) {
  Table table({"NAME", "X"});
  table.AddRow({"Müller", "1"});
  table.AddRow({"Smith", "2"});
  EXPECT_EQ(Printed(table),
            "NAME    X\n"
            "Müller  1\n"
            "Smith   2\n");
}

TEST(OutputTest, LinesAreEscapedAndJsonAndVerbatimAreNot) {
  std::ostringstream stream;
  Output out(stream);
  out.Line(kHostile);
  out.Verbatim("# as it is\n");
  v1::Node node;
  node.set_client_version("\x1b[2J\n");
  out.Json(node);
  const std::vector<std::string> lines = absl::StrSplit(stream.str(), '\n');
  ASSERT_EQ(lines.size(), 4u) << stream.str();
  EXPECT_EQ(lines[0], kHostileShown);
  EXPECT_EQ(lines[1], "# as it is");
  EXPECT_NE(lines[2].find("\"clientVersion\":\"\\u001b[2J\\n\""), std::string::npos) << lines[2];
  EXPECT_EQ(lines[3], "");
}

TEST(FormatTest, JsonIsAsciiOnly) {
  EXPECT_EQ(AsciiJson("{\"a\":\"\u00fc\u202e\x7f\U0001F600\"}"),
            "{\"a\":\"\\u00fc\\u202e\\u007f\\ud83d\\ude00\"}");
  EXPECT_EQ(AsciiJson("{\"a\":\"\xff\"}"), "{\"a\":\"\\ufffd\"}");
  v1::Node node;
  node.set_client_version("\u202e\x1b");
  EXPECT_NE(ToJson(node).find("\"clientVersion\":\"\\u202e\\u001b\""), std::string::npos)
      << ToJson(node);
}

TEST(FormatTest, TimesAreRfc3339Utc) {
  EXPECT_EQ(FormatUtc(absl::FromUnixSeconds(1606824023)), "2020-12-01T12:00:23Z");
  google::protobuf::Timestamp timestamp;
  EXPECT_EQ(FormatTimestamp(timestamp), "-");
  timestamp.set_seconds(1606824023);
  timestamp.set_nanos(500);
  EXPECT_EQ(FormatTimestamp(timestamp), "2020-12-01T12:00:23Z");
}

TEST(FormatTest, NamesAndBans) {
  EXPECT_EQ(ModeName(v1::MODE_TRUSTED_ONLY), "TRUSTED_ONLY");
  EXPECT_EQ(BanKindName(v1::BAN_KIND_COLLATERAL), "collateral");
  v1::Ban ban;
  ban.set_until_epoch(101);
  EXPECT_EQ(BanUntil(ban), "epoch 101");
  ban.set_until_epoch(0);
  ban.set_until_reset(true);
  EXPECT_EQ(BanUntil(ban), "reset");
  EXPECT_EQ(HexBytes(std::string("\x01\xab", 2)), "0x01ab");
  EXPECT_EQ(JoinOrDash(google::protobuf::RepeatedPtrField<std::string>()), "-");
  google::protobuf::RepeatedField<uint64_t> indices;
  indices.Add(1);
  indices.Add(2);
  EXPECT_EQ(JoinOrDash(indices), "1, 2");
  EXPECT_EQ(Count(1, "builder", "builders"), "1 builder");
  EXPECT_EQ(Count(0, "builder", "builders"), "0 builders");
}

TEST(FormatTest, PolicySummaryAndMissedSlots) {
  v1::Policy policy;
  policy.set_version(4);
  policy.set_mode(v1::MODE_SELF_BUILD);
  policy.add_banned_builders()->set_builder_index(5);
  EXPECT_EQ(PolicySummary(policy), "version 4, mode SELF_BUILD, 1 builder and 0 relays banned");

  v1::MissedSlotState state;
  EXPECT_EQ(MissedSlotSummary(state), "not active (no pre-Gloas rule applies)");
  state.set_active(true);
  state.set_consecutive_missed(2);
  EXPECT_EQ(MissedSlotSummary(state),
            "clear (2 consecutive missed, 0 missed in window, 0 epochs since finalization)");
  state.set_tripped(true);
  state.set_latched(true);
  state.set_rule("6 missed since the last present slot > 5");
  EXPECT_EQ(MissedSlotSummary(state).rfind("TRIPPED: 6 missed since the last present slot > 5 "
                                           "(latched: only a reset clears it)",
                                           0),
            0u);
}

TEST(FormatTest, JsonShowsZeroValues) {
  v1::Node node;
  node.set_node_id("bn-1");
  const std::string json = ToJson(node);
  EXPECT_NE(json.find("\"nodeId\":\"bn-1\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"connected\":false"), std::string::npos) << json;
  EXPECT_EQ(json.find('\n'), std::string::npos) << json;
}

}  // namespace
}  // namespace breaker::ctl
