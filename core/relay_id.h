#ifndef CORE_RELAY_ID_H_
#define CORE_RELAY_ID_H_

// Relay (direct-connection endpoint) identifiers. The same endpoint spelled two ways must be
// one relay, or a ban is evaded by re-spelling the URL.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace breaker::core {

// Returns the canonical form of an endpoint identifier (RFC 3986 §6.2.2, RFC 5952), so that
// the spellings of one endpoint are one identifier; docs/semantics.md has the table:
//   - "host:port" and "host" mean "http://host:port" and "http://host";
//   - scheme and host are lower-cased; only http and https are accepted;
//   - credentials ("user:pass@", or the relay public key of mev-boost URLs), query and
//     fragment are removed, and so are trailing slashes;
//   - the scheme's default port (80, 443) is removed, and a port's leading zeros;
//   - a host name's one final dot is removed ("relay.example." is "relay.example");
//   - an IPv6 address is written as RFC 5952 says (lower case, no leading zeros, the longest
//     run of two or more zero groups as "::", the first of equal runs), and an IPv4-mapped
//     one (::ffff:a.b.c.d, dotted or hex) as the IPv4 address it reaches;
//   - in the path, an escaped unreserved character is that character ("%7E" is "~"), other
//     escapes are upper case ("%2f" is "%2F"), and "." and ".." segments are resolved; the
//     path's case is kept.
// The result is printable ASCII, at most 7 bytes ("http://") longer than the input, and
// NormalizeRelayId of it is itself.
// Returns INVALID_ARGUMENT, quoting the input and saying what is wrong and what to write, for
// an empty identifier, whitespace or a control character, an unknown scheme, an empty host or
// an empty label in it ("relay..example", two final dots), an IPv4 address spelled other than
// as a decimal dotted quad ("127.1", "2130706433", "127.000.0.1", "0x7f.0.0.1": inet_aton would
// read a leading zero as octal), a malformed IPv6 address, a port outside 1..65535, a malformed
// percent-encoding ("%zz", "%4"), or a byte a path cannot carry unescaped (non-ASCII, '"',
// '<', '\\', '{', ...).
// Pure: thread-safe.
absl::StatusOr<std::string> NormalizeRelayId(absl::string_view identifier);

}  // namespace breaker::core

#endif  // CORE_RELAY_ID_H_
