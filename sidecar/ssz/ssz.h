#ifndef SIDECAR_SSZ_SSZ_H_
#define SIDECAR_SSZ_SSZ_H_

// Simple Serialize (ethereum/consensus-specs, ssz/simple-serialize.md) for the types a beacon
// block is made of: their hash_tree_root from SSZ bytes, and their SSZ encoding from the Beacon
// and builder APIs' JSON (uint64 and uint256 as decimal strings, bytes and bit arrays as
// 0x-hex of their SSZ encoding, lists as arrays, containers as objects with snake_case keys).
//
// A type is described as data (`Type`); one merkleization core hashes every type. Every error
// names the field path of what was wrong (e.g. "message.body.attestations[3].data.slot: ...").
// Everything here is thread-compatible; the functions are pure.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace breaker::sidecar::ssz {

using Root = std::array<uint8_t, 32>;

struct Field;

struct Type {
  enum class Kind {
    kUint,        // `size` bytes, little-endian: 8 (uint64) or 32 (uint256)
    kByteVector,  // ByteVector[size]
    kByteList,    // ByteList[size]
    kBitvector,   // Bitvector[size]
    kBitlist,     // Bitlist[size]
    kVector,      // Vector[element, size]
    kList,        // List[element, size]
    kContainer,   // fields
  };
  Kind kind = Kind::kUint;
  // Bytes of a uint, length of a vector, limit of a list.
  uint64_t size = 0;
  std::shared_ptr<const Type> element;
  std::vector<Field> fields;
};

struct Field {
  std::string name;
  Type type;
};

Type Uint64();
Type Uint256();
Type ByteVector(uint64_t size);
Type ByteList(uint64_t limit);
Type Bitvector(uint64_t size);
Type Bitlist(uint64_t limit);
Type Vector(Type element, uint64_t size);
Type List(Type element, uint64_t limit);
Type Container(std::vector<Field> fields);

// Whether every value of `type` has the same encoded length, and that length (0 when not).
bool IsFixedSize(const Type& type);
uint64_t FixedSize(const Type& type);

// The root of `chunks` padded with zero chunks to `limit` chunks rounded up to a power of two
// (the padding comes from ZeroHash, never allocated). REQUIRES: chunks.size() <= max(limit, 1).
Root Merkleize(std::vector<Root> chunks, uint64_t limit);
// hash(root, length as a little-endian uint256): a list's root from its elements' root.
Root MixInLength(const Root& root, uint64_t length);
// The root of 2^depth zero chunks. REQUIRES: 0 <= depth <= 64.
const Root& ZeroHash(int depth);

// hash_tree_root of the SSZ encoding `bytes` of `type`. InvalidArgument, naming the field
// under `path`, when `bytes` is no valid encoding: a length or offset out of place, a list over
// its limit, a bitlist without its delimiter bit, a bitvector with bits set past its length.
absl::StatusOr<Root> HashTreeRoot(const Type& type, absl::string_view bytes,
                                  const std::string& path = "");

// The encodings of a container's fields, in order (views into `bytes`). InvalidArgument as
// for HashTreeRoot, of the container's own layout.
absl::StatusOr<std::vector<absl::string_view>> SplitContainer(const Type& container,
                                                              absl::string_view bytes,
                                                              const std::string& path = "");

// The SSZ encoding of `json` as a value of `type`. InvalidArgument, naming the field under
// `path`: a missing or unknown field, a value of the wrong JSON type, a number that is not a
// decimal string or is over the type's range, hex of the wrong length or not hex, a list over
// its limit. (Bitlists' and bitvectors' bits are checked by HashTreeRoot.)
absl::StatusOr<std::string> EncodeJson(const Type& type, const nlohmann::json& json,
                                       const std::string& path = "");

// The value of a uint64's encoding (8 bytes, little-endian). InvalidArgument, naming `path`,
// for another length.
absl::StatusOr<uint64_t> DecodeUint64(absl::string_view bytes, const std::string& path = "");

// The index of the field named `name` of `container`; nullopt when it has none.
std::optional<size_t> FieldIndex(const Type& container, absl::string_view name);

// "0x" and lower-case hex of `bytes`.
std::string Hex(absl::string_view bytes);

}  // namespace breaker::sidecar::ssz

#endif  // SIDECAR_SSZ_SSZ_H_
