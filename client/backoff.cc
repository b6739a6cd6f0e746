#include "client/backoff.h"

#include <algorithm>

namespace breaker::client {

Backoff::Backoff(absl::Duration initial, double multiplier, absl::Duration max, double jitter,
                 uint64_t seed)
    : initial_(std::max(initial, absl::ZeroDuration())),
      // `!(x >= 1)` also catches NaN.
      multiplier_(!(multiplier >= 1) ? 1 : multiplier),
      max_(std::max(max, absl::ZeroDuration())),
      jitter_(!(jitter >= 0) ? 0 : std::min(jitter, 1.0)),
      rng_(seed),
      base_(std::min(initial_, max_)) {}

absl::Duration Backoff::Next() {
  const absl::Duration base = base_;
  // Once at the cap the base stays there: no overflow however many attempts fail.
  base_ = std::min(base_ * multiplier_, max_);

  // A factor in [1 - jitter, 1 + jitter].
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  const double factor = 1.0 + jitter_ * (2.0 * u - 1.0);
  // Clamped so that rounding cannot break the documented bounds.
  return std::clamp(base * factor, absl::ZeroDuration(), max_ * (1.0 + jitter_));
}

void Backoff::Reset() { base_ = std::min(initial_, max_); }

}  // namespace breaker::client
