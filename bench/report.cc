#include "bench/report.h"

#include <unistd.h>

#include <fstream>
#include <functional>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace breaker::bench {
namespace {

// Whether the run had several rounds, so that each row names its round.
bool SeveralRounds(const std::vector<Comparison>& comparisons) {
  return !comparisons.empty() && comparisons.back().round > 1;
}

// Whether breakerd ran on etcd in the run, so that each row names its store.
bool AnyEtcd(const std::vector<Comparison>& comparisons) {
  for (const Comparison& comparison : comparisons) {
    if (comparison.store == Store::kEtcd) return true;
  }
  return false;
}

std::string Count(int count) {
  std::string text = std::to_string(count);
  for (int at = static_cast<int>(text.size()) - 3; at > 0; at -= 3) text.insert(at, ",");
  return text;
}

std::string Nodes(const Comparison& comparison, bool with_round, bool with_store = false) {
  std::string nodes = Count(comparison.nodes);
  if (with_store) absl::StrAppend(&nodes, " ", StoreName(comparison.store));
  return with_round ? absl::StrCat(nodes, " #", comparison.round) : nodes;
}

std::string Ratio(double breakerd, double baseline) {
  if (baseline == 0) return "–";
  return absl::StrFormat("%.2f", breakerd / baseline);
}

// Writes the rows of one table: per comparison, per statistic, breakerd | baseline | ratio.
class Table {
 public:
  Table(std::ostream& out, const std::vector<Comparison>& comparisons)
      : out_(out), comparisons_(comparisons) {
    with_round_ = SeveralRounds(comparisons);
    with_store_ = AnyEtcd(comparisons);
  }

  void Header(absl::string_view title, absl::string_view note) {
    out_ << "\n### " << title << "\n\n"
         << note << "\n\n"
         << "| nodes | figure | breakerd | baseline | breakerd/baseline |\n"
         << "|---:|---|---:|---:|---:|\n";
  }

  // `value` extracts the figure; `format` prints it.
  void Rows(absl::string_view figure, const std::function<double(const PhaseResult&)>& value,
            int decimals = 2) {
    figures_.push_back({std::string(figure), value, decimals});
  }

  void Print() {
    for (const Comparison& comparison : comparisons_) {
      for (const Figure& figure : figures_) {
        const double breakerd = figure.value(comparison.breakerd);
        const double baseline = figure.value(comparison.baseline);
        out_ << "| " << Nodes(comparison, with_round_, with_store_) << " | " << figure.name << " | "
             << absl::StrFormat("%.*f", figure.decimals, breakerd) << " | "
             << absl::StrFormat("%.*f", figure.decimals, baseline) << " | "
             << Ratio(breakerd, baseline) << " |\n";
      }
    }
  }

 private:
  struct Figure {
    std::string name;
    std::function<double(const PhaseResult&)> value;
    int decimals;
  };

  std::ostream& out_;
  const std::vector<Comparison>& comparisons_;
  bool with_round_ = false;
  // With breakerd on etcd in the run, the nodes column names the store ("1,000 etcd").
  bool with_store_ = false;
  std::vector<Figure> figures_;
};

std::string FirstLineWith(const std::string& path, absl::string_view key) {
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind(std::string(key), 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  }
  return "unknown";
}

std::string LoadAverage() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  file >> one >> five >> fifteen;
  return absl::StrCat(one, " ", five, " ", fifteen);
}

std::string ConnectionsNote(int streams_per_connection) {
  if (streams_per_connection == 1) return "each node on a connection of its own";
  return absl::StrCat(streams_per_connection, " node streams per connection");
}

std::string Verdict(bool met) { return met ? "met" : "MISSED"; }

// The rows of one storm (`storm` of each PhaseResult).
void StormRows(Table& table, std::optional<StormResult> PhaseResult::*storm) {
  auto value = [storm](const std::function<double(const StormResult&)>& figure) {
    return [storm, figure](const PhaseResult& r) {
      return (r.*storm).has_value() ? figure(*(r.*storm)) : 0;
    };
  };
  table.Rows("restart (s)", value([](const StormResult& s) { return s.restart_seconds; }));
  table.Rows("all back, current policy (s)",
             value([](const StormResult& s) { return s.all_back_seconds; }));
  table.Rows("per node p50 (s)", value([](const StormResult& s) { return s.back_seconds.p50; }));
  table.Rows("per node p99 (s)", value([](const StormResult& s) { return s.back_seconds.p99; }));
  table.Rows("not back", value([](const StormResult& s) { return double(s.missed); }), 0);
  // How many backoffs the restart cost: a node's first attempt follows the backoff every node
  // waits after losing its stream; each later one means that the server refused it or was
  // not listening yet.
  table.Rows("back at 1st attempt", value([](const StormResult& s) {
               return double(s.BackFromAttempt(1) - s.BackFromAttempt(2));
             }),
             0);
  table.Rows("back at 2nd attempt", value([](const StormResult& s) {
               return double(s.BackFromAttempt(2) - s.BackFromAttempt(3));
             }),
             0);
  table.Rows("back at 3rd or later",
             value([](const StormResult& s) { return double(s.BackFromAttempt(3)); }), 0);
}

}  // namespace

