#include "sidecar/ssz/builder_config.h"

#include <array>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"

namespace breaker::sidecar::ssz {
namespace {

using Json = nlohmann::json;

constexpr uint64_t kOffsetBytes = 4;

absl::Status Invalid(const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path.empty() ? "value" : path, ": ", what));
}

std::string Member(const std::string& path, absl::string_view name) {
  return path.empty() ? std::string(name) : absl::StrCat(path, ".", name);
}

std::string Indexed(const std::string& path, size_t index) {
  return absl::StrCat(path, "[", index, "]");
}

uint64_t ReadLittleEndian(absl::string_view bytes) {
  uint64_t value = 0;
  for (size_t i = bytes.size(); i > 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[i - 1]);
  }
  return value;
}

void AppendLittleEndian(uint64_t value, int width, std::string* out) {
  for (int i = 0; i < width; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// The encoding of fields in order: fixed ones in place, variable ones (`variable[i]`) as offsets
// to their bytes after the fixed part.
std::string Join(const std::vector<std::string>& parts, const std::vector<bool>& variable) {
  uint64_t fixed_bytes = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    fixed_bytes += variable[i] ? kOffsetBytes : parts[i].size();
  }
  std::string out;
  std::string tail;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (variable[i]) {
      AppendLittleEndian(fixed_bytes + tail.size(), 4, &out);
      tail += parts[i];
    } else {
      out += parts[i];
    }
  }
  return out + tail;
}

std::string Uint64Bytes(uint64_t value) {
  std::string out;
  AppendLittleEndian(value, 8, &out);
  return out;
}

// Each byte's value as a hex digit, -1 for a byte that is none: a table, since keys, signatures
// and auth data make most of a JSON BuilderConfig's bytes.
constexpr std::array<int8_t, 256> HexDigits() {
  std::array<int8_t, 256> digits{};
  for (int c = 0; c < 256; ++c) {
    digits[c] = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
  }
  return digits;
}
constexpr std::array<int8_t, 256> kHexDigits = HexDigits();

int HexDigit(char c) { return kHexDigits[static_cast<unsigned char>(c)]; }

// 0x-hex of exactly `size` bytes (`exact`) or at most `size`.
absl::StatusOr<std::string> BytesFromHex(const Json& json, uint64_t size, bool exact,
                                         const std::string& path) {
  if (!json.is_string()) return Invalid(path, "expected a 0x-prefixed hex string");
  absl::StatusOr<std::string> bytes =
      BytesFromHexText(json.get_ref<const std::string&>(), size, exact);
  if (!bytes.ok()) return Invalid(path, bytes.status().message());
  return bytes;
}

// The member `name` of the object `json`; InvalidArgument naming it when missing.
absl::StatusOr<const Json*> Required(const Json& json, const char* name, const std::string& path) {
  const auto it = json.find(name);
  if (it == json.end()) return Invalid(Member(path, name), "missing");
  return &*it;
}

absl::StatusOr<uint64_t> RequiredUint64(const Json& json, const char* name,
                                        const std::string& path) {
  absl::StatusOr<const Json*> member = Required(json, name, path);
  if (!member.ok()) return member.status();
  return Uint64FromJson(**member, Member(path, name));
}

absl::StatusOr<std::string> RequiredHex(const Json& json, const char* name, uint64_t size,
                                        bool exact, const std::string& path) {
  absl::StatusOr<const Json*> member = Required(json, name, path);
  if (!member.ok()) return member.status();
  return BytesFromHex(**member, size, exact, Member(path, name));
}

absl::StatusOr<SignedRequestAuth> SignedRequestAuthFromJson(const Json& json,
                                                            const std::string& path) {
  if (!json.is_object()) return Invalid(path, "expected an object");
  absl::StatusOr<const Json*> message = Required(json, "message", path);
  if (!message.ok()) return message.status();
  const std::string message_path = Member(path, "message");
  if (!(*message)->is_object()) return Invalid(message_path, "expected an object");
  SignedRequestAuth auth;
  absl::StatusOr<std::string> data =
      RequiredHex(**message, "data", kMaxRequestAuthDataBytes, false, message_path);
  if (!data.ok()) return data.status();
  auth.message.data = *std::move(data);
  absl::StatusOr<uint64_t> slot = RequiredUint64(**message, "slot", message_path);
  if (!slot.ok()) return slot.status();
  auth.message.slot = *slot;
  absl::StatusOr<std::string> signature =
      RequiredHex(json, "signature", kBlsSignatureBytes, true, path);
  if (!signature.ok()) return signature.status();
  auth.signature = *std::move(signature);
  return auth;
}

