#ifndef SERVICE_OBSERVATION_RATE_LIMITER_H_
#define SERVICE_OBSERVATION_RATE_LIMITER_H_

// Each node's allowance of observations: a token bucket per node id, refilled at
// node_observation_rate per second up to node_observation_burst, by the monotonic reading of
// an injected clock (a wall clock set back would refill nothing, or too much).
//
// The limit applies before the journal, never in replay: it depends on the clock, which
// applying the journal must not; and what it refuses costs no disk write.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"

namespace breaker::service {

// Thread-safe.
class ObservationRateLimiter {
 public:
  // Buckets kept at most. Node ids are the nodes' to choose (a Report may name any), so the
  // memory is bounded: full buckets are forgotten first (a full bucket is the same as none),
  // then, if that is not enough, all of them, at the price of a fresh burst for every node.
  static constexpr size_t kMaxBuckets = 65536;

  // REQUIRES: `clock` outlives the limiter.
  explicit ObservationRateLimiter(const Clock& clock) : clock_(clock) {}

  // Takes the configuration's node_observation_rate and node_observation_burst. A node's
  // bucket starts full.
  void SetLimits(uint32_t rate_per_second, uint32_t burst);

  // Takes up to `wanted` of `node_id`'s tokens and returns how many it got. When fewer, sets
  // `refusal` to what the refused observations are told: the limits, and what to do.
  int Take(const std::string& node_id, int wanted, std::string* refusal);

 private:
  struct Bucket {
    double tokens = 0;
    absl::Duration updated;
  };
  double Refilled(const Bucket& bucket, absl::Duration now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock& clock_;
  mutable Mutex mu_;
  uint32_t rate_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t burst_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, Bucket> buckets_ ABSL_GUARDED_BY(mu_);
};

}  // namespace breaker::service

#endif  // SERVICE_OBSERVATION_RATE_LIMITER_H_
