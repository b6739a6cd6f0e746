#include "core/engine.h"

#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/input_bounds.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::core {
namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr Slot kSlotsPerEpoch = 32;
constexpr Epoch kStartEpoch = 10;

Slot SlotOf(Epoch epoch, Slot offset = 0) { return epoch * kSlotsPerEpoch + offset; }

// A builder's public key: 48 bytes, all `c`.
std::string Key(char c) { return std::string(48, c); }

BlockRoot Root(uint32_t id) {
  return BlockRootFromBytes(std::string(reinterpret_cast<const char*>(&id), sizeof(id)));
}

// A Gloas chain (per-builder rules in force) with the defaults of the reference semantics.
Config GloasConfig() {
  Config config;
  config.chain.gloas_fork_epoch = 0;
  return config;
}

// A chain before the Gloas fork, with the seed's latched missed-slot rule.
Config PreGloasConfig() {
  Config config;
  config.missed_slots = MissedSlotRulesForPreset("mevboost").value();
  return config;
}

class EngineTest : public ::testing::Test {
 protected:
  void Start(Slot slot = SlotOf(kStartEpoch)) {
    absl::StatusOr<Engine> engine = Engine::Create(config_, slot);
    ASSERT_THAT(engine, IsOk());
    engine_.emplace(*std::move(engine));
  }

  // Observes `event` at `slot`, first moving the clock there as the service would.
  absl::StatusOr<ObserveOutcome> Observe(Event event, Slot slot, const std::string& node = "n1") {
    if (slot > engine_->current_slot()) engine_->Advance(slot);
    return ObserveNow(std::move(event), slot, node);
  }

  // Observes `event` at `slot` without moving the clock.
  absl::StatusOr<ObserveOutcome> ObserveNow(Event event, Slot slot,
                                            const std::string& node = "n1") {
    Observation observation{slot, node, ++sequences_[node], std::move(event)};
    absl::StatusOr<ObserveResult> observed = engine_->Observe(observation);
    if (!observed.ok()) return observed.status();
    return observed->outcome;
  }

  // Reports the block `root` at `slot` as missing the payload of `builder`, then refreshes.
  absl::StatusOr<ObserveOutcome> Fail(BuilderIndex builder, Slot slot, uint32_t root,
                                      const std::string& node = "n1", double attested = 0.9) {
    auto outcome = Observe(PayloadMissing{builder, Root(root), attested}, slot, node);
    engine_->RefreshPolicy();
    return outcome;
  }

  absl::StatusOr<ObserveOutcome> Deliver(BuilderIndex builder, Slot slot, uint32_t root,
                                         const std::string& node = "n1") {
    auto outcome = Observe(PayloadDelivered{builder, Root(root)}, slot, node);
    engine_->RefreshPolicy();
    return outcome;
  }

  void Bid(BuilderIndex builder, const std::string& relay, Slot slot,
           const std::string& pubkey = "") {
    ASSERT_THAT(Observe(BidSeen{builder, relay, pubkey}, slot), IsOk());
    engine_->RefreshPolicy();
  }

  // `node` reports that it has no block for `slot`, at `slot` (moving the clock there).
  void ReportNoBlock(Slot slot, const std::string& node = "n1") {
    absl::StatusOr<ObserveOutcome> outcome = Observe(BlocksSeen{}, slot, node);
    ASSERT_THAT(outcome, IsOk());
    EXPECT_EQ(*outcome, ObserveOutcome::kApplied);
  }

  void AdvanceToEpoch(Epoch epoch) { engine_->Advance(SlotOf(epoch)); }

  const Policy& policy() const { return engine_->policy(); }
  bool Banned(BuilderIndex builder) const { return policy().banned_builders.contains(builder); }
  const Ban& BanOf(BuilderIndex builder) const { return policy().banned_builders.at(builder); }
  uint32_t Failed(BuilderIndex builder) const {
    auto it = engine_->builders().find(builder);
    return it == engine_->builders().end() ? 0 : it->second.failures.failed;
  }

  Config config_ = GloasConfig();
  std::optional<Engine> engine_;
  absl::flat_hash_map<std::string, uint64_t> sequences_;
};

// --- The five seed scenarios ---------------------------------------------------------------

TEST_F(EngineTest, SeedScenario1LargeBuilderBugBansOneEpochThenUntilReset) {
  Start();
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch, 3), 1), IsOk());
  ASSERT_TRUE(Banned(5));
  EXPECT_EQ(BanOf(5).until_epoch, kStartEpoch + 1);
  EXPECT_FALSE(BanOf(5).until_reset);
  EXPECT_EQ(policy().mode, Mode::kAllBuilders);

  AdvanceToEpoch(kStartEpoch + 1);
  EXPECT_FALSE(Banned(5));

  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch + 3), 2), IsOk());
  ASSERT_TRUE(Banned(5));
  EXPECT_TRUE(BanOf(5).until_reset);
  AdvanceToEpoch(kStartEpoch + 1000);
  EXPECT_TRUE(Banned(5));
  EXPECT_EQ(policy().mode, Mode::kAllBuilders);
}

TEST_F(EngineTest, SeedScenario2MissedBlocksInGloasChangeNothing) {
  config_.missed_slots = MissedSlotRulesForPreset("mevboost").value();
  Start();
  const uint64_t version = policy().version;
  // Twenty slots without any block and no payload failure.
  for (Slot s = 0; s < 20; ++s) engine_->Advance(SlotOf(kStartEpoch, s));
  EXPECT_EQ(policy().mode, Mode::kAllBuilders);
  EXPECT_FALSE(policy().missed_slots.active);
  EXPECT_EQ(policy().version, version);
}

TEST_F(EngineTest, SeedScenario3UntrustedAttackFallsBackToTrustedThenSelfBuild) {
  config_.trusted_builders = {100, 101};
  Start();
  const Slot slot = SlotOf(kStartEpoch);
  ASSERT_THAT(Fail(1, slot, 1), IsOk());
  ASSERT_THAT(Fail(2, slot + 1, 2), IsOk());
  EXPECT_EQ(policy().mode, Mode::kAllBuilders);
  ASSERT_THAT(Fail(3, slot + 2, 3), IsOk());
  EXPECT_EQ(policy().mode, Mode::kTrustedOnly);
  EXPECT_THAT(policy().mode_reason, HasSubstr("1, 2, 3"));
  EXPECT_TRUE(policy().IsAllowed(100, ""));
  EXPECT_FALSE(policy().IsAllowed(7, ""));

  for (BuilderIndex b = 4; b <= 6; ++b) ASSERT_THAT(Fail(b, slot + 2 + b, b), IsOk());
  EXPECT_EQ(policy().mode, Mode::kTrustedOnly);
  ASSERT_THAT(Fail(7, slot + 10, 7), IsOk());
  EXPECT_EQ(policy().mode, Mode::kSelfBuild);
  EXPECT_FALSE(policy().IsAllowed(100, ""));
  EXPECT_TRUE(policy().IsAllowed(kSelfBuild, ""));
}

TEST_F(EngineTest, SeedScenario4RelayOneTwoBansBothRecords) {
  config_.relays = {RelayConfig{"https://relay.example", false, {1, 2}}};
  Start();
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch, 1), 1), IsOk());
  EXPECT_EQ(Failed(1), 1u);
  EXPECT_EQ(Failed(2), 0u);
  ASSERT_TRUE(Banned(1));
  ASSERT_TRUE(Banned(2));
  EXPECT_EQ(BanOf(1).kind, BanKind::kFailure);
  EXPECT_EQ(BanOf(2).kind, BanKind::kCollateral);
  EXPECT_EQ(BanOf(2).until_epoch, kStartEpoch + 1);
  EXPECT_TRUE(policy().banned_relays.contains("https://relay.example"));
}

