#include "sidecar/http/headers.h"

#include "absl/strings/match.h"

namespace breaker::sidecar::http {

bool IsHopByHop(absl::string_view name) {
  static const char* const kNames[] = {"connection", "keep-alive", "proxy-authenticate",
                                       "proxy-authorization", "te", "trailer", "transfer-encoding",
                                       "upgrade", "host", "content-length", "accept-encoding",
                                       "content-encoding",
                                       // What cpp-httplib adds to a request it received.
                                       "remote_addr", "remote_port", "local_addr", "local_port"};
  for (const char* hop : kNames) {
    if (absl::EqualsIgnoreCase(name, hop)) return true;
  }
  return false;
}

}  // namespace breaker::sidecar::http
