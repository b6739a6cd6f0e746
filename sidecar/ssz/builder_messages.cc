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