TEST_F(EngineTest, SeedScenario5PreGloasSixthMissedSlotLatchesUntilReset) {
  config_ = PreGloasConfig();
  Start();
  const Slot start = SlotOf(kStartEpoch);
  // Slots start..start+5 missed (the node reports each without a block): judged at +2 each;
  // the sixth judged missed slot trips.
  for (Slot s = start; s <= start + 5; ++s) ReportNoBlock(s);
  engine_->Advance(start + 6);
  EXPECT_FALSE(policy().missed_slots.tripped);
  EXPECT_EQ(policy().mode, Mode::kAllBuilders);
  engine_->Advance(start + 7);
  EXPECT_TRUE(policy().missed_slots.tripped);
  EXPECT_TRUE(policy().missed_slots.latched);
  EXPECT_EQ(policy().mode, Mode::kSelfBuild);

  // Blocks again do not lift the latch; only a reset does.
  ASSERT_THAT(Observe(BlocksSeen{{Root(9)}}, start + 8), IsOk());
  engine_->Advance(start + 12);
  EXPECT_EQ(policy().mode, Mode::kSelfBuild);
  engine_->Reset();
  engine_->RefreshPolicy();
  EXPECT_EQ(policy().mode, Mode::kAllBuilders);
}

TEST_F(EngineTest, SeedScenario5NonCanonicalBlockKeepsSlotPresent) {
  config_ = PreGloasConfig();
  Start();
  const Slot start = SlotOf(kStartEpoch);
  // One node has no block for any slot, another a (non-canonical) block at start+3: the run of
  // missed slots is broken.
  for (Slot s = start; s <= start + 3; ++s) ReportNoBlock(s);
  engine_->Advance(start + 4);
  ASSERT_THAT(Observe(BlocksSeen{{Root(3)}}, start + 3, "n2"), IsOk());
  for (Slot s = start + 4; s <= start + 8; ++s) ReportNoBlock(s);
  engine_->Advance(start + 9);
  EXPECT_FALSE(policy().missed_slots.tripped);
  EXPECT_EQ(policy().mode, Mode::kAllBuilders);
}

TEST_F(EngineTest, PreGloasBreakerNeedsReportsToTrip) {
  // A breakerd without nodes, or whose nodes are all offline, has no evidence of missed slots.
  config_ = PreGloasConfig();
  Start();
  const Slot start = SlotOf(kStartEpoch);
  for (Slot s = start + 1; s <= start + 100; ++s) {
    engine_->Advance(s);
    ASSERT_EQ(policy().mode, Mode::kAllBuilders) << "slot " << s;
  }
  EXPECT_TRUE(policy().missed_slots.active);
  EXPECT_FALSE(policy().missed_slots.tripped);
  EXPECT_FALSE(policy().missed_slots.latched);
  EXPECT_EQ(policy().missed_slots.consecutive_missed, 0u);
  EXPECT_EQ(policy().missed_slots.missed_in_window, 0u);
}

// --- Per-builder failure tracking ----------------------------------------------------------

TEST_F(EngineTest, EscalatesWhenFailingAgainInsideBackoff) {
  Start();
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch), 1), IsOk());
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch + 4, 31), 2), IsOk());
  EXPECT_EQ(Failed(5), 2u);
  EXPECT_TRUE(BanOf(5).until_reset);
}

TEST_F(EngineTest, RestartsCountingAfterBackoffCloses) {
  Start();
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch), 1), IsOk());
  AdvanceToEpoch(kStartEpoch + 5);
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch + 5), 2), IsOk());
  EXPECT_EQ(Failed(5), 1u);
  EXPECT_FALSE(BanOf(5).until_reset);
  EXPECT_EQ(BanOf(5).until_epoch, kStartEpoch + 6);
}

TEST_F(EngineTest, BanLiftsBeforeCounterResetsAndNextFailureEscalates) {
  Start();
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch), 1), IsOk());
  AdvanceToEpoch(kStartEpoch + 2);
  EXPECT_FALSE(Banned(5));
  EXPECT_EQ(Failed(5), 1u);  // the record lives on until its back-off closes
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch + 2), 2), IsOk());
  EXPECT_TRUE(BanOf(5).until_reset);
}

TEST_F(EngineTest, FiniteCriticalBanPeriod) {
  config_.critical_blacklist_period_epochs = 256;
  Start();
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch), 1), IsOk());
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch, 1), 2), IsOk());
  EXPECT_FALSE(BanOf(5).until_reset);
  EXPECT_EQ(BanOf(5).until_epoch, kStartEpoch + 256);
  AdvanceToEpoch(kStartEpoch + 256);
  EXPECT_FALSE(Banned(5));
}

TEST_F(EngineTest, AllowedFailuresAreTolerated) {
  config_.allowed_failures = 1;
  config_.critical_failures = 3;
  Start();
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch), 1), IsOk());
  EXPECT_FALSE(Banned(5));
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch, 1), 2), IsOk());
  EXPECT_EQ(BanOf(5).until_epoch, kStartEpoch + 1);
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch, 2), 3), IsOk());
  EXPECT_TRUE(BanOf(5).until_reset);
}

TEST_F(EngineTest, CriticalBanLiftedByDelivery) {
  Start();
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch), 1), IsOk());
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch, 1), 2), IsOk());
  ASSERT_TRUE(BanOf(5).until_reset);
  ASSERT_THAT(Deliver(5, SlotOf(kStartEpoch, 5), 3), IsOk());
  EXPECT_FALSE(Banned(5));
  EXPECT_EQ(Failed(5), 0u);
}

TEST_F(EngineTest, AttestationThresholdExactlyIsNotAFailure) {
  Start();
  EXPECT_EQ(*Fail(5, SlotOf(kStartEpoch), 1, "n1", 0.60), ObserveOutcome::kNoEffect);
  EXPECT_FALSE(Banned(5));
  EXPECT_EQ(*Fail(5, SlotOf(kStartEpoch, 1), 2, "n1", 0.6000001), ObserveOutcome::kApplied);
  EXPECT_TRUE(Banned(5));
}

TEST_F(EngineTest, SelfBuildIndexIsNeverTracked) {
  Start();
  EXPECT_THAT(Fail(kSelfBuild, SlotOf(kStartEpoch), 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("self-build")));
  EXPECT_TRUE(engine_->builders().empty());
  EXPECT_THAT(engine_->BanBuilder(kSelfBuild, "no", std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(EngineTest, IndexReuseWhenTheKeyWasSeenBeforeTheFailure) {
  Start();
  // The usual order: a bid (its key remembered, no record yet), the win, the withheld payload.
  Bid(5, "", SlotOf(kStartEpoch), Key('a'));
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch, 1), 1), IsOk());
  ASSERT_TRUE(Banned(5));
  Bid(5, "", SlotOf(kStartEpoch, 2), Key('a'));
  ASSERT_TRUE(Banned(5));
  // The index's new owner bids: it inherits nothing.
  Bid(5, "", SlotOf(kStartEpoch, 3), Key('b'));
  EXPECT_FALSE(Banned(5));
  EXPECT_FALSE(engine_->builders().contains(5));
  EXPECT_EQ(engine_->builder_keys().at(5).pubkey, Key('b'));
}

TEST_F(EngineTest, PolicyCarriesTheKeysOfBannedAndTrustedBuildersOnly) {
  Start();
  Bid(5, "", SlotOf(kStartEpoch), Key('a'));
  Bid(6, "", SlotOf(kStartEpoch), Key('b'));
  Bid(7, "", SlotOf(kStartEpoch), Key('c'));
  ASSERT_THAT(engine_->SetBuilderTrust(7, true), IsOk());
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch, 1), 1), IsOk());
  ASSERT_TRUE(Banned(5));
  EXPECT_THAT(policy().builder_pubkeys, UnorderedElementsAre(Pair(5, Key('a')), Pair(7, Key('c'))));
  // A key learned after the ban is a new version: a validator client names builders by key.
  ASSERT_THAT(engine_->BanBuilder(8, "withheld", std::nullopt), IsOk());
  const uint64_t before = policy().version;
  Bid(8, "", SlotOf(kStartEpoch, 2), Key('d'));
  EXPECT_GT(policy().version, before);
  EXPECT_EQ(policy().builder_pubkeys.at(8), Key('d'));
}

TEST_F(EngineTest, IndexReuseWhenTheFailureCameBeforeAnyKey) {
  Start();
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch), 1), IsOk());
  // The first key seen is the failing builder's own.
  Bid(5, "", SlotOf(kStartEpoch, 1), Key('a'));
  ASSERT_TRUE(Banned(5));
  Bid(5, "", SlotOf(kStartEpoch, 2), Key('b'));
  EXPECT_FALSE(Banned(5));
  EXPECT_FALSE(engine_->builders().contains(5));
}

