#ifndef COMMON_CLOCK_H_
#define COMMON_CLOCK_H_

// Time as the adapters see it. The engine (//core) never reads a clock: the service, the client
// and the sidecar read one of these and tell the engine the slot. Tests inject a fake
// (common/fake_clock.h).

#include "absl/time/time.h"

namespace breaker {

// Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
  // Time since an arbitrary start, never going back: for rates and durations, which a wall
  // clock that is set back would corrupt. The default, right for a clock that moves only when
  // told (a test's), is Now() since the Unix epoch.
  virtual absl::Duration Monotonic() const { return Now() - absl::UnixEpoch(); }
};

// The system's clocks: real time, and std::chrono::steady_clock for Monotonic().
const Clock& SystemClock();

}  // namespace breaker

#endif  // COMMON_CLOCK_H_
