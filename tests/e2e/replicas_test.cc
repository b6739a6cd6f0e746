// breakerd replicas on etcd, as an operator runs them: real breakerd processes (--store=etcd) on
// one prefix of a 3-member etcd cluster of real etcd processes on loopback, and example_node
// processes streaming observations, each given every replica's address. The test kills
// (SIGKILL), pauses (SIGSTOP) and restarts leaders and etcd members under that load.
//
// What the nodes printed is the record of what the replicas told them (see RandomLoad in
// tests/support/fleet_harness.h): an acknowledged observation is one the leader had committed
// to a quorum of etcd members, so no failure of a replica or of one member may lose it, and
// whoever leads next must hold it; the policy versions a node saw never go back, whoever sent
// them.
//
// Every wait is deadline-based and generous, and nothing asserts how long a failover took: the
// times are logged ("failover: ..."), for BENCHMARKS.md's measured ones. The random schedule of
// the crash loop comes from a seed it prints; REPLICAS_SEED=N (bazel test --test_env) replays it.

#include <signal.h>
#include <sys/wait.h>

#include <cstddef>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "breaker/state/v1/state.pb.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "core/types.h"
#include "etcd/mvcc/mvccpb/kv.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/support/fleet_harness.h"
#include "tests/support/replica_harness.h"
#include "tests/support/status_matchers.h"
#include "tests/support/subprocess.h"
#include "tests/support/test_util.h"

namespace breaker {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::testing::CallUnary;
using ::breaker::testing::CheckHealth;
using ::breaker::testing::Deadline;
using ::breaker::testing::GloasChain;
using ::breaker::testing::IsOk;
using ::breaker::testing::kBanEveryFailure;
using ::breaker::testing::Node;
using ::breaker::testing::PollUntil;
using ::breaker::testing::RandomLoad;
using ::breaker::testing::ReplicaFleetTest;
using ::breaker::testing::SeedFrom;
using ::breaker::testing::StatusIs;
using ::breaker::testing::Subprocess;
using ::breaker::testing::Told;
using ::testing::AllOf;
using ::testing::HasSubstr;

using Stream = Subprocess::Stream;

constexpr int kNodes = 3;

// A builder no node observes: a ban the test asks of a replica that must refuse it.
constexpr core::BuilderIndex kRefusedBan = 9001;

class ReplicasTest : public ReplicaFleetTest {
 protected:
  ReplicasTest() : seed_(SeedFrom("REPLICAS_SEED")) {}

  void SetUp() override {
    std::cerr << "replicas seed " << seed_ << " (replay: --test_env=REPLICAS_SEED=" << seed_ << ")"
              << std::endl;
    RecordProperty("seed", std::to_string(seed_));
    ReplicaFleetTest::SetUp();
  }

  // Starts `count` replicas: the first leads, the others stand by. Talks to the leader.
  void StartReplicas(int count) {
    AddReplicas(count);
    ASSERT_NO_FATAL_FAILURE(StartReplica(0));
    ASSERT_TRUE(AwaitLeadingLine(0).has_value()) << "replica 1 did not lead (its log is above)";
    for (int i = 1; i < count; ++i) {
      ASSERT_NO_FATAL_FAILURE(StartReplica(i));
      ASSERT_TRUE(AwaitStandbyLine(i).has_value())
          << replicas_[i].name << " did not stand by (its log is above)";
    }
    ASSERT_EQ(AwaitLeader(), std::optional<size_t>(0));
  }

  // Starts the nodes and the load on them, and waits until every node streams to the leader.
  void StartLoad() {
    StartNodes(kNodes);
    std::vector<Node*> nodes;
    for (int i = 0; i < kNodes; ++i) nodes.push_back(&node(i));
    load_ = std::make_unique<RandomLoad>(std::move(nodes), seed_);
    ASSERT_TRUE(ObserveUntil([&] { return AllNodesConnected(); }))
        << "the nodes did not connect to the leader";
  }

  // Observes while waiting for `condition`.
  bool ObserveUntil(const std::function<bool()>& condition) {
    return PollUntil([&] {
      load_->ObserveUntil(absl::Now() + absl::Milliseconds(20));
      return condition();
    });
  }

