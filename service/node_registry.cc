#include "service/node_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace breaker::service {

void NodeRegistry::SetMaxKnownNodes(uint32_t max_known_nodes) {
  MutexLock lock(&mu_);
  max_known_nodes_ = max_known_nodes;
}

absl::Status NodeRegistry::Admit(const std::string& node_id) {
  MutexLock lock(&mu_);
  if (nodes_.contains(node_id)) return absl::OkStatus();
  if (nodes_.size() >= max_known_nodes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "breakerd already knows max_known_nodes (", max_known_nodes_,
        ") node ids and remembers each for good; new node '", node_id,
        "' refused: raise max_known_nodes in breakerd's configuration, or check that nodes "
        "keep stable ids"));
  }
  nodes_.try_emplace(node_id);
  return absl::OkStatus();
}

void NodeRegistry::Remember(const std::string& node_id) {
  MutexLock lock(&mu_);
  nodes_.try_emplace(node_id);
}

void NodeRegistry::Connected(const std::string& node_id, const std::string& peer,
                             const std::string& client_version, uint64_t policy_version) {
  const absl::Time now = clock_.Now();
  MutexLock lock(&mu_);
  Entry& entry = nodes_[node_id];
  entry.connected = true;
  entry.peer = peer;
  entry.client_version = client_version;
  entry.connected_since = now;
  // What the node holds now, not the most it ever acknowledged: a node that restarted without
  // its policy has to show its lag.
  entry.policy_version_acked = policy_version;
}

void NodeRegistry::Disconnected(const std::string& node_id) {
  MutexLock lock(&mu_);
  nodes_[node_id].connected = false;
}

void NodeRegistry::AckedPolicy(const std::string& node_id, uint64_t version) {
  MutexLock lock(&mu_);
  Entry& entry = nodes_[node_id];
  entry.policy_version_acked = std::max(entry.policy_version_acked, version);
}

void NodeRegistry::Observed(const std::string& node_id, uint64_t refused, uint64_t replayed) {
  const absl::Time now = clock_.Now();
  MutexLock lock(&mu_);
  Entry& entry = nodes_[node_id];
  entry.last_observation = now;
  entry.observations_refused += refused;
  entry.observations_replayed += replayed;
}

absl::flat_hash_map<std::string, NodeRegistry::Entry> NodeRegistry::Entries() const {
  MutexLock lock(&mu_);
  return nodes_;
}

}  // namespace breaker::service
