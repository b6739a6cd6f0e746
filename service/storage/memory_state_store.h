#ifndef SERVICE_STORAGE_MEMORY_STATE_STORE_H_
#define SERVICE_STORAGE_MEMORY_STATE_STORE_H_

// An in-memory StateStore for tests, with fault injection (in the spirit of leveldb's
// SpecialEnv) and crash simulation.
//
// What a store has committed lives in a Backing, shared by every store built over it. A
// "crash" is dropping a store (or just no longer using it) and building a new one over the
// same backing: the new store sees exactly what was committed, and none of the old store's
// injected faults.
//
//   auto backing = std::make_shared<MemoryStateStore::Backing>();
//   auto store = std::make_unique<MemoryStateStore>(backing);
//   store->FailNextAppends(1, absl::UnavailableError("disk on fire"));
//   ...
//   store = std::make_unique<MemoryStateStore>(backing);  // restart

#include <cassert>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/mutex.h"
#include "service/storage/state_store.h"

namespace breaker::service {

// This class is thread-safe.
class MemoryStateStore : public StateStore {
 public:
  // The committed state: what survives a crash. This class is thread-safe.
  class Backing {
   public:
    // A copy of the committed state, to inspect without going through a store.
    StoredState Read() const {
      MutexLock lock(&mu_);
      return state_;
    }

    // A new backing holding what this one holds now: a backup of the state, which a test
    // restores by building stores over it.
    std::shared_ptr<Backing> Copy() const {
      auto copy = std::make_shared<Backing>();
      StoredState state = Read();
      MutexLock lock(&copy->mu_);
      copy->state_ = std::move(state);
      return copy;
    }

   private:
    friend class MemoryStateStore;

    mutable Mutex mu_;
    StoredState state_ ABSL_GUARDED_BY(mu_);
  };

  // A store over a new, empty backing.
  MemoryStateStore() : MemoryStateStore(std::make_shared<Backing>()) {}
  // A store over `backing`, seeing what earlier stores over it committed.
  explicit MemoryStateStore(std::shared_ptr<Backing> backing) : backing_(std::move(backing)) {}

  MemoryStateStore(const MemoryStateStore&) = delete;
  MemoryStateStore& operator=(const MemoryStateStore&) = delete;

  const std::shared_ptr<Backing>& backing() const { return backing_; }

  // --- Fault injection. Each call replaces the earlier setting for the same method. ---

  // The next `n` calls of Load return `status`.
  // REQUIRES: !status.ok()
  void FailNextLoads(int n, absl::Status status) {
    MutexLock lock(&mu_);
    SetFault(load_fault_, n, std::move(status));
  }

  // The next `n` calls of Append store nothing and return `status`.
  // REQUIRES: !status.ok()
  void FailNextAppends(int n, absl::Status status) {
    MutexLock lock(&mu_);
    SetFault(append_fault_, n, std::move(status));
  }

  // The next `n` calls of Append commit their entries and then return `status`: an error at
  // commit whose outcome the caller cannot know (see StateStore).
  // REQUIRES: !status.ok()
  void CommitThenFailNextAppends(int n, absl::Status status) {
    MutexLock lock(&mu_);
    SetFault(append_after_commit_fault_, n, std::move(status));
  }

  // The next `n` calls of WriteSnapshot change nothing and return `status`.
  // REQUIRES: !status.ok()
  void FailNextWriteSnapshots(int n, absl::Status status) {
    MutexLock lock(&mu_);
    SetFault(snapshot_fault_, n, std::move(status));
  }

  // Calls `hook` at the start of every Append, with its entries, before any fault or commit
  // and holding no lock of the store. A test blocks in it to hold an Append in flight (and
  // see how the caller batches meanwhile), or records the batches. Empty: no hook.
  void SetAppendHook(std::function<void(const std::vector<std::string>&)> hook) {
    MutexLock lock(&mu_);
    append_hook_ = std::move(hook);
  }

  // --- Counters of calls on this store, whatever their outcome. ---
  int load_calls() const {
    MutexLock lock(&mu_);
    return load_calls_;
  }
  int append_calls() const {
    MutexLock lock(&mu_);
    return append_calls_;
  }
  int write_snapshot_calls() const {
    MutexLock lock(&mu_);
    return write_snapshot_calls_;
  }

  // --- StateStore ---

  absl::StatusOr<StoredState> Load() override {
    {
      MutexLock lock(&mu_);
      ++load_calls_;
      if (absl::Status status = TakeFault(load_fault_); !status.ok()) return status;
    }
    return backing_->Read();
  }

  absl::StatusOr<uint64_t> Append(const std::vector<std::string>& entries) override {
    std::function<void(const std::vector<std::string>&)> hook;
    {
      MutexLock lock(&mu_);
      ++append_calls_;
      hook = append_hook_;
    }
    if (hook) hook(entries);
    absl::Status after_commit;
    {
      MutexLock lock(&mu_);
      if (absl::Status status = TakeFault(append_fault_); !status.ok()) return status;
      after_commit = TakeFault(append_after_commit_fault_);
    }
    uint64_t last;
    {
      MutexLock lock(&backing_->mu_);
      StoredState& state = backing_->state_;
      last = state.last_sequence();
      for (const std::string& entry : entries) state.journal.emplace_back(++last, entry);
    }
    if (!after_commit.ok()) return after_commit;
    return last;
  }

  absl::Status WriteSnapshot(absl::string_view snapshot, uint64_t through_sequence) override {
    {
      MutexLock lock(&mu_);
      ++write_snapshot_calls_;
      if (absl::Status status = TakeFault(snapshot_fault_); !status.ok()) return status;
    }
    MutexLock lock(&backing_->mu_);
    StoredState& state = backing_->state_;
    if (through_sequence > state.last_sequence() || through_sequence < state.snapshot_sequence) {
      return absl::InvalidArgumentError(absl::StrCat(
          "snapshot through sequence ", through_sequence, " refused: the current snapshot is at ",
          state.snapshot_sequence, " and the last appended entry at ", state.last_sequence()));
    }
    state.snapshot = std::string(snapshot);
    state.snapshot_sequence = through_sequence;
    auto kept = state.journal.begin();
    while (kept != state.journal.end() && kept->first <= through_sequence) ++kept;
    state.journal.erase(state.journal.begin(), kept);
    return absl::OkStatus();
  }

 private:
  struct Fault {
    int remaining = 0;
    absl::Status status;
  };

  static void SetFault(Fault& fault, int n, absl::Status status) {
    assert(!status.ok());
    fault.remaining = n;
    fault.status = std::move(status);
  }

  // Returns the fault's status and counts it down, or OK when it has none left.
  static absl::Status TakeFault(Fault& fault) {
    if (fault.remaining <= 0) return absl::OkStatus();
    --fault.remaining;
    return fault.status;
  }

  const std::shared_ptr<Backing> backing_;

  // Guards this store's fault injection and counters; never held while taking backing_->mu_.
  mutable Mutex mu_;
  Fault load_fault_ ABSL_GUARDED_BY(mu_);
  Fault append_fault_ ABSL_GUARDED_BY(mu_);
  Fault append_after_commit_fault_ ABSL_GUARDED_BY(mu_);
  Fault snapshot_fault_ ABSL_GUARDED_BY(mu_);
  std::function<void(const std::vector<std::string>&)> append_hook_ ABSL_GUARDED_BY(mu_);
  int load_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int append_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int write_snapshot_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace breaker::service

#endif  // SERVICE_STORAGE_MEMORY_STATE_STORE_H_
