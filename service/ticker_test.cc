#include "service/ticker.h"

#include <atomic>

#include "common/fake_clock.h"
#include "gtest/gtest.h"
#include "tests/support/test_util.h"

namespace breaker::service {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);
constexpr absl::Duration kDeadline = absl::Seconds(30);

TEST(TickerTest, TicksOnceTheClockReachesTheTimeNamed) {
  testing::FakeClock clock(kStart);
  std::atomic<int> ticks{0};
  std::atomic<int> asked{0};
  Ticker ticker(
      clock,
      [&] {
        ++asked;
        return kStart + absl::Hours(1);
      },
      [&] { ++ticks; });
  ticker.Start();
  ASSERT_TRUE(testing::WaitFor([&] { return asked.load() >= 1; }, kDeadline));
  EXPECT_EQ(ticks.load(), 0);

  // Asked again when woken; the time has not come.
  ticker.Wake();
  ASSERT_TRUE(testing::WaitFor([&] { return asked.load() >= 2; }, kDeadline));
  EXPECT_EQ(ticks.load(), 0);

  clock.Advance(absl::Hours(1));
  ticker.Wake();
  ASSERT_TRUE(testing::WaitFor([&] { return ticks.load() >= 1; }, kDeadline));
}

TEST(TickerTest, TicksAtOnceForATimePassedAndAsksAgainAfter) {
  testing::FakeClock clock(kStart);
  std::atomic<int> ticks{0};
  // Due now twice, then never.
  Ticker ticker(
      clock, [&] { return ticks.load() < 2 ? kStart : absl::InfiniteFuture(); }, [&] { ++ticks; });
  ticker.Start();
  ASSERT_TRUE(testing::WaitFor([&] { return ticks.load() == 2; }, kDeadline));
}

TEST(TickerTest, NeverTicksUnlessStartedNorAfterStopping) {
  testing::FakeClock clock(kStart);
  std::atomic<int> ticks{0};
  std::atomic<int> asked{0};
  Ticker ticker(
      clock,
      [&] {
        ++asked;
        return absl::InfiniteFuture();
      },
      [&] { ++ticks; });
  ticker.Wake();
  EXPECT_EQ(asked.load(), 0);
  ticker.Start();
  ASSERT_TRUE(testing::WaitFor([&] { return asked.load() >= 1; }, kDeadline));
  ticker.Stop();  // while it waits
  const int asked_when_stopped = asked.load();
  ticker.Wake();
  ticker.Stop();
  EXPECT_EQ(asked.load(), asked_when_stopped);
  EXPECT_EQ(ticks.load(), 0);
}

}  // namespace
}  // namespace breaker::service
