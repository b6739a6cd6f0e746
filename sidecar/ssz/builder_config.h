#ifndef SIDECAR_SSZ_BUILDER_CONFIG_H_
#define SIDECAR_SSZ_BUILDER_CONFIG_H_

// The body of a Gloas produceBlockV4 (POST /eth/v4/validator/blocks/{slot}, ethereum/beacon-APIs
// types/gloas): the validator client's BuilderConfig, its BuilderEntry list, and each entry's
// request auth (SignedRequestAuthV1 of ethereum/builder-specs' Gloas validator.md), in the Beacon
// API's JSON and in SSZ:
//
//   RequestAuth        { data: ByteList[4096], slot: uint64 }
//   SignedRequestAuth  { message: RequestAuth, signature: BLSSignature }
//   BuilderEntry       { url: ByteList[2048], auth: SignedRequestAuth,
//                        builder_pubkeys: List[BLSPubkey, 64], max_execution_payment: Gwei,
//                        min_bid: Gwei, builder_boost_factor: uint64 }
//   BuilderConfig      { min_bid: Gwei, builder_boost_factor: uint64,
//                        builders: List[BuilderEntry, 64] }
//
// In JSON a url is the string it is; every other byte field is 0x-hex, every uint64 a decimal
// string (a JSON number is read too, as beacon nodes do). The top level of a BuilderConfig and
// each entry are read apart, so that a reader can ignore a malformed entry as the beacon API
// tells beacon nodes to. Errors name the field path. Pure; thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "sidecar/ssz/ssz.h"

namespace breaker::sidecar::ssz {

inline constexpr uint64_t kMaxBuilderEntries = 64;
inline constexpr uint64_t kMaxBuilderPubkeys = 64;
inline constexpr uint64_t kMaxBuilderUrlBytes = 2048;
inline constexpr uint64_t kMaxRequestAuthDataBytes = 4096;
inline constexpr uint64_t kBlsPubkeyBytes = 48;
inline constexpr uint64_t kBlsSignatureBytes = 96;

struct RequestAuth {
  // Opaque to everyone but the builder (by default its url's bytes).
  std::string data;
  uint64_t slot = 0;
};

struct SignedRequestAuth {
  RequestAuth message;
  // kBlsSignatureBytes bytes.
  std::string signature;
};

struct BuilderEntry {
  std::string url;
  SignedRequestAuth auth;
  // Each kBlsPubkeyBytes bytes. Empty: any builder.
  std::vector<std::string> builder_pubkeys;
  uint64_t max_execution_payment = 0;
  uint64_t min_bid = 0;
  uint64_t builder_boost_factor = 0;
};

struct BuilderConfig {
  // Both apply to P2P bids.
  uint64_t min_bid = 0;
  uint64_t builder_boost_factor = 0;
  std::vector<BuilderEntry> builders;
};

// The types, for hash_tree_root (the SSZ functions here do not hash).
const Type& RequestAuthType();
const Type& SignedRequestAuthType();
const Type& BuilderEntryType();
const Type& BuilderConfigType();

// One entry. InvalidArgument, naming the field under `path`: for SSZ, a layout out of place, a
// list or byte list over its limit; for JSON, not an object, a missing field, a value of the
// wrong type or out of range, hex of the wrong length. Unknown JSON members are ignored.
absl::StatusOr<BuilderEntry> BuilderEntryFromSsz(absl::string_view bytes,
                                                 const std::string& path = "");
absl::StatusOr<BuilderEntry> BuilderEntryFromJson(const nlohmann::json& json,
                                                  const std::string& path = "");
std::string BuilderEntryToSsz(const BuilderEntry& entry);
nlohmann::json BuilderEntryToJson(const BuilderEntry& entry);

// The top level of a BuilderConfig in SSZ, its entries' encodings left unread (views into the
// bytes). InvalidArgument when the top level or the list's offsets are out of place, or there are
// more than kMaxBuilderEntries entries.
struct BuilderConfigSszParts {
  uint64_t min_bid = 0;
  uint64_t builder_boost_factor = 0;
  std::vector<absl::string_view> builders;
};
absl::StatusOr<BuilderConfigSszParts> SplitBuilderConfigSsz(absl::string_view bytes);

// A uint64 as JSON carries it: a decimal string, or a non-negative integer. InvalidArgument,
// naming `path`, otherwise.
absl::StatusOr<uint64_t> Uint64FromJson(const nlohmann::json& json, const std::string& path);

// The rules of a JSON string field, for the readers that hold the string without a document
// (builder_config_scan.h): a uint64's decimal string (1 to 20 digits, within uint64), and 0x-hex
// of exactly `size` bytes (`exact`) or at most `size`, decoded. InvalidArgument saying what is
// wrong, without a path.
absl::StatusOr<uint64_t> Uint64FromDecimal(absl::string_view text);
absl::StatusOr<std::string> BytesFromHexText(absl::string_view text, uint64_t size, bool exact);

// A whole BuilderConfig, every entry read strictly. InvalidArgument as above.
absl::StatusOr<BuilderConfig> BuilderConfigFromSsz(absl::string_view bytes);
absl::StatusOr<BuilderConfig> BuilderConfigFromJson(const nlohmann::json& json);
std::string BuilderConfigToSsz(const BuilderConfig& config);
nlohmann::json BuilderConfigToJson(const BuilderConfig& config);

}  // namespace breaker::sidecar::ssz

#endif  // SIDECAR_SSZ_BUILDER_CONFIG_H_
