#include "service/journal_writer.h"

#include <iterator>
#include <utility>

#include "glog/logging.h"

namespace breaker::service {

JournalWriter::JournalWriter(Options options)
    : store_(*options.store),
      supervisor_(*options.supervisor),
      sink_(*options.sink),
      metrics_(*options.metrics),
      clock_(*options.clock),
      snapshot_every_entries_(options.snapshot_every_entries),
      snapshot_every_bytes_(options.snapshot_every_bytes),
      snapshot_every_time_(options.snapshot_every_time),
      entries_since_snapshot_(options.stored_entries),
      bytes_since_snapshot_(options.stored_bytes),
      last_snapshot_at_(clock_.Monotonic()) {
  appender_ = std::thread([this] { AppenderLoop(); });
  applier_ = std::thread([this] { ApplierLoop(); });
}

JournalWriter::~JournalWriter() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    work_.Signal();
    changed_.SignalAll();
  }
  appender_.join();
  applier_.join();
}

void JournalWriter::Submit(std::unique_ptr<JournalChange> change) {
  // A fault entered after this check refuses the change at the start of the appender's round.
  if (absl::Status fault = supervisor_.status(); !fault.ok()) {
    JournalChanges refused;
    refused.push_back(std::move(change));
    sink_.Refuse(refused, fault, /*written=*/false);
    return;
  }
  MutexLock lock(&mu_);
  queue_.push_back(std::move(change));
  work_.Signal();
}

void JournalWriter::RequestRecovery() {
  MutexLock lock(&mu_);
  recovery_requested_ = true;
  work_.Signal();
}

void JournalWriter::Sync() {
  MutexLock lock(&mu_);
  while (!queue_.empty() || recovery_requested_ || appending_ || stored_.has_value() || applying_) {
    changed_.Wait(&mu_);
  }
}

void JournalWriter::TakeRoundLocked(JournalChanges& changes) {
  size_t taken = 0;
  uint64_t bytes = 0;
  for (; taken < queue_.size(); ++taken) {
    const uint64_t next = queue_[taken]->entry.size();
    // At least one: an entry beyond the limit alone gets the store's own refusal.
    if (taken > 0 && !store_.FitsOneAppend(taken + 1, bytes + next)) break;
    bytes += next;
  }
  if (taken == queue_.size()) {
    changes.swap(queue_);
    return;
  }
  changes.assign(std::make_move_iterator(queue_.begin()),
                 std::make_move_iterator(queue_.begin() + taken));
  queue_.erase(queue_.begin(), queue_.begin() + taken);
}

void JournalWriter::WaitForApplier() {
  MutexLock lock(&mu_);
  while (stored_.has_value() || applying_) changed_.Wait(&mu_);
}

// ---------------------------------------------------------------------------------------------
// The appender

void JournalWriter::AppenderLoop() {
  while (true) {
    JournalChanges changes;
    bool recover;
    {
      MutexLock lock(&mu_);
      while (queue_.empty() && !recovery_requested_ && !stopping_) work_.Wait(&mu_);
      if (queue_.empty() && !recovery_requested_) {
        // Stopping, and everything submitted is stored: the applier finishes the rest.
        appender_done_ = true;
        changed_.SignalAll();
        return;
      }
      TakeRoundLocked(changes);
      recover = recovery_requested_;
      recovery_requested_ = false;
      appending_ = true;
    }
    // An attempt to store again is no change: it runs first, and the round's changes then go
    // to the store if it works.
    if (recover) {
      WaitForApplier();
      sink_.Recover();
    }
    if (!changes.empty()) AppendRound(std::move(changes));
    MutexLock lock(&mu_);
    appending_ = false;
    changed_.SignalAll();
  }
}

void JournalWriter::AppendRound(JournalChanges changes) {
  // Queued before the store failed, or while an attempt to store again failed.
  if (absl::Status fault = supervisor_.status(); !fault.ok()) {
    WaitForApplier();
    sink_.Refuse(changes, fault, /*written=*/false);
    return;
  }
  Round round;
  std::vector<std::string> entries;
  entries.reserve(changes.size());
  for (const auto& change : changes) {
    round.bytes += change->entry.size();
    entries.push_back(std::move(change->entry));
  }
  absl::StatusOr<uint64_t> last_sequence;
  {
    StoreTimer timer(metrics_, clock_, StoreOperation::kAppend);
    last_sequence = store_.Append(entries);
  }
  if (!last_sequence.ok()) {
    // Nothing of this round applied, nothing acknowledged: memory holds only what the store
    // surely holds. Whether the write landed, the recovery finds out. The rounds before are
    // applied first, so that the fault comes after every answer they give.
    WaitForApplier();
    supervisor_.Fail(last_sequence.status());
    LOG(ERROR) << "the state store failed to append; breakerd refuses observations and changes "
               << "(health NOT_SERVING) until it takes writes again, trying again in "
               << StorageSupervisor::kFirstAttempt << ": " << last_sequence.status();
    sink_.Refuse(changes, last_sequence.status(), /*written=*/true);
    return;
  }
  round.changes = std::move(changes);
  round.last_sequence = *last_sequence;
  MutexLock lock(&mu_);
  while (stored_.has_value()) changed_.Wait(&mu_);
  stored_ = std::move(round);
  changed_.SignalAll();
}

// ---------------------------------------------------------------------------------------------
// The applier

void JournalWriter::ApplierLoop() {
  while (true) {
    Round round;
    {
      MutexLock lock(&mu_);
      while (!stored_.has_value() && !appender_done_) changed_.Wait(&mu_);
      if (!stored_.has_value()) return;
      round = *std::move(stored_);
      stored_.reset();
      applying_ = true;
      changed_.SignalAll();  // the appender may hand over the next round
    }
    const bool sink_wants_snapshot = sink_.Apply(round.changes, round.last_sequence);
    entries_since_snapshot_ += round.changes.size();
    bytes_since_snapshot_ += round.bytes;
    const absl::Duration now = clock_.Monotonic();
    if (sink_wants_snapshot || entries_since_snapshot_ >= snapshot_every_entries_ ||
        bytes_since_snapshot_ >= snapshot_every_bytes_ ||
        now - last_snapshot_at_ >= snapshot_every_time_) {
      entries_since_snapshot_ = 0;
      bytes_since_snapshot_ = 0;
      last_snapshot_at_ = now;
      if (absl::Status status = sink_.WriteSnapshot(); !status.ok()) {
        LOG(ERROR) << "snapshot failed (the journal still holds every change): " << status;
      }
    }
    // The round's changes are freed here, before the applier says it is idle.
    round.changes.clear();
    MutexLock lock(&mu_);
    applying_ = false;
    changed_.SignalAll();
  }
}

}  // namespace breaker::service
