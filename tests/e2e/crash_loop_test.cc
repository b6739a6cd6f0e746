// Crash safety of breakerd, as a supervisor would see it: breakerd is SIGKILLed at random
// moments while several node processes stream observations, and restarted on the same state
// directory and port each time, over and over. A SIGKILL gives no chance to flush anything, so
// whatever breakerd told anyone before it (an acknowledged observation, a policy version, a ban
// in a policy) must already have been in its journal.
//
// What the nodes printed is the record of what breakerd told them: `observations ...
// acknowledged=M` means the node's first M observations are handled (sequence numbers are
// assigned in script order, and acknowledgements are cumulative), `policy ... version=V
// banned=[...]` is a policy breakerd sent. After every restart, and again at the end, the test
// checks that the state holds all of it. Each failure is a new block of a builder no other
// failure names, and bans outlast the test, so every acknowledged failure is one ban that must
// stay.
//
// The schedule (which node observes what, when breakerd dies, for how long) comes from a
// seeded PRNG; the seed is printed, and CRASH_LOOP_SEED=N (bazel test --test_env) replays the
// same schedule (the processes' timing around it differs from run to run, as it would in
// production). Every wait is deadline-based and generous; nothing asserts a duration.

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "core/types.h"
#include "gtest/gtest.h"
#include "tests/support/fleet_harness.h"
#include "tests/support/status_matchers.h"
#include "tests/support/subprocess.h"

namespace breaker {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::testing::AckLine;
using ::breaker::testing::Bid;
using ::breaker::testing::Deadline;
using ::breaker::testing::FleetTest;
using ::breaker::testing::GloasChain;
using ::breaker::testing::IsOk;
using ::breaker::testing::Missing;
using ::breaker::testing::ParseAckLine;
using ::breaker::testing::PolicyLine;
using ::breaker::testing::PollUntil;
using ::breaker::testing::Subprocess;

using BuilderSet = std::set<core::BuilderIndex>;

constexpr size_t kNodes = 4;
// SIGKILLs in a row, each followed by a restart on the same state directory.
constexpr int kKills = 20;

// Each failure bans a builder of its own for 1000 epochs (beyond any test, on 12 s slots), and
// no number of banned builders changes the mode: the state only ever gains bans, so the bans
// it must hold are exactly those of the failures acknowledged.
constexpr char kRules[] =
    "blacklist_period_epochs: 1000\n"
    "critical_failed_builders: 1000000\n"
    "critical_failed_untrusted_builders: 1000000\n"
    "max_tracked_builders: 8192\n";

// Bids come from builders that never fail: they load the journal, and change no decision.
constexpr core::BuilderIndex kFirstBidder = 50;
constexpr core::BuilderIndex kBidders = 20;

BuilderSet Difference(const BuilderSet& a, const BuilderSet& b) {
  BuilderSet difference;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(),
                      std::inserter(difference, difference.end()));
  return difference;
}

BuilderSet BannedIn(const v1::Policy& policy) {
  BuilderSet banned;
  for (const v1::BuilderBan& ban : policy.banned_builders()) banned.insert(ban.builder_index());
  return banned;
}

