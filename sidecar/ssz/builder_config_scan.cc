#include "sidecar/ssz/builder_config_scan.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/json_cursor.h"
#include "sidecar/ssz/builder_config.h"

namespace breaker::sidecar::ssz {
namespace {

using Kind = JsonCursor::Kind;

// A JSON number that nlohmann::json reads as a non-negative integer within uint64: no fraction
// or exponent; negative only as "-0".
bool IsUint64Number(absl::string_view token) {
  if (token.find_first_of(".eE") != absl::string_view::npos) return false;
  if (token[0] == '-') return token == "-0";
  return Uint64FromDecimal(token).ok();
}

// Reads the value at the cursor as Uint64FromJson does. The value is consumed either way; a
// JSON error shows in the cursor.
absl::Status ReadUint64(JsonCursor& json, std::string& scratch) {
  const std::optional<Kind> kind = json.Peek();
  if (kind == Kind::kString) {
    if (!json.ReadString(&scratch)) return absl::InvalidArgumentError(json.error());
    return Uint64FromDecimal(scratch).status();
  }
  if (kind == Kind::kNumber) {
    absl::string_view token;
    if (!json.ReadNumber(&token)) return absl::InvalidArgumentError(json.error());
    if (IsUint64Number(token)) return absl::OkStatus();
  } else {
    json.SkipValue();
  }
  return absl::InvalidArgumentError("expected a decimal string");
}

// Whether the value at the cursor is 0x-hex as BytesFromHexText reads it; the bytes in `bytes`.
bool ReadHex(JsonCursor& json, uint64_t size, bool exact, std::string& scratch,
             std::string* bytes) {
  if (json.Peek() != Kind::kString) {
    json.SkipValue();
    return false;
  }
  if (!json.ReadString(&scratch)) return false;
  absl::StatusOr<std::string> decoded = BytesFromHexText(scratch, size, exact);
  if (!decoded.ok()) return false;
  if (bytes != nullptr) *bytes = *std::move(decoded);
  return true;
}

// An optional member's verdict: absent, or whether its last value was well formed.
using Present = std::optional<bool>;

bool Holds(const Present& member) { return member.value_or(false); }

// RequestAuth: data (hex, at most kMaxRequestAuthDataBytes) and slot.
bool ReadRequestAuth(JsonCursor& json, std::string& scratch) {
  if (json.Peek() != Kind::kObject) {
    json.SkipValue();
    return false;
  }
  json.EnterObject();
  Present data, slot;
  std::string name;
  while (json.NextMember(&name)) {
    if (name == "data") {
      data = ReadHex(json, kMaxRequestAuthDataBytes, /*exact=*/false, scratch, nullptr);
    } else if (name == "slot") {
      slot = ReadUint64(json, scratch).ok();
    } else {
      json.SkipValue();
    }
  }
  return Holds(data) && Holds(slot);
}

// SignedRequestAuth: message and signature (hex, kBlsSignatureBytes).
bool ReadSignedRequestAuth(JsonCursor& json, std::string& scratch) {
  if (json.Peek() != Kind::kObject) {
    json.SkipValue();
    return false;
  }
  json.EnterObject();
  Present message, signature;
  std::string name;
  while (json.NextMember(&name)) {
    if (name == "message") {
      message = ReadRequestAuth(json, scratch);
    } else if (name == "signature") {
      signature = ReadHex(json, kBlsSignatureBytes, /*exact=*/true, scratch, nullptr);
    } else {
      json.SkipValue();
    }
  }
  return Holds(message) && Holds(signature);
}

// builder_pubkeys: at most kMaxBuilderPubkeys keys, each hex of kBlsPubkeyBytes.
bool ReadKeys(JsonCursor& json, ScannedBuilderEntry& entry, std::string& scratch) {
  entry.builder_pubkeys.clear();
  entry.key_bytes.clear();
  if (json.Peek() != Kind::kArray) {
    json.SkipValue();
    return false;
  }
  entry.keys_array.begin = json.position();
  json.EnterArray();
  bool well_formed = true;
  while (json.NextElement()) {
    if (!well_formed || entry.builder_pubkeys.size() == kMaxBuilderPubkeys) {
      well_formed = false;
      json.SkipValue();
      continue;
    }
    JsonSpan key{json.position(), 0};
    std::string bytes;
    well_formed = ReadHex(json, kBlsPubkeyBytes, /*exact=*/true, scratch, &bytes);
    key.end = json.position();
    entry.key_bytes.push_back(key);
    entry.builder_pubkeys.push_back(std::move(bytes));
  }
  entry.keys_array.end = json.position();
  return well_formed;
}

// One element of builders, consumed whatever it holds.
ScannedBuilderEntry ReadEntry(JsonCursor& json, std::string& scratch) {
  ScannedBuilderEntry entry;
  const std::optional<Kind> kind = json.Peek();
  entry.bytes.begin = json.position();
  if (kind != Kind::kObject) {
    json.SkipValue();
    entry.bytes.end = json.position();
    return entry;
  }
  json.EnterObject();
  Present url, auth, keys, max_execution_payment, min_bid, builder_boost_factor;
  int urls = 0;
  int key_lists = 0;
  std::string name;
  while (json.NextMember(&name)) {
    if (name == "url") {
      ++urls;
      if (json.Peek() == Kind::kString) {
        url = json.ReadString(&entry.url) && entry.url.size() <= kMaxBuilderUrlBytes;
      } else {
        json.SkipValue();
        url = false;
      }
    } else if (name == "auth") {
      auth = ReadSignedRequestAuth(json, scratch);
    } else if (name == "builder_pubkeys") {
      ++key_lists;
      keys = ReadKeys(json, entry, scratch);
    } else if (name == "max_execution_payment") {
      max_execution_payment = ReadUint64(json, scratch).ok();
    } else if (name == "min_bid") {
      min_bid = ReadUint64(json, scratch).ok();
    } else if (name == "builder_boost_factor") {
      builder_boost_factor = ReadUint64(json, scratch).ok();
    } else {
      json.SkipValue();
    }
  }
  entry.bytes.end = json.position();
  entry.well_formed = json.ok() && Holds(url) && Holds(auth) && Holds(keys) &&
                      Holds(max_execution_payment) && Holds(min_bid) &&
                      Holds(builder_boost_factor) && urls == 1 && key_lists == 1;
  return entry;
}

// builders: its entries, the first kMaxBuilderEntries kept; `count` all of them.
void ReadBuilders(JsonCursor& json, std::vector<ScannedBuilderEntry>& entries, size_t& count,
                  std::string& scratch) {
  entries.clear();
  count = 0;
  json.EnterArray();
  while (json.NextElement()) {
    if (++count > kMaxBuilderEntries) {
      json.SkipValue();
    } else {
      entries.push_back(ReadEntry(json, scratch));
    }
  }
}

absl::Status Invalid(absl::string_view name, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(name, ": ", what));
}

}  // namespace

