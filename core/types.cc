#include "core/types.h"

#include <algorithm>

namespace breaker::core {

std::string BlockRoot::ShortHex() const {
  // By hand, into one string: it is on the path of every failure report.
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex = "0x";
  hex.resize(2 + 16);
  for (size_t i = 0; i < 8; ++i) {
    hex[2 + 2 * i] = kDigits[bytes[i] >> 4];
    hex[3 + 2 * i] = kDigits[bytes[i] & 0xf];
  }
  return hex;
}

BlockRoot BlockRootFromBytes(absl::string_view bytes) {
  BlockRoot root;
  std::copy_n(bytes.begin(), std::min(bytes.size(), root.bytes.size()), root.bytes.begin());
  return root;
}

}  // namespace breaker::core
