#ifndef SIDECAR_BUILDER_UPSTREAM_POOL_H_
#define SIDECAR_BUILDER_UPSTREAM_POOL_H_

// The sidecar's client towards one upstream (relay or builder): a bounded pool of persistent
// HTTP/1.1 connections, plain or TLS, reused across requests, so that a getHeader costs the
// relay's round trip and nothing more.
//
// Built on libcurl: each pooled handle keeps one connection, which libcurl checks for life
// before it reuses it, and the pool's handles share one TLS session cache, so a connection
// opened again resumes its TLS session (one round trip fewer than a full handshake). The
// whole exchange, connect to last byte, is bounded by the request's budget.
//
// Resending: a GET whose reused connection turns out closed before any answer came is sent
// once more on a new connection (libcurl does this); a request with a body only when none of
// the body had left yet; a request marked `never_resend` (the reveal, submitBlindedBlock)
// never.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"

namespace breaker::sidecar {

struct UpstreamPoolOptions {
  // "http://host[:port]" or "https://host[:port]", no credentials, no path.
  std::string scheme_host_port;
  // For log lines: the upstream's relay identifier.
  std::string name;
  // PEM files, all optional (UpstreamSettings): the CA in place of the system's trust store,
  // and the client certificate and key for mutual TLS.
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  // Idle connections kept, at most. A connection idle for idle_timeout (by the pool's clock) is
  // never reused; CloseIdle closes its socket.
  size_t max_idle_connections = 4;
  absl::Duration idle_timeout = absl::Seconds(60);
  // Largest answer body carried; a larger one fails the exchange (kTooLarge).
  size_t max_body_bytes = 16 << 20;
};

struct UpstreamRequest {
  std::string method;
  // Path and query, as sent on the request line.
  std::string target;
  // End-to-end headers only: the caller removes hop-by-hop ones and Host.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Never sent twice, even when the connection closed before any of it had left.
  bool never_resend = false;
};

struct UpstreamAnswer {
  enum class Failure {
    kNone,
    kConnect,   // no connection (refused, unresolvable, unreachable)
    kTls,       // TLS handshake or certificate verification failed
    kTimeout,   // the budget ran out
    kSend,      // the connection failed while the request was sent
    kReceive,   // the connection failed or closed before the whole answer came
    kTooLarge,  // the answer body was over max_body_bytes
    kStopped,   // the pool was stopped (Abort) during the exchange
  };
  Failure failure = Failure::kNone;
  // With a failure: what went wrong, with libcurl's and OpenSSL's words.
  std::string error;
  int status = 0;
  // The answer's headers, in order, as received.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The exchange went over a connection already open (no connect, no handshake), or opened
  // one (both false: it failed before a connection was had).
  bool reused_connection = false;
  bool new_connection = false;
  // ... one that Warm() opened or checked, its first use since.
  bool warmed_connection = false;

  bool ok() const { return failure == Failure::kNone; }
};

struct UpstreamPoolStats {
  // Requests that found an open connection, and those that had to open one.
  uint64_t hits = 0;
  uint64_t misses = 0;
  // TLS handshakes done (full or resumed).
  uint64_t tls_handshakes = 0;
  // Exchanges that failed on the upstream's certificate or the TLS handshake.
  uint64_t tls_failures = 0;
  // Warm() calls that left a checked connection in the pool, and requests that then used one.
  uint64_t warmed = 0;
  uint64_t warmed_used = 0;
  // Idle connections now in the pool.
  uint64_t idle_connections = 0;
};

// This class is thread-safe.
class UpstreamPool {
 public:
  // Returns INVALID_ARGUMENT naming the file for a TLS file that cannot be read; the files are
  // read again by every new connection, so a rotated certificate takes effect without a
  // restart. `clock` times idleness and outlives the pool.
  static absl::StatusOr<std::unique_ptr<UpstreamPool>> Create(UpstreamPoolOptions options,
                                                              const Clock& clock);
  ~UpstreamPool();

  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  // Sends `request` over a pooled connection (or a new one) and waits for the answer, at most
  // `budget` from the call. Blocks the calling thread; many calls may run at once.
  UpstreamAnswer Send(const UpstreamRequest& request, absl::Duration budget);

  // Leaves a connection that was just used, and so is known to be alive, on top of the pool,
  // so that the next Send takes it: sends `GET <status_path>` (builder-specs' status) over the
  // pool's most recent connection, or a new one. The answer's status does not matter, only
  // that one came. Returns UNAVAILABLE with the failure otherwise.
  absl::Status Warm(absl::string_view status_path, absl::Duration budget);

  // Closes the idle connections unused for idle_timeout or longer.
  void CloseIdle();

  // Makes every exchange in progress, and every later one, end at once with kStopped.
  void Abort();

  UpstreamPoolStats stats() const;
  const std::string& name() const { return options_.name; }

 private:
  struct Handle;
  class Share;

  UpstreamPool(UpstreamPoolOptions options, const Clock& clock);

  std::unique_ptr<Handle> Acquire();
  void Release(std::unique_ptr<Handle> handle, bool keep);
  UpstreamAnswer Exchange(Handle& handle, const UpstreamRequest& request, absl::Duration budget);

  const UpstreamPoolOptions options_;
  const Clock& clock_;
  std::unique_ptr<Share> share_;
  std::atomic<bool> aborted_{false};

  mutable Mutex mu_;
  // Most recently used last.
  std::vector<std::unique_ptr<Handle>> idle_ ABSL_GUARDED_BY(mu_);
  UpstreamPoolStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace breaker::sidecar

#endif  // SIDECAR_BUILDER_UPSTREAM_POOL_H_
