#include "sidecar/validator/node_connections.h"

#include <memory>

#include "common/fake_clock.h"
#include "gtest/gtest.h"

namespace breaker::sidecar::validator {
namespace {

class NodeConnectionsTest : public ::testing::Test {
 protected:
  testing::FakeClock clock_{absl::FromUnixSeconds(1700000000)};
  NodeConnections connections_{"http://127.0.0.1:1", absl::Seconds(1), /*max_idle=*/2,
                               /*idle_timeout=*/absl::Seconds(4), clock_};
};

TEST_F(NodeConnectionsTest, GivesBackTheLastKeptFirst) {
  EXPECT_EQ(connections_.TakeIdle(), nullptr);
  std::unique_ptr<httplib::Client> first = connections_.Open();
  std::unique_ptr<httplib::Client> second = connections_.Open();
  httplib::Client* const last = second.get();
  connections_.GiveBack(std::move(first));
  connections_.GiveBack(std::move(second));
  EXPECT_EQ(connections_.TakeIdle().get(), last);
  EXPECT_NE(connections_.TakeIdle(), nullptr);
  EXPECT_EQ(connections_.TakeIdle(), nullptr);
}

TEST_F(NodeConnectionsTest, KeepsAtMostMaxIdle) {
  for (int i = 0; i < 3; ++i) connections_.GiveBack(connections_.Open());
  EXPECT_EQ(connections_.idle(), 2u);
}

TEST_F(NodeConnectionsTest, ClosesConnectionsIdleForTheTimeout) {
  connections_.GiveBack(connections_.Open());
  clock_.Advance(absl::Seconds(3));
  connections_.GiveBack(connections_.Open());
  clock_.Advance(absl::Seconds(1));
  // The first has been idle 4 s: closed; the second 1 s: taken.
  EXPECT_NE(connections_.TakeIdle(), nullptr);
  EXPECT_EQ(connections_.idle(), 0u);
  connections_.GiveBack(connections_.Open());
  clock_.Advance(absl::Seconds(4));
  EXPECT_EQ(connections_.TakeIdle(), nullptr);
}

}  // namespace
}  // namespace breaker::sidecar::validator
