// fleet_load: breakerd under N beacon nodes' streams, beside a bare gRPC baseline measured in
// the same run. See BENCHMARKS.md.
//
//   bazel run -c opt //bench:fleet_load -- --nodes=100,1000,5000
//   bazel run -c opt //bench:fleet_load -- --nodes=1000 --store=sqlite,etcd
//
// For each fleet size it runs breakerd, then the baseline (alternating which goes first in later
// rounds), each as a child process on loopback, and measures fan-out latency, sustained
// ingestion, memory per connected node and a reconnect storm. With --store=etcd, breakerd
// keeps its state in three etcd members the harness starts on loopback, and the harness also
// measures the time to failover between two breakerd replicas. Progress goes to stderr; the
// tables, in Markdown, to stdout.

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "bench/failover.h"
#include "bench/phase.h"
#include "bench/report.h"
#include "bench/target.h"
#include "bench/workload.h"
#include "tests/support/etcd_cluster.h"

ABSL_FLAG(std::vector<std::string>, nodes, (std::vector<std::string>{"100", "1000", "5000"}),
          "Fleet sizes to measure, comma-separated.");
ABSL_FLAG(int, rounds, 1, "Rounds per fleet size; later rounds alternate which server goes first.");
ABSL_FLAG(int, trials, 20, "Fan-out trials per fleet size and server.");
ABSL_FLAG(int, ingest_senders, 64, "Nodes sending observations in the ingestion test.");
ABSL_FLAG(int, batch, 500, "Observations per batch (the client library's default max_batch).");
ABSL_FLAG(double, ingest_seconds, 10, "Measured ingestion time.");
ABSL_FLAG(double, warmup_seconds, 2, "Ingestion warm-up before measuring.");
ABSL_FLAG(int, streams_per_channel, 1,
          "Node streams sharing one connection. 1, as in a fleet: each node's client library "
          "holds a connection of its own.");
ABSL_FLAG(bool, storm, true, "Measure the reconnect storm (restarts each server once).");
ABSL_FLAG(bool, crash_storm, false,
          "Also measure a crash storm: SIGKILL right after the ingestion test, so that "
          "breakerd's restart replays the test's journal (the final stop then follows that "
          "restart).");
ABSL_FLAG(bool, quick, false,
          "Smoke run: at most 3 trials, 0.5 s warm-up, 1 s of ingestion (overrides those "
          "flags).");
ABSL_FLAG(std::string, breakerd, "service/breakerd", "The breakerd binary.");
ABSL_FLAG(std::string, baseline, "bench/baseline_server", "The baseline server binary.");
ABSL_FLAG(int, breakerd_sqlite_page_size, 0,
          "Experiment: create breakerd's database with this SQLite page size (0: breakerd's "
          "own, 32768; 4096 is SQLite's default, 65536 what breakerd used before).");
ABSL_FLAG(std::vector<std::string>, store, (std::vector<std::string>{"sqlite"}),
          "Where breakerd keeps its state: sqlite, etcd (three etcd members the harness "
          "starts on loopback, from /usr/bin/etcd), or both, comma-separated: each is measured "
          "beside the baseline, in turn.");
ABSL_FLAG(int, failover_trials, 10,
          "With etcd: failover trials per fleet size and signal (SIGKILL of the leading "
          "replica, then SIGTERM, until every node holds the new leader's policy); 0: none.");
ABSL_FLAG(int, etcd_lease_ttl, 5, "With etcd: breakerd's --etcd_lease_ttl, in seconds.");
ABSL_FLAG(std::string, work_dir, "",
          "Where state directories and server logs go; default: a new directory under "
          "$TEST_TMPDIR or /tmp.");