absl::StatusOr<SignedRequestAuth> SignedRequestAuthFromSsz(absl::string_view bytes,
                                                           const std::string& path) {
  absl::StatusOr<std::vector<absl::string_view>> parts =
      SplitContainer(SignedRequestAuthType(), bytes, path);
  if (!parts.ok()) return parts.status();
  const std::string message_path = Member(path, "message");
  absl::StatusOr<std::vector<absl::string_view>> message =
      SplitContainer(RequestAuthType(), (*parts)[0], message_path);
  if (!message.ok()) return message.status();
  if ((*message)[0].size() > kMaxRequestAuthDataBytes) {
    return Invalid(
        Member(message_path, "data"),
        absl::StrCat((*message)[0].size(), " bytes, over the limit ", kMaxRequestAuthDataBytes));
  }
  SignedRequestAuth auth;
  auth.message.data = std::string((*message)[0]);
  auth.message.slot = ReadLittleEndian((*message)[1]);
  auth.signature = std::string((*parts)[1]);
  return auth;
}

std::string SignedRequestAuthToSsz(const SignedRequestAuth& auth) {
  const std::string message =
      Join({auth.message.data, Uint64Bytes(auth.message.slot)}, {true, false});
  return Join({message, auth.signature}, {true, false});
}

Json SignedRequestAuthToJson(const SignedRequestAuth& auth) {
  return Json{
      {"message", {{"data", Hex(auth.message.data)}, {"slot", std::to_string(auth.message.slot)}}},
      {"signature", Hex(auth.signature)}};
}

}  // namespace

const Type& RequestAuthType() {
  static const Type* const kType =
      new Type(Container({{"data", ByteList(kMaxRequestAuthDataBytes)}, {"slot", Uint64()}}));
  return *kType;
}

const Type& SignedRequestAuthType() {
  static const Type* const kType = new Type(
      Container({{"message", RequestAuthType()}, {"signature", ByteVector(kBlsSignatureBytes)}}));
  return *kType;
}

const Type& BuilderEntryType() {
  static const Type* const kType = new Type(Container({
      {"url", ByteList(kMaxBuilderUrlBytes)},
      {"auth", SignedRequestAuthType()},
      {"builder_pubkeys", List(ByteVector(kBlsPubkeyBytes), kMaxBuilderPubkeys)},
      {"max_execution_payment", Uint64()},
      {"min_bid", Uint64()},
      {"builder_boost_factor", Uint64()},
  }));
  return *kType;
}

const Type& BuilderConfigType() {
  static const Type* const kType = new Type(Container({
      {"min_bid", Uint64()},
      {"builder_boost_factor", Uint64()},
      {"builders", List(BuilderEntryType(), kMaxBuilderEntries)},
  }));
  return *kType;
}

absl::StatusOr<uint64_t> Uint64FromDecimal(absl::string_view text) {
  if (text.empty() || text.size() > 20) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected a decimal string of 1 to 20 digits, got ", text.size(), " characters"));
  }
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return absl::InvalidArgumentError("expected a decimal string");
    const uint64_t digit = c - '0';
    if (value > (UINT64_MAX - digit) / 10) {
      return absl::InvalidArgumentError(absl::StrCat("\"", text, "\" is over uint64"));
    }
    value = value * 10 + digit;
  }
  return value;
}

absl::StatusOr<std::string> BytesFromHexText(absl::string_view text, uint64_t size, bool exact) {
  if (text.size() < 2 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) {
    return absl::InvalidArgumentError("expected a 0x-prefixed hex string");
  }
  const uint64_t digits = text.size() - 2;
  if (digits % 2 != 0 || (exact ? digits != 2 * size : digits > 2 * size)) {
    return absl::InvalidArgumentError(absl::StrCat(digits, " hex digits, expected ",
                                                   exact ? "" : "at most ", 2 * size, " (", size,
                                                   " bytes)"));
  }
  std::string out(digits / 2, '\0');
  for (uint64_t i = 0; i < out.size(); ++i) {
    const int high = HexDigit(text[2 + 2 * i]);
    const int low = HexDigit(text[3 + 2 * i]);
    if ((high | low) < 0) return absl::InvalidArgumentError("not hex");
    out[i] = static_cast<char>(high * 16 + low);
  }
  return out;
}

absl::StatusOr<uint64_t> Uint64FromJson(const Json& json, const std::string& path) {
  if (json.is_number_unsigned()) return json.get<uint64_t>();
  if (json.is_number_integer() && json.get<int64_t>() >= 0) return json.get<uint64_t>();
  if (!json.is_string()) return Invalid(path, "expected a decimal string");
  absl::StatusOr<uint64_t> value = Uint64FromDecimal(json.get_ref<const std::string&>());
  if (!value.ok()) return Invalid(path, value.status().message());
  return value;
}

