#ifndef PROTO_CODEC_SNAPSHOT_CODEC_H_
#define PROTO_CODEC_SNAPSHOT_CODEC_H_

// Conversions between the breaker engine's whole state (core::EngineState) and the snapshot of
// breakerd's on-disk format (breaker/state/v1/state.proto). A piece of its own because only
// breakerd stores and restores its state: the API's users do not carry the stored format. The
// snapshot embeds the API's policy and missed-slot state, which it converts with the API codec
// (api_codec.h).
//
// Snapshots written by one version of breakerd are read by later ones, so state.proto's rules
// bind this conversion too: a field that an older snapshot lacks reads as its zero value, which
// state.proto gives the meaning that version had without it, and a field that only older
// versions wrote is still read (BuilderRecord.pubkey, below). SnapshotFromProto checks only
// what the conversion needs (byte lengths, each key once); Engine::Import checks meaning.
// SnapshotToProto is deterministic: every list that mirrors a map is sorted by key, so equal
// states serialize to equal bytes (with deterministic serialization).

#include "absl/status/statusor.h"
#include "breaker/state/v1/state.pb.h"
#include "core/engine.h"

namespace breaker::codec {

// Converts the engine's state to a snapshot. Leaves `config` and `journal_sequence` unset:
// they are the caller's to fill in.
breaker::state::v1::EngineSnapshot SnapshotToProto(const core::EngineState& state);

// Converts a snapshot back to an engine state for Engine::Import, ignoring `config` and
// `journal_sequence` (the caller reads them). Returns INVALID_ARGUMENT for a policy that
// PolicyFromProto refuses, a block root that is not exactly 32 bytes, and a key present twice
// in a list that mirrors a map (builder index, builder key, relay, learned member, block root,
// node id, operator ban of a builder or a relay, trust override). A snapshot's legacy
// BuilderRecord.pubkey of 48 bytes is read as the index's key when builder_keys has none.
absl::StatusOr<core::EngineState> SnapshotFromProto(
    const breaker::state::v1::EngineSnapshot& snapshot);

}  // namespace breaker::codec

#endif  // PROTO_CODEC_SNAPSHOT_CODEC_H_
