#ifndef COMMON_METRICS_EXPOSER_H_
#define COMMON_METRICS_EXPOSER_H_

// Prometheus metrics served over plain HTTP at /metrics, bounded the same way by every program
// that serves them: breakerd and breaker-sidecar.
//
// One thread waits on every connection at once (poll), so an idle or slow connection costs a
// file descriptor and a few bytes, never a thread: a scrape is answered as soon as its request
// is in, however many connections sit idle beside it. Each connection has kExchangeTimeout for
// its whole exchange (request read, answer written) and is closed then; at most
// kMaxConnections are held, and a new one beyond that closes the oldest, so that a flood of
// idle sockets cannot keep a scraper out. No keep-alive: one answer per connection.

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "prometheus/collectable.h"

namespace breaker::common {

// Serves the collectables registered with it. Thread-safe.
class MetricsServer {
 public:
  // The time a connection has to send its request and read the answer.
  static constexpr absl::Duration kExchangeTimeout = absl::Seconds(2);
  // Connections held at once; one more closes the oldest.
  static constexpr int kMaxConnections = 4096;
  // The longest request read (line and headers); a longer one is answered 431 and closed.
  static constexpr size_t kMaxRequestBytes = 8 << 10;

  ~MetricsServer();

  // Adds `collectable` to what /metrics answers; it is skipped once it expires.
  void RegisterCollectable(const std::weak_ptr<prometheus::Collectable>& collectable);
  // The bound port (one).
  std::vector<int> GetListeningPorts() const { return {port_}; }

 private:
  friend absl::StatusOr<std::unique_ptr<MetricsServer>> StartMetricsExposer(
      const std::string& listen_address, absl::string_view setting, const Clock& clock);
  struct Connection;

  MetricsServer(int listen_fd, int wake_fd_read, int wake_fd_write, int port, const Clock& clock);
  void Run();
  // The text exposition of every collectable still alive.
  std::string Scrape();

  const int listen_fd_;
  // A pipe that wakes Run() to stop.
  const int wake_read_;
  const int wake_write_;
  const int port_;
  // Times the exchanges (Monotonic()).
  const Clock& clock_;
  std::atomic<bool> stopping_{false};
  Mutex mu_;
  std::vector<std::weak_ptr<prometheus::Collectable>> collectables_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// Serves /metrics on `listen_address` ("host:port", IPv6 hosts in brackets; port 0 picks a free
// port, GetListeningPorts() says which). `setting` names where the address came from (e.g.
// "--metrics_listen"), for the errors; `clock` times the exchanges (REQUIRES: it outlives the
// server). Returns INVALID_ARGUMENT for an address that is not host:port, UNAVAILABLE when it
// cannot be bound.
absl::StatusOr<std::unique_ptr<MetricsServer>> StartMetricsExposer(
    const std::string& listen_address, absl::string_view setting,
    const Clock& clock = SystemClock());

}  // namespace breaker::common

#endif  // COMMON_METRICS_EXPOSER_H_
