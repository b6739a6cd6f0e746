#include "sidecar/ssz/ssz.h"

#include <openssl/sha.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace breaker::sidecar::ssz {
namespace {

using Json = nlohmann::json;

constexpr uint64_t kChunk = 32;
constexpr int kMaxDepth = 64;
// A variable-size field or element is encoded as a 4-byte offset in the fixed part.
constexpr uint64_t kOffsetBytes = 4;

Root Hash(const Root& left, const Root& right) {
  unsigned char input[2 * kChunk];
  std::memcpy(input, left.data(), kChunk);
  std::memcpy(input + kChunk, right.data(), kChunk);
  Root out;
  SHA256(input, sizeof input, out.data());
  return out;
}

absl::Status Invalid(const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path.empty() ? "value" : path, ": ", what));
}

std::string Indexed(const std::string& path, size_t index) {
  return absl::StrCat(path, "[", index, "]");
}

std::string Member(const std::string& path, absl::string_view name) {
  return path.empty() ? std::string(name) : absl::StrCat(path, ".", name);
}

// `bytes` in 32-byte chunks, the last one zero-padded.
std::vector<Root> Pack(absl::string_view bytes) {
  std::vector<Root> chunks((bytes.size() + kChunk - 1) / kChunk);
  for (size_t i = 0; i < chunks.size(); ++i) {
    chunks[i].fill(0);
    const absl::string_view part = bytes.substr(i * kChunk, kChunk);
    std::memcpy(chunks[i].data(), part.data(), part.size());
  }
  return chunks;
}

uint64_t ChunksFor(uint64_t bytes) { return bytes / kChunk + (bytes % kChunk != 0); }

bool IsBasic(const Type& type) { return type.kind == Type::Kind::kUint; }

uint32_t ReadOffset(absl::string_view bytes, uint64_t at) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[at + i]);
  return value;
}

void AppendOffset(uint64_t offset, std::string* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((offset >> (8 * i)) & 0xff));
}

// Splits an encoding into parts whose kinds (fixed size, or variable) are `fixed[i]`/`sizes[i]`:
// the fixed parts in place, each variable one as an offset into the bytes after them.
absl::StatusOr<std::vector<absl::string_view>> SplitParts(absl::string_view bytes,
                                                          const std::vector<uint64_t>& sizes,
                                                          const std::vector<bool>& fixed,
                                                          const std::string& path) {
  uint64_t fixed_bytes = 0;
  for (size_t i = 0; i < sizes.size(); ++i) fixed_bytes += fixed[i] ? sizes[i] : kOffsetBytes;
  if (bytes.size() < fixed_bytes) {
    return Invalid(path, absl::StrCat(bytes.size(), " bytes, fewer than the ", fixed_bytes,
                                      " of its fixed part"));
  }
  std::vector<absl::string_view> parts(sizes.size());
  std::vector<size_t> variable;
  std::vector<uint64_t> offsets;
  uint64_t at = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (fixed[i]) {
      parts[i] = bytes.substr(at, sizes[i]);
      at += sizes[i];
    } else {
      variable.push_back(i);
      offsets.push_back(ReadOffset(bytes, at));
      at += kOffsetBytes;
    }
  }
  if (variable.empty() && bytes.size() != fixed_bytes) {
    return Invalid(path, absl::StrCat(bytes.size(), " bytes, not ", fixed_bytes));
  }
  offsets.push_back(bytes.size());
  for (size_t j = 0; j < variable.size(); ++j) {
    const uint64_t begin = offsets[j];
    const uint64_t end = offsets[j + 1];
    if ((j == 0 && begin != fixed_bytes) || begin > end || end > bytes.size()) {
      return Invalid(path, absl::StrCat("offset ", begin, " is out of place (fixed part ",
                                        fixed_bytes, " bytes, ", bytes.size(), " in all)"));
    }
    parts[variable[j]] = bytes.substr(begin, end - begin);
  }
  return parts;
}