  // Each node's acknowledged count, as it printed it last.
  std::vector<uint64_t> Acknowledged() {
    std::vector<uint64_t> acknowledged;
    for (int i = 0; i < kNodes; ++i) {
      const std::optional<testing::AckLine> ack = node(i).LatestAck();
      acknowledged.push_back(ack.has_value() ? ack->acknowledged : 0);
    }
    return acknowledged;
  }

  // Observes until every node has been acknowledged more than it was at the call.
  bool AcknowledgementsGoOn() {
    const std::vector<uint64_t> before = Acknowledged();
    return ObserveUntil([&] {
      const std::vector<uint64_t> now = Acknowledged();
      for (int i = 0; i < kNodes; ++i) {
        if (now[i] <= before[i]) return false;
      }
      return true;
    });
  }

  // An operator's ban of `builder`, sent to the replica on `port`.
  absl::StatusOr<v1::Policy> BanOn(int port, core::BuilderIndex builder) {
    auto admin = v1::Admin::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
    v1::BanBuilderRequest request;
    request.set_builder_index(builder);
    request.set_reason("replicas test");
    return CallUnary(*admin, &v1::Admin::Stub::async::BanBuilder, request);
  }

  const uint64_t seed_;
  std::unique_ptr<RandomLoad> load_;
};

// etcd's faults under one breakerd. The lease is long: etcd keeps it through the outage (it
// expires no lease without a quorum), and breakerd counts it on its own clock, so an outage
// shorter than its TTL less the margin ends as a storage fault clears, with the same lease.
TEST_F(ReplicasTest, OneEtcdMemberDownChangesNothingTwoRefuseWritesUntilQuorumReturns) {
  lease_ttl_seconds_ = 60;
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain(), kBanEveryFailure));
  ASSERT_NO_FATAL_FAILURE(StartReplicas(1));
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  ASSERT_TRUE(AcknowledgementsGoOn());

  // One member of three down (the first of breakerd's endpoints, the one it talks to): the
  // quorum holds, and so does everything else.
  etcd_->Kill(0);
  ASSERT_TRUE(AcknowledgementsGoOn()) << "acknowledgements stopped with one etcd member down";
  EXPECT_TRUE(HealthIs("SERVING")) << Health();
  for (int i = 0; i < kNodes; ++i) EXPECT_TRUE(node(i).AwaitHandled());

  // Two down: no quorum. The next write fails, and from then on changes are refused.
  etcd_->Kill(1);
  const absl::Time lost = absl::Now();
  ASSERT_TRUE(ObserveUntil([&] { return HealthIs("NOT_SERVING"); }))
      << "health still " << Health() << " without an etcd quorum";
  std::cerr << "etcd quorum lost: NOT_SERVING after " << absl::Now() - lost << std::endl;
  EXPECT_THAT(BanOn(replicas_[0].port, kRefusedBan), StatusIs(absl::StatusCode::kUnavailable));
  // Nothing is acknowledged while etcd has no quorum: nothing can be committed.
  const std::vector<uint64_t> at_fault = Acknowledged();
  load_->ObserveUntil(absl::Now() + absl::Seconds(2));
  EXPECT_EQ(Acknowledged(), at_fault) << "acknowledged while etcd had no quorum";
  EXPECT_TRUE(HealthIs("NOT_SERVING")) << Health();
  const Told told = load_->WhatTheNodesWereTold();

  // Quorum returns: breakerd goes on by itself, and takes what the nodes held meanwhile.
  ASSERT_THAT(etcd_->Restart(0), IsOk());
  const absl::Time back = absl::Now();
  ASSERT_THAT(etcd_->Restart(1), IsOk());
  EXPECT_TRUE(ObserveUntil([&] { return HealthIs("SERVING"); })) << Health();
  std::cerr << "etcd quorum back: SERVING after " << absl::Now() - back << std::endl;
  ASSERT_TRUE(AcknowledgementsGoOn()) << "acknowledgements did not resume with the quorum";
  ASSERT_NO_FATAL_FAILURE(ExpectHolds(told, "after the etcd outage"));
  // The refused ban is nowhere (ExpectEverythingLanded: the bans are the load's failures).
  ExpectEverythingLanded(*load_, "after the etcd outage");
}

}  // namespace
}  // namespace breaker
