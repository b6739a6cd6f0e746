#ifndef TESTS_SUPPORT_REPLICA_HARNESS_H_
#define TESTS_SUPPORT_REPLICA_HARNESS_H_

// The fleet of FleetTest, highly available: several breakerd replicas (--store=etcd) on one
// prefix of a 3-member etcd cluster of real etcd processes on loopback, instead of one breakerd
// on SQLite. One replica leads; the others are standbys. Every node is given every replica's
// address and tries them in turn. The test kills, pauses and restarts replicas and etcd
// members, and reads etcd's keys to see what was written.
//
// The Admin calls and Health of FleetTest go to the replica the test talks to (TalkTo, usually
// the leader). As in FleetTest, every wait is for a condition with a generous deadline, and
// nothing asserts how long anything took: the times a failover takes are logged.
//
// The binaries must be in the test's data (//service:breakerd, //examples:example_node), and
// etcd installed (/usr/bin/etcd: Debian's etcd-server).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "etcd/mvcc/mvccpb/kv.pb.h"
#include "tests/support/etcd_cluster.h"
#include "tests/support/fleet_harness.h"
#include "tests/support/subprocess.h"

namespace breaker::testing {

class ReplicaFleetTest : public FleetTest {
 protected:
  // One breakerd replica. `process` is null while it is not running.
  struct Replica {
    std::string name;  // "breakerd-1", for the log
    int port = 0;
    std::unique_ptr<Subprocess> process;
    bool paused = false;  // SIGSTOPped
    // Flags beyond those every replica gets.
    std::vector<std::string> extra_flags;
    // "127.0.0.1:PORT": its --listen and --advertise_address, the nodes' target.
    std::string address() const;
  };

  // Starts the etcd cluster (3 members) under the test's directory.
  void SetUp() override;
  // Stops the nodes, then every replica (SIGTERM, resuming a paused one first; each must exit
  // cleanly), then etcd, and deletes etcd's data.
  void TearDown() override;

  // Adds `count` replicas, each on a free loopback port, without starting them: the nodes need
  // every address before they start, and a replica's address stays the same across restarts.
  void AddReplicas(int count);

  // Starts replica `i` (again, after it stopped: on the same port, over the same prefix).
  void StartReplica(size_t i);

  // Waits until replica `i` logs that it leads (etcd's "leading <prefix>" line) at its log
  // index `from` or later; the index of that line, or nullopt at the deadline.
  std::optional<size_t> AwaitLeadingLine(size_t i, size_t from = 0);
  // Waits until replica `i` logs that it is a standby ("standby for <prefix>"), from `from`.
  std::optional<size_t> AwaitStandbyLine(size_t i, size_t from = 0);

  // The replica that leads now: the one running (not paused) whose health is SERVING. Fails
  // the test when more than one serves.
  std::optional<size_t> Leader();
  // Waits until some replica other than `except` leads, and talks to it; returns it.
  std::optional<size_t> AwaitLeader(std::optional<size_t> except = std::nullopt);

  // Admin calls and Health go to replica `i` from now on.
  void TalkTo(size_t i) { FleetTest::TalkTo(replicas_.at(i).port); }

  // Sends `signal` to replica `i` and waits for it to exit; returns its wait status.
  int StopReplica(size_t i, int signal);
  // SIGSTOP / SIGCONT.
  void PauseReplica(size_t i);
  void ResumeReplica(size_t i);

  // Replica `i`'s stderr (its log) from `from` on.
  std::vector<std::string> ReplicaLog(size_t i, size_t from = 0) const;
  size_t ReplicaLogMark(size_t i) const;

  // Every replica's address, in order.
  std::string NodeTargets() const override;

  // --- etcd ---

  // The keys under the fleet's prefix that start with `suffix` ("/journal/"), read through
  // any member that answers, in key order.
  absl::StatusOr<std::vector<mvccpb::KeyValue>> EtcdRange(absl::string_view suffix);
  // The leader key (<prefix>/leader); nullopt when no replica holds it.
  absl::StatusOr<std::optional<mvccpb::KeyValue>> LeaderKey();

  // Seconds of the replicas' lease (--etcd_lease_ttl), set before StartReplica.
  int lease_ttl_seconds_ = 5;
  const std::string prefix_ = "/breaker/e2e";
  std::unique_ptr<EtcdCluster> etcd_;
  std::vector<Replica> replicas_;
};

}  // namespace breaker::testing

#endif  // TESTS_SUPPORT_REPLICA_HARNESS_H_
