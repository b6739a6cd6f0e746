// The worst-case policy, built whole and serialized: every list at the longest its caps allow,
// every string at its bound, every number at its widest. Its size must stay under
// core::WorstCasePolicyBytes, which must stay under what breakerd promises to send.

#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "breaker/v1/breaker.pb.h"
#include "core/config.h"
#include "core/input_bounds.h"
#include "core/policy.h"
#include "gtest/gtest.h"
#include "proto/codec/api_codec.h"

namespace breaker::codec {
namespace {

namespace bounds = ::breaker::core::bounds;
constexpr uint64_t kWidest = std::numeric_limits<uint64_t>::max() - 1;

// A distinct relay identifier of the longest normalized length.
std::string LongestRelayId(size_t i) {
  std::string id = absl::StrCat("http://relay-", i, ".example/");
  id.resize(bounds::kMaxRelayIdBytes + 7, 'p');
  return id;
}

core::Ban LongestBan() {
  return core::Ban{core::BanKind::kCollateral, kWidest, true,
                   std::string(bounds::kMaxBanReasonBytes, 'r')};
}

// The largest policy an engine running `config` could publish, as its ServerMessage.
v1::ServerMessage WorstCasePolicy(const core::Config& config) {
  core::Policy policy;
  policy.version = kWidest;
  policy.mode = core::Mode::kSelfBuild;
  policy.mode_reason = std::string(bounds::kMaxReasonBytes, 'm');
  policy.reason = std::string(bounds::kMaxReasonBytes, 'c');
  policy.missed_slots = core::MissedSlotState{
      true, true, true, std::string(bounds::kMaxReasonBytes, 's'), kWidest, kWidest, kWidest};
  policy.computed_at_slot = kWidest;
  policy.computed_at_epoch = kWidest;
  const size_t members = size_t{config.max_relays} * config.max_indices_per_relay * 2;
  const size_t builders = config.max_tracked_builders + bounds::kMaxOperatorBuilderBans +
                          bounds::kMaxListedBuilders + members;
  // The widest indices, counted down from the largest below the self-build index.
  for (size_t i = 0; i < builders; ++i) policy.banned_builders[kWidest - i] = LongestBan();
  const size_t relays =
      config.max_relays + bounds::kMaxListedRelays + bounds::kMaxOperatorRelayBans;
  for (size_t i = 0; i < relays; ++i) policy.banned_relays[LongestRelayId(i)] = LongestBan();
  const size_t trusted = bounds::kMaxListedBuilders +
                         size_t{config.max_relays} * config.max_indices_per_relay +
                         bounds::kMaxBuilderTrustOverrides;
  for (size_t i = 0; i < trusted; ++i) policy.trusted_builders.insert(kWidest - i);
  for (size_t i = 0; i < config.max_relays + bounds::kMaxRelayTrustOverrides; ++i) {
    policy.trusted_relays.insert(LongestRelayId(i));
  }
  const size_t keys = std::min<size_t>(config.max_tracked_builders, bounds::kMaxPolicyBuilderKeys);
  for (size_t i = 0; i < keys; ++i) {
    policy.builder_pubkeys[kWidest - i] = std::string(bounds::kPubkeyBytes, 'k');
  }
  v1::ServerMessage message;
  *message.mutable_policy() = PolicyToProto(policy);
  message.mutable_policy()->set_fleet_id(std::string(bounds::kMaxFleetIdBytes, 'f'));
  return message;
}

TEST(PolicyBoundTest, TheWorstCaseOfTheDefaultsFitsTheBound) {
  const core::Config config;
  const size_t actual = WorstCasePolicy(config).ByteSizeLong();
  EXPECT_LE(actual, core::WorstCasePolicyBytes(config));
  EXPECT_LE(core::WorstCasePolicyBytes(config), bounds::kMaxSentMessageBytes);
  // Well below what every client accepts.
  EXPECT_LE(actual, bounds::kClientReceiveBytes / 2);
}

TEST(PolicyBoundTest, TheFormulaBoundsEveryAcceptedShapeOfCaps) {
  // Caps at the edges of what ValidateConfig accepts: many builders, many relays, many members.
  struct Caps {
    uint32_t tracked, relays, indices;
  };
  for (const Caps caps :
       {Caps{8192, 64, 16}, Caps{16, 1024, 1}, Caps{16, 2, 1024}, Caps{4096, 1, 1}}) {
    core::Config config;
    config.max_tracked_builders = caps.tracked;
    config.max_relays = caps.relays;
    config.max_indices_per_relay = caps.indices;
    ASSERT_TRUE(core::ValidateConfig(config).ok()) << core::ValidateConfig(config);
    EXPECT_LE(WorstCasePolicy(config).ByteSizeLong(), core::WorstCasePolicyBytes(config))
        << caps.tracked << " " << caps.relays << " " << caps.indices;
  }
}

}  // namespace
}  // namespace breaker::codec
