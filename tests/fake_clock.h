#ifndef TESTS_FAKE_CLOCK_H_
#define TESTS_FAKE_CLOCK_H_

#include <mutex>

#include "absl/time/time.h"
#include "core/clock.h"

namespace breaker::testing {

// A clock that moves only when told to. This class is thread-safe.
class FakeClock : public core::Clock {
 public:
  explicit FakeClock(absl::Time start) : now_(start) {}

  absl::Time Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }

  void Set(absl::Time now) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ = now;
  }

  void Advance(absl::Duration duration) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += duration;
  }

 private:
  // std::mutex, not absl::Mutex: ThreadSanitizer cannot see into the system's Abseil.
  mutable std::mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace breaker::testing

#endif  // TESTS_FAKE_CLOCK_H_
