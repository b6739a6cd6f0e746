#include "core/missed_slots.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/chain_time.h"
#include "core/config.h"
#include "core/policy.h"
#include "gtest/gtest.h"

namespace breaker::core {
namespace {

const ChainSpec kSpec;  // Mainnet: 32 slots per epoch.

MissedSlotRules Preset(const std::string& name) {
  absl::StatusOr<MissedSlotRules> rules = MissedSlotRulesForPreset(name);
  EXPECT_TRUE(rules.ok()) << name << ": " << rules.status();
  return rules.ok() ? *rules : MissedSlotRules{};
}

// Only the windowed rule over `window` slots, tripping above `max_missed`.
MissedSlotRules WindowOnly(uint64_t max_missed, uint64_t window) {
  MissedSlotRules rules;
  rules.preset = "custom";
  rules.latched_rule = false;
  rules.max_allowed_missing_slots = 0;
  rules.max_missed_slots_in_window = max_missed;
  rules.window_slots = window;
  return rules;
}

// Reports the slots of `pattern` from `first` on: '.' is a present slot (a node has a block),
// 'x' a missed one (a node reported none), '?' an unknown one (no node reported).
// Returns the first slot at which the last slot of the pattern is judged.
Slot Replay(MissedSlotTracker& tracker, Slot first, const std::string& pattern) {
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '?') tracker.RecordBlocks(first + i, pattern[i] == '.');
  }
  return first + pattern.size() + 1;
}

// Reports slots [first, end) without a block.
void ReportEmpty(MissedSlotTracker& tracker, Slot first, Slot end) {
  for (Slot slot = first; slot < end; ++slot) tracker.RecordBlocks(slot, false);
}

void ExpectSameState(const MissedSlotTracker::State& a, const MissedSlotTracker::State& b) {
  EXPECT_EQ(a.start_slot, b.start_slot);
  EXPECT_EQ(a.present_slots, b.present_slots);
  EXPECT_EQ(a.observed_slots, b.observed_slots);
  EXPECT_EQ(a.has_finalized, b.has_finalized);
  EXPECT_EQ(a.finalized_epoch, b.finalized_epoch);
  EXPECT_EQ(a.latched, b.latched);
  EXPECT_EQ(a.latched_rule, b.latched_rule);
}

TEST(MissedSlotTracker, SixthConsecutiveMissedSlotTripsTheLatchedRuleAndOnlyResetLiftsIt) {
  const MissedSlotRules rules = Preset("mevboost");
  MissedSlotTracker tracker(100);
  tracker.RecordBlocks(100, true);

  for (Slot now = 100; now <= 107; ++now) {
    // The nodes report each slot as it passes, without a block from slot 101 on.
    if (now > 100) tracker.RecordBlocks(now, false);
    const MissedSlotState state = tracker.Evaluate(now, rules, kSpec);
    EXPECT_TRUE(state.active);
    EXPECT_FALSE(state.tripped) << "now " << now;
    EXPECT_EQ(state.consecutive_missed, now >= 103 ? now - 102 : 0) << "now " << now;
  }
  MissedSlotState state = tracker.Evaluate(108, rules, kSpec);
  EXPECT_TRUE(state.tripped);
  EXPECT_TRUE(state.latched);
  EXPECT_EQ(state.consecutive_missed, 6u);
  EXPECT_EQ(state.rule, "6 missed slots since the last present slot > 5 (latched until reset)");

  // Neither new blocks nor a late report for a missed slot lift it.
  tracker.RecordBlocks(103, true);
  tracker.RecordBlocks(107, true);
  tracker.RecordBlocks(108, true);
  for (Slot now : {110, 200, 5000}) {
    state = tracker.Evaluate(now, rules, kSpec);
    EXPECT_TRUE(state.tripped) << "now " << now;
    EXPECT_TRUE(state.latched) << "now " << now;
    EXPECT_EQ(state.rule, "6 missed slots since the last present slot > 5 (latched until reset)");
  }
  EXPECT_EQ(tracker.Evaluate(110, rules, kSpec).consecutive_missed, 0u);

  tracker.Reset(5000);
  state = tracker.Evaluate(5000, rules, kSpec);
  EXPECT_TRUE(state.active);
  EXPECT_FALSE(state.tripped);
  EXPECT_FALSE(state.latched);
  EXPECT_EQ(state.rule, "");
  EXPECT_EQ(state.consecutive_missed, 0u);
  EXPECT_EQ(state.missed_in_window, 0u);
  // Tracking starts afresh at the reset: slot 5000 is the first that can be missed, even if
  // the nodes report earlier slots without a block.
  ReportEmpty(tracker, 4990, 5006);
  EXPECT_EQ(tracker.Evaluate(5002, rules, kSpec).consecutive_missed, 1u);
  EXPECT_FALSE(tracker.Evaluate(5006, rules, kSpec).tripped);
  EXPECT_TRUE(tracker.Evaluate(5007, rules, kSpec).latched);
}

