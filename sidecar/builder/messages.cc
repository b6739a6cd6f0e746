#include "sidecar/builder/messages.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/types/span.h"
#include "common/bounded_json.h"
#include "common/json_cursor.h"
#include "nlohmann/json.hpp"
#include "sidecar/beacon/beacon_api.h"
#include "sidecar/ssz/beacon_block.h"
#include "sidecar/ssz/builder_messages.h"

namespace breaker::sidecar {
namespace {

using Json = nlohmann::json;

// An array of registrations nests three deep; anything deeper is no registration.
constexpr int kMaxRegistrationDepth = 8;

std::string StringMember(const Json& object, const char* key) {
  const Json* value = JsonMember(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

}  // namespace

bool IsSsz(absl::string_view content_type) {
  return absl::StartsWithIgnoreCase(content_type, "application/octet-stream");
}

absl::StatusOr<BlindedBlock> ParseBlindedBlock(absl::string_view body,
                                               absl::string_view content_type,
                                               const ssz::Preset& preset) {
  BlindedBlock block;
  absl::StatusOr<ssz::BlockRoot> root;
  if (IsSsz(content_type)) {
    root = ssz::SignedBlockRootFromSsz(body, ssz::BlockKind::kBlinded, std::nullopt, preset);
    if (!root.ok()) return root.status();
  } else {
    const Json json = ParseBoundedJson(body);
    if (json.is_discarded()) return absl::InvalidArgumentError("the body is not JSON");
    root = ssz::SignedBlockRootFromJson(json, ssz::BlockKind::kBlinded, std::nullopt, preset);
    if (!root.ok()) return root.status();
    // A valid block: every member below is in place.
    const Json* signed_block =
        JsonMember(json, "message") != nullptr ? &json : JsonMember(json, "data");
    const Json& message = *JsonMember(*signed_block, "message");
    const Json& header = *JsonMember(*JsonMember(message, "body"), "execution_payload_header");
    block.block_hash = absl::AsciiStrToLower(StringMember(header, "block_hash"));
  }
  block.slot = root->slot;
  block.root = core::BlockRootFromBytes(
      absl::string_view(reinterpret_cast<const char*>(root->root.data()), root->root.size()));
  return block;
}

namespace {

// Reads the value at `cursor` whole, and when `path` leads from it through objects to a string,
// that string into `found`. False when the text is not JSON. The recursion is as deep as `path`
// is long, whatever the text.
bool ReadStringAtPath(JsonCursor& cursor, absl::Span<const absl::string_view> path,
                      std::string* found) {
  const std::optional<JsonCursor::Kind> kind = cursor.Peek();
  if (!kind.has_value()) return false;
  if (path.empty() && *kind == JsonCursor::Kind::kString) return cursor.ReadString(found);
  if (path.empty() || *kind != JsonCursor::Kind::kObject) return cursor.SkipValue();
  cursor.EnterObject();
  std::string name;
  while (cursor.NextMember(&name)) {
    if (name != path.front()) {
      if (!cursor.SkipValue()) return false;
      continue;
    }
    // A later member of the same name replaces an earlier one, as in a document.
    found->clear();
    if (!ReadStringAtPath(cursor, path.subspan(1), found)) return false;
  }
  return cursor.ok();
}

}  // namespace

std::optional<std::string> HeaderBlockHash(absl::string_view body) {
  static constexpr absl::string_view kPath[] = {"data", "message", "header", "block_hash"};
  JsonCursor cursor(body);
  std::string hash;
  if (!ReadStringAtPath(cursor, kPath, &hash) || !cursor.AtEnd()) return std::nullopt;
  absl::AsciiStrToLower(&hash);
  return hash;
}

std::optional<core::BuilderIndex> BidBuilderIndex(absl::string_view body,
                                                  absl::string_view content_type) {
  if (IsSsz(content_type)) {
    absl::StatusOr<uint64_t> builder = ssz::BidBuilderIndexFromSsz(body, ssz::Preset::kMainnet);
    if (!builder.ok()) return std::nullopt;
    return *builder;
  }
  const Json json = ParseBoundedJson(body);
  if (json.is_discarded()) return std::nullopt;
  const Json* signed_bid = &json;
  if (const Json* data = JsonMember(json, "data"); data != nullptr) signed_bid = data;
  const Json* message = JsonMember(*signed_bid, "message");
  const Json* index = message == nullptr ? nullptr : JsonMember(*message, "builder_index");
  if (index == nullptr) return std::nullopt;
  core::BuilderIndex builder = 0;
  if (index->is_number_unsigned()) return index->get<core::BuilderIndex>();
  if (index->is_string() && absl::SimpleAtoi(index->get<std::string>(), &builder)) return builder;
  return std::nullopt;
}

Registrations ReadRegistrations(absl::string_view body, bool ssz) {
  Registrations read;
  if (ssz) {
    absl::StatusOr<std::vector<std::string>> keys = ssz::RegistrationPubkeysFromSsz(body);
    if (!keys.ok() || keys->empty()) {
      read.invalid = 1;
    } else {
      read.pubkeys = *std::move(keys);
    }
    return read;
  }
  const Json json = ParseBoundedJson(body, kMaxRegistrationDepth);
  if (!json.is_array()) {
    read.invalid = 1;
    return read;
  }
  for (const Json& registration : json) {
    const Json* message = JsonMember(registration, "message");
    const Json* pubkey = message == nullptr ? nullptr : JsonMember(*message, "pubkey");
    std::optional<std::string> key = pubkey == nullptr || !pubkey->is_string()
                                         ? std::nullopt
                                         : ValidatorPubkey(pubkey->get_ref<const std::string&>());
    if (key.has_value()) {
      read.pubkeys.push_back(*std::move(key));
    } else {
      ++read.invalid;
    }
  }
  return read;
}

}  // namespace breaker::sidecar
