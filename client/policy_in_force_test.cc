#include "client/policy_in_force.h"

#include <cstdint>
#include <optional>

#include "absl/time/time.h"
#include "common/fake_clock.h"
#include "core/policy.h"
#include "core/types.h"
#include "gtest/gtest.h"

namespace breaker::client {
namespace {

using ::breaker::testing::FakeClock;

constexpr absl::Duration kLimit = absl::Minutes(10);
constexpr char kFleetId[] = "fleet-a";

// The fleet bans kFleetBanned, the node's own engine kLocalBanned.
constexpr core::BuilderIndex kFleetBanned = 5;
constexpr core::BuilderIndex kLocalBanned = 21;

core::Policy Banning(core::BuilderIndex builder, uint64_t version) {
  core::Policy policy;
  policy.version = version;
  policy.banned_builders[builder] = core::Ban{core::BanKind::kFailure, 0, true, "failed"};
  return policy;
}

core::Policy Fleet(uint64_t version) { return Banning(kFleetBanned, version); }

class PolicyInForceTest : public ::testing::Test {
 protected:
  PolicyInForceTest() : clock_(absl::FromUnixSeconds(1'800'000'000)), policy_(clock_, kLimit) {}

  PolicySnapshot Now() const { return policy_.Evaluate(local_); }
  PolicySource Source() const { return Now().source; }

  // A stream that starts, brings a message and the fleet policy `version`.
  void Connect(uint64_t version, uint64_t last_unacknowledged = 0) {
    policy_.OnStreamStart(last_unacknowledged);
    policy_.OnMessage();
    policy_.OnFleetPolicy(Fleet(version), kFleetId);
  }

  // A stream ends; breakerd stays away for `outage`.
  void Disconnect(absl::Duration outage) {
    policy_.OnStreamEnd();
    clock_.Advance(outage);
  }

  FakeClock clock_;
  PolicyInForce policy_;
  core::Policy local_ = Banning(kLocalBanned, 0);
};

TEST_F(PolicyInForceTest, BeforeAnyFleetPolicyTheLocalOneApplies) {
  EXPECT_EQ(Source(), PolicySource::kLocal);
  EXPECT_EQ(Now().fleet_version, 0u);
  EXPECT_TRUE(Now().policy.SameDecisions(local_));
  EXPECT_FALSE(policy_.HelloClaim().has_value());

  // Neither time nor a stream without a policy changes that.
  clock_.Advance(3 * kLimit);
  EXPECT_EQ(Source(), PolicySource::kLocal);
  policy_.OnStreamStart(0);
  EXPECT_TRUE(policy_.OnMessage());
  EXPECT_TRUE(policy_.connected());
  EXPECT_EQ(Source(), PolicySource::kLocal);
  policy_.OnStreamEnd();
  EXPECT_FALSE(policy_.connected());
  EXPECT_EQ(Source(), PolicySource::kLocal);
}

TEST_F(PolicyInForceTest, TheFirstFleetPolicyTakesOver) {
  Connect(3);
  const PolicySnapshot snapshot = Now();
  EXPECT_EQ(snapshot.source, PolicySource::kFleet);
  EXPECT_EQ(snapshot.fleet_version, 3u);
  EXPECT_FALSE(snapshot.policy.IsAllowed(kFleetBanned, ""));
  EXPECT_TRUE(snapshot.policy.IsAllowed(kLocalBanned, ""));
  EXPECT_TRUE(snapshot.policy.SameDecisions(Fleet(3)));
}

TEST_F(PolicyInForceTest, OnlyAStreamsFirstMessageConnects) {
  policy_.OnStreamStart(0);
  EXPECT_FALSE(policy_.connected());
  EXPECT_TRUE(policy_.OnMessage());
  EXPECT_FALSE(policy_.OnMessage());
  policy_.OnStreamEnd();
  policy_.OnStreamStart(0);
  EXPECT_TRUE(policy_.OnMessage());
}

TEST_F(PolicyInForceTest, ObservationsMadeBeforeTheFirstConnectionAreCaughtUpFirst) {
  // The node saw its builder fail before it ever reached breakerd: the fleet's first policy
  // does not know of it yet.
  policy_.OnStreamStart(/*last_unacknowledged=*/40);
  policy_.OnMessage();
  policy_.OnFleetPolicy(Fleet(3), kFleetId);
  EXPECT_EQ(Source(), PolicySource::kFleetAndLocal);
  EXPECT_FALSE(Now().policy.IsAllowed(kLocalBanned, ""));
  EXPECT_EQ(Now().fleet_version, 3u);

  policy_.OnAcknowledged(40, 4);
  policy_.OnFleetPolicy(Banning(kLocalBanned, 4), kFleetId);
  EXPECT_EQ(Source(), PolicySource::kFleet);
  EXPECT_EQ(Now().fleet_version, 4u);
}

TEST_F(PolicyInForceTest, ConnectedTheFleetPolicyNeverGoesStale) {
  Connect(3);
  // A quiet stream, far past the limit: nothing arrived, breakerd is still there.
  clock_.Advance(5 * kLimit);
  EXPECT_EQ(Source(), PolicySource::kFleet);
}

TEST_F(PolicyInForceTest, PastTheLimitTheLocalEngineAddsItsBans) {
  Connect(3);
  Disconnect(kLimit + absl::Seconds(1));
  const PolicySnapshot stale = Now();
  EXPECT_EQ(stale.source, PolicySource::kFleetAndLocal);
  EXPECT_EQ(stale.fleet_version, 3u);
  EXPECT_FALSE(stale.policy.IsAllowed(kFleetBanned, ""));
  EXPECT_FALSE(stale.policy.IsAllowed(kLocalBanned, ""));
  EXPECT_TRUE(stale.policy.IsAllowed(7, ""));
  EXPECT_TRUE(stale.policy.SameDecisions(core::StricterOf(Fleet(3), local_)));
}

TEST_F(PolicyInForceTest, TheLimitCountsFromTheDisconnectionNotFromTheLastMessage) {
  Connect(3);
  clock_.Advance(2 * kLimit);  // a quiet stream
  Disconnect(kLimit / 2);
  EXPECT_EQ(Source(), PolicySource::kFleet);
  clock_.Advance(kLimit / 2 + absl::Nanoseconds(1));
  EXPECT_EQ(Source(), PolicySource::kFleetAndLocal);
}

TEST_F(PolicyInForceTest, ExactlyAtTheLimitTheFleetPolicyStillHolds) {
  Connect(3);
  Disconnect(kLimit);
  EXPECT_EQ(Source(), PolicySource::kFleet);
  clock_.Advance(absl::Nanoseconds(1));
  EXPECT_EQ(Source(), PolicySource::kFleetAndLocal);
}

TEST_F(PolicyInForceTest, AStreamWithoutAnyMessageIsNoContact) {
  Connect(3);
  Disconnect(kLimit / 2);
  // Attempts that never reached breakerd (refused, or cut before its first message).
  for (int i = 0; i < 3; ++i) {
    policy_.OnStreamStart(0);
    policy_.OnStreamEnd();
  }
  clock_.Advance(kLimit / 2 + absl::Seconds(1));
  EXPECT_EQ(Source(), PolicySource::kFleetAndLocal);
}

TEST_F(PolicyInForceTest, AShortOutageKeepsTheFleetPolicyAndClaimsItsVersion) {
  Connect(3);
  Disconnect(kLimit / 2);
  policy_.OnStreamStart(/*last_unacknowledged=*/12);
  const std::optional<PolicyInForce::Held> claim = policy_.HelloClaim();
  ASSERT_TRUE(claim.has_value());
  EXPECT_EQ(claim->version, 3u);
  EXPECT_EQ(claim->fleet_id, kFleetId);
  // Not catching up: the local engine took no part while breakerd was away.
  policy_.OnMessage();
  EXPECT_EQ(Source(), PolicySource::kFleet);
}

TEST_F(PolicyInForceTest, BackButNotCaughtUpTheLocalBansStay) {
  Connect(3);
  Disconnect(2 * kLimit);
  ASSERT_EQ(Source(), PolicySource::kFleetAndLocal);

  // breakerd is back; the node holds observations up to 90 that it has not acknowledged.
  policy_.OnStreamStart(/*last_unacknowledged=*/90);
  EXPECT_FALSE(policy_.HelloClaim().has_value()) << "catching up needs this stream's policy";
  policy_.OnMessage();
  EXPECT_TRUE(policy_.connected());
  EXPECT_EQ(Source(), PolicySource::kFleetAndLocal) << "connected, no policy yet";

  // (a) The same version comes again: breakerd has not applied the node's failures yet.
  policy_.OnMessage();
  policy_.OnFleetPolicy(Fleet(3), kFleetId);
  EXPECT_EQ(Source(), PolicySource::kFleetAndLocal);
  EXPECT_FALSE(Now().policy.IsAllowed(kLocalBanned, ""));

  // (b) Not yet all of them acknowledged.
  policy_.OnMessage();
  policy_.OnAcknowledged(89, 4);
  EXPECT_EQ(Source(), PolicySource::kFleetAndLocal);

  // (c) All acknowledged, applied at version 5, which the node does not hold yet.
  policy_.OnMessage();
  policy_.OnAcknowledged(90, 5);
  EXPECT_EQ(Source(), PolicySource::kFleetAndLocal);
  EXPECT_FALSE(Now().policy.IsAllowed(kLocalBanned, ""));

  // Caught up: the fleet policy alone, now that it reflects the node's failures.
  policy_.OnMessage();
  policy_.OnFleetPolicy(Banning(kLocalBanned, 5), kFleetId);
  const PolicySnapshot caught_up = Now();
  EXPECT_EQ(caught_up.source, PolicySource::kFleet);
  EXPECT_EQ(caught_up.fleet_version, 5u);
  EXPECT_FALSE(caught_up.policy.IsAllowed(kLocalBanned, ""));
  EXPECT_TRUE(caught_up.policy.IsAllowed(kFleetBanned, ""));
  ASSERT_TRUE(policy_.HelloClaim().has_value());
  EXPECT_EQ(policy_.HelloClaim()->version, 5u);
}

TEST_F(PolicyInForceTest, BackWithNothingUnacknowledgedTheStreamsPolicyIsEnough) {
  Connect(3);
  Disconnect(2 * kLimit);
  policy_.OnStreamStart(0);
  policy_.OnMessage();
  EXPECT_EQ(Source(), PolicySource::kFleetAndLocal);
  policy_.OnFleetPolicy(Fleet(3), kFleetId);
  EXPECT_EQ(Source(), PolicySource::kFleet);
}

TEST_F(PolicyInForceTest, AnAcknowledgementBeforeThePolicyWaitsForIt) {
  Connect(3);
  Disconnect(2 * kLimit);
  policy_.OnStreamStart(10);
  policy_.OnMessage();
  policy_.OnAcknowledged(10, 3);
  EXPECT_EQ(Source(), PolicySource::kFleetAndLocal);
  policy_.OnFleetPolicy(Fleet(3), kFleetId);
  EXPECT_EQ(Source(), PolicySource::kFleet);
}

TEST_F(PolicyInForceTest, ANewFleetVersionWhileStaleIsAppliedWithTheLocalBans) {
  Connect(3);
  Disconnect(2 * kLimit);
  policy_.OnStreamStart(10);
  policy_.OnMessage();
  // An operator's change, made while the node was away, arrives before the acknowledgements.
  core::Policy newer = Fleet(6);
  newer.banned_builders[8] = core::Ban{core::BanKind::kOperator, 0, true, "operator"};
  policy_.OnFleetPolicy(newer, kFleetId);
  const PolicySnapshot snapshot = Now();
  EXPECT_EQ(snapshot.source, PolicySource::kFleetAndLocal);
  EXPECT_EQ(snapshot.fleet_version, 6u);
  EXPECT_FALSE(snapshot.policy.IsAllowed(8, ""));
  EXPECT_FALSE(snapshot.policy.IsAllowed(kLocalBanned, ""));

  // Acknowledged at version 6, which the node holds: caught up.
  policy_.OnAcknowledged(10, 6);
  EXPECT_EQ(Source(), PolicySource::kFleet);
  EXPECT_EQ(Now().fleet_version, 6u);
}

TEST_F(PolicyInForceTest, AStreamLostWhileCatchingUpCatchesUpAgainOnTheNext) {
  Connect(3);
  Disconnect(2 * kLimit);
  policy_.OnStreamStart(10);
  policy_.OnMessage();
  policy_.OnFleetPolicy(Fleet(3), kFleetId);
  // Lost before the acknowledgement; back at once, well within the limit.
  Disconnect(absl::Seconds(1));
  EXPECT_EQ(Source(), PolicySource::kFleetAndLocal);
  policy_.OnStreamStart(10);
  EXPECT_FALSE(policy_.HelloClaim().has_value());
  policy_.OnMessage();
  policy_.OnFleetPolicy(Fleet(3), kFleetId);
  EXPECT_EQ(Source(), PolicySource::kFleetAndLocal) << "the acknowledgement is still missing";
  policy_.OnAcknowledged(10, 3);
  EXPECT_EQ(Source(), PolicySource::kFleet);
}

TEST_F(PolicyInForceTest, RenumberedObservationsAreWaitedForUnderTheirNewNumbers) {
  Connect(3);
  Disconnect(2 * kLimit);
  policy_.OnStreamStart(10);
  policy_.OnMessage();
  // breakerd had handled numbers up to 500 (the node's clock went back): 10 is now 503.
  policy_.OnRenumbered(503);
  policy_.OnFleetPolicy(Fleet(3), kFleetId);
  policy_.OnAcknowledged(10, 3);
  EXPECT_EQ(Source(), PolicySource::kFleetAndLocal);
  policy_.OnAcknowledged(503, 3);
  EXPECT_EQ(Source(), PolicySource::kFleet);
}

TEST_F(PolicyInForceTest, RenumberingWhenNotCatchingUpChangesNothing) {
  Connect(3);
  policy_.OnStreamEnd();
  policy_.OnStreamStart(10);
  policy_.OnMessage();
  policy_.OnRenumbered(503);
  EXPECT_EQ(Source(), PolicySource::kFleet);
}

TEST_F(PolicyInForceTest, AReloadedLocalConfigurationCountsWhereTheLocalEngineTakesPart) {
  // A reload of breakerd's configuration reaches the node as a message on the stream: the
  // local engine takes the new rules, and its policy changes.
  const core::Policy reloaded = Banning(33, 0);

  // With the fleet policy in force, the local engine's policy does not count ...
  Connect(3);
  clock_.Advance(2 * kLimit);
  policy_.OnMessage();  // the configuration message: contact, as any other
  EXPECT_EQ(policy_.Evaluate(reloaded).source, PolicySource::kFleet);
  EXPECT_TRUE(policy_.Evaluate(reloaded).policy.IsAllowed(33, ""));

  // ... nor does it within the limit ...
  Disconnect(kLimit);
  EXPECT_EQ(policy_.Evaluate(reloaded).source, PolicySource::kFleet);

  // ... and past the limit the reloaded rules' bans take part at once.
  clock_.Advance(absl::Seconds(1));
  const PolicySnapshot stale = policy_.Evaluate(reloaded);
  EXPECT_EQ(stale.source, PolicySource::kFleetAndLocal);
  EXPECT_FALSE(stale.policy.IsAllowed(33, ""));
  EXPECT_TRUE(stale.policy.IsAllowed(kLocalBanned, "")) << "the old rules' ban";
  EXPECT_FALSE(stale.policy.IsAllowed(kFleetBanned, ""));
}

TEST_F(PolicyInForceTest, AReloadedLocalConfigurationAppliesAloneBeforeAnyFleetPolicy) {
  const core::Policy reloaded = Banning(33, 0);
  EXPECT_FALSE(policy_.Evaluate(reloaded).policy.IsAllowed(33, ""));
  EXPECT_TRUE(policy_.Evaluate(reloaded).policy.IsAllowed(kLocalBanned, ""));
  EXPECT_EQ(policy_.Evaluate(reloaded).source, PolicySource::kLocal);
}

TEST_F(PolicyInForceTest, TheHelloClaimsTheHeldVersionAndItsFleet) {
  EXPECT_FALSE(policy_.HelloClaim().has_value());
  Connect(3);
  policy_.OnFleetPolicy(Fleet(7), "fleet-b");
  policy_.OnStreamEnd();
  policy_.OnStreamStart(0);
  const std::optional<PolicyInForce::Held> claim = policy_.HelloClaim();
  ASSERT_TRUE(claim.has_value());
  EXPECT_EQ(claim->version, 7u);
  EXPECT_EQ(claim->fleet_id, "fleet-b");
}

}  // namespace
}  // namespace breaker::client
