#include "tests/support/latency_report.h"

#include <algorithm>

namespace breaker::testing {

double Percentile(std::vector<double> values, double fraction) {
  std::sort(values.begin(), values.end());
  const size_t rank = std::min(values.size() - 1, static_cast<size_t>(fraction * values.size()));
  return values[rank];
}

void ReportPercentiles(benchmark::State& state, const std::string& name,
                       const std::vector<double>& values) {
  if (values.empty()) return;
  state.counters[name + "_p50_us"] = Percentile(values, 0.5);
  state.counters[name + "_p99_us"] = Percentile(values, 0.99);
}

void ReportAdded(benchmark::State& state, const std::vector<double>& direct,
                 const std::string& through_name, const std::vector<double>& through) {
  if (direct.empty() || through.empty()) return;
  for (const auto& [fraction, suffix] : {std::make_pair(0.5, "_p50_us"), {0.99, "_p99_us"}}) {
    const double d = Percentile(direct, fraction);
    const double t = Percentile(through, fraction);
    state.counters[std::string("direct") + suffix] = d;
    state.counters[through_name + suffix] = t;
    state.counters[std::string("added") + suffix] = t - d;
  }
}

}  // namespace breaker::testing
