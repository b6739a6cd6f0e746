#ifndef TESTS_SUBPROCESS_H_
#define TESTS_SUBPROCESS_H_

// A child process for tests that run the project's binaries as they run in production: its
// stdin is a pipe the test writes lines to, its stdout and stderr are captured line by line by
// reader threads (and echoed to the test's log, prefixed with the child's name), and it dies
// with the test, however the test ends.

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/mutex.h"

namespace breaker::testing {

class Subprocess {
 public:
  enum class Stream { kStdout = 0, kStderr = 1 };

  struct Options {
    // The executable: a path with a slash, relative to the working directory or absolute (no
    // PATH search: tests run their own binaries).
    std::string binary;
    // The arguments after argv[0].
    std::vector<std::string> args;
    // Environment variables set for the child, over the test's own environment.
    std::vector<std::pair<std::string, std::string>> env;
    // Prefixes the echoed lines in the test's log; default: the binary's file name.
    std::string name;
    // Echo the child's stdout and stderr to the test's stderr.
    bool echo = true;
  };

  // Starts the child. It gets SIGKILL when the thread that started it ends (PR_SET_PDEATHSIG),
  // so start it from the test's own thread, which outlives it.
  // Returns NOT_FOUND when the binary is not executable, INTERNAL when a pipe or fork fails.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(Options options);

  // Kills the child (SIGKILL) unless it has been reaped, reaps it, and joins the readers.
  ~Subprocess();

  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& name() const { return name_; }

  // Writes `line` and a newline to the child's stdin. Returns false when the child no longer
  // reads it (exited, or closed its stdin).
  bool WriteLine(absl::string_view line);
  // Closes the child's stdin: the child reads the end of its input.
  void CloseStdin();

  // The lines captured so far, without their newlines.
  std::vector<std::string> Lines(Stream stream) const;
  size_t LineCount(Stream stream) const;

  // Waits until `condition` holds for the lines of `stream` captured so far (called under the
  // capture lock, at every new line: it must be quick and must not call this object), until
  // `deadline`, or until the stream has ended (the child closed it, usually by exiting) and
  // the condition still does not hold. Returns whether it holds.
  bool WaitUntil(Stream stream,
                 const std::function<bool(const std::vector<std::string>&)>& condition,
                 absl::Time deadline) const;

  // Waits for a line of `stream` at index `from` or later that satisfies `predicate`; returns
  // its index, or nullopt at `deadline` or at the end of the stream.
  std::optional<size_t> WaitForLine(Stream stream,
                                    const std::function<bool(absl::string_view)>& predicate,
                                    absl::Time deadline, size_t from = 0) const;

  // Sends `signal` to the child. Does nothing once the child has been reaped (its pid may
  // belong to another process by then).
  void Kill(int signal);

  // Waits for the child to exit and reaps it; returns its wait status (see waitpid(2)). Later
  // calls return the same status.
  int Wait();
  // As Wait(), but gives up at `deadline`: nullopt while the child still runs.
  std::optional<int> WaitUntilExit(absl::Time deadline);

  // "exited with status 0", "killed by signal 9 (Killed)", for messages.
  static std::string DescribeStatus(int wait_status);

 private:
  Subprocess(std::string name, bool echo, pid_t pid, int stdin_fd, int stdout_fd, int stderr_fd);

  // Reads `fd` until its end, splitting it into lines of `stream`.
  void ReadLoop(Stream stream, int fd);

  const std::string name_;
  const bool echo_;
  const pid_t pid_;

  // The process's state: only the test's thread calls Kill, Wait and the stdin methods.
  Mutex process_mu_;
  std::optional<int> wait_status_;
  int stdin_fd_;

  // What the readers captured, per stream, and whether each stream has ended.
  mutable Mutex lines_mu_;
  mutable CondVar lines_changed_;
  std::vector<std::string> lines_[2];
  bool ended_[2] = {false, false};

  std::thread readers_[2];
};

// A loopback TCP port free at the time of the call, for a child process to listen on. Another
// process may take it before the child does; tests that cannot bear that let the child pick
// (port 0) and read the port it prints.
int FreeLoopbackPort();

}  // namespace breaker::testing

#endif  // TESTS_SUBPROCESS_H_
