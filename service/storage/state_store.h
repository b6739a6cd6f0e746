#ifndef SERVICE_STORAGE_STATE_STORE_H_
#define SERVICE_STORAGE_STATE_STORE_H_

// Durable storage of breakerd's state: the latest snapshot plus a journal of the changes made
// since. The store treats both as opaque bytes; the service encodes them. A restart loads the
// snapshot and replays the journal after it.
//
// The guarantee the service builds on: once Append or WriteSnapshot returns OK, what it stored
// survives a crash of the process (SIGKILL) and of the machine (power loss). So the service
// acknowledges a change to a client only after the Append that holds it has returned OK, and
// it batches the changes of many requests into one Append (group commit).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace breaker::service {

// What a store holds: the latest snapshot and the journal entries after it.
struct StoredState {
  // nullopt: no snapshot was ever written (a present, empty snapshot is a valid state).
  std::optional<std::string> snapshot;
  // The last journal sequence folded into the snapshot; 0 when there is no snapshot or it
  // folds in nothing.
  uint64_t snapshot_sequence = 0;
  // (sequence, entry) in ascending order of sequence, with no gaps, the first being
  // snapshot_sequence + 1.
  std::vector<std::pair<uint64_t, std::string>> journal;

  // The sequence of the last appended entry (0 when nothing was ever appended).
  uint64_t last_sequence() const {
    return journal.empty() ? snapshot_sequence : journal.back().first;
  }

  friend bool operator==(const StoredState& a, const StoredState& b) {
    return a.snapshot == b.snapshot && a.snapshot_sequence == b.snapshot_sequence &&
           a.journal == b.journal;
  }
  friend bool operator!=(const StoredState& a, const StoredState& b) { return !(a == b); }
};

// A snapshot and a journal, stored durably. Implementations are thread-safe: calls from
// several threads are serialized, each taking effect atomically.
//
// Storage errors, common to every method (the message names the file and the cause):
//   UNAVAILABLE  the storage failed (I/O error, disk full, the database held by another
//                process beyond the busy timeout). Retrying later may succeed. For Append and
//                WriteSnapshot the outcome can be unknown: an I/O error at commit may leave
//                the change stored after all, to reappear at the next Load. So never
//                acknowledge what a failed call held, and do not change memory state on the
//                assumption that the call failed: take no further changes until a Load shows
//                what the store holds, and bring memory up to it (breakerd's Fleet applies
//                what landed, as a restart would replay it, then proves the store writes).
//   DATA_LOSS    the stored state is corrupt or missing parts. Retrying will not help: an
//                operator restores the database from a backup or moves it away (starting
//                from empty state); the message says which file.
//   INTERNAL     an unexpected storage error (a bug). Stop.
class StateStore {
 public:
  virtual ~StateStore() = default;

  // Returns the stored snapshot and the journal after it.
  // Returns the storage errors above; DATA_LOSS also when the journal has a gap.
  virtual absl::StatusOr<StoredState> Load() = 0;

  // Appends `entries` in order, durably, in one transaction: all or nothing. The first gets
  // the sequence after the last one appended (1 for the first ever), the next one more, and
  // so on. Returns the sequence of the last entry; for no entries, stores nothing and returns
  // the sequence of the last entry appended before (0 if none).
  // Returns the storage errors above, and INVALID_ARGUMENT when an entry is larger than the
  // storage allows (about 1 GB for SQLite).
  virtual absl::StatusOr<uint64_t> Append(const std::vector<std::string>& entries) = 0;

  // Whether one Append of `entries` entries of `bytes` bytes in all is within the storage's
  // size limit, so that a caller grouping entries splits its groups where it is not. Pure and
  // cheap: called for every entry grouped. The default: always (SQLite's limit is per entry).
  virtual bool FitsOneAppend(size_t /*entries*/, uint64_t /*bytes*/) const { return true; }

  // Atomically replaces the snapshot with `snapshot`, which folds in every entry up to and
  // including `through_sequence`, and drops those entries from the journal. Sequences go on
  // from the last one appended, even when the journal becomes empty.
  // Returns INVALID_ARGUMENT, changing nothing, when `through_sequence` is beyond the last
  // appended entry or below the current snapshot's sequence (equal replaces it); otherwise
  // the storage errors above.
  virtual absl::Status WriteSnapshot(absl::string_view snapshot, uint64_t through_sequence) = 0;
};

}  // namespace breaker::service

#endif  // SERVICE_STORAGE_STATE_STORE_H_
