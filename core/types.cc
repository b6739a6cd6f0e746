#include "core/types.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace breaker::core {

std::string BlockRoot::ShortHex() const {
  return absl::StrCat("0x", absl::BytesToHexString(
                                absl::string_view(reinterpret_cast<const char*>(bytes.data()), 8)));
}

BlockRoot BlockRootFromBytes(absl::string_view bytes) {
  BlockRoot root;
  std::copy_n(bytes.begin(), std::min(bytes.size(), root.bytes.size()), root.bytes.begin());
  return root;
}

}  // namespace breaker::core
