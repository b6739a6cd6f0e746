#include "common/mutex.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace breaker {
namespace {

TEST(MutexTest, SerializesIncrements) {
  Mutex mu;
  int count = 0;  // Guarded by mu.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        MutexLock lock(&mu);
        ++count;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  MutexLock lock(&mu);
  EXPECT_EQ(count, 40000);
}

TEST(CondVarTest, WaitReturnsOnceSignalledAndTheConditionHolds) {
  Mutex mu;
  CondVar changed;
  bool ready = false;  // Guarded by mu.
  std::thread setter([&] {
    MutexLock lock(&mu);
    ready = true;
    changed.SignalAll();
  });
  {
    MutexLock lock(&mu);
    while (!ready) changed.Wait(&mu);
    EXPECT_TRUE(ready);
  }
  setter.join();
}

TEST(CondVarTest, WaitForTimesOutWithoutASignalAndKeepsTheLock) {
  Mutex mu;
  CondVar never;
  MutexLock lock(&mu);
  EXPECT_TRUE(never.WaitFor(&mu, absl::Milliseconds(1)));
  // The lock is held again: unlocking and relocking works without deadlock.
  mu.Unlock();
  mu.Lock();
}

TEST(CondVarTest, WaitUntilAPastDeadlineTimesOut) {
  Mutex mu;
  CondVar never;
  MutexLock lock(&mu);
  EXPECT_TRUE(never.WaitUntil(&mu, std::chrono::steady_clock::now()));
}

TEST(CondVarTest, AwaitReturnsAtOnceWhenTheConditionHolds) {
  Mutex mu;
  CondVar never;
  MutexLock lock(&mu);
  EXPECT_TRUE(never.Await(&mu, absl::ZeroDuration(), [] { return true; }));
  EXPECT_TRUE(never.Await(&mu, absl::InfiniteDuration(), [] { return true; }));
}

TEST(CondVarTest, AwaitReturnsOnceAnotherThreadMakesTheConditionTrue) {
  Mutex mu;
  CondVar changed;
  bool ready = false;  // Guarded by mu.
  std::thread setter([&] {
    MutexLock lock(&mu);
    ready = true;
    changed.SignalAll();
  });
  {
    MutexLock lock(&mu);
    // Without a timeout, and with one far longer than the test may take.
    EXPECT_TRUE(changed.Await(&mu, absl::InfiniteDuration(), [&] { return ready; }));
    ready = false;
  }
  setter.join();
  std::thread again([&] {
    MutexLock lock(&mu);
    ready = true;
    changed.SignalAll();
  });
  {
    MutexLock lock(&mu);
    EXPECT_TRUE(changed.Await(&mu, absl::Hours(1), [&] { return ready; }));
  }
  again.join();
}

TEST(CondVarTest, AwaitTimesOutThroughSpuriousWakeupsAndKeepsTheLock) {
  Mutex mu;
  CondVar changed;
  std::atomic<bool> done{false};
  // Wakes the waiter again and again without ever making its condition true.
  std::thread waker([&] {
    while (!done.load()) {
      changed.SignalAll();
      absl::SleepFor(absl::Microseconds(100));
    }
  });
  const absl::Time start = absl::Now();
  {
    MutexLock lock(&mu);
    EXPECT_FALSE(changed.Await(&mu, absl::Milliseconds(50), [] { return false; }));
    mu.Unlock();  // held again: unlocking and relocking works without deadlock
    mu.Lock();
  }
  const absl::Duration took = absl::Now() - start;
  done.store(true);
  waker.join();
  // Neither ended early by a wakeup nor lengthened by each one.
  EXPECT_GE(took, absl::Milliseconds(50));
  EXPECT_LT(took, absl::Seconds(10));
}

TEST(CondVarTest, AwaitWithANegativeTimeoutOnlyLooksAtTheCondition) {
  Mutex mu;
  CondVar never;
  MutexLock lock(&mu);
  EXPECT_FALSE(never.Await(&mu, -absl::Seconds(1), [] { return false; }));
}

}  // namespace
}  // namespace breaker
