#include "service/node_registry.h"

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::service {
namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Key;
using ::testing::UnorderedElementsAre;

class NodeRegistryTest : public ::testing::Test {
 protected:
  NodeRegistryTest() { registry_.SetMaxKnownNodes(2); }

  const absl::Time start_ = absl::FromUnixSeconds(1'700'000'000);
  testing::FakeClock clock_{start_};
  NodeRegistry registry_{clock_};
};

TEST_F(NodeRegistryTest, AdmitsUpToMaxKnownNodesAndNamesTheLimitBeyond) {
  EXPECT_THAT(registry_.Admit("a"), IsOk());
  EXPECT_THAT(registry_.Admit("b"), IsOk());
  EXPECT_THAT(registry_.Admit("a"), IsOk());
  EXPECT_THAT(registry_.Admit("c"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("max_known_nodes (2) node ids and remembers each for good; new "
                                 "node 'c' refused")));
  EXPECT_THAT(registry_.Entries(), UnorderedElementsAre(Key("a"), Key("b")));
}

TEST_F(NodeRegistryTest, NodesOfTheStoredStateAreKnownWhateverTheLimit) {
  registry_.Remember("a");
  registry_.Remember("b");
  registry_.Remember("c");
  EXPECT_THAT(registry_.Admit("c"), IsOk());
  EXPECT_THAT(registry_.Admit("d"), StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST_F(NodeRegistryTest, ARaisedLimitAdmitsMore) {
  ASSERT_THAT(registry_.Admit("a"), IsOk());
  ASSERT_THAT(registry_.Admit("b"), IsOk());
  registry_.SetMaxKnownNodes(3);
  EXPECT_THAT(registry_.Admit("c"), IsOk());
}

TEST_F(NodeRegistryTest, AConnectionIsDatedByTheClockAndHoldsWhatTheNodeHolds) {
  clock_.Advance(absl::Seconds(5));
  registry_.Connected("a", "ipv4:127.0.0.1:1234", "breaker-client/1", 7);
  registry_.AckedPolicy("a", 9);
  registry_.AckedPolicy("a", 8);  // an older version changes nothing
  NodeRegistry::Entry entry = registry_.Entries().at("a");
  EXPECT_TRUE(entry.connected);
  EXPECT_EQ(entry.peer, "ipv4:127.0.0.1:1234");
  EXPECT_EQ(entry.client_version, "breaker-client/1");
  EXPECT_EQ(entry.connected_since, start_ + absl::Seconds(5));
  EXPECT_EQ(entry.policy_version_acked, 9u);
  EXPECT_EQ(entry.last_observation, absl::InfinitePast());

  // A node that reconnects without its policy shows what it holds now.
  registry_.Disconnected("a");
  EXPECT_FALSE(registry_.Entries().at("a").connected);
  registry_.Connected("a", "ipv4:127.0.0.1:5678", "breaker-client/2", 0);
  EXPECT_EQ(registry_.Entries().at("a").policy_version_acked, 0u);
}

TEST_F(NodeRegistryTest, ObservationsAreDatedByTheClock) {
  clock_.Advance(absl::Minutes(3));
  registry_.Observed("a", 0, 0);
  EXPECT_EQ(registry_.Entries().at("a").last_observation, start_ + absl::Minutes(3));
}

TEST_F(NodeRegistryTest, RefusedAndReplayedObservationsAddUpPerNode) {
  registry_.Observed("a", 2, 0);
  registry_.Observed("a", 1, 5);
  registry_.Observed("b", 0, 3);
  EXPECT_EQ(registry_.Entries().at("a").observations_refused, 3u);
  EXPECT_EQ(registry_.Entries().at("a").observations_replayed, 5u);
  EXPECT_EQ(registry_.Entries().at("b").observations_refused, 0u);
  EXPECT_EQ(registry_.Entries().at("b").observations_replayed, 3u);
}

}  // namespace
}  // namespace breaker::service