TEST_F(EngineTest, IndexReuseForgetsTheRelaysOfTheOldOwner) {
  Start();
  const Slot slot = SlotOf(kStartEpoch);
  Bid(5, "http://a", slot, Key('a'));
  Bid(6, "http://a", slot, Key('6'));
  ASSERT_THAT(Fail(5, slot, 1), IsOk());
  ASSERT_TRUE(policy().banned_relays.contains("http://a"));
  ASSERT_EQ(BanOf(6).kind, BanKind::kCollateral);
  // The new owner of index 5 bids through another relay: relay a's ban had only the old owner
  // as its cause.
  Bid(5, "http://b", slot + 1, Key('b'));
  EXPECT_FALSE(Banned(5));
  EXPECT_FALSE(Banned(6));
  EXPECT_TRUE(policy().banned_relays.empty());
  EXPECT_EQ(engine_->RelaysServing(5), std::vector<std::string>{"http://b"});
}

TEST_F(EngineTest, FailedKeyLookupNeverShedsABan) {
  Start();
  Bid(5, "", SlotOf(kStartEpoch), Key('a'));
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch, 1), 1), IsOk());
  const absl::flat_hash_map<BuilderIndex, BuilderKey> keys = engine_->builder_keys();
  Bid(5, "", SlotOf(kStartEpoch, 2), "");
  EXPECT_TRUE(Banned(5));
  EXPECT_EQ(engine_->builder_keys(), keys);
}

TEST_F(EngineTest, AKeyOfAnotherLengthIsRefused) {
  Start();
  for (const std::string& key : {std::string(47, 'k'), std::string(49, 'k'), std::string("pk")}) {
    EXPECT_THAT(
        Observe(BidSeen{5, "http://a", key}, SlotOf(kStartEpoch)),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bid_seen.builder_pubkey is")));
  }
  EXPECT_TRUE(engine_->builder_keys().empty());
  EXPECT_TRUE(engine_->RelayMembers("http://a").empty());
}

TEST_F(EngineTest, KeysAreKeptWhileTheIndexIsBannedAndForgottenAfterTheTtl) {
  config_.relay_association_ttl_epochs = 4;
  Start();
  Bid(5, "", SlotOf(kStartEpoch), Key('a'));
  Bid(6, "", SlotOf(kStartEpoch), Key('b'));
  ASSERT_THAT(Fail(6, SlotOf(kStartEpoch), 1), IsOk());
  ASSERT_THAT(Fail(6, SlotOf(kStartEpoch, 1), 2), IsOk());
  ASSERT_TRUE(BanOf(6).until_reset);
  AdvanceToEpoch(kStartEpoch + 100);
  // No record and no bid for four epochs: forgotten. Banned: kept.
  EXPECT_FALSE(engine_->builder_keys().contains(5));
  ASSERT_TRUE(engine_->builder_keys().contains(6));
  Bid(6, "", SlotOf(kStartEpoch + 100), Key('c'));
  EXPECT_FALSE(Banned(6));
}

TEST_F(EngineTest, KeysAreCappedByMaxTrackedBuildersNeverDroppingABannedIndexsKey) {
  config_.max_tracked_builders = 16;
  Start();
  const Slot slot = SlotOf(kStartEpoch);
  Bid(100, "", slot, Key('a'));
  ASSERT_THAT(Fail(100, slot, 1), IsOk());
  for (BuilderIndex b = 0; b < 40; ++b) Bid(b, "", slot, Key(static_cast<char>('0' + b)));
  EXPECT_EQ(engine_->builder_keys().size(), 16u);
  ASSERT_TRUE(engine_->builder_keys().contains(100));
  Bid(100, "", slot, Key('b'));
  EXPECT_FALSE(Banned(100));
}

TEST_F(EngineTest, AnExitForgetsTheKey) {
  Start();
  Bid(5, "", SlotOf(kStartEpoch), Key('a'));
  ASSERT_THAT(Observe(BuilderExited{5}, SlotOf(kStartEpoch)), IsOk());
  EXPECT_FALSE(engine_->builder_keys().contains(5));
  // The index's next owner fails, then bids under its own key: the first key known.
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch, 1), 1), IsOk());
  Bid(5, "", SlotOf(kStartEpoch, 2), Key('b'));
  EXPECT_TRUE(Banned(5));
}

TEST_F(EngineTest, ExitedBuilderIsDropped) {
  Start();
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch), 1), IsOk());
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch, 1), 2), IsOk());
  ASSERT_THAT(Observe(BuilderExited{5}, SlotOf(kStartEpoch, 2)), IsOk());
  engine_->RefreshPolicy();
  EXPECT_FALSE(Banned(5));
}

TEST_F(EngineTest, RecordsArePrunedOnceBanAndBackoffAreOver) {
  Start();
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch), 1), IsOk());
  AdvanceToEpoch(kStartEpoch + 4);
  EXPECT_EQ(engine_->builders().size(), 1u);
  AdvanceToEpoch(kStartEpoch + 5);
  EXPECT_TRUE(engine_->builders().empty());
}

// --- Fleet aggregation ---------------------------------------------------------------------

TEST_F(EngineTest, FailureCountedOncePerRootWhateverTheReporters) {
  Start();
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch), 1, "n1"), IsOk());
  EXPECT_EQ(*Fail(5, SlotOf(kStartEpoch), 1, "n2"), ObserveOutcome::kNoEffect);
  EXPECT_EQ(*Fail(5, SlotOf(kStartEpoch), 1, "n1"), ObserveOutcome::kNoEffect);
  EXPECT_EQ(Failed(5), 1u);
  EXPECT_FALSE(BanOf(5).until_reset);
}

TEST_F(EngineTest, MinReportingNodesBeforeAFailureCounts) {
  config_.min_reporting_nodes = 2;
  Start();
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch), 1, "n1"), IsOk());
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch), 1, "n1"), IsOk());
  EXPECT_FALSE(Banned(5));
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch), 1, "n2"), IsOk());
  EXPECT_TRUE(Banned(5));
}

TEST_F(EngineTest, ObserveSaysWhenAFailureIsRecorded) {
  config_.min_reporting_nodes = 2;
  Start();
  const Slot slot = SlotOf(kStartEpoch);
  engine_->Advance(slot);
  auto missing = [&](const std::string& node, uint64_t sequence) {
    return engine_->Observe(Observation{slot, node, sequence, PayloadMissing{5, Root(1), 0.9}});
  };
  // The first vote waits for a second reporter: applied, nothing recorded yet.
  absl::StatusOr<ObserveResult> first = missing("n1", 1);
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(first->outcome, ObserveOutcome::kApplied);
  EXPECT_EQ(first->recorded, RecordedFailure::kNone);
  absl::StatusOr<ObserveResult> second = missing("n2", 1);
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(second->outcome, ObserveOutcome::kApplied);
  EXPECT_EQ(second->recorded, RecordedFailure::kBuilder);
  EXPECT_EQ(Failed(5), 1u);
  // A third reporter of the counted root records nothing more.
  absl::StatusOr<ObserveResult> third = missing("n3", 1);
  ASSERT_THAT(third, IsOk());
  EXPECT_EQ(third->outcome, ObserveOutcome::kNoEffect);
  EXPECT_EQ(third->recorded, RecordedFailure::kNone);
  // Nor does a replay of the vote that recorded it.
  absl::StatusOr<ObserveResult> replay = missing("n2", 1);
  ASSERT_THAT(replay, IsOk());
  EXPECT_EQ(replay->outcome, ObserveOutcome::kDuplicate);
  EXPECT_EQ(replay->recorded, RecordedFailure::kNone);
  EXPECT_EQ(Failed(5), 1u);
}

TEST_F(EngineTest, ObserveSaysWhenARelayFailureIsRecorded) {
  config_ = PreGloasConfig();
  Start();
  const Slot slot = SlotOf(kStartEpoch);
  engine_->Advance(slot);
  absl::StatusOr<ObserveResult> observed =
      engine_->Observe(Observation{slot, "n1", 1, RelayRevealMissing{"Relay.X", Root(1)}});
  ASSERT_THAT(observed, IsOk());
  EXPECT_EQ(observed->outcome, ObserveOutcome::kApplied);
  EXPECT_EQ(observed->recorded, RecordedFailure::kRelay);
}

