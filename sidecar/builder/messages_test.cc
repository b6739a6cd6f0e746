#include "sidecar/builder/messages.h"

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/ssz/test_blocks.h"

namespace breaker::sidecar {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using ssz::BlindedBlockJson;

const std::string kHash1 = "0x" + std::string(64, '1');

// A getExecutionPayloadBid answer naming `builder_index` (JSON text, quoted or not).
std::string BidJson(const std::string& builder_index) {
  return "{\"version\":\"gloas\",\"data\":{\"message\":{\"slot\":\"5\",\"builder_index\":" +
         builder_index + ",\"value\":\"1\"},\"signature\":\"0x00\"}}";
}

std::string BidSsz(uint64_t builder) { return ssz::SignedBidSsz(builder, 5); }

std::string Key(int n) { return absl::StrFormat("0x%096x", n); }

TEST(ParseBlindedBlockTest, ABlockWhoseRootCannotBeComputedNamesWhy) {
  std::string block = BlindedBlockJson(5, kHash1);
  block.replace(block.find(kHash1), kHash1.size(), "0x11");
  EXPECT_THAT(
      std::string(
          ParseBlindedBlock(block, "application/json", ssz::Preset::kMainnet).status().message()),
      HasSubstr("message.body.execution_payload_header.block_hash: 2 hex digits, expected 64"));
  EXPECT_FALSE(
      ParseBlindedBlock("{\"message\":{}}", "application/json", ssz::Preset::kMainnet).ok());
}

TEST(ParseBlindedBlockTest, SszGivesTheSlotAndTheRoot) {
  const ssz::TestVector vector = ssz::ReadTestVector("capella_0");
  const auto block =
      ParseBlindedBlock(vector.ssz, "application/octet-stream", ssz::Preset::kMainnet);
  ASSERT_TRUE(block.ok()) << block.status();
  EXPECT_EQ(block->slot, vector.slot);
  EXPECT_EQ(block->root, core::BlockRootFromBytes(vector.root));
  EXPECT_TRUE(block->block_hash.empty());
  EXPECT_FALSE(ParseBlindedBlock(vector.ssz.substr(0, 150), "application/octet-stream",
                                 ssz::Preset::kMainnet)
                   .ok());
  EXPECT_FALSE(ParseBlindedBlock("", "application/octet-stream", ssz::Preset::kMainnet).ok());
}

TEST(HeaderBlockHashTest, ReadsTheHashLowerCaseAndTellsJsonFromNot) {
  EXPECT_EQ(
      HeaderBlockHash(R"({"version":"deneb","data":{"message":{"header":{"parent_hash":"0x1",)"
                      R"("block_hash":"0xAbC"},"value":"1"},"signature":"0x2"}})"),
      "0xabc");
  EXPECT_EQ(HeaderBlockHash(R"({"data":{"message":{"header":{}}}})"), "");
  EXPECT_EQ(HeaderBlockHash(R"({"data":{"message":{"header":{"block_hash":7}}}})"), "");
  EXPECT_EQ(HeaderBlockHash("[1,2]"), "");
  // A later member of a name replaces an earlier one, as a document keeps it.
  EXPECT_EQ(HeaderBlockHash(R"({"data":{"message":{"header":{"block_hash":"0x1"}}},)"
                            R"("data":{"message":{"header":{}}}})"),
            "");
  EXPECT_EQ(HeaderBlockHash(R"({"data":{"message":{"header":{"block_hash":"0x1",)"
                            R"("block_hash":"0x2"}}}})"),
            "0x2");

  EXPECT_EQ(HeaderBlockHash(R"({"data":{"message":{"header":{"block_hash":"0x1"}}})"), std::nullopt)
      << "truncated";
  EXPECT_EQ(HeaderBlockHash(R"({"data":1} trailing)"), std::nullopt);
  EXPECT_EQ(HeaderBlockHash(""), std::nullopt);
  // Nesting a document could not hold is read without recursion.
  EXPECT_EQ(HeaderBlockHash(std::string(1000000, '[') + std::string(1000000, ']')), "");
}

TEST(BidBuilderIndexTest, JsonAndSsz) {
  EXPECT_EQ(BidBuilderIndex(BidJson("\"42\""), "application/json"), 42u);
  EXPECT_EQ(BidBuilderIndex(BidJson("42"), ""), 42u);
  EXPECT_EQ(BidBuilderIndex(BidJson("\"18446744073709551615\""), ""), UINT64_MAX);
  // Without the envelope.
  EXPECT_EQ(BidBuilderIndex("{\"message\":{\"builder_index\":\"9\"}}", ""), 9u);
  EXPECT_EQ(BidBuilderIndex(BidSsz(0x0102030405060708ull), "application/octet-stream"),
            0x0102030405060708ull);
  // Not a bid: negative, fractional, too large, missing, truncated, garbage, too deep.
  EXPECT_FALSE(BidBuilderIndex(BidJson("-1"), "").has_value());
  EXPECT_FALSE(BidBuilderIndex(BidJson("1.5"), "").has_value());
  EXPECT_FALSE(BidBuilderIndex(BidJson("\"18446744073709551616\""), "").has_value());
  EXPECT_FALSE(BidBuilderIndex("{\"data\":{\"message\":{}}}", "").has_value());
  EXPECT_FALSE(BidBuilderIndex(BidJson("\"42\"").substr(0, 40), "").has_value());
  EXPECT_FALSE(BidBuilderIndex("\x00\x01garbage", "").has_value());
  EXPECT_FALSE(BidBuilderIndex(std::string(100000, '['), "").has_value());
  EXPECT_FALSE(BidBuilderIndex(BidSsz(1).substr(0, 300), "application/octet-stream").has_value());
  // The builder is read by the bid's layout: past blob commitments, from the JSON's own SSZ.
  EXPECT_EQ(
      BidBuilderIndex(ssz::SignedBidSsz(77, 5, /*commitments=*/3), "application/octet-stream"),
      77u);
  EXPECT_EQ(BidBuilderIndex(ssz::SignedBidJson(77, 5, 3), "application/json"), 77u);
  EXPECT_FALSE(BidBuilderIndex(BidJson("\"42\""), "application/octet-stream").has_value());
}

TEST(ReadRegistrationsTest, JsonAndSsz) {
  const Registrations json = ReadRegistrations(
      absl::StrCat("[", ssz::RegistrationJson(Key(1)), ",", ssz::RegistrationJson("0x12"), "]"),
      /*ssz=*/false);
  EXPECT_THAT(json.pubkeys, ElementsAre(Key(1)));
  EXPECT_EQ(json.invalid, 1u);
  const Registrations ssz =
      ReadRegistrations(ssz::RegistrationSsz(Key(2)) + ssz::RegistrationSsz(Key(3)), true);
  EXPECT_THAT(ssz.pubkeys, ElementsAre(Key(2), Key(3)));
  EXPECT_EQ(ssz.invalid, 0u);
  // No list: an object, a length that is no multiple of a registration's, nothing, too deep.
  EXPECT_EQ(ReadRegistrations(ssz::RegistrationJson(Key(1)), false).invalid, 1u);
  EXPECT_EQ(ReadRegistrations(ssz::RegistrationSsz(Key(2)) + "x", true).invalid, 1u);
  EXPECT_EQ(ReadRegistrations("", true).invalid, 1u);
  EXPECT_EQ(ReadRegistrations(std::string(100, '['), false).invalid, 1u);
}

}  // namespace
}  // namespace breaker::sidecar
