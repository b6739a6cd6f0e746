#include "core/relay_id.h"

#include <string>

#include "absl/status/status.h"
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

}  // namespace
}  // namespace breaker::core
