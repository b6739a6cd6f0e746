#include "proto/codec/config_file.h"

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "breaker/v1/config.pb.h"
#include "core/chain_time.h"
#include "core/config.h"
#include "google/protobuf/text_format.h"
#include "proto/codec/text_file.h"

namespace breaker::codec {
namespace {

constexpr absl::string_view kDefaultPreset = "mevboost";
constexpr absl::string_view kCustomPreset = "custom";

absl::StatusOr<core::ChainSpec> ChainFromProto(const breaker::v1::ChainConfig& proto) {
  core::ChainSpec spec;
  if (proto.has_network()) {
    absl::StatusOr<core::ChainSpec> known = core::ChainSpecForNetwork(proto.network());
    if (known.ok()) {
      spec = *std::move(known);
    } else {
      // Guessing a custom network's genesis would put every slot number off. An empty name is
      // left to ValidateConfig, whose message says what a network name must be.
      if (!proto.has_genesis_time_unix() && !proto.network().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "chain.genesis_time_unix is required for custom network '", proto.network(), "'"));
      }
      spec.network = proto.network();
    }
  }
  if (proto.has_genesis_time_unix()) spec.genesis_time_unix = proto.genesis_time_unix();
  if (proto.has_seconds_per_slot()) spec.seconds_per_slot = proto.seconds_per_slot();
  if (proto.has_slots_per_epoch()) spec.slots_per_epoch = proto.slots_per_epoch();
  if (proto.has_gloas_fork_epoch()) spec.gloas_fork_epoch = proto.gloas_fork_epoch();
  return spec;
}

absl::StatusOr<core::MissedSlotRules> MissedSlotRulesFromProto(
    const breaker::v1::MissedSlotRules& proto) {
  const absl::string_view preset = proto.has_preset() ? proto.preset() : kDefaultPreset;
  // "custom" names rules that match no preset; ConfigToProto writes every field with it, so
  // the base only matters for a hand-written file, where "every rule off" surprises least.
  absl::StatusOr<core::MissedSlotRules> base =
      core::MissedSlotRulesForPreset(preset == kCustomPreset ? "off" : preset);
  if (!base.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("missed_slots.preset: ", base.status().message()));
  }
  base->preset = std::string(preset);

  core::MissedSlotRules rules = *base;
  if (proto.has_latched_rule()) rules.latched_rule = proto.latched_rule();
  if (proto.has_max_allowed_missing_slots()) {
    rules.max_allowed_missing_slots = proto.max_allowed_missing_slots();
  }
  if (proto.has_max_consecutive_missed_slots()) {
    rules.max_consecutive_missed_slots = proto.max_consecutive_missed_slots();
  }
  if (proto.has_max_missed_slots_in_window()) {
    rules.max_missed_slots_in_window = proto.max_missed_slots_in_window();
  }
  if (proto.has_window_slots()) rules.window_slots = proto.window_slots();
  if (proto.has_max_epochs_since_finalization()) {
    rules.max_epochs_since_finalization = proto.max_epochs_since_finalization();
  }
  // Overrides that restate the preset's own values keep its name: the rules are still its.
  if (!(rules == *base)) rules.preset = std::string(kCustomPreset);
  return rules;
}

}  // namespace

absl::StatusOr<core::Config> ConfigFromProto(const breaker::v1::Config& proto) {
  core::Config config;

  absl::StatusOr<core::ChainSpec> chain = ChainFromProto(proto.chain());
  if (!chain.ok()) return chain.status();
  config.chain = *std::move(chain);

  if (proto.has_allowed_failures()) config.allowed_failures = proto.allowed_failures();
  if (proto.has_critical_failures()) config.critical_failures = proto.critical_failures();
  if (proto.has_blacklist_period_epochs()) {
    config.blacklist_period_epochs = proto.blacklist_period_epochs();
  }
  if (proto.has_critical_blacklist_period_epochs()) {
    config.critical_blacklist_period_epochs = proto.critical_blacklist_period_epochs();
  }
  if (proto.has_backoff_period_epochs()) {
    config.backoff_period_epochs = proto.backoff_period_epochs();
  }
  if (proto.has_attestation_threshold()) {
    config.attestation_threshold = proto.attestation_threshold();
  }

  if (proto.has_critical_failed_builders()) {
    config.critical_failed_builders = proto.critical_failed_builders();
  }
  if (proto.has_critical_failed_untrusted_builders()) {
    config.critical_failed_untrusted_builders = proto.critical_failed_untrusted_builders();
  }

  config.trusted_builders.assign(proto.trusted_builders().begin(), proto.trusted_builders().end());
  config.blacklisted_builders.assign(proto.blacklisted_builders().begin(),
                                     proto.blacklisted_builders().end());
  config.blacklisted_relays.assign(proto.blacklisted_relays().begin(),
                                   proto.blacklisted_relays().end());
  config.relays.reserve(proto.relays_size());
  for (const breaker::v1::RelayConfig& relay_proto : proto.relays()) {
    core::RelayConfig& relay = config.relays.emplace_back();
    relay.identifier = relay_proto.identifier();
    relay.trusted = relay_proto.trusted();
    relay.indices.assign(relay_proto.builder_indices().begin(),
                         relay_proto.builder_indices().end());
  }

  if (proto.has_relay_blacklist_period_epochs()) {
    config.relay_blacklist_period_epochs = proto.relay_blacklist_period_epochs();
  }
  if (proto.has_relay_association_ttl_epochs()) {
    config.relay_association_ttl_epochs = proto.relay_association_ttl_epochs();
  }
  if (proto.has_max_relays()) config.max_relays = proto.max_relays();
  if (proto.has_max_indices_per_relay()) {
    config.max_indices_per_relay = proto.max_indices_per_relay();
  }
  if (proto.has_max_tracked_builders()) config.max_tracked_builders = proto.max_tracked_builders();

  absl::StatusOr<core::MissedSlotRules> missed_slots =
      MissedSlotRulesFromProto(proto.missed_slots());
  if (!missed_slots.ok()) return missed_slots.status();
  config.missed_slots = *std::move(missed_slots);

  if (proto.has_min_reporting_nodes()) config.min_reporting_nodes = proto.min_reporting_nodes();
  if (proto.has_amendment_window_slots()) {
    config.amendment_window_slots = proto.amendment_window_slots();
  }
  if (proto.has_max_future_slots()) config.max_future_slots = proto.max_future_slots();

  if (absl::Status status = core::ValidateConfig(config); !status.ok()) return status;
  return config;
}