TEST(MissedSlotTracker, NonCanonicalBlockKeepsASlotPresent) {
  // A block at slot 15 that was reorged out is still reported present: one report anywhere
  // restarts the count of missed slots.
  const MissedSlotRules rules = Preset("mevboost");
  MissedSlotTracker with_block(10);
  MissedSlotTracker without_block(10);
  const Slot end = Replay(with_block, 10, "xxxxx.xxxxx");
  Replay(without_block, 10, "xxxxxxxxxxx");

  for (Slot now = 10; now <= end; ++now) {
    EXPECT_FALSE(with_block.Evaluate(now, rules, kSpec).tripped) << "now " << now;
  }
  EXPECT_EQ(with_block.Evaluate(end, rules, kSpec).consecutive_missed, 5u);
  EXPECT_EQ(with_block.Evaluate(end, rules, kSpec).missed_in_window, 10u);

  EXPECT_FALSE(without_block.Evaluate(16, rules, kSpec).tripped);
  EXPECT_TRUE(without_block.Evaluate(17, rules, kSpec).latched);
}

TEST(MissedSlotTracker, SlotIsJudgedOnlyFromTwoSlotsLater) {
  const MissedSlotRules rules = Preset("mevboost");
  MissedSlotTracker tracker(100);
  tracker.RecordBlocks(100, false);
  EXPECT_EQ(tracker.Evaluate(100, rules, kSpec).consecutive_missed, 0u);
  // Slot 100 ended without a block, but one may still arrive during slot 101.
  EXPECT_EQ(tracker.Evaluate(101, rules, kSpec).consecutive_missed, 0u);
  EXPECT_EQ(tracker.Evaluate(101, rules, kSpec).missed_in_window, 0u);
  MissedSlotState state = tracker.Evaluate(102, rules, kSpec);
  EXPECT_EQ(state.consecutive_missed, 1u);
  EXPECT_EQ(state.missed_in_window, 1u);

  // A block reported at any time still counts.
  tracker.RecordBlocks(100, true);
  state = tracker.Evaluate(102, rules, kSpec);
  EXPECT_EQ(state.consecutive_missed, 0u);
  EXPECT_EQ(state.missed_in_window, 0u);

  // No slot is judged before slot 2 of the chain.
  MissedSlotTracker genesis(0);
  ReportEmpty(genesis, 0, 2);
  EXPECT_EQ(genesis.Evaluate(0, rules, kSpec).consecutive_missed, 0u);
  EXPECT_EQ(genesis.Evaluate(1, rules, kSpec).consecutive_missed, 0u);
  EXPECT_EQ(genesis.Evaluate(2, rules, kSpec).consecutive_missed, 1u);
}

TEST(MissedSlotTracker, BlockAfterTheLatestJudgedSlotEndsTheMissedRun) {
  // Slots 101 and 102 are missed, but a block for slot 103 arrived: the run is over even
  // though slot 103 is not judged yet.
  const MissedSlotRules rules = Preset("prysm");
  MissedSlotTracker tracker(100);
  Replay(tracker, 100, ".xx.");
  const MissedSlotState state = tracker.Evaluate(104, rules, kSpec);
  EXPECT_EQ(state.consecutive_missed, 0u);
  EXPECT_EQ(state.missed_in_window, 2u);
}

TEST(MissedSlotTracker, LateReportAmendsTheVerdictOfAWindowedRule) {
  const MissedSlotRules rules = Preset("prysm");
  MissedSlotTracker tracker(100);
  const Slot now = Replay(tracker, 100, ".xxxx");
  MissedSlotState state = tracker.Evaluate(now, rules, kSpec);
  EXPECT_TRUE(state.tripped);
  EXPECT_FALSE(state.latched);
  EXPECT_EQ(state.rule, "4 consecutive missed slots > 3");

  tracker.RecordBlocks(102, true);
  state = tracker.Evaluate(now, rules, kSpec);
  EXPECT_FALSE(state.tripped);
  EXPECT_EQ(state.rule, "");
  EXPECT_EQ(state.consecutive_missed, 2u);
  EXPECT_EQ(state.missed_in_window, 3u);
}