// The encodings of the elements of a vector (`count` of them) or list (at most `limit`).
absl::StatusOr<std::vector<absl::string_view>> SplitElements(const Type& element,
                                                             absl::string_view bytes, bool is_list,
                                                             uint64_t size,
                                                             const std::string& path) {
  uint64_t count = 0;
  if (IsFixedSize(element)) {
    const uint64_t each = FixedSize(element);
    if (bytes.size() % each != 0) {
      return Invalid(path, absl::StrCat(bytes.size(), " bytes, not a multiple of ", each));
    }
    count = bytes.size() / each;
  } else if (!bytes.empty()) {
    const uint32_t first = bytes.size() < kOffsetBytes ? 0 : ReadOffset(bytes, 0);
    if (first < kOffsetBytes || first > bytes.size()) {
      return Invalid(path, absl::StrCat("first offset ", first, " is out of place (", bytes.size(),
                                        " bytes)"));
    }
    count = first / kOffsetBytes;
  }
  if (is_list ? count > size : count != size) {
    return Invalid(path,
                   absl::StrCat(count, " elements, ", is_list ? "over the limit " : "not ", size));
  }
  const bool fixed = IsFixedSize(element);
  return SplitParts(bytes, std::vector<uint64_t>(count, FixedSize(element)),
                    std::vector<bool>(count, fixed), path);
}

absl::StatusOr<Root> ElementsRoot(const Type& type, absl::string_view bytes,
                                  const std::string& path) {
  const Type& element = *type.element;
  const bool is_list = type.kind == Type::Kind::kList;
  Root root;
  uint64_t count = 0;
  if (IsBasic(element)) {
    const uint64_t each = element.size;
    if (bytes.size() % each != 0) {
      return Invalid(path, absl::StrCat(bytes.size(), " bytes, not a multiple of ", each));
    }
    count = bytes.size() / each;
    if (is_list ? count > type.size : count != type.size) {
      return Invalid(path, absl::StrCat(count, " elements, ", is_list ? "over the limit " : "not ",
                                        type.size));
    }
    root = Merkleize(Pack(bytes), ChunksFor(type.size * each));
  } else {
    absl::StatusOr<std::vector<absl::string_view>> parts =
        SplitElements(element, bytes, is_list, type.size, path);
    if (!parts.ok()) return parts.status();
    std::vector<Root> roots;
    roots.reserve(parts->size());
    for (size_t i = 0; i < parts->size(); ++i) {
      absl::StatusOr<Root> element_root = HashTreeRoot(element, (*parts)[i], Indexed(path, i));
      if (!element_root.ok()) return element_root.status();
      roots.push_back(*element_root);
    }
    count = roots.size();
    root = Merkleize(std::move(roots), type.size);
  }
  return is_list ? MixInLength(root, count) : root;
}

// Bitlist[limit]: the bits, then a 1 bit that marks their end.
absl::StatusOr<Root> BitlistRoot(const Type& type, absl::string_view bytes,
                                 const std::string& path) {
  if (bytes.empty() || bytes.back() == 0) {
    return Invalid(path, "a bitlist without its delimiter bit (its last byte is zero)");
  }
  int top = 7;
  while ((static_cast<unsigned char>(bytes.back()) >> top) == 0) --top;
  const uint64_t bits = 8 * (bytes.size() - 1) + top;
  if (bits > type.size) {
    return Invalid(path, absl::StrCat(bits, " bits, over the limit ", type.size));
  }
  std::string data(bytes);
  data.back() = static_cast<char>(static_cast<unsigned char>(data.back()) ^ (1u << top));
  if (bits % 8 == 0) data.pop_back();
  return MixInLength(Merkleize(Pack(data), ChunksFor((type.size + 7) / 8)), bits);
}

