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
// times are logged ("failover: ...", and the XML's failover_to_serving_ms). The random schedule
// of the crash loop comes from a seed it prints; REPLICAS_SEED=N (bazel test --test_env)
// replays it.

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
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

using ::breaker::testing::AllHealthIs;
using ::breaker::testing::CallUnary;
using ::breaker::testing::CheckHealth;
using ::breaker::testing::Deadline;
using ::breaker::testing::GloasChain;
using ::breaker::testing::IsOk;
using ::breaker::testing::kBanEveryFailure;
using ::breaker::testing::kSanitizerSlowdown;
using ::breaker::testing::Node;
using ::breaker::testing::PollUntil;
using ::breaker::testing::RandomLoad;
using ::breaker::testing::ReplicaFleetTest;
using ::breaker::testing::SeedFrom;
using ::breaker::testing::StatusIs;
using ::breaker::testing::Subprocess;
using ::breaker::testing::Told;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

using Stream = Subprocess::Stream;

constexpr int kNodes = 3;

// Builders no node observes: bans the test asks of a replica that must refuse them.
constexpr core::BuilderIndex kRefusedBan = 9001;
constexpr core::BuilderIndex kFencedBan = 9002;

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

  // A node's Report of one observation that changes nothing, sent to the replica on `port`.
  absl::StatusOr<v1::ReportResponse> ReportTo(int port) {
    auto stub = v1::Breaker::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
    v1::ReportRequest request;
    request.set_node_id("reporter");
    v1::Observation* observation = request.mutable_observations()->add_observations();
    observation->set_sequence(1);
    observation->set_slot(CurrentSlot());
    observation->mutable_bid_seen()->set_builder_index(60);
    return CallUnary(*stub, &v1::Breaker::Stub::async::Report, request);
  }

  // Expects that the journal in etcd was written once per sequence: its keys follow the
  // snapshot's sequence without a gap, each written once (etcd's version 1: no entry replaced
  // by another writer's) and in sequence order, and none holds an admin ban of `foreign_ban`.
  void ExpectJournalWrittenOnce(core::BuilderIndex foreign_ban) {
    uint64_t snapshot_sequence = 0;
    absl::StatusOr<std::vector<mvccpb::KeyValue>> snapshot = EtcdRange("/snapshot");
    ASSERT_THAT(snapshot, IsOk());
    for (const mvccpb::KeyValue& kv : *snapshot) {
      // <prefix>/snapshot holds "generation sequence chunks bytes".
      if (kv.key() != prefix_ + "/snapshot") continue;
      const std::vector<std::string> fields = absl::StrSplit(kv.value(), ' ');
      ASSERT_GE(fields.size(), 2u) << kv.value();
      ASSERT_TRUE(absl::SimpleAtoi(fields[1], &snapshot_sequence)) << kv.value();
    }
    absl::StatusOr<std::vector<mvccpb::KeyValue>> journal = EtcdRange("/journal/");
    ASSERT_THAT(journal, IsOk());
    ASSERT_FALSE(journal->empty()) << "no journal entry under " << prefix_;
    uint64_t expected = snapshot_sequence + 1;
    int64_t previous_revision = 0;
    for (const mvccpb::KeyValue& kv : *journal) {
      uint64_t sequence = 0;
      const std::string key = kv.key();
      ASSERT_TRUE(absl::SimpleAtoi(key.substr(key.rfind('/') + 1), &sequence)) << key;
      ASSERT_EQ(sequence, expected) << "a gap in the journal before " << key;
      ++expected;
      EXPECT_EQ(kv.version(), 1) << key << " was written " << kv.version() << " times";
      // Appended in order: no sequence was taken out of turn by another writer.
      EXPECT_GE(kv.create_revision(), previous_revision) << key << " was written out of order";
      previous_revision = kv.create_revision();
      state::v1::JournalEntry entry;
      ASSERT_TRUE(entry.ParseFromString(kv.value())) << key << " is not a journal entry";
      EXPECT_FALSE(entry.has_admin() && entry.admin().has_ban() &&
                   entry.admin().ban().builder_index() == foreign_ban)
          << key << " holds the ban sent to the fenced leader: " << entry.ShortDebugString();
    }
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

// An outage longer than the lease: breakerd counts the lease on its own clock and steps down
// by itself (etcd, without a quorum, expires nothing), standing by; once the quorum is back and
// its old lease has run out in etcd, it campaigns, leads again and restores what it wrote.
TEST_F(ReplicasTest, ALeaderCutOffFromEtcdPastItsLeaseStepsDownAndLeadsAgainWithTheQuorum) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain(), kBanEveryFailure));
  ASSERT_NO_FATAL_FAILURE(StartReplicas(1));
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  ASSERT_TRUE(AcknowledgementsGoOn());

  const size_t mark = ReplicaLogMark(0);
  const absl::Time lost = absl::Now();
  etcd_->Kill(0);
  etcd_->Kill(1);
  ASSERT_TRUE(ObserveUntil([&] {
    for (const std::string& line : ReplicaLog(0, mark)) {
      if (absl::StrContains(line, "no longer leads")) return true;
    }
    return false;
  })) << "breakerd did not step down without etcd past its lease (its log is above)";
  std::cerr << "etcd quorum lost: deposed after " << absl::Now() - lost << " (lease TTL "
            << lease_ttl_seconds_ << " s)" << std::endl;
  ASSERT_TRUE(AwaitStandbyLine(0, mark).has_value()) << "the deposed leader did not stand by";
  EXPECT_TRUE(PollUntil([&] { return HealthIs("NOT_SERVING"); })) << Health();
  const std::vector<uint64_t> deposed = Acknowledged();
  load_->ObserveUntil(absl::Now() + absl::Seconds(1));
  EXPECT_EQ(Acknowledged(), deposed) << "acknowledged while etcd had no quorum";
  const Told told = load_->WhatTheNodesWereTold();

  const size_t standby_mark = ReplicaLogMark(0);
  ASSERT_THAT(etcd_->Restart(0), IsOk());
  const absl::Time back = absl::Now();
  ASSERT_THAT(etcd_->Restart(1), IsOk());
  ASSERT_TRUE(AwaitLeadingLine(0, standby_mark).has_value())
      << "breakerd did not lead again with the quorum back";
  ASSERT_EQ(AwaitLeader(), std::optional<size_t>(0));
  std::cerr << "etcd quorum back: leading and SERVING after " << absl::Now() - back << std::endl;
  ASSERT_NO_FATAL_FAILURE(ExpectHolds(told, "after leading again"));
  ASSERT_TRUE(AcknowledgementsGoOn()) << "acknowledgements did not resume";
  ExpectEverythingLanded(*load_, "after leading again");
}

