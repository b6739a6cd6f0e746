#ifndef COMMON_FAKE_CLOCK_H_
#define COMMON_FAKE_CLOCK_H_

// The clock that tests inject wherever the project reads time (common/clock.h).

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"

namespace breaker::testing {

// A clock that moves only when told to. This class is thread-safe.
class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start) : now_(start) {}

  absl::Time Now() const override {
    MutexLock lock(&mu_);
    return now_;
  }

  void Set(absl::Time now) {
    MutexLock lock(&mu_);
    now_ = now;
  }

  void Advance(absl::Duration duration) {
    MutexLock lock(&mu_);
    now_ += duration;
  }

 private:
  mutable Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace breaker::testing

#endif  // COMMON_FAKE_CLOCK_H_