TEST_F(EngineTest, DeliveredReportRevertsAnAppliedFailure) {
  Start();
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch), 1, "n1"), IsOk());
  ASSERT_TRUE(Banned(5));
  ASSERT_THAT(Deliver(5, SlotOf(kStartEpoch), 1, "n2"), IsOk());
  EXPECT_FALSE(Banned(5));
  // Later missing reports of the same root change nothing.
  EXPECT_EQ(*Fail(5, SlotOf(kStartEpoch), 1, "n3"), ObserveOutcome::kNoEffect);
  EXPECT_FALSE(Banned(5));
}

TEST_F(EngineTest, DeliveredReportNamingAnotherBuilderIsRefused) {
  Start();
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch), 1), IsOk());
  EXPECT_THAT(Deliver(6, SlotOf(kStartEpoch), 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("builder 5")));
  EXPECT_TRUE(Banned(5));
}

TEST_F(EngineTest, ReplayedSequenceNumbersAreIgnored) {
  Start();
  Observation observation{SlotOf(kStartEpoch), "n1", 7, PayloadMissing{5, Root(1), 0.9}};
  EXPECT_EQ(engine_->Observe(observation)->outcome, ObserveOutcome::kApplied);
  observation.event = PayloadMissing{6, Root(2), 0.9};
  EXPECT_EQ(engine_->Observe(observation)->outcome, ObserveOutcome::kDuplicate);
  observation.sequence = 3;
  EXPECT_EQ(engine_->Observe(observation)->outcome, ObserveOutcome::kDuplicate);
  engine_->RefreshPolicy();
  EXPECT_FALSE(Banned(6));
}

TEST_F(EngineTest, ANumberAboveTheCeilingIsRefusedAndNotTaken) {
  Start();
  Observation observation{engine_->current_slot(), "n1", bounds::kMaxSequence + 1, Finalized{1}};
  EXPECT_THAT(engine_->Observe(observation),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("observation.sequence")));
  EXPECT_FALSE(engine_->node_sequences().contains("n1"));
  observation.sequence = 5;
  EXPECT_EQ(engine_->Observe(observation)->outcome, ObserveOutcome::kApplied);
  observation.sequence = bounds::kMaxSequence + 1;
  EXPECT_THAT(engine_->Observe(observation), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(engine_->node_sequences().at("n1"), 5u);
}

TEST_F(EngineTest, ANodeAtTheCeilingIsRefusedEverythingUntilItsReset) {
  Start();
  const Slot now = engine_->current_slot();
  ASSERT_THAT(engine_->Observe(Observation{now, "n1", bounds::kMaxSequence, Finalized{1}}), IsOk());
  // Neither a higher number nor a lower one is taken, and neither silently.
  for (uint64_t sequence : {bounds::kMaxSequence + 1, bounds::kMaxSequence, uint64_t{7}}) {
    EXPECT_THAT(
        engine_->Observe(Observation{now, "n1", sequence, PayloadMissing{5, Root(1), 0.9}}),
        StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("`breakerctl reset --node=n1`")))
        << sequence;
  }
  EXPECT_EQ(engine_->node_sequences().at("n1"), bounds::kMaxSequence);
  engine_->RefreshPolicy();
  EXPECT_FALSE(Banned(5));
  // Other nodes are not concerned.
  EXPECT_EQ(engine_->Observe(Observation{now, "n2", 7, Finalized{1}})->outcome,
            ObserveOutcome::kApplied);

  ASSERT_THAT(engine_->ResetNodeSequence("n1"), IsOk());
  EXPECT_FALSE(engine_->node_sequences().contains("n1"));
  EXPECT_EQ(engine_->Observe(Observation{now, "n1", 7, PayloadMissing{5, Root(1), 0.9}})->outcome,
            ObserveOutcome::kApplied);
  EXPECT_EQ(engine_->node_sequences().at("n1"), 7u);
  engine_->RefreshPolicy();
  EXPECT_TRUE(Banned(5));
}

TEST_F(EngineTest, ResettingANodeWithoutNumbersIsNotFound) {
  Start();
  EXPECT_THAT(engine_->ResetNodeSequence("n9"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("breakerctl nodes")));
  EXPECT_FALSE(engine_->node_sequences().contains("n9"));
}

TEST_F(EngineTest, SlotsTooFarAheadOrTooOldAreRefused) {
  Start();
  const Slot now = engine_->current_slot();
  auto missing = [](BuilderIndex builder, uint32_t root) {
    return PayloadMissing{builder, Root(root), 0.9};
  };
  EXPECT_THAT(ObserveNow(missing(5, 1), now + 3),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("ahead")));
  EXPECT_THAT(ObserveNow(missing(5, 2), now - 65),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("older")));
  EXPECT_THAT(ObserveNow(missing(5, 3), now + 2), IsOk());
  EXPECT_THAT(ObserveNow(missing(6, 4), now - 64), IsOk());
}

TEST_F(EngineTest, MalformedObservationsAreRefusedAndChangeNothing) {
  Start();
  const Slot now = engine_->current_slot();
  EXPECT_THAT(Fail(5, now, 1, "n1", std::nan("")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("attested_fraction")));
  EXPECT_THAT(Fail(5, now, 1, "n1", 1.5), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(engine_->Observe(Observation{now, "", 1, Finalized{1}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("node")));
  EXPECT_THAT(engine_->Observe(Observation{now, "n9", 0, Finalized{1}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sequence")));
  EXPECT_THAT(Observe(BidSeen{5, "ftp://relay", ""}, now),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Observe(Finalized{kStartEpoch + 1}, now),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("finalized")));
  EXPECT_TRUE(engine_->builders().empty());
  EXPECT_FALSE(engine_->RefreshPolicy());
  // Refused, but handled: a resend under the same number is a replay.
  EXPECT_EQ(engine_->node_sequences().at("n1"), sequences_["n1"]);
}

TEST_F(EngineTest, MarkHandledMakesAResendAReplay) {
  Start();
  engine_->MarkHandled("n7", 4);
  engine_->MarkHandled("n7", 2);
  EXPECT_EQ(engine_->node_sequences().at("n7"), 4u);
  Observation resend{engine_->current_slot(), "n7", 4, PayloadMissing{5, Root(1), 0.9}};
  EXPECT_EQ(engine_->Observe(resend)->outcome, ObserveOutcome::kDuplicate);
}

// --- Relays --------------------------------------------------------------------------------

TEST_F(EngineTest, LearnedMembershipBansRelaySiblings) {
  Start();
  const Slot slot = SlotOf(kStartEpoch);
  Bid(1, "relay.example:18550", slot);
  Bid(2, "HTTP://Relay.Example:18550/", slot);
  EXPECT_EQ(engine_->RelaysServing(2), std::vector<std::string>{"http://relay.example:18550"});
  ASSERT_THAT(Fail(1, slot + 1, 1), IsOk());
  EXPECT_TRUE(Banned(2));
  EXPECT_FALSE(policy().IsAllowed(3, "http://relay.example:18550"));
  EXPECT_TRUE(policy().IsAllowed(3, ""));
}

TEST_F(EngineTest, CollateralSpreadsOneLevelOnly) {
  config_.relays = {RelayConfig{"http://a", false, {1, 2}}, RelayConfig{"http://b", false, {2, 3}}};
  Start();
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch), 1), IsOk());
  EXPECT_TRUE(Banned(2));
  EXPECT_FALSE(Banned(3));
  EXPECT_TRUE(policy().banned_relays.contains("http://a"));
  EXPECT_FALSE(policy().banned_relays.contains("http://b"));
}

TEST_F(EngineTest, MemberOfSeveralRelaysStaysBannedWhileAnyIsBanned) {
  config_.relays = {RelayConfig{"http://a", false, {1, 2}}, RelayConfig{"http://b", false, {2, 3}}};
  Start();
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch), 1), IsOk());
  ASSERT_THAT(Fail(3, SlotOf(kStartEpoch, 1), 2), IsOk());
  ASSERT_THAT(Deliver(1, SlotOf(kStartEpoch, 2), 3), IsOk());
  EXPECT_FALSE(policy().banned_relays.contains("http://a"));
  EXPECT_TRUE(Banned(2));  // still banned through b
  ASSERT_THAT(Deliver(3, SlotOf(kStartEpoch, 3), 4), IsOk());
  EXPECT_FALSE(Banned(2));
}

