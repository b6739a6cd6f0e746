#include "sidecar/enforcer.h"

#include <string>
#include <variant>

#include "client/fake_client.h"
#include "core/observation.h"
#include "core/policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace breaker::sidecar {
namespace {

using ::testing::HasSubstr;

constexpr char kRelay[] = "http://relay.example";
constexpr char kTrustedRelay[] = "http://trusted.example";

Route Header(core::Slot slot) { return Route{Endpoint::kGetHeader, slot}; }

std::string BlindedBlockJson(core::Slot slot, const std::string& block_hash) {
  return "{\"message\":{\"slot\":\"" + std::to_string(slot) +
         "\",\"proposer_index\":\"7\",\"parent_root\":\"0xAA\",\"state_root\":\"0xbb\","
         "\"body\":{\"execution_payload_header\":{\"block_hash\":\"" +
         block_hash + "\"}}},\"signature\":\"0x00\"}";
}

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

TEST(ClassifyRouteTest, TheBuilderApi) {
  EXPECT_EQ(ClassifyRoute("GET", "/eth/v1/builder/status").endpoint, Endpoint::kStatus);
  EXPECT_EQ(ClassifyRoute("POST", "/eth/v1/builder/validators").endpoint,
            Endpoint::kRegisterValidators);
  const Route header = ClassifyRoute("GET", "/eth/v1/builder/header/123/0xab/0xcd");
  EXPECT_EQ(header.endpoint, Endpoint::kGetHeader);
  EXPECT_EQ(header.slot, 123u);
  EXPECT_EQ(ClassifyRoute("POST", "/eth/v1/builder/blinded_blocks").endpoint,
            Endpoint::kSubmitBlindedBlock);
  EXPECT_EQ(ClassifyRoute("POST", "/eth/v2/builder/blinded_blocks").endpoint,
            Endpoint::kSubmitBlindedBlock);
  // Not a header: a bad slot, a wrong method, extra segments, another prefix.
  EXPECT_EQ(ClassifyRoute("GET", "/eth/v1/builder/header/x/0xab/0xcd").endpoint, Endpoint::kOther);
  EXPECT_EQ(ClassifyRoute("POST", "/eth/v1/builder/header/1/0xab/0xcd").endpoint, Endpoint::kOther);
  EXPECT_EQ(ClassifyRoute("GET", "/eth/v1/builder/header/1/0xab/0xcd/x").endpoint, Endpoint::kOther);
  EXPECT_EQ(ClassifyRoute("GET", "/base/eth/v1/builder/status").endpoint, Endpoint::kOther);
  EXPECT_EQ(ClassifyRoute("GET", "").endpoint, Endpoint::kOther);
}

TEST(RefusalReasonTest, ThePolicyDecides) {
  const UpstreamIdentity untrusted{kRelay, false};
  const UpstreamIdentity trusted{kRelay, true};
  core::Policy policy;
  EXPECT_EQ(RefusalReason(policy, untrusted), std::nullopt);

  policy.mode = core::Mode::kSelfBuild;
  policy.mode_reason = "missed slots";
  EXPECT_THAT(RefusalReason(policy, trusted).value_or(""), HasSubstr("SELF_BUILD"));

  policy.mode = core::Mode::kTrustedOnly;
  EXPECT_THAT(RefusalReason(policy, untrusted).value_or(""), HasSubstr("not trusted"));
  EXPECT_EQ(RefusalReason(policy, trusted), std::nullopt);
  policy.trusted_relays.insert(kRelay);
  EXPECT_EQ(RefusalReason(policy, untrusted), std::nullopt);

  policy.mode = core::Mode::kAllBuilders;
  policy.banned_relays[kRelay] = core::Ban{core::BanKind::kOperator, 0, true, "operator: bad"};
  EXPECT_THAT(RefusalReason(policy, trusted).value_or(""), HasSubstr("is banned (operator)"));
  EXPECT_EQ(RefusalReason(policy, UpstreamIdentity{"http://other", false}), std::nullopt);
}

TEST_F(EnforcerTest, OnlyHeadersAreRefused) {
  core::Policy policy;
  policy.mode = core::Mode::kSelfBuild;
  SetPolicy(policy);
  EXPECT_TRUE(enforcer_.Refuse(0, Header(5)).has_value());
  EXPECT_FALSE(enforcer_.Refuse(0, Route{Endpoint::kStatus}).has_value());
  EXPECT_FALSE(enforcer_.Refuse(0, Route{Endpoint::kSubmitBlindedBlock}).has_value());
  EXPECT_FALSE(enforcer_.Refuse(0, Route{Endpoint::kRegisterValidators}).has_value());
  EXPECT_EQ(enforcer_.counters(0).refused, 1u);
  EXPECT_EQ(enforcer_.counters(0).forwarded, 3u);
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
  enforcer_.OnHeaderAnswered(0, 5, 200, HeaderJson("0x11"));
  EXPECT_TRUE(client_.reports().empty());
  EXPECT_EQ(enforcer_.counters(0).headers_seen, 1u);
}

TEST_F(EnforcerTest, AFailedRevealOfAHeaderItSignedIsReported) {
  enforcer_.OnHeaderAnswered(0, 5, 200, HeaderJson("0x11"));
  EXPECT_TRUE(enforcer_.OnBlindedBlockAnswered(0, BlindedBlockJson(5, "0x11"), "application/json",
                                               /*failed=*/true));
  ASSERT_EQ(client_.reports().size(), 1u);
  const auto reported = client_.reports()[0];
  EXPECT_EQ(reported.slot, 5u);
  const auto* missing = std::get_if<core::RelayRevealMissing>(&reported.event);
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->relay, kRelay);
  // The same block, spelled with other letter case, has the same key.
  const auto block = ParseBlindedBlock(BlindedBlockJson(5, "0x11"), "application/json");
  ASSERT_TRUE(block.has_value());
  EXPECT_EQ(missing->root, block->key);
}

