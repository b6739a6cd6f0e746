#include "proto/codec/journal_apply.h"

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
    if (absl::Status converted = ObservationFromProto(proto, node_id, observation);
        !converted.ok()) {
      // Handled all the same: a resend under the same number is a replay.
      engine.MarkHandled(node_id, proto.sequence());
      result.status = converted;
      continue;
    }
    absl::StatusOr<core::ObserveResult> observed = engine.Observe(observation);
    if (observed.ok()) {
      result.observed = *observed;
    } else {
      result.status = observed.status();
    }
  }
}

// Applies an observations entry's repeated observations, then its batch: `batch` when the
// caller parsed it, else the entry's batch bytes, parsed here.
absl::Status ApplyNodeObservations(const state::v1::NodeObservations& entry,
                                   const v1::ObservationBatch* batch, core::Engine& engine,
                                   std::vector<AppliedObservation>& applied) {
  v1::ObservationBatch parsed;
  if (batch == nullptr && !entry.batch().empty()) {
    if (!parsed.ParseFromString(entry.batch())) {
      return absl::InvalidArgumentError(
          absl::StrCat("the observations entry of node ", core::bounds::QuotePrefix(entry.node_id()),
                       " holds a batch that is not a serialized breaker.v1.ObservationBatch"));
    }
    batch = &parsed;
  }
  ApplyObservations(entry.node_id(), entry.observations(), engine, applied);
  if (batch != nullptr) ApplyObservations(entry.node_id(), batch->observations(), engine, applied);
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

AppliedEntry ApplyJournalEntry(const state::v1::JournalEntry& entry, core::Engine& engine,
                               const v1::ObservationBatch* batch) {
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
