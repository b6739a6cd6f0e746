#include "client/observation_buffer.h"

#include <algorithm>
#include <utility>
#include <variant>

#include "common/mutex.h"

namespace breaker::client {

ObservationBuffer::ObservationBuffer(size_t capacity, uint64_t first_sequence)
    : capacity_(std::max<size_t>(capacity, 1)),
      next_sequence_(first_sequence),
      highest_handed_out_(first_sequence - 1) {}

ObservationBuffer::Class ObservationBuffer::ClassOf(const core::Event& event) {
  if (std::holds_alternative<core::BidSeen>(event)) return kBid;
  if (std::holds_alternative<core::PayloadMissing>(event) ||
      std::holds_alternative<core::RelayRevealMissing>(event)) {
    return kFailure;
  }
  return kOther;
}

void ObservationBuffer::PopFront(Queue& queue) {
  queue.entries.pop_front();
  // Sent entries are a prefix of the queue: the one removed was sent if any was.
  if (queue.sent > 0) --queue.sent;
}

uint64_t ObservationBuffer::Add(core::Slot slot, core::Event event) {
  const Class cls = ClassOf(event);
  MutexLock lock(&mu_);
  const uint64_t sequence = next_sequence_++;
  queues_[cls].entries.push_back(Entry{sequence, slot, std::move(event)});
  ++buffered_;
  ++reported_;
  if (buffered_ > capacity_) DropOneLocked();
  return sequence;
}

void ObservationBuffer::DropOneLocked() {
  for (Queue& queue : queues_) {
    if (queue.entries.empty()) continue;
    PopFront(queue);
    ++queue.dropped;
    --buffered_;
    return;
  }
}

std::vector<ObservationBuffer::Entry> ObservationBuffer::NextBatch(size_t max) {
  MutexLock lock(&mu_);
  std::vector<Entry> batch;
  batch.reserve(std::min(max, UnsentLocked()));
  while (batch.size() < max) {
    // The unsent entry with the lowest sequence number is at the head of one class's suffix.
    Queue* next = nullptr;
    for (Queue& queue : queues_) {
      if (queue.sent == queue.entries.size()) continue;
      if (next == nullptr ||
          queue.entries[queue.sent].sequence < next->entries[next->sent].sequence) {
        next = &queue;
      }
    }
    if (next == nullptr) break;
    batch.push_back(next->entries[next->sent]);
    ++next->sent;
    highest_handed_out_ = std::max(highest_handed_out_, batch.back().sequence);
  }
  return batch;
}

void ObservationBuffer::Acknowledge(uint64_t sequence) {
  MutexLock lock(&mu_);
  for (Queue& queue : queues_) {
    while (!queue.entries.empty() && queue.entries.front().sequence <= sequence) {
      PopFront(queue);
      ++acknowledged_;
      --buffered_;
    }
  }
}

void ObservationBuffer::Rewind() {
  MutexLock lock(&mu_);
  for (Queue& queue : queues_) queue.sent = 0;
}

bool ObservationBuffer::HasUnsent() const {
  MutexLock lock(&mu_);
  return UnsentLocked() > 0;
}

size_t ObservationBuffer::UnsentLocked() const {
  size_t unsent = 0;
  for (const Queue& queue : queues_) unsent += queue.entries.size() - queue.sent;
  return unsent;
}

ObservationBuffer::Stats ObservationBuffer::stats() const {
  MutexLock lock(&mu_);
  Stats stats;
  stats.buffered = buffered_;
  stats.unsent = UnsentLocked();
  stats.acknowledged = acknowledged_;
  stats.dropped_bids = queues_[kBid].dropped;
  stats.dropped_other = queues_[kOther].dropped;
  stats.dropped_failures = queues_[kFailure].dropped;
  stats.reported = reported_;
  return stats;
}

size_t ObservationBuffer::RenumberAbove(uint64_t sequence) {
  MutexLock lock(&mu_);
  // The entries never handed out: a suffix of each class, in sequence order.
  std::vector<Entry*> unsent;
  for (Queue& queue : queues_) {
    for (auto it = queue.entries.rbegin();
         it != queue.entries.rend() && it->sequence > highest_handed_out_; ++it) {
      unsent.push_back(&*it);
    }
  }
  std::sort(unsent.begin(), unsent.end(),
            [](const Entry* a, const Entry* b) { return a->sequence < b->sequence; });
  if (unsent.empty() || unsent.front()->sequence > sequence) {
    next_sequence_ = std::max(next_sequence_, sequence + 1);
    return 0;
  }
  // Every number handed out is at or below highest_handed_out_, below the first of these: the
  // new numbers, above `sequence`, meet none that breakerd may hold.
  uint64_t next = sequence + 1;
  for (Entry* entry : unsent) entry->sequence = next++;
  next_sequence_ = next;
  return unsent.size();
}

uint64_t ObservationBuffer::LastSequence() const {
  MutexLock lock(&mu_);
  return next_sequence_ - 1;
}

}  // namespace breaker::client
