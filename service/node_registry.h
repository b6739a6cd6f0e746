#ifndef SERVICE_NODE_REGISTRY_H_
#define SERVICE_NODE_REGISTRY_H_

// The nodes breakerd knows, and what ListNodes shows of each apart from its sequence number
// (which the engine keeps): its stream, its client, and the policy it last acknowledged.
//
// A node is known once it said hello, sent observations, or has sequence numbers in the
// stored state. Known nodes are kept for good and are bounded by max_known_nodes: node ids are
// the nodes' to choose.

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"

namespace breaker::service {

// Thread-safe. Its lock is a leaf: nothing else is taken under it.
class NodeRegistry {
 public:
  struct Entry {
    bool connected = false;
    std::string peer;
    std::string client_version;
    absl::Time connected_since = absl::InfinitePast();
    absl::Time last_observation = absl::InfinitePast();
    uint64_t policy_version_acked = 0;
    // Since breakerd started: its observations refused, and ignored as replays.
    uint64_t observations_refused = 0;
    uint64_t observations_replayed = 0;
  };

  // REQUIRES: `clock` outlives the registry. It dates connections and observations.
  explicit NodeRegistry(const Clock& clock) : clock_(clock) {}

  // The configuration's max_known_nodes.
  void SetMaxKnownNodes(uint32_t max_known_nodes);

  // Makes `node_id` known unless it is already. RESOURCE_EXHAUSTED, naming max_known_nodes,
  // for a new node beyond it.
  absl::Status Admit(const std::string& node_id);
  // Makes `node_id` known, whatever the limit: a node the stored state remembers.
  void Remember(const std::string& node_id);

  // A node opened a stream (now), holding policy `policy_version`.
  void Connected(const std::string& node_id, const std::string& peer,
                 const std::string& client_version, uint64_t policy_version);
  // The node's current stream ended.
  void Disconnected(const std::string& node_id);
  // The node acknowledged policy `version` (a lower one than before changes nothing).
  void AckedPolicy(const std::string& node_id, uint64_t version);
  // Observations of the node were handled (now): `refused` of them refused, `replayed` of them
  // ignored as replays.
  void Observed(const std::string& node_id, uint64_t refused, uint64_t replayed);

  // A copy of every entry, for one consistent listing.
  absl::flat_hash_map<std::string, Entry> Entries() const;

 private:
  const Clock& clock_;
  mutable Mutex mu_;
  uint32_t max_known_nodes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, Entry> nodes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace breaker::service

#endif  // SERVICE_NODE_REGISTRY_H_
