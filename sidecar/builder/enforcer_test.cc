#include "sidecar/builder/enforcer.h"

#include <string>
#include <utility>
#include <variant>

#include "absl/strings/ascii.h"
#include "client/fake_client.h"
#include "core/observation.h"
#include "core/policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/builder/messages.h"
#include "sidecar/ssz/test_blocks.h"

namespace breaker::sidecar {
namespace {

using ::testing::HasSubstr;

constexpr char kRelay[] = "http://relay.example";
constexpr char kTrustedRelay[] = "http://trusted.example";

Route Header(core::Slot slot) { return Route{Endpoint::kGetHeader, slot}; }
Route Bid(core::Slot slot) { return Route{Endpoint::kGetExecutionPayloadBid, slot}; }

// A getExecutionPayloadBid answer naming `builder_index` (JSON text, quoted or not).
std::string BidJson(const std::string& builder_index) {
  return "{\"version\":\"gloas\",\"data\":{\"message\":{\"slot\":\"5\",\"builder_index\":" +
         builder_index + ",\"value\":\"1\"},\"signature\":\"0x00\"}}";
}

// An SSZ SignedExecutionPayloadBid of slot 5 naming `builder`.
std::string BidSsz(uint64_t builder) { return ssz::SignedBidSsz(builder, 5); }

core::Ban OperatorBan(const std::string& reason) {
  return core::Ban{core::BanKind::kOperator, 0, true, reason};
}

using ssz::BlindedBlockJson;

// Payload block hashes.
const std::string kHash1 = "0x" + std::string(64, '1');
const std::string kHash2 = "0x" + std::string(64, '2');

std::string HeaderJson(const std::string& block_hash) {
  return "{\"version\":\"deneb\",\"data\":{\"message\":{\"header\":{\"block_hash\":\"" +
         block_hash + "\"},\"value\":\"1\"},\"signature\":\"0x00\"}}";
}

class EnforcerTest : public ::testing::Test {
 protected:
  EnforcerTest() : enforcer_(client_, {{kRelay, false}, {kTrustedRelay, true}}) {}

  void SetPolicy(core::Policy policy) {
    client_.SetPolicy(std::move(policy), client::PolicySource::kFleet);
  }

