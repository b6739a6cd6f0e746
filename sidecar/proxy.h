#ifndef SIDECAR_PROXY_H_
#define SIDECAR_PROXY_H_

// The HTTP plumbing of the enforcer: one server per upstream on its local port, forwarding
// what the Enforcer lets through (method, path with query, body, and the request's headers
// but hop-by-hop ones and Host) and passing back the upstream's status, headers and body.

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "sidecar/config.h"
#include "sidecar/enforcer.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace breaker::sidecar {

class Proxy {
 public:
  // REQUIRES: `enforcer` outlives the proxy; its upstreams are `settings.upstreams`, in order.
  Proxy(const SidecarSettings& settings, Enforcer& enforcer);
  ~Proxy();

  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Binds every upstream's port, then serves each on a thread of its own. Returns UNAVAILABLE
  // naming the port when one cannot be bound (nothing is served then).
  absl::Status Start();

  // Stops serving; idempotent.
  void Stop();

 private:
  struct Served;
  void Handle(size_t index, const void* request, void* response);

  const SidecarSettings settings_;
  Enforcer& enforcer_;
  std::vector<std::unique_ptr<httplib::Server>> servers_;
  std::vector<std::thread> threads_;
};

}  // namespace breaker::sidecar

#endif  // SIDECAR_PROXY_H_
