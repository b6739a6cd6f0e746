#ifndef TESTS_SUPPORT_QUIET_RELAY_H_
#define TESTS_SUPPORT_QUIET_RELAY_H_

// A relay for latency benchmarks: it answers every request with the same 200 answer, at once, and
// adds no wait of its own, so that what a benchmark measures is the path, not the relay.
//
// cpp-httplib's server, which the functional tests' fake relay uses, is not quiet enough for a
// tail: between two requests on a kept-alive connection it polls in 10 ms slices with a 1 ms
// sleep between them, so a request that arrives during a sleep (about one in eleven) waits up to
// a millisecond more, on whichever path it came; and it writes an answer's head and body
// separately. Here each connection has a thread blocked in its read, and each answer leaves in
// one write.
//
// Plain HTTP/1.1 or TLS (OpenSSL, TLS 1.3 only, as relays serve it); requests without a body
// only (GET), kept alive until the caller closes.

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "common/mutex.h"

namespace breaker::testing {

struct QuietRelayTls {
  // PEM files: the certificate chain, and its key.
  std::string certificate_file;
  std::string key_file;
};

// This class is thread-safe.
class QuietRelay {
 public:
  // Serves on 127.0.0.1, on a port of the kernel's choice: every request is answered 200 with
  // `body` as application/json. Returns INTERNAL naming what failed (a socket, the TLS files).
  static absl::StatusOr<std::unique_ptr<QuietRelay>> Start(std::string body,
                                                           std::optional<QuietRelayTls> tls);
  // Closes the port and every connection, and waits for their threads.
  ~QuietRelay();

  QuietRelay(const QuietRelay&) = delete;
  QuietRelay& operator=(const QuietRelay&) = delete;

  int port() const { return port_; }

 private:
  struct Tls;
  QuietRelay(std::string answer, std::unique_ptr<Tls> tls, int listen_fd, int port);

  void Accept();
  void Serve(int fd);

  // The whole answer: status line, headers and body.
  const std::string answer_;
  const std::unique_ptr<Tls> tls_;
  const int listen_fd_;
  const int port_;
  std::thread acceptor_;

  Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Connections' sockets, shut down at the stop so that their threads' reads end.
  std::vector<int> connections_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace breaker::testing

#endif  // TESTS_SUPPORT_QUIET_RELAY_H_
