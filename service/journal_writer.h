#ifndef SERVICE_JOURNAL_WRITER_H_
#define SERVICE_JOURNAL_WRITER_H_

// Makes changes durable in the order they were submitted, many in one write (group commit),
// and hands each write's changes on to be applied while the next write goes to the store.
//
// Two threads. The appender takes every change queued since its last round (as many as the
// store takes in one write: StateStore::FitsOneAppend), appends their journal entries to the
// store in one durable write, and passes the round to the applier. The
// applier applies the rounds in order (Sink::Apply, which answers their submitters) and writes
// a snapshot when one is due. So appending and syncing round k+1 overlaps applying and
// acknowledging round k, and nothing is applied, hence nothing acknowledged, before the store
// holds it. At most one round waits for the applier; the appender then waits too, which keeps
// the journal's order the applier's and bounds what is held in memory.
//
// Storage faults. An append that fails is reported to the supervisor once the rounds before it
// are applied, and its changes are refused (Sink::Refuse, written=true: the write may have
// landed). While the supervisor holds a fault, changes are refused at once (written=false).
// RequestRecovery runs Sink::Recover on the appender thread with the applier idle, so that it
// may read the store and bring the state up to it.
//
// This class is thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "service/metrics_sink.h"
#include "service/storage/state_store.h"
#include "service/storage_supervisor.h"

namespace breaker::service {

// A change for the journal: its entry, serialized by the submitter on its own thread.
// Owners derive their work from it (what to answer, and how).
struct JournalChange {
  virtual ~JournalChange() = default;
  std::string entry;
};

using JournalChanges = std::vector<std::unique_ptr<JournalChange>>;

class JournalWriter {
 public:
  // What the journal changes: applies what is durable, answers what is refused.
  class Sink {
   public:
    virtual ~Sink() = default;
    // Applies `changes`, stored as the journal entries up to `last_sequence`, in order, and
    // answers their submitters. Returns whether the sink wants a snapshot now (beside the
    // writer's own cadence). On the applier thread, one round at a time.
    virtual bool Apply(const JournalChanges& changes, uint64_t last_sequence) = 0;
    // Answers the submitters of `changes`, applying none: the store failed with `fault`.
    // `written`: they were in the write that failed, which may have landed after all.
    virtual void Refuse(const JournalChanges& changes, const absl::Status& fault, bool written) = 0;
    // Stores a snapshot of everything applied. On the applier thread.
    virtual absl::Status WriteSnapshot() = 0;
    // Tries the store again after a fault (see RequestRecovery). On the appender thread.
    virtual void Recover() = 0;
  };

  struct Options {
    // REQUIRES for each: not null, outlives the writer.
    StateStore* store = nullptr;
    StorageSupervisor* supervisor = nullptr;
    Sink* sink = nullptr;
    MetricsSink* metrics = nullptr;
    const Clock* clock = nullptr;
    // A snapshot after this many entries or bytes of entries since the last one, or this
    // long after it once an entry waits, whichever comes first (see Fleet::Options).
    uint64_t snapshot_every_entries = 4096;
    uint64_t snapshot_every_bytes = 16 << 20;
    absl::Duration snapshot_every_time = absl::Minutes(1);
    // The entries, and their bytes, that the store holds after its snapshot already (a
    // restart's journal): they count toward the first snapshot, so that what a restart
    // replays is bounded whatever the processes before did, killed before their snapshot.
    uint64_t stored_entries = 0;
    uint64_t stored_bytes = 0;
  };

  // Starts the two threads.
  explicit JournalWriter(Options options);
  // Appends, applies and answers everything submitted, then stops the threads.
  ~JournalWriter();

  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // Queues `change` for the next round, or refuses it at once while the store fails.
  void Submit(std::unique_ptr<JournalChange> change);

  // Makes the appender run Sink::Recover before its next round, once the rounds before are
  // applied. Requests made before it runs are one.
  void RequestRecovery();

  // Blocks until everything submitted (or requested) before the call is done. It waits for
  // both threads to be idle, so under steady load it also waits for later work: for tests and
  // shutdown, not for a serving path.
  void Sync();

 private:
  struct Round {
    JournalChanges changes;
    uint64_t last_sequence = 0;
    uint64_t bytes = 0;
  };

  void AppenderLoop();
  // Moves into `changes` the longest prefix of the queue that the store takes in one Append
  // (at least one change).
  void TakeRoundLocked(JournalChanges& changes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends `changes` and hands them to the applier; or refuses them when the store fails.
  void AppendRound(JournalChanges changes);
  void ApplierLoop();
  // Waits until every round handed to the applier is applied.
  void WaitForApplier();

  StateStore& store_;
  StorageSupervisor& supervisor_;
  Sink& sink_;
  MetricsSink& metrics_;
  const Clock& clock_;
  const uint64_t snapshot_every_entries_;
  const uint64_t snapshot_every_bytes_;
  const absl::Duration snapshot_every_time_;

  Mutex mu_;
  // Signalled when the appender has work: a submission, a request to recover, or stopping.
  // Only the appender waits on it, so that a submission wakes no other thread.
  CondVar work_;
  // Signalled at every other change of the fields below.
  CondVar changed_;
  JournalChanges queue_ ABSL_GUARDED_BY(mu_);
  bool recovery_requested_ ABSL_GUARDED_BY(mu_) = false;
  // The appender took work and has not finished it.
  bool appending_ ABSL_GUARDED_BY(mu_) = false;
  // The round stored and waiting for the applier.
  std::optional<Round> stored_ ABSL_GUARDED_BY(mu_);
  // The applier took a round and has not finished it.
  bool applying_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // The appender has stopped: the applier stops once stored_ is applied.
  bool appender_done_ ABSL_GUARDED_BY(mu_) = false;

  // Since the last snapshot; the applier's alone.
  uint64_t entries_since_snapshot_ = 0;
  uint64_t bytes_since_snapshot_ = 0;
  // When the last snapshot was written (or the writer started), by the clock's monotonic
  // reading.
  absl::Duration last_snapshot_at_;

  std::thread appender_;
  std::thread applier_;
};

}  // namespace breaker::service

#endif  // SERVICE_JOURNAL_WRITER_H_
