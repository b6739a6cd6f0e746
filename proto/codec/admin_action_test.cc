#include "proto/codec/admin_action.h"

#include "core/config.h"
#include "core/input_bounds.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::codec {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::HasSubstr;

class ApplyAdminActionTest : public ::testing::Test {
 protected:
  core::Engine engine_ = core::Engine::Create(core::Config{}, 32 * 10).value();
};

TEST_F(ApplyAdminActionTest, BanAndUnban) {
  state::v1::AdminAction ban;
  ban.mutable_ban()->set_builder_index(7);
  ban.mutable_ban()->set_reason("suspicious");
  ASSERT_THAT(ApplyAdminAction(ban, engine_), IsOk());
  engine_.RefreshPolicy();
  EXPECT_TRUE(engine_.policy().banned_builders.contains(7));

  state::v1::AdminAction unban;
  unban.mutable_unban()->set_builder_index(7);
  ASSERT_THAT(ApplyAdminAction(unban, engine_), IsOk());
  engine_.RefreshPolicy();
  EXPECT_FALSE(engine_.policy().banned_builders.contains(7));
}

TEST_F(ApplyAdminActionTest, BanAndUnbanARelay) {
  state::v1::AdminAction ban;
  ban.mutable_ban_relay()->set_relay("Relay.Example.com:18550");
  ban.mutable_ban_relay()->set_reason("stolen keys");
  ban.mutable_ban_relay()->set_until_epoch(engine_.current_epoch() + 3);
  ASSERT_THAT(ApplyAdminAction(ban, engine_), IsOk());
  engine_.RefreshPolicy();
  const auto relay = engine_.policy().banned_relays.find("http://relay.example.com:18550");
  ASSERT_NE(relay, engine_.policy().banned_relays.end());
  EXPECT_EQ(relay->second.kind, core::BanKind::kOperator);
  EXPECT_EQ(relay->second.until_epoch, engine_.current_epoch() + 3);

  state::v1::AdminAction unban;
  unban.mutable_unban_relay()->set_relay("http://relay.example.com:18550/");
  ASSERT_THAT(ApplyAdminAction(unban, engine_), IsOk());
  engine_.RefreshPolicy();
  EXPECT_TRUE(engine_.policy().banned_relays.empty());
  EXPECT_THAT(ApplyAdminAction(unban, engine_), StatusIs(absl::StatusCode::kNotFound));
  // An until_epoch of 0 is a ban until unbanned.
  ban.mutable_ban_relay()->set_until_epoch(0);
  ASSERT_THAT(ApplyAdminAction(ban, engine_), IsOk());
  engine_.RefreshPolicy();
  EXPECT_TRUE(engine_.policy().banned_relays.begin()->second.until_reset);
}

TEST_F(ApplyAdminActionTest, TrustOverrides) {
  state::v1::AdminAction trust;
  trust.mutable_builder_trust()->set_builder_index(4);
  trust.mutable_builder_trust()->set_trusted(true);
  ASSERT_THAT(ApplyAdminAction(trust, engine_), IsOk());
  state::v1::AdminAction relay;
  relay.mutable_relay_trust()->set_relay("Relay.Example.com:18550");
  relay.mutable_relay_trust()->set_trusted(true);
  ASSERT_THAT(ApplyAdminAction(relay, engine_), IsOk());
  engine_.RefreshPolicy();
  EXPECT_TRUE(engine_.policy().trusted_builders.contains(4));
  EXPECT_EQ(engine_.policy().trusted_relays.size(), 1u);
}

TEST_F(ApplyAdminActionTest, ErrorsComeFromTheEngineOrTheEmptyAction) {
  state::v1::AdminAction ban;
  ban.mutable_ban()->set_builder_index(7);  // No reason.
  EXPECT_THAT(ApplyAdminAction(ban, engine_), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ApplyAdminAction(state::v1::AdminAction(), engine_),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));

  state::v1::AdminAction reset;
  reset.mutable_reset();
  ASSERT_THAT(ApplyAdminAction(reset, engine_), IsOk());
}

TEST_F(ApplyAdminActionTest, ResetNodeForgetsOnlyThatNodesNumbers) {
  const core::Slot now = engine_.current_slot();
  ASSERT_THAT(
      engine_.Observe(core::Observation{now, "n1", core::bounds::kMaxSequence, core::Finalized{1}}),
      IsOk());
  ASSERT_THAT(engine_.Observe(core::Observation{now, "n2", 9, core::Finalized{1}}), IsOk());
  state::v1::AdminAction reset;
  reset.mutable_reset_node()->set_node_id("n1");
  ASSERT_THAT(ApplyAdminAction(reset, engine_), IsOk());
  EXPECT_FALSE(engine_.node_sequences().contains("n1"));
  EXPECT_EQ(engine_.node_sequences().at("n2"), 9u);
  reset.mutable_reset_node()->set_node_id("n3");
  EXPECT_THAT(ApplyAdminAction(reset, engine_), StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace breaker::codec