// After an etcd outage that deposed the leader, the quorum comes back to replicas that both
// campaign while the old leader key is still held by the leader's old lease: one of them leads,
// once, every node reconnects once, and every step-down on the way says why in the log.
TEST_F(ReplicasTest, AfterAnEtcdOutageOneReplicaLeadsOnceAndEveryStepDownSaysWhy) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain(), kBanEveryFailure));
  ASSERT_NO_FATAL_FAILURE(StartReplicas(2));
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  ASSERT_TRUE(AcknowledgementsGoOn());

  const std::array<size_t, 2> outage_marks = {ReplicaLogMark(0), ReplicaLogMark(1)};
  etcd_->Kill(0);
  etcd_->Kill(1);
  ASSERT_TRUE(AwaitStandbyLine(0, outage_marks[0]).has_value())
      << "the leader did not step down and stand by without etcd past its lease";
  const std::array<size_t, 2> marks = {ReplicaLogMark(0), ReplicaLogMark(1)};
  ASSERT_THAT(etcd_->Restart(0), IsOk());
  ASSERT_THAT(etcd_->Restart(1), IsOk());
  ASSERT_TRUE(AwaitLeader().has_value()) << "no replica led with the quorum back";
  ASSERT_TRUE(ObserveUntil([&] { return AllNodesConnected(); }))
      << "the nodes did not reconnect to the new leader";
  // Long enough for any stale lease to run out and any flap to show.
  load_->ObserveUntil(absl::Now() + absl::Seconds(3 * lease_ttl_seconds_));
  ASSERT_TRUE(AcknowledgementsGoOn()) << "acknowledgements did not resume";

  int leaderships = 0;
  std::array<int, kNodes> connections = {};
  for (size_t replica = 0; replica < 2; ++replica) {
    for (const std::string& line : ReplicaLog(replica, outage_marks[replica])) {
      if (absl::StrContains(line, "stepped down from leading")) {
        EXPECT_THAT(line, HasSubstr("because")) << "a step-down without its cause";
      }
    }
    for (const std::string& line : ReplicaLog(replica, marks[replica])) {
      if (absl::StrContains(line, absl::StrCat("leading ", prefix_, " in etcd"))) ++leaderships;
      // Its own old key is not a leader to follow.
      EXPECT_THAT(line,
                  Not(HasSubstr(absl::StrCat("the leader is at ", replicas_[replica].address()))));
      for (int i = 0; i < kNodes; ++i) {
        if (absl::StrContains(line, absl::StrCat("node ", node(i).id(), " connected"))) {
          ++connections[i];
        }
      }
    }
  }
  EXPECT_EQ(leaderships, 1) << "the lead changed hands more than once after the outage";
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_EQ(connections[i], 1) << node(i).id() << " reconnected more than once";
  }
}