TEST_F(EngineTest, MemberThatNeverFailedCannotReleaseItsRelay) {
  config_.relays = {RelayConfig{"http://a", false, {1, 2}}};
  Start();
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch), 1), IsOk());
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch, 1), 2), IsOk());
  ASSERT_THAT(Deliver(2, SlotOf(kStartEpoch, 2), 3), IsOk());
  EXPECT_TRUE(Banned(1));
  EXPECT_TRUE(Banned(2));
  ASSERT_THAT(Deliver(1, SlotOf(kStartEpoch, 3), 4), IsOk());
  EXPECT_FALSE(Banned(1));
  EXPECT_FALSE(Banned(2));
  EXPECT_TRUE(policy().banned_relays.empty());
}

TEST_F(EngineTest, ExitOfTheFailingMemberReleasesItsRelay) {
  Start();
  const Slot slot = SlotOf(kStartEpoch);
  Bid(1, "http://a", slot);
  Bid(2, "http://a", slot);
  ASSERT_THAT(Fail(1, slot, 1), IsOk());
  ASSERT_TRUE(Banned(2));
  ASSERT_THAT(Observe(BuilderExited{1}, slot + 1), IsOk());
  engine_->RefreshPolicy();
  EXPECT_FALSE(Banned(2));
  EXPECT_TRUE(policy().banned_relays.empty());
}

TEST_F(EngineTest, RelayBanFollowsTheMembersThatStillFail) {
  config_.relays = {RelayConfig{"http://a", false, {1, 2, 3}}};
  Start();
  ASSERT_THAT(Fail(3, SlotOf(kStartEpoch), 1), IsOk());
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch, 1), 2), IsOk());
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch, 2), 3), IsOk());
  EXPECT_EQ(policy().banned_relays.at("http://a").until_epoch, kStartEpoch + 32);
  // Builder 1 delivers: the relay is banned only for builder 3's single failure now.
  ASSERT_THAT(Deliver(1, SlotOf(kStartEpoch, 3), 3), IsOk());
  EXPECT_EQ(policy().banned_relays.at("http://a").until_epoch, kStartEpoch + 1);
  EXPECT_THAT(policy().banned_relays.at("http://a").reason, HasSubstr("builder 3"));
  AdvanceToEpoch(kStartEpoch + 1);
  EXPECT_TRUE(policy().banned_relays.empty());
  EXPECT_FALSE(Banned(1));
}

TEST_F(EngineTest, RelayBanIsCappedByRelayPeriod) {
  config_.relays = {RelayConfig{"http://a", false, {1, 2}}};
  Start();
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch), 1), IsOk());
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch, 1), 2), IsOk());
  ASSERT_TRUE(BanOf(1).until_reset);
  EXPECT_EQ(BanOf(2).until_epoch, kStartEpoch + 32);
  AdvanceToEpoch(kStartEpoch + 32);
  EXPECT_TRUE(Banned(1));
  EXPECT_FALSE(Banned(2));
}

TEST_F(EngineTest, CollateralBansAreNotCountedTowardModes) {
  RelayConfig relay{"http://big", false, {}};
  for (BuilderIndex b = 1; b <= 12; ++b) relay.indices.push_back(b);
  config_.relays = {relay};
  Start();
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch), 1), IsOk());
  EXPECT_EQ(policy().banned_builders.size(), 12u);
  EXPECT_EQ(policy().mode, Mode::kAllBuilders);
}

TEST_F(EngineTest, OperatorBlacklistIsNotCountedTowardModes) {
  config_.blacklisted_builders = {1, 2, 3, 4, 5, 6, 7, 8};
  Start();
  EXPECT_EQ(policy().banned_builders.size(), 8u);
  EXPECT_EQ(BanOf(1).kind, BanKind::kOperator);
  EXPECT_EQ(policy().mode, Mode::kAllBuilders);
  EXPECT_THAT(engine_->UnbanBuilder(1),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("configured blacklist")));
}

TEST_F(EngineTest, LearnedAssociationExpiresAfterTtl) {
  Start();
  Bid(1, "http://a", SlotOf(kStartEpoch));
  Bid(2, "http://a", SlotOf(kStartEpoch));
  AdvanceToEpoch(kStartEpoch + 64);
  Bid(1, "http://a", SlotOf(kStartEpoch + 64));
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch + 64, 1), 1), IsOk());
  EXPECT_TRUE(Banned(1));
  EXPECT_FALSE(Banned(2));
}

TEST_F(EngineTest, PreGloasRelayRevealFailureBansTheRelay) {
  config_ = PreGloasConfig();
  Start();
  ASSERT_THAT(Observe(RelayRevealMissing{"Relay.X", Root(1)}, SlotOf(kStartEpoch)), IsOk());
  engine_->RefreshPolicy();
  ASSERT_TRUE(policy().banned_relays.contains("http://relay.x"));
  EXPECT_EQ(policy().banned_relays.at("http://relay.x").until_epoch, kStartEpoch + 1);
  EXPECT_FALSE(policy().IsAllowed(1, "http://relay.x"));
}

// --- Caps ----------------------------------------------------------------------------------

TEST_F(EngineTest, TrackedBuildersCapNeverDropsAnActiveBan) {
  config_.max_tracked_builders = 16;
  config_.critical_failed_builders = 1000;
  config_.critical_failed_untrusted_builders = 1000;
  Start();
  // A flood of failures of distinct indices: each is banned, so the 17th finds no room.
  for (BuilderIndex b = 0; b < 16; ++b) ASSERT_THAT(Fail(b, SlotOf(kStartEpoch), b), IsOk());
  EXPECT_THAT(Fail(16, SlotOf(kStartEpoch), 16),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("max_tracked_builders")));
  EXPECT_EQ(policy().banned_builders.size(), 16u);
  // Once the bans lift (records alive in back-off), new failures evict them.
  AdvanceToEpoch(kStartEpoch + 1);
  for (BuilderIndex b = 100; b < 110; ++b) {
    ASSERT_THAT(Fail(b, SlotOf(kStartEpoch + 1), b), IsOk());
  }
  EXPECT_LE(engine_->builders().size(), 16u);
  for (BuilderIndex b = 100; b < 110; ++b) EXPECT_TRUE(Banned(b)) << b;
}

TEST_F(EngineTest, PerRelayIndexCapKeepsFailingMembers) {
  config_.max_indices_per_relay = 4;
  Start();
  const Slot slot = SlotOf(kStartEpoch);
  Bid(1, "http://a", slot);
  ASSERT_THAT(Fail(1, slot, 1), IsOk());
  for (BuilderIndex b = 2; b < 50; ++b) Bid(b, "http://a", slot);
  const RelayRecord& relay = engine_->relays().at("http://a");
  EXPECT_EQ(relay.learned.size(), 4u);
  EXPECT_TRUE(relay.learned.contains(1));
}

TEST_F(EngineTest, RelayCapKeepsConfiguredAndBannedRelays) {
  config_.max_relays = 3;
  config_.relays = {RelayConfig{"http://configured", false, {}}};
  Start();
  const Slot slot = SlotOf(kStartEpoch);
  Bid(1, "http://banned", slot);
  ASSERT_THAT(Fail(1, slot, 1), IsOk());
  for (int i = 0; i < 20; ++i) Bid(10 + i, "http://r" + std::to_string(i), slot);
  EXPECT_EQ(engine_->relays().size(), 3u);
  EXPECT_TRUE(engine_->relays().contains("http://configured"));
  EXPECT_TRUE(engine_->relays().contains("http://banned"));
}