TEST(MissedSlotTracker, WindowedRulesRecoverByThemselves) {
  const MissedSlotRules rules = Preset("prysm");

  MissedSlotTracker consecutive(100);
  Slot now = Replay(consecutive, 100, ".xxxx");
  EXPECT_TRUE(consecutive.Evaluate(now, rules, kSpec).tripped);
  consecutive.RecordBlocks(105, true);
  EXPECT_FALSE(consecutive.Evaluate(now + 1, rules, kSpec).tripped);

  // Six missed slots among 101..107, then blocks: tripped until slot 101 leaves the window of
  // the last 32 judged slots, that is while the latest judged slot is 132 or less.
  MissedSlotTracker window(100);
  now = Replay(window, 100, ".xxx.xxx");
  MissedSlotState state = window.Evaluate(now, rules, kSpec);
  EXPECT_EQ(state.consecutive_missed, 3u);
  EXPECT_EQ(state.missed_in_window, 6u);
  EXPECT_EQ(state.rule, "6 missed slots in the last 32 > 5");
  for (Slot slot = 108; slot <= 140; ++slot) window.RecordBlocks(slot, true);
  EXPECT_TRUE(window.Evaluate(134, rules, kSpec).tripped);
  state = window.Evaluate(135, rules, kSpec);
  EXPECT_FALSE(state.tripped);
  EXPECT_EQ(state.missed_in_window, 5u);
  EXPECT_EQ(window.Evaluate(142, rules, kSpec).missed_in_window, 0u);
}

TEST(MissedSlotTracker, PrysmAndTekuTripOnFourConsecutiveOrSixInTheLast32) {
  for (const std::string preset : {"prysm", "teku"}) {
    SCOPED_TRACE(preset);
    const MissedSlotRules rules = Preset(preset);
    auto evaluate = [&](const std::string& pattern) {
      MissedSlotTracker tracker(100);
      const Slot now = Replay(tracker, 100, pattern);
      tracker.RecordFinalized(0);
      return tracker.Evaluate(now, rules, kSpec);
    };
    EXPECT_TRUE(evaluate(".").active);
    EXPECT_FALSE(evaluate(".xxx").tripped);
    EXPECT_EQ(evaluate(".xxxx").rule, "4 consecutive missed slots > 3");
    EXPECT_FALSE(evaluate(".xxxx").latched);
    EXPECT_FALSE(evaluate("xxx.xx").tripped);
    EXPECT_EQ(evaluate("xxx.xxx").rule, "6 missed slots in the last 32 > 5");
    // Finality is not among these clients' rules (epoch 7 here, finalized epoch 0 reported).
    EXPECT_EQ(evaluate(std::string(4 * 32, '.')).epochs_since_finalization, 7u);
    EXPECT_FALSE(evaluate(std::string(4 * 32, '.')).tripped);
  }
}

TEST(MissedSlotTracker, LighthouseTripsOnFourConsecutiveNineInTheLast32OrFourEpochsUnfinalized) {
  const MissedSlotRules rules = Preset("lighthouse");
  auto evaluate = [&](const std::string& pattern) {
    MissedSlotTracker tracker(100);
    const Slot now = Replay(tracker, 100, pattern);
    return tracker.Evaluate(now, rules, kSpec);
  };
  EXPECT_TRUE(evaluate(".").active);
  EXPECT_FALSE(evaluate(".xxx").tripped);
  EXPECT_EQ(evaluate(".xxxx").rule, "4 consecutive missed slots > 3");
  EXPECT_FALSE(evaluate("xxx.xxx.xx").tripped);
  EXPECT_EQ(evaluate("xxx.xxx.xxx").rule, "9 missed slots in the last 32 > 8");
  EXPECT_FALSE(evaluate("xxx.xxx.xxx").latched);

  // A fresh tracker judges no slot, so only finality speaks.
  MissedSlotTracker tracker(FirstSlotOf(13, kSpec));
  tracker.RecordFinalized(10);
  EXPECT_FALSE(tracker.Evaluate(FirstSlotOf(13, kSpec), rules, kSpec).tripped);
  tracker.Reset(FirstSlotOf(14, kSpec));
  const MissedSlotState state = tracker.Evaluate(FirstSlotOf(14, kSpec), rules, kSpec);
  EXPECT_TRUE(state.tripped);
  EXPECT_EQ(state.rule, "4 epochs since finalization > 3");
}

