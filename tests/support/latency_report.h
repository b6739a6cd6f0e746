#ifndef TESTS_SUPPORT_LATENCY_REPORT_H_
#define TESTS_SUPPORT_LATENCY_REPORT_H_

// Latency percentiles as a benchmark's counters, in microseconds: what the benchmarks that
// compare a path through the sidecar with the direct one report.

#include <string>
#include <vector>

#include "benchmark/benchmark.h"

namespace breaker::testing {

// The value at `fraction` (0.5: the median) of `values`, by rank. REQUIRES: values not empty.
double Percentile(std::vector<double> values, double fraction);

// Counters NAME_p50_us and NAME_p99_us; nothing when `values` is empty.
void ReportPercentiles(benchmark::State& state, const std::string& name,
                       const std::vector<double>& values);

// Counters direct_pN_us, THROUGH_pN_us and added_pN_us (the second less the first) for p50 and
// p99; nothing when `direct` is empty.
void ReportAdded(benchmark::State& state, const std::vector<double>& direct,
                 const std::string& through_name, const std::vector<double>& through);

}  // namespace breaker::testing

#endif  // TESTS_SUPPORT_LATENCY_REPORT_H_