absl::StatusOr<BuilderEntry> BuilderEntryFromSsz(absl::string_view bytes, const std::string& path) {
  absl::StatusOr<std::vector<absl::string_view>> parts =
      SplitContainer(BuilderEntryType(), bytes, path);
  if (!parts.ok()) return parts.status();
  const absl::string_view url = (*parts)[0];
  const absl::string_view keys = (*parts)[2];
  if (url.size() > kMaxBuilderUrlBytes) {
    return Invalid(Member(path, "url"),
                   absl::StrCat(url.size(), " bytes, over the limit ", kMaxBuilderUrlBytes));
  }
  if (keys.size() % kBlsPubkeyBytes != 0 || keys.size() / kBlsPubkeyBytes > kMaxBuilderPubkeys) {
    return Invalid(Member(path, "builder_pubkeys"),
                   absl::StrCat(keys.size(), " bytes, not a multiple of ", kBlsPubkeyBytes,
                                " up to ", kMaxBuilderPubkeys, " keys"));
  }
  BuilderEntry entry;
  absl::StatusOr<SignedRequestAuth> auth =
      SignedRequestAuthFromSsz((*parts)[1], Member(path, "auth"));
  if (!auth.ok()) return auth.status();
  entry.url = std::string(url);
  entry.auth = *std::move(auth);
  for (size_t at = 0; at < keys.size(); at += kBlsPubkeyBytes) {
    entry.builder_pubkeys.emplace_back(keys.substr(at, kBlsPubkeyBytes));
  }
  entry.max_execution_payment = ReadLittleEndian((*parts)[3]);
  entry.min_bid = ReadLittleEndian((*parts)[4]);
  entry.builder_boost_factor = ReadLittleEndian((*parts)[5]);
  return entry;
}

absl::StatusOr<BuilderEntry> BuilderEntryFromJson(const Json& json, const std::string& path) {
  if (!json.is_object()) return Invalid(path, "expected an object");
  BuilderEntry entry;
  absl::StatusOr<const Json*> url = Required(json, "url", path);
  if (!url.ok()) return url.status();
  if (!(*url)->is_string()) return Invalid(Member(path, "url"), "expected a string");
  entry.url = (*url)->get<std::string>();
  if (entry.url.size() > kMaxBuilderUrlBytes) {
    return Invalid(Member(path, "url"),
                   absl::StrCat(entry.url.size(), " bytes, over the limit ", kMaxBuilderUrlBytes));
  }
  absl::StatusOr<const Json*> auth_json = Required(json, "auth", path);
  if (!auth_json.ok()) return auth_json.status();
  absl::StatusOr<SignedRequestAuth> auth =
      SignedRequestAuthFromJson(**auth_json, Member(path, "auth"));
  if (!auth.ok()) return auth.status();
  entry.auth = *std::move(auth);
  absl::StatusOr<const Json*> keys = Required(json, "builder_pubkeys", path);
  if (!keys.ok()) return keys.status();
  const std::string keys_path = Member(path, "builder_pubkeys");
  if (!(*keys)->is_array()) return Invalid(keys_path, "expected an array");
  if ((*keys)->size() > kMaxBuilderPubkeys) {
    return Invalid(keys_path,
                   absl::StrCat((*keys)->size(), " keys, over the limit ", kMaxBuilderPubkeys));
  }
  for (size_t i = 0; i < (*keys)->size(); ++i) {
    absl::StatusOr<std::string> key =
        BytesFromHex((**keys)[i], kBlsPubkeyBytes, true, Indexed(keys_path, i));
    if (!key.ok()) return key.status();
    entry.builder_pubkeys.push_back(*std::move(key));
  }
  for (auto [name, field] : {std::pair{"max_execution_payment", &entry.max_execution_payment},
                             std::pair{"min_bid", &entry.min_bid},
                             std::pair{"builder_boost_factor", &entry.builder_boost_factor}}) {
    absl::StatusOr<uint64_t> value = RequiredUint64(json, name, path);
    if (!value.ok()) return value.status();
    *field = *value;
  }
  return entry;
}

std::string BuilderEntryToSsz(const BuilderEntry& entry) {
  std::string keys;
  for (const std::string& key : entry.builder_pubkeys) keys += key;
  return Join({entry.url, SignedRequestAuthToSsz(entry.auth), keys,
               Uint64Bytes(entry.max_execution_payment), Uint64Bytes(entry.min_bid),
               Uint64Bytes(entry.builder_boost_factor)},
              {true, true, true, false, false, false});
}

Json BuilderEntryToJson(const BuilderEntry& entry) {
  Json keys = Json::array();
  for (const std::string& key : entry.builder_pubkeys) keys.push_back(Hex(key));
  return Json{{"url", entry.url},
              {"auth", SignedRequestAuthToJson(entry.auth)},
              {"builder_pubkeys", std::move(keys)},
              {"max_execution_payment", std::to_string(entry.max_execution_payment)},
              {"min_bid", std::to_string(entry.min_bid)},
              {"builder_boost_factor", std::to_string(entry.builder_boost_factor)}};
}

