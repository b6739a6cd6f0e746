#ifndef CORE_CLOCK_H_
#define CORE_CLOCK_H_

// Time as the adapters see it. The engine never reads a clock: the service and the client
// read one of these and tell the engine the slot. Tests inject a fake (tests/fake_clock.h).

#include "absl/time/time.h"

namespace breaker::core {

// Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

// The system's real-time clock.
const Clock& SystemClock();

}  // namespace breaker::core

#endif  // CORE_CLOCK_H_
