#include "tests/support/subprocess.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/mutex.h"

extern char** environ;

namespace breaker::testing {
namespace {

// How often WaitUntilExit looks whether the child has exited.
constexpr absl::Duration kExitPoll = absl::Milliseconds(5);

// Writing to the stdin of a child that has exited must fail with EPIPE, not kill the test.
void IgnoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] { signal(SIGPIPE, SIG_IGN); });
}

// The child's environment: the test's, with `overrides` set.
std::vector<std::string> ChildEnvironment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const absl::string_view variable(*entry);
    bool overridden = false;
    for (const auto& [name, value] : overrides) {
      overridden =
          overridden || (variable.size() > name.size() && variable.substr(0, name.size()) == name &&
                         variable[name.size()] == '=');
    }
    if (!overridden) env.emplace_back(variable);
  }
  for (const auto& [name, value] : overrides) env.push_back(absl::StrCat(name, "=", value));
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

void CloseIfOpen(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// Runs in the child between fork and exec: only async-signal-safe calls, since the parent has
// threads whose locks the child inherits in whatever state they were.
[[noreturn]] void ExecChild(pid_t parent, int stdin_fd, int stdout_fd, int stderr_fd,
                            char* const* argv, char* const* envp) {
  // Die with the test: a test killed by its runner's timeout must not leave a breakerd
  // holding its port and state directory.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before the line above
  if (dup2(stdin_fd, STDIN_FILENO) < 0 || dup2(stdout_fd, STDOUT_FILENO) < 0 ||
      dup2(stderr_fd, STDERR_FILENO) < 0) {
    _exit(127);
  }
  // The test may ignore or block signals (SIGPIPE above); the child starts as from a shell.
  struct sigaction default_action;
  std::memset(&default_action, 0, sizeof(default_action));
  default_action.sa_handler = SIG_DFL;
  for (int signal_number : {SIGPIPE, SIGINT, SIGTERM, SIGHUP}) {
    sigaction(signal_number, &default_action, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(argv[0], argv, envp);
  static const char kMessage[] = "subprocess: execve failed\n";
  (void)!write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  _exit(127);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(Options options) {
  IgnoreSigpipe();
  const std::string binary = std::filesystem::absolute(options.binary).string();
  if (access(binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot execute '", binary, "': ", std::strerror(errno)));
  }
  std::string name = options.name.empty()
                         ? std::filesystem::path(options.binary).filename().string()
                         : options.name;

  // Everything the child needs is built before fork: see ExecChild.
  std::vector<std::string> arg_strings = {binary};
  arg_strings.insert(arg_strings.end(), options.args.begin(), options.args.end());
  std::vector<std::string> env_strings = ChildEnvironment(options.env);
  std::vector<char*> argv = Pointers(arg_strings);
  std::vector<char*> envp = Pointers(env_strings);

  // [0] read end, [1] write end; close-on-exec, so that no other child inherits them (dup2
  // clears the flag on the child's own copies).
  int pipes[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
  auto close_all = [&pipes] {
    for (auto& pipe_fds : pipes) {
      CloseIfOpen(pipe_fds[0]);
      CloseIfOpen(pipe_fds[1]);
    }
  };
  for (auto& pipe_fds : pipes) {
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
      const int error = errno;
      close_all();
      return absl::InternalError(absl::StrCat("pipe2: ", std::strerror(error)));
    }
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    close_all();
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(error)));
  }
  if (pid == 0) ExecChild(parent, pipes[0][0], pipes[1][1], pipes[2][1], argv.data(), envp.data());

  // The parent keeps the write end of stdin and the read ends of stdout and stderr.
  const int stdin_fd = pipes[0][1];
  const int stdout_fd = pipes[1][0];
  const int stderr_fd = pipes[2][0];
  pipes[0][1] = pipes[1][0] = pipes[2][0] = -1;
  close_all();
  return std::unique_ptr<Subprocess>(
      new Subprocess(std::move(name), options.echo, pid, stdin_fd, stdout_fd, stderr_fd));
}

Subprocess::Subprocess(std::string name, bool echo, pid_t pid, int stdin_fd, int stdout_fd,
                       int stderr_fd)
    : name_(std::move(name)), echo_(echo), pid_(pid), stdin_fd_(stdin_fd) {
  readers_[0] = std::thread([this, stdout_fd] { ReadLoop(Stream::kStdout, stdout_fd); });
  readers_[1] = std::thread([this, stderr_fd] { ReadLoop(Stream::kStderr, stderr_fd); });
}

Subprocess::~Subprocess() {
  Kill(SIGKILL);
  Wait();
  CloseStdin();
  // The child is gone, so its ends of the pipes are closed: the readers see the end.
  for (std::thread& reader : readers_) reader.join();
}

bool Subprocess::WriteLine(absl::string_view line) {
  MutexLock lock(&process_mu_);
  if (stdin_fd_ < 0) return false;
  const std::string data = absl::StrCat(line, "\n");
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = write(stdin_fd_, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<size_t>(n);
  }
  return true;
}

void Subprocess::CloseStdin() {
  MutexLock lock(&process_mu_);
  CloseIfOpen(stdin_fd_);
}

void Subprocess::ReadLoop(Stream stream, int fd) {
  const int index = static_cast<int>(stream);
  const char* const label = stream == Stream::kStdout ? "out" : "err";
  std::string pending;
  char buffer[4096];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, static_cast<size_t>(n));
    size_t newline;
    while ((newline = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, newline);
      pending.erase(0, newline + 1);
      if (echo_) std::fprintf(stderr, "[%s %s] %s\n", name_.c_str(), label, line.c_str());
      MutexLock lock(&lines_mu_);
      lines_[index].push_back(std::move(line));
      lines_changed_.SignalAll();
    }
  }
  close(fd);
  MutexLock lock(&lines_mu_);
  if (!pending.empty()) lines_[index].push_back(std::move(pending));  // no final newline
  ended_[index] = true;
  lines_changed_.SignalAll();
}

std::vector<std::string> Subprocess::Lines(Stream stream) const {
  MutexLock lock(&lines_mu_);
  return lines_[static_cast<int>(stream)];
}

size_t Subprocess::LineCount(Stream stream) const {
  MutexLock lock(&lines_mu_);
  return lines_[static_cast<int>(stream)].size();
}

bool Subprocess::WaitUntil(Stream stream,
                           const std::function<bool(const std::vector<std::string>&)>& condition,
                           absl::Time deadline) const {
  const int index = static_cast<int>(stream);
  MutexLock lock(&lines_mu_);
  while (true) {
    if (condition(lines_[index])) return true;
    if (ended_[index]) return false;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    lines_changed_.WaitFor(&lines_mu_, left);
  }
}

std::optional<size_t> Subprocess::WaitForLine(
    Stream stream, const std::function<bool(absl::string_view)>& predicate, absl::Time deadline,
    size_t from) const {
  std::optional<size_t> found;
  // Each line is tested once, however many times the condition runs.
  size_t next = from;
  WaitUntil(
      stream,
      [&](const std::vector<std::string>& lines) {
        for (; next < lines.size(); ++next) {
          if (predicate(lines[next])) {
            found = next;
            return true;
          }
        }
        return false;
      },
      deadline);
  return found;
}

void Subprocess::Kill(int signal) {
  MutexLock lock(&process_mu_);
  if (!wait_status_.has_value()) kill(pid_, signal);
}

int Subprocess::Wait() { return *WaitUntilExit(absl::InfiniteFuture()); }

std::optional<int> Subprocess::WaitUntilExit(absl::Time deadline) {
  while (true) {
    {
      MutexLock lock(&process_mu_);
      if (wait_status_.has_value()) return wait_status_;
      int status = 0;
      const pid_t reaped = waitpid(pid_, &status, WNOHANG);
      if (reaped == pid_) {
        wait_status_ = status;
        return wait_status_;
      }
      if (reaped < 0 && errno != EINTR) {
        // Not our child any more (reaped elsewhere): nothing left to wait for.
        wait_status_ = -1;
        return wait_status_;
      }
    }
    if (absl::Now() >= deadline) return std::nullopt;
    absl::SleepFor(kExitPoll);
  }
}

std::string Subprocess::DescribeStatus(int wait_status) {
  if (wait_status == -1) return "reaped elsewhere";
  if (WIFEXITED(wait_status)) return absl::StrCat("exited with status ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    return absl::StrCat("killed by signal ", WTERMSIG(wait_status), " (",
                        strsignal(WTERMSIG(wait_status)), ")");
  }
  return absl::StrCat("wait status ", wait_status);
}

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

}  // namespace breaker::testing
