#ifndef SIDECAR_SSZ_BUILDER_MESSAGES_H_
#define SIDECAR_SSZ_BUILDER_MESSAGES_H_

// The builder API's messages other than blocks (ethereum/builder-specs) that the sidecar reads
// in SSZ: a Gloas bid (SignedExecutionPayloadBid, consensus-specs specs/gloas/beacon-chain.md)
// and validator registrations (SignedValidatorRegistrationV1, builder-specs specs/bellatrix/
// builder.md). Each is a Type like a block's, read by its layout, never by a fixed offset.
//
// Pure and thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sidecar/ssz/beacon_block.h"
#include "sidecar/ssz/ssz.h"

namespace breaker::sidecar::ssz {

// SignedExecutionPayloadBid: {message: ExecutionPayloadBid, signature}, the bid's blob
// commitments bounded by `preset`.
Type SignedExecutionPayloadBid(const Preset& preset);

// SignedValidatorRegistrationV1: {message: ValidatorRegistrationV1 (fee_recipient, gas_limit,
// timestamp, pubkey), signature}; fixed-size.
Type SignedValidatorRegistrationV1();

// The builder_index of an SSZ SignedExecutionPayloadBid. InvalidArgument, naming the field,
// when `ssz` is not the layout of one (its offsets out of place, too short).
absl::StatusOr<uint64_t> BidBuilderIndexFromSsz(absl::string_view ssz, const Preset& preset);

// The builder_index of the bid in an SSZ Gloas BeaconBlock (consensus-specs
// specs/gloas/beacon-chain.md: its body's signed_execution_payload_bid), as produceBlockV4
// answers when the payload is not included: read by the block's and the body's layouts, the
// body's fixed fields sized by `preset`. InvalidArgument, naming the field, when `ssz` is not
// that layout. The body's lists are Electra's types (a Gloas progressive list is encoded as a
// list), read no deeper than their offsets.
absl::StatusOr<uint64_t> BlockBidBuilderIndexFromSsz(absl::string_view ssz, const Preset& preset);

// The public keys ("0x" and lower-case hex) of an SSZ list of SignedValidatorRegistrationV1,
// in order. InvalidArgument when its length is not a multiple of a registration's.
absl::StatusOr<std::vector<std::string>> RegistrationPubkeysFromSsz(absl::string_view ssz);

}  // namespace breaker::sidecar::ssz

#endif  // SIDECAR_SSZ_BUILDER_MESSAGES_H_
