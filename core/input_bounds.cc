#include "core/input_bounds.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace breaker::core::bounds {
namespace {

constexpr size_t kQuotedPrefixBytes = 32;
constexpr size_t kLoggedBytes = 160;
constexpr absl::string_view kEllipsis = "...";

// The longest prefix of `text` of at most `max` bytes that does not end inside a UTF-8
// character (continuation bytes are 10xxxxxx).
absl::string_view Utf8Prefix(absl::string_view text, size_t max) {
  if (text.size() <= max) return text;
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

}  // namespace

absl::Status CheckMaxBytes(absl::string_view field, absl::string_view value, size_t max) {
  if (value.size() <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, " is ", value.size(), " bytes (starts \"",
                                                 QuotePrefix(value), "\"); accepted: at most ", max,
                                                 " bytes"));
}

absl::Status CheckExactBytes(absl::string_view field, absl::string_view value, size_t size,
                             bool empty_ok) {
  if (value.size() == size || (empty_ok && value.empty())) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, " is ", value.size(),
                                                 " bytes; accepted: exactly ", size, " bytes",
                                                 empty_ok ? " or none (not known)" : ""));
}

absl::Status CheckIdentifier(absl::string_view field, absl::string_view value, size_t max) {
  const std::string accepted =
      absl::StrCat("accepted: 1..", max,
                   " printable ASCII characters (0x20..0x7e), no leading or trailing space");
  if (value.empty())
    return absl::InvalidArgumentError(absl::StrCat(field, " is empty; ", accepted));
  if (absl::Status length = CheckMaxBytes(field, value, max); !length.ok()) return length;
  for (size_t i = 0; i < value.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c > 0x7e) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " \"", QuotePrefix(value), "\" has byte 0x",
                       absl::Hex(c, absl::kZeroPad2), " at offset ", i, "; ", accepted));
    }
  }
  if (value.front() == ' ' || value.back() == ' ') {
    return absl::InvalidArgumentError(absl::StrCat(field, " \"", QuotePrefix(value), "\" ",
                                                   value.front() == ' ' ? "begins" : "ends",
                                                   " with a space; ", accepted));
  }
  return absl::OkStatus();
}

absl::Status CheckNodeId(absl::string_view field, absl::string_view node_id) {
  return CheckIdentifier(field, node_id, kMaxNodeIdBytes);
}

absl::Status CheckMaxCount(absl::string_view field, size_t count, size_t max) {
  if (count <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " lists ", count, " entries; accepted: at most ", max));
}

std::string QuotePrefix(absl::string_view value) {
  const absl::string_view prefix = Utf8Prefix(value, kQuotedPrefixBytes);
  return absl::StrCat(absl::CHexEscape(prefix), prefix.size() < value.size() ? kEllipsis : "");
}

std::string ForLog(absl::string_view value) {
  const absl::string_view prefix = Utf8Prefix(value, kLoggedBytes);
  return absl::StrCat(absl::CHexEscape(prefix), prefix.size() < value.size() ? kEllipsis : "");
}

std::string Truncate(absl::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  if (max <= kEllipsis.size()) return std::string(Utf8Prefix(text, max));
  return absl::StrCat(Utf8Prefix(text, max - kEllipsis.size()), kEllipsis);
}

}  // namespace breaker::core::bounds