// What a load balancer sees as etcd loses its quorum under the leader: health, asked every
// 150 ms with a deadline of 1 s (times kSanitizerSlowdown, as the bounds below), answers every
// time within it, and says NOT_SERVING within the
// lease's TTL and 2 s of the second member's kill, no later than a write is refused, and never
// SERVING again while the quorum is gone. The leader learns of it from its lease's keepalives,
// not from a health check that asks etcd.
TEST_F(ReplicasTest, HealthTurnsNotServingWithinTheLeaseOfALostQuorumAndAnswersThroughout) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain(), kBanEveryFailure));
  ASSERT_NO_FATAL_FAILURE(StartReplicas(1));
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  ASSERT_TRUE(AcknowledgementsGoOn());

  constexpr absl::Duration kPoll = absl::Milliseconds(150);
  const absl::Duration kHealthDeadline = absl::Seconds(kSanitizerSlowdown);
  const absl::Duration bound = absl::Seconds(lease_ttl_seconds_ + 2 * kSanitizerSlowdown);
  const size_t mark = ReplicaLogMark(0);
  etcd_->Kill(0);
  etcd_->Kill(1);
  const absl::Time lost = absl::Now();
  // An operator's write sent at once: it waits for etcd until it is refused.
  absl::StatusOr<v1::Policy> ban = absl::UnknownError("not answered");
  absl::Time ban_refused;
  std::thread banner([&] {
    ban = BanOn(replicas_[0].port, kRefusedBan);
    ban_refused = absl::Now();
  });
  std::optional<absl::Duration> not_serving;
  std::optional<absl::Time> stood_by;
  // The step-down starts the server again in the same process: for a few milliseconds its port
  // is closed, and a check is refused at once (to a load balancer, as unhealthy as
  // NOT_SERVING). Such a refusal must not last. When the lease runs out first, the step-down
  // follows its NOT_SERVING within one poll, and the refusal is the first unhealthy answer seen.
  std::optional<absl::Time> refused_since;
  absl::Duration slowest;
  absl::Duration longest_refusal;
  int calls = 0;
  int refusals = 0;
  // Until the leader stepped down and has stood by for a while: across the step-down too.
  while (!stood_by.has_value() || absl::Now() < *stood_by + absl::Seconds(2)) {
    ASSERT_LT(absl::Now(), lost + absl::Seconds(60))
        << "the leader did not stand by without an etcd quorum (its log is above)";
    load_->ObserveUntil(absl::Now() + kPoll);
    bool all_not_serving = true;
    for (const char* service : {"", "breaker.v1.Breaker", "breaker.v1.Admin"}) {
      const absl::Time asked = absl::Now();
      const std::string answer = CheckHealth(replicas_[0].port, service, kHealthDeadline);
      const absl::Duration took = absl::Now() - asked;
      ++calls;
      slowest = std::max(slowest, took);
      EXPECT_LT(took, kHealthDeadline) << "health of '" << service << "' took " << took << ", "
                                       << asked - lost << " after the quorum was lost";
      if (absl::StartsWith(answer, "error")) {
        ++refusals;
        if (!refused_since.has_value()) refused_since = asked;
        continue;
      }
      if (refused_since.has_value()) {
        longest_refusal = std::max(longest_refusal, asked - *refused_since);
        refused_since.reset();
      }
      if (not_serving.has_value()) {
        EXPECT_EQ(answer, "NOT_SERVING")
            << "health of '" << service << "' " << asked - lost << " after the quorum was lost";
      }
      all_not_serving = all_not_serving && answer == "NOT_SERVING";
    }
    if (all_not_serving && !not_serving.has_value()) not_serving = absl::Now() - lost;
    if (!stood_by.has_value()) {
      for (const std::string& line : ReplicaLog(0, mark)) {
        if (absl::StrContains(line, absl::StrCat("standby for ", prefix_))) stood_by = absl::Now();
      }
    }
  }
  banner.join();
  ASSERT_TRUE(not_serving.has_value())
      << "health never said NOT_SERVING (nor was refused) without an etcd quorum";
  std::cerr << "etcd quorum lost: NOT_SERVING after " << *not_serving << " (lease TTL "
            << lease_ttl_seconds_ << " s), the ban refused after " << ban_refused - lost
            << ", standby after " << *stood_by - lost << "; " << calls
            << " health calls, the slowest " << slowest << "; " << refusals
            << " refused while the server started again, for at most " << longest_refusal
            << std::endl;
  EXPECT_LE(*not_serving, bound) << "health said NOT_SERVING too late";
  EXPECT_FALSE(refused_since.has_value()) << "health was still refused at the end";
  EXPECT_LT(longest_refusal, kHealthDeadline) << "health was refused for too long";
  EXPECT_THAT(ban, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no longer leads")));
  // Health said so no later than the write was refused: within the resolution of the polls.
  EXPECT_LE(*not_serving, ban_refused - lost + 2 * kPoll * kSanitizerSlowdown)
      << "health said NOT_SERVING after a write was refused";
}

