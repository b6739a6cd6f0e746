#include "core/policy.h"

#include <cstdint>
#include <random>
#include <string>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace breaker::core {
namespace {

using ::testing::Key;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

Ban FailureBan(Epoch until_epoch, std::string reason) {
  return Ban{BanKind::kFailure, until_epoch, false, std::move(reason)};
}

Ban BanUntilReset(BanKind kind, std::string reason) {
  return Ban{kind, 0, true, std::move(reason)};
}

TEST(ModeName, NamesEveryMode) {
  EXPECT_EQ(ModeName(Mode::kAllBuilders), "ALL_BUILDERS");
  EXPECT_EQ(ModeName(Mode::kTrustedOnly), "TRUSTED_ONLY");
  EXPECT_EQ(ModeName(Mode::kSelfBuild), "SELF_BUILD");
  EXPECT_EQ(ModeName(static_cast<Mode>(42)), "UNKNOWN");
}

TEST(BanKindName, NamesEveryKind) {
  EXPECT_EQ(BanKindName(BanKind::kFailure), "failure");
  EXPECT_EQ(BanKindName(BanKind::kOperator), "operator");
  EXPECT_EQ(BanKindName(BanKind::kCollateral), "collateral");
  EXPECT_EQ(BanKindName(static_cast<BanKind>(42)), "unknown");
}

TEST(PolicyIsRelayAllowed, DecidesByTheRelayAndTheModeAlone) {
  Policy policy;
  policy.banned_relays["http://banned.example"] = Ban{};
  policy.trusted_relays.insert("http://trusted.example");
  policy.trusted_builders.insert(7);
  EXPECT_TRUE(policy.IsRelayAllowed("http://other.example"));
  EXPECT_FALSE(policy.IsRelayAllowed("http://banned.example"));
  policy.mode = Mode::kTrustedOnly;
  EXPECT_FALSE(policy.IsRelayAllowed("http://other.example"));
  EXPECT_TRUE(policy.IsRelayAllowed("http://trusted.example"));
  policy.mode = Mode::kSelfBuild;
  EXPECT_FALSE(policy.IsRelayAllowed("http://trusted.example"));
}

TEST(PolicyIsAllowed, AllBuildersAllowsAllButBanned) {
  Policy policy;
  policy.banned_builders[7] = FailureBan(12, "missed payload");
  policy.banned_relays["relay.example"] = FailureBan(12, "missed reveal");

  EXPECT_TRUE(policy.IsAllowed(1, ""));
  EXPECT_TRUE(policy.IsAllowed(1, "other.example"));
  EXPECT_FALSE(policy.IsAllowed(7, ""));
  EXPECT_FALSE(policy.IsAllowed(7, "other.example"));
  EXPECT_FALSE(policy.IsAllowed(1, "relay.example"));
}

TEST(PolicyIsAllowed, TrustedOnlyAllowsTrustedBuildersAndRelays) {
  Policy policy;
  policy.mode = Mode::kTrustedOnly;
  policy.trusted_builders = {3};
  policy.trusted_relays = {"trusted.example"};

  EXPECT_TRUE(policy.IsAllowed(3, ""));
  EXPECT_TRUE(policy.IsAllowed(3, "untrusted.example"));
  EXPECT_TRUE(policy.IsAllowed(4, "trusted.example"));
  // A P2P bid from an untrusted builder is refused.
  EXPECT_FALSE(policy.IsAllowed(4, ""));
  EXPECT_FALSE(policy.IsAllowed(4, "untrusted.example"));

  // A ban overrides trust.
  policy.banned_builders[3] = BanUntilReset(BanKind::kOperator, "operator");
  EXPECT_FALSE(policy.IsAllowed(3, ""));
  policy.banned_relays["trusted.example"] = FailureBan(20, "missed reveal");
  EXPECT_FALSE(policy.IsAllowed(4, "trusted.example"));
}

TEST(PolicyIsAllowed, SelfBuildRefusesEveryBuilderButSelf) {
  Policy policy;
  policy.mode = Mode::kSelfBuild;
  policy.trusted_builders = {3};
  EXPECT_FALSE(policy.IsAllowed(3, ""));
  EXPECT_FALSE(policy.IsAllowed(4, "relay.example"));
  EXPECT_TRUE(policy.IsAllowed(kSelfBuild, ""));
}

TEST(PolicyIsAllowed, SelfBuildIndexIsAlwaysAllowed) {
  Policy policy;
  policy.mode = Mode::kTrustedOnly;
  policy.banned_relays["relay.example"] = FailureBan(20, "missed reveal");
  EXPECT_TRUE(policy.IsAllowed(kSelfBuild, ""));
  EXPECT_TRUE(policy.IsAllowed(kSelfBuild, "relay.example"));
}

TEST(PolicySameDecisions, IgnoresVersionTimeReasonAndCounts) {
  Policy a;
  a.mode = Mode::kTrustedOnly;
  a.mode_reason = "2 untrusted builders banned";
  a.banned_builders[7] = FailureBan(12, "missed payload");
  a.missed_slots.active = true;
  a.missed_slots.consecutive_missed = 1;

  Policy b = a;
  b.version = a.version + 5;
  b.computed_at_slot = 1000;
  b.computed_at_epoch = 31;
  b.reason = "something else changed";
  b.missed_slots.consecutive_missed = 2;
  b.missed_slots.missed_in_window = 3;
  b.missed_slots.rule = "irrelevant";
  EXPECT_TRUE(a.SameDecisions(b));
  EXPECT_TRUE(b.SameDecisions(a));
}

TEST(PolicySameDecisions, SeesEveryDecision) {
  Policy base;
  base.banned_builders[7] = FailureBan(12, "missed payload");
  base.trusted_builders = {1};
  base.trusted_relays = {"trusted.example"};
  ASSERT_TRUE(base.SameDecisions(base));

  Policy other = base;
  other.mode = Mode::kSelfBuild;
  EXPECT_FALSE(base.SameDecisions(other));

  other = base;
  other.banned_builders[7].until_epoch = 13;
  EXPECT_FALSE(base.SameDecisions(other));

  other = base;
  other.banned_relays["relay.example"] = FailureBan(12, "missed reveal");
  EXPECT_FALSE(base.SameDecisions(other));

  other = base;
  other.trusted_builders.insert(2);
  EXPECT_FALSE(base.SameDecisions(other));

  other = base;
  other.trusted_relays.clear();
  EXPECT_FALSE(base.SameDecisions(other));

  other = base;
  other.missed_slots.tripped = true;
  EXPECT_FALSE(base.SameDecisions(other));
}

TEST(StricterOf, TakesTheStricterModeWithItsReason) {
  Policy fleet;
  fleet.version = 9;
  Policy local;
  local.mode = Mode::kTrustedOnly;
  local.mode_reason = "2 untrusted builders banned";

  Policy stricter = StricterOf(fleet, local);
  EXPECT_EQ(stricter.mode, Mode::kTrustedOnly);
  EXPECT_EQ(stricter.mode_reason, "local: 2 untrusted builders banned");

  fleet.mode = Mode::kSelfBuild;
  fleet.mode_reason = "5 builders banned";
  stricter = StricterOf(fleet, local);
  EXPECT_EQ(stricter.mode, Mode::kSelfBuild);
  EXPECT_EQ(stricter.mode_reason, "5 builders banned");

  local.mode = Mode::kSelfBuild;
  local.mode_reason = "local reason";
  stricter = StricterOf(fleet, local);
  EXPECT_EQ(stricter.mode, Mode::kSelfBuild);
  EXPECT_EQ(stricter.mode_reason, "5 builders banned") << "a tie keeps the fleet's";

  stricter = StricterOf(Policy{}, Policy{});
  EXPECT_EQ(stricter.mode, Mode::kAllBuilders);
  EXPECT_EQ(stricter.mode_reason, "");
}

TEST(StricterOf, UnitesBansKeepingTheStricter) {
  Policy fleet;
  fleet.banned_builders[1] = FailureBan(10, "fleet: 1 failed");
  fleet.banned_builders[2] = FailureBan(20, "fleet: 2 failed");
  fleet.banned_builders[3] = Ban{BanKind::kCollateral, 30, false, "fleet: 3 collateral"};
  fleet.banned_builders[4] = BanUntilReset(BanKind::kOperator, "fleet: 4 operator");
  fleet.banned_relays["a.example"] = FailureBan(10, "fleet: a failed");
  Policy local;
  local.banned_builders[2] = FailureBan(25, "local: 2 failed");
  local.banned_builders[3] = FailureBan(12, "local: 3 failed");
  local.banned_builders[4] = FailureBan(40, "local: 4 failed");
  local.banned_builders[5] = BanUntilReset(BanKind::kFailure, "local: 5 failed");
  local.banned_relays["a.example"] = BanUntilReset(BanKind::kFailure, "local: a failed");
  local.banned_relays["b.example"] = FailureBan(11, "local: b failed");

  const Policy stricter = StricterOf(fleet, local);
  EXPECT_THAT(stricter.banned_builders,
              UnorderedElementsAre(Key(1), Key(2), Key(3), Key(4), Key(5)));
  // Only the fleet's.
  EXPECT_EQ(stricter.banned_builders.at(1), FailureBan(10, "fleet: 1 failed"));
  // The later end wins.
  EXPECT_EQ(stricter.banned_builders.at(2), FailureBan(25, "local: 2 failed"));
  // The fleet's lasts longer, but the local kind is lower.
  EXPECT_EQ(stricter.banned_builders.at(3),
            (Ban{BanKind::kFailure, 30, false, "fleet: 3 collateral"}));
  // Until reset wins over any epoch.
  EXPECT_EQ(stricter.banned_builders.at(4), (Ban{BanKind::kFailure, 0, true, "fleet: 4 operator"}));
  // Only the local's.
  EXPECT_EQ(stricter.banned_builders.at(5), BanUntilReset(BanKind::kFailure, "local: 5 failed"));

  EXPECT_THAT(stricter.banned_relays, UnorderedElementsAre(Key("a.example"), Key("b.example")));
  EXPECT_EQ(stricter.banned_relays.at("a.example"),
            BanUntilReset(BanKind::kFailure, "local: a failed"));
  EXPECT_EQ(stricter.banned_relays.at("b.example"), FailureBan(11, "local: b failed"));
}

TEST(StricterOf, EqualBansKeepTheFleetReason) {
  Policy fleet;
  fleet.banned_builders[1] = Ban{BanKind::kOperator, 10, false, "fleet reason"};
  Policy local;
  local.banned_builders[1] = Ban{BanKind::kFailure, 10, false, "local reason"};
  EXPECT_EQ(StricterOf(fleet, local).banned_builders.at(1),
            (Ban{BanKind::kFailure, 10, false, "fleet reason"}));
}

TEST(StricterOf, IntersectsTrust) {
  Policy fleet;
  fleet.trusted_builders = {1, 2, 3};
  fleet.trusted_relays = {"a.example", "b.example"};
  Policy local;
  local.trusted_builders = {2, 3, 4};
  local.trusted_relays = {"b.example", "c.example"};

  const Policy stricter = StricterOf(fleet, local);
  EXPECT_THAT(stricter.trusted_builders, UnorderedElementsAre(2, 3));
  EXPECT_THAT(stricter.trusted_relays, UnorderedElementsAre("b.example"));
}

TEST(StricterOf, UnitesBuilderKeysPreferringTheFleets) {
  Policy fleet;
  fleet.builder_pubkeys = {{1, "fleet-key-1"}, {2, "fleet-key-2"}};
  Policy local;
  local.builder_pubkeys = {{2, "local-key-2"}, {3, "local-key-3"}};
  EXPECT_THAT(
      StricterOf(fleet, local).builder_pubkeys,
      UnorderedElementsAre(Pair(1, "fleet-key-1"), Pair(2, "fleet-key-2"), Pair(3, "local-key-3")));
}

TEST(StricterOf, TakesLocalMissedSlotsOnlyWhenTripped) {
  Policy fleet;
  fleet.missed_slots.active = true;
  fleet.missed_slots.consecutive_missed = 1;
  Policy local;
  local.missed_slots.active = true;
  local.missed_slots.consecutive_missed = 2;

  EXPECT_EQ(StricterOf(fleet, local).missed_slots, fleet.missed_slots);

  local.mode = Mode::kSelfBuild;
  local.mode_reason = "pre-Gloas missed-slot breaker: consecutive missed slots 4 > 3";
  local.missed_slots.tripped = true;
  local.missed_slots.rule = "consecutive missed slots 4 > 3";
  local.missed_slots.consecutive_missed = 4;
  const Policy stricter = StricterOf(fleet, local);
  EXPECT_EQ(stricter.missed_slots, local.missed_slots);
  EXPECT_EQ(stricter.mode, Mode::kSelfBuild);
}

TEST(StricterOf, KeepsTheFleetVersionAndTheLaterTime) {
  Policy fleet;
  fleet.version = 17;
  fleet.computed_at_slot = 320;
  fleet.computed_at_epoch = 10;
  fleet.reason = "builder 3 banned";
  Policy local;
  local.version = 4;
  local.computed_at_slot = 400;
  local.computed_at_epoch = 12;

  Policy stricter = StricterOf(fleet, local);
  EXPECT_EQ(stricter.version, 17u);
  EXPECT_EQ(stricter.computed_at_slot, 400u);
  EXPECT_EQ(stricter.computed_at_epoch, 12u);
  EXPECT_EQ(stricter.reason, "stricter of fleet version 17 and the local engine");

  local.computed_at_slot = 100;
  local.computed_at_epoch = 3;
  stricter = StricterOf(fleet, local);
  EXPECT_EQ(stricter.computed_at_slot, 320u);
  EXPECT_EQ(stricter.computed_at_epoch, 10u);
}

TEST(StricterOf, EqualPoliciesGiveTheSameDecisions) {
  Policy policy;
  policy.mode = Mode::kTrustedOnly;
  policy.mode_reason = "reason";
  policy.banned_builders[1] = FailureBan(10, "failed");
  policy.trusted_builders = {2};
  policy.trusted_relays = {"a.example"};
  EXPECT_TRUE(StricterOf(policy, policy).SameDecisions(policy));
}

// A random policy over a few builders and relays, so that the two sides overlap.
Policy RandomPolicy(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> pick(0, 3);
  Policy policy;
  policy.mode = static_cast<Mode>(pick(rng) % 3);
  for (BuilderIndex builder = 0; builder < 4; ++builder) {
    if (pick(rng) == 0) policy.banned_builders[builder] = FailureBan(10, "failed");
    if (pick(rng) < 2) policy.trusted_builders.insert(builder);
  }
  for (const char* relay : {"a.example", "b.example"}) {
    if (pick(rng) == 0) policy.banned_relays[relay] = FailureBan(10, "failed");
    if (pick(rng) < 2) policy.trusted_relays.insert(relay);
  }
  return policy;
}

TEST(StricterOf, AllowsOnlyWhatBothAllow) {
  std::mt19937_64 rng(20240601);
  for (int round = 0; round < 2000; ++round) {
    const Policy fleet = RandomPolicy(rng);
    const Policy local = RandomPolicy(rng);
    const Policy stricter = StricterOf(fleet, local);
    for (BuilderIndex builder : {BuilderIndex{0}, BuilderIndex{1}, BuilderIndex{2}, BuilderIndex{3},
                                 BuilderIndex{4}, kSelfBuild}) {
      for (const char* relay : {"", "a.example", "b.example", "c.example"}) {
        if (stricter.IsAllowed(builder, relay)) {
          ASSERT_TRUE(fleet.IsAllowed(builder, relay) && local.IsAllowed(builder, relay))
              << "round " << round << ", builder " << builder << ", relay '" << relay << "'";
        }
      }
    }
  }
}

}  // namespace
}  // namespace breaker::core
