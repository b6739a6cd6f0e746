#include "core/input_bounds.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::core::bounds {
namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

TEST(CheckMaxBytesTest, AcceptsTheBoundAndRefusesOnePastItNamingFieldLengthAndBound) {
  EXPECT_THAT(CheckMaxBytes("reason", std::string(1024, 'a'), 1024), IsOk());
  EXPECT_THAT(CheckMaxBytes("reason", std::string(1025, 'a'), 1024),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("reason is 1025 bytes"), HasSubstr("at most 1024 bytes"))));
}

TEST(CheckMaxBytesTest, QuotesOnlyAShortEscapedPrefix) {
  const std::string hostile = "\n[fake log line]" + std::string(200000, 'x');
  const absl::Status status = CheckMaxBytes("hello.network", hostile, kMaxNetworkBytes);
  EXPECT_THAT(std::string(status.message()), SizeIs(::testing::Lt(200)));
  EXPECT_THAT(std::string(status.message()), HasSubstr("\\n[fake log line]"));
  EXPECT_THAT(std::string(status.message()), Not(HasSubstr("\n")));
}

TEST(CheckExactBytesTest, PubkeyIsExactlyFortyEightBytesOrEmpty) {
  EXPECT_THAT(CheckExactBytes("pubkey", "", kPubkeyBytes, /*empty_ok=*/true), IsOk());
  EXPECT_THAT(CheckExactBytes("pubkey", std::string(48, 'k'), kPubkeyBytes, true), IsOk());
  EXPECT_THAT(CheckExactBytes("pubkey", std::string(47, 'k'), kPubkeyBytes, true),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pubkey is 47 bytes")));
  EXPECT_THAT(CheckExactBytes("root", "", kBlockRootBytes, /*empty_ok=*/false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("exactly 32 bytes")));
}

TEST(CheckNodeIdTest, PrintableAsciiUpToTheBound) {
  EXPECT_THAT(CheckNodeId("node_id", "bn-eu-1"), IsOk());
  EXPECT_THAT(CheckNodeId("node_id", std::string(kMaxNodeIdBytes, 'n')), IsOk());
  EXPECT_THAT(CheckNodeId("node_id", std::string(kMaxNodeIdBytes + 1, 'n')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("129 bytes")));
  EXPECT_THAT(CheckNodeId("node_id", ""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  EXPECT_THAT(CheckNodeId("node_id", "bn\nINFO forged"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("0x0a at offset 2"), Not(HasSubstr("\n")))));
  EXPECT_THAT(CheckNodeId("node_id", "n\xc3\xa9"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("printable ASCII")));
}

TEST(CheckIdentifierTest, OneSpellingPerIdentifier) {
  EXPECT_THAT(CheckIdentifier("chain.network", "my net", kMaxNetworkBytes), IsOk());
  // ' ', ' bn-sp' and 'bn-sp' would be three nodes that read as one, or as none.
  for (const char* spaced : {" ", " bn-sp", "bn-sp "}) {
    EXPECT_THAT(CheckIdentifier("hello.node_id", spaced, kMaxNodeIdBytes),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("hello.node_id"), HasSubstr("with a space"))))
        << "'" << spaced << "'";
  }
  EXPECT_THAT(CheckIdentifier("chain.network", std::string("main\0net", 8), kMaxNetworkBytes),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("chain.network"), HasSubstr("0x00 at offset 4"))));
  EXPECT_THAT(
      CheckIdentifier("chain.network", std::string(kMaxNetworkBytes + 1, 'n'), kMaxNetworkBytes),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("65 bytes")));
}

TEST(CheckMaxCountTest, NamesTheCount) {
  EXPECT_THAT(CheckMaxCount("trusted_builders", 1024, kMaxListedBuilders), IsOk());
  EXPECT_THAT(CheckMaxCount("trusted_builders", 1025, kMaxListedBuilders),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("trusted_builders lists 1025 entries; accepted: at most 1024")));
}

TEST(QuoteTest, ForLogEscapesAndCuts) {
  EXPECT_EQ(ForLog("a\nb"), "a\\nb");
  EXPECT_THAT(ForLog(std::string(1000, 'z')), SizeIs(160 + 3));
}

TEST(TruncateTest, CutsAtACharacterBoundary) {
  EXPECT_EQ(Truncate("short", 160), "short");
  // "é" is two bytes; a cut inside it would leave invalid UTF-8.
  const std::string text =
      "ab\xc3\xa9"
      "cdef";
  EXPECT_EQ(Truncate(text, 6), "ab...");
  EXPECT_EQ(Truncate(std::string(500, 'r'), 160).size(), 160u);
}

}  // namespace
}  // namespace breaker::core::bounds