namespace breaker::bench {
namespace {

struct Settings {
  std::vector<int> nodes;
  std::vector<Store> stores;
  int failover_trials = 0;
  int etcd_lease_ttl_seconds = 5;
  int rounds = 1;
  PhaseOptions phase;
  std::string breakerd;
  std::string baseline;
  std::string work_dir;
  int sqlite_page_size = 0;
};

// A binary given relative to the workspace: found as is under `bazel run` and `bazel test`
// (whose working directory is the runfiles tree), else in this binary's runfiles.
absl::StatusOr<std::string> ResolveBinary(const std::string& path, const std::string& argv0) {
  std::vector<std::string> candidates = {path};
  if (const char* runfiles = std::getenv("RUNFILES_DIR"); runfiles != nullptr) {
    candidates.push_back(absl::StrCat(runfiles, "/breaker/", path));
  }
  candidates.push_back(absl::StrCat(argv0, ".runfiles/breaker/", path));
  for (const std::string& candidate : candidates) {
    if (access(candidate.c_str(), X_OK) == 0) {
      return std::filesystem::absolute(candidate).string();
    }
  }
  return absl::NotFoundError(
      absl::StrCat("cannot find the executable ", path, " (tried ", absl::StrJoin(candidates, ", "),
                   "); run through `bazel run //bench:fleet_load` or pass its path"));
}

absl::StatusOr<std::string> MakeWorkDir(const std::string& flag) {
  if (!flag.empty()) {
    std::filesystem::create_directories(flag);
    return std::filesystem::absolute(flag).string();
  }
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/fleet_load.XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("cannot create ", pattern));
  }
  return pattern;
}

absl::StatusOr<Settings> SettingsFromFlags(const std::string& argv0) {
  Settings settings;
  for (const std::string& text : absl::GetFlag(FLAGS_nodes)) {
    int nodes = 0;
    if (!absl::SimpleAtoi(text, &nodes) || nodes < 1) {
      return absl::InvalidArgumentError(absl::StrCat("--nodes: '", text, "' is not a count"));
    }
    settings.nodes.push_back(nodes);
  }
  for (const std::string& text : absl::GetFlag(FLAGS_store)) {
    if (text == "sqlite") {
      settings.stores.push_back(Store::kSqlite);
    } else if (text == "etcd") {
      settings.stores.push_back(Store::kEtcd);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--store: '", text, "' is neither sqlite nor etcd"));
    }
  }
  settings.failover_trials = std::max(0, absl::GetFlag(FLAGS_failover_trials));
  settings.etcd_lease_ttl_seconds = absl::GetFlag(FLAGS_etcd_lease_ttl);
  if (settings.etcd_lease_ttl_seconds < 2) {
    return absl::InvalidArgumentError("--etcd_lease_ttl: at least 2 s, as breakerd requires");
  }
  settings.rounds = std::max(1, absl::GetFlag(FLAGS_rounds));
  PhaseOptions& phase = settings.phase;
  phase.trials = std::max(1, absl::GetFlag(FLAGS_trials));
  phase.ingest_senders = std::max(1, absl::GetFlag(FLAGS_ingest_senders));
  phase.batch = absl::GetFlag(FLAGS_batch);
  if (phase.batch < 1 || phase.batch > 1000) {
    return absl::InvalidArgumentError("--batch: 1 to 1000 (breakerd refuses larger batches)");
  }
  phase.ingest_duration = absl::Seconds(absl::GetFlag(FLAGS_ingest_seconds));
  phase.ingest_warmup = absl::Seconds(absl::GetFlag(FLAGS_warmup_seconds));
  phase.streams_per_channel = std::max(1, absl::GetFlag(FLAGS_streams_per_channel));
  phase.storm = absl::GetFlag(FLAGS_storm);
  phase.crash_storm = absl::GetFlag(FLAGS_crash_storm);
  if (absl::GetFlag(FLAGS_quick)) {
    phase.trials = std::min(phase.trials, 3);
    phase.ingest_warmup = absl::Milliseconds(500);
    phase.ingest_duration = absl::Seconds(1);
  }
  absl::StatusOr<std::string> breakerd = ResolveBinary(absl::GetFlag(FLAGS_breakerd), argv0);
  if (!breakerd.ok()) return breakerd.status();
  settings.breakerd = *breakerd;
  absl::StatusOr<std::string> baseline = ResolveBinary(absl::GetFlag(FLAGS_baseline), argv0);
  if (!baseline.ok()) return baseline.status();
  settings.baseline = *baseline;
  settings.sqlite_page_size = absl::GetFlag(FLAGS_breakerd_sqlite_page_size);
  absl::StatusOr<std::string> work_dir = MakeWorkDir(absl::GetFlag(FLAGS_work_dir));
  if (!work_dir.ok()) return work_dir.status();
  settings.work_dir = *work_dir;
  return settings;
}

