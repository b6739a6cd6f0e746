#include "proto/codec/snapshot_codec.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/input_bounds.h"
#include "core/missed_slots.h"
#include "core/types.h"
#include "proto/codec/api_codec.h"
#include "proto/codec/codec_util.h"

namespace breaker::codec {
namespace {

// --- Snapshot parts --------------------------------------------------------------------------

using Snapshot = state::v1::EngineSnapshot;

void FailureRecordToProto(const core::FailureRecord& record, Snapshot::FailureRecord* proto) {
  proto->set_failed(record.failed);
  proto->set_ban_until_epoch(record.ban_until_epoch);
  proto->set_ban_until_reset(record.ban_until_reset);
  proto->set_backoff_epoch(record.backoff_epoch);
  proto->set_last_failure(record.last_failure);
  proto->set_last_failure_epoch(record.last_failure_epoch);
}

core::FailureRecord FailureRecordFromProto(const Snapshot::FailureRecord& proto) {
  core::FailureRecord record;
  record.failed = proto.failed();
  record.ban_until_epoch = proto.ban_until_epoch();
  record.ban_until_reset = proto.ban_until_reset();
  record.backoff_epoch = proto.backoff_epoch();
  record.last_failure = proto.last_failure();
  record.last_failure_epoch = proto.last_failure_epoch();
  return record;
}

void TrackerToProto(const core::MissedSlotTracker::State& state,
                    Snapshot::MissedSlotTracker* proto) {
  proto->set_start_slot(state.start_slot);
  proto->mutable_present_slots()->Add(state.present_slots.begin(), state.present_slots.end());
  proto->mutable_observed_slots()->Add(state.observed_slots.begin(), state.observed_slots.end());
  if (state.has_finalized) proto->set_finalized_epoch(state.finalized_epoch);
  proto->set_latched(state.latched);
  proto->set_latched_rule(state.latched_rule);
}

core::MissedSlotTracker::State TrackerFromProto(const Snapshot::MissedSlotTracker& proto) {
  core::MissedSlotTracker::State state;
  state.start_slot = proto.start_slot();
  state.present_slots.assign(proto.present_slots().begin(), proto.present_slots().end());
  state.observed_slots.assign(proto.observed_slots().begin(), proto.observed_slots().end());
  state.has_finalized = proto.has_finalized_epoch();
  state.finalized_epoch = proto.finalized_epoch();
  state.latched = proto.latched();
  state.latched_rule = proto.latched_rule();
  return state;
}

}  // namespace

// --- Snapshots -------------------------------------------------------------------------------

state::v1::EngineSnapshot SnapshotToProto(const core::EngineState& state) {
  state::v1::EngineSnapshot proto;
  proto.set_current_slot(state.current_slot);
  *proto.mutable_policy() = PolicyToProto(state.policy);
  for (const auto* entry : SortedEntries(state.builders)) {
    Snapshot::BuilderRecord* builder = proto.add_builders();
    builder->set_builder_index(entry->first);
    FailureRecordToProto(entry->second.failures, builder->mutable_failures());
  }
  for (const auto* entry : SortedEntries(state.builder_keys)) {
    Snapshot::BuilderKey* key = proto.add_builder_keys();
    key->set_builder_index(entry->first);
    key->set_pubkey(entry->second.pubkey);
    key->set_last_bid_epoch(entry->second.last_bid_epoch);
  }
  for (const auto* entry : SortedEntries(state.relays)) {
    const core::RelayRecord& record = entry->second;
    Snapshot::RelayRecord* relay = proto.add_relays();
    relay->set_relay(entry->first);
    for (const auto* member : SortedEntries(record.learned)) {
      Snapshot::LearnedMember* learned = relay->add_learned_members();
      learned->set_builder_index(member->first);
      learned->set_epoch(member->second);
    }
    FailureRecordToProto(record.failures, relay->mutable_failures());
    relay->set_last_seen_epoch(record.last_seen_epoch);
  }
  for (const auto* entry : SortedEntries(state.votes)) {
    const core::RootVote& vote = entry->second;
    Snapshot::RootVote* out = proto.add_votes();
    out->set_block_root(RootBytes(entry->first));
    out->set_slot(vote.slot);
    out->set_builder_index(vote.builder);
    out->set_relay(vote.relay);
    out->mutable_reporters()->Add(vote.reporters.begin(), vote.reporters.end());
    out->set_applied(vote.applied);
    out->set_delivered(vote.delivered);
  }
  for (const auto* entry : SortedEntries(state.node_sequences)) {
    Snapshot::NodeSequence* node = proto.add_node_sequences();
    node->set_node_id(entry->first);
    node->set_sequence(entry->second);
  }
  for (const auto* entry : SortedEntries(state.operator_bans)) {
    Snapshot::OperatorBan* ban = proto.add_operator_bans();
    ban->set_builder_index(entry->first);
    ban->set_reason(entry->second.reason);
    if (entry->second.until_epoch.has_value()) ban->set_until_epoch(*entry->second.until_epoch);
  }
  for (const auto* entry : SortedEntries(state.operator_relay_bans)) {
    Snapshot::OperatorRelayBan* ban = proto.add_operator_relay_bans();
    ban->set_relay(entry->first);
    ban->set_reason(entry->second.reason);
    if (entry->second.until_epoch.has_value()) ban->set_until_epoch(*entry->second.until_epoch);
  }
  for (const auto* entry : SortedEntries(state.builder_trust_overrides)) {
    Snapshot::BuilderTrustOverride* trust = proto.add_builder_trust_overrides();
    trust->set_builder_index(entry->first);
    trust->set_trusted(entry->second);
  }
  for (const auto* entry : SortedEntries(state.relay_trust_overrides)) {
    Snapshot::RelayTrustOverride* trust = proto.add_relay_trust_overrides();
    trust->set_relay(entry->first);
    trust->set_trusted(entry->second);
  }
  TrackerToProto(state.missed_slots, proto.mutable_missed_slots());
  return proto;
}

absl::StatusOr<core::EngineState> SnapshotFromProto(const state::v1::EngineSnapshot& snapshot) {
  core::EngineState state;
  state.current_slot = snapshot.current_slot();

  absl::StatusOr<core::Policy> policy = PolicyFromProto(snapshot.policy());
  if (!policy.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("policy: ", policy.status().message()));
  }
  state.policy = *std::move(policy);

