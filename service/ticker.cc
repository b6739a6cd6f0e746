#include "service/ticker.h"

#include <algorithm>
#include <utility>

namespace breaker::service {

Ticker::Ticker(const Clock& clock, std::function<absl::Time()> next, std::function<void()> tick)
    : clock_(clock), next_(std::move(next)), tick_(std::move(tick)) {}

Ticker::~Ticker() { Stop(); }

void Ticker::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Ticker::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    changed_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

void Ticker::Wake() {
  MutexLock lock(&mu_);
  ++wakes_;
  changed_.SignalAll();
}

void Ticker::Loop() {
  while (true) {
    uint64_t wakes;
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      wakes = wakes_;
    }
    const absl::Time at = next_();
    {
      MutexLock lock(&mu_);
      // The clock may be a test's: wait by real time for as long as it says, then read it
      // again.
      changed_.Await(&mu_, std::min(at - clock_.Now(), kMaxWait),
                     [this, wakes]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                       return stopping_ || wakes_ != wakes;
                     });
      if (stopping_) return;
      if (wakes_ != wakes) continue;  // woken: ask `next` again
    }
    if (clock_.Now() >= at) tick_();
  }
}

}  // namespace breaker::service
