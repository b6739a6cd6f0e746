#include "core/relay_id.h"

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::core {
namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// The normalized form of `identifier`, or the error message prefixed with "error: ".
std::string Norm(absl::string_view identifier) {
  absl::StatusOr<std::string> normalized = NormalizeRelayId(identifier);
  if (!normalized.ok()) return "error: " + std::string(normalized.status().message());
  return *normalized;
}

TEST(NormalizeRelayId, HostPortMeansHttp) {
  EXPECT_EQ(Norm("Relay.Example.COM:18550"), "http://relay.example.com:18550");
}

TEST(NormalizeRelayId, BareHostMeansHttp) {
  EXPECT_EQ(Norm("relay.example.com"), "http://relay.example.com");
  EXPECT_EQ(Norm("localhost"), "http://localhost");
}

TEST(NormalizeRelayId, LowerCasesSchemeAndHostAndDropsMevBoostPubkey) {
  EXPECT_EQ(Norm("HTTPS://0xabc@Relay.example.com/"), "https://relay.example.com");
}

TEST(NormalizeRelayId, DropsDefaultPortQueryFragmentAndTrailingSlash) {
  EXPECT_EQ(Norm("https://relay.example.com:443/path/?x=1#f"), "https://relay.example.com/path");
}

TEST(NormalizeRelayId, DropsHttpDefaultPort) {
  EXPECT_EQ(Norm("http://host:80"), "http://host");
  EXPECT_EQ(Norm("host:80"), "http://host");
}

TEST(NormalizeRelayId, KeepsOtherSchemesDefaultPort) {
  EXPECT_EQ(Norm("http://host:443"), "http://host:443");
  EXPECT_EQ(Norm("https://host:80"), "https://host:80");
}

TEST(NormalizeRelayId, DropsCredentialsKeepsPathCase) {
  EXPECT_EQ(Norm("http://user:pw@host:8080/Path"), "http://host:8080/Path");
}

TEST(NormalizeRelayId, CredentialsEndAtTheLastAt) {
  EXPECT_EQ(Norm("http://user:p@ss@host"), "http://host");
}

TEST(NormalizeRelayId, KeepsIpv6Literal) {
  EXPECT_EQ(Norm("http://[::1]:8080"), "http://[::1]:8080");
  EXPECT_EQ(Norm("https://[2001:DB8::1]:443/"), "https://[2001:db8::1]");
  EXPECT_EQ(Norm("[::1]:18550"), "http://[::1]:18550");
}

TEST(NormalizeRelayId, KeepsIpv4Literal) {
  EXPECT_EQ(Norm("127.0.0.1:18550"), "http://127.0.0.1:18550");
}

TEST(NormalizeRelayId, QueryOrFragmentWithoutPath) {
  EXPECT_EQ(Norm("http://host?x=1"), "http://host");
  EXPECT_EQ(Norm("http://host#frag"), "http://host");
  EXPECT_EQ(Norm("http://host:8080?x=/y/"), "http://host:8080");
}

TEST(NormalizeRelayId, SchemeInsideQueryIsNotAScheme) {
  EXPECT_EQ(Norm("host/relay?next=ftp://x"), "http://host/relay");
}

TEST(NormalizeRelayId, RemovesEveryTrailingSlash) {
  EXPECT_EQ(Norm("http://host//"), "http://host");
  EXPECT_EQ(Norm("http://host/a/b//"), "http://host/a/b");
}

TEST(NormalizeRelayId, LeadingZerosInPortAreOneSpelling) {
  EXPECT_EQ(Norm("http://host:08080"), "http://host:8080");
  EXPECT_EQ(Norm("http://host:0080"), "http://host");
}

TEST(NormalizeRelayId, PortBoundaries) {
  EXPECT_EQ(Norm("http://host:1"), "http://host:1");
  EXPECT_EQ(Norm("http://host:65535"), "http://host:65535");
}

TEST(NormalizeRelayId, IsIdempotent) {
  for (absl::string_view input :
       {"Relay.Example.COM:18550", "HTTPS://0xabc@Relay.example.com/", "http://[::1]:8080",
        "https://relay.example.com:443/path/?x=1#f", "http://user:pw@host:8080/Path"}) {
    const std::string once = Norm(input);
    EXPECT_EQ(Norm(once), once) << input;
  }
}

TEST(NormalizeRelayId, SameEndpointSpelledManyWaysIsOneIdentifier) {
  for (absl::string_view input :
       {"relay.example.com", "RELAY.example.com:80", "http://relay.example.com/",
        "HTTP://me:secret@relay.example.com:80/?q#f", "http://0xdeadbeef@Relay.Example.Com"}) {
    EXPECT_EQ(Norm(input), "http://relay.example.com") << input;
  }
}

TEST(NormalizeRelayId, FinalDotOfAFullyQualifiedNameIsTheSameHost) {
  EXPECT_EQ(Norm("https://relay.example./"), "https://relay.example");
  EXPECT_EQ(Norm("relay.example.:18550"), "http://relay.example:18550");
  EXPECT_THAT(NormalizeRelayId("http://./"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty host")));
}

TEST(NormalizeRelayId, LengthIsBoundedAndTheInputIsNotEchoed) {
  const std::string at_bound = "https://r.example/" + std::string(512 - 18, 'p');
  ASSERT_EQ(at_bound.size(), 512u);
  EXPECT_THAT(NormalizeRelayId(at_bound), IsOk());
  const std::string past = at_bound + "p";
  const absl::StatusOr<std::string> refused = NormalizeRelayId(past);
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument,
                                AllOf(HasSubstr("513 bytes"), HasSubstr("at most 512"))));
  EXPECT_LT(refused.status().message().size(), 160u);
}

TEST(NormalizeRelayId, EmptyIsInvalid) {
  EXPECT_THAT(NormalizeRelayId(""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is empty")));
}

TEST(NormalizeRelayId, BlankIsInvalid) {
  EXPECT_THAT(NormalizeRelayId("   "),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"   \""), HasSubstr("whitespace"))));
}

