#include "service/observation_rate_limiter.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace breaker::service {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

class ObservationRateLimiterTest : public ::testing::Test {
 protected:
  ObservationRateLimiterTest() { limiter_.SetLimits(/*rate_per_second=*/10, /*burst=*/100); }

  int Take(const std::string& node, int wanted) {
    refusal_.clear();
    return limiter_.Take(node, wanted, &refusal_);
  }

  testing::FakeClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  ObservationRateLimiter limiter_{clock_};
  std::string refusal_;
};

TEST_F(ObservationRateLimiterTest, ANewNodeHasAFullBurst) {
  EXPECT_EQ(Take("a", 100), 100);
  EXPECT_THAT(refusal_, IsEmpty());
  EXPECT_EQ(Take("a", 1), 0);
  EXPECT_THAT(refusal_, HasSubstr("node a is over its observation rate"));
  EXPECT_THAT(refusal_, HasSubstr("node_observation_rate 10 per second"));
  EXPECT_THAT(refusal_, HasSubstr("node_observation_burst 100"));
}

TEST_F(ObservationRateLimiterTest, GivesPartOfARequestAndNamesTheRest) {
  EXPECT_EQ(Take("a", 150), 100);
  EXPECT_THAT(refusal_, HasSubstr("raise those limits"));
}

TEST_F(ObservationRateLimiterTest, RefillsAtTheRateUpToTheBurst) {
  ASSERT_EQ(Take("a", 100), 100);
  clock_.Advance(absl::Milliseconds(1500));
  EXPECT_EQ(Take("a", 100), 15);
  clock_.Advance(absl::Hours(1));
  EXPECT_EQ(Take("a", 1000), 100);
}

TEST_F(ObservationRateLimiterTest, NodesHaveBucketsOfTheirOwn) {
  ASSERT_EQ(Take("a", 100), 100);
  EXPECT_EQ(Take("b", 100), 100);
}

TEST_F(ObservationRateLimiterTest, AClockSetBackRefillsNothing) {
  ASSERT_EQ(Take("a", 100), 100);
  clock_.Advance(absl::Seconds(-60));
  EXPECT_EQ(Take("a", 1), 0);
  // Back where it was, and one second on: one second's worth, not sixty-one.
  clock_.Advance(absl::Seconds(61));
  EXPECT_EQ(Take("a", 100), 10);
}

TEST_F(ObservationRateLimiterTest, NothingWantedTakesNothing) {
  EXPECT_EQ(Take("a", 0), 0);
  EXPECT_EQ(Take("a", -5), 0);
  EXPECT_EQ(Take("a", 100), 100);
}

TEST_F(ObservationRateLimiterTest, NewLimitsApplyToTheNextRefill) {
  ASSERT_EQ(Take("a", 100), 100);
  limiter_.SetLimits(/*rate_per_second=*/1000, /*burst=*/500);
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(Take("a", 1000), 500);
}

TEST_F(ObservationRateLimiterTest, ManyNodeIdsForgetTheFullBucketsFirst) {
  // One node spent its burst; as many others as the limiter keeps have full buckets.
  ASSERT_EQ(Take("spender", 100), 100);
  for (size_t i = 1; i < ObservationRateLimiter::kMaxBuckets; ++i) {
    ASSERT_EQ(Take(absl::StrCat("node-", i), 0), 0);
    // Wanting nothing makes no bucket; take one token so that each node has one.
    ASSERT_EQ(Take(absl::StrCat("node-", i), 1), 1);
  }
  // The full-again buckets of the others are forgotten to make room; the spender's is kept.
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(Take("newcomer", 100), 100);
  EXPECT_EQ(Take("spender", 100), 10);
}

TEST_F(ObservationRateLimiterTest, ManyNodeIdsWithEmptyBucketsAreAllForgotten) {
  for (size_t i = 0; i < ObservationRateLimiter::kMaxBuckets; ++i) {
    ASSERT_EQ(Take(absl::StrCat("node-", i), 100), 100);
  }
  // None is full again, so all are forgotten: the memory stays bounded.
  EXPECT_EQ(Take("newcomer", 100), 100);
  EXPECT_EQ(Take("node-0", 100), 100);
}

}  // namespace
}  // namespace breaker::service
