#ifndef SIDECAR_PROXY_H_
#define SIDECAR_PROXY_H_

// The HTTP plumbing of the enforcer: one server per upstream on its local port, forwarding
// what the Enforcer lets through (method, path with query, body, and the request's headers
// but hop-by-hop ones and Host) and passing back the upstream's status, headers and body.
//
// Bounds: a request body larger than max_body_bytes is refused by the server (413) before
// the upstream is contacted; an answer body larger than that is cut off and answered 502.
// However slowly the upstream connects, sends its headers or trickles its body, the answer
// leaves by the request's deadline (RequestBudget): a 504 then.

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "sidecar/config.h"
#include "sidecar/enforcer.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace breaker::sidecar {

// How long the upstream may take for a request that arrived at `now`: `limit`, or less when
// the request's own X-Timeout-Ms (mev-boost's, builder-specs') asks for less. With
// Date-Milliseconds as well (when the request was sent, Unix milliseconds, by a clock taken to
// be this host's), the time the request already spent on its way counts against it; zero when
// the request is already late. Unparseable or non-positive headers are ignored. The proxy
// passes Date-Milliseconds only for headers and bids: a late reveal is still worth trying.
absl::Duration RequestBudget(absl::string_view timeout_ms, absl::string_view date_ms,
                             absl::Duration limit, absl::Time now);

class Proxy {
 public:
  // REQUIRES: `enforcer` outlives the proxy; its upstreams are `settings.upstreams`, in order.
  Proxy(const SidecarSettings& settings, Enforcer& enforcer);
  ~Proxy();

  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Binds every upstream's port (listen_port 0: one the kernel picks), then serves each on a
  // thread of its own. Returns UNAVAILABLE naming the port when one cannot be bound (nothing is
  // served then).
  absl::Status Start();

  // The port upstream `index` is served on. REQUIRES: Start() succeeded.
  int port(size_t index) const { return ports_.at(index); }

  // Stops serving; idempotent.
  void Stop();

 private:
  class Deadlines;
  void Handle(size_t index, const void* request, void* response);

  const SidecarSettings settings_;
  Enforcer& enforcer_;
  std::unique_ptr<Deadlines> deadlines_;
  std::vector<std::unique_ptr<httplib::Server>> servers_;
  std::vector<int> ports_;
  std::vector<std::thread> threads_;
};

}  // namespace breaker::sidecar

#endif  // SIDECAR_PROXY_H_