// A decimal string of at most `bytes` bytes' range, appended little-endian to `out`.
absl::Status ParseUnsigned(const Json& json, uint64_t bytes, std::string* out,
                           const std::string& path) {
  if (!json.is_string()) return Invalid(path, "expected a decimal string");
  const std::string& text = json.get_ref<const std::string&>();
  if (text.empty() || text.size() > 78) {
    return Invalid(path, absl::StrCat("expected a decimal string of 1 to 78 digits, got ",
                                      text.size(), " characters"));
  }
  // Little-endian, `bytes` wide; each digit multiplies by 10 and adds.
  std::vector<unsigned> value(bytes, 0);
  for (char c : text) {
    if (c < '0' || c > '9') return Invalid(path, "expected a decimal string");
    unsigned carry = c - '0';
    for (unsigned& byte : value) {
      const unsigned next = byte * 10 + carry;
      byte = next & 0xff;
      carry = next >> 8;
    }
    if (carry != 0) {
      return Invalid(path, absl::StrCat("\"", text.substr(0, 32), "\" is over uint", 8 * bytes));
    }
  }
  for (unsigned byte : value) out->push_back(static_cast<char>(byte));
  return absl::OkStatus();
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// 0x-hex of exactly `size` bytes (`exact`) or of at most `size`, appended to `out`.
absl::Status ParseHex(const Json& json, uint64_t size, bool exact, std::string* out,
                      const std::string& path) {
  if (!json.is_string()) return Invalid(path, "expected a 0x-prefixed hex string");
  const std::string& text = json.get_ref<const std::string&>();
  if (text.size() < 2 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) {
    return Invalid(path, "expected a 0x-prefixed hex string");
  }
  const uint64_t digits = text.size() - 2;
  if (digits % 2 != 0 || (exact ? digits != 2 * size : digits > 2 * size)) {
    return Invalid(path, absl::StrCat(digits, " hex digits, expected ", exact ? "" : "at most ",
                                      2 * size, " (", size, " bytes)"));
  }
  for (uint64_t i = 2; i < text.size(); i += 2) {
    const int high = HexDigit(text[i]);
    const int low = HexDigit(text[i + 1]);
    if (high < 0 || low < 0) return Invalid(path, "not hex");
    out->push_back(static_cast<char>(high * 16 + low));
  }
  return absl::OkStatus();
}

// Appends the encodings `parts` of fields or elements of the given fixedness: the fixed ones
// in place, the variable ones as offsets, then their bytes.
std::string Join(const std::vector<std::string>& parts, const std::vector<bool>& fixed) {
  uint64_t fixed_bytes = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    fixed_bytes += fixed[i] ? parts[i].size() : kOffsetBytes;
  }
  std::string out;
  std::string tail;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (fixed[i]) {
      out += parts[i];
    } else {
      AppendOffset(fixed_bytes + tail.size(), &out);
      tail += parts[i];
    }
  }
  return out + tail;
}

}  // namespace

Type Uint64() { return Type{Type::Kind::kUint, 8, nullptr, {}}; }
Type Uint256() { return Type{Type::Kind::kUint, 32, nullptr, {}}; }
Type ByteVector(uint64_t size) { return Type{Type::Kind::kByteVector, size, nullptr, {}}; }
Type ByteList(uint64_t limit) { return Type{Type::Kind::kByteList, limit, nullptr, {}}; }
Type Bitvector(uint64_t size) { return Type{Type::Kind::kBitvector, size, nullptr, {}}; }
Type Bitlist(uint64_t limit) { return Type{Type::Kind::kBitlist, limit, nullptr, {}}; }
Type Vector(Type element, uint64_t size) {
  return Type{Type::Kind::kVector, size, std::make_shared<const Type>(std::move(element)), {}};
}
Type List(Type element, uint64_t limit) {
  return Type{Type::Kind::kList, limit, std::make_shared<const Type>(std::move(element)), {}};
}
Type Container(std::vector<Field> fields) {
  return Type{Type::Kind::kContainer, 0, nullptr, std::move(fields)};
}

bool IsFixedSize(const Type& type) {
  switch (type.kind) {
    case Type::Kind::kUint:
    case Type::Kind::kByteVector:
    case Type::Kind::kBitvector:
      return true;
    case Type::Kind::kByteList:
    case Type::Kind::kBitlist:
    case Type::Kind::kList:
      return false;
    case Type::Kind::kVector:
      return IsFixedSize(*type.element);
    case Type::Kind::kContainer:
      for (const Field& field : type.fields) {
        if (!IsFixedSize(field.type)) return false;
      }
      return true;
  }
  return false;
}

