#ifndef SERVICE_TICKER_H_
#define SERVICE_TICKER_H_

// Runs a function at the times another function names, on a thread of its own: the fleet's
// slot boundaries and attempts to store again.

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"

namespace breaker::service {

// This class is thread-safe.
class Ticker {
 public:
  // Once started, calls `tick` when the clock reaches the time `next` returns, then asks
  // `next` again, until stopped. `next` and `tick` run on the ticker's thread.
  // REQUIRES: `clock` outlives the ticker.
  Ticker(const Clock& clock, std::function<absl::Time()> next, std::function<void()> tick);
  // Stops.
  ~Ticker();

  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

  // Starts the thread. REQUIRES: called at most once.
  void Start();
  // Stops the thread; `tick` is not called after it returns. A ticker never started, or
  // stopped already, stays stopped.
  void Stop();
  // Makes the ticker ask `next` again at once (the time it names changed). Does nothing to a
  // ticker that is not running.
  void Wake();

  // The longest the ticker waits before it reads the clock again: a wait near the largest
  // duration (a genesis far ahead) would overflow the condition variable's deadline.
  static constexpr absl::Duration kMaxWait = absl::Minutes(1);

 private:
  void Loop();

  const Clock& clock_;
  const std::function<absl::Time()> next_;
  const std::function<void()> tick_;

  Mutex mu_;
  CondVar changed_;
  // Counts Wake() calls, so that a wait sees one made while `next` ran.
  uint64_t wakes_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  std::thread thread_;
};

}  // namespace breaker::service

#endif  // SERVICE_TICKER_H_