TEST(MissedSlotTracker, MevboostLatchesOnlyOnMissedSlotsSinceTheLastPresentSlot) {
  const MissedSlotRules rules = Preset("mevboost");
  auto evaluate = [&](const std::string& pattern) {
    MissedSlotTracker tracker(100);
    const Slot now = Replay(tracker, 100, pattern);
    tracker.RecordFinalized(0);
    return tracker.Evaluate(now, rules, kSpec);
  };
  EXPECT_FALSE(evaluate(".xxxxx").tripped);
  EXPECT_TRUE(evaluate(".xxxxxx").latched);
  // Neither many scattered misses nor a stalled finality trip it.
  EXPECT_EQ(evaluate("xxx.xxx.xxx.xxx.xxx").missed_in_window, 15u);
  EXPECT_FALSE(evaluate("xxx.xxx.xxx.xxx.xxx").tripped);
  EXPECT_FALSE(evaluate(std::string(10 * 32, '.')).tripped);
}

TEST(MissedSlotTracker, OffPresetNeverTrips) {
  const MissedSlotRules rules = Preset("off");
  MissedSlotTracker tracker(100);
  tracker.RecordFinalized(0);
  ReportEmpty(tracker, 900, 1000);
  const MissedSlotState state = tracker.Evaluate(1000, rules, kSpec);
  EXPECT_FALSE(state.active);
  EXPECT_FALSE(state.tripped);
  EXPECT_FALSE(state.latched);
  EXPECT_EQ(state.rule, "");
  // The counts are still filled, for the operator's eyes.
  EXPECT_EQ(state.consecutive_missed, 99u);
  EXPECT_EQ(state.missed_in_window, 32u);
  EXPECT_EQ(state.epochs_since_finalization, 31u);
}

TEST(MissedSlotTracker, FinalizationRuleCountsFromTheLatestReportedEpoch) {
  MissedSlotRules rules;
  rules.preset = "custom";
  rules.latched_rule = false;
  rules.max_epochs_since_finalization = 3;
  MissedSlotTracker tracker(FirstSlotOf(20, kSpec));

  // No report yet: no evidence of a finality stall.
  EXPECT_EQ(tracker.Evaluate(FirstSlotOf(20, kSpec), rules, kSpec).epochs_since_finalization, 0u);
  EXPECT_FALSE(tracker.Evaluate(FirstSlotOf(20, kSpec), rules, kSpec).tripped);

  tracker.RecordFinalized(16);
  tracker.RecordFinalized(12);  // Older: ignored.
  MissedSlotState state = tracker.Evaluate(FirstSlotOf(20, kSpec), rules, kSpec);
  EXPECT_EQ(state.epochs_since_finalization, 4u);
  EXPECT_TRUE(state.tripped);
  EXPECT_FALSE(state.latched);
  EXPECT_EQ(state.rule, "4 epochs since finalization > 3");
  EXPECT_FALSE(tracker.Evaluate(FirstSlotOf(20, kSpec) - 1, rules, kSpec).tripped);

  tracker.RecordFinalized(17);
  state = tracker.Evaluate(FirstSlotOf(20, kSpec) + 31, rules, kSpec);
  EXPECT_EQ(state.epochs_since_finalization, 3u);
  EXPECT_FALSE(state.tripped);

  // A reset keeps finality; a finalized epoch ahead of the current one saturates at 0.
  tracker.Reset(FirstSlotOf(25, kSpec));
  EXPECT_EQ(tracker.Export().finalized_epoch, 17u);
  EXPECT_TRUE(tracker.Evaluate(FirstSlotOf(25, kSpec), rules, kSpec).tripped);
  tracker.RecordFinalized(30);
  EXPECT_EQ(tracker.Evaluate(FirstSlotOf(25, kSpec), rules, kSpec).epochs_since_finalization, 0u);
}