  client::FakeClient client_;
  Enforcer enforcer_;
};

TEST_F(EnforcerTest, OnlyHeadersAreRefused) {
  core::Policy policy;
  policy.mode = core::Mode::kSelfBuild;
  SetPolicy(policy);
  EXPECT_TRUE(enforcer_.Refuse(0, Header(5)).has_value());
  EXPECT_FALSE(enforcer_.Refuse(0, Route{Endpoint::kStatus}).has_value());
  EXPECT_FALSE(enforcer_.Refuse(0, Route{Endpoint::kSubmitBlindedBlock}).has_value());
  EXPECT_FALSE(enforcer_.Refuse(0, Route{Endpoint::kRegisterValidators}).has_value());
  EXPECT_FALSE(enforcer_.Refuse(0, Route{Endpoint::kSubmitBeaconBlock}).has_value());
  EXPECT_FALSE(enforcer_.Refuse(0, Route{Endpoint::kSubmitBuilderPreferences}).has_value());
  EXPECT_TRUE(enforcer_.Refuse(0, Bid(5)).has_value());
  EXPECT_EQ(enforcer_.counters(0).refused, 2u);
  // Forwarded or failed is known only once the upstream answered.
  EXPECT_EQ(enforcer_.counters(0).forwarded, 0u);
  enforcer_.OnForwarded(0, /*failed=*/false);
  enforcer_.OnForwarded(0, /*failed=*/true);
  EXPECT_EQ(enforcer_.counters(0).forwarded, 1u);
  EXPECT_EQ(enforcer_.counters(0).upstream_errors, 1u);
}

TEST_F(EnforcerTest, TheUpstreamsAreDecidedApart) {
  core::Policy policy;
  policy.mode = core::Mode::kTrustedOnly;
  SetPolicy(policy);
  EXPECT_TRUE(enforcer_.Refuse(0, Header(5)).has_value());
  EXPECT_FALSE(enforcer_.Refuse(1, Header(5)).has_value());
  // A later policy applies to the next request.
  SetPolicy(core::Policy{});
  EXPECT_FALSE(enforcer_.Refuse(0, Header(6)).has_value());
}

TEST_F(EnforcerTest, HeadersAreNotReportedAsBidsForTheyNameNoBuilder) {
  enforcer_.OnHeaderAnswered(0, 5, 200, HeaderJson(kHash1), "");
  EXPECT_TRUE(client_.reports().empty());
  EXPECT_EQ(enforcer_.counters(0).headers_seen, 1u);
}

TEST_F(EnforcerTest, AFailedRevealOfAHeaderItSignedIsReported) {
  enforcer_.OnHeaderAnswered(0, 5, 200, HeaderJson(kHash1), "");
  EXPECT_TRUE(enforcer_.OnBlindedBlockAnswered(0, BlindedBlockJson(5, kHash1), "application/json",
                                               /*failed=*/true));
  ASSERT_EQ(client_.reports().size(), 1u);
  const auto reported = client_.reports()[0];
  EXPECT_EQ(reported.slot, 5u);
  const auto* missing = std::get_if<core::RelayRevealMissing>(&reported.event);
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->relay, kRelay);
  const auto block =
      ParseBlindedBlock(BlindedBlockJson(5, kHash1), "application/json", ssz::Preset::kMainnet);
  ASSERT_TRUE(block.ok()) << block.status();
  EXPECT_EQ(missing->root, block->root);
}

// The root reported is the block's hash_tree_root, as a node linking the library reports it
// (and as @chainsafe/ssz computed it), whether the node sent the block in JSON or in SSZ.
TEST_F(EnforcerTest, TheRevealFailureNamesTheBlocksRealRoot) {
  size_t reports = 0;
  for (const char* name : {"bellatrix_0", "deneb_0", "electra_0"}) {
    SCOPED_TRACE(name);
    const ssz::TestVector vector = ssz::ReadTestVector(name);
    const std::string header = HeaderJson(absl::AsciiStrToLower(vector.block_hash));
    for (const auto& [body, content_type] : {std::pair(vector.json, "application/json"),
                                             std::pair(vector.ssz, "application/octet-stream")}) {
      enforcer_.OnHeaderAnswered(0, vector.slot, 200, header, "application/json");
      ASSERT_TRUE(enforcer_.OnBlindedBlockAnswered(0, body, content_type, /*failed=*/true));
      ASSERT_EQ(client_.reports().size(), ++reports);
      const auto reported = client_.reports().back();
      EXPECT_EQ(reported.slot, vector.slot);
      const auto* missing = std::get_if<core::RelayRevealMissing>(&reported.event);
      ASSERT_NE(missing, nullptr);
      EXPECT_EQ(missing->root, core::BlockRootFromBytes(vector.root)) << content_type;
    }
  }
}

// A test chain of the minimal preset: its blocks are read with the node's preset, and one whose
// root cannot be computed is logged and counted, never silently dropped.
TEST_F(EnforcerTest, ARevealFailureOnAMinimalPresetChainIsReportedWithTheNodesPreset) {
  const ssz::TestVector vector = ssz::ReadTestVector("electra_minimal_0");
  const std::string header = HeaderJson(absl::AsciiStrToLower(vector.block_hash));
  enforcer_.OnHeaderAnswered(0, vector.slot, 200, header, "application/json");
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(0, vector.ssz, "application/octet-stream",
                                                /*failed=*/true));
  EXPECT_EQ(enforcer_.counters(0).unreadable_blocks, 1u);
  EXPECT_TRUE(client_.reports().empty());

  enforcer_.SetPreset(ssz::Preset::kMinimal);
  for (const auto& [body, content_type] : {std::pair(vector.json, "application/json"),
                                           std::pair(vector.ssz, "application/octet-stream")}) {
    ASSERT_TRUE(enforcer_.OnBlindedBlockAnswered(0, body, content_type, /*failed=*/true));
    // reports() is a copy: keep it while pointing into it.
    const std::vector<client::FakeClient::Reported> reports = client_.reports();
    ASSERT_FALSE(reports.empty());
    const auto* missing = std::get_if<core::RelayRevealMissing>(&reports.back().event);
    ASSERT_NE(missing, nullptr);
    EXPECT_EQ(missing->root, core::BlockRootFromBytes(vector.root)) << content_type;
  }
  EXPECT_EQ(enforcer_.counters(0).unreadable_blocks, 1u);
  EXPECT_EQ(enforcer_.counters(0).reveal_failures, 2u);
}

