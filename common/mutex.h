#ifndef COMMON_MUTEX_H_
#define COMMON_MUTEX_H_

// The project's one mutex type, and why it is not std::mutex or absl::Mutex.
//
// Clang checks ABSL_GUARDED_BY and ABSL_EXCLUSIVE_LOCKS_REQUIRED only against a type it knows
// as a capability; libstdc++'s std::mutex is not one, so annotations on it are never checked.
// absl::Mutex is one, but Debian's Abseil is built without ThreadSanitizer's annotations, so
// TSan cannot see its synchronization and reports races that are not there. Mutex is a
// std::mutex that clang knows as a capability: `--config=tsa` (.bazelrc) checks every
// annotation, and TSan still sees every lock.
//
// Waits are written as loops over CondVar::Wait, so that the analysis sees the condition read
// under the lock:
//
//   MutexLock lock(&mu_);
//   while (queue_.empty()) changed_.Wait(&mu_);
//
// A wait bounded in time is CondVar::Await, whose condition is a lambda that says it runs
// under the lock, which the analysis then checks:
//
//   MutexLock lock(&mu_);
//   changed_.Await(&mu_, timeout, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
//     return stopping_;
//   });

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace breaker {

// Thread-safe, not reentrant.
class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  // Tells the analysis that the caller holds the lock where it cannot follow (a callback
  // called under it). Checks nothing at run time.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }

  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable over Mutex. Wakeups may be spurious: wait in a loop.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Releases `mu`, waits for a signal, and takes `mu` again.
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }

  // As Wait, for at most `timeout` (real time). Returns true when it timed out.
  bool WaitFor(Mutex* mu, absl::Duration timeout) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool timed_out =
        cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout)) == std::cv_status::timeout;
    lock.release();
    return timed_out;
  }

  // As Wait, until `deadline` (real time; InfiniteFuture waits without one). Returns true
  // when it timed out.
  bool WaitUntil(Mutex* mu, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (deadline == absl::InfiniteFuture()) {
      // The far end of the chrono range overflows in the conversion to the clock that
      // std::condition_variable waits on.
      Wait(mu);
      return false;
    }
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool timed_out =
        cv_.wait_until(lock, absl::ToChronoTime(deadline)) == std::cv_status::timeout;
    lock.release();
    return timed_out;
  }

  // As Wait, until `deadline` of std::chrono::steady_clock. Returns true when it timed out.
  bool WaitUntil(Mutex* mu, std::chrono::steady_clock::time_point deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool timed_out = cv_.wait_until(lock, deadline) == std::cv_status::timeout;
    lock.release();
    return timed_out;
  }

  // Waits until `condition()` holds or `timeout` (real time) has passed since the call,
  // whichever comes first, and returns `condition()` as it is then. Spurious wakeups neither
  // end the wait nor lengthen it, and the caller reads no clock: the timeout is measured on
  // std::chrono::steady_clock, which a change of the system's time does not move. `condition`
  // runs under `mu`. An infinite timeout (or one beyond a century) waits for the condition only.
  template <typename Condition>
  bool Await(Mutex* mu, absl::Duration timeout, Condition condition)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    bool held = true;
    if (timeout >= kUnbounded) {
      cv_.wait(lock, condition);
    } else {
      held = cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), condition);
    }
    lock.release();
    return held;
  }

  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  // Await's timeouts from here on wait without one: steady_clock's time plus a longer one
  // would overflow its 64-bit count of nanoseconds (292 years).
  static constexpr absl::Duration kUnbounded = absl::Hours(24 * 365 * 100);

  std::condition_variable cv_;
};

}  // namespace breaker

#endif  // COMMON_MUTEX_H_
