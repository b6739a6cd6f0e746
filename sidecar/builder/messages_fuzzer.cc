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
#include "common/bounded_json.h"
#include "nlohmann/json.hpp"
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
      // The one-pass reading against a document's: the same readability (but for nesting past
      // the document's bound, which the one pass does not need) and the same hash.
      const std::optional<std::string> hash = HeaderBlockHash(body);
      // nlohmann::json takes a NUL byte for the end of its input; JSON holds none.
      if (absl::StrContains(body, '\0')) {
        if (hash.has_value()) Fail("a body with a NUL byte was read as a header");
        break;
      }
      const nlohmann::json json = breaker::ParseBoundedJson(body);
      if (!json.is_discarded()) {
        if (!hash.has_value()) Fail("a JSON header was not read");
        const nlohmann::json* data = breaker::JsonMember(json, "data");
        const nlohmann::json* message =
            data == nullptr ? nullptr : breaker::JsonMember(*data, "message");
        const nlohmann::json* header =
            message == nullptr ? nullptr : breaker::JsonMember(*message, "header");
        const nlohmann::json* field =
            header == nullptr ? nullptr : breaker::JsonMember(*header, "block_hash");
        const std::string expected = field != nullptr && field->is_string()
                                         ? absl::AsciiStrToLower(field->get<std::string>())
                                         : std::string();
        if (*hash != expected) Fail("a header's block hash is not the document's");
      } else if (hash.has_value() && !breaker::JsonTooDeep(body, breaker::kMaxJsonDepth)) {
        Fail("a body that is not JSON was read as a header");
      }
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
