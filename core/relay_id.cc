#include "core/relay_id.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/input_bounds.h"

namespace breaker::core {
namespace {

constexpr char kAcceptedPorts[] = "accepted: 1..65535";
constexpr char kWriteDottedQuad[] =
    "write an IPv4 address as four decimal numbers 0..255 without leading zeros, e.g. "
    "127.0.0.1";

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

bool AllDigits(absl::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(c); });
}

// RFC 3986 §2.3.
bool IsUnreserved(char c) {
  return absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

// What a path carries as it is (RFC 3986 §3.3: pchar and '/'), besides percent-encoding.
bool IsPathCharacter(char c) { return IsUnreserved(c) || absl::StrContains("!$&'()*+,;=:@/", c); }

int HexValue(char c) {
  if (absl::ascii_isdigit(c)) return c - '0';
  return absl::ascii_tolower(c) - 'a' + 10;
}

// "a.b.c.d", each a decimal 0..255 without leading zeros: the one spelling of an IPv4 address
// accepted. inet_aton would also take "127.1", "2130706433" and "0177.0.0.1" (octal), so any
// other spelling could name the same address as a second relay.
bool ParseDottedQuad(absl::string_view text, uint32_t& address) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, '.');
  if (parts.size() != 4) return false;
  address = 0;
  for (absl::string_view part : parts) {
    if (part.empty() || part.size() > 3 || !AllDigits(part)) return false;
    if (part.size() > 1 && part.front() == '0') return false;
    uint32_t value = 0;
    for (char c : part) value = value * 10 + static_cast<uint32_t>(c - '0');
    if (value > 255) return false;
    address = address << 8 | value;
  }
  return true;
}

std::string DottedQuad(uint32_t address) {
  return absl::StrCat(address >> 24, ".", (address >> 16) & 0xff, ".", (address >> 8) & 0xff, ".",
                      address & 0xff);
}

// The groups of one side of "::" (or of the whole address without one) into `groups`; the
// last may be a dotted quad, which fills two groups.
bool ParseIpv6Groups(absl::string_view text, bool last_side, std::vector<uint16_t>& groups) {
  if (text.empty()) return true;
  const std::vector<absl::string_view> pieces = absl::StrSplit(text, ':');
  for (size_t i = 0; i < pieces.size(); ++i) {
    const absl::string_view piece = pieces[i];
    if (last_side && i + 1 == pieces.size() && piece.find('.') != absl::string_view::npos) {
      uint32_t v4 = 0;
      if (!ParseDottedQuad(piece, v4)) return false;
      groups.push_back(static_cast<uint16_t>(v4 >> 16));
      groups.push_back(static_cast<uint16_t>(v4 & 0xffff));
      continue;
    }
    if (piece.empty() || piece.size() > 4) return false;
    uint16_t value = 0;
    for (char c : piece) {
      if (!absl::ascii_isxdigit(c)) return false;
      value = static_cast<uint16_t>(value << 4 | HexValue(c));
    }
    groups.push_back(value);
  }
  return true;
}

// RFC 4291 §2.2: eight groups of 1..4 hex digits, one "::" standing for one or more zero
// groups, the last 32 bits possibly a dotted quad.
bool ParseIpv6(absl::string_view text, std::array<uint16_t, 8>& address) {
  const size_t gap = text.find("::");
  std::vector<uint16_t> head;
  std::vector<uint16_t> tail;
  if (gap == absl::string_view::npos) {
    if (!ParseIpv6Groups(text, true, head) || head.size() != 8) return false;
  } else {
    if (!ParseIpv6Groups(text.substr(0, gap), false, head)) return false;
    if (!ParseIpv6Groups(text.substr(gap + 2), true, tail)) return false;
    if (head.size() + tail.size() > 7) return false;
  }
  address.fill(0);
  std::copy(head.begin(), head.end(), address.begin());
  std::copy(tail.begin(), tail.end(), address.end() - tail.size());
  return true;
}