// Each connection is a descriptor in the harness and one in the server (which inherits the
// limit); the default soft limit is often 1024.
absl::Status RaiseFileLimit(const Settings& settings) {
  int most_nodes = 0;
  for (int nodes : settings.nodes) most_nodes = std::max(most_nodes, nodes);
  const rlim_t needed =
      static_cast<rlim_t>(most_nodes / settings.phase.streams_per_channel + 1 + 256);
  rlimit limit;
  getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < needed) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the file descriptor limit is ", limit.rlim_max, " and ", needed,
                     " are needed: raise `ulimit -Hn` or pass a larger --streams_per_channel"));
  }
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  return absl::OkStatus();
}

bool UsesEtcd(const Settings& settings) {
  return std::find(settings.stores.begin(), settings.stores.end(), Store::kEtcd) !=
         settings.stores.end();
}

// A prefix of its own for each breakerd run, so that none finds another's state.
std::string EtcdPrefix(const std::string& run) { return absl::StrCat("/breaker/fleet_load/", run); }

TargetOptions OptionsFor(TargetKind kind, Store store, const Settings& settings,
                         const std::vector<std::string>& etcd_endpoints, int nodes, int round) {
  const bool on_etcd = kind == TargetKind::kBreakerd && store == Store::kEtcd;
  const std::string run =
      absl::StrCat(TargetName(kind), on_etcd ? "-etcd" : "", "-", nodes, "-", round);
  TargetOptions options;
  if (on_etcd) {
    options.store = Store::kEtcd;
    options.etcd_endpoints = etcd_endpoints;
    options.etcd_prefix = EtcdPrefix(run);
    options.etcd_lease_ttl_seconds = settings.etcd_lease_ttl_seconds;
  }
  options.kind = kind;
  options.binary = kind == TargetKind::kBreakerd ? settings.breakerd : settings.baseline;
  options.state_dir = absl::StrCat(settings.work_dir, "/state-", run);
  options.config_path = absl::StrCat(settings.work_dir, "/breakerd.textproto");
  options.messages_path = absl::StrCat(settings.work_dir, "/messages-", nodes, ".bin");
  options.log_path = absl::StrCat(settings.work_dir, "/", run, ".log");
  options.sqlite_page_size = settings.sqlite_page_size;
  options.streams_per_connection = settings.phase.streams_per_channel;
  return options;
}

absl::StatusOr<PhaseResult> Measure(TargetKind kind, Store store, const Settings& settings,
                                    const std::vector<std::string>& etcd_endpoints, int nodes,
                                    int round) {
  const TargetOptions target_options =
      OptionsFor(kind, store, settings, etcd_endpoints, nodes, round);
  Target target(target_options);
  PhaseOptions options = settings.phase;
  options.nodes = nodes;
  absl::StatusOr<PhaseResult> result = RunPhase(target, options);
  // The journal of a run is large and of no further use.
  std::filesystem::remove_all(target_options.state_dir);
  if (!result.ok()) return result.status();
  if (kind == TargetKind::kBreakerd) {
    // The baseline sends these same messages.
    absl::Status written = WriteServerMessages(result->captured, target_options.messages_path);
    if (!written.ok()) return written;
  }
  return result;
}

absl::StatusOr<Comparison> Compare(const Settings& settings, Store store,
                                   const std::vector<std::string>& etcd_endpoints, int nodes,
                                   int round) {
  Comparison comparison;
  comparison.nodes = nodes;
  comparison.round = round;
  comparison.store = store;
  // The baseline needs breakerd's messages, so breakerd goes first in the first round; later
  // rounds alternate, so that neither always runs on the machine the other has just warmed.
  const bool breakerd_first = round % 2 == 1;
  for (int turn = 0; turn < 2; ++turn) {
    const bool breakerd = (turn == 0) == breakerd_first;
    absl::StatusOr<PhaseResult> result =
        Measure(breakerd ? TargetKind::kBreakerd : TargetKind::kBaseline, store, settings,
                etcd_endpoints, nodes, round);
    if (!result.ok()) return result.status();
    (breakerd ? comparison.breakerd : comparison.baseline) = *std::move(result);
  }
  return comparison;
}