uint64_t FixedSize(const Type& type) {
  if (!IsFixedSize(type)) return 0;
  switch (type.kind) {
    case Type::Kind::kUint:
    case Type::Kind::kByteVector:
      return type.size;
    case Type::Kind::kBitvector:
      return (type.size + 7) / 8;
    case Type::Kind::kVector:
      return type.size * FixedSize(*type.element);
    case Type::Kind::kContainer: {
      uint64_t size = 0;
      for (const Field& field : type.fields) size += FixedSize(field.type);
      return size;
    }
    default:
      return 0;
  }
}

const Root& ZeroHash(int depth) {
  static const std::array<Root, kMaxDepth + 1> kZeroHashes = [] {
    std::array<Root, kMaxDepth + 1> hashes;
    hashes[0].fill(0);
    for (int i = 1; i <= kMaxDepth; ++i) hashes[i] = Hash(hashes[i - 1], hashes[i - 1]);
    return hashes;
  }();
  return kZeroHashes.at(depth);
}

Root Merkleize(std::vector<Root> chunks, uint64_t limit) {
  int depth = 0;
  while (depth < kMaxDepth && (uint64_t{1} << depth) < limit) ++depth;
  if (chunks.empty()) return ZeroHash(depth);
  for (int level = 0; level < depth; ++level) {
    if (chunks.size() % 2 != 0) chunks.push_back(ZeroHash(level));
    for (size_t i = 0; i < chunks.size() / 2; ++i) {
      chunks[i] = Hash(chunks[2 * i], chunks[2 * i + 1]);
    }
    chunks.resize(chunks.size() / 2);
  }
  return chunks[0];
}

Root MixInLength(const Root& root, uint64_t length) {
  Root length_chunk;
  length_chunk.fill(0);
  for (int i = 0; i < 8; ++i) length_chunk[i] = static_cast<uint8_t>((length >> (8 * i)) & 0xff);
  return Hash(root, length_chunk);
}

absl::StatusOr<std::vector<absl::string_view>> SplitContainer(const Type& container,
                                                              absl::string_view bytes,
                                                              const std::string& path) {
  std::vector<uint64_t> sizes;
  std::vector<bool> fixed;
  for (const Field& field : container.fields) {
    sizes.push_back(FixedSize(field.type));
    fixed.push_back(IsFixedSize(field.type));
  }
  return SplitParts(bytes, sizes, fixed, path);
}

absl::StatusOr<Root> HashTreeRoot(const Type& type, absl::string_view bytes,
                                  const std::string& path) {
  if (IsFixedSize(type) && bytes.size() != FixedSize(type)) {
    return Invalid(path, absl::StrCat(bytes.size(), " bytes, not ", FixedSize(type)));
  }
  switch (type.kind) {
    case Type::Kind::kUint:
    case Type::Kind::kByteVector:
      return Merkleize(Pack(bytes), ChunksFor(type.size));
    case Type::Kind::kByteList:
      if (bytes.size() > type.size) {
        return Invalid(path, absl::StrCat(bytes.size(), " bytes, over the limit ", type.size));
      }
      return MixInLength(Merkleize(Pack(bytes), ChunksFor(type.size)), bytes.size());
    case Type::Kind::kBitvector:
      if (type.size % 8 != 0 && (static_cast<unsigned char>(bytes.back()) >> (type.size % 8))) {
        return Invalid(path, absl::StrCat("bits set past the bitvector's ", type.size));
      }
      return Merkleize(Pack(bytes), ChunksFor(FixedSize(type)));
    case Type::Kind::kBitlist:
      return BitlistRoot(type, bytes, path);
    case Type::Kind::kVector:
    case Type::Kind::kList:
      return ElementsRoot(type, bytes, path);
    case Type::Kind::kContainer: {
      absl::StatusOr<std::vector<absl::string_view>> parts = SplitContainer(type, bytes, path);
      if (!parts.ok()) return parts.status();
      std::vector<Root> roots;
      for (size_t i = 0; i < type.fields.size(); ++i) {
        absl::StatusOr<Root> root =
            HashTreeRoot(type.fields[i].type, (*parts)[i], Member(path, type.fields[i].name));
        if (!root.ok()) return root.status();
        roots.push_back(*root);
      }
      const uint64_t count = roots.size();
      return Merkleize(std::move(roots), count);
    }
  }
  return Invalid(path, "unknown type");
}

