#include "core/relay_id.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/input_bounds.h"

namespace breaker::core {
namespace {

constexpr char kAcceptedPorts[] = "accepted: 1..65535";

absl::Status Invalid(absl::string_view identifier, absl::string_view what) {
  // A short escaped prefix: a control character in the input cannot garble a log line, and a
  // long input is not echoed back.
  return absl::InvalidArgumentError(
      absl::StrCat("relay identifier \"", bounds::QuotePrefix(identifier), "\" ", what));
}

// RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ). Anything else before "://" is not a
// scheme but part of a path or query ("host/x?u=http://y"), so the identifier has none.
bool IsScheme(absl::string_view s) {
  if (s.empty() || !absl::ascii_isalpha(s.front())) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(c) && c != '+' && c != '-' && c != '.') return false;
  }
  return true;
}

// Host names are restricted to what DNS and IPv4 use, so that no escape ("%72elay") can spell
// one host two ways.
bool IsHostName(absl::string_view s) {
  for (char c : s) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '.' && c != '_') return false;
  }
  return true;
}

bool IsIpv6Literal(absl::string_view s) {
  for (char c : s) {
    if (!absl::ascii_isxdigit(c) && c != ':' && c != '.') return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> NormalizeRelayId(absl::string_view identifier) {
  if (identifier.empty()) return Invalid(identifier, "is empty");
  if (identifier.size() > bounds::kMaxRelayIdBytes) {
    return Invalid(identifier, absl::StrCat("is ", identifier.size(), " bytes; accepted: at most ",
                                            bounds::kMaxRelayIdBytes, " bytes"));
  }
  if (absl::StripAsciiWhitespace(identifier).empty()) {
    return Invalid(identifier, "is empty but for whitespace");
  }
  for (char c : identifier) {
    // Whitespace is never part of a URL; accepting it would let " host" and "host" differ.
    if (absl::ascii_isspace(c) || absl::ascii_iscntrl(c)) {
      return Invalid(identifier, "contains whitespace or a control character");
    }
  }

  absl::string_view rest = identifier;
  std::string scheme = "http";
  if (const size_t sep = rest.find("://");
      sep != absl::string_view::npos && IsScheme(rest.substr(0, sep))) {
    scheme = absl::AsciiStrToLower(rest.substr(0, sep));
    if (scheme != "http" && scheme != "https") {
      return Invalid(identifier,
                     absl::StrCat("has unknown scheme \"", scheme, "\"; accepted: http, https"));
    }
    rest.remove_prefix(sep + 3);
  }

  // The authority runs up to the path, query or fragment, whichever comes first.
  const size_t authority_end = rest.find_first_of("/?#");
  absl::string_view authority = rest.substr(0, authority_end);
  absl::string_view path;
  if (authority_end != absl::string_view::npos) {
    path = rest.substr(authority_end);
    path = path.substr(0, path.find_first_of("?#"));
  }
  // "host/" and "host//" are the same endpoint as "host".
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);

  // Credentials: "user:pass@" or mev-boost's "0x<relay pubkey>@". The last '@' ends them,
  // as a password may itself contain one.
  if (const size_t at = authority.rfind('@'); at != absl::string_view::npos) {
    authority.remove_prefix(at + 1);
  }

  absl::string_view host;
  absl::string_view port;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) {
      return Invalid(identifier, "has an IPv6 address without its closing ']'");
    }
    host = authority.substr(0, close + 1);
    const absl::string_view inside = host.substr(1, host.size() - 2);
    if (inside.empty()) return Invalid(identifier, "has an empty host");
    if (!IsIpv6Literal(inside)) {
      return Invalid(identifier,
                     "has an IPv6 address with characters other than hex digits, "
                     "':' and '.'");
    }
    const absl::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return Invalid(identifier, "has characters after the IPv6 address other than ':port'");
      }
      port = after.substr(1);
      has_port = true;
    }
  } else {
    const size_t colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != absl::string_view::npos) {
      port = authority.substr(colon + 1);
      has_port = true;
    }
    // A fully qualified name's final dot ("relay.example.") names the same host.
    if (host.size() > 1 && host.back() == '.') host.remove_suffix(1);
    if (host.empty() || host == ".") return Invalid(identifier, "has an empty host");
    if (!IsHostName(host)) {
      return Invalid(identifier, absl::StrCat("has host \"", bounds::QuotePrefix(host),
                                              "\"; accepted: letters, digits, '-', '.', '_', "
                                              "or an IPv6 address in brackets"));
    }
    if (port.find(':') != absl::string_view::npos) {
      return Invalid(identifier,
                     "has more than one ':' after the host; an IPv6 address must be "
                     "written in brackets");
    }
  }

  uint32_t port_number = 0;
  if (has_port) {
    if (port.empty())
      return Invalid(identifier, absl::StrCat("has an empty port; ", kAcceptedPorts));
    for (char c : port) {
      if (!absl::ascii_isdigit(c)) {
        return Invalid(identifier, absl::StrCat("has port \"", bounds::QuotePrefix(port),
                                                "\", which is not a number; ", kAcceptedPorts));
      }
      // Saturate above the range, so that a long digit string cannot wrap into it.
      port_number = std::min<uint32_t>(port_number * 10 + static_cast<uint32_t>(c - '0'), 65536);
    }
    if (port_number == 0 || port_number > 65535) {
      return Invalid(identifier, absl::StrCat("has port ", bounds::QuotePrefix(port),
                                              " outside the range; ", kAcceptedPorts));
    }
  }
  const uint32_t default_port = scheme == "https" ? 443 : 80;

  // Rebuilt from the port's value, so that "080" and "80" are one spelling.
  std::string normalized = absl::StrCat(scheme, "://", absl::AsciiStrToLower(host));
  if (has_port && port_number != default_port) absl::StrAppend(&normalized, ":", port_number);
  absl::StrAppend(&normalized, path);
  return normalized;
}

}  // namespace breaker::core
