#include "service/storage_supervisor.h"

#include <algorithm>
#include <utility>

namespace breaker::service {

StorageSupervisor::StorageSupervisor(const Clock& clock, std::function<void()> schedule_changed)
    : clock_(clock), schedule_changed_(std::move(schedule_changed)) {}

absl::Status StorageSupervisor::status() const {
  MutexLock lock(&mu_);
  return fault_;
}

void StorageSupervisor::Fail(const absl::Status& fault) {
  bool was_writable;
  {
    MutexLock lock(&mu_);
    was_writable = fault_.ok();
    fault_ = fault;
    attempt_under_way_ = false;
    wait_ = kFirstAttempt;
    ScheduleLocked();
  }
  if (was_writable) NotifyWatcher();
  if (schedule_changed_) schedule_changed_();
}

bool StorageSupervisor::TakeDueAttempt() {
  MutexLock lock(&mu_);
  if (fault_.ok() || attempt_under_way_ || clock_.Now() < next_attempt_) return false;
  attempt_under_way_ = true;
  return true;
}

absl::Duration StorageSupervisor::AttemptDone(const absl::Status& result) {
  absl::Duration wait;
  {
    MutexLock lock(&mu_);
    attempt_under_way_ = false;
    if (result.ok()) {
      fault_ = absl::OkStatus();
      next_attempt_ = absl::InfiniteFuture();
    } else {
      fault_ = result;
      wait = ScheduleLocked();
    }
  }
  if (result.ok()) NotifyWatcher();
  if (schedule_changed_) schedule_changed_();
  return wait;
}

absl::Time StorageSupervisor::next_attempt() const {
  MutexLock lock(&mu_);
  return attempt_under_way_ ? absl::InfiniteFuture() : next_attempt_;
}

void StorageSupervisor::Watch(std::function<void(bool writable)> watcher) {
  MutexLock lock(&watcher_mu_);
  watcher_ = std::move(watcher);
  if (watcher_) watcher_(status().ok());
}

absl::Duration StorageSupervisor::ScheduleLocked() {
  const absl::Duration wait = wait_;
  next_attempt_ = clock_.Now() + wait;
  wait_ = std::min(2 * wait, kMaxAttempt);
  return wait;
}

void StorageSupervisor::NotifyWatcher() {
  // The state now, not the one that caused the call: a watcher set meanwhile has heard it.
  MutexLock lock(&watcher_mu_);
  if (watcher_) watcher_(status().ok());
}

}  // namespace breaker::service
