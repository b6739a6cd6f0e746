#include "client/log_thread.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace breaker::client {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;

// Lines in the order the sink saw them, as "<level>:<message>".
class Lines {
 public:
  LogFunction Sink() {
    return [this](LogLevel level, absl::string_view message) {
      MutexLock lock(&mu_);
      lines_.push_back(std::to_string(static_cast<int>(level)) + ":" + std::string(message));
    };
  }
  std::vector<std::string> Get() {
    MutexLock lock(&mu_);
    return lines_;
  }

 private:
  Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

TEST(LogThreadTest, DeliversEveryLineInOrderBeforeItEnds) {
  Lines lines;
  {
    LogThread thread(lines.Sink());
    thread.Log(LogLevel::kInfo, "one");
    thread.Log(LogLevel::kWarning, "two");
    thread.Log(LogLevel::kError, "three");
  }
  EXPECT_THAT(lines.Get(), ElementsAre("0:one", "1:two", "2:three"));
}

// A sink that blocks holds back only the lines behind it; past the queue's bound lines are
// dropped, and the next one delivered says how many.
TEST(LogThreadTest, ASlowSinkDropsLinesPastTheBoundAndSaysHowMany) {
  Mutex gate_mu;
  bool open = false;
  CondVar opened;
  Lines lines;
  LogFunction inner = lines.Sink();
  {
    LogThread thread([&](LogLevel level, absl::string_view message) {
      {
        MutexLock lock(&gate_mu);
        while (!open) opened.Wait(&gate_mu);
      }
      inner(level, message);
    });
    thread.Log(LogLevel::kInfo, "first");
    // The thread holds "first" (taken off the queue) or not yet: either way, the queue fills.
    for (size_t i = 0; i < LogThread::kMaxQueued + 10; ++i) thread.Log(LogLevel::kInfo, "more");
    {
      MutexLock lock(&gate_mu);
      open = true;
    }
    opened.SignalAll();
  }
  const std::vector<std::string> got = lines.Get();
  size_t notes = 0;
  size_t dropped = 0;
  size_t delivered = 0;
  for (const std::string& line : got) {
    if (line.find("log lines of the breaker client were dropped") != std::string::npos) {
      ++notes;
      dropped += std::stoul(line.substr(2));
    } else {
      ++delivered;
    }
  }
  EXPECT_EQ(notes, 1u);
  EXPECT_GT(dropped, 0u);
  // Every line is either delivered or counted.
  EXPECT_EQ(delivered + dropped, LogThread::kMaxQueued + 11);
  EXPECT_THAT(got, Contains("0:first"));
}

}  // namespace
}  // namespace breaker::client