TEST_F(EngineTest, LoweredCapsEvictAtOnceButKeepActiveBans) {
  config_.critical_failed_builders = 1000;
  config_.critical_failed_untrusted_builders = 1000;
  Start();
  // Builders 20..59 failed an epoch ago (their bans have lifted, their records stay in
  // back-off); builders 1..18 are banned now. Six relays, one with ten members.
  for (BuilderIndex b = 20; b < 60; ++b) ASSERT_THAT(Fail(b, SlotOf(kStartEpoch), b), IsOk());
  for (int i = 0; i < 6; ++i) Bid(60 + i, "http://r" + std::to_string(i), SlotOf(kStartEpoch));
  for (BuilderIndex b = 70; b < 80; ++b) Bid(b, "http://r0", SlotOf(kStartEpoch));
  AdvanceToEpoch(kStartEpoch + 1);
  const Slot now = SlotOf(kStartEpoch + 1);
  for (BuilderIndex b = 1; b <= 18; ++b) ASSERT_THAT(Fail(b, now, b), IsOk());
  ASSERT_EQ(engine_->builders().size(), 58u);
  ASSERT_EQ(engine_->relays().size(), 6u);

  Config lower = config_;
  lower.max_tracked_builders = 20;
  lower.max_relays = 2;
  lower.max_indices_per_relay = 3;
  ASSERT_THAT(engine_->Reconfigure(lower), IsOk());
  EXPECT_EQ(engine_->builders().size(), 20u);
  for (BuilderIndex b = 1; b <= 18; ++b) EXPECT_TRUE(engine_->builders().contains(b)) << b;
  EXPECT_EQ(engine_->relays().size(), 2u);
  for (const auto& [id, relay] : engine_->relays()) EXPECT_LE(relay.learned.size(), 3u) << id;
  engine_->RefreshPolicy();
  for (BuilderIndex b = 1; b <= 18; ++b) EXPECT_TRUE(Banned(b)) << b;

  // Below what the active bans hold, every ban stays and nothing new is tracked.
  lower.max_tracked_builders = 16;
  ASSERT_THAT(engine_->Reconfigure(lower), IsOk());
  EXPECT_EQ(engine_->builders().size(), 18u);
  EXPECT_THAT(Fail(100, now, 100),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("max_tracked_builders")));
}

// --- Trust, modes and operator actions -----------------------------------------------------

TEST_F(EngineTest, TrustedOnlyTakesTrustedBuildersAndTrustedRelays) {
  config_.relays = {RelayConfig{"http://trusted", true, {50}}};
  config_.trusted_builders = {40};
  Start();
  for (BuilderIndex b = 1; b <= 3; ++b) ASSERT_THAT(Fail(b, SlotOf(kStartEpoch), b), IsOk());
  ASSERT_EQ(policy().mode, Mode::kTrustedOnly);
  EXPECT_TRUE(policy().IsAllowed(40, ""));
  EXPECT_TRUE(policy().IsAllowed(50, "http://trusted"));
  EXPECT_TRUE(policy().IsAllowed(60, "http://trusted"));
  EXPECT_FALSE(policy().IsAllowed(60, ""));
  EXPECT_FALSE(policy().IsAllowed(60, "http://other"));
}

TEST_F(EngineTest, TrustedBuildersDoNotCountTowardTrustedOnly) {
  config_.trusted_builders = {1, 2};
  Start();
  for (BuilderIndex b = 1; b <= 4; ++b) ASSERT_THAT(Fail(b, SlotOf(kStartEpoch), b), IsOk());
  EXPECT_EQ(policy().mode, Mode::kAllBuilders);
  EXPECT_FALSE(policy().IsAllowed(1, ""));  // a banned builder is refused, trusted or not
}

TEST_F(EngineTest, ModeRecoversAsBansLift) {
  Start();
  for (BuilderIndex b = 1; b <= 3; ++b) ASSERT_THAT(Fail(b, SlotOf(kStartEpoch), b), IsOk());
  ASSERT_EQ(policy().mode, Mode::kTrustedOnly);
  EXPECT_TRUE(engine_->Advance(SlotOf(kStartEpoch + 1)));
  EXPECT_EQ(policy().mode, Mode::kAllBuilders);
  EXPECT_THAT(policy().reason, HasSubstr("allowed again 1, 2, 3"));
}

TEST_F(EngineTest, OperatorBanUnbanAndTrust) {
  Start();
  ASSERT_THAT(engine_->BanBuilder(9, "withheld on holesky", kStartEpoch + 2), IsOk());
  engine_->RefreshPolicy();
  ASSERT_TRUE(Banned(9));
  EXPECT_EQ(BanOf(9).kind, BanKind::kOperator);
  EXPECT_THAT(BanOf(9).reason, HasSubstr("withheld on holesky"));
  AdvanceToEpoch(kStartEpoch + 2);
  EXPECT_FALSE(Banned(9));

  ASSERT_THAT(engine_->BanBuilder(9, "again", std::nullopt), IsOk());
  ASSERT_THAT(engine_->UnbanBuilder(9), IsOk());
  engine_->RefreshPolicy();
  EXPECT_FALSE(Banned(9));
  EXPECT_THAT(engine_->UnbanBuilder(9), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(engine_->BanBuilder(9, "", std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument));

  ASSERT_THAT(engine_->SetBuilderTrust(9, true), IsOk());
  ASSERT_THAT(engine_->SetRelayTrust("Relay.Y", true), IsOk());
  engine_->RefreshPolicy();
  EXPECT_TRUE(policy().trusted_builders.contains(9));
  EXPECT_TRUE(policy().trusted_relays.contains("http://relay.y"));
  EXPECT_THAT(engine_->SetRelayTrust("ftp://x", true),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(EngineTest, UnbanOfCollateralMemberNamesTheRelay) {
  config_.relays = {RelayConfig{"http://a", false, {1, 2}}};
  Start();
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch), 1), IsOk());
  EXPECT_THAT(engine_->UnbanBuilder(2),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("http://a")));
}

TEST_F(EngineTest, ResetClearsFailuresButKeepsOperatorBans) {
  config_.relays = {RelayConfig{"http://a", false, {1, 2}}};
  Start();
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch), 1), IsOk());
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch, 1), 2), IsOk());
  ASSERT_THAT(engine_->BanBuilder(7, "operator", std::nullopt), IsOk());
  engine_->Reset();
  EXPECT_TRUE(engine_->RefreshPolicy());
  EXPECT_FALSE(Banned(1));
  EXPECT_FALSE(Banned(2));
  EXPECT_TRUE(Banned(7));
  EXPECT_TRUE(policy().banned_relays.empty());
}

// --- Operator bans of relays ----------------------------------------------------------------

TEST_F(EngineTest, BannedRelayRefusesBidsThroughItAndBansItsMembers) {
  config_.relays = {RelayConfig{"http://configured", false, {7}}};
  Start();
  const Slot slot = SlotOf(kStartEpoch);
  Bid(1, "http://a", slot);
  Bid(2, "relay.other", slot);
  Bid(2, "http://a", slot);
  ASSERT_THAT(engine_->BanRelay("HTTP://A/", "stolen keys", std::nullopt), IsOk());
  EXPECT_TRUE(engine_->RefreshPolicy());
  EXPECT_THAT(policy().reason, HasSubstr("banned relays http://a"));
  ASSERT_TRUE(policy().banned_relays.contains("http://a"));
  const Ban& relay_ban = policy().banned_relays.at("http://a");
  EXPECT_EQ(relay_ban.kind, BanKind::kOperator);
  EXPECT_TRUE(relay_ban.until_reset);
  EXPECT_EQ(relay_ban.reason, "operator: stolen keys");
  // Every bid through it, whoever the builder; its members everywhere, as the operator's ban.
  EXPECT_FALSE(policy().IsAllowed(3, "http://a"));
  EXPECT_TRUE(policy().IsAllowed(3, ""));
  for (BuilderIndex member : {1, 2}) {
    ASSERT_TRUE(Banned(member)) << member;
    EXPECT_EQ(BanOf(member).kind, BanKind::kOperator);
    EXPECT_TRUE(BanOf(member).until_reset);
    EXPECT_EQ(BanOf(member).reason, "relay http://a is banned: operator: stolen keys");
    EXPECT_FALSE(policy().IsAllowed(member, "http://relay.other"));
  }
  // The other relay of builder 2 is not banned: the ban spreads one level, like collateral.
  EXPECT_FALSE(policy().banned_relays.contains("http://relay.other"));
  EXPECT_TRUE(engine_->builders().empty());
  // A builder that bids through it later is its member too.
  Bid(3, "http://a", slot + 1);
  EXPECT_TRUE(Banned(3));
  // A configured relay's configured indices are its members from the start.
  ASSERT_THAT(engine_->BanRelay("http://configured", "investigating", kStartEpoch + 3), IsOk());
  engine_->RefreshPolicy();
  ASSERT_TRUE(Banned(7));
  EXPECT_EQ(BanOf(7).until_epoch, kStartEpoch + 3);
  EXPECT_EQ(policy().mode, Mode::kAllBuilders);
}

