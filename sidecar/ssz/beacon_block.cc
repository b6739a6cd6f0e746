#include "sidecar/ssz/beacon_block.h"

#include <array>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/mutex.h"

namespace breaker::sidecar::ssz {
namespace {

using Json = nlohmann::json;

// The same in every preset.
constexpr uint64_t kMaxProposerSlashings = 16;
constexpr uint64_t kMaxAttesterSlashings = 2;
constexpr uint64_t kMaxAttesterSlashingsElectra = 1;
constexpr uint64_t kMaxAttestations = 128;
constexpr uint64_t kMaxAttestationsElectra = 8;
constexpr uint64_t kMaxDeposits = 16;
constexpr uint64_t kMaxVoluntaryExits = 16;
constexpr uint64_t kMaxBlsToExecutionChanges = 16;
constexpr uint64_t kDepositProofLength = 33;  // DEPOSIT_CONTRACT_TREE_DEPTH + 1
constexpr uint64_t kBytesPerLogsBloom = 256;
constexpr uint64_t kMaxExtraDataBytes = 32;
constexpr uint64_t kMaxBytesPerTransaction = uint64_t{1} << 30;
constexpr uint64_t kMaxTransactionsPerPayload = uint64_t{1} << 20;

constexpr std::array<Fork, 5> kForks = {Fork::kBellatrix, Fork::kCapella, Fork::kDeneb,
                                        Fork::kElectra, Fork::kFulu};

Type Bytes20() { return ByteVector(20); }
Type Bytes32() { return ByteVector(32); }
Type Bytes48() { return ByteVector(48); }
Type Bytes96() { return ByteVector(96); }

Type Signed(Type message) {
  return Container({{"message", std::move(message)}, {"signature", Bytes96()}});
}

Type ExecutionPayload(Fork fork, BlockKind kind, const Preset& limits) {
  std::vector<Field> fields = {
      {"parent_hash", Bytes32()},
      {"fee_recipient", Bytes20()},
      {"state_root", Bytes32()},
      {"receipts_root", Bytes32()},
      {"logs_bloom", ByteVector(kBytesPerLogsBloom)},
      {"prev_randao", Bytes32()},
      {"block_number", Uint64()},
      {"gas_limit", Uint64()},
      {"gas_used", Uint64()},
      {"timestamp", Uint64()},
      {"extra_data", ByteList(kMaxExtraDataBytes)},
      {"base_fee_per_gas", Uint256()},
      {"block_hash", Bytes32()},
  };
  const bool blinded = kind == BlockKind::kBlinded;
  if (blinded) {
    fields.push_back({"transactions_root", Bytes32()});
  } else {
    fields.push_back(
        {"transactions", List(ByteList(kMaxBytesPerTransaction), kMaxTransactionsPerPayload)});
  }
  if (fork >= Fork::kCapella) {
    const Type withdrawal = Container({{"index", Uint64()},
                                       {"validator_index", Uint64()},
                                       {"address", Bytes20()},
                                       {"amount", Uint64()}});
    if (blinded) {
      fields.push_back({"withdrawals_root", Bytes32()});
    } else {
      fields.push_back({"withdrawals", List(withdrawal, limits.max_withdrawals_per_payload)});
    }
  }
  if (fork >= Fork::kDeneb) {
    fields.push_back({"blob_gas_used", Uint64()});
    fields.push_back({"excess_blob_gas", Uint64()});
  }
  return Container(std::move(fields));
}

Type ExecutionRequests(const Preset& limits) {
  const Type deposit = Container({{"pubkey", Bytes48()},
                                  {"withdrawal_credentials", Bytes32()},
                                  {"amount", Uint64()},
                                  {"signature", Bytes96()},
                                  {"index", Uint64()}});
  const Type withdrawal = Container(
      {{"source_address", Bytes20()}, {"validator_pubkey", Bytes48()}, {"amount", Uint64()}});
  const Type consolidation = Container(
      {{"source_address", Bytes20()}, {"source_pubkey", Bytes48()}, {"target_pubkey", Bytes48()}});
  return Container({
      {"deposits", List(deposit, limits.max_deposit_requests_per_payload)},
      {"withdrawals", List(withdrawal, limits.max_withdrawal_requests_per_payload)},
      {"consolidations", List(consolidation, limits.max_consolidation_requests_per_payload)},
  });
}

Type BeaconBlock(Fork fork, BlockKind kind, const Preset& limits) {
  const bool electra = fork >= Fork::kElectra;
  const Type checkpoint = Container({{"epoch", Uint64()}, {"root", Bytes32()}});
  const Type attestation_data = Container({{"slot", Uint64()},
                                           {"index", Uint64()},
                                           {"beacon_block_root", Bytes32()},
                                           {"source", checkpoint},
                                           {"target", checkpoint}});
  // Electra's attestations span every committee of the slot.
  const uint64_t attesters =
      limits.max_validators_per_committee * (electra ? limits.max_committees_per_slot : 1);
  const Type indexed_attestation = Container({{"attesting_indices", List(Uint64(), attesters)},
                                              {"data", attestation_data},
                                              {"signature", Bytes96()}});
  std::vector<Field> attestation = {{"aggregation_bits", Bitlist(attesters)},
                                    {"data", attestation_data},
                                    {"signature", Bytes96()}};
  if (electra) attestation.push_back({"committee_bits", Bitvector(limits.max_committees_per_slot)});
  const Type block_header = Container({{"slot", Uint64()},
                                       {"proposer_index", Uint64()},
                                       {"parent_root", Bytes32()},
                                       {"state_root", Bytes32()},
                                       {"body_root", Bytes32()}});
  const Type deposit_data = Container({{"pubkey", Bytes48()},
                                       {"withdrawal_credentials", Bytes32()},
                                       {"amount", Uint64()},
                                       {"signature", Bytes96()}});

  std::vector<Field> body = {
      {"randao_reveal", Bytes96()},
      {"eth1_data",
       Container(
           {{"deposit_root", Bytes32()}, {"deposit_count", Uint64()}, {"block_hash", Bytes32()}})},
      {"graffiti", Bytes32()},
      {"proposer_slashings", List(Container({{"signed_header_1", Signed(block_header)},
                                             {"signed_header_2", Signed(block_header)}}),
                                  kMaxProposerSlashings)},
      {"attester_slashings", List(Container({{"attestation_1", indexed_attestation},
                                             {"attestation_2", indexed_attestation}}),
                                  electra ? kMaxAttesterSlashingsElectra : kMaxAttesterSlashings)},
      {"attestations", List(Container(std::move(attestation)),
                            electra ? kMaxAttestationsElectra : kMaxAttestations)},
      {"deposits",
       List(Container({{"proof", Vector(Bytes32(), kDepositProofLength)}, {"data", deposit_data}}),
            kMaxDeposits)},
      {"voluntary_exits",
       List(Signed(Container({{"epoch", Uint64()}, {"validator_index", Uint64()}})),
            kMaxVoluntaryExits)},
      {"sync_aggregate", Container({{"sync_committee_bits", Bitvector(limits.sync_committee_size)},
                                    {"sync_committee_signature", Bytes96()}})},
      {kind == BlockKind::kBlinded ? "execution_payload_header" : "execution_payload",
       ExecutionPayload(fork, kind, limits)},
  };
  if (fork >= Fork::kCapella) {
    body.push_back(
        {"bls_to_execution_changes", List(Signed(Container({{"validator_index", Uint64()},
                                                            {"from_bls_pubkey", Bytes48()},
                                                            {"to_execution_address", Bytes20()}})),
                                          kMaxBlsToExecutionChanges)});
  }
  if (fork >= Fork::kDeneb) {
    body.push_back(
        {"blob_kzg_commitments", List(Bytes48(), limits.max_blob_commitments_per_block)});
  }
  if (electra) body.push_back({"execution_requests", ExecutionRequests(limits)});
  return Container({{"slot", Uint64()},
                    {"proposer_index", Uint64()},
                    {"parent_root", Bytes32()},
                    {"state_root", Bytes32()},
                    {"body", Container(std::move(body))}});
}

struct BlockTypes {
  Type block;
  Type signed_block;
};

// Every fork's and kind's types of one preset.
class PresetTypes {
 public:
  explicit PresetTypes(const Preset& preset) {
    for (BlockKind k : {BlockKind::kBlinded, BlockKind::kFull}) {
      for (Fork f : kForks) {
        Type block = BeaconBlock(f, k, preset);
        Type signed_block = Signed(block);
        types_.push_back({std::move(block), std::move(signed_block)});
      }
    }
  }
  const BlockTypes& Of(Fork fork, BlockKind kind) const {
    // Fulu's BeaconBlock is Electra's.
    if (fork == Fork::kFulu) fork = Fork::kElectra;
    return types_.at(static_cast<size_t>(kind) * kForks.size() + static_cast<size_t>(fork));
  }

