#ifndef PROTO_CODEC_CODEC_UTIL_H_
#define PROTO_CODEC_CODEC_UTIL_H_

// The few helpers that both codecs of this package use: the API codec (api_codec.h) and the
// snapshot codec (snapshot_codec.h). Sorting gives the *ToProto functions their deterministic
// output; the rest writes and reads block roots and words the error for a key listed twice.
// Internal to proto/codec: not a conversion of its own.

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/types.h"

namespace breaker::codec {

// --- Sorting, for deterministic output -------------------------------------------------------

template <typename Key>
bool KeyLess(const Key& a, const Key& b) {
  return a < b;
}
inline bool KeyLess(const core::BlockRoot& a, const core::BlockRoot& b) {
  return a.bytes < b.bytes;
}

// The entries of `map`, sorted by key.
template <typename Map>
std::vector<const typename Map::value_type*> SortedEntries(const Map& map) {
  std::vector<const typename Map::value_type*> entries;
  entries.reserve(map.size());
  for (const auto& entry : map) entries.push_back(&entry);
  std::sort(entries.begin(), entries.end(),
            [](const auto* a, const auto* b) { return KeyLess(a->first, b->first); });
  return entries;
}

template <typename T>
std::vector<T> Sorted(const absl::flat_hash_set<T>& set) {
  std::vector<T> values(set.begin(), set.end());
  std::sort(values.begin(), values.end());
  return values;
}

// --- Block roots -----------------------------------------------------------------------------

// The root's 32 bytes, raw.
std::string RootBytes(const core::BlockRoot& root);

// Parses the 32-byte root in `bytes`, which `field` names for the error.
absl::StatusOr<core::BlockRoot> RootFromBytes(absl::string_view bytes, absl::string_view field);

// --- Errors ----------------------------------------------------------------------------------

// INVALID_ARGUMENT: `list`, which mirrors a map or a set, holds `key` more than once.
absl::Status Duplicate(absl::string_view list, const std::string& key);

}  // namespace breaker::codec

#endif  // PROTO_CODEC_CODEC_UTIL_H_
