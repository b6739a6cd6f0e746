#include "tests/support/tcp_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/mutex.h"

namespace breaker::testing {
namespace {

// Bytes read from one side and not yet written to the other, per direction; beyond it the proxy
// stops reading that side (back-pressure instead of unbounded memory).
constexpr size_t kMaxBuffered = 1 << 20;

absl::Status Errno(absl::string_view call) {
  return absl::InternalError(absl::StrCat(call, ": ", std::strerror(errno)));
}

sockaddr_in Loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  return address;
}

// Each chunk goes out as it comes: with Nagle's algorithm, the second small write of an
// answer (head, then body) would wait for a delayed acknowledgement, tens of milliseconds.
void NoDelay(int fd) {
  int yes = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
}

// A connected socket to the target, non-blocking; -1 when the target refuses.
int ConnectTo(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  // A blocking connect: on loopback it completes or is refused at once.
  sockaddr_in address = Loopback(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

// Bytes read from one side, to be written to the other once `due`.
struct Chunk {
  absl::Time due;
  std::string bytes;
};

// One proxied connection: side 0 is the peer that connected to the proxy, side 1 the target.
struct TcpProxy::Connection {
  int fds[2] = {-1, -1};
  // pending[i]: bytes to write to side i, oldest first, and how many in all.
  std::deque<Chunk> pending[2];
  size_t pending_bytes[2] = {0, 0};
  // Each chunk's hold, and before when nothing reaches the target (the handshake's round trip).
  absl::Duration delay;
  absl::Time established;
  // Side i sent its end of stream; side i was told the end of stream (shutdown for writing).
  bool read_ended[2] = {false, false};
  bool write_shut[2] = {false, false};
  bool failed = false;

  ~Connection() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }

  bool Done() const {
    return failed || (read_ended[0] && read_ended[1] && pending[0].empty() && pending[1].empty());
  }

  // When the next chunk for side i may go out; InfiniteFuture when there is none.
  absl::Time NextDue(int side) const {
    return pending[side].empty() ? absl::InfiniteFuture() : pending[side].front().due;
  }

  short Events(int side, absl::Time now) const {
    short events = 0;
    if (!read_ended[side] && pending_bytes[1 - side] < kMaxBuffered) events |= POLLIN;
    if (NextDue(side) <= now) events |= POLLOUT;
    return events;
  }

  void Handle(int side, short revents, absl::Time now) {
    if (revents & POLLERR) {
      failed = true;
      return;
    }
    if ((revents & POLLOUT) && NextDue(side) <= now) {
      std::string& out = pending[side].front().bytes;
      const ssize_t n = send(fds[side], out.data(), out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        out.erase(0, static_cast<size_t>(n));
        pending_bytes[side] -= static_cast<size_t>(n);
        if (out.empty()) pending[side].pop_front();
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        failed = true;
        return;
      }
    }
    if (revents & (POLLIN | POLLHUP)) {
      if (!(Events(side, now) & POLLIN)) {
        // A hang-up while the other direction is full: nothing more will come from this side.
        if (revents & POLLHUP) failed = true;
        return;
      }
      char buffer[65536];
      const ssize_t n = recv(fds[side], buffer, sizeof(buffer), 0);
      if (n > 0) {
        const absl::Time sent = side == 0 ? std::max(now, established) : now;
        pending[1 - side].push_back(
            Chunk{sent + delay, std::string(buffer, static_cast<size_t>(n))});
        pending_bytes[1 - side] += static_cast<size_t>(n);
      } else if (n == 0) {
        read_ended[side] = true;
      } else if (errno != EAGAIN && errno != EINTR) {
        failed = true;
        return;
      }
    }
    // Pass an end of stream on once everything before it has been written.
    for (int from = 0; from < 2; ++from) {
      const int to = 1 - from;
      if (read_ended[from] && pending[to].empty() && !write_shut[to]) {
        shutdown(fds[to], SHUT_WR);
        write_shut[to] = true;
      }
    }
  }
};

absl::StatusOr<std::unique_ptr<TcpProxy>> TcpProxy::Start(int target_port,
                                                          absl::Duration one_way_delay) {
  const int listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd < 0) return Errno("socket");
  sockaddr_in address = Loopback(0);
  socklen_t length = sizeof(address);
  if (bind(listen_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(listen_fd, 64) != 0 ||
      getsockname(listen_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    absl::Status status = Errno("bind/listen");
    close(listen_fd);
    return status;
  }
  const int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    absl::Status status = Errno("eventfd");
    close(listen_fd);
    return status;
  }
  return std::unique_ptr<TcpProxy>(
      new TcpProxy(listen_fd, wake_fd, ntohs(address.sin_port), target_port, one_way_delay));
}

TcpProxy::TcpProxy(int listen_fd, int wake_fd, int port, int target_port, absl::Duration delay)
    : listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      port_(port),
      target_port_(target_port),
      delay_(delay) {
  thread_ = std::thread([this] { Loop(); });
}

TcpProxy::~TcpProxy() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  thread_.join();
  close(listen_fd_);
  close(wake_fd_);
}

void TcpProxy::Cut() { SetCut(true); }

void TcpProxy::Restore() { SetCut(false); }

void TcpProxy::SetCut(bool cut) {
  MutexLock lock(&mu_);
  cut_ = cut;
  const uint64_t request = ++requested_;
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  while (applied_requests_ < request) applied_.Wait(&mu_);
}

void TcpProxy::Accept(std::vector<std::unique_ptr<Connection>>& connections, bool cut) {
  while (true) {
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (client < 0) return;  // EAGAIN: none left (or an aborted one: nothing to forward)
    if (cut) {
      close(client);  // refused: the peer's connection ends at once
      continue;
    }
    const int upstream = ConnectTo(target_port_);
    if (upstream < 0) {
      close(client);  // the target is down: so is the path through the proxy
      continue;
    }
    NoDelay(client);
    NoDelay(upstream);
    auto connection = std::make_unique<Connection>();
    connection->fds[0] = client;
    connection->fds[1] = upstream;
    connection->delay = delay_;
    connection->established = absl::Now() + 2 * delay_;
    connections.push_back(std::move(connection));
    ++forwarded_;
  }
}

void TcpProxy::Loop() {
  // A timed sleep may otherwise end up to 50 us late (the kernel's default slack): noise in
  // every held chunk, on both of the paths a benchmark compares.
  prctl(PR_SET_TIMERSLACK, 1UL);
  std::vector<std::unique_ptr<Connection>> connections;
  while (true) {
    bool cut = false;
    {
      MutexLock lock(&mu_);
      if (stopping_) return;  // connections close as the vector goes
      cut = cut_;
      if (cut) connections.clear();  // both sides see their connection end
      if (applied_requests_ != requested_) {
        applied_requests_ = requested_;
        applied_.SignalAll();
      }
    }

    const absl::Time now = absl::Now();
    absl::Time wake = absl::InfiniteFuture();
    std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    for (const auto& connection : connections) {
      for (int side = 0; side < 2; ++side) {
        fds.push_back({connection->fds[side], connection->Events(side, now), 0});
        wake = std::min(wake, connection->NextDue(side));
      }
    }
    // Until the next held chunk is due, to the nanosecond (poll's milliseconds would add up
    // to one to every chunk).
    timespec timeout{};
    if (wake != absl::InfiniteFuture()) {
      timeout = absl::ToTimespec(std::max(absl::ZeroDuration(), wake - now));
    }
    if (ppoll(fds.data(), fds.size(), wake == absl::InfiniteFuture() ? nullptr : &timeout,
              nullptr) < 0) {
      continue;  // EINTR
    }
    const absl::Time woke = absl::Now();

    if (fds[1].revents & POLLIN) {
      uint64_t count;
      (void)!read(wake_fd_, &count, sizeof(count));
    }
    for (size_t i = 0; i < connections.size(); ++i) {
      for (int side = 0; side < 2; ++side) {
        const short revents = fds[2 + 2 * i + side].revents;
        if (!connections[i]->failed && (revents != 0 || connections[i]->NextDue(side) <= woke)) {
          connections[i]->Handle(
              side, revents | (connections[i]->NextDue(side) <= woke ? POLLOUT : 0), woke);
        }
      }
    }
    connections.erase(std::remove_if(connections.begin(), connections.end(),
                                     [](const auto& connection) { return connection->Done(); }),
                      connections.end());
    if (fds[0].revents & POLLIN) Accept(connections, cut);
  }
}

}  // namespace breaker::testing
