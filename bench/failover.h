#ifndef BENCH_FAILOVER_H_
#define BENCH_FAILOVER_H_

// Time to failover: two breakerd replicas on one etcd prefix, N nodes given both addresses.
// Each trial kills the leader (SIGKILL; or stops it with SIGTERM, and it hands over) once every
// node holds its policy, and times how long until every node holds a policy that only the new
// leader can have published; then starts the stopped replica again, as the next standby.
//
// "A policy from the new leader": the moment the standby logs that it serves, the harness bans
// a builder through its Admin service, and the policy version that ban publishes is the one
// every node must hold. The nodes connect on the client library's schedule (a new attempt
// after each backoff, to the next address in turn), so the time includes their backoffs.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/stats.h"

namespace breaker::bench {

struct FailoverOptions {
  int nodes = 100;
  // At most 200: each trial bans a builder, and breakerd holds 256 operator bans.
  int trials = 10;
  std::string breakerd;
  std::string config_path;
  std::vector<std::string> etcd_endpoints;
  // A fresh prefix: the run's own fleet.
  std::string etcd_prefix;
  int lease_ttl_seconds = 5;
  // The replicas' logs are this with "-a.log" and "-b.log".
  std::string log_path_prefix;
  // Stop the leader with SIGTERM, as a rolling upgrade does (it hands over), instead of
  // SIGKILL, as a crash.
  bool sigterm = false;
};

// Seconds, each over the trials.
struct FailoverResult {
  int nodes = 0;
  int trials = 0;
  int lease_ttl_seconds = 0;
  // The leader was stopped with SIGTERM, not SIGKILL.
  bool sigterm = false;
  // SIGKILL to every node holding the new leader's policy.
  Summary total;
  // SIGKILL to each node holding it, every node of every trial.
  Summary per_node;
  // SIGKILL to the standby logging that it leads: the lease's expiry and the campaign.
  Summary leadership;
  // Leading to serving: the new leader's restore of the state it has not applied yet.
  Summary restore;
  // Serving to the Admin ban's policy published (an etcd write).
  Summary publish;
  // Published to every node holding it: the nodes' reconnections, on their backoff.
  Summary reconnect;
};

// Runs the trials. Must be called from the thread that outlives the replicas (their
// processes die with it). INVALID_ARGUMENT for too many trials; the error of the first step
// that fails (a replica that does not start or serve, nodes that do not converge).
absl::StatusOr<FailoverResult> RunFailover(const FailoverOptions& options);

}  // namespace breaker::bench

#endif  // BENCH_FAILOVER_H_
