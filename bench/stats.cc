#include "bench/stats.h"

#include <algorithm>
#include <cmath>

namespace breaker::bench {

double Percentile(std::vector<double> samples, double p) {
  if (samples.empty()) return 0;
  const double rank = std::ceil(p / 100.0 * static_cast<double>(samples.size()));
  const size_t index = static_cast<size_t>(std::clamp(rank, 1.0, double(samples.size()))) - 1;
  std::nth_element(samples.begin(), samples.begin() + index, samples.end());
  return samples[index];
}

Summary Summarize(const std::vector<double>& samples) {
  Summary summary;
  summary.count = samples.size();
  if (samples.empty()) return summary;
  summary.p50 = Percentile(samples, 50);
  summary.p99 = Percentile(samples, 99);
  summary.max = *std::max_element(samples.begin(), samples.end());
  return summary;
}

}  // namespace breaker::bench
