#ifndef BENCH_REPORT_H_
#define BENCH_REPORT_H_

// The tables: every figure of breakerd beside the baseline's from the same run, and their
// ratio, in Markdown so that BENCHMARKS.md can hold them as printed.

#include <ostream>
#include <vector>

#include "bench/phase.h"

namespace breaker::bench {

// breakerd and the baseline at one fleet size, in one round.
struct Comparison {
  int nodes = 0;
  int round = 1;
  PhaseResult breakerd;
  PhaseResult baseline;
};

// Cores, CPU model and load average: what the figures depend on.
void PrintMachine(std::ostream& out);

void PrintTables(const std::vector<Comparison>& comparisons, const PhaseOptions& options,
                 std::ostream& out);

// The goals, each met or missed, for the fleet sizes they name that were measured.
void PrintGoals(const std::vector<Comparison>& comparisons, std::ostream& out);

}  // namespace breaker::bench

#endif  // BENCH_REPORT_H_
