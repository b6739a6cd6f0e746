// Fuzz target for the block roots the sidecar computes from outside bytes: a signed block in
// JSON (SignedBlockRootFromJson) or in SSZ (SignedBlockRootFromSsz), as a submitBlindedBlock
// or a beacon node brings it. The first byte chooses: bit 0 SSZ rather than JSON, bit 1 a full
// block rather than a blinded one, bit 2 the minimal preset rather than mainnet's; the rest is
// the body. Whatever it is, the reader returns a root or INVALID_ARGUMENT with a message; a
// root read again with the fork it was read as is the same root. A violation aborts.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/bounded_json.h"
#include "sidecar/ssz/beacon_block.h"

namespace breaker::sidecar::ssz {
namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "block root invariant violated: %s\n", what);
  std::abort();
}

void CheckRefusal(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kInvalidArgument || status.message().empty()) {
    Fail("a refusal is not INVALID_ARGUMENT with a message");
  }
}

}  // namespace
}  // namespace breaker::sidecar::ssz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace breaker::sidecar::ssz;  // NOLINT: the target's own namespace
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const absl::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const BlockKind kind = (mode & 2) != 0 ? BlockKind::kFull : BlockKind::kBlinded;
  const Preset& preset = (mode & 4) != 0 ? Preset::kMinimal : Preset::kMainnet;
  absl::StatusOr<BlockRoot> root;
  if ((mode & 1) != 0) {
    root = SignedBlockRootFromSsz(body, kind, std::nullopt, preset);
    if (root.ok()) {
      absl::StatusOr<BlockRoot> again = SignedBlockRootFromSsz(body, kind, root->fork, preset);
      if (!again.ok() || again->root != root->root || again->slot != root->slot) {
        Fail("an SSZ block reads differently with the fork it was read as");
      }
    }
  } else {
    const nlohmann::json json = breaker::ParseBoundedJson(body);
    if (json.is_discarded()) return 0;
    root = SignedBlockRootFromJson(json, kind, std::nullopt, preset);
    if (root.ok()) {
      absl::StatusOr<BlockRoot> again = SignedBlockRootFromJson(json, kind, root->fork, preset);
      if (!again.ok() || again->root != root->root || again->slot != root->slot) {
        Fail("a JSON block reads differently with the fork it was read as");
      }
    }
  }
  if (!root.ok()) CheckRefusal(root.status());
  return 0;
}
