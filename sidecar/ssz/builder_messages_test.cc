#include "sidecar/ssz/builder_messages.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/ssz/test_blocks.h"
#include "tests/support/status_matchers.h"

namespace breaker::sidecar::ssz {
namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::ElementsAre;

std::string Key(int n) { return absl::StrFormat("0x%096x", n); }

TEST(BuilderMessagesTest, TheLayoutsOfTheSpecs) {
  // ExecutionPayloadBid: 4 roots and hashes, an address, 5 uint64s, an offset, a root.
  EXPECT_FALSE(IsFixedSize(SignedExecutionPayloadBid(Preset::kMainnet)));
  EXPECT_EQ(SignedBidSsz(1, 2).size(), 4 + 96 + 4 * 32 + 20 + 5 * 8 + 4 + 32u);
  EXPECT_EQ(FixedSize(SignedValidatorRegistrationV1()), 180u);
}

TEST(BuilderMessagesTest, TheBuilderIndexOfAGloasBlocksBidAsChainsafeEncodedIt) {
  for (bool minimal : {false, true}) {
    const GloasTestBlock block = ReadGloasTestBlock(minimal);
    const Preset& preset = minimal ? Preset::kMinimal : Preset::kMainnet;
    absl::StatusOr<uint64_t> builder = BlockBidBuilderIndexFromSsz(block.ssz, preset);
    ASSERT_THAT(builder, IsOk());
    EXPECT_EQ(*builder, block.builder_index);
    // The other preset's sync aggregate moves every offset of the body.
    EXPECT_THAT(
        BlockBidBuilderIndexFromSsz(block.ssz, minimal ? Preset::kMainnet : Preset::kMinimal),
        StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(BlockBidBuilderIndexFromSsz(block.ssz.substr(0, block.ssz.size() / 2), preset),
                StatusIs(absl::StatusCode::kInvalidArgument));
  }
  EXPECT_THAT(BlockBidBuilderIndexFromSsz("", Preset::kMainnet),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(BuilderMessagesTest, ABidsBuilderIndexWithAndWithoutCommitments) {
  absl::StatusOr<uint64_t> builder = BidBuilderIndexFromSsz(SignedBidSsz(42, 5), Preset::kMainnet);
  ASSERT_THAT(builder, IsOk());
  EXPECT_EQ(*builder, 42u);
  builder = BidBuilderIndexFromSsz(SignedBidSsz(43, 5, 2), Preset::kMainnet);
  ASSERT_THAT(builder, IsOk());
  EXPECT_EQ(*builder, 43u);
  const std::string bid = SignedBidSsz(42, 5);
  EXPECT_THAT(BidBuilderIndexFromSsz(bid.substr(0, bid.size() - 1), Preset::kMainnet),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(BidBuilderIndexFromSsz("", Preset::kMainnet),
              StatusIs(absl::StatusCode::kInvalidArgument));
  // The message's offset out of place.
  std::string moved = bid;
  moved[0] = 99;
  EXPECT_THAT(BidBuilderIndexFromSsz(moved, Preset::kMainnet),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(BuilderMessagesTest, RegistrationsKeysInOrder) {
  absl::StatusOr<std::vector<std::string>> keys =
      RegistrationPubkeysFromSsz(RegistrationSsz(Key(1)) + RegistrationSsz(Key(2)));
  ASSERT_THAT(keys, IsOk());
  EXPECT_THAT(*keys, ElementsAre(Key(1), Key(2)));
  keys = RegistrationPubkeysFromSsz("");
  ASSERT_THAT(keys, IsOk());
  EXPECT_THAT(*keys, ElementsAre());
  EXPECT_THAT(RegistrationPubkeysFromSsz(RegistrationSsz(Key(1)) + "x"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace breaker::sidecar::ssz
