#include "tests/support/quiet_relay.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace breaker::testing {
namespace {

// A request line and headers longer than this end the connection.
constexpr size_t kMaxRequestBytes = 64 << 10;

std::string OpenSslError() {
  char text[256] = "";
  ERR_error_string_n(ERR_get_error(), text, sizeof(text));
  return text;
}

}  // namespace

struct QuietRelay::Tls {
  ~Tls() { SSL_CTX_free(context); }
  SSL_CTX* context = nullptr;
};

absl::StatusOr<std::unique_ptr<QuietRelay>> QuietRelay::Start(std::string body,
                                                              std::optional<QuietRelayTls> tls) {
  std::unique_ptr<Tls> server_tls;
  if (tls.has_value()) {
    server_tls = std::make_unique<Tls>();
    server_tls->context = SSL_CTX_new(TLS_server_method());
    if (server_tls->context == nullptr ||
        SSL_CTX_set_min_proto_version(server_tls->context, TLS1_3_VERSION) != 1 ||
        SSL_CTX_use_certificate_chain_file(server_tls->context, tls->certificate_file.c_str()) !=
            1 ||
        SSL_CTX_use_PrivateKey_file(server_tls->context, tls->key_file.c_str(), SSL_FILETYPE_PEM) !=
            1 ||
        SSL_CTX_check_private_key(server_tls->context) != 1) {
      return absl::InternalError(absl::StrCat("TLS with ", tls->certificate_file, " and ",
                                              tls->key_file, ": ", OpenSslError()));
    }
  }
  const int listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (listen_fd < 0 || bind(listen_fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      listen(listen_fd, SOMAXCONN) != 0 ||
      getsockname(listen_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const std::string error = std::strerror(errno);
    if (listen_fd >= 0) close(listen_fd);
    return absl::InternalError(absl::StrCat("cannot listen on loopback: ", error));
  }
  std::string answer = absl::StrCat("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n",
                                    "Content-Length: ", body.size(), "\r\n\r\n", body);
  return std::unique_ptr<QuietRelay>(
      new QuietRelay(std::move(answer), std::move(server_tls), listen_fd, ntohs(address.sin_port)));
}

QuietRelay::QuietRelay(std::string answer, std::unique_ptr<Tls> tls, int listen_fd, int port)
    : answer_(std::move(answer)), tls_(std::move(tls)), listen_fd_(listen_fd), port_(port) {
  acceptor_ = std::thread([this] { Accept(); });
}

QuietRelay::~QuietRelay() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    // Ends the acceptor's accept() and every connection's read.
    shutdown(listen_fd_, SHUT_RDWR);
    for (int fd : connections_) shutdown(fd, SHUT_RDWR);
  }
  acceptor_.join();
  close(listen_fd_);
  // No thread is added once the acceptor is gone.
  std::vector<std::thread> threads;
  {
    MutexLock lock(&mu_);
    threads.swap(threads_);
  }
  for (std::thread& thread : threads) thread.join();
}

void QuietRelay::Accept() {
  while (true) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    MutexLock lock(&mu_);
    if (stopping_) {
      if (fd >= 0) close(fd);
      return;
    }
    if (fd < 0) continue;  // an aborted connection, or EINTR
    const int yes = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    connections_.push_back(fd);
    threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void QuietRelay::Serve(int fd) {
  SSL* ssl = nullptr;
  if (tls_ != nullptr) {
    ssl = SSL_new(tls_->context);
    if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1 || SSL_accept(ssl) != 1) {
      SSL_free(ssl);
      ssl = nullptr;
    }
  }
  const bool serving = tls_ == nullptr || ssl != nullptr;
  auto read = [&](char* buffer, size_t size) -> ssize_t {
    return ssl != nullptr ? SSL_read(ssl, buffer, static_cast<int>(size))
                          : recv(fd, buffer, size, 0);
  };
  auto write = [&](const std::string& bytes) {
    return ssl != nullptr ? SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size())) > 0
                          : send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
                                static_cast<ssize_t>(bytes.size());
  };
  std::string received;
  char buffer[16384];
  while (serving) {
    const size_t end = received.find("\r\n\r\n");
    if (end != std::string::npos) {
      received.erase(0, end + 4);
      if (!write(answer_)) break;
      continue;
    }
    if (received.size() > kMaxRequestBytes) break;
    const ssize_t n = read(buffer, sizeof(buffer));
    if (n <= 0) break;
    received.append(buffer, static_cast<size_t>(n));
  }
  if (ssl != nullptr) {
    SSL_shutdown(ssl);
    SSL_free(ssl);
  }
  MutexLock lock(&mu_);
  for (auto it = connections_.begin(); it != connections_.end(); ++it) {
    if (*it == fd) {
      connections_.erase(it);
      break;
    }
  }
  close(fd);
}

}  // namespace breaker::testing
