#include "sidecar/http/error_body.h"

#include "absl/strings/str_cat.h"

namespace breaker::sidecar::http {

std::string ErrorBody(int status, absl::string_view message) {
  std::string escaped;
  escaped.reserve(message.size());
  for (const char c : message) {
    if (c == '"' || c == '\\') {
      escaped.push_back('\\');
      escaped.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      escaped.push_back(' ');
    } else {
      escaped.push_back(c);
    }
  }
  return absl::StrCat("{\"code\":", status, ",\"message\":\"", escaped, "\"}");
}

}  // namespace breaker::sidecar::http