  for (const Snapshot::BuilderKey& key : snapshot.builder_keys()) {
    if (!state.builder_keys
             .try_emplace(key.builder_index(), core::BuilderKey{key.pubkey(), key.last_bid_epoch()})
             .second) {
      return Duplicate("builder_keys", absl::StrCat("builder ", key.builder_index()));
    }
  }

  for (const Snapshot::BuilderRecord& builder : snapshot.builders()) {
    core::BuilderRecord record;
    record.failures = FailureRecordFromProto(builder.failures());
    if (!state.builders.try_emplace(builder.builder_index(), std::move(record)).second) {
      return Duplicate("builders", absl::StrCat("builder ", builder.builder_index()));
    }
    // A snapshot from before builder_keys kept the key in the record. Another length was never
    // a real key: it could not match any bid the engine now takes.
    if (builder.pubkey().size() == core::bounds::kPubkeyBytes) {
      state.builder_keys.try_emplace(builder.builder_index(),
                                     core::BuilderKey{builder.pubkey(), 0});
    }
  }

  for (const Snapshot::RelayRecord& relay : snapshot.relays()) {
    core::RelayRecord record;
    for (const Snapshot::LearnedMember& member : relay.learned_members()) {
      if (!record.learned.try_emplace(member.builder_index(), member.epoch()).second) {
        return Duplicate(absl::StrCat("relay '", relay.relay(), "' learned_members"),
                         absl::StrCat("builder ", member.builder_index()));
      }
    }
    record.failures = FailureRecordFromProto(relay.failures());
    record.last_seen_epoch = relay.last_seen_epoch();
    if (!state.relays.try_emplace(relay.relay(), std::move(record)).second) {
      return Duplicate("relays", absl::StrCat("relay '", relay.relay(), "'"));
    }
  }

  for (int i = 0; i < snapshot.votes_size(); ++i) {
    const Snapshot::RootVote& vote = snapshot.votes(i);
    absl::StatusOr<core::BlockRoot> root =
        RootFromBytes(vote.block_root(), absl::StrCat("votes[", i, "].block_root"));
    if (!root.ok()) return root.status();
    core::RootVote record;
    record.slot = vote.slot();
    record.builder = vote.builder_index();
    record.relay = vote.relay();
    record.reporters.assign(vote.reporters().begin(), vote.reporters().end());
    record.applied = vote.applied();
    record.delivered = vote.delivered();
    if (!state.votes.try_emplace(*root, std::move(record)).second) {
      return Duplicate("votes", absl::StrCat("block root ", root->ShortHex()));
    }
  }

  for (const Snapshot::NodeSequence& node : snapshot.node_sequences()) {
    if (!state.node_sequences.try_emplace(node.node_id(), node.sequence()).second) {
      return Duplicate("node_sequences", absl::StrCat("node '", node.node_id(), "'"));
    }
  }

  for (const Snapshot::OperatorBan& ban : snapshot.operator_bans()) {
    core::OperatorBan record;
    record.reason = ban.reason();
    if (ban.has_until_epoch()) record.until_epoch = ban.until_epoch();
    if (!state.operator_bans.try_emplace(ban.builder_index(), std::move(record)).second) {
      return Duplicate("operator_bans", absl::StrCat("builder ", ban.builder_index()));
    }
  }

  for (const Snapshot::OperatorRelayBan& ban : snapshot.operator_relay_bans()) {
    core::OperatorBan record;
    record.reason = ban.reason();
    if (ban.has_until_epoch()) record.until_epoch = ban.until_epoch();
    if (!state.operator_relay_bans.try_emplace(ban.relay(), std::move(record)).second) {
      return Duplicate("operator_relay_bans", absl::StrCat("relay '", ban.relay(), "'"));
    }
  }

  for (const Snapshot::BuilderTrustOverride& trust : snapshot.builder_trust_overrides()) {
    if (!state.builder_trust_overrides.try_emplace(trust.builder_index(), trust.trusted()).second) {
      return Duplicate("builder_trust_overrides", absl::StrCat("builder ", trust.builder_index()));
    }
  }

  for (const Snapshot::RelayTrustOverride& trust : snapshot.relay_trust_overrides()) {
    if (!state.relay_trust_overrides.try_emplace(trust.relay(), trust.trusted()).second) {
      return Duplicate("relay_trust_overrides", absl::StrCat("relay '", trust.relay(), "'"));
    }
  }

  state.missed_slots = TrackerFromProto(snapshot.missed_slots());
  return state;
}

}  // namespace breaker::codec
