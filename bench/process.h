#ifndef BENCH_PROCESS_H_
#define BENCH_PROCESS_H_

// The server under load runs as a child process of the harness, so that its CPU time and
// memory are its own (read from /proc) and a restart is a real restart.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace breaker::bench {

// A server process: started with its stderr (and stdout) appended to a log file, ready once it
// logs "listening on ... (port N)". Stops it on destruction.
class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  // Runs `argv` (argv[0] is the executable's path) and waits until it logs its port.
  // Returns the port, or the log's last lines when it exits or stays silent past `timeout`.
  absl::StatusOr<int> Start(const std::vector<std::string>& argv, const std::string& log_path,
                            absl::Duration timeout);

  // SIGTERM, then waits for the exit (SIGKILL after `timeout`). Idempotent.
  absl::Status Stop(absl::Duration timeout = absl::Seconds(30));
  // SIGKILL, as a crash, and waits for the exit. Idempotent.
  void Kill();

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // User plus system CPU time used so far, all threads.
  absl::StatusOr<double> CpuSeconds() const;
  // Resident memory now (VmRSS).
  absl::StatusOr<double> RssKiB() const;

 private:
  pid_t pid_ = -1;
  std::string log_path_;
};

// What a server logs from now on: follows its log file from the current end, so that a test
// waits for a line the server writes after some event (a standby's "leading ..."). Polls the
// file every millisecond; the time it reports is when it read the line.
// This class is thread-compatible.
class LogFollower {
 public:
  explicit LogFollower(std::string path);

  // Waits for a line containing `needle` among the lines appended since the last line it
  // matched (or since construction); returns the steady-clock time at which it read it.
  // DEADLINE_EXCEEDED, with the log's tail, at `timeout`.
  absl::StatusOr<std::chrono::steady_clock::time_point> WaitFor(absl::string_view needle,
                                                                absl::Duration timeout);

 private:
  const std::string path_;
  std::streamoff offset_ = 0;
  // Read and not yet matched.
  std::string unread_;
};

// The tail of a log file, for error messages.
std::string LogTail(const std::string& path, int lines);

// CPU time and resident memory of any process, from /proc.
absl::StatusOr<double> ProcessCpuSeconds(pid_t pid);
absl::StatusOr<double> ProcessRssKiB(pid_t pid);

}  // namespace breaker::bench

#endif  // BENCH_PROCESS_H_