TEST_F(ReplicasTest, AStandbyTakesOverFromAKilledLeaderWithEverythingAcknowledged) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain(), kBanEveryFailure));
  ASSERT_NO_FATAL_FAILURE(StartReplicas(2));
  // The leader key names the leader's advertised address.
  absl::StatusOr<std::optional<mvccpb::KeyValue>> leader_key = LeaderKey();
  ASSERT_THAT(leader_key, IsOk());
  ASSERT_TRUE(leader_key->has_value());
  EXPECT_EQ((*leader_key)->value(), replicas_[0].address());
  // The standby refuses nodes and operators alike, naming the leader.
  EXPECT_TRUE(AllHealthIs(replicas_[1].port, "NOT_SERVING"));
  const auto names_leader = AllOf(HasSubstr("standby"), HasSubstr(replicas_[0].address()));
  EXPECT_THAT(ReportTo(replicas_[1].port), StatusIs(absl::StatusCode::kUnavailable, names_leader));
  EXPECT_THAT(BanOn(replicas_[1].port, kRefusedBan),
              StatusIs(absl::StatusCode::kUnavailable, names_leader));

  ASSERT_NO_FATAL_FAILURE(StartLoad());
  ASSERT_TRUE(AcknowledgementsGoOn());
  load_->ObserveUntil(absl::Now() + absl::Milliseconds(load_->Uniform(200, 1000)));

  const size_t standby_mark = ReplicaLogMark(1);
  const absl::Time killed = absl::Now();
  const int status = StopReplica(0, SIGKILL);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << Subprocess::DescribeStatus(status);
  // Everything the killed leader told the nodes (they keep observing meanwhile, buffering).
  const Told told = load_->WhatTheNodesWereTold();
  std::optional<absl::Time> led;
  ASSERT_TRUE(ObserveUntil([&] {
    for (const std::string& line : ReplicaLog(1, standby_mark)) {
      if (absl::StrContains(line, absl::StrCat("leading ", prefix_, " in etcd"))) {
        led = absl::Now();
        return true;
      }
    }
    return false;
  })) << "the standby did not lead after the leader was killed";
  ASSERT_EQ(AwaitLeader(/*except=*/0), std::optional<size_t>(1));
  const absl::Time serving = absl::Now();
  std::cerr << "failover: SIGKILL of the leader to the standby's leading line " << *led - killed
            << ", to its health SERVING " << serving - killed << " (lease TTL "
            << lease_ttl_seconds_ << " s)" << std::endl;
  RecordProperty("failover_to_serving_ms",
                 std::to_string(absl::ToInt64Milliseconds(serving - killed)));
  ASSERT_TRUE(ObserveUntil([&] { return AllNodesConnected(); }))
      << "the nodes did not reconnect to the new leader";
  std::cerr << "failover: SIGKILL of the leader to every node streaming to the new one "
            << absl::Now() - killed << std::endl;

  // The new leader holds everything acknowledged, under the same fleet id and versions.
  ASSERT_NO_FATAL_FAILURE(ExpectHolds(told, "after SIGKILL of the leader"));
  leader_key = LeaderKey();
  ASSERT_THAT(leader_key, IsOk());
  ASSERT_TRUE(leader_key->has_value());
  EXPECT_EQ((*leader_key)->value(), replicas_[1].address());

  // The killed replica comes back as a standby; every node reconnects to the new leader and
  // converges, its versions never going back.
  ASSERT_NO_FATAL_FAILURE(StartReplica(0));
  ASSERT_TRUE(AwaitStandbyLine(0).has_value()) << "the restarted replica did not stand by";
  ASSERT_TRUE(AcknowledgementsGoOn()) << "the nodes are not acknowledged by the new leader";
  ExpectEverythingLanded(*load_, "after the failover");
}

