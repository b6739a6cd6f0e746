#include "client/backoff.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace breaker::client {
namespace {

constexpr double kTolerance = 1e-6;

TEST(Backoff, GrowsGeometricallyUpToTheCap) {
  Backoff backoff(absl::Seconds(1), 1.6, absl::Seconds(30), 0.0, 1);
  const std::vector<double> expected = {1,         1.6,        2.56, 4.096, 6.5536, 10.48576,
                                        16.777216, 26.8435456, 30,   30,    30};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(absl::ToDoubleSeconds(backoff.Next()), expected[i], kTolerance) << "attempt " << i;
  }
}

TEST(Backoff, StaysAtTheCapForever) {
  Backoff backoff(absl::Seconds(1), 1.6, absl::Seconds(30), 0.0, 1);
  for (int i = 0; i < 10000; ++i) backoff.Next();
  EXPECT_EQ(backoff.Next(), absl::Seconds(30));
}

TEST(Backoff, ResetStartsOver) {
  Backoff backoff(absl::Seconds(1), 1.6, absl::Seconds(30), 0.0, 1);
  for (int i = 0; i < 5; ++i) backoff.Next();
  backoff.Reset();
  EXPECT_NEAR(absl::ToDoubleSeconds(backoff.Next()), 1.0, kTolerance);
  EXPECT_NEAR(absl::ToDoubleSeconds(backoff.Next()), 1.6, kTolerance);
}

TEST(Backoff, InitialAboveTheCapIsCapped) {
  Backoff backoff(absl::Seconds(60), 2, absl::Seconds(30), 0.0, 1);
  EXPECT_EQ(backoff.Next(), absl::Seconds(30));
  backoff.Reset();
  EXPECT_EQ(backoff.Next(), absl::Seconds(30));
}

TEST(Backoff, JitterStaysWithinItsBounds) {
  constexpr double kJitter = 0.2;
  Backoff backoff(absl::Seconds(1), 1.6, absl::Seconds(30), kJitter, 42);
  Backoff plain(absl::Seconds(1), 1.6, absl::Seconds(30), 0.0, 42);
  bool below = false;
  bool above = false;
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 12; ++i) {
      const absl::Duration base = plain.Next();
      const absl::Duration wait = backoff.Next();
      EXPECT_GE(wait, base * (1 - kJitter)) << "round " << round << ", attempt " << i;
      EXPECT_LE(wait, base * (1 + kJitter)) << "round " << round << ", attempt " << i;
      EXPECT_LE(wait, absl::Seconds(30) * (1 + kJitter));
      below = below || wait < base;
      above = above || wait > base;
    }
    backoff.Reset();
    plain.Reset();
  }
  // The factor is spread on both sides of 1.
  EXPECT_TRUE(below);
  EXPECT_TRUE(above);
}

TEST(Backoff, NeverNegative) {
  // A jitter above 1 is taken as 1.
  Backoff backoff(absl::Seconds(1), 2, absl::Seconds(10), 5.0, 7);
  for (int i = 0; i < 1000; ++i) {
    const absl::Duration wait = backoff.Next();
    EXPECT_GE(wait, absl::ZeroDuration());
    EXPECT_LE(wait, absl::Seconds(20));
  }
}

TEST(Backoff, SameSeedSameWaits) {
  Backoff a(absl::Seconds(1), 1.6, absl::Seconds(30), 0.2, 1234);
  Backoff b(absl::Seconds(1), 1.6, absl::Seconds(30), 0.2, 1234);
  Backoff c(absl::Seconds(1), 1.6, absl::Seconds(30), 0.2, 1235);
  bool differs = false;
  for (int i = 0; i < 50; ++i) {
    if (i == 20) {
      a.Reset();
      b.Reset();
      c.Reset();
    }
    const absl::Duration wait = a.Next();
    EXPECT_EQ(wait, b.Next()) << "attempt " << i;
    differs = differs || wait != c.Next();
  }
  EXPECT_TRUE(differs) << "another seed should give other waits";
}

}  // namespace
}  // namespace breaker::client
