#ifndef CORE_TYPES_H_
#define CORE_TYPES_H_

// The chain's basic quantities, as the breaker sees them.

#include <array>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/string_view.h"

namespace breaker::core {

// Visits a variant with one lambda per alternative: std::visit(Overloaded{[](const A&) {...},
// [](const B&) {...}}, value).
template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

using Slot = uint64_t;
using Epoch = uint64_t;
using BuilderIndex = uint64_t;

// The proposer building its own payload. Never tracked, never counted, never banned.
inline constexpr BuilderIndex kSelfBuild = std::numeric_limits<BuilderIndex>::max();

// "Never" for epochs: a ban or fork that does not end or has not been scheduled.
inline constexpr Epoch kFarFutureEpoch = std::numeric_limits<Epoch>::max();

// a + b, or the largest value when the sum would wrap: a period added to an epoch or slot
// must never turn "far ahead" into "long ago".
inline constexpr uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return b > std::numeric_limits<uint64_t>::max() - a ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

// A beacon block root: 32 opaque bytes.
struct BlockRoot {
  std::array<uint8_t, 32> bytes{};

  // The first eight bytes as 0x-prefixed hex, for logs and reasons.
  std::string ShortHex() const;

  friend bool operator==(const BlockRoot& a, const BlockRoot& b) { return a.bytes == b.bytes; }
  friend bool operator!=(const BlockRoot& a, const BlockRoot& b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H state, const BlockRoot& root) {
    return H::combine_contiguous(std::move(state), root.bytes.data(), root.bytes.size());
  }
};

// Builds a root from up to 32 bytes (shorter input is zero-padded); for tests and tools.
BlockRoot BlockRootFromBytes(absl::string_view bytes);

}  // namespace breaker::core

#endif  // CORE_TYPES_H_