TEST(MissedSlotTracker, SlotsBeforeTheStartAreNotMissed) {
  // The nodes report slots 990..1005 without a block; tracking starts at slot 1000.
  MissedSlotTracker tracker(1000);
  ReportEmpty(tracker, 990, 1006);
  const MissedSlotRules rules = Preset("mevboost");
  EXPECT_EQ(tracker.Evaluate(1001, rules, kSpec).consecutive_missed, 0u);
  MissedSlotState state = tracker.Evaluate(1002, rules, kSpec);
  EXPECT_EQ(state.consecutive_missed, 1u);
  EXPECT_EQ(state.missed_in_window, 1u);
  EXPECT_FALSE(tracker.Evaluate(1006, rules, kSpec).tripped);
  EXPECT_TRUE(tracker.Evaluate(1007, rules, kSpec).tripped);

  MissedSlotTracker windowed(1000);
  ReportEmpty(windowed, 990, 1002);
  EXPECT_FALSE(windowed.Evaluate(1002, WindowOnly(1, 32), kSpec).tripped);
  state = windowed.Evaluate(1003, WindowOnly(1, 32), kSpec);
  EXPECT_EQ(state.missed_in_window, 2u);
  EXPECT_EQ(state.rule, "2 missed slots in the last 32 > 1");
}

TEST(MissedSlotTracker, RingWrapsAroundWithoutStaleBits) {
  const MissedSlotRules rules = WindowOnly(1, 64);
  MissedSlotTracker tracker(0);
  for (Slot slot = 0; slot < 300; ++slot) tracker.RecordBlocks(slot, true);
  EXPECT_EQ(tracker.Evaluate(301, rules, kSpec).missed_in_window, 0u);

  // A jump shorter than the ring: slots 337..399 reuse the bits of present slots 81..143, and
  // are reported late without a block.
  tracker.RecordBlocks(400, true);
  ReportEmpty(tracker, 337, 400);
  MissedSlotState state = tracker.Evaluate(402, rules, kSpec);
  EXPECT_EQ(state.missed_in_window, 63u);
  EXPECT_EQ(state.consecutive_missed, 0u);
  EXPECT_EQ(tracker.Export().present_slots.front(), 147u);
  EXPECT_EQ(tracker.Export().observed_slots.front(), 147u);

  // A jump longer than the ring, by Evaluate alone: slots 593..655 reuse the bits of the
  // slots 337..399 reported without a block, yet no node reported them.
  state = tracker.Evaluate(700, rules, kSpec);
  EXPECT_EQ(state.missed_in_window, 0u);
  EXPECT_EQ(state.consecutive_missed, 0u);
  EXPECT_TRUE(tracker.Export().present_slots.empty());
  EXPECT_TRUE(tracker.Export().observed_slots.empty());
  ReportEmpty(tracker, 600, 699);
  state = tracker.Evaluate(700, rules, kSpec);
  EXPECT_EQ(state.missed_in_window, 64u);
  EXPECT_EQ(state.consecutive_missed, 99u);
  tracker.RecordBlocks(690, true);
  state = tracker.Evaluate(700, rules, kSpec);
  EXPECT_EQ(state.missed_in_window, 63u);
  EXPECT_EQ(state.consecutive_missed, 8u);

  // A run longer than the ring counts the slots the ring still holds: at slot 1000 it holds
  // 745..1000, of which 745..998 are judged.
  MissedSlotTracker long_run(0);
  ReportEmpty(long_run, 0, 1000);
  EXPECT_EQ(long_run.Evaluate(1000, rules, kSpec).consecutive_missed,
            MissedSlotTracker::kRingSlots - 2);
}

