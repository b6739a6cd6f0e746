#ifndef SERVICE_STORAGE_SUPERVISOR_H_
#define SERVICE_STORAGE_SUPERVISOR_H_

// Whether the state store takes writes, and when to try it again after it failed.
//
// The journal writer reports an append that fails (Fail). From then on the fleet refuses
// changes, and attempts to store again come due at times growing from kFirstAttempt to
// kMaxAttempt, by the injected clock: the fleet's ticker asks TakeDueAttempt() and makes the
// attempt, which ends with AttemptDone. The supervisor holds no store and runs nothing itself:
// it keeps the fault and the schedule, and tells a watcher whether the store takes writes.
//
// This class is thread-safe. Lock order: watcher_mu_ before mu_ (the watcher is called under
// watcher_mu_, and reads the status under mu_).

#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"

namespace breaker::service {

class StorageSupervisor {
 public:
  // First and longest waits between attempts to store again after a fault.
  static constexpr absl::Duration kFirstAttempt = absl::Seconds(1);
  static constexpr absl::Duration kMaxAttempt = absl::Seconds(30);

  // `schedule_changed` runs, with no lock of the supervisor held, whenever next_attempt()
  // changes, so that a waiting ticker can look again. REQUIRES: `clock` outlives this.
  StorageSupervisor(const Clock& clock, std::function<void()> schedule_changed);

  // OK while the store takes writes; otherwise the latest failure.
  absl::Status status() const;

  // A write failed with `fault` (not OK): the store counts as failing, and the first
  // attempt to store again comes due kFirstAttempt from now. The watcher hears it.
  void Fail(const absl::Status& fault);

  // Returns true, once per attempt, when the store fails, an attempt is due by the clock and
  // none is under way: the caller then makes it, and reports its end with AttemptDone.
  bool TakeDueAttempt();

  // The attempt taken by TakeDueAttempt ended with `result`. OK: the store takes writes again
  // (the watcher hears it). Otherwise the fault is `result` and the next attempt comes due
  // after twice the last wait, at most kMaxAttempt; returns that wait (for the log).
  absl::Duration AttemptDone(const absl::Status& result);

  // When the next attempt comes due: InfiniteFuture while the store takes writes or an
  // attempt is under way.
  absl::Time next_attempt() const;

  // `watcher` hears whether the store takes writes: at once, then at every change. It must
  // not block, nor call Watch. Replaces the previous watcher; after Watch returns, that one is
  // not called any more. Null: none.
  void Watch(std::function<void(bool writable)> watcher);

 private:
  // Sets the time of the next attempt from the current wait, and doubles the wait after it.
  absl::Duration ScheduleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NotifyWatcher();

  const Clock& clock_;
  const std::function<void()> schedule_changed_;

  mutable Mutex mu_;
  absl::Status fault_ ABSL_GUARDED_BY(mu_);
  absl::Time next_attempt_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  absl::Duration wait_ ABSL_GUARDED_BY(mu_) = kFirstAttempt;
  bool attempt_under_way_ ABSL_GUARDED_BY(mu_) = false;

  Mutex watcher_mu_;
  std::function<void(bool writable)> watcher_ ABSL_GUARDED_BY(watcher_mu_);
};

}  // namespace breaker::service

#endif  // SERVICE_STORAGE_SUPERVISOR_H_
