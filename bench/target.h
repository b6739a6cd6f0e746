#ifndef BENCH_TARGET_H_
#define BENCH_TARGET_H_

// A server under load: breakerd (on SQLite or on etcd) or the baseline, as a child process on a
// loopback port that stays the same across restarts (the nodes reconnect to it).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/process.h"

namespace breaker::bench {

enum class TargetKind { kBreakerd, kBaseline };

const char* TargetName(TargetKind kind);

// Where breakerd keeps its state.
enum class Store { kSqlite, kEtcd };

const char* StoreName(Store store);

struct TargetOptions {
  TargetKind kind = TargetKind::kBreakerd;
  // The executable.
  std::string binary;
  // The loopback port to listen on; 0: a free one, picked by the server.
  int port = 0;
  // breakerd: its --store. With kEtcd, its --etcd_endpoints, --etcd_prefix (fresh for each
  // run: a prefix holds one fleet's state) and --etcd_lease_ttl; and a port given above, which
  // it also advertises (replicas tell one another apart by their advertised address).
  Store store = Store::kSqlite;
  std::vector<std::string> etcd_endpoints;
  std::string etcd_prefix;
  int etcd_lease_ttl_seconds = 5;
  // breakerd: its --state_dir (fresh for each run; SQLite's) and --config.
  std::string state_dir;
  std::string config_path;
  // breakerd: when not 0, its database is created beforehand with this SQLite page size
  // (breakerd creates its tables in an empty database it finds), to measure the effect of the
  // page size on the journal's cost.
  int sqlite_page_size = 0;
  // Streams the harness opens per connection: both servers admit at least that many at once
  // (breakerd's --max_concurrent_streams, 100 by default, would queue the rest).
  int streams_per_connection = 1;
  // The baseline: the messages of a breakerd run to send.
  std::string messages_path;
  // Where the process's log is appended.
  std::string log_path;
};

// When a restart happened, on the steady clock.
struct RestartTimes {
  // SIGTERM (or SIGKILL) sent.
  std::chrono::steady_clock::time_point stop_sent;
  // The new process logged that it listens.
  std::chrono::steady_clock::time_point ready;
};

class Target {
 public:
  explicit Target(TargetOptions options) : options_(std::move(options)) {}

  // Starts on the options' port (a free one for 0). Started again after Kill, on the same port.
  absl::Status Start();
  // Stops (SIGTERM, as a supervisor would; with `crash`, SIGKILL) and starts again on the same
  // port. The baseline restarts at policy `version`, the one the nodes hold; breakerd restores
  // it from its state (after a crash, replaying the journal its last snapshot did not fold).
  absl::StatusOr<RestartTimes> Restart(uint64_t version, bool crash = false);
  absl::Status Stop() { return process_.Stop(); }
  // SIGKILL, as a crash; waits for the exit.
  void Kill() { process_.Kill(); }

  std::string address() const;
  const std::string& log_path() const { return options_.log_path; }
  const ChildProcess& process() const { return process_; }
  TargetKind kind() const { return options_.kind; }

 private:
  absl::Status Launch(int port, uint64_t version);

  const TargetOptions options_;
  ChildProcess process_;
  int port_ = options_.port;
};

}  // namespace breaker::bench

#endif  // BENCH_TARGET_H_