// The command line, for the record beside the tables.
std::string CommandLine(int argc, char** argv) {
  std::vector<std::string> args = {"fleet_load"};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  return absl::StrJoin(args, " ");
}

int Run(int argc, char** argv) {
  const std::string argv0 = argv[0];
  absl::StatusOr<Settings> settings = SettingsFromFlags(argv0);
  if (!settings.ok()) {
    std::cerr << "fleet_load: " << settings.status().message() << "\n";
    return 2;
  }
  if (absl::Status status = RaiseFileLimit(*settings); !status.ok()) {
    std::cerr << "fleet_load: " << status.message() << "\n";
    return 2;
  }
  std::ofstream(absl::StrCat(settings->work_dir, "/breakerd.textproto")) << ServiceConfigText();
  std::cerr << "fleet_load: state and server logs in " << settings->work_dir << "\n";
  std::cout << "command: " << CommandLine(argc, argv) << "\n";
  PrintMachine(std::cout);
  // One etcd cluster for the whole run; each breakerd run has a prefix of its own in it.
  std::unique_ptr<testing::EtcdCluster> etcd;
  std::vector<std::string> etcd_endpoints;
  if (UsesEtcd(*settings)) {
    testing::EtcdCluster::Options options;
    options.members = 3;
    options.directory = absl::StrCat(settings->work_dir, "/etcd");
    absl::StatusOr<std::unique_ptr<testing::EtcdCluster>> started =
        testing::EtcdCluster::Start(options);
    if (!started.ok()) {
      std::cerr << "fleet_load: etcd: " << started.status() << "\n";
      return 1;
    }
    etcd = *std::move(started);
    etcd_endpoints = etcd->endpoints();
    std::cerr << "fleet_load: etcd members at " << absl::StrJoin(etcd_endpoints, ",") << "\n";
  }
  std::vector<Comparison> comparisons;
  std::vector<FailoverResult> failovers;
  for (int nodes : settings->nodes) {
    for (int round = 1; round <= settings->rounds; ++round) {
      for (Store store : settings->stores) {
        absl::StatusOr<Comparison> comparison =
            Compare(*settings, store, etcd_endpoints, nodes, round);
        if (!comparison.ok()) {
          std::cerr << "fleet_load: " << nodes << " nodes on " << StoreName(store) << ": "
                    << comparison.status() << "\n";
          return 1;
        }
        comparisons.push_back(*std::move(comparison));
      }
    }
    if (etcd != nullptr && settings->failover_trials > 0) {
      FailoverOptions options;
      options.nodes = nodes;
      options.trials = settings->failover_trials;
      options.breakerd = settings->breakerd;
      options.config_path = absl::StrCat(settings->work_dir, "/breakerd.textproto");
      options.etcd_endpoints = etcd_endpoints;
      const std::string run = absl::StrCat("failover-", nodes);
      options.lease_ttl_seconds = settings->etcd_lease_ttl_seconds;
      // A crash, then a planned restart (the leader hands over), each on a prefix of its own.
      for (const bool sigterm : {false, true}) {
        options.sigterm = sigterm;
        const std::string signal_run = absl::StrCat(run, sigterm ? "-sigterm" : "-sigkill");
        options.etcd_prefix = EtcdPrefix(signal_run);
        options.log_path_prefix = absl::StrCat(settings->work_dir, "/", signal_run);
        absl::StatusOr<FailoverResult> failover = RunFailover(options);
        if (!failover.ok()) {
          std::cerr << "fleet_load: failover, " << nodes << " nodes: " << failover.status()
                    << "\n";
          return 1;
        }
        failovers.push_back(*failover);
      }
    }
  }
  PrintTables(comparisons, settings->phase, std::cout);
  PrintFailover(failovers, std::cout);
  PrintGoals(comparisons, std::cout);
  return 0;
}

}  // namespace
}  // namespace breaker::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Measures breakerd under N node streams beside a bare gRPC baseline.\n"
      "Usage: fleet_load [--nodes=100,1000,5000] [--store=sqlite,etcd] [--rounds=N] [--quick]");
  absl::ParseCommandLine(argc, argv);
  return breaker::bench::Run(argc, argv);
}