absl::StatusOr<BuilderConfigSszParts> SplitBuilderConfigSsz(absl::string_view bytes) {
  absl::StatusOr<std::vector<absl::string_view>> parts =
      SplitContainer(BuilderConfigType(), bytes, "");
  if (!parts.ok()) return parts.status();
  BuilderConfigSszParts out;
  out.min_bid = ReadLittleEndian((*parts)[0]);
  out.builder_boost_factor = ReadLittleEndian((*parts)[1]);
  const absl::string_view list = (*parts)[2];
  if (list.empty()) return out;
  // A list of variable-size elements: an offset per element, the first one after them all.
  const uint64_t first = list.size() < kOffsetBytes ? 0 : ReadLittleEndian(list.substr(0, 4));
  if (first < kOffsetBytes || first % kOffsetBytes != 0 || first > list.size()) {
    return Invalid("builders", absl::StrCat("first offset ", first, " is out of place (",
                                            list.size(), " bytes)"));
  }
  const uint64_t count = first / kOffsetBytes;
  if (count > kMaxBuilderEntries) {
    return Invalid("builders",
                   absl::StrCat(count, " entries, over the limit ", kMaxBuilderEntries));
  }
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t begin = ReadLittleEndian(list.substr(kOffsetBytes * i, kOffsetBytes));
    const uint64_t end = i + 1 < count
                             ? ReadLittleEndian(list.substr(kOffsetBytes * (i + 1), kOffsetBytes))
                             : list.size();
    if (begin > end || end > list.size()) {
      return Invalid(Indexed("builders", i),
                     absl::StrCat("offset ", begin, " is out of place (", list.size(), " bytes)"));
    }
    out.builders.push_back(list.substr(begin, end - begin));
  }
  return out;
}

absl::StatusOr<BuilderConfig> BuilderConfigFromSsz(absl::string_view bytes) {
  absl::StatusOr<BuilderConfigSszParts> parts = SplitBuilderConfigSsz(bytes);
  if (!parts.ok()) return parts.status();
  BuilderConfig config;
  config.min_bid = parts->min_bid;
  config.builder_boost_factor = parts->builder_boost_factor;
  for (size_t i = 0; i < parts->builders.size(); ++i) {
    absl::StatusOr<BuilderEntry> entry =
        BuilderEntryFromSsz(parts->builders[i], Indexed("builders", i));
    if (!entry.ok()) return entry.status();
    config.builders.push_back(*std::move(entry));
  }
  return config;
}

absl::StatusOr<BuilderConfig> BuilderConfigFromJson(const Json& json) {
  if (!json.is_object()) return Invalid("", "expected an object");
  BuilderConfig config;
  for (auto [name, field] : {std::pair{"min_bid", &config.min_bid},
                             std::pair{"builder_boost_factor", &config.builder_boost_factor}}) {
    absl::StatusOr<uint64_t> value = RequiredUint64(json, name, "");
    if (!value.ok()) return value.status();
    *field = *value;
  }
  absl::StatusOr<const Json*> builders = Required(json, "builders", "");
  if (!builders.ok()) return builders.status();
  if (!(*builders)->is_array()) return Invalid("builders", "expected an array");
  if ((*builders)->size() > kMaxBuilderEntries) {
    return Invalid("builders", absl::StrCat((*builders)->size(), " entries, over the limit ",
                                            kMaxBuilderEntries));
  }
  for (size_t i = 0; i < (*builders)->size(); ++i) {
    absl::StatusOr<BuilderEntry> entry =
        BuilderEntryFromJson((**builders)[i], Indexed("builders", i));
    if (!entry.ok()) return entry.status();
    config.builders.push_back(*std::move(entry));
  }
  return config;
}

std::string BuilderConfigToSsz(const BuilderConfig& config) {
  std::vector<std::string> entries;
  entries.reserve(config.builders.size());
  for (const BuilderEntry& entry : config.builders) entries.push_back(BuilderEntryToSsz(entry));
  const std::string list = Join(entries, std::vector<bool>(entries.size(), true));
  return Join({Uint64Bytes(config.min_bid), Uint64Bytes(config.builder_boost_factor), list},
              {false, false, true});
}

Json BuilderConfigToJson(const BuilderConfig& config) {
  Json builders = Json::array();
  for (const BuilderEntry& entry : config.builders) builders.push_back(BuilderEntryToJson(entry));
  return Json{{"min_bid", std::to_string(config.min_bid)},
              {"builder_boost_factor", std::to_string(config.builder_boost_factor)},
              {"builders", std::move(builders)}};
}

}  // namespace breaker::sidecar::ssz