TEST_F(ReplicasTest, ASigtermedLeaderHandsOverBeforeItDrains) {
  // A lease that would take a minute to expire, and a leader that drains for a minute after
  // SIGTERM: the standby can lead at once only if the leader revokes its lease first.
  lease_ttl_seconds_ = 60;
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain(), kBanEveryFailure));
  AddReplicas(2);
  replicas_[0].extra_flags = {"--drain_seconds=60"};
  ASSERT_NO_FATAL_FAILURE(StartReplica(0));
  ASSERT_TRUE(AwaitLeadingLine(0).has_value()) << "replica 1 did not lead (its log is above)";
  ASSERT_NO_FATAL_FAILURE(StartReplica(1));
  ASSERT_TRUE(AwaitStandbyLine(1).has_value()) << "replica 2 did not stand by";
  ASSERT_EQ(AwaitLeader(), std::optional<size_t>(0));
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  ASSERT_TRUE(AcknowledgementsGoOn());

  const size_t leader_mark = ReplicaLogMark(0);
  const size_t standby_mark = ReplicaLogMark(1);
  const absl::Time terminated = absl::Now();
  replicas_[0].process->Kill(SIGTERM);
  const Told told = load_->WhatTheNodesWereTold();
  ASSERT_TRUE(AwaitLeadingLine(1, standby_mark).has_value())
      << "the standby did not lead after the leader's SIGTERM";
  const absl::Duration led = absl::Now() - terminated;
  std::cerr << "handover: SIGTERM of the leader to the standby's leading line " << led
            << " (lease TTL " << lease_ttl_seconds_ << " s, drain 60 s)" << std::endl;
  RecordProperty("handover_to_leading_ms", std::to_string(absl::ToInt64Milliseconds(led)));
  // Still draining: the lead went before the drain, not after it.
  EXPECT_FALSE(replicas_[0].process->WaitUntilExit(absl::Now()).has_value());
  EXPECT_THAT(ReplicaLog(0, leader_mark), Contains(HasSubstr("resigned the lead of")));
  ASSERT_EQ(AwaitLeader(/*except=*/0), std::optional<size_t>(1));
  ASSERT_TRUE(ObserveUntil([&] { return AllNodesConnected(); }))
      << "the nodes did not reconnect to the new leader";
  ASSERT_NO_FATAL_FAILURE(ExpectHolds(told, "after the leader's SIGTERM"));
  const int status = StopReplica(0, SIGKILL);  // no need to wait out its drain
  EXPECT_TRUE(WIFSIGNALED(status)) << Subprocess::DescribeStatus(status);
}

