#ifndef SIDECAR_BUILDER_PROXY_H_
#define SIDECAR_BUILDER_PROXY_H_

// The HTTP plumbing of the enforcer: one server per upstream on its local port, forwarding
// what the Enforcer lets through (method, path with query, body, and the request's headers
// but hop-by-hop ones and Host) over that upstream's pool of kept-alive connections
// (upstream_pool.h), and passing back the upstream's status, headers and body.
//
// Bounds: a request body larger than max_body_bytes is refused by the server (413) before
// the upstream is contacted; an answer body larger than that is cut off and answered 502.
// However slowly the upstream connects, sends its headers or trickles its body, the answer
// leaves by the request's deadline (RequestBudget): a 504 then.
//
// Each port is the sidecar's alone: bound without SO_REUSEPORT, so that a second sidecar (a
// stale one during an upgrade, say) cannot share it and split the node's requests between two
// policies.

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "sidecar/builder/enforcer.h"
#include "sidecar/builder/upstream_pool.h"
#include "sidecar/config.h"
#include "sidecar/http/server.h"

namespace breaker::sidecar {

// How long the upstream may take for a request that arrived at `now`: `limit`, or less when
// the request's own X-Timeout-Ms (mev-boost's, builder-specs') asks for less. With
// Date-Milliseconds as well (when the request was sent, Unix milliseconds, by a clock taken to
// be this host's), the time the request already spent on its way counts against it; zero when
// the request is already late. Unparseable or non-positive headers are ignored. The proxy
// passes Date-Milliseconds only for headers and bids: a late reveal is still worth trying.
absl::Duration RequestBudget(absl::string_view timeout_ms, absl::string_view date_ms,
                             absl::Duration limit, absl::Time now);

// Told of each validator registration the node sends through the sidecar
// (`POST /eth/v1/builder/validators`): the body as forwarded, and its Content-Type. Called on
// the request's thread, after the upstream answered: it must not block.
using RegistrationObserver =
    std::function<void(absl::string_view body, absl::string_view content_type)>;

// Told how long upstream `index` took to answer a request to `endpoint` (the metrics' answer
// times). Called on the request's thread: it must not block.
using LatencyObserver =
    std::function<void(size_t index, Endpoint endpoint, absl::Duration answer_time)>;

class Proxy {
 public:
  // REQUIRES: `enforcer` and `clock` outlive the proxy; the enforcer's upstreams are
  // `settings.upstreams`, in order.
  Proxy(const SidecarSettings& settings, Enforcer& enforcer, const Clock& clock);
  ~Proxy();

  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Binds every upstream's port (listen_port 0: one the kernel picks), then serves each, every
  // connection on a thread of its own (http/server.h). Returns INVALID_ARGUMENT naming the upstream
  // and the file for a TLS file that cannot be read, UNAVAILABLE naming the port, and the process
  // holding it when it can be seen, when one cannot be bound (nothing is served then).
  absl::Status Start();

  // Sets who is told of registrations. REQUIRES: called before Start().
  void set_registration_observer(RegistrationObserver observer) {
    registration_observer_ = std::move(observer);
  }

  // The port upstream `index` is served on. REQUIRES: Start() succeeded.
  int port(size_t index) const { return ports_.at(index); }

  // Upstream `index`'s connections. REQUIRES: Start() succeeded.
  UpstreamPool& pool(size_t index) const { return *pools_.at(index); }
  size_t upstreams() const { return pools_.size(); }

  // Sets who is told of each upstream's answer times. REQUIRES: called before Start().
  void set_latency_observer(LatencyObserver observer) { latency_observer_ = std::move(observer); }

  // Stops: closes the ports at once, lets the requests in flight finish for up to `grace`,
  // then ends their upstream exchanges, each answered 503; returns once every request is
  // answered. Idempotent.
  void Stop(absl::Duration grace = absl::Milliseconds(700));

 private:
  class Maintenance;
  void Handle(size_t index, const http::Request& request, http::Response& response);
  void Forward(size_t index, const http::Request& request, http::Response& response);

  const SidecarSettings settings_;
  Enforcer& enforcer_;
  const Clock& clock_;
  std::vector<std::unique_ptr<UpstreamPool>> pools_;
  std::vector<std::unique_ptr<http::Server>> servers_;
  std::vector<int> ports_;
  std::unique_ptr<Maintenance> maintenance_;
  RegistrationObserver registration_observer_;
  LatencyObserver latency_observer_;

  Mutex mu_;
  CondVar answered_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace breaker::sidecar

#endif  // SIDECAR_BUILDER_PROXY_H_
