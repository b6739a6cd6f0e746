#ifndef SIDECAR_BUILDER_MESSAGES_H_
#define SIDECAR_BUILDER_MESSAGES_H_

// What the sidecar reads of the builder API's bodies (ethereum/builder-specs), pure: a relay's
// header and Gloas bid, the node's blinded block and its validator registrations. JSON is read
// with a bound on its nesting (common/bounded_json.h); SSZ by the containers of sidecar/ssz,
// never by offset. Every reader takes bytes from outside and is fuzzed (messages_fuzzer).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/types.h"
#include "sidecar/ssz/beacon_block.h"

namespace breaker::sidecar {

// Whether `content_type` says SSZ (application/octet-stream), else JSON.
bool IsSsz(absl::string_view content_type);

// What the sidecar reads of a signed blinded block (a submitBlindedBlock body).
struct BlindedBlock {
  core::Slot slot = 0;
  // The block root: the BlindedBeaconBlock's hash_tree_root, which is the BeaconBlock's, the
  // root a node linking the client library reports for the same block.
  core::BlockRoot root;
  // The execution payload header's block hash, lower-case hex with 0x; empty when unknown.
  std::string block_hash;
};

// Parses a SignedBlindedBeaconBlock of Bellatrix to Fulu (sidecar/ssz) in JSON (optionally
// inside a {"version", "data"} envelope) or, when `content_type` is application/octet-stream,
// in SSZ, with `preset`'s limits. The fork is read from the body (the envelope's version, else
// the fields only that fork's body has), as a body of one fork is no valid body of another.
// InvalidArgument, naming the field, when the body is none of these.
absl::StatusOr<BlindedBlock> ParseBlindedBlock(absl::string_view body,
                                               absl::string_view content_type,
                                               const ssz::Preset& preset);

// A getHeader answer in JSON, read in one pass without a document (it is on the proposer's
// path): nullopt when the body is not JSON; else its block hash (data.message.header.block_hash,
// of the last member of each name, as a document would keep it), lower-case, or empty when it
// has none.
std::optional<std::string> HeaderBlockHash(absl::string_view body);

// The builder index of a getExecutionPayloadBid answer: data.message.builder_index (a decimal
// string, or a number) of JSON, optionally without the {"version", "data"} envelope; or, when
// `content_type` is application/octet-stream, the builder_index field of an SSZ
// SignedExecutionPayloadBid. nullopt when the body is neither.
std::optional<core::BuilderIndex> BidBuilderIndex(absl::string_view body,
                                                  absl::string_view content_type);

// The validator public keys of a registerValidator body: a JSON array of
// SignedValidatorRegistrationV1, or (`ssz`) their SSZ list. Keys are lower-case, 0x and 96 hex
// digits.
struct Registrations {
  std::vector<std::string> pubkeys;
  // Entries (or, for a body that is no list at all, the body) without a valid public key.
  uint64_t invalid = 0;
};
Registrations ReadRegistrations(absl::string_view body, bool ssz);

}  // namespace breaker::sidecar

#endif  // SIDECAR_BUILDER_MESSAGES_H_
