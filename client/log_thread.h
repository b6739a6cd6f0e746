#ifndef CLIENT_LOG_THREAD_H_
#define CLIENT_LOG_THREAD_H_

// Delivers a client's log lines to the host program's log function, on a thread of its own.
//
// The library logs from its connection thread, often under its own locks; a host's function
// may call the client back (its stats, its policy) or block on its own logger. Queued here and
// delivered by this thread, one line at a time, in order, with no lock of the library held,
// neither can deadlock nor slow the connection.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "client/client.h"
#include "common/mutex.h"

namespace breaker::client {

// Thread-safe. Log() never blocks but on the queue's mutex, held for O(1).
class LogThread {
 public:
  // Lines waiting at once; past it a line is dropped, and the next line delivered is preceded
  // by a warning saying how many were.
  static constexpr size_t kMaxQueued = 1024;

  // Starts the thread, which calls `sink` with each line.
  explicit LogThread(LogFunction sink);
  // Delivers the lines queued, then ends the thread.
  ~LogThread();

  LogThread(const LogThread&) = delete;
  LogThread& operator=(const LogThread&) = delete;

  void Log(LogLevel level, std::string message);

 private:
  struct Line {
    LogLevel level;
    std::string message;
  };

  void Run();

  const LogFunction sink_;
  Mutex mu_;
  CondVar changed_;
  std::deque<Line> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace breaker::client

#endif  // CLIENT_LOG_THREAD_H_
