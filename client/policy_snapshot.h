#ifndef CLIENT_POLICY_SNAPSHOT_H_
#define CLIENT_POLICY_SNAPSHOT_H_

// The policy a beacon node applies, and where it comes from: the value BreakerClient hands
// out (client/client.h) and PolicyInForce computes (client/policy_in_force.h).

#include <cstdint>

#include "absl/strings/string_view.h"
#include "core/policy.h"

namespace breaker::client {

// Where the policy in force comes from.
enum class PolicySource {
  // The fleet's policy, from breakerd.
  kFleet,
  // breakerd has been unreachable past the staleness limit, or is back and has not yet
  // reflected what the node saw without it: the stricter of the last fleet policy and the
  // local engine's.
  kFleetAndLocal,
  // No fleet policy received yet: the local engine's.
  kLocal,
};

// "fleet", "fleet+local" or "local".
absl::string_view PolicySourceName(PolicySource source);

// The policy in force, immutable.
struct PolicySnapshot {
  core::Policy policy;
  PolicySource source = PolicySource::kLocal;
  // The fleet policy's version in it; 0 when none.
  uint64_t fleet_version = 0;
};

}  // namespace breaker::client

#endif  // CLIENT_POLICY_SNAPSHOT_H_