TEST_F(ReplicasTest, APausedLeaderIsFencedAndStepsDownWhenItResumes) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain(), kBanEveryFailure));
  ASSERT_NO_FATAL_FAILURE(StartReplicas(2));
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  ASSERT_TRUE(AcknowledgementsGoOn());

  // Paused past its lease: its connections stay open, nothing answers on them.
  const size_t standby_mark = ReplicaLogMark(1);
  const absl::Time paused = absl::Now();
  PauseReplica(0);
  ASSERT_TRUE(AwaitLeadingLine(1, standby_mark).has_value())
      << "the standby did not lead while the leader was paused";
  ASSERT_EQ(AwaitLeader(), std::optional<size_t>(1));
  std::cerr << "failover: SIGSTOP of the leader to the standby's health SERVING "
            << absl::Now() - paused << " (lease TTL " << lease_ttl_seconds_ << " s)" << std::endl;
  absl::StatusOr<std::optional<mvccpb::KeyValue>> leader_key = LeaderKey();
  ASSERT_THAT(leader_key, IsOk());
  ASSERT_TRUE(leader_key->has_value());
  EXPECT_EQ((*leader_key)->value(), replicas_[1].address());
  const int64_t handover_revision = (*leader_key)->create_revision();

  // The old leader resumes, unaware at first. What it is asked to write now must not land
  // (refused, or cut off as it steps down; below: it is nowhere).
  std::vector<size_t> node_marks;
  for (int i = 0; i < kNodes; ++i)
    node_marks.push_back(node(i).process().LineCount(Stream::kStderr));
  const size_t old_mark = ReplicaLogMark(0);
  ResumeReplica(0);
  const absl::StatusOr<v1::Policy> fenced = BanOn(replicas_[0].port, kFencedBan);
  EXPECT_FALSE(fenced.ok()) << "the resumed leader took a ban: " << fenced->ShortDebugString();
  std::cerr << "a ban sent to the resumed leader: " << fenced.status() << std::endl;
  // It steps down by itself, and stands by again.
  EXPECT_TRUE(replicas_[0].process->WaitForLine(
      Stream::kStderr,
      [](absl::string_view line) { return absl::StrContains(line, "no longer leads"); }, Deadline(),
      old_mark))
      << "the resumed leader did not log that it was deposed";
  EXPECT_TRUE(AwaitStandbyLine(0, old_mark).has_value()) << "the resumed leader did not stand by";
  EXPECT_TRUE(PollUntil([&] { return AllHealthIs(replicas_[0].port, "NOT_SERVING"); }))
      << CheckHealth(replicas_[0].port);
  for (const std::string& line : ReplicaLog(0, old_mark)) {
    EXPECT_FALSE(absl::StrContains(line, absl::StrCat("leading ", prefix_, " in etcd")))
        << "the resumed leader led again while the new one held the lease: " << line;
  }
  // It ended its node streams: every node left it and streams to the new leader.
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_TRUE(node(i).process().WaitForLine(
        Stream::kStderr,
        [&](absl::string_view line) {
          return absl::StrContains(line, replicas_[0].address()) &&
                 (absl::StrContains(line, "ended") || absl::StrContains(line, "reconnecting"));
        },
        Deadline(), node_marks[i]))
        << node(i).id() << "'s stream to the resumed leader did not end (its log is above)";
  }
  EXPECT_EQ(Leader(), std::optional<size_t>(1));

  ASSERT_TRUE(AcknowledgementsGoOn()) << "the nodes are not acknowledged by the new leader";
  // Everything acknowledged, by either leader, is in the new one's state, and the ban sent to
  // the fenced one is not (the bans are exactly the load's failures).
  ExpectEverythingLanded(*load_, "after the paused leader resumed");
  // Nothing the old leader wrote landed after the handover: the journal has one writer per
  // sequence, and no trace of the ban it was sent.
  ExpectJournalWrittenOnce(kFencedBan);
  leader_key = LeaderKey();
  ASSERT_THAT(leader_key, IsOk());
  ASSERT_TRUE(leader_key->has_value());
  EXPECT_EQ((*leader_key)->create_revision(), handover_revision)
      << "the leader key changed hands again";
}

