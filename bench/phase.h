#ifndef BENCH_PHASE_H_
#define BENCH_PHASE_H_

// One target (breakerd or the baseline) measured at one fleet size: start it, connect the
// nodes (memory), fan out policies, restart it (reconnect storm), ingest observations, stop.

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bench/server_messages.h"
#include "bench/stats.h"
#include "bench/target.h"

namespace breaker::bench {

struct PhaseOptions {
  int nodes = 100;
  int streams_per_channel = 1;
  // Fan-out trials, each one decisive failure.
  int trials = 20;
  // Ingestion: senders, observations per batch, warm-up and measured time.
  int ingest_senders = 64;
  int batch = 500;
  absl::Duration ingest_warmup = absl::Seconds(2);
  absl::Duration ingest_duration = absl::Seconds(10);
  bool storm = true;
  // A second storm, after the ingestion test: SIGKILL, so that breakerd's restart replays the
  // test's journal, as after a crash.
  bool crash_storm = false;
};

struct MemoryResult {
  double idle_kib = 0;       // before any node connects
  double connected_kib = 0;  // with every node connected, holding the policy
  double connect_seconds = 0;
  double KiBPerNode(int nodes) const { return (connected_kib - idle_kib) / nodes; }
};

struct FanOutResult {
  int trials = 0;
  // Nodes that did not get a trial's policy within the timeout, over all trials.
  int missed = 0;
  // One per node per trial, ms.
  Summary latency_ms;
  // The median over trials of each trial's p99: one late trial (a slow fsync, a busy machine)
  // moves it no more than one early one.
  double median_trial_p99_ms = 0;
};

struct IngestResult {
  int senders = 0;
  double observations_per_second = 0;
  double cpu_seconds_per_million = 0;
  // The harness's own, for scale: it shares the machine with the server.
  double harness_cpu_seconds_per_million = 0;
  Summary batch_round_trip_ms;
  // Refused observations (at least): not applied, so not a measure of the full path. Expected 0.
  uint64_t refused = 0;
};

struct StormResult {
  // SIGTERM to the new process's "listening".
  double restart_seconds = 0;
  // SIGTERM to the last node back with the current policy.
  double all_back_seconds = 0;
  // Per node, from SIGTERM.
  Summary back_seconds;
  int missed = 0;
  // [k]: nodes back on their (k+1)-th attempt after the SIGTERM, having waited k backoffs
  // after the first.
  std::vector<int> back_by_attempt;
  // Nodes back on attempt `from` (1-based) or a later one.
  int BackFromAttempt(size_t from) const {
    int count = 0;
    for (size_t k = from - 1; k < back_by_attempt.size(); ++k) count += back_by_attempt[k];
    return count;
  }
};

struct PhaseResult {
  int nodes = 0;
  MemoryResult memory;
  FanOutResult fan_out;
  IngestResult ingest;
  std::optional<StormResult> storm;
  std::optional<StormResult> crash_storm;
  // SIGTERM to exit at the end, right after the ingestion test: breakerd then folds the whole
  // journal of the test into its final snapshot.
  double stop_after_ingest_seconds = 0;
  // What node 0 received (breakerd's messages, for the baseline).
  ServerMessages captured;
};

absl::StatusOr<PhaseResult> RunPhase(Target& target, const PhaseOptions& options);

}  // namespace breaker::bench

#endif  // BENCH_PHASE_H_