 private:
  std::vector<BlockTypes> types_;
};

std::array<uint64_t, 8> LimitsOf(const Preset& p) {
  return {p.max_validators_per_committee,
          p.max_committees_per_slot,
          p.sync_committee_size,
          p.max_withdrawals_per_payload,
          p.max_blob_commitments_per_block,
          p.max_deposit_requests_per_payload,
          p.max_withdrawal_requests_per_payload,
          p.max_consolidation_requests_per_payload};
}

// The types of `preset`: mainnet's and minimal's built once, any other's on first use, at most
// kMaxOtherPresets of them (a node's spec names one preset; a few more cover reloads).
absl::StatusOr<const PresetTypes*> TypesOf(const Preset& preset) {
  static const PresetTypes* const kMainnetTypes = new PresetTypes(Preset::kMainnet);
  static const PresetTypes* const kMinimalTypes = new PresetTypes(Preset::kMinimal);
  if (preset == Preset::kMainnet) return kMainnetTypes;
  if (preset == Preset::kMinimal) return kMinimalTypes;
  for (uint64_t limit : LimitsOf(preset)) {
    if (limit == 0 || limit > kMaxPresetLimit) {
      return absl::InvalidArgumentError(
          absl::StrCat("the preset has a limit of ", limit, ", not in 1..", kMaxPresetLimit));
    }
  }
  static Mutex mu;
  static auto* const others = new std::map<std::array<uint64_t, 8>, std::unique_ptr<PresetTypes>>;
  MutexLock lock(&mu);
  auto it = others->find(LimitsOf(preset));
  if (it != others->end()) return it->second.get();
  if (others->size() >= kMaxOtherPresets) {
    return absl::InvalidArgumentError(
        absl::StrCat("the types of ", kMaxOtherPresets,
                     " presets besides mainnet and minimal are kept already"));
  }
  return others->emplace(LimitsOf(preset), std::make_unique<PresetTypes>(preset))
      .first->second.get();
}

const Type& Body(const Type& block) { return block.fields.back().type; }

bool HasFields(const Type& container, const Json& json) {
  if (!json.is_object() || json.size() != container.fields.size()) return false;
  for (const Field& field : container.fields) {
    if (!json.contains(field.name)) return false;
  }
  return true;
}

// The fork whose block body has exactly the fields of the JSON body.
absl::StatusOr<Fork> ForkOfJson(const Json& signed_block, BlockKind kind, const std::string& path) {
  const Json* body = nullptr;
  if (signed_block.is_object() && signed_block.contains("message") &&
      signed_block["message"].is_object() && signed_block["message"].contains("body")) {
    body = &signed_block["message"]["body"];
  }
  if (body == nullptr)
    return absl::InvalidArgumentError(absl::StrCat(path, "message.body: missing"));
  for (Fork fork : {Fork::kElectra, Fork::kDeneb, Fork::kCapella, Fork::kBellatrix}) {
    // Field names are the same in every preset.
    if (HasFields(Body((*TypesOf(Preset::kMainnet))->Of(fork, kind).block), *body)) return fork;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, "message.body: its fields are those of no fork's ",
                   kind == BlockKind::kBlinded ? "BlindedBeaconBlockBody" : "BeaconBlockBody",
                   " from Bellatrix to Fulu; name the fork (Eth-Consensus-Version)"));
}

// The fixed part of a container's encoding: its fixed fields, and an offset per variable one.
uint64_t FixedPartBytes(const Type& container) {
  uint64_t bytes = 0;
  for (const Field& field : container.fields) {
    bytes += IsFixedSize(field.type) ? FixedSize(field.type) : 4;
  }
  return bytes;
}

// The fork whose block body's fixed part is as long as the SSZ body's: the body's first offset.
absl::StatusOr<Fork> ForkOfSsz(absl::string_view ssz, BlockKind kind, const PresetTypes& types) {
  // Up to the body, every fork's signed block has the same layout.
  const BlockTypes& any = types.Of(Fork::kBellatrix, kind);
  absl::StatusOr<std::vector<absl::string_view>> signed_parts =
      SplitContainer(any.signed_block, ssz);
  if (!signed_parts.ok()) return signed_parts.status();
  absl::StatusOr<std::vector<absl::string_view>> block_parts =
      SplitContainer(any.block, (*signed_parts)[0], "message");
  if (!block_parts.ok()) return block_parts.status();
  const absl::string_view body = block_parts->back();
  // The body's fixed fields before its first variable one (proposer_slashings).
  uint64_t at = 0;
  for (const Field& field : Body(any.block).fields) {
    if (!IsFixedSize(field.type)) break;
    at += FixedSize(field.type);
  }
  uint64_t first_offset = 0;
  if (body.size() >= at + 4) {
    for (int i = 3; i >= 0; --i)
      first_offset = (first_offset << 8) | static_cast<uint8_t>(body[at + i]);
  }
  for (Fork fork : {Fork::kBellatrix, Fork::kCapella, Fork::kDeneb, Fork::kElectra}) {
    // The preset's: the sync aggregate's bits are part of it.
    if (FixedPartBytes(Body(types.Of(fork, kind).block)) == first_offset) {
      return fork;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("message.body: its fixed part (", first_offset,
                   " bytes) is that of no fork's block body from Bellatrix to Fulu; name the fork "
                   "(Eth-Consensus-Version)"));
}

absl::StatusOr<BlockRoot> RootOfSsz(absl::string_view ssz, Fork fork, BlockKind kind,
                                    const PresetTypes& preset_types, const std::string& path) {
  const BlockTypes& types = preset_types.Of(fork, kind);
  absl::StatusOr<std::vector<absl::string_view>> parts =
      SplitContainer(types.signed_block, ssz, path);
  if (!parts.ok()) return parts.status();
  const std::string message_path = absl::StrCat(path, path.empty() ? "" : ".", "message");
  absl::StatusOr<Root> root = HashTreeRoot(types.block, (*parts)[0], message_path);
  if (!root.ok()) return root.status();
  // A valid block: its fields are in place.
  absl::StatusOr<std::vector<absl::string_view>> fields =
      SplitContainer(types.block, (*parts)[0], message_path);
  if (!fields.ok()) return fields.status();
  absl::StatusOr<uint64_t> slot = DecodeUint64((*fields)[0], message_path + ".slot");
  if (!slot.ok()) return slot.status();
  return BlockRoot{fork, *root, *slot};
}

}  // namespace

// presets/{mainnet,minimal}/*.yaml of the consensus specs.
const Preset Preset::kMainnet = {2048, 64, 512, 16, 4096, 8192, 16, 2};
const Preset Preset::kMinimal = {2048, 4, 32, 4, 4096, 8192, 16, 2};

bool operator==(const Preset& a, const Preset& b) { return LimitsOf(a) == LimitsOf(b); }

absl::string_view ForkName(Fork fork) {
  switch (fork) {
    case Fork::kBellatrix:
      return "bellatrix";
    case Fork::kCapella:
      return "capella";
    case Fork::kDeneb:
      return "deneb";
    case Fork::kElectra:
      return "electra";
    case Fork::kFulu:
      return "fulu";
  }
  return "unknown";
}

std::optional<Fork> ForkFromName(absl::string_view name) {
  for (Fork fork : kForks) {
    if (absl::EqualsIgnoreCase(name, ForkName(fork))) return fork;
  }
  return std::nullopt;
}

absl::StatusOr<const Type*> BeaconBlockType(Fork fork, BlockKind kind, const Preset& preset) {
  absl::StatusOr<const PresetTypes*> types = TypesOf(preset);
  if (!types.ok()) return types.status();
  return &(*types)->Of(fork, kind).block;
}

absl::StatusOr<BlockRoot> SignedBlockRootFromJson(const Json& json, BlockKind kind,
                                                  std::optional<Fork> fork, const Preset& preset) {
  absl::StatusOr<const PresetTypes*> preset_types = TypesOf(preset);
  if (!preset_types.ok()) return preset_types.status();
  const Json* signed_block = &json;
  std::string path;
  if (json.is_object() && !json.contains("message") && json.contains("data")) {
    signed_block = &json["data"];
    path = "data";
    if (auto version = json.find("version"); version != json.end()) {
      const std::optional<Fork> named =
          version->is_string() ? ForkFromName(version->get<std::string>()) : std::nullopt;
      if (!named) {
        return absl::InvalidArgumentError(
            "version: names no fork the builder API serves blinded blocks in (bellatrix, "
            "capella, deneb, electra, fulu)");
      }
      if (fork && *fork != *named) {
        return absl::InvalidArgumentError(absl::StrCat(
            "version: \"", ForkName(*named), "\", but the block is named ", ForkName(*fork)));
      }
      fork = named;
    }
  }
  const std::string prefix = path.empty() ? "" : path + ".";
  if (!fork) {
    absl::StatusOr<Fork> inferred = ForkOfJson(*signed_block, kind, prefix);
    if (!inferred.ok()) return inferred.status();
    fork = *inferred;
  }
  absl::StatusOr<std::string> ssz =
      EncodeJson((*preset_types)->Of(*fork, kind).signed_block, *signed_block, path);
  if (!ssz.ok()) return ssz.status();
  return RootOfSsz(*ssz, *fork, kind, **preset_types, path);
}

absl::StatusOr<BlockRoot> SignedBlockRootFromSsz(absl::string_view ssz, BlockKind kind,
                                                 std::optional<Fork> fork, const Preset& preset) {
  absl::StatusOr<const PresetTypes*> preset_types = TypesOf(preset);
  if (!preset_types.ok()) return preset_types.status();
  if (!fork) {
    absl::StatusOr<Fork> inferred = ForkOfSsz(ssz, kind, **preset_types);
    if (!inferred.ok()) return inferred.status();
    fork = *inferred;
  }
  return RootOfSsz(ssz, *fork, kind, **preset_types, "");
}

}  // namespace breaker::sidecar::ssz
