#include "client/address_rotation.h"

#include "absl/time/time.h"
#include "client/backoff.h"
#include "gtest/gtest.h"

namespace breaker::client {
namespace {

using Attempt = AddressRotation::Attempt;

constexpr Attempt kDown{/*answered=*/false, /*unavailable=*/true, /*standby=*/false};
constexpr Attempt kStandby{/*answered=*/false, /*unavailable=*/true, /*standby=*/true};
constexpr Attempt kUp{/*answered=*/true, /*unavailable=*/true, /*standby=*/false};
constexpr Attempt kDenied{/*answered=*/false, /*unavailable=*/false, /*standby=*/false};

// 1 s, 2 s, 4 s, ... without jitter.
Backoff Doubling() { return Backoff(absl::Seconds(1), 2, absl::Minutes(10), 0, 1); }

TEST(AddressRotationTest, OneAddressWaitsAfterEveryAttemptOnTheGrowingBackoff) {
  Backoff backoff = Doubling();
  AddressRotation rotation(1, &backoff);
  EXPECT_EQ(rotation.Ended(kDown), absl::Seconds(1));
  EXPECT_EQ(rotation.Ended(kDown), absl::Seconds(2));
  EXPECT_EQ(rotation.current(), 0u);
  // A stream that was up starts over.
  EXPECT_EQ(rotation.Ended(kUp), absl::Seconds(1));
}

TEST(AddressRotationTest, TheNextAddressAtOnceAndTheBackoffOncePerRound) {
  Backoff backoff = Doubling();
  AddressRotation rotation(3, &backoff);
  EXPECT_EQ(rotation.current(), 0u);
  EXPECT_EQ(rotation.Ended(kDown), absl::ZeroDuration());
  EXPECT_EQ(rotation.current(), 1u);
  EXPECT_EQ(rotation.Ended(kDenied), absl::ZeroDuration());
  EXPECT_EQ(rotation.Ended(kDown), absl::Seconds(1));
  EXPECT_EQ(rotation.current(), 0u);
  EXPECT_EQ(rotation.Ended(kDown), absl::ZeroDuration());
  EXPECT_EQ(rotation.Ended(kDown), absl::ZeroDuration());
  EXPECT_EQ(rotation.Ended(kDown), absl::Seconds(2));
}

TEST(AddressRotationTest, AStreamThatWasUpEndsARoundAndTheNextAddressGoesAtOnce) {
  Backoff backoff = Doubling();
  AddressRotation rotation(2, &backoff);
  EXPECT_EQ(rotation.Ended(kDown), absl::ZeroDuration());
  EXPECT_EQ(rotation.Ended(kDown), absl::Seconds(1));
  EXPECT_EQ(rotation.Ended(kDown), absl::ZeroDuration());
  EXPECT_EQ(rotation.Ended(kDown), absl::Seconds(2));
  // The leader's stream ends (it died): the other replica at once, then the first step.
  EXPECT_EQ(rotation.Ended(kUp), absl::ZeroDuration());
  EXPECT_EQ(rotation.Ended(kDown), absl::Seconds(1));
}

TEST(AddressRotationTest, WhileAStandbyNamesALeaderEveryRoundWaitsTheFirstStep) {
  Backoff backoff = Doubling();
  AddressRotation rotation(2, &backoff);
  for (int round = 0; round < 5; ++round) {
    EXPECT_EQ(rotation.Ended(kStandby), absl::ZeroDuration());
    EXPECT_EQ(rotation.Ended(kDown), absl::Seconds(1)) << round;
  }
}

TEST(AddressRotationTest, AStandbyBesideARefusalOtherThanUnavailableDoesNotShortenTheBackoff) {
  // The leader answers PERMISSION_DENIED: coming back every second would not help.
  Backoff backoff = Doubling();
  AddressRotation rotation(2, &backoff);
  EXPECT_EQ(rotation.Ended(kStandby), absl::ZeroDuration());
  EXPECT_EQ(rotation.Ended(kDenied), absl::Seconds(1));
  EXPECT_EQ(rotation.Ended(kStandby), absl::ZeroDuration());
  EXPECT_EQ(rotation.Ended(kDenied), absl::Seconds(2));
  EXPECT_EQ(rotation.Ended(kStandby), absl::ZeroDuration());
  EXPECT_EQ(rotation.Ended(kDenied), absl::Seconds(4));
}

}  // namespace
}  // namespace breaker::client
