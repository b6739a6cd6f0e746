#ifndef CLIENT_OBSERVATION_BUFFER_H_
#define CLIENT_OBSERVATION_BUFFER_H_

// The observations a node has reported and breakerd has not acknowledged yet.
//
// Report() adds to it from any thread of the beacon node; the client's stream thread takes
// batches to send, drops what breakerd acknowledges, and after a reconnect sends every
// unacknowledged observation again, in order (breakerd ignores replays by sequence number).

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"
#include "core/observation.h"
#include "core/types.h"

namespace breaker::client {

// A bounded buffer of numbered observations. When full, the oldest bid (BidSeen) is dropped
// first, then the oldest other non-failure, and only then the oldest failure (PayloadMissing,
// RelayRevealMissing): failures are what the breaker trips on, bids are plentiful.
//
// This class is thread-safe. No method blocks but on the buffer's own mutex, held for O(1)
// amortized work per entry added, sent or removed.
//
// Data structure: one FIFO (std::deque) per class of observation, each in sequence order, and
// per class the count of entries at its front that were sent. Every removal is from the front
// of a class: a drop removes a class's oldest, an acknowledgement removes the entries up to a
// sequence number, which are a prefix of each class. The entries sent are exactly those up to
// the sequence number last handed out (batches go out in sequence order), so they too are a
// prefix of each class. NextBatch merges the unsent suffixes of the three classes by sequence
// number: a constant number of comparisons per entry. Memory: one Entry per buffered
// observation plus the deques' block overhead; no per-entry index.
class ObservationBuffer {
 public:
  struct Entry {
    uint64_t sequence = 0;
    core::Slot slot = 0;
    core::Event event;
  };

  struct Stats {
    // Entries held: sent or not, not acknowledged, not dropped.
    uint64_t buffered = 0;
    // Entries held and not handed out by NextBatch since they were added or last rewound.
    uint64_t unsent = 0;
    // Entries removed by Acknowledge.
    uint64_t acknowledged = 0;
    // Entries dropped because the buffer was full, by class.
    uint64_t dropped_bids = 0;
    uint64_t dropped_other = 0;
    uint64_t dropped_failures = 0;
    // Entries added. Always reported == acknowledged + buffered + the three dropped counts.
    uint64_t reported = 0;
  };

  // Holds at most `capacity` entries; the first one added gets sequence number
  // `first_sequence`.
  // REQUIRES: capacity > 0 (0 is taken as 1).
  ObservationBuffer(size_t capacity, uint64_t first_sequence);

  ObservationBuffer(const ObservationBuffer&) = delete;
  ObservationBuffer& operator=(const ObservationBuffer&) = delete;

  // Adds an observation about `slot` under the next sequence number, and returns that number.
  // When the buffer was full, one entry is dropped to make room, chosen among the entries
  // held and this one (so a bid added to a buffer full of failures is itself dropped; its
  // sequence number is used all the same).
  uint64_t Add(core::Slot slot, core::Event event);

  // Returns up to `max` entries not sent yet, in sequence order, and marks them sent.
  std::vector<Entry> NextBatch(size_t max);

  // Removes every entry with a sequence number up to `sequence`, sent or not, and counts them
  // acknowledged. An acknowledgement of a sequence already removed does nothing.
  void Acknowledge(uint64_t sequence);

  // Marks every entry unsent: after a reconnect, NextBatch hands out again every entry not
  // acknowledged, in order.
  void Rewind();

  // True when NextBatch would return something.
  bool HasUnsent() const;

  // The sequence number of the latest Add; first_sequence - 1 before any. After a
  // RenumberAbove that renumbered, the last number it gave.
  uint64_t LastSequence() const;

  // breakerd has handled this node's observations up to `sequence` (its NodeState): a number
  // not above it would be taken as a replay. When the entries never handed out by NextBatch
  // (since they were added; Rewind does not count) start at or below it, renumbers them all
  // above it, consecutively and in their order, and numbers on from the last of them;
  // otherwise only makes the next number at least `sequence` + 1. Entries handed out before
  // keep their numbers: breakerd may have them already. Returns how many it renumbered.
  size_t RenumberAbove(uint64_t sequence);

  Stats stats() const;

 private:
  // The classes of observation, in the order they are dropped.
  enum Class { kBid = 0, kOther = 1, kFailure = 2, kNumClasses = 3 };

  struct Queue {
    // In sequence order.
    std::deque<Entry> entries;
    // The first `sent` entries were handed out by NextBatch.
    size_t sent = 0;
    // Entries of this class dropped because the buffer was full.
    uint64_t dropped = 0;
  };

  static Class ClassOf(const core::Event& event);

  // Removes the front entry of `queue`.
  static void PopFront(Queue& queue);

  // Drops the oldest entry of the first non-empty class.
  void DropOneLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  size_t UnsentLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t capacity_;

  mutable Mutex mu_;
  uint64_t next_sequence_ ABSL_GUARDED_BY(mu_);
  // The highest sequence number NextBatch ever handed out (first_sequence - 1 before any):
  // entries above it were never sent. Batches go out in sequence order, so every entry at or
  // below it was.
  uint64_t highest_handed_out_ ABSL_GUARDED_BY(mu_);
  std::array<Queue, kNumClasses> queues_ ABSL_GUARDED_BY(mu_);
  size_t buffered_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t reported_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t acknowledged_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace breaker::client

#endif  // CLIENT_OBSERVATION_BUFFER_H_
