#ifndef BENCH_REPORT_H_
#define BENCH_REPORT_H_

// The tables: every figure of breakerd beside the baseline's from the same run, and their
// ratio, in Markdown so that BENCHMARKS.md can hold them as printed.

#include <ostream>
#include <vector>

#include "bench/failover.h"
#include "bench/phase.h"
#include "bench/target.h"

namespace breaker::bench {

// breakerd (on one store) and the baseline at one fleet size, in one round.
struct Comparison {
  int nodes = 0;
  int round = 1;
  Store store = Store::kSqlite;
  PhaseResult breakerd;
  PhaseResult baseline;
};

// Cores, CPU model and load average: what the figures depend on.
void PrintMachine(std::ostream& out);

void PrintTables(const std::vector<Comparison>& comparisons, const PhaseOptions& options,
                 std::ostream& out);

// Time to failover on etcd, per fleet size measured.
void PrintFailover(const std::vector<FailoverResult>& results, std::ostream& out);

// The goals, each met or missed, for the fleet sizes they name that were measured.
void PrintGoals(const std::vector<Comparison>& comparisons, std::ostream& out);

}  // namespace breaker::bench

#endif  // BENCH_REPORT_H_
