#include "proto/codec/api_codec.h"

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/input_bounds.h"
#include "core/types.h"
#include "proto/codec/codec_util.h"

namespace breaker::codec {
namespace {

namespace v1 = ::breaker::v1;

// --- Enums -----------------------------------------------------------------------------------

// The enum value's name, or its number when the value is unknown to this build.
std::string EnumText(int value, const std::string& name) {
  return name.empty() ? absl::StrCat(value) : name;
}

v1::Mode ModeToProto(core::Mode mode) {
  switch (mode) {
    case core::Mode::kAllBuilders:
      return v1::MODE_ALL_BUILDERS;
    case core::Mode::kTrustedOnly:
      return v1::MODE_TRUSTED_ONLY;
    case core::Mode::kSelfBuild:
      return v1::MODE_SELF_BUILD;
  }
  return v1::MODE_UNSPECIFIED;  // Not reached: the switch covers every mode.
}

absl::StatusOr<core::Mode> ModeFromProto(v1::Mode mode) {
  switch (mode) {
    case v1::MODE_ALL_BUILDERS:
      return core::Mode::kAllBuilders;
    case v1::MODE_TRUSTED_ONLY:
      return core::Mode::kTrustedOnly;
    case v1::MODE_SELF_BUILD:
      return core::Mode::kSelfBuild;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("mode is ", EnumText(mode, v1::Mode_Name(mode)),
                       "; expected MODE_ALL_BUILDERS, MODE_TRUSTED_ONLY or MODE_SELF_BUILD"));
  }
}

v1::BanKind BanKindToProto(core::BanKind kind) {
  switch (kind) {
    case core::BanKind::kFailure:
      return v1::BAN_KIND_FAILURE;
    case core::BanKind::kOperator:
      return v1::BAN_KIND_OPERATOR;
    case core::BanKind::kCollateral:
      return v1::BAN_KIND_COLLATERAL;
  }
  return v1::BAN_KIND_UNSPECIFIED;  // Not reached: the switch covers every kind.
}

// `field` names the ban for the error.
absl::StatusOr<core::BanKind> BanKindFromProto(v1::BanKind kind, absl::string_view field) {
  switch (kind) {
    case v1::BAN_KIND_FAILURE:
      return core::BanKind::kFailure;
    case v1::BAN_KIND_OPERATOR:
      return core::BanKind::kOperator;
    case v1::BAN_KIND_COLLATERAL:
      return core::BanKind::kCollateral;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".kind is ", EnumText(kind, v1::BanKind_Name(kind)),
                       "; expected BAN_KIND_FAILURE, BAN_KIND_OPERATOR or BAN_KIND_COLLATERAL"));
  }
}

// --- Policy ----------------------------------------------------------------------------------

absl::StatusOr<core::Ban> BanFromProto(const v1::Ban& proto, absl::string_view field) {
  absl::StatusOr<core::BanKind> kind = BanKindFromProto(proto.kind(), field);
  if (!kind.ok()) return kind.status();
  core::Ban ban;
  ban.kind = *kind;
  ban.until_epoch = proto.until_epoch();
  ban.until_reset = proto.until_reset();
  ban.reason = proto.reason();
  return ban;
}

void MissedSlotStateToProto(const core::MissedSlotState& state, v1::MissedSlotState* proto) {
  proto->set_active(state.active);
  proto->set_tripped(state.tripped);
  proto->set_latched(state.latched);
  proto->set_rule(state.rule);
  proto->set_consecutive_missed(state.consecutive_missed);
  proto->set_missed_in_window(state.missed_in_window);
  proto->set_epochs_since_finalization(state.epochs_since_finalization);
}

core::MissedSlotState MissedSlotStateFromProto(const v1::MissedSlotState& proto) {
  core::MissedSlotState state;
  state.active = proto.active();
  state.tripped = proto.tripped();
  state.latched = proto.latched();
  state.rule = proto.rule();
  state.consecutive_missed = proto.consecutive_missed();
  state.missed_in_window = proto.missed_in_window();
  state.epochs_since_finalization = proto.epochs_since_finalization();
  return state;
}

}  // namespace

v1::Ban BanToProto(const core::Ban& ban) {
  v1::Ban proto;
  proto.set_kind(BanKindToProto(ban.kind));
  proto.set_until_epoch(ban.until_epoch);
  proto.set_until_reset(ban.until_reset);
  proto.set_reason(ban.reason);
  return proto;
}

// --- Policy ----------------------------------------------------------------------------------