TEST(MissedSlotTracker, AgreesWithAPlainSetOverManyLapsOfTheRing) {
  // Each slot, a block report half the time and a report without a block three times in four,
  // half of them on time (up to 2 slots late) and the others up to 40 slots late: some slots
  // end up present, some missed, some unknown.
  const MissedSlotRules rules = WindowOnly(10, 64);
  MissedSlotTracker tracker(50);
  std::set<Slot> present;
  std::set<Slot> observed;
  uint64_t random = 12345;
  auto next = [&random] {
    random = random * 6364136223846793005u + 1442695040888963407u;
    return random >> 33;
  };
  auto late = [&next] { return next() % 2 == 0 ? next() % 3 : next() % 41; };
  auto missed = [&](Slot s) { return observed.count(s) != 0 && present.count(s) == 0; };
  uint64_t longest_run = 0;
  uint64_t most_in_window = 0;
  for (Slot now = 50; now < 2000; ++now) {
    if (next() % 2 != 0) {
      const Slot slot = now - late();
      tracker.RecordBlocks(slot, true);
      present.insert(slot);
      observed.insert(slot);
    }
    if (next() % 4 != 0) {
      const Slot slot = now - late();
      tracker.RecordBlocks(slot, false);
      observed.insert(slot);
    }
    const MissedSlotState state = tracker.Evaluate(now, rules, kSpec);
    const Slot judged = now - 2;
    // A block after the latest judged slot ends the run too; the run reaches back no further
    // than the ring, whose oldest slot is now - 255.
    uint64_t consecutive = 0;
    if (present.empty() || *present.rbegin() <= judged) {
      for (Slot s = judged; s >= 50 && s + MissedSlotTracker::kRingSlots > now && missed(s); --s) {
        ++consecutive;
      }
    }
    uint64_t in_window = 0;
    for (Slot s = judged; s >= 50 && s + 64 > judged; --s) in_window += missed(s);
    ASSERT_EQ(state.consecutive_missed, consecutive) << "now " << now;
    ASSERT_EQ(state.missed_in_window, in_window) << "now " << now;
    longest_run = std::max(longest_run, consecutive);
    most_in_window = std::max(most_in_window, in_window);
  }
  // Guards the comparison against a run where nothing is ever missed.
  EXPECT_GE(longest_run, 3u);
  EXPECT_GE(most_in_window, 10u);
}

TEST(MissedSlotTracker, ExportImportRoundTripEvaluatesTheSame) {
  // One node reports every slot up to 489 without a block, others have blocks for most slots
  // (none for the eight after each multiple of 7); slots 490, 491 and 498 are unknown.
  std::set<Slot> with_block = {499};
  for (Slot slot = 100; slot < 500; slot += (slot % 7 == 0 ? 9 : 1)) with_block.insert(slot);
  MissedSlotTracker original(100);
  for (Slot now = 100; now < 510; ++now) {
    if (now < 490) original.RecordBlocks(now, false);
    if (with_block.count(now) != 0) original.RecordBlocks(now, true);
    original.Evaluate(now, Preset("mevboost"), kSpec);
  }
  original.RecordFinalized(12);
  const MissedSlotState before = original.Evaluate(510, Preset("mevboost"), kSpec);
  ASSERT_TRUE(before.latched);

  const MissedSlotTracker::State exported = original.Export();
  EXPECT_EQ(exported.start_slot, 100u);
  EXPECT_TRUE(exported.latched);
  for (const std::vector<Slot>* slots : {&exported.present_slots, &exported.observed_slots}) {
    ASSERT_FALSE(slots->empty());
    EXPECT_LE(slots->back() - slots->front(), MissedSlotTracker::kRingSlots - 1);
    for (size_t i = 1; i < slots->size(); ++i) EXPECT_LT((*slots)[i - 1], (*slots)[i]);
  }
  EXPECT_EQ(exported.present_slots.back(), 499u);
  EXPECT_EQ(exported.observed_slots.back(), 499u);
  EXPECT_EQ(std::count(exported.observed_slots.begin(), exported.observed_slots.end(), 489), 1);
  for (Slot unknown : {490, 491, 498}) {
    EXPECT_EQ(std::count(exported.observed_slots.begin(), exported.observed_slots.end(), unknown),
              0)
        << unknown;
  }

  MissedSlotTracker imported = MissedSlotTracker::Import(exported);
  ExpectSameState(imported.Export(), exported);
  for (const std::string preset : {"mevboost", "prysm", "lighthouse", "teku", "off"}) {
    for (Slot now : {510, 520, 560, 600, 900}) {
      EXPECT_EQ(imported.Evaluate(now, Preset(preset), kSpec),
                original.Evaluate(now, Preset(preset), kSpec))
          << preset << " at " << now;
    }
  }

  // A tracker that never saw a block nor finality, after a reset.
  MissedSlotTracker fresh(7);
  fresh.RecordBlocks(9, true);
  fresh.RecordBlocks(10, false);
  fresh.Reset(20);
  const MissedSlotTracker::State fresh_state = fresh.Export();
  EXPECT_TRUE(fresh_state.present_slots.empty());
  EXPECT_TRUE(fresh_state.observed_slots.empty());
  EXPECT_FALSE(fresh_state.latched);
  MissedSlotTracker fresh_copy = MissedSlotTracker::Import(fresh_state);
  ExpectSameState(fresh_copy.Export(), fresh_state);
  EXPECT_EQ(fresh_copy.Evaluate(30, Preset("prysm"), kSpec),
            fresh.Evaluate(30, Preset("prysm"), kSpec));
}

