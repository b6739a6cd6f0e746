#ifndef SERVICE_SERVICE_LIMITS_H_
#define SERVICE_SERVICE_LIMITS_H_

// breakerd's limits on what the nodes may ask of it. They are written in the configuration
// file beside the engine's rules (one breaker.v1.Config message), so that a reload changes
// them too, and journaled with them; but the engine knows nothing of them: they bound the
// service, not the breaker's rules.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "breaker/v1/config.pb.h"
#include "core/config.h"

namespace breaker::service {

struct ServiceLimits {
  // Nodes holding a Connect stream at once.
  uint32_t max_connected_nodes = 1024;
  // A node's observations per second, and how many it may send at once: a token bucket.
  uint32_t node_observation_rate = 100;
  uint32_t node_observation_burst = 20000;
  // Node ids breakerd keeps track of (a node's memory is never dropped: this bounds it).
  uint32_t max_known_nodes = 65536;

  friend bool operator==(const ServiceLimits& a, const ServiceLimits& b) {
    return a.max_connected_nodes == b.max_connected_nodes &&
           a.node_observation_rate == b.node_observation_rate &&
           a.node_observation_burst == b.node_observation_burst &&
           a.max_known_nodes == b.max_known_nodes;
  }
  friend bool operator!=(const ServiceLimits& a, const ServiceLimits& b) { return !(a == b); }
};

// The service-limit fields of `proto`; absent ones take the defaults above.
// Returns INVALID_ARGUMENT naming the field and its accepted range for a value out of it.
absl::StatusOr<ServiceLimits> ServiceLimitsFromProto(const breaker::v1::Config& proto);

// Sets every service-limit field of `proto` from `limits`.
void ServiceLimitsToProto(const ServiceLimits& limits, breaker::v1::Config& proto);

// breakerd's configuration file, taken apart: the engine's rules and the service's limits.
struct ServiceConfig {
  core::Config rules;
  ServiceLimits limits;
};

// Both halves of `proto`, each validated (codec::ConfigFromProto's errors, then
// ServiceLimitsFromProto's).
absl::StatusOr<ServiceConfig> ServiceConfigFromProto(const breaker::v1::Config& proto);

// The whole configuration with every field set (codec::ConfigToProto plus the limits).
breaker::v1::Config ServiceConfigToProto(const ServiceConfig& config);

// Reads and parses the configuration file at `path`: codec::LoadConfigProto's errors, then
// ServiceConfigFromProto's.
absl::StatusOr<ServiceConfig> LoadServiceConfig(const std::string& path);

}  // namespace breaker::service

#endif  // SERVICE_SERVICE_LIMITS_H_
