#include "sidecar/builder/refusal.h"

#include "core/policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace breaker::sidecar {
namespace {

using ::testing::HasSubstr;

constexpr char kRelay[] = "http://relay.example";

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

TEST(BidRefusalReasonTest, TheUpstreamFirstThenTheBuilder) {
  const UpstreamIdentity upstream{kRelay, false};
  core::Policy policy;
  RefusalCause cause = RefusalCause::kSelfBuild;
  EXPECT_EQ(BidRefusalReason(policy, upstream, 7, &cause), std::nullopt);

  policy.banned_builders[7] = core::Ban{core::BanKind::kOperator, 0, true, "operator: bad"};
  EXPECT_THAT(BidRefusalReason(policy, upstream, 7, &cause).value_or(""),
              HasSubstr("builder 7 is banned (operator)"));
  EXPECT_EQ(cause, RefusalCause::kBuilderBanned);
  EXPECT_EQ(BidRefusalReason(policy, upstream, 8), std::nullopt);

  policy.banned_relays[kRelay] = core::Ban{core::BanKind::kOperator, 0, true, "operator: bad"};
  EXPECT_THAT(BidRefusalReason(policy, upstream, 7, &cause).value_or(""),
              HasSubstr("relay http://relay.example is banned"));
  EXPECT_EQ(cause, RefusalCause::kRelayBanned);
}

}  // namespace
}  // namespace breaker::sidecar
