#ifndef BENCH_STATS_H_
#define BENCH_STATS_H_

// Order statistics of measured samples.

#include <cstddef>
#include <vector>

namespace breaker::bench {

struct Summary {
  size_t count = 0;
  double p50 = 0;
  double p99 = 0;
  double max = 0;
};

// Nearest-rank percentile (`p` in [0, 100]) of `samples`; 0 when there are none. Nearest rank,
// not interpolation: every figure reported is a latency some node actually saw.
double Percentile(std::vector<double> samples, double p);

Summary Summarize(const std::vector<double>& samples);

}  // namespace breaker::bench

#endif  // BENCH_STATS_H_