absl::StatusOr<std::string> EncodeJson(const Type& type, const Json& json,
                                       const std::string& path) {
  std::string out;
  switch (type.kind) {
    case Type::Kind::kUint:
      if (absl::Status status = ParseUnsigned(json, type.size, &out, path); !status.ok()) {
        return status;
      }
      return out;
    case Type::Kind::kByteVector:
    case Type::Kind::kByteList:
    case Type::Kind::kBitvector:
    case Type::Kind::kBitlist: {
      // A bitlist's encoding holds its delimiter bit: at most limit / 8 + 1 bytes.
      const uint64_t size = type.kind == Type::Kind::kBitvector ? FixedSize(type)
                            : type.kind == Type::Kind::kBitlist ? type.size / 8 + 1
                                                                : type.size;
      const bool exact =
          type.kind == Type::Kind::kByteVector || type.kind == Type::Kind::kBitvector;
      if (absl::Status status = ParseHex(json, size, exact, &out, path); !status.ok()) {
        return status;
      }
      return out;
    }
    case Type::Kind::kVector:
    case Type::Kind::kList: {
      if (!json.is_array()) return Invalid(path, "expected an array");
      const bool is_list = type.kind == Type::Kind::kList;
      if (is_list ? json.size() > type.size : json.size() != type.size) {
        return Invalid(path, absl::StrCat(json.size(), " elements, ",
                                          is_list ? "over the limit " : "not ", type.size));
      }
      std::vector<std::string> parts;
      for (size_t i = 0; i < json.size(); ++i) {
        absl::StatusOr<std::string> part = EncodeJson(*type.element, json[i], Indexed(path, i));
        if (!part.ok()) return part.status();
        parts.push_back(*std::move(part));
      }
      return Join(parts, std::vector<bool>(parts.size(), IsFixedSize(*type.element)));
    }
    case Type::Kind::kContainer: {
      if (!json.is_object()) return Invalid(path, "expected an object");
      std::vector<std::string> parts;
      std::vector<bool> fixed;
      for (const Field& field : type.fields) {
        const std::string field_path = Member(path, field.name);
        auto it = json.find(field.name);
        if (it == json.end()) return Invalid(field_path, "missing");
        absl::StatusOr<std::string> part = EncodeJson(field.type, *it, field_path);
        if (!part.ok()) return part.status();
        parts.push_back(*std::move(part));
        fixed.push_back(IsFixedSize(field.type));
      }
      if (json.size() != type.fields.size()) {
        for (auto it = json.begin(); it != json.end(); ++it) {
          bool known = false;
          for (const Field& field : type.fields) known = known || field.name == it.key();
          if (!known) return Invalid(Member(path, it.key().substr(0, 64)), "unknown field");
        }
      }
      return Join(parts, fixed);
    }
  }
  return Invalid(path, "unknown type");
}

absl::StatusOr<uint64_t> DecodeUint64(absl::string_view bytes, const std::string& path) {
  if (bytes.size() != 8) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, path.empty() ? "" : ": ", "a uint64 of ", bytes.size(), " bytes"));
  }
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

std::optional<size_t> FieldIndex(const Type& container, absl::string_view name) {
  for (size_t i = 0; i < container.fields.size(); ++i) {
    if (container.fields[i].name == name) return i;
  }
  return std::nullopt;
}

std::string Hex(absl::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "0x";
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

}  // namespace breaker::sidecar::ssz
