#include "service/service_limits.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "proto/codec/config_file.h"

namespace breaker::service {
namespace {

// Keeps `value` when present, and checks it is within min..max.
absl::Status TakeInRange(absl::string_view field, bool present, uint32_t value, uint32_t min,
                         uint32_t max, uint32_t& limit) {
  if (!present) return absl::OkStatus();
  if (value < min || value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is ", value, "; accepted: ", min, "..", max));
  }
  limit = value;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ServiceLimits> ServiceLimitsFromProto(const breaker::v1::Config& proto) {
  ServiceLimits limits;
  for (absl::Status status : {
           TakeInRange("max_connected_nodes", proto.has_max_connected_nodes(),
                       proto.max_connected_nodes(), 1, 100'000, limits.max_connected_nodes),
           TakeInRange("node_observation_rate", proto.has_node_observation_rate(),
                       proto.node_observation_rate(), 1, 1'000'000, limits.node_observation_rate),
           // Below one full batch, a node's every full batch would be cut short even when idle.
           TakeInRange("node_observation_burst", proto.has_node_observation_burst(),
                       proto.node_observation_burst(), 1000, 10'000'000,
                       limits.node_observation_burst),
           TakeInRange("max_known_nodes", proto.has_max_known_nodes(), proto.max_known_nodes(), 1,
                       1'000'000, limits.max_known_nodes),
       }) {
    if (!status.ok()) return status;
  }
  return limits;
}

void ServiceLimitsToProto(const ServiceLimits& limits, breaker::v1::Config& proto) {
  proto.set_max_connected_nodes(limits.max_connected_nodes);
  proto.set_node_observation_rate(limits.node_observation_rate);
  proto.set_node_observation_burst(limits.node_observation_burst);
  proto.set_max_known_nodes(limits.max_known_nodes);
}

absl::StatusOr<ServiceConfig> ServiceConfigFromProto(const breaker::v1::Config& proto) {
  absl::StatusOr<core::Config> rules = codec::ConfigFromProto(proto);
  if (!rules.ok()) return rules.status();
  absl::StatusOr<ServiceLimits> limits = ServiceLimitsFromProto(proto);
  if (!limits.ok()) return limits.status();
  return ServiceConfig{*std::move(rules), *limits};
}

breaker::v1::Config ServiceConfigToProto(const ServiceConfig& config) {
  breaker::v1::Config proto = codec::ConfigToProto(config.rules);
  ServiceLimitsToProto(config.limits, proto);
  return proto;
}

absl::StatusOr<ServiceConfig> LoadServiceConfig(const std::string& path) {
  absl::StatusOr<breaker::v1::Config> proto = codec::LoadConfigProto(path);
  if (!proto.ok()) return proto.status();
  return ServiceConfigFromProto(*proto);
}

}  // namespace breaker::service