absl::StatusOr<ScannedBuilderConfig> ScanBuilderConfigJson(absl::string_view text) {
  JsonCursor json(text);
  ScannedBuilderConfig config;
  std::string scratch;
  const std::optional<Kind> kind = json.Peek();
  const bool object = kind == Kind::kObject;
  std::optional<absl::Status> min_bid, builder_boost_factor;
  // Whether the last builders member is an array, and its entries.
  bool builders_array = false;
  size_t builders_count = 0;
  if (object) {
    json.EnterObject();
    std::string name;
    while (json.NextMember(&name)) {
      JsonSpan value{json.position(), 0};
      if (name == "min_bid") {
        min_bid = ReadUint64(json, scratch);
        value.end = json.position();
        config.min_bid_values.push_back(value);
      } else if (name == "builder_boost_factor") {
        builder_boost_factor = ReadUint64(json, scratch);
        value.end = json.position();
        config.builder_boost_factor_values.push_back(value);
      } else if (name == "builders") {
        builders_array = json.Peek() == Kind::kArray;
        if (builders_array) {
          ReadBuilders(json, config.builders, builders_count, scratch);
        } else {
          config.builders.clear();
          json.SkipValue();
        }
        value.end = json.position();
        config.builders_values.push_back(value);
      } else {
        json.SkipValue();
      }
    }
  } else {
    json.SkipValue();
  }
  if (!json.AtEnd()) {
    return absl::InvalidArgumentError(absl::StrCat("the body is not JSON: ", json.error()));
  }
  if (!object) return absl::InvalidArgumentError("the body is not a JSON object");
  for (auto [field, status] :
       {std::pair{"min_bid", &min_bid}, std::pair{"builder_boost_factor", &builder_boost_factor}}) {
    if (!status->has_value()) return Invalid(field, "missing");
    if (!(*status)->ok()) return Invalid(field, (*status)->message());
  }
  if (!builders_array) return Invalid("builders", "missing or not an array");
  if (builders_count > kMaxBuilderEntries) {
    return Invalid("builders",
                   absl::StrCat(builders_count, " entries, over the limit ", kMaxBuilderEntries));
  }
  return config;
}

}  // namespace breaker::sidecar::ssz
