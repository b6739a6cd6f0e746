#ifndef SIDECAR_SSZ_BEACON_BLOCK_H_
#define SIDECAR_SSZ_BEACON_BLOCK_H_

// The block root (hash_tree_root of the BeaconBlock, the root a beacon node reports) of a
// signed block in the builder API's and Beacon API's JSON or in SSZ, for every fork the builder
// API serves blinded blocks in: Bellatrix, Capella, Deneb, Electra and Fulu. The containers are
// those of ethereum/consensus-specs (specs/<fork>/beacon-chain.md and builder.md); a blinded
// block has the same root as the full block it blinds, for an ExecutionPayloadHeader has the
// root of its ExecutionPayload.
//
// Thread-safe: the types are built once and never changed.

#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "sidecar/ssz/ssz.h"

namespace breaker::sidecar::ssz {

// Fulu's blocks are Electra's.
enum class Fork { kBellatrix, kCapella, kDeneb, kElectra, kFulu };

// The lower-case name of `fork`, as in Eth-Consensus-Version.
absl::string_view ForkName(Fork fork);
// The fork named `name` (any letter case); nullopt for another (phase0, altair, gloas, ...).
std::optional<Fork> ForkFromName(absl::string_view name);

// The limits of a preset that a block's types depend on (presets/<name>/*.yaml of
// ethereum/consensus-specs; a beacon node's /eth/v1/config/spec lists them by these names in
// upper case). Every other length of a block is the same in each preset.
struct Preset {
  uint64_t max_validators_per_committee = 0;
  uint64_t max_committees_per_slot = 0;
  uint64_t sync_committee_size = 0;
  uint64_t max_withdrawals_per_payload = 0;
  uint64_t max_blob_commitments_per_block = 0;
  uint64_t max_deposit_requests_per_payload = 0;
  uint64_t max_withdrawal_requests_per_payload = 0;
  uint64_t max_consolidation_requests_per_payload = 0;

  // Every public network's.
  static const Preset kMainnet;
  // Test chains' (devnets, local chains): the consensus specs' minimal preset as of Fulu.
  static const Preset kMinimal;

  friend bool operator==(const Preset& a, const Preset& b);
  friend bool operator!=(const Preset& a, const Preset& b) { return !(a == b); }
};

// Each limit of a preset is at most this: larger ones are refused (InvalidArgument), so that no
// type's size overflows.
inline constexpr uint64_t kMaxPresetLimit = uint64_t{1} << 24;

enum class BlockKind {
  kBlinded,  // BlindedBeaconBlock: body.execution_payload_header
  kFull,     // BeaconBlock: body.execution_payload
};

struct BlockRoot {
  // The fork the block was read as; a Fulu block not named so reads as Electra's, whose
  // containers (and so root) are the same.
  Fork fork = Fork::kBellatrix;
  Root root;
  // The block's slot (its first field).
  uint64_t slot = 0;
};

// The type of a BeaconBlock or BlindedBeaconBlock. InvalidArgument for a preset with a limit
// of 0 or over kMaxPresetLimit, or when the types of more than kMaxOtherPresets presets other
// than mainnet and minimal were asked for.
absl::StatusOr<const Type*> BeaconBlockType(Fork fork, BlockKind kind, const Preset& preset);

// Presets other than mainnet and minimal whose types are kept (built on first use).
inline constexpr size_t kMaxOtherPresets = 8;

// The root of the message of a SignedBeaconBlock or SignedBlindedBeaconBlock in JSON:
// {"message": ..., "signature": ...}, or that inside {"version": ..., "data": ...} (the Beacon
// API's form; other members of that wrapping are ignored). The fork is `fork` when given, else
// the wrapping's "version", else the one whose block body has the body's fields (each fork adds
// one). InvalidArgument, naming the field path: a fork that is none of the five, or that
// disagrees with the wrapping's; a missing or unknown field; a value out of its type's range.
absl::StatusOr<BlockRoot> SignedBlockRootFromJson(const nlohmann::json& json, BlockKind kind,
                                                  std::optional<Fork> fork, const Preset& preset);

// The same from the SSZ encoding of the signed block. Without `fork`, the fork is the one whose
// block body has the body's fixed size (each fork adds one variable-size field, so one offset).
// InvalidArgument, naming the field path, when `ssz` is not a valid encoding of that block.
absl::StatusOr<BlockRoot> SignedBlockRootFromSsz(absl::string_view ssz, BlockKind kind,
                                                 std::optional<Fork> fork, const Preset& preset);

}  // namespace breaker::sidecar::ssz

#endif  // SIDECAR_SSZ_BEACON_BLOCK_H_
