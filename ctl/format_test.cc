#include "ctl/format.h"

#include <sstream>

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