// The seed of the schedule: CRASH_LOOP_SEED, or a fresh one.
uint64_t Seed() {
  uint64_t seed = 0;
  if (const char* text = std::getenv("CRASH_LOOP_SEED");
      text != nullptr && absl::SimpleAtoi(text, &seed)) {
    return seed;
  }
  return (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
}

// What the test wrote to one node's script.
struct Script {
  // (position in the script, counted from 0; builder) of every failure, in script order.
  std::vector<std::pair<uint64_t, core::BuilderIndex>> failures;
  // The builder of the node's next failure: each node has a range of its own.
  core::BuilderIndex next_builder = 0;
};

// What breakerd had told the fleet when it died, as the nodes printed it.
struct Told {
  // Builders of the failures each node had been told were handled.
  BuilderSet acknowledged_failures;
  // Every builder banned in a fleet policy a node applied.
  BuilderSet banned;
  // The highest policy version any node applied.
  uint64_t max_version = 0;
  // Per node, "bn-1 acknowledged=12/15 version=7".
  std::vector<std::string> summary;
};

class CrashLoopTest : public FleetTest {
 protected:
  CrashLoopTest() : seed_(Seed()), random_(seed_) {}

  void SetUp() override {
    // In the test's log (and its XML), so that a failure can be replayed.
    std::cerr << "crash loop seed " << seed_ << " (replay: --test_env=CRASH_LOOP_SEED=" << seed_
              << ")" << std::endl;
    RecordProperty("seed", std::to_string(seed_));
  }

  uint64_t Uniform(uint64_t low, uint64_t high) {
    return std::uniform_int_distribution<uint64_t>(low, high)(random_);
  }

  // Writes observations to random nodes until `until`: mostly bids, and failures, each of a
  // builder of its own. Runs while breakerd is up (kills land mid-batch) and while it is down
  // (the nodes buffer, then replay to the restarted service).
  void ObserveUntil(absl::Time until) {
    while (absl::Now() < until) {
      const size_t i = Uniform(0, kNodes - 1);
      Script& script = scripts_[i];
      if (Uniform(0, 4) == 0) {
        const core::BuilderIndex builder = script.next_builder++;
        script.failures.emplace_back(node(i).observed(), builder);
        node(i).Observe(Missing(builder, absl::StrCat("f", builder)));
      } else {
        node(i).Observe(Bid(kFirstBidder + Uniform(0, kBidders - 1), ""));
      }
      absl::SleepFor(absl::Milliseconds(Uniform(3, 30)));
    }
  }

  // What the nodes printed so far. Called while breakerd is down, it is what every instance
  // before told them.
  Told WhatTheNodesWereTold() {
    Told told;
    for (size_t i = 0; i < kNodes; ++i) {
      const std::optional<AckLine> ack = node(i).LatestAck();
      const uint64_t acknowledged = ack.has_value() ? ack->acknowledged : 0;
      for (const auto& [position, builder] : scripts_[i].failures) {
        if (position < acknowledged) told.acknowledged_failures.insert(builder);
      }
      uint64_t version = 0;
      for (const PolicyLine& line : node(i).Policies()) {
        if (line.source == "local") continue;
        version = std::max(version, line.version);
        if (line.source == "fleet") told.banned.insert(line.banned.begin(), line.banned.end());
      }
      told.max_version = std::max(told.max_version, version);
      told.summary.push_back(absl::StrCat(node(i).id(), " acknowledged=", acknowledged, "/",
                                          node(i).observed(), " version=", version));
    }
    return told;
  }

  // Asserts that the restarted breakerd holds everything `told`.
  void ExpectHolds(const Told& told, int kill) {
    const std::string context =
        absl::StrCat("after SIGKILL #", kill, ", seed ", seed_,
                     "; the nodes had been told: ", absl::StrJoin(told.summary, "; "));
    absl::StatusOr<v1::Policy> policy;
    // The first call may race the listener's start up: breakerd logs that it listens first.
    ASSERT_TRUE(PollUntil([&] { return (policy = GetPolicy()).ok(); }))
        << policy.status() << " " << context;
    if (fleet_id_.empty()) fleet_id_ = policy->fleet_id();
    EXPECT_EQ(policy->fleet_id(), fleet_id_)
        << "the same state directory, another fleet id; " << context;
    // Versions never go back: the restarted service is at or past every version it sent.
    ASSERT_GE(policy->version(), told.max_version) << context;

    absl::StatusOr<v1::ListBuildersResponse> builders = ListBuilders(/*banned_only=*/true);
    ASSERT_THAT(builders, IsOk()) << context;
    BuilderSet listed;
    for (const v1::Builder& builder : builders->builders()) listed.insert(builder.builder_index());
    // No acknowledged failure is lost, no ban a node applied is lost (neither in the operators'
    // list nor in the policy: the latter may be newer, never smaller).
    const BuilderSet in_policy = BannedIn(*policy);
    ASSERT_EQ(Difference(told.acknowledged_failures, listed), BuilderSet{})
        << "acknowledged failures whose ban is not listed; " << context;
    ASSERT_EQ(Difference(told.acknowledged_failures, in_policy), BuilderSet{})
        << "acknowledged failures whose ban is not in the policy; " << context;
    ASSERT_EQ(Difference(told.banned, listed), BuilderSet{})
        << "bans the nodes applied, no longer listed; " << context;
  }

  // Whether breakerd lists every node as holding a stream now (one rpc).
  bool AllConnected() {
    absl::StatusOr<v1::ListNodesResponse> response =
        Call(&v1::Admin::Stub::async::ListNodes, v1::ListNodesRequest());
    if (!response.ok()) return false;
    size_t connected = 0;
    for (const v1::Node& info : response->nodes()) connected += info.connected() ? 1 : 0;
    return connected == kNodes;
  }

  // Waits until breakerd has acknowledged every observation written to node `i`, none refused.
  void ExpectAllAcknowledged(size_t i) {
    std::optional<AckLine> last;
    const uint64_t observed = node(i).observed();
    const bool caught_up = node(i).process().WaitUntil(
        Subprocess::Stream::kStdout,
        [&](const std::vector<std::string>& lines) {
          for (auto line = lines.rbegin(); line != lines.rend(); ++line) {
            if ((last = ParseAckLine(*line)).has_value()) break;
          }
          return last.has_value() && last->acknowledged >= observed;
        },
        Deadline());
    ASSERT_TRUE(caught_up) << node(i).id() << ": acknowledged "
                           << (last.has_value() ? last->acknowledged : 0) << " of " << observed
                           << ", seed " << seed_;
    EXPECT_EQ(last->reported, observed) << node(i).id();
    EXPECT_EQ(last->acknowledged, observed) << node(i).id();
    EXPECT_EQ(last->refused, 0u) << node(i).id() << ": see breakerd's log";
  }

  const uint64_t seed_;
  std::mt19937_64 random_;
  Script scripts_[kNodes];
  std::string fleet_id_;
};

TEST_F(CrashLoopTest, AcknowledgedStateBansAndVersionsSurviveRepeatedSigkill) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain(), kRules));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  StartNodes(static_cast<int>(kNodes));
  for (size_t i = 0; i < kNodes; ++i) scripts_[i].next_builder = (i + 1) * 1000;

  for (int kill = 1; kill <= kKills; ++kill) {
    // Mostly, the kill comes once every node is back (reconnecting takes up to the nodes'
    // backoff, longer than most random delays): it lands in their replay or their stream.
    // Otherwise it may come before some node is back.
    const bool after_reconnect = Uniform(0, 3) != 0;
    if (after_reconnect) {
      ASSERT_TRUE(PollUntil([&] {
        ObserveUntil(absl::Now() + absl::Milliseconds(20));
        return AllConnected();
      })) << "the nodes did not reconnect after restart #"
          << kill - 1 << ", seed " << seed_;
    }
    // Up for a random while: the nodes replay, stream; then the kill lands wherever breakerd
    // is (journal write, batch, fan-out, a node's hello or replay).
    const absl::Duration up = absl::Milliseconds(Uniform(20, 600));
    ObserveUntil(absl::Now() + up);
    const int status = StopBreakerd(SIGKILL);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "breakerd " << Subprocess::DescribeStatus(status) << " before SIGKILL #" << kill
        << ", seed " << seed_;
    // Down for a random while, the nodes observing meanwhile.
    const absl::Duration down = absl::Milliseconds(Uniform(0, 300));
    ObserveUntil(absl::Now() + down);
    const Told told = WhatTheNodesWereTold();
    std::cerr << "crash loop: SIGKILL #" << kill << " " << up
              << (after_reconnect ? " after the nodes reconnected" : " after the restart")
              << ", restart after " << down << "; " << absl::StrJoin(told.summary, "; ")
              << std::endl;
    ASSERT_NO_FATAL_FAILURE(StartBreakerd());
    ASSERT_NO_FATAL_FAILURE(ExpectHolds(told, kill));
  }

  // The last restart stays up: every node hands over what it still holds, and catches up.
  for (size_t i = 0; i < kNodes; ++i) ASSERT_NO_FATAL_FAILURE(ExpectAllAcknowledged(i));
  BuilderSet failed;
  for (const Script& script : scripts_) {
    for (const auto& failure : script.failures) failed.insert(failure.second);
  }
  const Told told = WhatTheNodesWereTold();
  ASSERT_EQ(told.acknowledged_failures, failed);
  ASSERT_NO_FATAL_FAILURE(ExpectHolds(told, kKills));

  // Every failure is a ban, and nothing else is.
  absl::StatusOr<v1::Policy> final_policy = GetPolicy();
  ASSERT_THAT(final_policy, IsOk());
  EXPECT_EQ(BannedIn(*final_policy), failed) << "seed " << seed_;
  EXPECT_EQ(final_policy->mode(), v1::MODE_ALL_BUILDERS);
  absl::StatusOr<v1::ListBuildersResponse> listed = ListBuilders(/*banned_only=*/true);
  ASSERT_THAT(listed, IsOk());
  EXPECT_EQ(listed->builders_size(), static_cast<int>(failed.size()));

  // Every node applies the final policy from the fleet, and breakerd knows it.
  const std::vector<core::BuilderIndex> expected_bans(failed.begin(), failed.end());
  for (size_t i = 0; i < kNodes; ++i) {
    const bool applied = node(i).AwaitLatestPolicy([&](const PolicyLine& line) {
      return line.source == "fleet" && line.version >= final_policy->version() &&
             line.banned == expected_bans;
    });
    std::optional<PolicyLine> latest = node(i).LatestPolicy();
    EXPECT_TRUE(applied) << node(i).id() << " does not apply version " << final_policy->version()
                         << "; it printed last: " << (latest.has_value() ? latest->text : "none")
                         << "; seed " << seed_;
  }
  std::optional<v1::Node> lagging;
  EXPECT_TRUE(PollUntil([&] {
    for (size_t i = 0; i < kNodes; ++i) {
      std::optional<v1::Node> info = NodeInfo(node(i).id());
      if (!info.has_value() || !info->connected() ||
          info->policy_version_acked() < final_policy->version()) {
        lagging = info;
        return false;
      }
    }
    return true;
  })) << "breakerd lists a node behind version "
      << final_policy->version() << ": " << (lagging.has_value() ? lagging->ShortDebugString() : "")
      << "; seed " << seed_;

  // Each node's versions never went back (one fleet id throughout: one state directory), and
  // the final version is at or past all of them.
  for (size_t i = 0; i < kNodes; ++i) {
    uint64_t previous = 0;
    for (const PolicyLine& line : node(i).Policies()) {
      if (line.source == "local") continue;
      EXPECT_GE(line.version, previous) << node(i).id() << ": " << line.text << "; seed " << seed_;
      previous = std::max(previous, line.version);
    }
    EXPECT_LE(previous, final_policy->version()) << node(i).id();
  }
}

}  // namespace
}  // namespace breaker
