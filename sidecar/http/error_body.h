#ifndef SIDECAR_HTTP_ERROR_BODY_H_
#define SIDECAR_HTTP_ERROR_BODY_H_

// The error body the sidecar's ports answer with: the builder API's and the Beacon API's shape.

#include <string>

#include "absl/strings/string_view.h"

namespace breaker::sidecar::http {

// {"code":STATUS,"message":"MESSAGE"}. `message` may quote an upstream: its quotes and
// backslashes are escaped and its control characters become spaces, so the body is always one
// line of JSON.
std::string ErrorBody(int status, absl::string_view message);

}  // namespace breaker::sidecar::http

#endif  // SIDECAR_HTTP_ERROR_BODY_H_
