#ifndef CORE_MISSED_SLOTS_H_
#define CORE_MISSED_SLOTS_H_

// The pre-Gloas (mev-boost) missed-slot breaker, fleet-wide: a slot is present when any node
// has any block for it, canonical or not, so a reorging adversary cannot trip the breaker; it
// is missed only when some node reported it without a block and no node has one. A slot no
// node reported on is unknown: no report is no evidence, so a breakerd without reports never
// trips.

#include <bitset>
#include <cstdint>
#include <string>
#include <vector>

#include "core/chain_time.h"
#include "core/config.h"
#include "core/policy.h"
#include "core/types.h"

namespace breaker::core {

// Each slot is, from the reports of all nodes:
// - present: some node reported a block for it;
// - missed: some node reported it (possibly with no block) and no node reported a block;
// - unknown: no node reported it. Never counted as missed, and like a present slot it ends a
//   run of consecutive missed slots.
// When a slot is judged depends on the rule:
// - the client-style rules (consecutive, window) judge slot s from slot s + 1 on: evaluated at
//   slot p, they look at the slots before p, as a client does when it proposes at p;
// - the seed's latched rule judges slot s from slot s + 2 on, once slot s + 1 has ended.
// A run of consecutive missed slots ends at the latest slot its rule judges; a block already
// reported for a later slot ends it too (the chain is moving again). Until a slot leaves the
// amendment window a late report still changes its verdict. Slots before the tracking start
// (creation or the last reset) are never missed: no history is no evidence of failure.
//
// Memory is two fixed rings of kRingSlots bits: which slots were reported, which are present.
// Slots older than the rings are unknown, so a run of missed slots counts at most kRingSlots.
// REQUIRES of callers: RecordBlocks only for slots in (now - kRingSlots + 8, now + 8), which
// a valid Config guarantees (amendment window <= 128, future tolerance <= 8).
class MissedSlotTracker {
 public:
  static constexpr uint64_t kRingSlots = 256;

  // Everything needed to rebuild a tracker (persistence).
  struct State {
    Slot start_slot = 0;
    // Present slots still in the ring, ascending.
    std::vector<Slot> present_slots;
    // Slots some node reported on (with or without a block) still in the ring, ascending.
    std::vector<Slot> observed_slots;
    bool has_finalized = false;
    Epoch finalized_epoch = 0;
    // The latched (seed) rule tripped, and its description.
    bool latched = false;
    std::string latched_rule;
  };

  // Starts tracking at `start_slot`.
  explicit MissedSlotTracker(Slot start_slot);

  // Some node reported the blocks it has for `slot`: the slot is observed, and present when
  // `any_block`.
  void RecordBlocks(Slot slot, bool any_block);

  // Some node finalized `epoch`; the latest reported epoch is kept.
  void RecordFinalized(Epoch epoch);

  // Evaluates `rules` at slot `now`: the policy in force for a proposal at `now`. Trips and
  // latches the seed rule when it holds. The result has `active` set when any rule is on. Its
  // counts are over the slots the client-style rules judge when one of them is on, otherwise
  // over those the seed rule judges.
  MissedSlotState Evaluate(Slot now, const MissedSlotRules& rules, const ChainSpec& spec);

  // The operator's reset (the seed's restart): clears the latch and starts tracking afresh at
  // `now`.
  void Reset(Slot now);

  State Export() const;
  static MissedSlotTracker Import(const State& state);

 private:
  bool InRing(Slot slot) const;
  bool IsPresent(Slot slot) const;
  // Some node reported on `slot`, no node has a block for it, and it is not before the start.
  bool IsMissed(Slot slot) const;
  // Moves the rings' head forward to `slot`.
  void AdvanceHead(Slot slot);
  // Over the judged slots [start_slot_, end): the run of missed slots ending at end - 1 (none
  // when a block was reported for a slot at or after `end`), ...
  uint64_t ConsecutiveMissedBefore(Slot end) const;
  // ... and the missed slots among the last `window` of them.
  uint64_t MissedInWindowBefore(Slot end, uint64_t window) const;

  Slot start_slot_;
  // Bit (s % kRingSlots) is set when slot s is present (present_), or when some node reported
  // on it (observed_); valid for slots in (ring_head_ - kRingSlots, ring_head_].
  std::bitset<kRingSlots> present_;
  std::bitset<kRingSlots> observed_;
  Slot ring_head_;
  bool has_finalized_ = false;
  Epoch finalized_epoch_ = 0;
  bool latched_ = false;
  std::string latched_rule_;
};

}  // namespace breaker::core

#endif  // CORE_MISSED_SLOTS_H_