breaker::v1::Config ConfigToProto(const core::Config& config) {
  breaker::v1::Config proto;

  breaker::v1::ChainConfig& chain = *proto.mutable_chain();
  chain.set_network(config.chain.network);
  chain.set_genesis_time_unix(config.chain.genesis_time_unix);
  chain.set_seconds_per_slot(config.chain.seconds_per_slot);
  chain.set_slots_per_epoch(config.chain.slots_per_epoch);
  // Written even when not scheduled (kFarFutureEpoch), so that every field shows its value.
  chain.set_gloas_fork_epoch(config.chain.gloas_fork_epoch);

  proto.set_allowed_failures(config.allowed_failures);
  proto.set_critical_failures(config.critical_failures);
  proto.set_blacklist_period_epochs(config.blacklist_period_epochs);
  proto.set_critical_blacklist_period_epochs(config.critical_blacklist_period_epochs);
  proto.set_backoff_period_epochs(config.backoff_period_epochs);
  proto.set_attestation_threshold(config.attestation_threshold);

  proto.set_critical_failed_builders(config.critical_failed_builders);
  proto.set_critical_failed_untrusted_builders(config.critical_failed_untrusted_builders);

  proto.mutable_trusted_builders()->Add(config.trusted_builders.begin(),
                                        config.trusted_builders.end());
  proto.mutable_blacklisted_builders()->Add(config.blacklisted_builders.begin(),
                                            config.blacklisted_builders.end());
  for (const core::RelayConfig& relay : config.relays) {
    breaker::v1::RelayConfig& relay_proto = *proto.add_relays();
    relay_proto.set_identifier(relay.identifier);
    relay_proto.set_trusted(relay.trusted);
    relay_proto.mutable_builder_indices()->Add(relay.indices.begin(), relay.indices.end());
  }
  for (const std::string& relay : config.blacklisted_relays) proto.add_blacklisted_relays(relay);

  proto.set_relay_blacklist_period_epochs(config.relay_blacklist_period_epochs);
  proto.set_relay_association_ttl_epochs(config.relay_association_ttl_epochs);
  proto.set_max_relays(config.max_relays);
  proto.set_max_indices_per_relay(config.max_indices_per_relay);
  proto.set_max_tracked_builders(config.max_tracked_builders);

  breaker::v1::MissedSlotRules& missed_slots = *proto.mutable_missed_slots();
  missed_slots.set_preset(config.missed_slots.preset);
  missed_slots.set_latched_rule(config.missed_slots.latched_rule);
  missed_slots.set_max_allowed_missing_slots(config.missed_slots.max_allowed_missing_slots);
  missed_slots.set_max_consecutive_missed_slots(config.missed_slots.max_consecutive_missed_slots);
  missed_slots.set_max_missed_slots_in_window(config.missed_slots.max_missed_slots_in_window);
  missed_slots.set_window_slots(config.missed_slots.window_slots);
  missed_slots.set_max_epochs_since_finalization(config.missed_slots.max_epochs_since_finalization);

  proto.set_min_reporting_nodes(config.min_reporting_nodes);
  proto.set_amendment_window_slots(config.amendment_window_slots);
  proto.set_max_future_slots(config.max_future_slots);
  return proto;
}

absl::StatusOr<core::Config> ParseConfigText(absl::string_view text,
                                             absl::string_view source_name) {
  breaker::v1::Config proto;
  if (absl::Status status = ParseTextFormat(text, source_name, proto); !status.ok()) {
    return status;
  }
  return ConfigFromProto(proto);
}

absl::StatusOr<breaker::v1::Config> LoadConfigProto(const std::string& path) {
  absl::StatusOr<std::string> contents = ReadTextFile(path, "config file");
  if (absl::IsNotFound(contents.status())) {
    return absl::NotFoundError(
        absl::StrCat(contents.status().message(),
                     "; pass --config with an existing file or omit it for the defaults"));
  }
  if (!contents.ok()) return contents.status();
  breaker::v1::Config proto;
  if (absl::Status status = ParseTextFormat(*contents, path, proto); !status.ok()) return status;
  return proto;
}

absl::StatusOr<core::Config> LoadConfigFile(const std::string& path) {
  absl::StatusOr<breaker::v1::Config> proto = LoadConfigProto(path);
  if (!proto.ok()) return proto.status();
  return ConfigFromProto(*proto);
}

std::string ConfigToText(const core::Config& config) {
  std::string text;
  // Printing into a string cannot fail; the result says whether the output stream did.
  google::protobuf::TextFormat::PrintToString(ConfigToProto(config), &text);
  return text;
}

}  // namespace breaker::codec