// RFC 5952 §4: lower-case hex without leading zeros, the longest run of two or more zero
// groups (the first of equal runs) as "::".
std::string Ipv6Text(const std::array<uint16_t, 8>& address) {
  int best_start = -1;
  int best_length = 1;
  for (int i = 0; i < 8;) {
    if (address[i] != 0) {
      ++i;
      continue;
    }
    int end = i;
    while (end < 8 && address[end] == 0) ++end;
    if (end - i > best_length) {
      best_start = i;
      best_length = end - i;
    }
    i = end;
  }
  std::string text;
  for (int i = 0; i < 8; ++i) {
    if (i == best_start) {
      text += "::";
      i += best_length - 1;
      continue;
    }
    if (!text.empty() && text.back() != ':') text += ':';
    absl::StrAppend(&text, absl::Hex(address[i]));
  }
  return text;
}

// RFC 3986 §5.2.4 for an absolute path (empty, or starting with '/'): "." and ".." segments
// resolved.
std::string RemoveDotSegments(absl::string_view input) {
  // Drops the output's last segment and the '/' before it.
  auto drop_last_segment = [](std::string& output) {
    const size_t slash = output.rfind('/');
    output.erase(slash == std::string::npos ? 0 : slash);
  };
  std::string output;
  while (!input.empty()) {
    if (absl::StartsWith(input, "/./")) {
      input.remove_prefix(2);
    } else if (input == "/.") {
      input = "/";
    } else if (absl::StartsWith(input, "/../")) {
      input.remove_prefix(3);
      drop_last_segment(output);
    } else if (input == "/..") {
      input = "/";
      drop_last_segment(output);
    } else {
      // The first segment, with its leading '/', moves to the output.
      const size_t end = std::min(input.find('/', 1), input.size());
      absl::StrAppend(&output, input.substr(0, end));
      input.remove_prefix(end);
    }
  }
  return output;
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
  absl::string_view raw_path;
  if (authority_end != absl::string_view::npos) {
    raw_path = rest.substr(authority_end);
    raw_path = raw_path.substr(0, raw_path.find_first_of("?#"));
  }

  // Credentials: "user:pass@" or mev-boost's "0x<relay pubkey>@". The last '@' ends them,
  // as a password may itself contain one.
  if (const size_t at = authority.rfind('@'); at != absl::string_view::npos) {
    authority.remove_prefix(at + 1);
  }

  std::string host;
  absl::string_view port;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) {
      return Invalid(identifier, "has an IPv6 address without its closing ']'");
    }
    const absl::string_view inside = authority.substr(1, close - 1);
    if (inside.empty()) return Invalid(identifier, "has an empty host");
    std::array<uint16_t, 8> address;
    if (!ParseIpv6(inside, address)) {
      return Invalid(identifier, absl::StrCat("has \"[", bounds::QuotePrefix(inside),
                                              "]\", which is not an IPv6 address; accepted: "
                                              "eight groups of 1..4 hex digits separated by "
                                              "':', at most one '::', e.g. [2001:db8::1]"));
    }
    // An IPv4-mapped address (::ffff:a.b.c.d) reaches the IPv4 host a.b.c.d: one relay.
    if (std::all_of(address.begin(), address.begin() + 5, [](uint16_t g) { return g == 0; }) &&
        address[5] == 0xffff) {
      host = DottedQuad(uint32_t{address[6]} << 16 | address[7]);
    } else {
      host = absl::StrCat("[", Ipv6Text(address), "]");
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
    absl::string_view name = authority.substr(0, colon);
    if (colon != absl::string_view::npos) {
      port = authority.substr(colon + 1);
      has_port = true;
    }
    // A fully qualified name's final dot ("relay.example.") names the same host. Only one:
    // "relay.example.." has an empty label and is refused below.
    if (name.size() > 1 && name.back() == '.') name.remove_suffix(1);
    if (name.empty() || name == ".") return Invalid(identifier, "has an empty host");
    if (!IsHostName(name)) {
      return Invalid(identifier, absl::StrCat("has host \"", bounds::QuotePrefix(name),
                                              "\"; accepted: letters, digits, '-', '.', '_', "
                                              "or an IPv6 address in brackets"));
    }
    const std::vector<absl::string_view> labels = absl::StrSplit(name, '.');
    if (std::any_of(labels.begin(), labels.end(),
                    [](absl::string_view label) { return label.empty(); })) {
      return Invalid(identifier,
                     absl::StrCat("has host \"", bounds::QuotePrefix(name),
                                  "\" with an empty label (\"..\", or a leading or second "
                                  "final '.'); write the name as label.label"));
    }
    // A name ending in a number is an IPv4 address to resolvers (no top-level domain is
    // numeric), in whatever spelling inet_aton takes: only the dotted quad is accepted.
    const absl::string_view last = labels.back();
    const bool numeric =
        AllDigits(last) ||
        ((absl::StartsWith(last, "0x") || absl::StartsWith(last, "0X")) &&
         std::all_of(last.begin() + 2, last.end(), [](char c) { return absl::ascii_isxdigit(c); }));
    uint32_t v4 = 0;
    if (numeric && !ParseDottedQuad(name, v4)) {
      return Invalid(identifier, absl::StrCat("has host \"", bounds::QuotePrefix(name),
                                              "\", which is not a dotted-quad IPv4 address; ",
                                              kWriteDottedQuad));
    }
    host = absl::AsciiStrToLower(name);
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

  // RFC 3986 §6.2.2.2: an escaped unreserved character is that character, and the other
  // escapes are written in upper case. Every other byte that a path cannot carry as it is
  // (non-ASCII, '"', '\\', '<', '{', ...) is refused rather than escaped, so that an
  // identifier is never longer than its input and is always printable ASCII.
  std::string path;
  for (size_t i = 0; i < raw_path.size(); ++i) {
    const char c = raw_path[i];
    if (c == '%') {
      if (i + 2 >= raw_path.size() || !absl::ascii_isxdigit(raw_path[i + 1]) ||
          !absl::ascii_isxdigit(raw_path[i + 2])) {
        return Invalid(identifier,
                       absl::StrCat("has a malformed percent-encoding \"",
                                    bounds::QuotePrefix(raw_path.substr(i, 3)),
                                    "\" in its path; accepted: '%' and two hex digits (write "
                                    "'%' itself as %25)"));
      }
      const char decoded =
          static_cast<char>(HexValue(raw_path[i + 1]) << 4 | HexValue(raw_path[i + 2]));
      if (IsUnreserved(decoded)) {
        path += decoded;
      } else {
        absl::StrAppend(&path, "%", absl::AsciiStrToUpper(raw_path.substr(i + 1, 2)));
      }
      i += 2;
      continue;
    }
    if (!IsPathCharacter(c)) {
      const std::string hex =
          absl::AsciiStrToUpper(absl::StrCat(absl::Hex(static_cast<uint8_t>(c), absl::kZeroPad2)));
      return Invalid(identifier, absl::StrCat("has byte 0x", hex,
                                              " in its path, which a URL carries "
                                              "percent-encoded; write it as %",
                                              hex));
    }
    path += c;
  }
  // RFC 3986 §6.2.2.3, then "host/" and "host//" are the same endpoint as "host".
  path = RemoveDotSegments(path);
  while (!path.empty() && path.back() == '/') path.pop_back();

  // Rebuilt from the port's value, so that "080" and "80" are one spelling.
  std::string normalized = absl::StrCat(scheme, "://", host);
  if (has_port && port_number != default_port) absl::StrAppend(&normalized, ":", port_number);
  absl::StrAppend(&normalized, path);
  return normalized;
}

}  // namespace breaker::core