TEST_F(EnforcerTest, NoRevealFailureWithoutItsHeaderOrWhenItSucceeded) {
  enforcer_.OnHeaderAnswered(0, 5, 200, HeaderJson(kHash1), "");
  // Succeeded.
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(0, BlindedBlockJson(5, kHash1), "", false));
  // Another block hash: that upstream lost the auction.
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(0, BlindedBlockJson(5, kHash2), "", true));
  // Another slot; another upstream; a 204 header is no header.
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(0, BlindedBlockJson(6, kHash1), "", true));
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(1, BlindedBlockJson(5, kHash1), "", true));
  enforcer_.OnHeaderAnswered(1, 7, 204, "", "");
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(1, BlindedBlockJson(7, kHash1), "", true));
  // Garbage.
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(0, "{\"message\":", "", true));
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(0, std::string(100000, '['), "", true));
  EXPECT_TRUE(client_.reports().empty());
}

TEST_F(EnforcerTest, RememberedHeadersAreBounded) {
  for (core::Slot slot = 1; slot <= kMaxRememberedHeaders + 1; ++slot) {
    enforcer_.OnHeaderAnswered(0, slot, 200, HeaderJson(kHash1), "");
  }
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(0, BlindedBlockJson(1, kHash1), "", true));
  EXPECT_TRUE(enforcer_.OnBlindedBlockAnswered(0, BlindedBlockJson(2, kHash1), "", true));
}

TEST_F(EnforcerTest, ABidIsReportedAndForwardedWhileItsBuilderIsAllowed) {
  EXPECT_EQ(enforcer_.OnBidAnswered(0, 5, 200, BidJson("\"42\""), "application/json"),
            std::nullopt);
  const auto reports = client_.reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].slot, 5u);
  const auto* bid = std::get_if<core::BidSeen>(&reports[0].event);
  ASSERT_NE(bid, nullptr);
  EXPECT_EQ(bid->builder, 42u);
  EXPECT_EQ(bid->relay, kRelay);
  EXPECT_EQ(enforcer_.counters(0).bids_seen, 1u);
  EXPECT_EQ(enforcer_.counters(0).refused, 0u);
  // No bid: nothing to report.
  EXPECT_EQ(enforcer_.OnBidAnswered(0, 6, 204, "", ""), std::nullopt);
  EXPECT_EQ(enforcer_.OnBidAnswered(0, 6, 400, "{}", ""), std::nullopt);
  EXPECT_EQ(client_.reports().size(), 1u);
}

TEST_F(EnforcerTest, ABidOfABannedBuilderIsRefusedYetReported) {
  core::Policy policy;
  policy.banned_builders[42] = OperatorBan("withheld");
  SetPolicy(policy);
  EXPECT_THAT(
      enforcer_.OnBidAnswered(1, 5, 200, BidSsz(42), "application/octet-stream").value_or(""),
      HasSubstr("builder 42 is banned (operator): withheld"));
  EXPECT_EQ(client_.reports().size(), 1u) << "the bid was seen, whatever the policy";
  EXPECT_EQ(enforcer_.OnBidAnswered(1, 5, 200, BidSsz(43), "application/octet-stream"),
            std::nullopt);
  EXPECT_EQ(enforcer_.counters(1).refused, 1u);
  EXPECT_EQ(enforcer_.counters(1).bids_seen, 2u);
}

TEST_F(EnforcerTest, APolicyThatChangedWhileTheUpstreamAnsweredApplies) {
  core::Policy policy;
  policy.banned_relays[kRelay] = OperatorBan("bad relay");
  SetPolicy(policy);
  EXPECT_THAT(enforcer_.OnBidAnswered(0, 5, 200, BidJson("1"), "").value_or(""),
              HasSubstr("is banned"));
  EXPECT_EQ(enforcer_.OnBidAnswered(1, 5, 200, BidJson("1"), ""), std::nullopt);
}

TEST_F(EnforcerTest, AnUnreadableBidIsRefusedAndCounted) {
  EXPECT_THAT(
      enforcer_.OnBidAnswered(0, 5, 200, "{\"data\":{\"mess", "application/json").value_or(""),
      HasSubstr("cannot be read"));
  EXPECT_TRUE(client_.reports().empty());
  EXPECT_EQ(enforcer_.counters(0).malformed_answers, 1u);
  EXPECT_EQ(enforcer_.counters(0).refused, 1u);
}

TEST_F(EnforcerTest, AnUnreadableHeaderIsCountedAndNotRemembered) {
  EXPECT_FALSE(enforcer_.OnHeaderAnswered(0, 5, 200, "{\"data\":", ""));
  EXPECT_EQ(enforcer_.counters(0).malformed_answers, 1u);
  EXPECT_EQ(enforcer_.counters(0).headers_seen, 0u);
  EXPECT_TRUE(enforcer_.OnHeaderAnswered(0, 5, 204, "", ""));
}

}  // namespace
}  // namespace breaker::sidecar
