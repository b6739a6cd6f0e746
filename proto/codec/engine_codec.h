#ifndef PROTO_CODEC_ENGINE_CODEC_H_
#define PROTO_CODEC_ENGINE_CODEC_H_

// Conversions between the breaker engine's values (//core) and their protobuf forms: the
// policy and observations of the API (breaker/v1/breaker.proto) and the engine snapshot of the
// on-disk format (breaker/state/v1/state.proto).
//
// The *FromProto functions check only what the conversion needs (enum values, byte lengths,
// each key once); the engine checks meaning (slot ranges, relay identifiers, the self-build
// index) when it observes or imports the result. Every *ToProto output is deterministic: lists
// that come from hash maps or sets are sorted by key, so equal values serialize to equal bytes
// (with deterministic serialization).

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "breaker/state/v1/state.pb.h"
#include "breaker/v1/breaker.pb.h"
#include "core/engine.h"
#include "core/observation.h"
#include "core/policy.h"

namespace breaker::codec {

// Converts one ban for the API.
breaker::v1::Ban BanToProto(const core::Ban& ban);

// Converts a policy for the API: banned builders sorted by index, banned relays by identifier,
// trusted builders and relays sorted. Sets only what core::Policy holds: no wall-clock time.
breaker::v1::Policy PolicyToProto(const core::Policy& policy);

// Converts an API policy back. Returns INVALID_ARGUMENT for an unspecified or unknown mode or
// ban kind, and for a builder or relay banned twice or trusted twice.
absl::StatusOr<core::Policy> PolicyFromProto(const breaker::v1::Policy& proto);

// Converts one observation of node `node_id` for Engine::Observe. Pubkeys are carried as raw
// bytes. Returns INVALID_ARGUMENT naming the field for an observation with no event, a block
// root that is not exactly 32 bytes (payload_missing.block_root, payload_delivered.block_root,
// relay_reveal_missing.block_root, blocks_seen.block_roots[i]), a builder_pubkey neither empty
// nor 48 bytes, and more than core::bounds::kMaxBlockRootsPerSlot blocks_seen.block_roots.
absl::StatusOr<core::Observation> ObservationFromProto(const breaker::v1::Observation& proto,
                                                       absl::string_view node_id);

// Converts an observation to its API form, for tests and tools. The node id is not part of
// breaker.v1.Observation and is dropped.
breaker::v1::Observation ObservationToProto(const core::Observation& observation);

// Converts the engine's state to a snapshot. Leaves `config` and `journal_sequence` unset:
// they are the caller's to fill in.
breaker::state::v1::EngineSnapshot SnapshotToProto(const core::EngineState& state);

// Converts a snapshot back to an engine state for Engine::Import, ignoring `config` and
// `journal_sequence` (the caller reads them). Returns INVALID_ARGUMENT for a policy that
// PolicyFromProto refuses, a block root that is not exactly 32 bytes, and a key present twice
// in a list that mirrors a map (builder index, builder key, relay, learned member, block root,
// node id, operator ban of a builder or a relay, trust override). A snapshot's legacy BuilderRecord.pubkey of 48 bytes
// is read as the index's key when builder_keys has none.
absl::StatusOr<core::EngineState> SnapshotFromProto(
    const breaker::state::v1::EngineSnapshot& snapshot);

}  // namespace breaker::codec

#endif  // PROTO_CODEC_ENGINE_CODEC_H_
