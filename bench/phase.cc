#include "bench/phase.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "bench/node_fleet.h"
#include "bench/process.h"
#include "bench/workload.h"

namespace breaker::bench {
namespace {

constexpr absl::Duration kConnectTimeout = absl::Seconds(120);
constexpr absl::Duration kTrialTimeout = absl::Seconds(10);
constexpr absl::Duration kDrainTimeout = absl::Seconds(60);
constexpr absl::Duration kStormTimeout = absl::Seconds(60);
// Lets the memory of a fresh process, or of newly connected streams, settle before reading it.
constexpr absl::Duration kSettle = absl::Seconds(1);
// Between fan-out trials: lets the last policy's acknowledgements arrive.
constexpr absl::Duration kTrialGap = absl::Milliseconds(50);

void Progress(const Target& target, int nodes, const std::string& what) {
  std::fprintf(stderr, "[%s, %d nodes] %s\n", TargetName(target.kind()), nodes, what.c_str());
}

absl::StatusOr<MemoryResult> ConnectAll(Target& target, NodeFleet& fleet) {
  MemoryResult memory;
  absl::SleepFor(kSettle);
  absl::StatusOr<double> idle = target.process().RssKiB();
  if (!idle.ok()) return idle.status();
  memory.idle_kib = *idle;
  const absl::Time start = absl::Now();
  fleet.ConnectAll();
  if (absl::Status status = fleet.WaitConverged(kConnectTimeout).status(); !status.ok()) {
    return status;
  }
  memory.connect_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  absl::SleepFor(kSettle);
  absl::StatusOr<double> connected = target.process().RssKiB();
  if (!connected.ok()) return connected.status();
  memory.connected_kib = *connected;
  return memory;
}

absl::StatusOr<FanOutResult> FanOut(NodeFleet& fleet, int trials) {
  FanOutResult result;
  result.trials = trials;
  std::vector<double> latencies_ms;
  // Each trial's fastest and slowest node, for the progress log: shows whether a tail is one
  // trial's, and whether a whole trial was late (a slow disk, a busy machine) or its last nodes.
  std::string spans;
  std::vector<double> trial_p99s;
  // Trial 0 warms up and is not counted: after a second without traffic gRPC's pollers time
  // out, and the first message after that waits up to ~50 ms for one (in both servers). Only
  // the first trial follows such a pause (the connection phase's settling); a fleet that
  // reports every slot never pauses that long.
  for (int trial = 0; trial <= trials; ++trial) {
    if (absl::Status status = fleet.WaitConverged(kTrialTimeout).status(); !status.ok()) {
      return status;
    }
    absl::SleepFor(kTrialGap);
    // Spread the sending node over the fleet (and so over the connections).
    const int sender = static_cast<int>((static_cast<int64_t>(trial) * 7919) % fleet.size());
    int missed = 0;
    std::vector<double> trial_ms = fleet.FanOutTrial(
        sender, kFirstFanOutBuilder + static_cast<uint64_t>(trial), kTrialTimeout, &missed);
    if (trial == 0) continue;
    latencies_ms.insert(latencies_ms.end(), trial_ms.begin(), trial_ms.end());
    result.missed += missed;
    if (trial_ms.empty()) continue;
    const Summary summary = Summarize(trial_ms);
    absl::StrAppendFormat(&spans, " %.1f-%.1f", *std::min_element(trial_ms.begin(), trial_ms.end()),
                          summary.max);
    trial_p99s.push_back(summary.p99);
  }
  std::fprintf(stderr, "  fan-out, fastest-slowest node of each trial (ms):%s\n", spans.c_str());
  result.median_trial_p99_ms = Percentile(trial_p99s, 50);
  result.latency_ms = Summarize(latencies_ms);
  return result;
}

absl::StatusOr<IngestResult> Ingest(Target& target, NodeFleet& fleet, const PhaseOptions& options) {
  IngestResult result;
  result.senders = std::min(options.ingest_senders, fleet.size());
  const uint64_t refused_before = fleet.refused_observations();
  fleet.StartIngestion(result.senders, options.batch);
  absl::SleepFor(options.ingest_warmup);
  fleet.ClearBatchLatencies();
  const uint64_t acked_before = fleet.acked_observations();
  absl::StatusOr<double> cpu_before = target.process().CpuSeconds();
  absl::StatusOr<double> harness_before = ProcessCpuSeconds(getpid());
  const auto start = std::chrono::steady_clock::now();
  absl::SleepFor(options.ingest_duration);
  const uint64_t acked_after = fleet.acked_observations();
  absl::StatusOr<double> cpu_after = target.process().CpuSeconds();
  absl::StatusOr<double> harness_after = ProcessCpuSeconds(getpid());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  absl::StatusOr<std::vector<double>> round_trips = fleet.StopIngestion(kDrainTimeout);
  if (!round_trips.ok()) return round_trips.status();
  result.refused = fleet.refused_observations() - refused_before;
  if (!cpu_before.ok() || !cpu_after.ok()) return absl::InternalError("cannot read CPU time");
  if (!harness_before.ok() || !harness_after.ok()) {
    return absl::InternalError("cannot read the harness's CPU time");
  }
  const double observations = static_cast<double>(acked_after - acked_before);
  result.batch_round_trip_ms = Summarize(*round_trips);
  // A server that acknowledges nothing within the window (a sanitizer build, a much too short
  // window) scores 0 rather than ending the run: the other figures still stand.
  if (observations == 0) return result;
  result.observations_per_second = observations / seconds;
  result.cpu_seconds_per_million = (*cpu_after - *cpu_before) / observations * 1e6;
  result.harness_cpu_seconds_per_million = (*harness_after - *harness_before) / observations * 1e6;
  return result;
}

absl::StatusOr<StormResult> Storm(Target& target, NodeFleet& fleet, bool crash) {
  absl::StatusOr<uint64_t> version = fleet.WaitConverged(kTrialTimeout);
  if (!version.ok()) return version.status();
  fleet.ArmStorm(*version);
  absl::StatusOr<RestartTimes> times = target.Restart(*version, crash);
  if (!times.ok()) return times.status();
  StormResult result;
  std::vector<double> back = fleet.WaitAllBack(times->stop_sent, kStormTimeout, &result.missed,
                                               &result.back_by_attempt);
  result.restart_seconds = std::chrono::duration<double>(times->ready - times->stop_sent).count();
  result.back_seconds = Summarize(back);
  result.all_back_seconds = result.back_seconds.max;
  return result;
}

void ReportStorm(const Target& target, int nodes, const std::string& what,
                 const StormResult& storm) {
  Progress(target, nodes,
           absl::StrFormat("%s: restarted in %.2f s, all back after %.2f s (%d not back)", what,
                           storm.restart_seconds, storm.all_back_seconds, storm.missed));
  std::string attempts;
  for (size_t k = 0; k < storm.back_by_attempt.size(); ++k) {
    absl::StrAppendFormat(&attempts, " %d:%d", static_cast<int>(k) + 1, storm.back_by_attempt[k]);
  }
  std::fprintf(stderr, "  nodes back, by the attempt that brought them back:%s\n",
               attempts.c_str());
}

// Connects the nodes, then runs each measurement in turn on the same streams. The storm comes
// before the ingestion test: a restart folds the journal into a snapshot, and right after the
// ingestion test the journal holds hundreds of megabytes no fleet would have pending (that
// restart's cost is measured apart, as the final stop). The crash storm comes after it, for
// that journal: a crash leaves it unfolded, and breakerd's restart replays it before it serves.
absl::Status Measure(Target& target, const PhaseOptions& options, NodeFleet& fleet,
                     PhaseResult& result) {
  absl::StatusOr<MemoryResult> memory = ConnectAll(target, fleet);
  if (!memory.ok()) return memory.status();
  result.memory = *memory;
  Progress(target, options.nodes,
           absl::StrFormat("connected in %.2f s, %.1f KiB per node", memory->connect_seconds,
                           memory->KiBPerNode(options.nodes)));

  absl::StatusOr<FanOutResult> fan_out = FanOut(fleet, options.trials);
  if (!fan_out.ok()) return fan_out.status();
  result.fan_out = *fan_out;
  Progress(target, options.nodes,
           absl::StrFormat("fan-out p50 %.2f ms, p99 %.2f ms, max %.2f ms", fan_out->latency_ms.p50,
                           fan_out->latency_ms.p99, fan_out->latency_ms.max));
  // The baseline replays these versions.
  result.captured = fleet.Captured();

  if (options.storm) {
    absl::StatusOr<StormResult> storm = Storm(target, fleet, /*crash=*/false);
    if (!storm.ok()) return storm.status();
    result.storm = *storm;
    ReportStorm(target, options.nodes, "reconnect storm", *storm);
    // The ingestion test needs every sender's stream up again.
    if (absl::Status status = fleet.WaitConverged(kConnectTimeout).status(); !status.ok()) {
      return status;
    }
  }

  absl::StatusOr<IngestResult> ingest = Ingest(target, fleet, options);
  if (!ingest.ok()) return ingest.status();
  result.ingest = *ingest;
  Progress(target, options.nodes,
           absl::StrFormat("ingestion %.0f observations/s, %.2f CPU s per million, %d refused",
                           ingest->observations_per_second, ingest->cpu_seconds_per_million,
                           ingest->refused));

  if (options.crash_storm) {
    absl::StatusOr<StormResult> storm = Storm(target, fleet, /*crash=*/true);
    if (!storm.ok()) return storm.status();
    result.crash_storm = *storm;
    ReportStorm(target, options.nodes, "crash storm (SIGKILL after ingestion)", *storm);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PhaseResult> RunPhase(Target& target, const PhaseOptions& options) {
  PhaseResult result;
  result.nodes = options.nodes;
  if (absl::Status status = target.Start(); !status.ok()) return status;
  Progress(target, options.nodes, absl::StrCat("listening on ", target.address()));
  FleetOptions fleet_options;
  fleet_options.addresses = {target.address()};
  fleet_options.nodes = options.nodes;
  fleet_options.streams_per_channel = options.streams_per_channel;
  NodeFleet fleet(fleet_options);
  if (absl::Status status = Measure(target, options, fleet, result); !status.ok()) return status;
  fleet.Disconnect();
  const auto stop_sent = std::chrono::steady_clock::now();
  if (absl::Status status = target.Stop(); !status.ok()) return status;
  result.stop_after_ingest_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stop_sent).count();
  return result;
}

}  // namespace breaker::bench
