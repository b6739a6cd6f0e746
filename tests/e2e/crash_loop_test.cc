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

#include <cstddef>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/support/fleet_harness.h"
#include "tests/support/subprocess.h"

namespace breaker {
namespace {

using ::breaker::testing::FleetTest;
using ::breaker::testing::GloasChain;
using ::breaker::testing::kBanEveryFailure;
using ::breaker::testing::Node;
using ::breaker::testing::PollUntil;
using ::breaker::testing::RandomLoad;
using ::breaker::testing::SeedFrom;
using ::breaker::testing::Subprocess;
using ::breaker::testing::Told;

constexpr size_t kNodes = 4;
// SIGKILLs in a row, each followed by a restart on the same state directory.
constexpr int kKills = 20;

class CrashLoopTest : public FleetTest {
 protected:
  CrashLoopTest() : seed_(SeedFrom("CRASH_LOOP_SEED")) {}

  void SetUp() override {
    // In the test's log (and its XML), so that a failure can be replayed.
    std::cerr << "crash loop seed " << seed_ << " (replay: --test_env=CRASH_LOOP_SEED=" << seed_
              << ")" << std::endl;
    RecordProperty("seed", std::to_string(seed_));
  }

  // Starts the nodes, and the load on them.
  void StartLoad() {
    StartNodes(static_cast<int>(kNodes));
    std::vector<Node*> nodes;
    for (size_t i = 0; i < kNodes; ++i) nodes.push_back(&node(i));
    load_ = std::make_unique<RandomLoad>(std::move(nodes), seed_);
  }

  const uint64_t seed_;
  std::unique_ptr<RandomLoad> load_;
};

TEST_F(CrashLoopTest, AcknowledgedStateBansAndVersionsSurviveRepeatedSigkill) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain(), kBanEveryFailure));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  StartLoad();
  RandomLoad& load = *load_;

  for (int kill = 1; kill <= kKills; ++kill) {
    // Mostly, the kill comes once every node is back (reconnecting takes up to the nodes'
    // backoff, longer than most random delays): it lands in their replay or their stream.
    // Otherwise it may come before some node is back.
    const bool after_reconnect = load.Uniform(0, 3) != 0;
    if (after_reconnect) {
      ASSERT_TRUE(PollUntil([&] {
        load.ObserveUntil(absl::Now() + absl::Milliseconds(20));
        return AllNodesConnected();
      })) << "the nodes did not reconnect after restart #"
          << kill - 1 << ", seed " << seed_;
    }
    // Up for a random while: the nodes replay, stream; then the kill lands wherever breakerd
    // is (journal write, batch, fan-out, a node's hello or replay).
    const absl::Duration up = absl::Milliseconds(load.Uniform(20, 600));
    load.ObserveUntil(absl::Now() + up);
    const int status = StopBreakerd(SIGKILL);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "breakerd " << Subprocess::DescribeStatus(status) << " before SIGKILL #" << kill
        << ", seed " << seed_;
    // Down for a random while, the nodes observing meanwhile (they buffer, then replay to the
    // restarted service).
    const absl::Duration down = absl::Milliseconds(load.Uniform(0, 300));
    load.ObserveUntil(absl::Now() + down);
    const Told told = load.WhatTheNodesWereTold();
    std::cerr << "crash loop: SIGKILL #" << kill << " " << up
              << (after_reconnect ? " after the nodes reconnected" : " after the restart")
              << ", restart after " << down << "; " << absl::StrJoin(told.summary, "; ")
              << std::endl;
    ASSERT_NO_FATAL_FAILURE(StartBreakerd());
    ASSERT_NO_FATAL_FAILURE(
        ExpectHolds(told, absl::StrCat("after SIGKILL #", kill, ", seed ", seed_)));
  }

  // The last restart stays up: every node hands over what it still holds, and catches up.
  ExpectEverythingLanded(load, absl::StrCat("after the last restart, seed ", seed_));
}

}  // namespace
}  // namespace breaker
