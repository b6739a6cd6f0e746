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
// Returns the slot after the pattern: the first proposal slot whose consecutive and window
// rules judge all of it (the seed rule judges its last slot one slot later).
Slot Replay(MissedSlotTracker& tracker, Slot first, const std::string& pattern) {
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '?') tracker.RecordBlocks(first + i, pattern[i] == '.');
  }
  return first + pattern.size();
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
  const Slot end = Replay(with_block, 10, "xxxxx.xxxxx") + 1;
  Replay(without_block, 10, "xxxxxxxxxxx");

  for (Slot now = 10; now <= end; ++now) {
    EXPECT_FALSE(with_block.Evaluate(now, rules, kSpec).tripped) << "now " << now;
  }
  EXPECT_EQ(with_block.Evaluate(end, rules, kSpec).consecutive_missed, 5u);
  EXPECT_EQ(with_block.Evaluate(end, rules, kSpec).missed_in_window, 10u);

  EXPECT_FALSE(without_block.Evaluate(16, rules, kSpec).tripped);
  EXPECT_TRUE(without_block.Evaluate(17, rules, kSpec).latched);
}

TEST(MissedSlotTracker, SeedRuleJudgesASlotOnlyFromTwoSlotsLater) {
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

TEST(MissedSlotTracker, ClientRulesJudgeASlotFromTheNextSlotOn) {
  // Proposing at slot p, a client looks at the slots before p: slot 100 counts from slot 101.
  const MissedSlotRules rules = Preset("prysm");
  MissedSlotTracker tracker(100);
  tracker.RecordBlocks(100, false);
  MissedSlotState state = tracker.Evaluate(100, rules, kSpec);
  EXPECT_EQ(state.consecutive_missed, 0u);
  EXPECT_EQ(state.missed_in_window, 0u);
  state = tracker.Evaluate(101, rules, kSpec);
  EXPECT_EQ(state.consecutive_missed, 1u);
  EXPECT_EQ(state.missed_in_window, 1u);

  // A block reported during slot 101, or later, still counts.
  tracker.RecordBlocks(100, true);
  state = tracker.Evaluate(101, rules, kSpec);
  EXPECT_EQ(state.consecutive_missed, 0u);
  EXPECT_EQ(state.missed_in_window, 0u);

  // From genesis: slot 0 is judged at slot 1.
  MissedSlotTracker genesis(0);
  ReportEmpty(genesis, 0, 2);
  EXPECT_EQ(genesis.Evaluate(0, rules, kSpec).consecutive_missed, 0u);
  EXPECT_EQ(genesis.Evaluate(1, rules, kSpec).consecutive_missed, 1u);
  EXPECT_EQ(genesis.Evaluate(2, rules, kSpec).consecutive_missed, 2u);
}

TEST(MissedSlotTracker, BlockAfterTheLatestJudgedSlotEndsTheMissedRun) {
  // Slots 101 and 102 are missed, but a block for slot 103 arrived during slot 103: the run is
  // over even though slot 103 is not judged yet.
  const MissedSlotRules rules = Preset("prysm");
  MissedSlotTracker tracker(100);
  Replay(tracker, 100, ".xx.");
  MissedSlotState state = tracker.Evaluate(103, rules, kSpec);
  EXPECT_EQ(state.consecutive_missed, 0u);
  EXPECT_EQ(state.missed_in_window, 2u);
  EXPECT_FALSE(state.tripped);

  // Likewise for the seed rule: at slot 108 it judges the slots up to 106, six of them missed,
  // and the block for slot 107 ends their run.
  MissedSlotTracker seed(100);
  Replay(seed, 100, ".xxxxxx.");
  state = seed.Evaluate(108, Preset("mevboost"), kSpec);
  EXPECT_EQ(state.consecutive_missed, 0u);
  EXPECT_FALSE(state.tripped);
}

TEST(MissedSlotTracker, LateReportAmendsTheVerdictOfAWindowedRule) {
  const MissedSlotRules rules = Preset("prysm");
  MissedSlotTracker tracker(100);
  const Slot now = Replay(tracker, 100, ".xxx");
  MissedSlotState state = tracker.Evaluate(now, rules, kSpec);
  EXPECT_TRUE(state.tripped);
  EXPECT_FALSE(state.latched);
  EXPECT_EQ(state.rule, "3 consecutive missed slots > 1");

  tracker.RecordBlocks(102, true);
  state = tracker.Evaluate(now, rules, kSpec);
  EXPECT_FALSE(state.tripped);
  EXPECT_EQ(state.rule, "");
  EXPECT_EQ(state.consecutive_missed, 1u);
  EXPECT_EQ(state.missed_in_window, 2u);
}

TEST(MissedSlotTracker, WindowedRulesRecoverByThemselves) {
  const MissedSlotRules rules = Preset("prysm");

  MissedSlotTracker consecutive(100);
  Slot now = Replay(consecutive, 100, ".xxxx");
  EXPECT_TRUE(consecutive.Evaluate(now, rules, kSpec).tripped);
  consecutive.RecordBlocks(105, true);
  EXPECT_FALSE(consecutive.Evaluate(now + 1, rules, kSpec).tripped);

  // Five missed slots among 101..109, none next to another, then blocks: tripped until slot
  // 101 leaves the 32 slots before the proposal slot, that is up to slot 133.
  MissedSlotTracker window(100);
  now = Replay(window, 100, ".x.x.x.x.x");
  MissedSlotState state = window.Evaluate(now, rules, kSpec);
  EXPECT_EQ(state.consecutive_missed, 1u);
  EXPECT_EQ(state.missed_in_window, 5u);
  EXPECT_EQ(state.rule, "5 missed slots in the last 32 > 4");
  for (Slot slot = 110; slot <= 140; ++slot) window.RecordBlocks(slot, true);
  EXPECT_TRUE(window.Evaluate(133, rules, kSpec).tripped);
  state = window.Evaluate(134, rules, kSpec);
  EXPECT_FALSE(state.tripped);
  EXPECT_EQ(state.missed_in_window, 4u);
  EXPECT_EQ(window.Evaluate(142, rules, kSpec).missed_in_window, 0u);
}

// Evaluates `preset` at the slot after `pattern`, played from slot 100 (see Replay), with
// finalized epoch 0 reported.
MissedSlotState EvaluateAfter(const std::string& preset, const std::string& pattern) {
  MissedSlotTracker tracker(100);
  const Slot now = Replay(tracker, 100, pattern);
  tracker.RecordFinalized(0);
  return tracker.Evaluate(now, Preset(preset), kSpec);
}

TEST(MissedSlotTracker, PrysmTripsOnTwoConsecutiveOrFiveInTheLast32) {
  EXPECT_TRUE(EvaluateAfter("prysm", ".").active);
  EXPECT_FALSE(EvaluateAfter("prysm", ".x").tripped);
  EXPECT_EQ(EvaluateAfter("prysm", ".xx").rule, "2 consecutive missed slots > 1");
  EXPECT_FALSE(EvaluateAfter("prysm", ".xx").latched);
  EXPECT_FALSE(EvaluateAfter("prysm", "x.x.x.x.").tripped);
  EXPECT_EQ(EvaluateAfter("prysm", "x.x.x.x.x.").rule, "5 missed slots in the last 32 > 4");
  // Finality is not among Prysm's rules (epoch 7 here, finalized epoch 0 reported).
  EXPECT_EQ(EvaluateAfter("prysm", std::string(4 * 32, '.')).epochs_since_finalization, 7u);
  EXPECT_FALSE(EvaluateAfter("prysm", std::string(4 * 32, '.')).tripped);
}

TEST(MissedSlotTracker, TekuTripsOnFourConsecutiveOrSixInTheLast31) {
  EXPECT_TRUE(EvaluateAfter("teku", ".").active);
  EXPECT_FALSE(EvaluateAfter("teku", ".xxx").tripped);
  EXPECT_EQ(EvaluateAfter("teku", ".xxxx").rule, "4 consecutive missed slots > 3");
  EXPECT_FALSE(EvaluateAfter("teku", ".xxxx").latched);
  EXPECT_FALSE(EvaluateAfter("teku", "xxx.xx").tripped);
  EXPECT_EQ(EvaluateAfter("teku", "xxx.xxx").rule, "6 missed slots in the last 31 > 5");
  // The slot 32 before the proposal slot is out of the window: six missed slots, the first of
  // them 32 slots back, are five.
  const std::string six_then_blocks = "xx.xx.xx" + std::string(24, '.');
  EXPECT_EQ(EvaluateAfter("teku", six_then_blocks).missed_in_window, 5u);
  EXPECT_FALSE(EvaluateAfter("teku", six_then_blocks).tripped);
  EXPECT_TRUE(EvaluateAfter("teku", six_then_blocks.substr(0, 31)).tripped);
  EXPECT_EQ(EvaluateAfter("teku", std::string(4 * 32, '.')).epochs_since_finalization, 7u);
  EXPECT_FALSE(EvaluateAfter("teku", std::string(4 * 32, '.')).tripped);
}

TEST(MissedSlotTracker, LighthouseTripsOnFourConsecutiveNineInTheLast32OrFourEpochsUnfinalized) {
  const MissedSlotRules rules = Preset("lighthouse");
  EXPECT_TRUE(EvaluateAfter("lighthouse", ".").active);
  EXPECT_FALSE(EvaluateAfter("lighthouse", ".xxx").tripped);
  EXPECT_EQ(EvaluateAfter("lighthouse", ".xxxx").rule, "4 consecutive missed slots > 3");
  EXPECT_FALSE(EvaluateAfter("lighthouse", "xxx.xxx.xx").tripped);
  EXPECT_EQ(EvaluateAfter("lighthouse", "xxx.xxx.xxx").rule, "9 missed slots in the last 32 > 8");
  EXPECT_FALSE(EvaluateAfter("lighthouse", "xxx.xxx.xxx").latched);

  // A fresh tracker judges no slot, so only finality speaks.
  MissedSlotTracker tracker(FirstSlotOf(13, kSpec));
  tracker.RecordFinalized(10);
  EXPECT_FALSE(tracker.Evaluate(FirstSlotOf(13, kSpec), rules, kSpec).tripped);
  tracker.Reset(FirstSlotOf(14, kSpec));
  const MissedSlotState state = tracker.Evaluate(FirstSlotOf(14, kSpec), rules, kSpec);
  EXPECT_TRUE(state.tripped);
  EXPECT_EQ(state.rule, "4 epochs since finalization > 3");
}

// The proposal slots in [from, until) at which `preset` refuses builders, for a fleet that
// reports every slot before the next one begins: a block at every slot from `from` on except
// the `missed` slots from `outage` on.
std::vector<Slot> TrippedProposals(const std::string& preset, Slot from, Slot outage,
                                   uint64_t missed, Slot until) {
  const MissedSlotRules rules = Preset(preset);
  MissedSlotTracker tracker(from);
  std::vector<Slot> tripped;
  for (Slot now = from; now < until; ++now) {
    if (now > from) {
      const Slot slot = now - 1;
      tracker.RecordBlocks(slot, slot < outage || slot >= outage + missed);
    }
    if (tracker.Evaluate(now, rules, kSpec).tripped) tripped.push_back(now);
  }
  return tripped;
}

// Slots [first, end).
std::vector<Slot> Slots(Slot first, Slot end) {
  std::vector<Slot> slots;
  for (Slot slot = first; slot < end; ++slot) slots.push_back(slot);
  return slots;
}

TEST(MissedSlotTracker, EachPresetTripsAndRecoversAtTheClientsOwnSlots) {
  // One run of `missed` empty slots from slot m, blocks before and after: the breaker holds
  // for the proposal slots [m + first_trip, m + recovery), one slot earlier it does not, and
  // it is clear again from m + recovery on (docs/semantics.md, "Presets").
  struct Case {
    const char* preset;
    uint64_t missed;
    Slot first_trip;  // 0: never trips
    Slot recovery;    // 0: never recovers by itself (latched)
  };
  constexpr Slot m = 1000;
  for (const Case& c : {
           Case{"prysm", 1, 0, 0},
           Case{"prysm", 2, 2, 3},  // p - highest block slot = 3
           Case{"prysm", 4, 2, 5},
           Case{"prysm", 5, 2, 33},  // 5 of [p-32, p-1] up to p = m + 32
           Case{"lighthouse", 3, 0, 0},
           Case{"lighthouse", 4, 4, 5},  // (p-1) - head slot = 4
           Case{"lighthouse", 8, 4, 9},
           Case{"lighthouse", 9, 4, 33},  // 9 of [p-32, p-1] up to p = m + 32
           Case{"teku", 3, 0, 0},
           Case{"teku", 4, 4, 5},  // (p-1) - parent slot = 4
           Case{"teku", 5, 4, 6},
           Case{"teku", 6, 4, 32},  // 6 of [p-31, p-1] up to p = m + 31
           // The seed rule: a block at m + 6 ends a run of six before it is judged.
           Case{"mevboost", 6, 0, 0},
           Case{"mevboost", 7, 7, 0},
       }) {
    SCOPED_TRACE(std::string(c.preset) + ", " + std::to_string(c.missed) + " missed");
    const Slot until = m + 100;
    std::vector<Slot> expected;
    if (c.first_trip != 0) {
      expected = Slots(m + c.first_trip, c.recovery != 0 ? m + c.recovery : until);
    }
    EXPECT_EQ(TrippedProposals(c.preset, m - 64, m, c.missed, until), expected);
  }
}

// The clients' own checks, transcribed from their sources (docs/semantics.md, "Presets"), for
// a chain whose slots before `p` have a block where `block[s]` (slot 0 always does). Each
// returns true when the client at proposal slot p does not use a builder.
using Chain = std::vector<bool>;

// The latest slot before p with a block.
Slot ParentSlot(const Chain& block, Slot p) {
  Slot s = p - 1;
  while (s > 0 && !block[s]) --s;
  return s;
}

// Prysm, circuitBreakBuilder: p - highest block slot >= 3, or at least 5 of the 32 slots
// [p-32, p-1] without a block (near genesis, p <= 32, Prysm differs; not compared).
bool PrysmRefuses(const Chain& block, Slot p) {
  if (p - ParentSlot(block, p) >= 3) return true;
  uint64_t received = 0;
  for (Slot s = p - 32; s < p; ++s) received += block[s] ? 1 : 0;
  return 32 - received >= 5;
}

// Lighthouse, is_healthy: (p-1) - head slot > 3, or more than 8 skipped slots in [p-32, p-1].
bool LighthouseRefuses(const Chain& block, Slot p) {
  if ((p - 1) - ParentSlot(block, p) > 3) return true;
  uint64_t skips = 0;
  for (Slot s = p >= 32 ? p - 32 : 0; s < p; ++s) skips += block[s] ? 0 : 1;
  return skips > 8;
}

// Teku, isEngaged (window 32, 5 allowed faults, 3 consecutive): the distinct block roots of
// the parent and of block_roots[p-32 .. p-2] (each the root of the latest block at or before
// that slot) fewer than 27, or (p-1) - parent slot > 3.
bool TekuRefuses(const Chain& block, Slot p) {
  const Slot parent = ParentSlot(block, p);
  const uint64_t last_empty = (p - 1) - parent;
  if (last_empty >= 32) return true;
  std::set<Slot> roots = {parent};
  for (Slot s = p - 32; s <= p - 2; ++s) roots.insert(ParentSlot(block, s + 1));
  return roots.size() < 27 || last_empty > 3;
}

TEST(MissedSlotTracker, PresetsRefuseExactlyWhenTheClientWould) {
  // A fleet that reports every slot before the next one begins, without orphaned blocks: its
  // view is the client's. Every slot before kFrom has a block; from it on, the chain
  // alternates quiet and troubled stretches, and long outages.
  constexpr Slot kFrom = 200;
  constexpr Slot kUntil = 6000;
  uint64_t random = 777;
  auto next = [&random] {
    random = random * 6364136223846793005u + 1442695040888963407u;
    return random >> 33;
  };
  Chain block(kUntil, true);
  uint64_t miss_percent = 0;
  for (Slot s = kFrom; s < kUntil; ++s) {
    if (s % 48 == 0) miss_percent = std::vector<uint64_t>{0, 5, 15, 30, 60, 100}[next() % 6];
    block[s] = next() % 100 >= miss_percent;
  }
  struct Client {
    const char* preset;
    bool (*refuses)(const Chain&, Slot);
  };
  for (const Client& client :
       {Client{"prysm", PrysmRefuses}, Client{"lighthouse", LighthouseRefuses},
        Client{"teku", TekuRefuses}}) {
    SCOPED_TRACE(client.preset);
    const MissedSlotRules rules = Preset(client.preset);
    MissedSlotTracker tracker(kFrom);
    int refused = 0;
    int allowed = 0;
    for (Slot p = kFrom; p < kUntil; ++p) {
      if (p > kFrom) tracker.RecordBlocks(p - 1, block[p - 1]);
      const bool tripped = tracker.Evaluate(p, rules, kSpec).tripped;
      ASSERT_EQ(tripped, client.refuses(block, p)) << "proposal slot " << p;
      ++(tripped ? refused : allowed);
    }
    // Guards the comparison against a chain on which nothing ever happens.
    EXPECT_GT(refused, 500);
    EXPECT_GT(allowed, 500);
  }
}

TEST(MissedSlotTracker, PrysmMirrorsTheClientsCircuitBreakBuilderTest) {
  // Prysm's TestServer_circuitBreakBuilder. Slot 0 (genesis) has a block.
  const MissedSlotRules rules = Preset("prysm");
  // Only genesis in fork choice: proposing at slot 4 (4 - 0 >= 3) refuses builders.
  MissedSlotTracker genesis_only(0);
  genesis_only.RecordBlocks(0, true);
  ReportEmpty(genesis_only, 1, 4);
  EXPECT_EQ(genesis_only.Evaluate(4, rules, kSpec).rule, "3 consecutive missed slots > 1");

  // A block at slot 1: proposing at slot 3 (3 - 1 < 3) uses builders; at slot 4 it does not.
  MissedSlotTracker one_block(0);
  Replay(one_block, 0, "..x");
  EXPECT_FALSE(one_block.Evaluate(3, rules, kSpec).tripped);
  one_block.RecordBlocks(3, false);
  EXPECT_TRUE(one_block.Evaluate(4, rules, kSpec).tripped);

  // MaxBuilderEpochMissedSlots lowered to 4 (at least 4 missed of 32: more than 3). Blocks at
  // slots 1 and 32 only: proposing at slot 33, 30 of [1, 32] missed.
  MissedSlotRules four = rules;
  four.max_missed_slots_in_window = 3;
  MissedSlotTracker epoch(0);
  Replay(epoch, 0, ".." + std::string(30, 'x') + ".");
  MissedSlotState state = epoch.Evaluate(33, four, kSpec);
  EXPECT_EQ(state.rule, "30 missed slots in the last 32 > 3");
  // Then blocks at slots 2..30 too: only slot 31 is missed.
  for (Slot slot = 2; slot <= 30; ++slot) epoch.RecordBlocks(slot, true);
  state = epoch.Evaluate(33, four, kSpec);
  EXPECT_FALSE(state.tripped);
  EXPECT_EQ(state.missed_in_window, 1u);
}

TEST(MissedSlotTracker, TekuMirrorsTheClientsBuilderCircuitBreakerImplTest) {
  // Teku's BuilderCircuitBreakerImplTest: a window of 10 slots with 5 allowed faults and 2
  // allowed consecutive faults, proposing at slot 69 (window 59..68). In the engine's terms:
  // more than 5 missed of the 9 slots [p-9, p-1], more than 2 consecutive.
  MissedSlotRules rules;
  rules.preset = "custom";
  rules.latched_rule = false;
  rules.max_allowed_missing_slots = 0;
  rules.max_consecutive_missed_slots = 2;
  rules.max_missed_slots_in_window = 5;
  rules.window_slots = 9;
  // Blocks at every slot from 1 to `last`, except those in `empty`; proposing at `p`.
  auto evaluate = [&](Slot last, const std::set<Slot>& empty, Slot p = 69) {
    MissedSlotTracker tracker(1);
    for (Slot slot = 1; slot < p; ++slot) {
      tracker.RecordBlocks(slot, slot <= last && empty.count(slot) == 0);
    }
    return tracker.Evaluate(p, rules, kSpec);
  };
  // shouldNotEngage_noMissedSlots
  EXPECT_FALSE(evaluate(31, {}, 32).tripped);
  // shouldNotEngage_minimalAllowedFaults: 62, 63, 64, 66 and 67 empty.
  MissedSlotState state = evaluate(68, {62, 63, 64, 66, 67});
  EXPECT_FALSE(state.tripped);
  EXPECT_EQ(state.missed_in_window, 5u);
  EXPECT_EQ(state.consecutive_missed, 0u);
  // shouldNotEngage_minimalConsecutiveAllowedFaults: 67 and 68 empty.
  state = evaluate(66, {});
  EXPECT_FALSE(state.tripped);
  EXPECT_EQ(state.consecutive_missed, 2u);
  // shouldEngage_belowAllowedFaultsWithLastSlotNotEmpty: 62..67 empty.
  EXPECT_EQ(evaluate(68, {62, 63, 64, 65, 66, 67}).rule, "6 missed slots in the last 9 > 5");
  // shouldEngage_belowAllowedFaultsWithLastSlotEmpty: 62..66 and 68 empty.
  state = evaluate(67, {62, 63, 64, 65, 66});
  EXPECT_EQ(state.consecutive_missed, 1u);
  EXPECT_EQ(state.rule, "6 missed slots in the last 9 > 5");
  // shouldEngage_belowAllowedFaultsWithTooManyLastSlotsEmpty: 64, 66, 67 and 68 empty.
  EXPECT_EQ(evaluate(65, {64}).rule, "3 consecutive missed slots > 2");
  // shouldEngage_belowAllowedFaults_lastBlockHeaderWellOff: nothing after 58.
  EXPECT_EQ(evaluate(58, {}).rule, "10 consecutive missed slots > 2");
}

TEST(MissedSlotTracker, LighthouseMirrorsTheClientsChainHealthTests) {
  // Lighthouse's http_api tests builder_chain_health_*.
  const MissedSlotRules rules = Preset("lighthouse");

  // _skips: the head at slot 99, four slots without a block, proposing at slot 104.
  MissedSlotTracker skips(64);
  Replay(skips, 64, std::string(36, '.') + "xxxx");
  EXPECT_FALSE(skips.Evaluate(103, rules, kSpec).tripped);
  EXPECT_EQ(skips.Evaluate(104, rules, kSpec).rule, "4 consecutive missed slots > 3");

  // _skips_per_epoch: a block at s0, 8 skips, blocks up to s0 + 31: proposing at s0 + 32 uses
  // the builder; with s0 + 32 skipped too, proposing at s0 + 33 does not.
  constexpr Slot s0 = 128;
  MissedSlotTracker per_epoch(s0);
  Replay(per_epoch, s0, "." + std::string(8, 'x') + std::string(23, '.'));
  MissedSlotState state = per_epoch.Evaluate(s0 + 32, rules, kSpec);
  EXPECT_EQ(state.missed_in_window, 8u);
  EXPECT_FALSE(state.tripped);
  per_epoch.RecordBlocks(s0 + 32, false);
  EXPECT_EQ(per_epoch.Evaluate(s0 + 33, rules, kSpec).rule, "9 missed slots in the last 32 > 8");

  // _epochs_since_finalization: three epochs without blocks, then one with blocks, finalized
  // epoch still 0: the next proposal (epoch 4) does not use the builder, though no slot rule
  // holds; the last slot of epoch 3 still did. Once a newer epoch is finalized it does again.
  MissedSlotTracker finality(0);
  Replay(finality, 0, "." + std::string(96, 'x') + std::string(32, '.'));
  finality.RecordFinalized(0);
  EXPECT_FALSE(finality.Evaluate(127, rules, kSpec).tripped);
  EXPECT_TRUE(finality.Evaluate(128, rules, kSpec).tripped);
  state = finality.Evaluate(129, rules, kSpec);
  EXPECT_EQ(state.rule, "4 epochs since finalization > 3");
  EXPECT_EQ(state.consecutive_missed, 0u);
  EXPECT_EQ(state.missed_in_window, 0u);
  for (Slot slot = 129; slot <= 161; ++slot) finality.RecordBlocks(slot, true);
  finality.RecordFinalized(3);
  EXPECT_FALSE(finality.Evaluate(162, rules, kSpec).tripped);
}

TEST(MissedSlotTracker, MevboostLatchesOnlyOnMissedSlotsSinceTheLastPresentSlot) {
  const MissedSlotRules rules = Preset("mevboost");
  auto evaluate = [&](const std::string& pattern) {
    MissedSlotTracker tracker(100);
    // The seed rule judges the pattern's last slot one slot after the others do.
    const Slot now = Replay(tracker, 100, pattern) + 1;
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
  EXPECT_FALSE(windowed.Evaluate(1001, WindowOnly(1, 32), kSpec).tripped);
  state = windowed.Evaluate(1002, WindowOnly(1, 32), kSpec);
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
  MissedSlotState state = tracker.Evaluate(401, rules, kSpec);
  EXPECT_EQ(state.missed_in_window, 63u);
  EXPECT_EQ(state.consecutive_missed, 0u);
  EXPECT_EQ(tracker.Export().present_slots.front(), 146u);
  EXPECT_EQ(tracker.Export().observed_slots.front(), 146u);

  // A jump longer than the ring, by Evaluate alone: slots 593..655 reuse the bits of the
  // slots 337..399 reported without a block, yet no node reported them.
  state = tracker.Evaluate(700, rules, kSpec);
  EXPECT_EQ(state.missed_in_window, 0u);
  EXPECT_EQ(state.consecutive_missed, 0u);
  EXPECT_TRUE(tracker.Export().present_slots.empty());
  EXPECT_TRUE(tracker.Export().observed_slots.empty());
  ReportEmpty(tracker, 600, 700);
  state = tracker.Evaluate(700, rules, kSpec);
  EXPECT_EQ(state.missed_in_window, 64u);
  EXPECT_EQ(state.consecutive_missed, 100u);
  tracker.RecordBlocks(690, true);
  state = tracker.Evaluate(700, rules, kSpec);
  EXPECT_EQ(state.missed_in_window, 63u);
  EXPECT_EQ(state.consecutive_missed, 9u);

  // A run longer than the ring counts the slots the ring still holds: at slot 1000 it holds
  // 745..1000, of which 745..999 are judged.
  MissedSlotTracker long_run(0);
  ReportEmpty(long_run, 0, 1000);
  EXPECT_EQ(long_run.Evaluate(1000, rules, kSpec).consecutive_missed,
            MissedSlotTracker::kRingSlots - 1);
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
    const Slot judged = now - 1;
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
  now = Replay(seed, 100, ".xxx?xxx") + 1;
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
  const Slot now = Replay(tracker, 100, ".xxxxxx") + 1;
  ASSERT_TRUE(tracker.Evaluate(now, Preset("mevboost"), kSpec).latched);
  const MissedSlotState state = tracker.Evaluate(now, Preset("off"), kSpec);
  EXPECT_TRUE(state.active);
  EXPECT_TRUE(state.tripped);
  EXPECT_TRUE(state.latched);
  EXPECT_EQ(state.rule, "6 missed slots since the last present slot > 5 (latched until reset)");
}

}  // namespace
}  // namespace breaker::core
