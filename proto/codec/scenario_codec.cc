#include "proto/codec/scenario_codec.h"

#include <optional>
#include <string>

namespace breaker::codec {
namespace {

namespace v1 = ::breaker::v1;

constexpr size_t kRootBytes = 32;

void PadRoot(std::string* root) {
  if (root->size() < kRootBytes) root->resize(kRootBytes, '\0');
}

}  // namespace

v1::Observation ExpandScriptedObservation(v1::Observation observation, core::Slot current_slot) {
  if (observation.slot() == 0) observation.set_slot(current_slot);
  switch (observation.event_case()) {
    case v1::Observation::kPayloadMissing:
      PadRoot(observation.mutable_payload_missing()->mutable_block_root());
      break;
    case v1::Observation::kPayloadDelivered:
      PadRoot(observation.mutable_payload_delivered()->mutable_block_root());
      break;
    case v1::Observation::kBlocksSeen:
      for (std::string& root : *observation.mutable_blocks_seen()->mutable_block_roots()) {
        PadRoot(&root);
      }
      break;
    case v1::Observation::kRelayRevealMissing:
      PadRoot(observation.mutable_relay_reveal_missing()->mutable_block_root());
      break;
    default:
      break;
  }
  return observation;
}

absl::Status ApplyAdminAction(const v1::AdminAction& action, core::Engine& engine) {
  switch (action.action_case()) {
    case v1::AdminAction::kBan: {
      const v1::BanBuilderRequest& ban = action.ban();
      std::optional<core::Epoch> until;
      if (ban.until_epoch() != 0) until = ban.until_epoch();
      return engine.BanBuilder(ban.builder_index(), ban.reason(), until);
    }
    case v1::AdminAction::kUnban:
      return engine.UnbanBuilder(action.unban().builder_index());
    case v1::AdminAction::kBuilderTrust:
      return engine.SetBuilderTrust(action.builder_trust().builder_index(),
                                    action.builder_trust().trusted());
    case v1::AdminAction::kRelayTrust:
      return engine.SetRelayTrust(action.relay_trust().relay(), action.relay_trust().trusted());
    case v1::AdminAction::kBanRelay: {
      const v1::BanRelayRequest& ban = action.ban_relay();
      std::optional<core::Epoch> until;
      if (ban.until_epoch() != 0) until = ban.until_epoch();
      return engine.BanRelay(ban.relay(), ban.reason(), until);
    }
    case v1::AdminAction::kUnbanRelay:
      return engine.UnbanRelay(action.unban_relay().relay());
    case v1::AdminAction::kReset:
      engine.Reset();
      return absl::OkStatus();
    case v1::AdminAction::ACTION_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("the admin action is empty");
}

}  // namespace breaker::codec
