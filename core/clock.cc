#include "core/clock.h"

#include "absl/time/clock.h"

namespace breaker::core {
namespace {

class RealClock : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

}  // namespace

const Clock& SystemClock() {
  static const RealClock* const clock = new RealClock();
  return *clock;
}

}  // namespace breaker::core