v1::Policy PolicyToProto(const core::Policy& policy) {
  v1::Policy proto;
  proto.set_version(policy.version);
  proto.set_mode(ModeToProto(policy.mode));
  proto.set_mode_reason(policy.mode_reason);
  for (const auto* entry : SortedEntries(policy.banned_builders)) {
    v1::BuilderBan* ban = proto.add_banned_builders();
    ban->set_builder_index(entry->first);
    *ban->mutable_ban() = BanToProto(entry->second);
  }
  for (const auto* entry : SortedEntries(policy.banned_relays)) {
    v1::RelayBan* ban = proto.add_banned_relays();
    ban->set_relay(entry->first);
    *ban->mutable_ban() = BanToProto(entry->second);
  }
  for (core::BuilderIndex builder : Sorted(policy.trusted_builders)) {
    proto.add_trusted_builders(builder);
  }
  for (const std::string& relay : Sorted(policy.trusted_relays)) proto.add_trusted_relays(relay);
  for (const auto* entry : SortedEntries(policy.builder_pubkeys)) {
    v1::BuilderPubkey* key = proto.add_builder_pubkeys();
    key->set_builder_index(entry->first);
    key->set_pubkey(entry->second);
  }
  MissedSlotStateToProto(policy.missed_slots, proto.mutable_missed_slots());
  proto.set_computed_at_slot(policy.computed_at_slot);
  proto.set_computed_at_epoch(policy.computed_at_epoch);
  proto.set_reason(policy.reason);
  return proto;
}

absl::StatusOr<core::Policy> PolicyFromProto(const v1::Policy& proto) {
  core::Policy policy;
  policy.version = proto.version();
  absl::StatusOr<core::Mode> mode = ModeFromProto(proto.mode());
  if (!mode.ok()) return mode.status();
  policy.mode = *mode;
  policy.mode_reason = proto.mode_reason();
  for (int i = 0; i < proto.banned_builders_size(); ++i) {
    const v1::BuilderBan& entry = proto.banned_builders(i);
    absl::StatusOr<core::Ban> ban =
        BanFromProto(entry.ban(), absl::StrCat("banned_builders[", i, "].ban"));
    if (!ban.ok()) return ban.status();
    if (!policy.banned_builders.try_emplace(entry.builder_index(), *std::move(ban)).second) {
      return Duplicate("banned_builders", absl::StrCat("builder ", entry.builder_index()));
    }
  }
  for (int i = 0; i < proto.banned_relays_size(); ++i) {
    const v1::RelayBan& entry = proto.banned_relays(i);
    absl::StatusOr<core::Ban> ban =
        BanFromProto(entry.ban(), absl::StrCat("banned_relays[", i, "].ban"));
    if (!ban.ok()) return ban.status();
    if (!policy.banned_relays.try_emplace(entry.relay(), *std::move(ban)).second) {
      return Duplicate("banned_relays", absl::StrCat("relay '", entry.relay(), "'"));
    }
  }
  for (uint64_t builder : proto.trusted_builders()) {
    if (!policy.trusted_builders.insert(builder).second) {
      return Duplicate("trusted_builders", absl::StrCat("builder ", builder));
    }
  }
  for (const std::string& relay : proto.trusted_relays()) {
    if (!policy.trusted_relays.insert(relay).second) {
      return Duplicate("trusted_relays", absl::StrCat("relay '", relay, "'"));
    }
  }
  for (int i = 0; i < proto.builder_pubkeys_size(); ++i) {
    const v1::BuilderPubkey& key = proto.builder_pubkeys(i);
    if (key.pubkey().size() != core::bounds::kPubkeyBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("builder_pubkeys[", i, "].pubkey is ", key.pubkey().size(),
                       " bytes; a BLS public key is ", core::bounds::kPubkeyBytes));
    }
    if (!policy.builder_pubkeys.try_emplace(key.builder_index(), key.pubkey()).second) {
      return Duplicate("builder_pubkeys", absl::StrCat("builder ", key.builder_index()));
    }
  }
  policy.missed_slots = MissedSlotStateFromProto(proto.missed_slots());
  policy.computed_at_slot = proto.computed_at_slot();
  policy.computed_at_epoch = proto.computed_at_epoch();
  policy.reason = proto.reason();
  return policy;
}

// --- Observations ----------------------------------------------------------------------------

absl::Status BidSeenFromFields(uint64_t builder_index, absl::string_view relay,
                               absl::string_view pubkey, core::Event& event) {
  if (absl::Status key = core::bounds::CheckExactBytes("bid_seen.builder_pubkey", pubkey,
                                                       core::bounds::kPubkeyBytes,
                                                       /*empty_ok=*/true);
      !key.ok()) {
    return key;
  }
  // Assigned in place: the strings keep the capacity of the bid converted before.
  auto* bid = std::get_if<core::BidSeen>(&event);
  if (bid == nullptr) bid = &event.emplace<core::BidSeen>();
  bid->builder = builder_index;
  bid->relay.assign(relay.data(), relay.size());
  bid->pubkey.assign(pubkey.data(), pubkey.size());
  return absl::OkStatus();
}

absl::StatusOr<core::Observation> ObservationFromProto(const v1::Observation& proto,
                                                       absl::string_view node_id) {
  core::Observation observation;
  if (absl::Status status = ObservationFromProto(proto, node_id, observation); !status.ok()) {
    return status;
  }
  return observation;
}

