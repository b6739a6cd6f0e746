#ifndef CORE_MISSED_SLOTS_H_
#define CORE_MISSED_SLOTS_H_

// The pre-Gloas (mev-boost) missed-slot breaker, fleet-wide: a slot is present when any node
// has any block for it, canonical or not, so a reorging adversary cannot trip the breaker.

#include <bitset>
#include <cstdint>
#include <string>
#include <vector>

#include "core/chain_time.h"
#include "core/config.h"
#include "core/policy.h"
#include "core/types.h"

namespace breaker::core {

// Slot `s` is judged once slot s + 1 has ended, that is from slot s + 2 on; until it leaves the
// amendment window a late block report still turns it present. Slots before the tracking start
// (creation or the last reset) count as present: no history is no evidence of failure.
//
// Memory is a fixed ring of kRingSlots presence bits.
// REQUIRES of callers: RecordPresent only for slots in (now - kRingSlots + 8, now + 8), which
// a valid Config guarantees (amendment window <= 128, future tolerance <= 8).
class MissedSlotTracker {
 public:
  static constexpr uint64_t kRingSlots = 256;

  // Everything needed to rebuild a tracker (persistence).
  struct State {
    Slot start_slot = 0;
    // Present slots still in the ring, ascending.
    std::vector<Slot> present_slots;
    // The latest present slot ever reported, or 0 with has_present false.
    bool has_present = false;
    Slot last_present = 0;
    bool has_finalized = false;
    Epoch finalized_epoch = 0;
    // The latched (seed) rule tripped, and its description.
    bool latched = false;
    std::string latched_rule;
  };

  // Starts tracking at `start_slot`.
  explicit MissedSlotTracker(Slot start_slot);

  // Some node has a block for `slot`.
  void RecordPresent(Slot slot);

  // Some node finalized `epoch`; the latest reported epoch is kept.
  void RecordFinalized(Epoch epoch);

  // Evaluates `rules` at slot `now`. Trips and latches the seed rule when it holds. The result
  // has `active` set when any rule is on.
  MissedSlotState Evaluate(Slot now, const MissedSlotRules& rules, const ChainSpec& spec);

  // The operator's reset (the seed's restart): clears the latch and starts tracking afresh at
  // `now`.
  void Reset(Slot now);

  State Export() const;
  static MissedSlotTracker Import(const State& state);

 private:
  bool IsPresent(Slot slot) const;

  Slot start_slot_;
  // Bit (s % kRingSlots) is set when slot s is present; valid for slots in
  // (ring_head_ - kRingSlots, ring_head_].
  std::bitset<kRingSlots> ring_;
  Slot ring_head_;
  bool has_present_ = false;
  Slot last_present_ = 0;
  bool has_finalized_ = false;
  Epoch finalized_epoch_ = 0;
  bool latched_ = false;
  std::string latched_rule_;
};

}  // namespace breaker::core

#endif  // CORE_MISSED_SLOTS_H_
