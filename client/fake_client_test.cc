#include "client/fake_client.h"

#include <thread>

#include "gtest/gtest.h"

namespace breaker::client {
namespace {

TEST(FakeClient, StartsLocalAndAllowsEverything) {
  FakeClient client;
  EXPECT_EQ(client.policy()->source, PolicySource::kLocal);
  EXPECT_TRUE(client.IsAllowed(5, ""));
  EXPECT_TRUE(client.IsAllowed(5, "relay.example"));
}

TEST(FakeClient, PolicyIsInForceAndSubscribersRunOffTheCallersThread) {
  FakeClient client;
  std::thread::id callback_thread;
  uint64_t seen_version = 0;
  const int id = client.Subscribe([&](std::shared_ptr<const PolicySnapshot> snapshot) {
    callback_thread = std::this_thread::get_id();
    seen_version = snapshot->fleet_version;
  });

  core::Policy policy;
  policy.version = 7;
  policy.banned_builders[5] = core::Ban{core::BanKind::kFailure, 11, false, "test"};
  policy.banned_relays["http://relay.example"] = core::Ban{};
  client.SetPolicy(policy, PolicySource::kFleet);

  EXPECT_EQ(seen_version, 7u);
  EXPECT_NE(callback_thread, std::this_thread::get_id());
  EXPECT_FALSE(client.IsAllowed(5, ""));
  EXPECT_FALSE(client.IsAllowed(6, "Relay.Example"));
  EXPECT_TRUE(client.IsAllowed(6, ""));

  client.Unsubscribe(id);
  policy.version = 8;
  client.SetPolicy(policy, PolicySource::kFleet);
  EXPECT_EQ(seen_version, 7u);
}

TEST(FakeClient, RecordsReports) {
  FakeClient client;
  EXPECT_TRUE(client.Report(10, core::BidSeen{3, "", ""}).ok());
  EXPECT_TRUE(client.Report(11, core::BuilderExited{3}).ok());
  ASSERT_EQ(client.reports().size(), 2u);
  EXPECT_EQ(client.reports()[1].slot, 11u);
  EXPECT_TRUE(std::holds_alternative<core::BuilderExited>(client.reports()[1].event));
}

}  // namespace
}  // namespace breaker::client