void PrintMachine(std::ostream& out) {
  out << "machine: " << sysconf(_SC_NPROCESSORS_ONLN) << " cores, "
      << FirstLineWith("/proc/cpuinfo", "model name") << "; load average at start " << LoadAverage()
      << "\n";
}

void PrintTables(const std::vector<Comparison>& comparisons, const PhaseOptions& options,
                 std::ostream& out) {
  Table fan_out(out, comparisons);
  fan_out.Header("Fan-out latency",
                 absl::StrCat("From sending the decisive failure through one node to each node "
                              "receiving the new policy, as the nodes see it; every node of ",
                              options.trials, " trials (ms), ",
                              ConnectionsNote(options.streams_per_channel), "."));
  fan_out.Rows("p50 (ms)", [](const PhaseResult& r) { return r.fan_out.latency_ms.p50; });
  fan_out.Rows("p99 (ms)", [](const PhaseResult& r) { return r.fan_out.latency_ms.p99; });
  fan_out.Rows("max (ms)", [](const PhaseResult& r) { return r.fan_out.latency_ms.max; });
  fan_out.Rows("median trial's p99 (ms)",
               [](const PhaseResult& r) { return r.fan_out.median_trial_p99_ms; });
  fan_out.Rows(
      "missed", [](const PhaseResult& r) { return double(r.fan_out.missed); }, 0);
  fan_out.Print();

  Table ingest(out, comparisons);
  ingest.Header(
      "Sustained ingestion",
      absl::StrCat(options.ingest_senders, " nodes (or all, if fewer), spread over the fleet's ",
                   "connections, each send ", options.batch,
                   "-observation batches, the next as soon as the last is acknowledged; ",
                   absl::FormatDuration(options.ingest_duration), " measured after ",
                   absl::FormatDuration(options.ingest_warmup),
                   " of warm-up. CPU is the "
                   "server process's user + system time."));
  ingest.Rows(
      "observations/s", [](const PhaseResult& r) { return r.ingest.observations_per_second; }, 0);
  ingest.Rows("CPU s per million observations",
              [](const PhaseResult& r) { return r.ingest.cpu_seconds_per_million; });
  ingest.Rows("harness CPU s per million",
              [](const PhaseResult& r) { return r.ingest.harness_cpu_seconds_per_million; });
  ingest.Rows("batch round trip p50 (ms)",
              [](const PhaseResult& r) { return r.ingest.batch_round_trip_ms.p50; });
  ingest.Rows("batch round trip p99 (ms)",
              [](const PhaseResult& r) { return r.ingest.batch_round_trip_ms.p99; });
  ingest.Rows(
      "refused", [](const PhaseResult& r) { return double(r.ingest.refused); }, 0);
  ingest.Print();

  Table memory(out, comparisons);
  memory.Header("Memory",
                absl::StrCat("Server resident memory (VmRSS) before any node connects and with "
                             "every node connected and holding the policy, ",
                             ConnectionsNote(options.streams_per_channel), "."));
  memory.Rows(
      "RSS idle (MiB)", [](const PhaseResult& r) { return r.memory.idle_kib / 1024; }, 1);
  memory.Rows(
      "RSS connected (MiB)", [](const PhaseResult& r) { return r.memory.connected_kib / 1024; }, 1);
  memory.Rows(
      "per node (KiB)", [](const PhaseResult& r) { return r.memory.KiBPerNode(r.nodes); }, 1);
  memory.Rows("connect all (s)", [](const PhaseResult& r) { return r.memory.connect_seconds; });
  memory.Print();

  if (options.storm) {
    Table storm(out, comparisons);
    storm.Header("Reconnect storm",
                 "The server is stopped (SIGTERM) and started again on the same port; the nodes "
                 "reconnect with the client library's backoff (1 s, x1.6, jitter 0.2), each "
                 "attempt on a new connection. Times from the SIGTERM.");
    StormRows(storm, &PhaseResult::storm);
    storm.Rows("stop right after ingestion (s)",
               [](const PhaseResult& r) { return r.stop_after_ingest_seconds; });
    storm.Print();
  }
  if (options.crash_storm) {
    Table crash(out, comparisons);
    crash.Header("Crash storm",
                 "Right after the ingestion test, the server is killed (SIGKILL) and started "
                 "again on the same port: breakerd replays the journal of the test that its "
                 "last snapshot did not fold. Times from the SIGKILL.");
    StormRows(crash, &PhaseResult::crash_storm);
    crash.Print();
  }
}

