#include "core/missed_slots.h"

#include <algorithm>
#include <bitset>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace breaker::core {
namespace {

// A slot is judged from slot s + 2 on: the grace period is the rest of slot s and all of s + 1.
constexpr uint64_t kGraceSlots = 2;

constexpr uint64_t kRingSlots = MissedSlotTracker::kRingSlots;
using Ring = std::bitset<kRingSlots>;

// Moves the ring's head forward to `slot`, clearing the bits of the slots that enter the ring:
// they still hold the slots one lap (or more) older.
void AdvanceHead(Slot slot, Ring& ring, Slot& head) {
  if (slot <= head) return;
  if (slot - head >= kRingSlots) {
    ring.reset();
  } else {
    for (uint64_t i = 1; i <= slot - head; ++i) ring.reset((head + i) % kRingSlots);
  }
  head = slot;
}

}  // namespace

MissedSlotTracker::MissedSlotTracker(Slot start_slot)
    : start_slot_(start_slot), ring_head_(start_slot) {}

bool MissedSlotTracker::IsPresent(Slot slot) const {
  // Outside the ring a bit may belong to another slot: no evidence of presence.
  if (slot > ring_head_ || ring_head_ - slot >= kRingSlots) return false;
  return ring_[slot % kRingSlots];
}

void MissedSlotTracker::RecordPresent(Slot slot) {
  AdvanceHead(slot, ring_, ring_head_);
  // Older than the ring: long out of every judged window (see the REQUIRES on the class).
  if (ring_head_ - slot >= kRingSlots) return;
  ring_.set(slot % kRingSlots);
  if (!has_present_ || slot > last_present_) {
    has_present_ = true;
    last_present_ = slot;
  }
}

void MissedSlotTracker::RecordFinalized(Epoch epoch) {
  if (!has_finalized_ || epoch > finalized_epoch_) {
    has_finalized_ = true;
    finalized_epoch_ = epoch;
  }
}

MissedSlotState MissedSlotTracker::Evaluate(Slot now, const MissedSlotRules& rules,
                                            const ChainSpec& spec) {
  AdvanceHead(now, ring_, ring_head_);
  MissedSlotState state;

  // Judged slots are [start_slot_, judged_end); empty before the first one is judged.
  const Slot judged_end = now >= kGraceSlots ? now - kGraceSlots + 1 : 0;
  if (judged_end > start_slot_) {
    // Consecutive: the judged slots after the latest present slot (and from the start on).
    Slot first_missed = start_slot_;
    if (has_present_ && last_present_ >= first_missed) first_missed = last_present_ + 1;
    state.consecutive_missed = judged_end > first_missed ? judged_end - first_missed : 0;

    // Windowed: the last window_slots judged slots, which the ring always covers.
    const uint64_t window = std::min<uint64_t>(rules.window_slots, kRingSlots);
    const Slot window_begin = std::max(start_slot_, judged_end > window ? judged_end - window : 0);
    for (Slot s = window_begin; s < judged_end; ++s) {
      if (!IsPresent(s)) ++state.missed_in_window;
    }
  }
  if (has_finalized_) {
    const Epoch current = EpochOf(now, spec);
    state.epochs_since_finalization = current > finalized_epoch_ ? current - finalized_epoch_ : 0;
  }

  const bool seed_on = rules.latched_rule && rules.max_allowed_missing_slots > 0;
  if (!latched_ && seed_on && state.consecutive_missed > rules.max_allowed_missing_slots) {
    latched_ = true;
    latched_rule_ =
        absl::StrCat(state.consecutive_missed, " missed slots since the last present slot > ",
                     rules.max_allowed_missing_slots, " (latched until reset)");
  }

  // The first rule that holds names the trip; the latch comes first since only a reset lifts it.
  std::string rule;
  if (latched_) {
    rule = latched_rule_;
  } else if (rules.max_consecutive_missed_slots > 0 &&
             state.consecutive_missed > rules.max_consecutive_missed_slots) {
    rule = absl::StrCat(state.consecutive_missed, " consecutive missed slots > ",
                        rules.max_consecutive_missed_slots);
  } else if (rules.max_missed_slots_in_window > 0 &&
             state.missed_in_window > rules.max_missed_slots_in_window) {
    rule = absl::StrCat(state.missed_in_window, " missed slots in the last ", rules.window_slots,
                        " > ", rules.max_missed_slots_in_window);
  } else if (rules.max_epochs_since_finalization > 0 &&
             state.epochs_since_finalization > rules.max_epochs_since_finalization) {
    rule = absl::StrCat(state.epochs_since_finalization, " epochs since finalization > ",
                        rules.max_epochs_since_finalization);
  }

  // A latch outlives a change of rules: only the operator's reset lifts it, so it stays active.
  state.active = seed_on || rules.max_consecutive_missed_slots > 0 ||
                 rules.max_missed_slots_in_window > 0 || rules.max_epochs_since_finalization > 0 ||
                 latched_;
  state.tripped = !rule.empty();
  state.latched = latched_;
  state.rule = std::move(rule);
  return state;
}

void MissedSlotTracker::Reset(Slot now) {
  start_slot_ = now;
  ring_.reset();
  ring_head_ = now;
  has_present_ = false;
  last_present_ = 0;
  latched_ = false;
  latched_rule_.clear();
}

MissedSlotTracker::State MissedSlotTracker::Export() const {
  State state;
  state.start_slot = start_slot_;
  // Oldest first: the ring's slots are ring_head_ - back for back in [0, span].
  const uint64_t span = std::min<uint64_t>(ring_head_, kRingSlots - 1);
  for (uint64_t back = span + 1; back-- > 0;) {
    const Slot slot = ring_head_ - back;
    if (ring_[slot % kRingSlots]) state.present_slots.push_back(slot);
  }
  state.has_present = has_present_;
  state.last_present = last_present_;
  state.has_finalized = has_finalized_;
  state.finalized_epoch = finalized_epoch_;
  state.latched = latched_;
  state.latched_rule = latched_rule_;
  return state;
}

MissedSlotTracker MissedSlotTracker::Import(const State& state) {
  MissedSlotTracker tracker(state.start_slot);
  // The head only has to cover the present slots: the bits past them are clear either way.
  for (Slot slot : state.present_slots) AdvanceHead(slot, tracker.ring_, tracker.ring_head_);
  for (Slot slot : state.present_slots) {
    if (tracker.ring_head_ - slot < kRingSlots) tracker.ring_.set(slot % kRingSlots);
  }
  tracker.has_present_ = state.has_present;
  tracker.last_present_ = state.has_present ? state.last_present : 0;
  tracker.has_finalized_ = state.has_finalized;
  tracker.finalized_epoch_ = state.has_finalized ? state.finalized_epoch : 0;
  tracker.latched_ = state.latched;
  tracker.latched_rule_ = state.latched ? state.latched_rule : std::string();
  return tracker;
}

}  // namespace breaker::core
