#include "proto/codec/admin_action.h"

#include <optional>

namespace breaker::codec {

namespace v1 = ::breaker::v1;

absl::Status ApplyAdminAction(const state::v1::AdminAction& action, core::Engine& engine) {
  switch (action.action_case()) {
    case state::v1::AdminAction::kBan: {
      const v1::BanBuilderRequest& ban = action.ban();
      std::optional<core::Epoch> until;
      if (ban.until_epoch() != 0) until = ban.until_epoch();
      return engine.BanBuilder(ban.builder_index(), ban.reason(), until);
    }
    case state::v1::AdminAction::kUnban:
      return engine.UnbanBuilder(action.unban().builder_index());
    case state::v1::AdminAction::kBuilderTrust:
      return engine.SetBuilderTrust(action.builder_trust().builder_index(),
                                    action.builder_trust().trusted());
    case state::v1::AdminAction::kRelayTrust:
      return engine.SetRelayTrust(action.relay_trust().relay(), action.relay_trust().trusted());
    case state::v1::AdminAction::kBanRelay: {
      const v1::BanRelayRequest& ban = action.ban_relay();
      std::optional<core::Epoch> until;
      if (ban.until_epoch() != 0) until = ban.until_epoch();
      return engine.BanRelay(ban.relay(), ban.reason(), until);
    }
    case state::v1::AdminAction::kUnbanRelay:
      return engine.UnbanRelay(action.unban_relay().relay());
    case state::v1::AdminAction::kReset:
      engine.Reset();
      return absl::OkStatus();
    case state::v1::AdminAction::kResetNode:
      return engine.ResetNodeSequence(action.reset_node().node_id());
    case state::v1::AdminAction::ACTION_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("the admin action is empty");
}

}  // namespace breaker::codec
