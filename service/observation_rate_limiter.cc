#include "service/observation_rate_limiter.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace breaker::service {

void ObservationRateLimiter::SetLimits(uint32_t rate_per_second, uint32_t burst) {
  MutexLock lock(&mu_);
  rate_ = rate_per_second;
  burst_ = burst;
}

double ObservationRateLimiter::Refilled(const Bucket& bucket, absl::Duration now) const {
  const double burst = burst_;
  if (now <= bucket.updated) return std::min(burst, bucket.tokens);
  return std::min(burst, bucket.tokens + rate_ * absl::ToDoubleSeconds(now - bucket.updated));
}

int ObservationRateLimiter::Take(const std::string& node_id, int wanted, std::string* refusal) {
  if (wanted <= 0) return 0;
  const absl::Duration now = clock_.Monotonic();
  MutexLock lock(&mu_);
  if (!buckets_.contains(node_id) && buckets_.size() >= kMaxBuckets) {
    for (auto it = buckets_.begin(); it != buckets_.end();) {
      if (Refilled(it->second, now) >= burst_) {
        buckets_.erase(it++);
      } else {
        ++it;
      }
    }
    if (buckets_.size() >= kMaxBuckets) buckets_.clear();
  }
  auto [it, inserted] = buckets_.try_emplace(node_id, Bucket{static_cast<double>(burst_), now});
  Bucket& bucket = it->second;
  bucket.tokens = Refilled(bucket, now);
  bucket.updated = std::max(bucket.updated, now);
  const int taken = static_cast<int>(std::min<double>(wanted, std::floor(bucket.tokens)));
  bucket.tokens -= taken;
  if (taken < wanted) {
    *refusal =
        absl::StrCat("node ", node_id, " is over its observation rate (node_observation_rate ",
                     rate_, " per second, node_observation_burst ", burst_,
                     "); not applied: send fewer observations, or raise those limits in "
                     "breakerd's configuration");
  }
  return taken;
}

}  // namespace breaker::service