absl::Status ObservationFromProto(const v1::Observation& proto, absl::string_view node_id,
                                  core::Observation& observation) {
  observation.slot = proto.slot();
  observation.node.assign(node_id.data(), node_id.size());
  observation.sequence = proto.sequence();
  switch (proto.event_case()) {
    case v1::Observation::kBidSeen: {
      const v1::BidSeen& bid = proto.bid_seen();
      return BidSeenFromFields(bid.builder_index(), bid.relay(), bid.builder_pubkey(),
                               observation.event);
    }
    case v1::Observation::kPayloadMissing: {
      const v1::PayloadMissing& missing = proto.payload_missing();
      absl::StatusOr<core::BlockRoot> root =
          RootFromBytes(missing.block_root(), "payload_missing.block_root");
      if (!root.ok()) return root.status();
      observation.event =
          core::PayloadMissing{missing.builder_index(), *root, missing.attested_fraction()};
      break;
    }
    case v1::Observation::kPayloadDelivered: {
      const v1::PayloadDelivered& delivered = proto.payload_delivered();
      absl::StatusOr<core::BlockRoot> root =
          RootFromBytes(delivered.block_root(), "payload_delivered.block_root");
      if (!root.ok()) return root.status();
      observation.event = core::PayloadDelivered{delivered.builder_index(), *root};
      break;
    }
    case v1::Observation::kBlocksSeen: {
      core::BlocksSeen seen;
      const auto& roots = proto.blocks_seen().block_roots();
      if (absl::Status count = core::bounds::CheckMaxCount("blocks_seen.block_roots", roots.size(),
                                                           core::bounds::kMaxBlockRootsPerSlot);
          !count.ok()) {
        return count;
      }
      seen.roots.reserve(roots.size());
      for (int i = 0; i < roots.size(); ++i) {
        absl::StatusOr<core::BlockRoot> root =
            RootFromBytes(roots[i], absl::StrCat("blocks_seen.block_roots[", i, "]"));
        if (!root.ok()) return root.status();
        seen.roots.push_back(*root);
      }
      observation.event = std::move(seen);
      break;
    }
    case v1::Observation::kFinalized:
      observation.event = core::Finalized{proto.finalized().epoch()};
      break;
    case v1::Observation::kBuilderExited:
      observation.event = core::BuilderExited{proto.builder_exited().builder_index()};
      break;
    case v1::Observation::kRelayRevealMissing: {
      const v1::RelayRevealMissing& missing = proto.relay_reveal_missing();
      absl::StatusOr<core::BlockRoot> root =
          RootFromBytes(missing.block_root(), "relay_reveal_missing.block_root");
      if (!root.ok()) return root.status();
      observation.event = core::RelayRevealMissing{missing.relay(), *root};
      break;
    }
    case v1::Observation::EVENT_NOT_SET:
      return absl::InvalidArgumentError(
          absl::StrCat("observation ", proto.sequence(),
                       " has no event (none set, or only one newer than this breakerd); set "
                       "one of bid_seen, payload_missing, payload_delivered, blocks_seen, "
                       "finalized, builder_exited, relay_reveal_missing"));
  }
  return absl::OkStatus();
}

v1::Observation ObservationToProto(const core::Observation& observation) {
  v1::Observation proto;
  proto.set_sequence(observation.sequence);
  proto.set_slot(observation.slot);
  std::visit(core::Overloaded{
                 [&](const core::BidSeen& bid) {
                   v1::BidSeen* out = proto.mutable_bid_seen();
                   out->set_builder_index(bid.builder);
                   out->set_relay(bid.relay);
                   out->set_builder_pubkey(bid.pubkey);
                 },
                 [&](const core::PayloadMissing& missing) {
                   v1::PayloadMissing* out = proto.mutable_payload_missing();
                   out->set_builder_index(missing.builder);
                   out->set_block_root(RootBytes(missing.root));
                   out->set_attested_fraction(missing.attested_fraction);
                 },
                 [&](const core::PayloadDelivered& delivered) {
                   v1::PayloadDelivered* out = proto.mutable_payload_delivered();
                   out->set_builder_index(delivered.builder);
                   out->set_block_root(RootBytes(delivered.root));
                 },
                 [&](const core::BlocksSeen& seen) {
                   v1::BlocksSeen* out = proto.mutable_blocks_seen();
                   for (const core::BlockRoot& root : seen.roots) {
                     out->add_block_roots(RootBytes(root));
                   }
                 },
                 [&](const core::Finalized& finalized) {
                   proto.mutable_finalized()->set_epoch(finalized.epoch);
                 },
                 [&](const core::BuilderExited& exited) {
                   proto.mutable_builder_exited()->set_builder_index(exited.builder);
                 },
                 [&](const core::RelayRevealMissing& missing) {
                   v1::RelayRevealMissing* out = proto.mutable_relay_reveal_missing();
                   out->set_relay(missing.relay);
                   out->set_block_root(RootBytes(missing.root));
                 },
             },
             observation.event);
  return proto;
}

}  // namespace breaker::codec