void PrintFailover(const std::vector<FailoverResult>& results, std::ostream& out) {
  if (results.empty()) return;
  out << "\n### Failover\n\n"
      << "Two breakerd replicas on one prefix of three local etcd members, lease TTL "
      << results.front().lease_ttl_seconds
      << " s; the nodes hold both addresses and try them in turn, on the client library's "
         "backoff (1 s, x1.6, jitter 0.2), each attempt on a new connection. Each trial "
         "stops the leader once every node holds its policy: SIGKILL (a crash), or SIGTERM (a "
         "planned restart: the leader hands over, revoking its lease); the moment the standby "
         "logs that it serves, a builder is banned through its Admin service. Time to "
         "failover: from the signal to every node holding the policy that ban published. Then "
         "the stopped replica starts again as the next standby. Seconds, over the trials; the "
         "parts are read from the new leader's log as the harness sees it (1 ms polls).\n\n"
      << "| nodes | signal | trials | figure | p50 | p99 | max |\n"
         "|---:|---|---:|---|---:|---:|---:|\n";
  for (const FailoverResult& r : results) {
    auto row = [&](absl::string_view figure, const Summary& s) {
      out << "| " << Count(r.nodes) << " | " << (r.sigterm ? "SIGTERM" : "SIGKILL") << " | "
          << r.trials << " | " << figure << " | "
          << absl::StrFormat("%.2f | %.2f | %.2f", s.p50, s.p99, s.max) << " |\n";
    };
    row("**time to failover** (s)", r.total);
    row("signal to each node holding it, every node of every trial (s)", r.per_node);
    row(r.sigterm ? "signal to the standby leading: handover, campaign (s)"
                  : "signal to the standby leading: lease expiry, campaign (s)",
        r.leadership);
    row("leading to serving: the new leader's restore (s)", r.restore);
    row("serving to the ban's policy published (s)", r.publish);
    row("published to every node holding it: reconnection (s)", r.reconnect);
  }
}

void PrintGoals(const std::vector<Comparison>& comparisons, std::ostream& out) {
  out << "\n### Goals\n\n";
  const bool with_round = SeveralRounds(comparisons);
  const bool with_store = AnyEtcd(comparisons);
  for (const Comparison& c : comparisons) {
    const std::string at =
        absl::StrCat(Nodes(c, with_round), " nodes",
                     with_store ? absl::StrCat(" on ", StoreName(c.store)) : "", ": ");
    const double p99 = c.breakerd.fan_out.latency_ms.p99;
    const double base_p99 = c.baseline.fan_out.latency_ms.p99;
    if (c.nodes == 1000) {
      out << "- " << at << "fan-out p99 "
          << absl::StrFormat("%.1f ms (%.2fx baseline)", p99, base_p99 > 0 ? p99 / base_p99 : 0)
          << ", goal <= 1.5x and < 100 ms: "
          << Verdict(p99 <= 1.5 * base_p99 && p99 < 100 && c.breakerd.fan_out.missed == 0) << "\n";
    }
    if (c.nodes == 5000) {
      out << "- " << at << "fan-out p99 " << absl::StrFormat("%.1f ms", p99) << ", max "
          << absl::StrFormat("%.1f ms", c.breakerd.fan_out.latency_ms.max)
          << ", goal < 500 ms: " << Verdict(p99 < 500 && c.breakerd.fan_out.missed == 0) << "\n";
    }
    const double rate = c.breakerd.ingest.observations_per_second;
    const double base_rate = c.baseline.ingest.observations_per_second;
    out << "- " << at << "ingestion "
        << absl::StrFormat("%.2f", base_rate > 0 ? rate / base_rate : 0)
        << "x baseline, goal >= 0.70: "
        << Verdict(rate >= 0.7 * base_rate && c.breakerd.ingest.refused == 0) << "\n";
    const double per_node = c.breakerd.memory.KiBPerNode(c.nodes);
    out << "- " << at << "memory " << absl::StrFormat("%.1f KiB", per_node)
        << " per node, goal <= 64 KiB: " << Verdict(per_node <= 64) << "\n";
    if (c.nodes == 1000 && c.breakerd.storm.has_value()) {
      const StormResult& storm = *c.breakerd.storm;
      out << "- " << at << "reconnect storm, all back after "
          << absl::StrFormat("%.2f s", storm.all_back_seconds)
          << " with none starved, goal <= 5 s: "
          << Verdict(storm.missed == 0 && storm.all_back_seconds <= 5) << "\n";
    }
  }
}

}  // namespace breaker::bench
