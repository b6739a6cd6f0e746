#include "common/mutex.h"

#include <thread>
#include <vector>

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

}  // namespace
}  // namespace breaker