TEST_F(EngineTest, OperatorRelayBansNeverCountTowardModes) {
  config_.critical_failed_builders = 2;
  config_.critical_failed_untrusted_builders = 1;
  RelayConfig relay{"http://big", false, {}};
  for (BuilderIndex b = 1; b <= 12; ++b) relay.indices.push_back(b);
  config_.relays = {relay};
  Start();
  for (BuilderIndex b = 20; b < 30; ++b) Bid(b, "http://big", SlotOf(kStartEpoch));
  ASSERT_THAT(engine_->BanRelay("http://big", "x", std::nullopt), IsOk());
  engine_->RefreshPolicy();
  EXPECT_EQ(policy().banned_builders.size(), 22u);
  EXPECT_EQ(policy().mode, Mode::kAllBuilders);
  // One builder's own failure still counts.
  ASSERT_THAT(Fail(40, SlotOf(kStartEpoch, 1), 1), IsOk());
  EXPECT_EQ(policy().mode, Mode::kTrustedOnly);
}

TEST_F(EngineTest, RelayBanUntilAnEpochLiftsByItself) {
  Start();
  Bid(1, "http://a", SlotOf(kStartEpoch));
  ASSERT_THAT(engine_->BanRelay("http://a", "x", kStartEpoch + 2), IsOk());
  engine_->RefreshPolicy();
  ASSERT_TRUE(Banned(1));
  EXPECT_EQ(BanOf(1).until_epoch, kStartEpoch + 2);
  EXPECT_FALSE(BanOf(1).until_reset);
  AdvanceToEpoch(kStartEpoch + 1);
  EXPECT_TRUE(Banned(1));
  AdvanceToEpoch(kStartEpoch + 2);
  EXPECT_FALSE(Banned(1));
  EXPECT_TRUE(policy().banned_relays.empty());
  EXPECT_TRUE(engine_->operator_relay_bans().empty());
}

TEST_F(EngineTest, BanRelayRefusesBadRequestsAndHoldsAtMostTheBound) {
  Start();
  EXPECT_THAT(engine_->BanRelay("ftp://a", "x", std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(engine_->BanRelay("http://a", "", std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reason")));
  EXPECT_THAT(
      engine_->BanRelay("http://a", std::string(bounds::kMaxReasonBytes + 1, 'r'), std::nullopt),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reason is 1025 bytes")));
  EXPECT_THAT(engine_->BanRelay("http://a", "x", kStartEpoch),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("already be over")));
  EXPECT_THAT(engine_->BanRelay("http://a", "x", kStartEpoch + bounds::kMaxPeriodEpochs + 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most 1048576 epochs")));
  EXPECT_TRUE(engine_->operator_relay_bans().empty());
  ASSERT_THAT(engine_->BanRelay("http://a", std::string(bounds::kMaxReasonBytes, 'r'),
                                kStartEpoch + bounds::kMaxPeriodEpochs),
              IsOk());

  for (size_t i = 1; i < bounds::kMaxOperatorRelayBans; ++i) {
    ASSERT_THAT(engine_->BanRelay(absl::StrCat("http://r", i), "x", std::nullopt), IsOk());
  }
  EXPECT_THAT(engine_->BanRelay("http://one-more", "x", std::nullopt),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr(absl::StrCat("(", bounds::kMaxOperatorRelayBans, ")"))));
  // A banned relay's ban can still be replaced.
  ASSERT_THAT(engine_->BanRelay("http://a", "shorter", kStartEpoch + 1), IsOk());
  EXPECT_EQ(engine_->operator_relay_bans().at("http://a").reason, "shorter");
  EXPECT_EQ(engine_->operator_relay_bans().size(), bounds::kMaxOperatorRelayBans);
}

TEST_F(EngineTest, UnbanRelayLiftsOnlyAnOperatorBan) {
  config_.relays = {RelayConfig{"http://a", false, {1, 2}}};
  Start();
  EXPECT_THAT(engine_->UnbanRelay("http://a"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("not banned by the operator")));
  EXPECT_THAT(engine_->UnbanRelay("a b"), StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_THAT(engine_->BanRelay("http://a", "x", std::nullopt), IsOk());
  engine_->RefreshPolicy();
  ASSERT_TRUE(Banned(2));
  ASSERT_THAT(engine_->UnbanRelay("HTTP://a:80/"), IsOk());
  engine_->RefreshPolicy();
  EXPECT_FALSE(Banned(2));
  EXPECT_TRUE(policy().banned_relays.empty());
  EXPECT_THAT(engine_->UnbanRelay("http://a"), StatusIs(absl::StatusCode::kNotFound));

  // Banned by the operator and for a member's failure: the failure kind is listed, and the
  // relay stays banned for it once the operator's ban is lifted.
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch), 1), IsOk());
  ASSERT_THAT(engine_->BanRelay("http://a", "x", std::nullopt), IsOk());
  engine_->RefreshPolicy();
  EXPECT_EQ(policy().banned_relays.at("http://a").kind, BanKind::kFailure);
  EXPECT_TRUE(policy().banned_relays.at("http://a").until_reset);
  EXPECT_EQ(BanOf(2).kind, BanKind::kOperator);
  ASSERT_THAT(engine_->UnbanRelay("http://a"), IsOk());
  engine_->RefreshPolicy();
  EXPECT_EQ(policy().banned_relays.at("http://a").kind, BanKind::kFailure);
  EXPECT_EQ(BanOf(2).kind, BanKind::kCollateral);
  EXPECT_THAT(engine_->UnbanRelay("http://a"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("banned for failures")));
}

TEST_F(EngineTest, UnbanOfAMemberOfABannedRelayNamesTheRelay) {
  config_.relays = {RelayConfig{"http://a", false, {1, 2}}};
  Start();
  ASSERT_THAT(engine_->BanRelay("http://a", "x", std::nullopt), IsOk());
  ASSERT_THAT(engine_->BanBuilder(1, "own ban", std::nullopt), IsOk());
  engine_->RefreshPolicy();
  EXPECT_THAT(engine_->UnbanBuilder(2),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("relay(s) http://a"), HasSubstr("unban the relay"))));
  // Its own ban lifts; the relay's stays.
  ASSERT_THAT(engine_->UnbanBuilder(1), IsOk());
  engine_->RefreshPolicy();
  ASSERT_TRUE(Banned(1));
  EXPECT_THAT(BanOf(1).reason, HasSubstr("relay http://a is banned"));
}

TEST_F(EngineTest, ConfiguredBlacklistedRelaysAreBannedUntilRemoved) {
  config_.critical_failed_builders = 1;
  config_.relays = {RelayConfig{"http://relay.bad:18550", false, {4}}};
  config_.blacklisted_relays = {"Relay.Bad:18550"};
  Start();
  ASSERT_TRUE(policy().banned_relays.contains("http://relay.bad:18550"));
  const Ban& relay_ban = policy().banned_relays.at("http://relay.bad:18550");
  EXPECT_EQ(relay_ban.kind, BanKind::kOperator);
  EXPECT_TRUE(relay_ban.until_reset);
  EXPECT_EQ(relay_ban.reason, "in the configured blacklist");
  ASSERT_TRUE(Banned(4));
  EXPECT_EQ(BanOf(4).kind, BanKind::kOperator);
  EXPECT_EQ(BanOf(4).reason, "relay http://relay.bad:18550 is banned: in the configured blacklist");
  Bid(5, "http://RELAY.bad:18550/", SlotOf(kStartEpoch));
  EXPECT_TRUE(Banned(5));
  EXPECT_EQ(policy().mode, Mode::kAllBuilders);
  EXPECT_THAT(engine_->UnbanRelay("relay.bad:18550"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("blacklisted_relays")));
  EXPECT_THAT(engine_->UnbanBuilder(4),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("http://relay.bad:18550")));

  // An operator ban on top outlives the configuration's.
  ASSERT_THAT(engine_->BanRelay("relay.bad:18550", "until the audit", std::nullopt), IsOk());
  Config without = config_;
  without.blacklisted_relays.clear();
  ASSERT_THAT(engine_->Reconfigure(without), IsOk());
  engine_->RefreshPolicy();
  EXPECT_EQ(policy().banned_relays.at("http://relay.bad:18550").reason,
            "operator: until the audit");
  ASSERT_THAT(engine_->UnbanRelay("relay.bad:18550"), IsOk());
  engine_->RefreshPolicy();
  EXPECT_TRUE(policy().banned_relays.empty());
  EXPECT_FALSE(Banned(4));
}

