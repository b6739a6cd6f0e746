#include "bench/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <regex>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace breaker::bench {
namespace {

// Both breakerd and the baseline log "... listening on HOST:PORT (port N)".
const std::regex& ListeningLine() {
  static const std::regex* const kLine = new std::regex(R"(listening on \S+ \(port (\d+)\))");
  return *kLine;
}

// Reads what was appended to `path` from `offset` on, and moves `offset` past it.
std::string ReadFrom(const std::string& path, std::streamoff& offset) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return "";
  file.seekg(offset);
  std::stringstream text;
  text << file.rdbuf();
  const std::string appended = text.str();
  offset += static_cast<std::streamoff>(appended.size());
  return appended;
}

std::streamoff FileSize(const std::string& path) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  return file ? static_cast<std::streamoff>(file.tellg()) : 0;
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void ExecChild(const std::vector<char*>& argv, int log_fd) {
  // The child must not outlive a harness that crashed or was interrupted.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  dup2(log_fd, STDOUT_FILENO);
  dup2(log_fd, STDERR_FILENO);
  execv(argv[0], argv.data());
  _exit(127);
}

}  // namespace

ChildProcess::~ChildProcess() { Stop().IgnoreError(); }

absl::StatusOr<int> ChildProcess::Start(const std::vector<std::string>& argv,
                                        const std::string& log_path, absl::Duration timeout) {
  if (running()) return absl::FailedPreconditionError("the process is already running");
  log_path_ = log_path;
  std::streamoff offset = FileSize(log_path);
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return absl::InternalError(absl::StrCat("cannot open ", log_path, ": ", strerror(errno)));
  }
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) ExecChild(args, log_fd);
  close(log_fd);
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  pid_ = pid;

  const absl::Time deadline = absl::Now() + timeout;
  std::string seen;
  while (absl::Now() < deadline) {
    seen += ReadFrom(log_path, offset);
    std::smatch match;
    if (std::regex_search(seen, match, ListeningLine())) {
      int port = 0;
      if (absl::SimpleAtoi(match[1].str(), &port)) return port;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::InternalError(
          absl::StrCat(argv[0], " exited before listening; its log:\n", LogTail(log_path, 20)));
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  Stop().IgnoreError();
  return absl::DeadlineExceededError(absl::StrCat(argv[0], " did not log its port within ",
                                                  absl::FormatDuration(timeout), "; its log:\n",
                                                  LogTail(log_path, 20)));
}

absl::Status ChildProcess::Stop(absl::Duration timeout) {
  if (!running()) return absl::OkStatus();
  kill(pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) != pid_) {
    if (absl::Now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      pid_ = -1;
      return absl::DeadlineExceededError(
          absl::StrCat("the server did not stop within ", absl::FormatDuration(timeout),
                       " of SIGTERM and was killed; its log:\n", LogTail(log_path_, 20)));
    }
    absl::SleepFor(absl::Milliseconds(2));
  }
  pid_ = -1;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("the server ended with status ", status, "; its log:\n",
                                          LogTail(log_path_, 20)));
}

void ChildProcess::Kill() {
  if (!running()) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

absl::StatusOr<double> ChildProcess::CpuSeconds() const { return ProcessCpuSeconds(pid_); }

absl::StatusOr<double> ChildProcess::RssKiB() const { return ProcessRssKiB(pid_); }

LogFollower::LogFollower(std::string path) : path_(std::move(path)), offset_(FileSize(path_)) {}

absl::StatusOr<std::chrono::steady_clock::time_point> LogFollower::WaitFor(absl::string_view needle,
                                                                           absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    unread_ += ReadFrom(path_, offset_);
    const size_t at = unread_.find(needle.data(), 0, needle.size());
    if (at != std::string::npos) {
      const auto seen = std::chrono::steady_clock::now();
      const size_t end = unread_.find('\n', at);
      unread_.erase(0, end == std::string::npos ? unread_.size() : end + 1);
      return seen;
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("no line with '", needle, "' in ", path_,
                                                      " within ", absl::FormatDuration(timeout),
                                                      "; its tail:\n", LogTail(path_, 20)));
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
}

std::string LogTail(const std::string& path, int lines) {
  std::ifstream file(path);
  std::deque<std::string> tail;
  std::string line;
  while (std::getline(file, line)) {
    tail.push_back(line);
    if (static_cast<int>(tail.size()) > lines) tail.pop_front();
  }
  return absl::StrJoin(tail, "\n");
}

absl::StatusOr<double> ProcessCpuSeconds(pid_t pid) {
  std::ifstream file(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  if (!std::getline(file, stat)) {
    return absl::NotFoundError(absl::StrCat("no /proc/", pid, "/stat"));
  }
  // The command name, in parentheses, may hold spaces: fields are counted after its end.
  const size_t end = stat.rfind(')');
  if (end == std::string::npos) return absl::InternalError("unreadable /proc/PID/stat");
  std::vector<std::string> fields = absl::StrSplit(stat.substr(end + 2), ' ');
  // Fields 14 and 15 of proc(5), utime and stime, are the 12th and 13th after the name.
  double utime = 0;
  double stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtod(fields[11], &utime) ||
      !absl::SimpleAtod(fields[12], &stime)) {
    return absl::InternalError("unreadable /proc/PID/stat");
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

absl::StatusOr<double> ProcessRssKiB(pid_t pid) {
  std::ifstream file(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind("VmRSS:", 0) != 0) continue;
    std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    double kib = 0;
    if (words.size() >= 2 && absl::SimpleAtod(words[1], &kib)) return kib;
  }
  return absl::NotFoundError(absl::StrCat("no VmRSS in /proc/", pid, "/status"));
}

}  // namespace breaker::bench
