#include "bench/workload.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "breaker/v1/config.pb.h"
#include "core/chain_time.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/text_format.h"

namespace breaker::bench {
namespace {

constexpr int kRelays = 4;
constexpr uint64_t kRelayedBuilders = 64;  // 16 per relay: max_indices_per_relay's default
constexpr uint64_t kP2pBuilders = 960;
// Above breakerd's default attestation threshold (0.6).
constexpr double kDecisiveFraction = 0.9;

std::string RelayName(uint64_t relay) { return absl::StrCat("https://relay-", relay, ".example"); }

std::string BuilderKey(uint64_t builder) {
  std::string key(48, '\0');
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<char>((builder * 131 + i) & 0xff);
  return key;
}

// Sets a uint32 field of `config` by name, if the schema has it: the harness is built with the
// breakerd it measures, whichever limits that one has.
void SetIfPresent(breaker::v1::Config& config, const std::string& field, uint32_t value) {
  const google::protobuf::FieldDescriptor* descriptor =
      breaker::v1::Config::descriptor()->FindFieldByName(field);
  if (descriptor == nullptr ||
      descriptor->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_UINT32) {
    return;
  }
  config.GetReflection()->SetUInt32(&config, descriptor, value);
}

}  // namespace

uint64_t CurrentMainnetSlot() { return core::SlotAt(absl::Now(), core::ChainSpec{}); }

std::string ServiceConfigText() {
  breaker::v1::Config config;
  config.mutable_chain()->set_network("mainnet");
  config.mutable_chain()->set_gloas_fork_epoch(0);
  config.set_blacklist_period_epochs(100000);
  config.set_critical_failed_builders(1000000);
  config.set_critical_failed_untrusted_builders(1000000);
  for (int r = 0; r < kRelays; ++r) config.add_relays()->set_identifier(RelayName(r));
  // The service's limits, where this breakerd has them, far out of the way: the harness
  // measures the whole path, and a refused observation skips most of it.
  SetIfPresent(config, "max_connected_nodes", 100'000);
  SetIfPresent(config, "node_observation_rate", 1'000'000);
  SetIfPresent(config, "node_observation_burst", 10'000'000);
  std::string text;
  google::protobuf::TextFormat::PrintToString(config, &text);
  return text;
}

breaker::v1::NodeMessage BidBatch(int node, uint64_t first_sequence, int count, uint64_t slot) {
  breaker::v1::NodeMessage message;
  auto* observations = message.mutable_observations()->mutable_observations();
  observations->Reserve(count);
  for (int i = 0; i < count; ++i) {
    const uint64_t sequence = first_sequence + static_cast<uint64_t>(i);
    // Spread the builders over nodes and sequences; the pattern only needs to be stable.
    const uint64_t mix = sequence * 37 + static_cast<uint64_t>(node) * 13;
    breaker::v1::Observation* observation = observations->Add();
    observation->set_sequence(sequence);
    observation->set_slot(slot);
    breaker::v1::BidSeen* bid = observation->mutable_bid_seen();
    if (sequence % 2 == 0) {
      const uint64_t builder = mix % kRelayedBuilders;
      bid->set_builder_index(builder);
      bid->set_relay(RelayName(builder % kRelays));
      bid->set_builder_pubkey(BuilderKey(builder));
    } else {
      const uint64_t builder = kRelayedBuilders + mix % kP2pBuilders;
      bid->set_builder_index(builder);
      bid->set_builder_pubkey(BuilderKey(builder));
    }
  }
  return message;
}

breaker::v1::NodeMessage DecisiveFailure(uint64_t builder, uint64_t sequence, uint64_t slot) {
  // A fresh root each time: a root already under vote would be a duplicate report.
  static thread_local std::mt19937_64 random(std::random_device{}());
  std::string root(32, '\0');
  for (char& byte : root) byte = static_cast<char>(random() & 0xff);
  breaker::v1::NodeMessage message;
  breaker::v1::Observation* observation = message.mutable_observations()->add_observations();
  observation->set_sequence(sequence);
  observation->set_slot(slot);
  breaker::v1::PayloadMissing* missing = observation->mutable_payload_missing();
  missing->set_builder_index(builder);
  missing->set_block_root(root);
  missing->set_attested_fraction(kDecisiveFraction);
  return message;
}

bool HoldsDecisiveFailure(const breaker::v1::ObservationBatch& batch) {
  for (const breaker::v1::Observation& observation : batch.observations()) {
    if (observation.has_payload_missing() &&
        observation.payload_missing().attested_fraction() >= kDecisiveFraction) {
      return true;
    }
  }
  return false;
}

}  // namespace breaker::bench
