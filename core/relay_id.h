#ifndef CORE_RELAY_ID_H_
#define CORE_RELAY_ID_H_

// Relay (direct-connection endpoint) identifiers. The same endpoint spelled two ways must be
// one relay, or a ban is evaded by re-spelling the URL.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace breaker::core {

// Returns the canonical form of an endpoint identifier:
//   - "host:port" and "host" mean "http://host:port" and "http://host";
//   - scheme and host are lower-cased; only http and https are accepted;
//   - credentials ("user:pass@", or the relay public key of mev-boost URLs), query and
//     fragment are removed, and so is a trailing slash;
//   - the scheme's default port (80, 443) is removed; the path is kept as it is.
// Returns INVALID_ARGUMENT, quoting the input and saying what is wrong, for an empty
// identifier, whitespace, an unknown scheme, an empty host or a port outside 1..65535.
absl::StatusOr<std::string> NormalizeRelayId(absl::string_view identifier);

}  // namespace breaker::core

#endif  // CORE_RELAY_ID_H_
