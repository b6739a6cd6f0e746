#ifndef PROTO_CODEC_API_CODEC_H_
#define PROTO_CODEC_API_CODEC_H_

// Conversions between the breaker engine's values (//core) and the messages of the API
// (breaker/v1/breaker.proto): bans, policies and observations. A piece of its own because the
// client library speaks the API and nothing else: it takes this codec without breakerd's
// on-disk format. The snapshot codec (snapshot_codec.h) builds on it for the policy that a
// snapshot holds.
//
// The *FromProto functions check only what the conversion needs (enum values, byte lengths,
// each key once); the engine checks meaning (slot ranges, relay identifiers, the self-build
// index) when it observes the result. Every *ToProto output is deterministic: lists that come
// from hash maps or sets are sorted by key, so equal values serialize to equal bytes (with
// deterministic serialization).

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "breaker/v1/breaker.pb.h"
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
// The same, into `observation`, whose strings are reused: converting a batch into one
// observation allocates nothing per bid. After an error, `observation` holds a part of it.
absl::Status ObservationFromProto(const breaker::v1::Observation& proto, absl::string_view node_id,
                                  core::Observation& observation);
// The bid_seen part of ObservationFromProto, from a BidSeen's fields, into `event` (reused
// likewise): for a batch read in place (ReceivedBatch::Bid).
absl::Status BidSeenFromFields(uint64_t builder_index, absl::string_view relay,
                               absl::string_view pubkey, core::Event& event);

// Converts an observation to its API form, for tests and tools. The node id is not part of
// breaker.v1.Observation and is dropped.
breaker::v1::Observation ObservationToProto(const core::Observation& observation);

}  // namespace breaker::codec

#endif  // PROTO_CODEC_API_CODEC_H_
