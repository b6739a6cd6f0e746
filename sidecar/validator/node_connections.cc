#include "sidecar/validator/node_connections.h"

#include <utility>

namespace breaker::sidecar::validator {

NodeConnections::NodeConnections(std::string base, absl::Duration connect_timeout, size_t max_idle,
                                 absl::Duration idle_timeout, const Clock& clock)
    : base_(std::move(base)),
      connect_timeout_(connect_timeout),
      max_idle_(max_idle),
      idle_timeout_(idle_timeout),
      clock_(clock) {}

std::unique_ptr<httplib::Client> NodeConnections::Open() const {
  auto connection = std::make_unique<httplib::Client>(base_);
  connection->set_connection_timeout(absl::ToChronoMicroseconds(connect_timeout_));
  connection->set_decompress(false);
  connection->set_keep_alive(true);
  connection->set_tcp_nodelay(true);
  return connection;
}

std::unique_ptr<httplib::Client> NodeConnections::TakeIdle() {
  std::vector<Idle> expired;
  std::unique_ptr<httplib::Client> taken;
  {
    MutexLock lock(&mu_);
    const absl::Duration now = clock_.Monotonic();
    size_t kept = 0;
    for (Idle& idle : idle_) {
      if (now - idle.since < idle_timeout_) {
        idle_[kept++] = std::move(idle);
      } else {
        expired.push_back(std::move(idle));
      }
    }
    idle_.resize(kept);
    if (!idle_.empty()) {
      taken = std::move(idle_.back().connection);
      idle_.pop_back();
    }
  }
  // `expired` closes its connections here, outside the lock.
  return taken;
}

void NodeConnections::GiveBack(std::unique_ptr<httplib::Client> connection) {
  MutexLock lock(&mu_);
  if (idle_.size() >= max_idle_) return;
  idle_.push_back({std::move(connection), clock_.Monotonic()});
}

size_t NodeConnections::idle() const {
  MutexLock lock(&mu_);
  return idle_.size();
}

}  // namespace breaker::sidecar::validator
