#ifndef CORE_CLOCK_H_
#define CORE_CLOCK_H_

// Time as the adapters see it. The engine never reads a clock: the service and the client
// read one of these and tell the engine the slot. Tests inject a fake (tests/support/fake_clock.h).

#include "absl/time/time.h"

namespace breaker::core {

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

}  // namespace breaker::core

#endif  // CORE_CLOCK_H_