TEST_F(EnforcerTest, NoRevealFailureWithoutItsHeaderOrWhenItSucceeded) {
  enforcer_.OnHeaderAnswered(0, 5, 200, HeaderJson("0x11"));
  // Succeeded.
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(0, BlindedBlockJson(5, "0x11"), "", false));
  // Another block hash: that upstream lost the auction.
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(0, BlindedBlockJson(5, "0x22"), "", true));
  // Another slot; another upstream; a 204 header is no header.
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(0, BlindedBlockJson(6, "0x11"), "", true));
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(1, BlindedBlockJson(5, "0x11"), "", true));
  enforcer_.OnHeaderAnswered(1, 7, 204, "");
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(1, BlindedBlockJson(7, "0x11"), "", true));
  // Garbage.
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(0, "{\"message\":", "", true));
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(0, std::string(100000, '['), "", true));
  EXPECT_TRUE(client_.reports().empty());
}

TEST_F(EnforcerTest, RememberedHeadersAreBounded) {
  for (core::Slot slot = 1; slot <= kMaxRememberedHeaders + 1; ++slot) {
    enforcer_.OnHeaderAnswered(0, slot, 200, HeaderJson("0x11"));
  }
  EXPECT_FALSE(enforcer_.OnBlindedBlockAnswered(0, BlindedBlockJson(1, "0x11"), "", true));
  EXPECT_TRUE(enforcer_.OnBlindedBlockAnswered(0, BlindedBlockJson(2, "0x11"), "", true));
}

TEST(ParseBlindedBlockTest, SszGivesTheSlotAndTheSameKeyForTheSameBlock) {
  std::string ssz(4 + 96 + 84, '\0');
  ssz[0] = 100;
  ssz[100] = 5;                                  // slot 5
  ssz[108] = 7;                                  // proposer 7
  for (int i = 0; i < 32; ++i) ssz[116 + i] = static_cast<char>(0xaa);
  const auto block = ParseBlindedBlock(ssz, "application/octet-stream");
  ASSERT_TRUE(block.has_value());
  EXPECT_EQ(block->slot, 5u);
  EXPECT_TRUE(block->block_hash.empty());
  EXPECT_FALSE(ParseBlindedBlock(ssz.substr(0, 150), "application/octet-stream").has_value());
  EXPECT_FALSE(ParseBlindedBlock("", "application/octet-stream").has_value());
}

TEST(JsonTooDeepTest, CountsOutsideStrings) {
  EXPECT_FALSE(JsonTooDeep("[[[]]]", 3));
  EXPECT_TRUE(JsonTooDeep("[[[[]]]]", 3));
  EXPECT_FALSE(JsonTooDeep("[\"[[[[\\\"[[[\"]", 3));
}

}  // namespace
}  // namespace breaker::sidecar
