#ifndef CLIENT_BACKOFF_H_
#define CLIENT_BACKOFF_H_

// The wait before each reconnection attempt: exponential, capped, jittered so that a fleet
// that lost breakerd at the same moment does not come back at the same moment.

#include <cstdint>
#include <random>

#include "absl/time/time.h"

namespace breaker::client {

// Jittered exponential backoff. The n-th wait since the last Reset() (n from 0) is
// min(initial * multiplier^n, max), times a factor drawn uniformly from
// [1 - jitter, 1 + jitter]; it is never negative and never above max * (1 + jitter).
// The draws come from a std::mt19937_64 seeded with `seed`: the same seed gives the same waits.
//
// This class is thread-compatible: one thread (the client's connection thread) uses it.
class Backoff {
 public:
  // REQUIRES: initial >= 0, multiplier >= 1, max >= 0, 0 <= jitter <= 1. Values out of range
  // are clamped to the nearest valid one.
  Backoff(absl::Duration initial, double multiplier, absl::Duration max, double jitter,
          uint64_t seed);

  // Returns the wait before the next attempt, and grows the one after.
  absl::Duration Next();

  // Starts over from `initial`: call after a successful connection.
  void Reset();

 private:
  const absl::Duration initial_;
  const double multiplier_;
  const absl::Duration max_;
  const double jitter_;
  std::mt19937_64 rng_;
  // The wait Next() returns before jitter; at most max_.
  absl::Duration base_;
};

}  // namespace breaker::client

#endif  // CLIENT_BACKOFF_H_