TEST_F(EngineTest, ResetKeepsOperatorRelayBans) {
  config_.relays = {RelayConfig{"http://a", false, {1, 2}}};
  Start();
  ASSERT_THAT(engine_->BanRelay("http://a", "x", std::nullopt), IsOk());
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch), 1), IsOk());
  engine_->Reset();
  engine_->RefreshPolicy();
  EXPECT_TRUE(policy().banned_relays.contains("http://a"));
  EXPECT_EQ(policy().banned_relays.at("http://a").kind, BanKind::kOperator);
  EXPECT_TRUE(Banned(1));
  EXPECT_EQ(BanOf(1).kind, BanKind::kOperator);
  EXPECT_TRUE(engine_->builders().empty());
}

// --- Pre-Gloas presets ---------------------------------------------------------------------

TEST_F(EngineTest, WindowedPresetRecoversWhereTheLatchedRuleDoesNot) {
  config_ = PreGloasConfig();
  config_.missed_slots = MissedSlotRulesForPreset("prysm").value();
  Start();
  const Slot start = SlotOf(kStartEpoch);
  for (Slot s = start; s <= start + 4; ++s) ReportNoBlock(s);
  engine_->Advance(start + 6);  // slots start..start+4 missed: 5 > 4 in the last 32
  EXPECT_EQ(policy().mode, Mode::kSelfBuild);
  for (Slot s = start + 5; s < start + 40; ++s) {
    ASSERT_THAT(Observe(BlocksSeen{{Root(static_cast<uint32_t>(s))}}, s), IsOk());
    engine_->Advance(s + 1);
  }
  EXPECT_EQ(policy().mode, Mode::kAllBuilders);
  EXPECT_FALSE(policy().missed_slots.latched);
}

// --- Policy versions, export and import ----------------------------------------------------

TEST_F(EngineTest, VersionIncreasesOnlyWhenDecisionsChange) {
  Start();
  const uint64_t first = policy().version;
  EXPECT_EQ(first, 1u);
  EXPECT_FALSE(engine_->Advance(SlotOf(kStartEpoch, 5)));
  ASSERT_THAT(Fail(5, SlotOf(kStartEpoch, 5), 1), IsOk());
  EXPECT_EQ(policy().version, first + 1);
  EXPECT_THAT(policy().reason, HasSubstr("banned builders 5"));
  EXPECT_EQ(policy().computed_at_slot, SlotOf(kStartEpoch, 5));
  EXPECT_FALSE(engine_->RefreshPolicy());
  EXPECT_TRUE(engine_->Advance(SlotOf(kStartEpoch + 1)));
  EXPECT_EQ(policy().version, first + 2);
}

TEST_F(EngineTest, ExportImportGivesTheSamePolicyAndBehaviour) {
  config_.relays = {RelayConfig{"http://a", false, {1, 2}}};
  Start();
  Bid(3, "http://b", SlotOf(kStartEpoch), Key('3'));
  Bid(4, "", SlotOf(kStartEpoch), Key('4'));
  ASSERT_THAT(Fail(1, SlotOf(kStartEpoch), 1), IsOk());
  ASSERT_THAT(Fail(3, SlotOf(kStartEpoch, 1), 2), IsOk());
  ASSERT_THAT(engine_->BanBuilder(9, "x", std::nullopt), IsOk());
  ASSERT_THAT(engine_->BanRelay("http://b", "stolen keys", std::nullopt), IsOk());
  ASSERT_THAT(engine_->BanRelay("http://c", "for a while", kStartEpoch + 1), IsOk());
  engine_->RefreshPolicy();
  ASSERT_TRUE(policy().banned_relays.contains("http://b"));

  absl::StatusOr<Engine> copy = Engine::Import(config_, engine_->Export());
  ASSERT_THAT(copy, IsOk());
  EXPECT_EQ(copy->policy().version, policy().version);
  EXPECT_TRUE(copy->policy().SameDecisions(policy()));
  EXPECT_FALSE(copy->RefreshPolicy());
  // The imported engine remembers sequence numbers and counters.
  Observation replay{SlotOf(kStartEpoch, 2), "n1", 1, PayloadMissing{4, Root(3), 0.9}};
  EXPECT_EQ(copy->Observe(replay)->outcome, ObserveOutcome::kDuplicate);
  Observation again{SlotOf(kStartEpoch, 2), "n1", 100, PayloadMissing{3, Root(4), 0.9}};
  ASSERT_THAT(copy->Observe(again), IsOk());
  copy->RefreshPolicy();
  EXPECT_TRUE(copy->policy().banned_builders.at(3).until_reset);
  EXPECT_EQ(copy->operator_relay_bans().size(), 2u);
  EXPECT_THAT(copy->UnbanRelay("http://b"), IsOk());
  // And the keys: builder 4's was seen before any failure of it.
  EXPECT_EQ(copy->builder_keys(), engine_->builder_keys());
  Observation failure{SlotOf(kStartEpoch, 2), "n1", 101, PayloadMissing{4, Root(5), 0.9}};
  ASSERT_THAT(copy->Observe(failure), IsOk());
  copy->RefreshPolicy();
  ASSERT_TRUE(copy->policy().banned_builders.contains(4));
  Observation newcomer{SlotOf(kStartEpoch, 2), "n1", 102, BidSeen{4, "", Key('n')}};
  ASSERT_THAT(copy->Observe(newcomer), IsOk());
  copy->RefreshPolicy();
  EXPECT_FALSE(copy->policy().banned_builders.contains(4));
}

// A store written under an older normalization: spellings that are now one relay merge, the
// stricter record kept; a spelling now refused is dropped. Nothing stops the restore.
TEST_F(EngineTest, ImportNormalizesTheStoredRelaysAgain) {
  Start();
  EngineState state = engine_->Export();
  RelayRecord banned;
  banned.failures.ban_until_reset = true;
  banned.failures.last_failure = "withheld";
  banned.learned[7] = 1;
  state.relays["HTTP://Relay.Example"] = banned;
  RelayRecord learned;
  learned.learned[8] = 1;
  state.relays["http://relay.example."] = learned;
  state.relays["http://127.1"] = banned;
  state.operator_relay_bans["http://[0::1]"] = OperatorBan{"until epoch 9", Epoch{9}};
  state.operator_relay_bans["http://[0:0:0:0:0:0:0:1]"] =
      OperatorBan{"until unbanned", std::nullopt};
  state.relay_trust_overrides["http://b/x/%7e"] = true;
  state.relay_trust_overrides["http://b/x/~"] = false;
  absl::StatusOr<Engine> imported = Engine::Import(config_, state);
  ASSERT_THAT(imported, IsOk());
  const EngineState after = imported->Export();
  ASSERT_TRUE(after.relays.contains("http://relay.example"));
  const RelayRecord& merged = after.relays.at("http://relay.example");
  EXPECT_TRUE(merged.failures.ban_until_reset);
  EXPECT_THAT(merged.learned, ::testing::SizeIs(2));
  EXPECT_FALSE(after.relays.contains("http://127.1"));
  ASSERT_TRUE(after.operator_relay_bans.contains("http://[::1]"));
  EXPECT_FALSE(after.operator_relay_bans.at("http://[::1]").until_epoch.has_value());
  EXPECT_THAT(after.operator_relay_bans, ::testing::SizeIs(1));
  ASSERT_TRUE(after.relay_trust_overrides.contains("http://b/x/~"));
  EXPECT_FALSE(after.relay_trust_overrides.at("http://b/x/~"));
}

TEST_F(EngineTest, ImportRefusesInconsistentState) {
  Start();
  EngineState state = engine_->Export();
  state.builder_keys[5] = BuilderKey{"short", 0};
  EXPECT_THAT(Engine::Import(config_, state),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("public key of 5 bytes")));
}

TEST_F(EngineTest, InvalidReconfigurationLeavesConfigUnchanged) {
  Start();
  Config bad = config_;
  bad.critical_failures = 0;
  EXPECT_THAT(engine_->Reconfigure(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("critical_failures")));
  EXPECT_EQ(engine_->config().critical_failures, 2u);
  Config good = config_;
  good.blacklisted_builders = {4};
  ASSERT_THAT(engine_->Reconfigure(good), IsOk());
  EXPECT_TRUE(engine_->RefreshPolicy());
  EXPECT_TRUE(Banned(4));
}

}  // namespace
}  // namespace breaker::core
