#include "proto/codec/codec_util.h"

#include "absl/strings/str_cat.h"

namespace breaker::codec {

std::string RootBytes(const core::BlockRoot& root) {
  return std::string(reinterpret_cast<const char*>(root.bytes.data()), root.bytes.size());
}

absl::StatusOr<core::BlockRoot> RootFromBytes(absl::string_view bytes, absl::string_view field) {
  core::BlockRoot root;
  if (bytes.size() != root.bytes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is ", bytes.size(), " bytes; a block root is ", root.bytes.size()));
  }
  std::copy(bytes.begin(), bytes.end(), root.bytes.begin());
  return root;
}

absl::Status Duplicate(absl::string_view list, const std::string& key) {
  return absl::InvalidArgumentError(
      absl::StrCat(list, " holds ", key, " more than once; each key appears once"));
}

}  // namespace breaker::codec
