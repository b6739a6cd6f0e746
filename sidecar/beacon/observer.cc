#include "sidecar/beacon/observer.h"

#include <algorithm>
#include <utility>

#include "common/mutex.h"
#include "core/observation.h"

namespace breaker::sidecar {

Observer::Observer(ObserverOptions options, const Clock& clock, client::BreakerClient& client)
    : options_(std::move(options)), clock_(clock), client_(client) {
  const core::Slot now = CurrentSlot();
  // The slots just before the start are gaps: a backfill judges them once the node is watched.
  next_to_judge_ = now > options_.max_backfill_slots ? now - options_.max_backfill_slots : 0;
}

core::Slot Observer::CurrentSlot() const { return core::SlotAt(clock_.Now(), options_.chain); }

void Observer::SetWatching(bool watching) {
  MutexLock lock(&mu_);
  if (!watching) {
    watching_since_.reset();
  } else if (!watching_since_.has_value()) {
    watching_since_ = clock_.Now();
  }
}

bool Observer::watching() const {
  MutexLock lock(&mu_);
  return watching_since_.has_value();
}

bool Observer::InRange(core::Slot slot) {
  const core::Slot current = CurrentSlot();
  if (!watching_since_.has_value() || slot > current + options_.max_future_slots ||
      slot + options_.window_slots < current) {
    ++stats_.ignored_events;
    return false;
  }
  return true;
}

void Observer::AddRoot(core::Slot slot, const core::BlockRoot& root) {
  SlotRecord& record = slots_[slot];
  if (std::find(record.roots.begin(), record.roots.end(), root) != record.roots.end()) return;
  if (record.roots.size() >= options_.max_roots_per_slot) {
    ++stats_.ignored_events;
    return;
  }
  record.roots.push_back(root);
  ++stats_.blocks;
  Evidence(slot);
  // Here and below: what the client refuses, breakerd would refuse too, and the client's
  // stats keep why (last_refusal); the observer has nothing else to do with it.
  client_.Report(slot, core::BlocksSeen{record.roots}).IgnoreError();
}

void Observer::Evidence(core::Slot slot) {
  // The genesis block is every node's: it says nothing of whether this node has the chain.
  if (slot == 0) return;
  if (!first_evidence_.has_value() || slot < *first_evidence_) first_evidence_ = slot;
}

bool Observer::Judgeable(core::Slot slot) const {
  return slot > 0 && first_evidence_.has_value() && *first_evidence_ < slot;
}

void Observer::OnBlock(core::Slot slot, const core::BlockRoot& root) {
  MutexLock lock(&mu_);
  if (!InRange(slot)) return;
  AddRoot(slot, root);
}

void Observer::OnFinalized(core::Epoch epoch) {
  MutexLock lock(&mu_);
  if (!watching_since_.has_value()) {
    ++stats_.ignored_events;
    return;
  }
  if (finalized_.has_value() && epoch <= *finalized_) return;
  const core::Slot current = CurrentSlot();
  // A finalized epoch is never ahead of the current one.
  if (epoch > core::EpochOf(current, options_.chain)) {
    ++stats_.ignored_events;
    return;
  }
  finalized_ = epoch;
  client_.Report(current, core::Finalized{epoch}).IgnoreError();
}

void Observer::OnBid(core::Slot slot, core::BuilderIndex builder) {
  MutexLock lock(&mu_);
  if (!InRange(slot) || builder == core::kSelfBuild) return;
  if (!bids_.insert({slot, builder}).second) return;
  ++stats_.bids;
  client_.Report(slot, core::BidSeen{builder, "", ""}).IgnoreError();
}

void Observer::OnBlockBid(core::Slot slot, const core::BlockRoot& root,
                          core::BuilderIndex builder) {
  MutexLock lock(&mu_);
  if (!InRange(slot) || builder == core::kSelfBuild) return;
  if (payload_came_.contains(root)) {
    Delivered(slot, root, builder);
    return;
  }
  awaiting_payload_.emplace(root, OverduePayload{slot, root, builder});
}

void Observer::OnPayload(core::Slot slot, const core::BlockRoot& root, core::BuilderIndex builder) {
  MutexLock lock(&mu_);
  if (!InRange(slot) || builder == core::kSelfBuild) return;
  Delivered(slot, root, builder);
}

void Observer::OnPayloadAvailable(core::Slot slot, const core::BlockRoot& root) {
  MutexLock lock(&mu_);
  if (!InRange(slot)) return;
  auto awaiting = awaiting_payload_.find(root);
  if (awaiting != awaiting_payload_.end()) {
    Delivered(slot, root, awaiting->second.builder);
  } else {
    payload_came_.emplace(root, PayloadCame{slot, /*reported=*/false});
  }
}

void Observer::Delivered(core::Slot slot, const core::BlockRoot& root, core::BuilderIndex builder) {
  awaiting_payload_.erase(root);
  PayloadCame& came = payload_came_[root];
  came.slot = slot;
  if (came.reported) return;  // A second envelope event for one block is no news.
  came.reported = true;
  ++stats_.payloads_delivered;
  client_.Report(slot, core::PayloadDelivered{builder, root}).IgnoreError();
}

std::vector<core::Slot> Observer::SlotsToBackfill() const {
  MutexLock lock(&mu_);
  std::vector<core::Slot> gaps;
  const core::Slot current = CurrentSlot();
  for (const auto& [slot, record] : slots_) {
    if (record.gap && !record.judged && slot + options_.max_backfill_slots >= current) {
      gaps.push_back(slot);
    }
  }
  return gaps;
}

void Observer::OnBackfill(core::Slot slot, const std::vector<core::BlockRoot>& roots) {
  MutexLock lock(&mu_);
  auto it = slots_.find(slot);
  if (it == slots_.end() || !it->second.gap || it->second.judged) return;
  SlotRecord& record = it->second;
  record.judged = true;
  ++stats_.backfilled_slots;
  bool added = false;
  for (const core::BlockRoot& root : roots) {
    if (record.roots.size() >= options_.max_roots_per_slot) break;
    if (std::find(record.roots.begin(), record.roots.end(), root) != record.roots.end()) continue;
    record.roots.push_back(root);
    ++stats_.blocks;
    Evidence(slot);
    added = true;
  }
  if (record.roots.empty()) {
    if (!Judgeable(slot)) {
      ++stats_.no_evidence_slots;
      return;
    }
    ++stats_.empty_slots;
    client_.Report(slot, core::BlocksSeen{}).IgnoreError();
  } else if (added) {
    client_.Report(slot, core::BlocksSeen{record.roots}).IgnoreError();
  }
}

std::vector<OverduePayload> Observer::Tick() {
  MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  const core::Slot current = core::SlotAt(now, options_.chain);
  // After a long pause (a stopped process, a clock jump), only the reach of a backfill counts.
  if (current > options_.max_backfill_slots &&
      next_to_judge_ < current - options_.max_backfill_slots) {
    stats_.unjudged_slots += current - options_.max_backfill_slots - next_to_judge_;
    next_to_judge_ = current - options_.max_backfill_slots;
  }
  for (; core::StartOf(next_to_judge_ + 1, options_.chain) <= now; ++next_to_judge_) {
    const core::Slot slot = next_to_judge_;
    SlotRecord& record = slots_[slot];
    if (record.judged) continue;
    const bool watched_whole =
        watching_since_.has_value() && *watching_since_ <= core::StartOf(slot, options_.chain);
    if (!watched_whole) {
      record.gap = true;
      continue;
    }
    if (!record.roots.empty()) {
      record.judged = true;
    } else if (slot == 0) {
      record.judged = true;
      ++stats_.no_evidence_slots;
    } else if (!Judgeable(slot)) {
      record.gap = true;
    } else {
      record.judged = true;
      ++stats_.empty_slots;
      client_.Report(slot, core::BlocksSeen{}).IgnoreError();
    }
  }

  std::vector<OverduePayload> overdue;
  for (auto it = awaiting_payload_.begin(); it != awaiting_payload_.end();) {
    auto next = std::next(it);
    // Due at the end of the slot after the block's.
    if (core::StartOf(it->second.slot + 2, options_.chain) <= now) {
      overdue.push_back(it->second);
      awaiting_payload_.erase(it);
    }
    it = next;
  }
  std::sort(overdue.begin(), overdue.end(),
            [](const OverduePayload& a, const OverduePayload& b) { return a.slot < b.slot; });
  Prune(current);
  return overdue;
}

void Observer::PayloadOverdue(const OverduePayload& overdue, double attested_fraction) {
  MutexLock lock(&mu_);
  if (payload_came_.contains(overdue.root)) return;
  if (!(attested_fraction >= 0)) attested_fraction = 0;  // NaN included.
  attested_fraction = std::min(attested_fraction, 1.0);
  ++stats_.payloads_missing;
  client_
      .Report(overdue.slot, core::PayloadMissing{overdue.builder, overdue.root, attested_fraction})
      .IgnoreError();
}

void Observer::Prune(core::Slot current) {
  if (current <= options_.window_slots) return;
  const core::Slot oldest = current - options_.window_slots;
  for (auto it = slots_.begin(); it != slots_.end() && it->first < oldest;) {
    if (it->second.gap && !it->second.judged) ++stats_.unjudged_slots;
    it = slots_.erase(it);
  }
  // Gaps beyond the backfill's reach are never judged.
  for (auto& [slot, record] : slots_) {
    if (record.gap && !record.judged && slot + options_.max_backfill_slots < current) {
      record.judged = true;
      ++stats_.unjudged_slots;
    }
  }
  bids_.erase(bids_.begin(), bids_.lower_bound({oldest, 0}));
  absl::erase_if(awaiting_payload_, [&](const auto& entry) { return entry.second.slot < oldest; });
  absl::erase_if(payload_came_, [&](const auto& entry) { return entry.second.slot < oldest; });
}

ObserverStats Observer::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

}  // namespace breaker::sidecar
