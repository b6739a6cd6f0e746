#include "common/metrics_exposer.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/port_holder.h"
#include "prometheus/text_serializer.h"

namespace breaker::common {
namespace {

// Insist on host:port so that the error can say what is wrong.
absl::Status ValidateAddress(const std::string& address, absl::string_view setting) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(address).substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(setting, " '", address,
                     "' is not host:port; pass e.g. 127.0.0.1:9464, or empty to turn metrics off"));
  }
  return absl::OkStatus();
}

// A listening socket bound to `address` (validated), non-blocking; its port in `port`.
absl::StatusOr<int> Listen(const std::string& address, int& port) {
  const size_t colon = address.rfind(':');
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string service = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int error = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); error != 0) {
    return absl::UnavailableError(gai_strerror(error));
  }
  std::string last_error = "no address";
  int fd = -1;
  for (addrinfo* at = found; at != nullptr && fd < 0; at = at->ai_next) {
    fd = socket(at->ai_family, at->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, at->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    const int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (bind(fd, at->ai_addr, at->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      last_error = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return absl::UnavailableError(last_error);
  sockaddr_storage bound{};
  socklen_t size = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size);
  port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return fd;
}

std::string Response(absl::string_view status, absl::string_view content_type,
                     absl::string_view body) {
  return absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", content_type,
                      "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body);
}

}  // namespace

struct MetricsServer::Connection {
  int fd = -1;
  // By the clock's monotonic reading.
  absl::Duration deadline;
  std::string request;
  // The answer, once the request is in; `sent` bytes of it written.
  std::string answer;
  size_t sent = 0;
};

MetricsServer::MetricsServer(int listen_fd, int wake_read, int wake_write, int port,
                             const Clock& clock)
    : listen_fd_(listen_fd),
      wake_read_(wake_read),
      wake_write_(wake_write),
      port_(port),
      clock_(clock) {
  thread_ = std::thread([this] { Run(); });
}

MetricsServer::~MetricsServer() {
  stopping_ = true;
  const char byte = 0;
  while (write(wake_write_, &byte, 1) < 0 && errno == EINTR) {
  }
  thread_.join();
  close(listen_fd_);
  close(wake_read_);
  close(wake_write_);
}

void MetricsServer::RegisterCollectable(const std::weak_ptr<prometheus::Collectable>& collectable) {
  MutexLock lock(&mu_);
  collectables_.push_back(collectable);
}

std::string MetricsServer::Scrape() {
  std::vector<std::shared_ptr<prometheus::Collectable>> alive;
  {
    MutexLock lock(&mu_);
    for (const auto& weak : collectables_) {
      if (auto collectable = weak.lock()) alive.push_back(std::move(collectable));
    }
  }
  std::vector<prometheus::MetricFamily> families;
  for (const auto& collectable : alive) {
    std::vector<prometheus::MetricFamily> collected = collectable->Collect();
    std::move(collected.begin(), collected.end(), std::back_inserter(families));
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

void MetricsServer::Run() {
  // In the order they were accepted: the front is the oldest.
  std::vector<Connection> connections;
  std::vector<pollfd> polled;
  auto answer = [this](Connection& connection) {
    const absl::string_view request = connection.request;
    const size_t line_end = request.find("\r\n");
    const absl::string_view line = request.substr(0, line_end);
    const size_t space = line.find(' ');
    const absl::string_view method = line.substr(0, space);
    absl::string_view target = space == absl::string_view::npos
                                   ? ""
                                   : line.substr(space + 1, line.find(' ', space + 1) - space - 1);
    target = target.substr(0, target.find('?'));
    if (method != "GET") {
      connection.answer = Response("405 Method Not Allowed", "text/plain", "use GET /metrics\n");
    } else if (target != "/metrics") {
      connection.answer = Response("404 Not Found", "text/plain", "metrics are at /metrics\n");
    } else {
      connection.answer = Response("200 OK", "text/plain; version=0.0.4; charset=utf-8", Scrape());
    }
  };
  while (!stopping_) {
    polled.clear();
    polled.push_back({wake_read_, POLLIN, 0});
    polled.push_back({listen_fd_, POLLIN, 0});
    absl::Duration first_deadline = absl::InfiniteDuration();
    for (const Connection& connection : connections) {
      polled.push_back(
          {connection.fd, connection.answer.empty() ? short{POLLIN} : short{POLLOUT}, 0});
      first_deadline = std::min(first_deadline, connection.deadline);
    }
    int timeout_ms = -1;
    if (first_deadline != absl::InfiniteDuration()) {
      const absl::Duration left =
          absl::Ceil(first_deadline - clock_.Monotonic(), absl::Milliseconds(1));
      timeout_ms = static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(left)));
    }
    if (poll(polled.data(), polled.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (stopping_) break;

    const absl::Duration now = clock_.Monotonic();
    for (size_t i = 0; i < connections.size(); ++i) {
      Connection& connection = connections[i];
      const short events = polled[i + 2].revents;
      bool done = now >= connection.deadline || (events & (POLLERR | POLLNVAL)) != 0;
      if (!done && connection.answer.empty() && (events & (POLLIN | POLLHUP)) != 0) {
        char buffer[4096];
        const ssize_t got = recv(connection.fd, buffer, sizeof(buffer), 0);
        if (got > 0) {
          connection.request.append(buffer, static_cast<size_t>(got));
          if (connection.request.find("\r\n\r\n") != std::string::npos) {
            answer(connection);
          } else if (connection.request.size() > kMaxRequestBytes) {
            connection.answer =
                Response("431 Request Header Fields Too Large", "text/plain", "request too long\n");
          }
        } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
          done = true;
        }
      }
      if (!done && !connection.answer.empty() && (events & POLLOUT) != 0) {
        const ssize_t put = send(connection.fd, connection.answer.data() + connection.sent,
                                 connection.answer.size() - connection.sent, MSG_NOSIGNAL);
        if (put > 0) {
          connection.sent += static_cast<size_t>(put);
          done = connection.sent == connection.answer.size();
        } else if (errno != EAGAIN && errno != EINTR) {
          done = true;
        }
      }
      if (done) {
        close(connection.fd);
        connection.fd = -1;
      }
    }
    connections.erase(std::remove_if(connections.begin(), connections.end(),
                                     [](const Connection& c) { return c.fd < 0; }),
                      connections.end());

    if ((polled[1].revents & POLLIN) == 0) continue;
    while (true) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        // Out of descriptors: the oldest connection makes room, or the new one waits in the
        // backlog for the next round.
        if ((errno == EMFILE || errno == ENFILE) && !connections.empty()) {
          close(connections.front().fd);
          connections.erase(connections.begin());
          continue;
        }
        break;
      }
      if (static_cast<int>(connections.size()) >= kMaxConnections) {
        close(connections.front().fd);
        connections.erase(connections.begin());
      }
      Connection& connection = connections.emplace_back();
      connection.fd = fd;
      connection.deadline = clock_.Monotonic() + kExchangeTimeout;
    }
  }
  for (const Connection& connection : connections) close(connection.fd);
}

absl::StatusOr<std::unique_ptr<MetricsServer>> StartMetricsExposer(
    const std::string& listen_address, absl::string_view setting, const Clock& clock) {
  if (absl::Status status = ValidateAddress(listen_address, setting); !status.ok()) return status;
  int port = 0;
  absl::StatusOr<int> listening = Listen(listen_address, port);
  if (!listening.ok()) {
    // ValidateAddress above made sure the port parses.
    int wanted = 0;
    if (!absl::SimpleAtoi(absl::string_view(listen_address).substr(listen_address.rfind(':') + 1),
                          &wanted)) {
      wanted = 0;
    }
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on '", listen_address, "' (",
                                               listening.status().message(), "): address in use",
                                               PortHolderSuffix(wanted), " or invalid; pass ",
                                               setting, " with a free host:port"));
  }
  int wake[2];
  if (pipe2(wake, O_CLOEXEC) != 0) {
    close(*listening);
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics: no pipe (", std::strerror(errno), ")"));
  }
  return std::unique_ptr<MetricsServer>(
      new MetricsServer(*listening, wake[0], wake[1], port, clock));
}

}  // namespace breaker::common
