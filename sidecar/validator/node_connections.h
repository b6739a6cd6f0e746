#ifndef SIDECAR_VALIDATOR_NODE_CONNECTIONS_H_
#define SIDECAR_VALIDATOR_NODE_CONNECTIONS_H_

// The validator port's kept-alive connections to the beacon node: a request takes an idle one
// when there is one, and gives it back once its answer has been read whole, so that the next
// request does not pay a new connection. Bounded: at most `max_idle` are kept, each for at most
// `idle_timeout` (on the injected clock), short, so that the node's server seldom closes one
// first.
//
// This class is thread-safe.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "httplib.h"

namespace breaker::sidecar::validator {

class NodeConnections {
 public:
  // `base` is the node's "scheme://host[:port]". REQUIRES: `clock` outlives the pool.
  NodeConnections(std::string base, absl::Duration connect_timeout, size_t max_idle,
                  absl::Duration idle_timeout, const Clock& clock);

  // A new connection to the node (opened by its first request), kept alive.
  std::unique_ptr<httplib::Client> Open() const;
  // The connection given back last, unless it has been idle for idle_timeout; nullptr when
  // none is kept. Connections idle longer are closed.
  std::unique_ptr<httplib::Client> TakeIdle();
  // Keeps `connection` for a later request, or closes it when max_idle are kept.
  void GiveBack(std::unique_ptr<httplib::Client> connection);
  size_t idle() const;

 private:
  struct Idle {
    std::unique_ptr<httplib::Client> connection;
    absl::Duration since;
  };

  const std::string base_;
  const absl::Duration connect_timeout_;
  const size_t max_idle_;
  const absl::Duration idle_timeout_;
  const Clock& clock_;
  mutable Mutex mu_;
  // Oldest first.
  std::vector<Idle> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace breaker::sidecar::validator

#endif  // SIDECAR_VALIDATOR_NODE_CONNECTIONS_H_
