#include "core/missed_slots.h"

#include <algorithm>
#include <bitset>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace breaker::core {
namespace {

// The client-style rules judge slot s from slot s + 1 on: a client proposing at slot p looks
// at the slots before p.
constexpr uint64_t kClientGraceSlots = 1;
// The seed rule judges slot s from slot s + 2 on: its grace period is the rest of slot s and
// all of s + 1.
constexpr uint64_t kSeedGraceSlots = 2;

// The end of the slots judged at `now` after `grace` slots: they are those before it.
Slot JudgedEnd(Slot now, uint64_t grace) { return now >= grace ? now - grace + 1 : 0; }

constexpr uint64_t kRingSlots = MissedSlotTracker::kRingSlots;

// Appends the slots of the ring whose bit is set to `slots`, oldest first.
void AppendSet(const std::bitset<kRingSlots>& ring, Slot head, std::vector<Slot>& slots) {
  // The ring's slots are head - back for back in [0, span].
  const uint64_t span = std::min<uint64_t>(head, kRingSlots - 1);
  for (uint64_t back = span + 1; back-- > 0;) {
    const Slot slot = head - back;
    if (ring[slot % kRingSlots]) slots.push_back(slot);
  }
}

}  // namespace

MissedSlotTracker::MissedSlotTracker(Slot start_slot)
    : start_slot_(start_slot), ring_head_(start_slot) {}

bool MissedSlotTracker::InRing(Slot slot) const {
  return slot <= ring_head_ && ring_head_ - slot < kRingSlots;
}

bool MissedSlotTracker::IsPresent(Slot slot) const {
  // Outside the ring a bit may belong to another slot: no evidence of presence.
  return InRing(slot) && present_[slot % kRingSlots];
}

bool MissedSlotTracker::IsMissed(Slot slot) const {
  // Outside the ring, as for a slot no node reported on: unknown, not missed.
  return slot >= start_slot_ && InRing(slot) && observed_[slot % kRingSlots] &&
         !present_[slot % kRingSlots];
}

void MissedSlotTracker::AdvanceHead(Slot slot) {
  if (slot <= ring_head_) return;
  // The slots that enter the rings clear their bits: they still hold the slots one lap (or
  // more) older.
  if (slot - ring_head_ >= kRingSlots) {
    present_.reset();
    observed_.reset();
  } else {
    for (uint64_t i = 1; i <= slot - ring_head_; ++i) {
      present_.reset((ring_head_ + i) % kRingSlots);
      observed_.reset((ring_head_ + i) % kRingSlots);
    }
  }
  ring_head_ = slot;
}

void MissedSlotTracker::RecordBlocks(Slot slot, bool any_block) {
  AdvanceHead(slot);
  // Older than the rings: long out of every judged window (see the REQUIRES on the class).
  if (!InRing(slot)) return;
  observed_.set(slot % kRingSlots);
  if (any_block) present_.set(slot % kRingSlots);
}

void MissedSlotTracker::RecordFinalized(Epoch epoch) {
  if (!has_finalized_ || epoch > finalized_epoch_) {
    has_finalized_ = true;
    finalized_epoch_ = epoch;
  }
}

uint64_t MissedSlotTracker::ConsecutiveMissedBefore(Slot end) const {
  if (end <= start_slot_) return 0;
  // A block already reported for a later, not yet judged slot ends the run.
  for (Slot s = end; s <= ring_head_; ++s) {
    if (IsPresent(s)) return 0;
  }
  // As far back as the rings reach; a present or unknown slot ends it.
  uint64_t run = 0;
  for (Slot s = end - 1; IsMissed(s); --s) {
    ++run;
    if (s == 0) break;
  }
  return run;
}

uint64_t MissedSlotTracker::MissedInWindowBefore(Slot end, uint64_t window) const {
  if (end <= start_slot_) return 0;
  window = std::min<uint64_t>(window, kRingSlots);
  const Slot begin = std::max(start_slot_, end > window ? end - window : 0);
  uint64_t missed = 0;
  for (Slot s = begin; s < end; ++s) missed += IsMissed(s) ? 1 : 0;
  return missed;
}

MissedSlotState MissedSlotTracker::Evaluate(Slot now, const MissedSlotRules& rules,
                                            const ChainSpec& spec) {
  AdvanceHead(now);
  MissedSlotState state;

  const bool client_rule_on =
      rules.max_consecutive_missed_slots > 0 || rules.max_missed_slots_in_window > 0;
  const Slot client_end = JudgedEnd(now, kClientGraceSlots);
  const Slot seed_end = JudgedEnd(now, kSeedGraceSlots);
  // The counts the policy shows: those of the rules in force.
  const Slot shown_end = client_rule_on ? client_end : seed_end;
  state.consecutive_missed = ConsecutiveMissedBefore(shown_end);
  state.missed_in_window = MissedInWindowBefore(shown_end, rules.window_slots);
  if (has_finalized_) {
    const Epoch current = EpochOf(now, spec);
    state.epochs_since_finalization = current > finalized_epoch_ ? current - finalized_epoch_ : 0;
  }

  const bool seed_on = rules.latched_rule && rules.max_allowed_missing_slots > 0;
  if (!latched_ && seed_on) {
    const uint64_t seed_run = ConsecutiveMissedBefore(seed_end);
    if (seed_run > rules.max_allowed_missing_slots) {
      latched_ = true;
      latched_rule_ = absl::StrCat(seed_run, " missed slots since the last present slot > ",
                                   rules.max_allowed_missing_slots, " (latched until reset)");
    }
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
  state.active = seed_on || client_rule_on || rules.max_epochs_since_finalization > 0 || latched_;
  state.tripped = !rule.empty();
  state.latched = latched_;
  state.rule = std::move(rule);
  return state;
}

void MissedSlotTracker::Reset(Slot now) {
  start_slot_ = now;
  present_.reset();
  observed_.reset();
  ring_head_ = now;
  latched_ = false;
  latched_rule_.clear();
}

MissedSlotTracker::State MissedSlotTracker::Export() const {
  State state;
  state.start_slot = start_slot_;
  AppendSet(present_, ring_head_, state.present_slots);
  AppendSet(observed_, ring_head_, state.observed_slots);
  state.has_finalized = has_finalized_;
  state.finalized_epoch = finalized_epoch_;
  state.latched = latched_;
  state.latched_rule = latched_rule_;
  return state;
}

MissedSlotTracker MissedSlotTracker::Import(const State& state) {
  MissedSlotTracker tracker(state.start_slot);
  // The head only has to cover the listed slots: the bits past them are clear either way.
  for (Slot slot : state.present_slots) tracker.AdvanceHead(slot);
  for (Slot slot : state.observed_slots) tracker.AdvanceHead(slot);
  for (Slot slot : state.present_slots) {
    if (tracker.InRing(slot)) tracker.present_.set(slot % kRingSlots);
  }
  for (Slot slot : state.observed_slots) {
    if (tracker.InRing(slot)) tracker.observed_.set(slot % kRingSlots);
  }
  tracker.has_finalized_ = state.has_finalized;
  tracker.finalized_epoch_ = state.has_finalized ? state.finalized_epoch : 0;
  tracker.latched_ = state.latched;
  tracker.latched_rule_ = state.latched ? state.latched_rule : std::string();
  return tracker;
}

}  // namespace breaker::core
