#include "service/storage_supervisor.h"

#include <vector>

#include "common/fake_clock.h"
#include "gtest/gtest.h"

namespace breaker::service {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

class StorageSupervisorTest : public ::testing::Test {
 protected:
  testing::FakeClock clock_{kStart};
  int schedule_changes_ = 0;
  StorageSupervisor supervisor_{clock_, [this] { ++schedule_changes_; }};
};

TEST_F(StorageSupervisorTest, WritableUntilAWriteFails) {
  EXPECT_TRUE(supervisor_.status().ok());
  EXPECT_EQ(supervisor_.next_attempt(), absl::InfiniteFuture());
  EXPECT_FALSE(supervisor_.TakeDueAttempt());

  supervisor_.Fail(absl::UnavailableError("disk full"));
  EXPECT_EQ(supervisor_.status(), absl::UnavailableError("disk full"));
  EXPECT_EQ(supervisor_.next_attempt(), kStart + StorageSupervisor::kFirstAttempt);
  EXPECT_EQ(schedule_changes_, 1);
}

TEST_F(StorageSupervisorTest, AnAttemptComesDueOnceAtItsTime) {
  supervisor_.Fail(absl::UnavailableError("disk full"));
  EXPECT_FALSE(supervisor_.TakeDueAttempt());
  clock_.Advance(StorageSupervisor::kFirstAttempt);
  EXPECT_TRUE(supervisor_.TakeDueAttempt());
  // Under way: not due again, and not scheduled, until it ends.
  EXPECT_FALSE(supervisor_.TakeDueAttempt());
  EXPECT_EQ(supervisor_.next_attempt(), absl::InfiniteFuture());
}

TEST_F(StorageSupervisorTest, FailedAttemptsWaitTwiceAsLongUpToTheLongestWait) {
  supervisor_.Fail(absl::UnavailableError("disk full"));
  std::vector<absl::Duration> waits;
  absl::Duration wait = StorageSupervisor::kFirstAttempt;
  for (int i = 0; i < 8; ++i) {
    clock_.Advance(wait);
    ASSERT_TRUE(supervisor_.TakeDueAttempt());
    wait = supervisor_.AttemptDone(absl::UnavailableError("still full"));
    waits.push_back(wait);
    EXPECT_EQ(supervisor_.next_attempt(), clock_.Now() + wait);
  }
  EXPECT_EQ(waits,
            (std::vector<absl::Duration>{absl::Seconds(2), absl::Seconds(4), absl::Seconds(8),
                                         absl::Seconds(16), absl::Seconds(30), absl::Seconds(30),
                                         absl::Seconds(30), absl::Seconds(30)}));
  EXPECT_EQ(supervisor_.status(), absl::UnavailableError("still full"));
}

TEST_F(StorageSupervisorTest, ANewFaultStartsTheScheduleAgain) {
  supervisor_.Fail(absl::UnavailableError("disk full"));
  clock_.Advance(StorageSupervisor::kFirstAttempt);
  ASSERT_TRUE(supervisor_.TakeDueAttempt());
  supervisor_.AttemptDone(absl::OkStatus());
  EXPECT_TRUE(supervisor_.status().ok());
  EXPECT_EQ(supervisor_.next_attempt(), absl::InfiniteFuture());

  supervisor_.Fail(absl::UnavailableError("read-only"));
  EXPECT_EQ(supervisor_.next_attempt(), clock_.Now() + StorageSupervisor::kFirstAttempt);
}

TEST_F(StorageSupervisorTest, TheWatcherHearsEveryChangeOfWritability) {
  std::vector<bool> heard;
  supervisor_.Watch([&](bool writable) { heard.push_back(writable); });
  supervisor_.Fail(absl::UnavailableError("disk full"));
  supervisor_.Fail(absl::UnavailableError("still full"));  // no change: not heard again
  clock_.Advance(StorageSupervisor::kFirstAttempt);
  ASSERT_TRUE(supervisor_.TakeDueAttempt());
  supervisor_.AttemptDone(absl::OkStatus());
  EXPECT_EQ(heard, (std::vector<bool>{true, false, true}));

  supervisor_.Watch(nullptr);
  supervisor_.Fail(absl::UnavailableError("disk full"));
  EXPECT_EQ(heard.size(), 3u);
}

}  // namespace
}  // namespace breaker::service
