#include "client/log_thread.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace breaker::client {

LogThread::LogThread(LogFunction sink) : sink_(std::move(sink)) {
  thread_ = std::thread([this] { Run(); });
}

LogThread::~LogThread() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  changed_.SignalAll();
  thread_.join();
}

void LogThread::Log(LogLevel level, std::string message) {
  {
    MutexLock lock(&mu_);
    if (queue_.size() >= kMaxQueued) {
      ++dropped_;
      return;
    }
    queue_.push_back(Line{level, std::move(message)});
  }
  changed_.Signal();
}

void LogThread::Run() {
  while (true) {
    Line line;
    uint64_t dropped = 0;
    {
      MutexLock lock(&mu_);
      while (queue_.empty() && !stopping_) changed_.Wait(&mu_);
      if (queue_.empty()) return;  // Stopping, and everything delivered.
      line = std::move(queue_.front());
      queue_.pop_front();
      std::swap(dropped, dropped_);
    }
    if (dropped > 0) {
      sink_(LogLevel::kWarning,
            absl::StrCat(dropped, " log lines of the breaker client were dropped: the log ",
                         "function took longer than the lines came"));
    }
    sink_(line.level, line.message);
  }
}

}  // namespace breaker::client