TEST(MissedSlotTracker, NoReportIsNoEvidence) {
  // A breakerd without nodes, or whose nodes are all offline, hears nothing: no slot is missed
  // and no rule trips, however long it runs.
  for (const std::string preset : {"mevboost", "prysm", "lighthouse", "teku"}) {
    SCOPED_TRACE(preset);
    const MissedSlotRules rules = Preset(preset);
    MissedSlotTracker tracker(100);
    for (Slot now = 100; now < 200; ++now) {
      const MissedSlotState state = tracker.Evaluate(now, rules, kSpec);
      EXPECT_TRUE(state.active);
      EXPECT_FALSE(state.tripped) << "now " << now;
      EXPECT_FALSE(state.latched) << "now " << now;
      EXPECT_EQ(state.rule, "");
      EXPECT_EQ(state.consecutive_missed, 0u) << "now " << now;
      EXPECT_EQ(state.missed_in_window, 0u) << "now " << now;
    }
    EXPECT_TRUE(tracker.Export().observed_slots.empty());
  }
}

TEST(MissedSlotTracker, UnknownSlotBreaksARun) {
  MissedSlotTracker tracker(100);
  Slot now = Replay(tracker, 100, ".xx?x");
  MissedSlotState state = tracker.Evaluate(now, Preset("prysm"), kSpec);
  EXPECT_EQ(state.consecutive_missed, 1u);
  EXPECT_EQ(state.missed_in_window, 3u);
  EXPECT_FALSE(state.tripped);

  // The latest judged slot unknown: no run at all.
  EXPECT_EQ(tracker.Evaluate(now + 1, Preset("prysm"), kSpec).consecutive_missed, 0u);

  // Six missed slots around an unknown one do not latch the seed rule.
  MissedSlotTracker seed(100);
  now = Replay(seed, 100, ".xxx?xxx");
  state = seed.Evaluate(now, Preset("mevboost"), kSpec);
  EXPECT_EQ(state.consecutive_missed, 3u);
  EXPECT_EQ(state.missed_in_window, 6u);
  EXPECT_FALSE(state.tripped);

  // A late report turns an unknown slot missed, and the run joins up.
  seed.RecordBlocks(104, false);
  state = seed.Evaluate(now, Preset("mevboost"), kSpec);
  EXPECT_EQ(state.consecutive_missed, 7u);
  EXPECT_TRUE(state.latched);
}

TEST(MissedSlotTracker, EmptyReportFromOneNodeAndBlockFromAnotherIsPresent) {
  // In either order: slot 101 empty first, then a block; slot 102 a block first, then empty.
  MissedSlotTracker tracker(100);
  tracker.RecordBlocks(100, false);
  tracker.RecordBlocks(101, false);
  tracker.RecordBlocks(101, true);
  tracker.RecordBlocks(102, true);
  tracker.RecordBlocks(102, false);
  MissedSlotState state = tracker.Evaluate(103, Preset("prysm"), kSpec);
  EXPECT_EQ(state.consecutive_missed, 0u);
  EXPECT_EQ(state.missed_in_window, 1u);  // Slot 100 only.
  state = tracker.Evaluate(104, Preset("prysm"), kSpec);
  EXPECT_EQ(state.consecutive_missed, 0u);
  EXPECT_EQ(state.missed_in_window, 1u);

  const MissedSlotTracker::State exported = tracker.Export();
  EXPECT_EQ(exported.present_slots, (std::vector<Slot>{101, 102}));
  EXPECT_EQ(exported.observed_slots, (std::vector<Slot>{100, 101, 102}));
}

TEST(MissedSlotTracker, LatchOutlivesAChangeOfRules) {
  MissedSlotTracker tracker(100);
  const Slot now = Replay(tracker, 100, ".xxxxxx");
  ASSERT_TRUE(tracker.Evaluate(now, Preset("mevboost"), kSpec).latched);
  const MissedSlotState state = tracker.Evaluate(now, Preset("off"), kSpec);
  EXPECT_TRUE(state.active);
  EXPECT_TRUE(state.tripped);
  EXPECT_TRUE(state.latched);
  EXPECT_EQ(state.rule, "6 missed slots since the last present slot > 5 (latched until reset)");
}

}  // namespace
}  // namespace breaker::core
