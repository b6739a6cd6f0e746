#include "proto/codec/journal_apply.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/input_bounds.h"
#include "google/protobuf/util/message_differencer.h"
#include "proto/codec/admin_action.h"
#include "proto/codec/api_codec.h"
#include "proto/codec/config_file.h"

namespace breaker::codec {
namespace {

namespace v1 = ::breaker::v1;

// Applies `observation`, whose conversion from the entry returned `converted`, into `result`
// (which holds its sequence number already).
void Observe(const absl::Status& converted, const core::Observation& observation,
             core::Engine& engine, AppliedObservation& result) {
  if (!converted.ok()) {
    // Handled all the same: a resend under the same number is a replay.
    engine.MarkHandled(observation.node, result.sequence);
    result.status = converted;
    return;
  }
  absl::StatusOr<core::ObserveResult> observed = engine.Observe(observation);
  if (observed.ok()) {
    result.observed = *observed;
  } else {
    result.status = observed.status();
  }
}

void ApplyObservations(const std::string& node_id,
                       const google::protobuf::RepeatedPtrField<v1::Observation>& observations,
                       core::Engine& engine, std::vector<AppliedObservation>& applied) {
  applied.reserve(applied.size() + observations.size());
  // One for the batch, converted into in turn.
  core::Observation observation;
  for (const v1::Observation& proto : observations) {
    AppliedObservation& result = applied.emplace_back();
    result.sequence = proto.sequence();
    result.event = proto.event_case();
    Observe(ObservationFromProto(proto, node_id, observation), observation, engine, result);
  }
}

// The bids of a batch read in place, as ApplyObservations applies parsed ones.
void ApplyBids(const std::string& node_id, const ReceivedBatch& batch, core::Engine& engine,
               std::vector<AppliedObservation>& applied) {
  applied.reserve(applied.size() + batch.size());
  core::Observation observation;
  observation.node = node_id;
  for (int i = 0; i < batch.size(); ++i) {
    const ReceivedBatch::Bid bid = batch.bid(i);
    AppliedObservation& result = applied.emplace_back();
    result.sequence = bid.sequence;
    result.event = v1::Observation::kBidSeen;
    observation.slot = bid.slot;
    observation.sequence = bid.sequence;
    Observe(BidSeenFromFields(bid.builder_index, bid.relay, bid.pubkey, observation.event),
            observation, engine, result);
  }
}

// Applies an observations entry's repeated observations, then its batch: `batch` when the
// caller read it, else the entry's batch bytes, read here.
absl::Status ApplyNodeObservations(const state::v1::NodeObservations& entry,
                                   const ReceivedBatch* batch, core::Engine& engine,
                                   std::vector<AppliedObservation>& applied) {
  std::optional<ReceivedBatch> read;
  if (batch == nullptr && !entry.batch().empty()) {
    absl::StatusOr<ReceivedBatch> parsed = ReceivedBatch::Parse(entry.batch());
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the observations entry of node ", core::bounds::QuotePrefix(entry.node_id()),
          " holds a batch that is not a serialized breaker.v1.ObservationBatch"));
    }
    batch = &read.emplace(*std::move(parsed));
  }
  ApplyObservations(entry.node_id(), entry.observations(), engine, applied);
  if (batch == nullptr) return absl::OkStatus();
  if (batch->read_in_place()) {
    ApplyBids(entry.node_id(), *batch, engine, applied);
  } else {
    ApplyObservations(entry.node_id(), batch->parsed().observations(), engine, applied);
  }
  return absl::OkStatus();
}

// Sets `changed` when the configuration in force is another one afterwards.
absl::Status Reconfigure(const v1::Config& proto, core::Engine& engine, bool& changed) {
  absl::StatusOr<core::Config> config = ConfigFromProto(proto);
  if (!config.ok()) return config.status();
  const v1::Config before = ConfigToProto(engine.config());
  if (absl::Status status = engine.Reconfigure(*std::move(config)); !status.ok()) return status;
  changed =
      !google::protobuf::util::MessageDifferencer::Equals(before, ConfigToProto(engine.config()));
  return absl::OkStatus();
}

}  // namespace

std::vector<ContentRefusal> RefusedForContent(const ReceivedBatch& batch,
                                              const std::string& node_id) {
  std::vector<ContentRefusal> refused;
  core::Observation observation;
  observation.node = node_id;
  // A node's batch names a few relays, most often one: each is normalized once.
  std::string last_good_relay;
  auto known_relay = [&last_good_relay](absl::string_view relay) {
    return !last_good_relay.empty() && relay == last_good_relay;
  };
  for (int i = 0; i < batch.size(); ++i) {
    absl::Status status;
    v1::Observation::EventCase event = v1::Observation::kBidSeen;
    if (batch.read_in_place()) {
      const ReceivedBatch::Bid bid = batch.bid(i);
      status = BidSeenFromFields(bid.builder_index, bid.relay, bid.pubkey, observation.event);
    } else {
      const v1::Observation& proto = batch.parsed().observations(i);
      event = proto.event_case();
      status = ObservationFromProto(proto, node_id, observation);
    }
    if (status.ok()) status = core::Engine::CheckContent(observation, known_relay);
    if (status.ok()) {
      if (const auto* bid = std::get_if<core::BidSeen>(&observation.event)) {
        last_good_relay = bid->relay;
      }
      continue;
    }
    refused.push_back(ContentRefusal{i, batch.sequence(i), event, std::move(status)});
  }
  return refused;
}

AppliedEntry ApplyJournalEntry(const state::v1::JournalEntry& entry, core::Engine& engine,
                               const ReceivedBatch* batch) {
  AppliedEntry applied;
  applied.previous_version = engine.policy().version;
  switch (entry.change_case()) {
    case state::v1::JournalEntry::kObservations:
      applied.status =
          ApplyNodeObservations(entry.observations(), batch, engine, applied.observations);
      break;
    case state::v1::JournalEntry::kAdvanceToSlot:
      engine.Advance(entry.advance_to_slot());
      break;
    case state::v1::JournalEntry::kAdmin:
      applied.status = ApplyAdminAction(entry.admin(), engine);
      break;
    case state::v1::JournalEntry::kReconfigure:
      applied.status = Reconfigure(entry.reconfigure(), engine, applied.config_changed);
      break;
    case state::v1::JournalEntry::kRenewFleetId:
      if (entry.renew_fleet_id().fleet_id().empty()) {
        applied.status = absl::InvalidArgumentError("a fleet id renewal without a fleet id");
      }
      break;
    case state::v1::JournalEntry::CHANGE_NOT_SET:
      break;
  }
  // After every entry, refused or not: a replay recomputes at the same points, so it reaches
  // the same versions.
  engine.RefreshPolicy();
  applied.policy_changed = engine.policy().version != applied.previous_version;
  return applied;
}

}  // namespace breaker::codec