// An operator's call that reaches a leader while it is paused past its lease is answered as it
// resumes and steps down, like every call then: UNAVAILABLE, saying that it no longer leads.
TEST_F(ReplicasTest, AnAdminCallInFlightAtAPausedLeaderEndsUnavailableNamingTheStepDown) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain(), kBanEveryFailure));
  ASSERT_NO_FATAL_FAILURE(StartReplicas(2));
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  ASSERT_TRUE(AcknowledgementsGoOn());

  // The operator's connection to the leader is open before it pauses.
  auto admin = v1::Admin::NewStub(
      grpc::CreateChannel(replicas_[0].address(), grpc::InsecureChannelCredentials()));
  ASSERT_THAT(CallUnary(*admin, &v1::Admin::Stub::async::GetPolicy, v1::GetPolicyRequest()),
              IsOk());
  const size_t standby_mark = ReplicaLogMark(1);
  PauseReplica(0);
  ASSERT_TRUE(AwaitLeadingLine(1, standby_mark).has_value())
      << "the standby did not lead while the leader was paused";
  ASSERT_EQ(AwaitLeader(), std::optional<size_t>(1));

  // Sent on that connection to the paused leader: the request waits in its socket.
  absl::StatusOr<v1::Policy> in_flight = absl::UnknownError("not answered");
  std::thread caller([&] {
    v1::BanBuilderRequest request;
    request.set_builder_index(kFencedBan);
    request.set_reason("replicas test");
    in_flight = CallUnary(*admin, &v1::Admin::Stub::async::BanBuilder, request);
  });
  load_->ObserveUntil(absl::Now() + absl::Seconds(1));
  const size_t old_mark = ReplicaLogMark(0);
  ResumeReplica(0);
  caller.join();
  std::cerr << "a ban in flight at the paused leader as it resumed: " << in_flight.status()
            << std::endl;
  EXPECT_THAT(in_flight, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no longer leads")));
  EXPECT_TRUE(AwaitStandbyLine(0, old_mark).has_value()) << "the resumed leader did not stand by";
  ASSERT_TRUE(AcknowledgementsGoOn()) << "the nodes are not acknowledged by the new leader";
  ExpectEverythingLanded(*load_, "after the paused leader resumed");
}

// The crash loop of crash_loop_test, with two replicas: the leader is SIGKILLed at random
// moments and restarted (it comes back as a standby, or leads when it wins the campaign), and
// now and then an etcd member is killed with it and restarted after the failover.
TEST_F(ReplicasTest, AcknowledgedStateSurvivesLeadersAndEtcdMembersKilledAtRandom) {
  constexpr int kKills = 6;
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain(), kBanEveryFailure));
  ASSERT_NO_FATAL_FAILURE(StartReplicas(2));
  ASSERT_NO_FATAL_FAILURE(StartLoad());
  RandomLoad& load = *load_;
  size_t leader = 0;
  std::vector<std::string> failovers;

  for (int kill = 1; kill <= kKills; ++kill) {
    const std::string context = absl::StrCat("SIGKILL #", kill, ", seed ", seed_);
    if (load.Uniform(0, 2) != 0) {
      ASSERT_TRUE(ObserveUntil([&] { return AllNodesConnected(); }))
          << "the nodes did not reconnect; " << context;
    }
    load.ObserveUntil(absl::Now() + absl::Milliseconds(load.Uniform(50, 1500)));
    std::optional<int> member;
    if (load.Uniform(0, 2) == 0) {
      member = static_cast<int>(load.Uniform(0, 2));
      etcd_->Kill(*member);
    }
    const absl::Time killed = absl::Now();
    const int status = StopReplica(leader, SIGKILL);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << replicas_[leader].name << " " << Subprocess::DescribeStatus(status) << "; " << context;
    const Told told = load.WhatTheNodesWereTold();
    ASSERT_NO_FATAL_FAILURE(StartReplica(leader));
    std::optional<size_t> next;
    ASSERT_TRUE(ObserveUntil([&] { return (next = Leader()).has_value(); }))
        << "no replica leads; " << context;
    failovers.push_back(absl::FormatDuration(absl::Now() - killed));
    std::cerr << "crash loop: " << context
              << (member ? absl::StrCat(" with etcd member ", *member) : "") << ", "
              << replicas_[*next].name << " leads after " << failovers.back() << "; "
              << absl::StrJoin(told.summary, "; ") << std::endl;
    leader = *next;
    TalkTo(leader);
    ASSERT_NO_FATAL_FAILURE(ExpectHolds(told, context));
    if (member.has_value()) {
      ASSERT_THAT(etcd_->Restart(*member), IsOk()) << context;
    }
  }
  std::cerr << "failover: SIGKILL of the leader to a leader's health SERVING, " << kKills
            << " times: " << absl::StrJoin(failovers, ", ") << std::endl;
  ExpectEverythingLanded(load, absl::StrCat("after the last failover, seed ", seed_));
}

}  // namespace
}  // namespace breaker
