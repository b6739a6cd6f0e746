#include "common/clock.h"

#include <chrono>

#include "absl/time/clock.h"

namespace breaker {
namespace {

class RealClock : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  absl::Duration Monotonic() const override {
    return absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
  }
};

}  // namespace

const Clock& SystemClock() {
  static const RealClock* const clock = new RealClock();
  return *clock;
}

}  // namespace breaker
