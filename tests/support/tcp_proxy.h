#ifndef TESTS_TCP_PROXY_H_
#define TESTS_TCP_PROXY_H_

// A TCP proxy on loopback, to partition one process from another in a test: a node connects to
// the proxy's port instead of breakerd's, and the test cuts the link and restores it. With a
// one-way delay it is also a delay line, the network between a host and a relay far away: each
// chunk of bytes is held that long before it is passed on, either way, and a new connection's
// first bytes wait one round trip more, as TCP's handshake would have them.

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/mutex.h"

namespace breaker::testing {

// Forwards every connection accepted on 127.0.0.1:port() to 127.0.0.1:target_port, bytes
// both ways, on one thread of its own. This class is thread-safe.
class TcpProxy {
 public:
  // Listens on a free loopback port. Returns INTERNAL when a socket call fails.
  static absl::StatusOr<std::unique_ptr<TcpProxy>> Start(
      int target_port, absl::Duration one_way_delay = absl::ZeroDuration());

  // Closes every connection and the listening port.
  ~TcpProxy();

  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }

  // Closes every current connection (both sides see the connection end) and, until Restore(),
  // closes each new one at once: the port stays bound, so the peer's reconnects keep failing
  // rather than reaching something else. Returns once the connections are closed.
  void Cut();
  // Forwards new connections again. Returns once the proxy does.
  void Restore();

  // Connections forwarded to the target since the start.
  int64_t forwarded() const { return forwarded_.load(); }

 private:
  struct Connection;

  TcpProxy(int listen_fd, int wake_fd, int port, int target_port, absl::Duration delay);

  void Loop();
  // Accepts one pending connection: forwards it, or closes it while cut.
  void Accept(std::vector<std::unique_ptr<Connection>>& connections, bool cut);
  // Asks the loop to apply `cut` and waits until it has.
  void SetCut(bool cut);

  const int listen_fd_;
  // An eventfd that wakes the loop when the test asks for something.
  const int wake_fd_;
  const int port_;
  const int target_port_;
  const absl::Duration delay_;
  std::atomic<int64_t> forwarded_{0};

  Mutex mu_;
  CondVar applied_;
  bool stopping_ = false;
  bool cut_ = false;
  // Requests made, and requests the loop has applied.
  uint64_t requested_ = 0;
  uint64_t applied_requests_ = 0;

  std::thread thread_;
};

}  // namespace breaker::testing

#endif  // TESTS_TCP_PROXY_H_
