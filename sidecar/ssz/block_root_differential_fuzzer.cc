// Differential fuzz target: a block's root from its JSON and from its SSZ agree, or both are
// refused. The first byte chooses bit 0 a full block rather than a blinded one, bit 1 the
// minimal preset; the rest is a signed block's JSON ({"message", "signature"}).
//
// From the JSON, SignedBlockRootFromJson infers the fork from the body's fields. For every
// fork, the JSON is encoded as that fork's signed block (EncodeJson); SignedBlockRootFromSsz
// then infers the fork from the encoding's layout alone and merkleizes what it splits. When
// the JSON reads, its fork's encoding must read to the same root and slot (a Fulu block may
// read as Electra's, whose root is the same); when it is refused, no fork's encoding may
// read. A violation aborts.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/bounded_json.h"
#include "sidecar/ssz/beacon_block.h"
#include "sidecar/ssz/ssz.h"

namespace breaker::sidecar::ssz {
namespace {

constexpr Fork kForks[] = {Fork::kBellatrix, Fork::kCapella, Fork::kDeneb, Fork::kElectra,
                           Fork::kFulu};

[[noreturn]] void Fail(const char* what, Fork fork) {
  std::fprintf(stderr, "JSON and SSZ roots disagree: %s (fork %s)\n", what,
               std::string(ForkName(fork)).c_str());
  std::abort();
}

// The root of `json` encoded as `fork`'s signed block and read back from SSZ, fork inferred;
// nullopt when it does not encode as that fork's.
std::optional<absl::StatusOr<BlockRoot>> ViaSsz(const nlohmann::json& json, Fork fork,
                                                BlockKind kind, const Preset& preset) {
  absl::StatusOr<const Type*> block = BeaconBlockType(fork, kind, preset);
  if (!block.ok()) return std::nullopt;
  const Type signed_block = Container({{"message", **block}, {"signature", ByteVector(96)}});
  absl::StatusOr<std::string> encoded = EncodeJson(signed_block, json);
  if (!encoded.ok()) return std::nullopt;
  return SignedBlockRootFromSsz(*encoded, kind, std::nullopt, preset);
}

}  // namespace
}  // namespace breaker::sidecar::ssz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace breaker::sidecar::ssz;  // NOLINT: the target's own namespace
  if (size == 0) return 0;
  const BlockKind kind = (data[0] & 1) != 0 ? BlockKind::kFull : BlockKind::kBlinded;
  const Preset& preset = (data[0] & 2) != 0 ? Preset::kMinimal : Preset::kMainnet;
  const nlohmann::json json = breaker::ParseBoundedJson(
      absl::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  // The envelope's version may name a fork the fields do not; SSZ has no envelope.
  if (!json.is_object() || !json.contains("message")) return 0;
  const absl::StatusOr<BlockRoot> from_json =
      SignedBlockRootFromJson(json, kind, std::nullopt, preset);
  for (Fork fork : kForks) {
    const std::optional<absl::StatusOr<BlockRoot>> from_ssz = ViaSsz(json, fork, kind, preset);
    if (!from_ssz.has_value()) {
      if (from_json.ok() && from_json->fork == fork) Fail("the JSON's fork does not encode", fork);
      continue;
    }
    if (!from_json.ok()) {
      if (from_ssz->ok()) Fail("refused from JSON, read from SSZ", fork);
      continue;
    }
    if (from_json->fork != fork) continue;
    if (!from_ssz->ok()) Fail("read from JSON, refused from SSZ", fork);
    if ((*from_ssz)->root != from_json->root) Fail("the roots differ", fork);
    if ((*from_ssz)->slot != from_json->slot) Fail("the slots differ", fork);
  }
  return 0;
}
