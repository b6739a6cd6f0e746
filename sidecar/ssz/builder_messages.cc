#include "sidecar/ssz/builder_messages.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace breaker::sidecar::ssz {
namespace {

// Every registration list is far shorter; a limit only bounds the list's type.
constexpr uint64_t kValidatorRegistryLimit = uint64_t{1} << 40;
constexpr uint64_t kKzgCommitmentBytes = 48;

Type Signed(Type message) {
  return Container({{"message", std::move(message)}, {"signature", ByteVector(96)}});
}

// The fields of a signed container's message, checked against `signed_type`'s layout.
absl::StatusOr<std::vector<absl::string_view>> MessageFields(const Type& signed_type,
                                                             absl::string_view ssz,
                                                             const std::string& path) {
  absl::StatusOr<std::vector<absl::string_view>> parts = SplitContainer(signed_type, ssz, path);
  if (!parts.ok()) return parts.status();
  return SplitContainer(signed_type.fields[0].type, (*parts)[0],
                        absl::StrCat(path, path.empty() ? "" : ".", "message"));
}

// PTC_SIZE (presets/*/gloas.yaml): 512, and 16 in the minimal preset.
uint64_t PtcSize(const Preset& preset) { return preset == Preset::kMinimal ? 16 : 512; }
constexpr uint64_t kMaxPayloadAttestations = 4;

// A Gloas BeaconBlock: Electra's full block's header and body fields but for the execution
// payload, its blob commitments and requests, which the bid and the parent's requests replace.
absl::StatusOr<Type> GloasBeaconBlock(const Preset& preset) {
  absl::StatusOr<const Type*> electra = BeaconBlockType(Fork::kElectra, BlockKind::kFull, preset);
  if (!electra.ok()) return electra.status();
  const Type& electra_body = (*electra)->fields.back().type;
  const auto field = [&electra_body](absl::string_view name) {
    return electra_body.fields[*FieldIndex(electra_body, name)];
  };
  std::vector<Field> body;
  for (absl::string_view name : {"randao_reveal", "eth1_data", "graffiti", "proposer_slashings",
                                 "attester_slashings", "attestations", "deposits",
                                 "voluntary_exits", "sync_aggregate", "bls_to_execution_changes"}) {
    body.push_back(field(name));
  }
  body.push_back({"signed_execution_payload_bid", SignedExecutionPayloadBid(preset)});
  body.push_back({"payload_attestations",
                  List(Container({{"aggregation_bits", Bitvector(PtcSize(preset))},
                                  {"data", Container({{"beacon_block_root", ByteVector(32)},
                                                      {"slot", Uint64()},
                                                      // Booleans: a byte each.
                                                      {"payload_present", ByteVector(1)},
                                                      {"blob_data_available", ByteVector(1)}})},
                                  {"signature", ByteVector(96)}}),
                       kMaxPayloadAttestations)});
  body.push_back({"parent_execution_requests", field("execution_requests").type});
  std::vector<Field> block((*electra)->fields.begin(), (*electra)->fields.end() - 1);
  block.push_back({"body", Container(std::move(body))});
  return Container(std::move(block));
}

}  // namespace

Type SignedExecutionPayloadBid(const Preset& preset) {
  return Signed(Container({
      {"parent_block_hash", ByteVector(32)},
      {"parent_block_root", ByteVector(32)},
      {"block_hash", ByteVector(32)},
      {"prev_randao", ByteVector(32)},
      {"fee_recipient", ByteVector(20)},
      {"gas_limit", Uint64()},
      {"builder_index", Uint64()},
      {"slot", Uint64()},
      {"value", Uint64()},
      {"execution_payment", Uint64()},
      {"blob_kzg_commitments",
       List(ByteVector(kKzgCommitmentBytes), preset.max_blob_commitments_per_block)},
      {"execution_requests_root", ByteVector(32)},
  }));
}

Type SignedValidatorRegistrationV1() {
  return Signed(Container({
      {"fee_recipient", ByteVector(20)},
      {"gas_limit", Uint64()},
      {"timestamp", Uint64()},
      {"pubkey", ByteVector(48)},
  }));
}

absl::StatusOr<uint64_t> BidBuilderIndexFromSsz(absl::string_view ssz, const Preset& preset) {
  const Type bid = SignedExecutionPayloadBid(preset);
  absl::StatusOr<std::vector<absl::string_view>> fields = MessageFields(bid, ssz, "");
  if (!fields.ok()) return fields.status();
  const size_t builder_index = *FieldIndex(bid.fields[0].type, "builder_index");
  return DecodeUint64((*fields)[builder_index], "message.builder_index");
}

absl::StatusOr<uint64_t> BlockBidBuilderIndexFromSsz(absl::string_view ssz, const Preset& preset) {
  absl::StatusOr<Type> block = GloasBeaconBlock(preset);
  if (!block.ok()) return block.status();
  absl::StatusOr<std::vector<absl::string_view>> fields = SplitContainer(*block, ssz, "");
  if (!fields.ok()) return fields.status();
  const Type& body = block->fields.back().type;
  absl::StatusOr<std::vector<absl::string_view>> body_fields =
      SplitContainer(body, fields->back(), "body");
  if (!body_fields.ok()) return body_fields.status();
  const absl::string_view bid = (*body_fields)[*FieldIndex(body, "signed_execution_payload_bid")];
  absl::StatusOr<uint64_t> builder = BidBuilderIndexFromSsz(bid, preset);
  if (!builder.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("body.signed_execution_payload_bid.", builder.status().message()));
  }
  return builder;
}

absl::StatusOr<std::vector<std::string>> RegistrationPubkeysFromSsz(absl::string_view ssz) {
  static const Type* const kRegistration = new Type(SignedValidatorRegistrationV1());
  static const size_t kPubkey = *FieldIndex(kRegistration->fields[0].type, "pubkey");
  const uint64_t size = FixedSize(*kRegistration);
  if (ssz.size() % size != 0 || ssz.size() / size > kValidatorRegistryLimit) {
    return absl::InvalidArgumentError(absl::StrCat(
        ssz.size(), " bytes are no list of SignedValidatorRegistrationV1 (", size, " bytes each)"));
  }
  std::vector<std::string> keys;
  for (size_t at = 0; at < ssz.size(); at += size) {
    absl::StatusOr<std::vector<absl::string_view>> fields =
        MessageFields(*kRegistration, ssz.substr(at, size), absl::StrCat("[", at / size, "]"));
    if (!fields.ok()) return fields.status();
    keys.push_back(Hex((*fields)[kPubkey]));
  }
  return keys;
}

}  // namespace breaker::sidecar::ssz
