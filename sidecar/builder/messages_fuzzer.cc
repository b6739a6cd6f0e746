// Fuzz target for the builder API's bodies the sidecar reads (messages.h): the first byte
// chooses the reader (its value modulo 7: a blinded block in JSON, in SSZ, a bid in JSON, in
// SSZ, a header's block hash, registrations in JSON, in SSZ) and bit 3 the minimal preset
// rather than mainnet's; the rest is the body. Whatever it is, each reader returns what it read
// or says it could not, and what it read is well formed: a block hash or a key is 0x and
// lower-case hex of its length, an SSZ bid's builder is the one sidecar/ssz reads. A violation
// aborts.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "sidecar/builder/messages.h"
#include "sidecar/ssz/beacon_block.h"
#include "sidecar/ssz/builder_messages.h"

namespace breaker::sidecar {
namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "builder message invariant violated: %s\n", what);
  std::abort();
}

// 0x and `digits` lower-case hex digits.
bool IsHex(absl::string_view text, size_t digits) {
  if (text.size() != digits + 2 || !absl::StartsWith(text, "0x")) return false;
  for (char c : text.substr(2)) {
    if (!absl::ascii_isxdigit(c) || absl::ascii_isupper(c)) return false;
  }
  return true;
}

void CheckRegistrations(const Registrations& read) {
  for (const std::string& key : read.pubkeys) {
    if (!IsHex(key, 96)) Fail("a registration's key is not 0x and 96 lower-case hex digits");
  }
}

}  // namespace
}  // namespace breaker::sidecar

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace breaker::sidecar;  // NOLINT: the target's own namespace
  if (size == 0) return 0;
  const absl::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const ssz::Preset& preset = (data[0] & 8) != 0 ? ssz::Preset::kMinimal : ssz::Preset::kMainnet;
  constexpr char kSsz[] = "application/octet-stream";
  switch (data[0] % 7) {
    case 0:
    case 1: {
      const bool in_ssz = data[0] % 7 == 1;
      absl::StatusOr<BlindedBlock> block =
          ParseBlindedBlock(body, in_ssz ? kSsz : "application/json", preset);
      if (!block.ok()) {
        if (block.status().message().empty()) Fail("a refused block says not why");
      } else if (in_ssz ? !block->block_hash.empty()
                        : !block->block_hash.empty() && !IsHex(block->block_hash, 64)) {
        Fail("a block's hash is not 0x and 64 lower-case hex digits");
      }
      break;
    }
    case 2:
      BidBuilderIndex(body, "application/json");
      break;
    case 3: {
      const std::optional<breaker::core::BuilderIndex> builder = BidBuilderIndex(body, kSsz);
      const absl::StatusOr<uint64_t> read =
          ssz::BidBuilderIndexFromSsz(body, ssz::Preset::kMainnet);
      if (builder.has_value() != read.ok() || (builder.has_value() && *builder != *read)) {
        Fail("an SSZ bid's builder is not the one sidecar/ssz reads");
      }
      break;
    }
    case 4: {
      const std::string hash = HeaderBlockHash(body);
      if (absl::AsciiStrToLower(hash) != hash) Fail("a header's block hash is not lower-case");
      break;
    }
    case 5:
      CheckRegistrations(ReadRegistrations(body, /*ssz=*/false));
      break;
    case 6:
      CheckRegistrations(ReadRegistrations(body, /*ssz=*/true));
      break;
  }
  return 0;
}
