#ifndef SIDECAR_HTTP_HEADERS_H_
#define SIDECAR_HTTP_HEADERS_H_

// Headers the sidecar's ports never carry from one hop to the next.

#include "absl/strings/string_view.h"

namespace breaker::sidecar::http {

// Whether `name` (any letter case) belongs to one hop only: the connection's own headers
// (RFC 9110 7.6.1), Host, Content-Length and the encodings (the library sets its own framing,
// and bodies pass as they are), and the pseudo-headers cpp-httplib adds to a request it
// received (REMOTE_ADDR, ...).
bool IsHopByHop(absl::string_view name);

}  // namespace breaker::sidecar::http

#endif  // SIDECAR_HTTP_HEADERS_H_