TEST(NormalizeRelayId, WhitespaceIsInvalid) {
  EXPECT_THAT(NormalizeRelayId("http:// host"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"http:// host\""), HasSubstr("whitespace"))));
  EXPECT_THAT(NormalizeRelayId(" http://host"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(NormalizeRelayId("http://host\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("host\\n")));
}

TEST(NormalizeRelayId, UnknownSchemeIsInvalid) {
  EXPECT_THAT(NormalizeRelayId("ftp://x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"ftp://x\""), HasSubstr("scheme \"ftp\""),
                             HasSubstr("http, https"))));
  EXPECT_THAT(NormalizeRelayId("ws://x"), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(NormalizeRelayId, EmptyHostIsInvalid) {
  for (absl::string_view input : {"http://", "https:///path", "http://user@", "http://:8080",
                                  "http://[]:8080", "//host", ":18550"}) {
    EXPECT_THAT(NormalizeRelayId(input),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty host")))
        << input;
  }
}

TEST(NormalizeRelayId, PortZeroIsInvalid) {
  EXPECT_THAT(NormalizeRelayId("http://host:0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"http://host:0\""), HasSubstr("1..65535"))));
}

TEST(NormalizeRelayId, PortAboveRangeIsInvalid) {
  EXPECT_THAT(NormalizeRelayId("http://host:99999"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"http://host:99999\""), HasSubstr("1..65535"))));
  EXPECT_THAT(NormalizeRelayId("http://host:65536"), StatusIs(absl::StatusCode::kInvalidArgument));
  // Would wrap a 32-bit parser back into range.
  EXPECT_THAT(NormalizeRelayId("http://host:4294967376"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(NormalizeRelayId, NonNumericPortIsInvalid) {
  EXPECT_THAT(NormalizeRelayId("http://host:abc"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"http://host:abc\""), HasSubstr("not a number"))));
  EXPECT_THAT(NormalizeRelayId("http://host:-1"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(NormalizeRelayId("http://host:+80"), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(NormalizeRelayId, EmptyPortIsInvalid) {
  EXPECT_THAT(NormalizeRelayId("http://host:"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty port")));
}

TEST(NormalizeRelayId, UnbracketedIpv6IsInvalid) {
  EXPECT_THAT(NormalizeRelayId("http://::1:8080"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(NormalizeRelayId("http://host:80:81"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("brackets")));
}

TEST(NormalizeRelayId, MalformedIpv6IsInvalid) {
  EXPECT_THAT(NormalizeRelayId("http://[::1"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(NormalizeRelayId("http://[::1]x"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(NormalizeRelayId("http://[::g]"), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(NormalizeRelayId, EscapedHostIsInvalid) {
  // Accepting escapes would let "%72elay" and "relay" be two relays.
  EXPECT_THAT(NormalizeRelayId("http://%72elay.example.com"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("host")));
}

TEST(NormalizeRelayId, ValidInputsAreOk) {
  EXPECT_THAT(NormalizeRelayId("https://relay.example.com"), IsOk());
}

// Each group: the identifier, then spellings of the same endpoint that must normalize to it.
TEST(NormalizeRelayId, SpellingsOfOneEndpointCollapse) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> groups = {
      // RFC 5952: lower case, no leading zeros, the longest zero run as "::".
      {"http://[::1]", {"[::1]", "[0::1]", "[0:0:0:0:0:0:0:1]", "[0000::0001]", "[::0:1]"}},
      {"http://[2001:db8::1]:8080",
       {"[2001:DB8::1]:8080", "[2001:0db8:0:0:0:0:0:1]:8080", "[2001:db8:0::0:1]:08080"}},
      // The first of two equally long runs; a single zero group is not compressed.
      {"http://[2001:db8::1:0:0:1]", {"[2001:db8:0:0:1:0:0:1]", "[2001:db8::1:0:0:1]"}},
      {"http://[2001:0:1:2:3:4:5:6]", {"[2001::1:2:3:4:5:6]", "[2001:0000:1:2:3:4:5:6]"}},
      {"http://[1::]", {"[1:0:0:0:0:0:0:0]", "[1::0]"}},
      {"http://[::]", {"[0:0:0:0:0:0:0:0]", "[::0]", "[0::]"}},
      // The last 32 bits written dotted are the same groups.
      {"http://[2001:db8::102:304]", {"[2001:db8::1.2.3.4]"}},
      // IPv4-mapped, dotted or hex: the IPv4 host it reaches.
      {"http://127.0.0.1:18550",
       {"127.0.0.1:18550", "[::ffff:127.0.0.1]:18550", "[::ffff:7f00:1]:18550",
        "[0:0:0:0:0:FFFF:7F00:0001]:18550", "http://[::ffff:127.0.0.1]:18550/"}},
      // Dot segments (RFC 3986 §5.2.4).
      {"http://host", {"http://host/a/..", "http://host/.", "http://host/./", "http://host/.."}},
      {"http://host/a/c",
       {"http://host/a/b/../c", "http://host/a/./c", "http://host/./a/c/.", "http://host/../a/c",
        "http://host/a/%2E%2e/a/c", "http://host/a/%2e/c"}},
      // Percent-encoding: unreserved characters decoded, the others' hex upper case.
      {"http://host/~me/a-b_c.d", {"http://host/%7Eme/a%2Db%5Fc%2Ed", "http://host/%7eme/a-b_c.d"}},
      {"http://host/a%2Fb", {"http://host/a%2fb", "http://host/a%2Fb/"}},
      {"http://host/A%C3%A9", {"http://host/%41%c3%a9"}},
      // A host name's one final dot.
      {"https://relay.example.com",
       {"https://relay.example.com.", "https://RELAY.example.com.:443/",
        "https://relay.example.com.:0443"}},
  };
  for (const auto& [canonical, spellings] : groups) {
    EXPECT_EQ(Norm(canonical), canonical);
    for (const std::string& spelling : spellings) {
      EXPECT_EQ(Norm(spelling), canonical) << spelling;
    }
  }
}

TEST(NormalizeRelayId, AmbiguousSpellingsAreRefused) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> refused = {
      // inet_aton reads these as 127.0.0.1 (a leading zero as octal): one spelling only.
      {"dotted-quad",
       {"127.000.000.001", "0127.0.0.1", "2130706433", "127.1", "127.0.1", "0x7f.0.0.1",
        "0x7f000001", "127.0.0.256", "1.2.3.4.5", "relay.123", "host.0x1f", "127.0.0.01"}},
      // Empty labels, among them two final dots.
      {"empty label", {"relay.example.com..", "relay..example.com", ".relay.example.com"}},
      {"malformed percent-encoding",
       {"http://host/%zz", "http://host/%4", "http://host/a%", "http://host/%g1"}},
      {"percent-encoded",
       {"http://host/\xc3\xa9", "http://host/a\"b", "http://host/a\\b", "http://host/a<b",
        "http://host/a{b", "http://host/a|b", "http://host/a^b", "http://host/a[b",
        "http://host/\xe2\x80\xae"}},
      {"not an IPv6 address",
       {"[::1::2]", "[1:2:3:4:5:6:7:8:9]", "[1:2:3:4:5:6:7]", "[12345::1]", "[:1::2]", "[1::2:]",
        "[1:::2]", "[::1.2.3]", "[::01.2.3.4]", "[1.2.3.4::]", "[1:2:3:4:5:6:7::8]",
        "[::ffff:256.0.0.1]"}},
  };
  for (const auto& [what, inputs] : refused) {
    for (const std::string& input : inputs) {
      EXPECT_THAT(NormalizeRelayId(input),
                  StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(what)))
          << input;
    }
  }
  EXPECT_THAT(NormalizeRelayId("127.1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"127.1\""), HasSubstr("four decimal numbers"))));
  EXPECT_THAT(NormalizeRelayId("http://host/a\xe2"
                               "b"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("0xE2"), HasSubstr("write it as %E2"))));
  EXPECT_THAT(
      NormalizeRelayId("http://host/%zz"),
      StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("\"%zz\""), HasSubstr("%25"))));
}

TEST(NormalizeRelayId, DecimalIpv4AndNamesWithDigitsStayAccepted) {
  EXPECT_EQ(Norm("10.0.0.255:18550"), "http://10.0.0.255:18550");
  EXPECT_EQ(Norm("0.0.0.0"), "http://0.0.0.0");
  EXPECT_EQ(Norm("127.0.0.1."), "http://127.0.0.1");
  EXPECT_EQ(Norm("01.relay.example"), "http://01.relay.example");
  EXPECT_EQ(Norm("123.example"), "http://123.example");
  EXPECT_EQ(Norm("relay.0x"),
            "error: relay identifier \"relay.0x\" has host \"relay.0x\", "
            "which is not a dotted-quad IPv4 address; write an IPv4 address as "
            "four decimal numbers 0..255 without leading zeros, e.g. 127.0.0.1");
}

TEST(NormalizeRelayId, PathKeepsItsCaseAndReservedCharacters) {
  EXPECT_EQ(Norm("http://host/A/b;v=1/c:d@e!$&'()*+,="), "http://host/A/b;v=1/c:d@e!$&'()*+,=");
  // "..." is a name, not a dot segment; an empty segment inside the path stays.
  EXPECT_EQ(Norm("http://host/.../a//b"), "http://host/.../a//b");
  EXPECT_EQ(Norm("http://host/a//../b"), "http://host/a/b");
}

// --- Generated spellings -------------------------------------------------------------------

// Generates endpoints, the canonical identifier of each, and random spellings of it.
class Spellings {
 public:
  explicit Spellings(uint32_t seed) : random_(seed) {}

  // A random endpoint: `canonical` is what every spelling must normalize to.
  void NewEndpoint() {
    https_ = Chance(2);
    host_kind_ = Below(4);
    switch (host_kind_) {
      case 0: {  // a name
        name_.clear();
        const int labels = 1 + Below(3);
        for (int l = 0; l < labels; ++l) {
          if (l > 0) name_ += '.';
          const int length = 1 + Below(8);
          for (int i = 0; i < length; ++i) name_ += Pick("abcdefghijklmnopqrstuvwxyz0123456789-_");
        }
        // A last label of digits only would be an IPv4 spelling.
        name_ += 'r';
        break;
      }
      case 1:  // IPv4
        v4_ = static_cast<uint32_t>(random_());
        break;
      case 2:  // IPv6 with runs of zeros, neither IPv4-mapped nor IPv4-compatible
        do {
          for (uint16_t& group : v6_) group = Chance(2) ? 0 : static_cast<uint16_t>(Below(0x10000));
        } while (IsMappedOrCompatible());
        break;
      case 3:  // IPv4-mapped
        v4_ = static_cast<uint32_t>(random_());
        v6_ = {0,
               0,
               0,
               0,
               0,
               0xffff,
               static_cast<uint16_t>(v4_ >> 16),
               static_cast<uint16_t>(v4_ & 0xffff)};
        break;
    }
    port_ = Chance(3) ? 0 : 1 + Below(65535);
    segments_.clear();
    const int count = Below(4);
    for (int s = 0; s < count; ++s) {
      std::string segment;
      const int length = 1 + Below(6);
      for (int i = 0; i < length; ++i) {
        // Unreserved characters and sub-delimiters as they are, other bytes escaped.
        if (Chance(5)) {
          segment += Escaped(Pick("/?#[] %\"<>\x01\xc3\xe2\xff"));
        } else {
          segment += Pick("abcXYZ019-._~!$&'()*+,;=:@");
        }
      }
      if (segment == "." || segment == "..") segment += 'x';
      segments_.push_back(segment);
    }

    const uint32_t default_port = https_ ? 443 : 80;
    canonical = absl::StrCat(https_ ? "https" : "http", "://", CanonicalHost());
    if (port_ != 0 && static_cast<uint32_t>(port_) != default_port) {
      absl::StrAppend(&canonical, ":", port_);
    }
    for (const std::string& segment : segments_) absl::StrAppend(&canonical, "/", segment);
  }

  // One random spelling of the current endpoint.
  std::string Spelling() {
    std::string text;
    if (!https_ && Chance(2)) {
      // No scheme: http is meant.
    } else {
      text = absl::StrCat(RandomCase(https_ ? "https" : "http"), "://");
    }
    switch (Below(4)) {
      case 0:
        break;
      case 1:
        text += "user:pw@";
        break;
      case 2:
        text += "0xabc@";
        break;
      case 3:
        text += "a@b:c@";
        break;
    }
    text += HostSpelling();
    const int default_port = https_ ? 443 : 80;
    const int port = port_ != 0 ? port_ : (Chance(3) ? default_port : 0);
    if (port != 0) absl::StrAppend(&text, ":", std::string(Below(3), '0'), port);
    for (const std::string& segment : segments_) {
      // Dot segments that resolve away.
      if (Chance(4)) text += Chance(2) ? "/." : "/%2E";
      if (Chance(4))
        text += absl::StrCat("/", Chance(2) ? "zz" : segment, Chance(2) ? "/.." : "/.%2e");
      text += '/';
      text += SegmentSpelling(segment);
    }
    if (Chance(4)) text += Chance(2) ? "/." : "/x/..";
    text.append(Below(3), '/');
    if (Chance(4)) text += "?q=/a/../b%zz";
    if (Chance(4)) text += "#frag%";
    return text;
  }

 private:
  int Below(int n) { return static_cast<int>(random_() % static_cast<uint32_t>(n)); }
  bool Chance(int n) { return Below(n) == 0; }
  char Pick(absl::string_view chars) { return chars[Below(static_cast<int>(chars.size()))]; }

  static std::string Escaped(char c) { return absl::StrFormat("%%%02X", static_cast<uint8_t>(c)); }

  std::string RandomCase(absl::string_view text) {
    std::string out(text);
    for (char& c : out) c = Chance(2) ? absl::ascii_toupper(c) : absl::ascii_tolower(c);
    return out;
  }

  bool IsMappedOrCompatible() const {
    for (int i = 0; i < 5; ++i) {
      if (v6_[i] != 0) return false;
    }
    return v6_[5] == 0 || v6_[5] == 0xffff;
  }

  static std::string Dotted(uint32_t v4) {
    return absl::StrCat(v4 >> 24, ".", (v4 >> 16) & 0xff, ".", (v4 >> 8) & 0xff, ".", v4 & 0xff);
  }

  // RFC 5952's text, from the C library's formatter (which writes IPv4-mapped and
  // IPv4-compatible addresses dotted, hence none of those here).
  std::string CanonicalHost() const {
    switch (host_kind_) {
      case 0:
        return absl::AsciiStrToLower(name_);
      case 2: {
        std::array<uint8_t, 16> bytes;
        for (int i = 0; i < 8; ++i) {
          bytes[2 * i] = static_cast<uint8_t>(v6_[i] >> 8);
          bytes[2 * i + 1] = static_cast<uint8_t>(v6_[i] & 0xff);
        }
        char text[INET6_ADDRSTRLEN];
        EXPECT_NE(inet_ntop(AF_INET6, bytes.data(), text, sizeof(text)), nullptr);
        return absl::StrCat("[", text, "]");
      }
      default:
        return Dotted(v4_);
    }
  }

  std::string HostSpelling() {
    switch (host_kind_) {
      case 0:
        return absl::StrCat(RandomCase(name_), Chance(3) ? "." : "");
      case 1:
        return absl::StrCat(Dotted(v4_), Chance(4) ? "." : "");
      default:
        return absl::StrCat("[", Ipv6Spelling(), "]");
    }
  }

  // Leading zeros, case, any one run of zero groups compressed or none, the last 32 bits
  // dotted or not.
  std::string Ipv6Spelling() {
    const bool dotted = Chance(3);
    const int groups = dotted ? 6 : 8;
    std::vector<std::pair<int, int>> runs;  // [start, end) of zero groups
    for (int i = 0; i < groups;) {
      if (v6_[i] != 0) {
        ++i;
        continue;
      }
      int end = i;
      while (end < groups && v6_[end] == 0) ++end;
      // Any part of the run may be the compressed one.
      const int from = i + Below(end - i);
      runs.emplace_back(from, from + 1 + Below(end - from));
      i = end;
    }
    std::pair<int, int> gap = {-1, -1};
    if (!runs.empty() && !Chance(4)) gap = runs[Below(static_cast<int>(runs.size()))];
    std::string text;
    for (int i = 0; i < groups; ++i) {
      if (i == gap.first) {
        text += "::";
        i = gap.second - 1;
        continue;
      }
      if (!text.empty() && text.back() != ':') text += ':';
      std::string hex = absl::StrCat(absl::Hex(v6_[i]));
      hex.insert(0, Below(5 - static_cast<int>(hex.size())), '0');
      text += RandomCase(hex);
    }
    if (dotted) {
      if (!text.empty() && text.back() != ':') text += ':';
      text += Dotted(uint32_t{v6_[6]} << 16 | v6_[7]);
    }
    return text;
  }

  // Unreserved characters escaped at random, every escape's hex in random case.
  std::string SegmentSpelling(absl::string_view segment) {
    std::string text;
    for (size_t i = 0; i < segment.size(); ++i) {
      if (segment[i] == '%') {
        text += '%';
        text += RandomCase(segment.substr(i + 1, 2));
        i += 2;
      } else if ((absl::ascii_isalnum(segment[i]) || absl::StrContains("-._~", segment[i])) &&
                 Chance(3)) {
        text += RandomCase(Escaped(segment[i]));
      } else {
        text += segment[i];
      }
    }
    return text;
  }

  std::mt19937 random_;
  bool https_ = false;
  int host_kind_ = 0;
  std::string name_;
  uint32_t v4_ = 0;
  std::array<uint16_t, 8> v6_{};
  int port_ = 0;
  std::vector<std::string> segments_;

 public:
  std::string canonical;
};

bool PrintableAscii(absl::string_view text) {
  for (char c : text) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

TEST(NormalizeRelayIdProperty, EverySpellingOfAnEndpointIsOneIdempotentIdentifier) {
  Spellings spellings(20260101);
  for (int endpoint = 0; endpoint < 3000; ++endpoint) {
    spellings.NewEndpoint();
    ASSERT_EQ(Norm(spellings.canonical), spellings.canonical);
    for (int i = 0; i < 8; ++i) {
      const std::string spelling = spellings.Spelling();
      const absl::StatusOr<std::string> once = NormalizeRelayId(spelling);
      ASSERT_THAT(once, IsOk()) << spelling;
      ASSERT_EQ(*once, spellings.canonical) << spelling;
      ASSERT_EQ(Norm(*once), *once) << spelling;
      ASSERT_LE(once->size(), spelling.size() + 7) << spelling;
      ASSERT_TRUE(PrintableAscii(*once)) << spelling;
    }
  }
}

// Random strings of URL pieces (a scheme, an authority, a path, a query), many refused:
// whatever is accepted normalizes to itself, is printable ASCII and at most "http://" longer
// than the input.
TEST(NormalizeRelayIdProperty, WhateverIsAcceptedIsIdempotent) {
  const std::vector<std::string> schemes = {"", "", "http://", "HTTPS://", "ftp://", "//"};
  const std::vector<std::string> authority = {"0",
                                              "00",
                                              "1",
                                              "127",
                                              "255",
                                              "256",
                                              "0x7f",
                                              ".",
                                              "a",
                                              "Z",
                                              "relay",
                                              "-",
                                              "_",
                                              "user:pw@",
                                              "a@",
                                              ":80",
                                              ":443",
                                              ":08080",
                                              "[::1]",
                                              "[0:0::1]",
                                              "[::ffff:1.2.3.4]",
                                              "[::FFFF:102:304]"};
  const std::vector<std::string> path = {
      "/", "//", "/.", "/..", ".", "..", "%2e", "%2E", "%7e", "%2f", "%C3", "~",    "a",
      "Z", "-",  "_",  "@",   ":", "'",  "!",   ";",   "=",   "/a",  "/b/", "/.%2E"};
  // Pieces that are often refused, each piece drawn from them once in 16.
  const std::vector<std::string> hostile = {
      "[", "]", "::", ":", "ffff", "@", ":0", "%", "%zz", "%4", "\xc3\xa9", "\x1b", " ", "\\", "^"};
  const std::vector<std::string> tails = {"", "", "?", "#", "?x=/../%zz", "#%"};
  std::mt19937 random(7);
  auto pick = [&](const std::vector<std::string>& from) -> const std::string& {
    const std::vector<std::string>& chosen = random() % 16 == 0 ? hostile : from;
    return chosen[random() % chosen.size()];
  };
  int accepted = 0;
  for (int i = 0; i < 100000; ++i) {
    std::string input = pick(schemes);
    const int authority_pieces = 1 + static_cast<int>(random() % 5);
    for (int p = 0; p < authority_pieces; ++p) input += pick(authority);
    const int path_pieces = static_cast<int>(random() % 10);
    for (int p = 0; p < path_pieces; ++p) input += pick(path);
    input += pick(tails);
    const absl::StatusOr<std::string> once = NormalizeRelayId(input);
    if (!once.ok()) {
      ASSERT_EQ(once.status().code(), absl::StatusCode::kInvalidArgument) << input;
      continue;
    }
    ++accepted;
    ASSERT_EQ(Norm(*once), *once) << input;
    ASSERT_LE(once->size(), input.size() + 7) << input;
    ASSERT_TRUE(PrintableAscii(*once)) << input;
  }
  // Not a vacuous property: thousands of the inputs are identifiers.
  EXPECT_GT(accepted, 5000);
}

}  // namespace
}  // namespace breaker::core
