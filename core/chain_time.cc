#include "core/chain_time.h"

#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/input_bounds.h"

namespace breaker::core {
namespace {

struct KnownNetwork {
  absl::string_view name;
  int64_t genesis_time_unix;
};

// Genesis times from each network's published genesis state. All three use mainnet's
// 12 s slots and 32-slot epochs; Gloas is not scheduled on any of them yet.
constexpr KnownNetwork kKnownNetworks[] = {
    {"mainnet", 1606824023},
    {"sepolia", 1655733600},
    {"hoodi", 1742213400},
};

}  // namespace

absl::StatusOr<ChainSpec> ChainSpecForNetwork(absl::string_view network) {
  for (const KnownNetwork& known : kKnownNetworks) {
    if (known.name != network) continue;
    ChainSpec spec;
    spec.network = std::string(known.name);
    spec.genesis_time_unix = known.genesis_time_unix;
    spec.seconds_per_slot = 12;
    spec.slots_per_epoch = 32;
    spec.gloas_fork_epoch = kFarFutureEpoch;
    return spec;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown network \"", network,
      "\"; known networks: mainnet, sepolia, hoodi. A custom network needs chain.network, "
      "chain.genesis_time_unix, chain.seconds_per_slot, chain.slots_per_epoch and "
      "chain.gloas_fork_epoch set explicitly"));
}

absl::Status ValidateChainSpec(const ChainSpec& spec) {
  if (spec.network.empty()) {
    return absl::InvalidArgumentError(
        "chain.network is empty; accepted: a known network (mainnet, sepolia, hoodi) or the "
        "name of a custom network");
  }
  if (absl::Status name =
          bounds::CheckIdentifier("chain.network", spec.network, bounds::kMaxNetworkBytes);
      !name.ok()) {
    return name;
  }
  if (spec.seconds_per_slot == 0 || spec.seconds_per_slot > kMaxSecondsPerSlot) {
    return absl::InvalidArgumentError(absl::StrCat("chain.seconds_per_slot is ",
                                                   spec.seconds_per_slot, "; accepted: 1..",
                                                   kMaxSecondsPerSlot));
  }
  if (spec.slots_per_epoch == 0 || spec.slots_per_epoch > kMaxSlotsPerEpoch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "chain.slots_per_epoch is ", spec.slots_per_epoch, "; accepted: 1..", kMaxSlotsPerEpoch));
  }
  if (spec.genesis_time_unix < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("chain.genesis_time_unix is ", spec.genesis_time_unix,
                     "; accepted: seconds since 1970-01-01T00:00:00Z, not negative"));
  }
  return absl::OkStatus();
}

absl::Status ValidateGenesisTime(const ChainSpec& spec, absl::Time now) {
  const absl::Time genesis = absl::FromUnixSeconds(spec.genesis_time_unix);
  if (genesis - now <= absl::Seconds(bounds::kMaxGenesisAheadSeconds)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "chain.genesis_time_unix is ", spec.genesis_time_unix, " (", absl::FormatTime(genesis),
      "), more than a year after now (", absl::FormatTime(now),
      "); accepted: seconds since the Unix epoch (not milliseconds), at most a year ahead"));
}

Slot SlotAt(absl::Time now, const ChainSpec& spec) {
  const absl::Time genesis = absl::FromUnixSeconds(spec.genesis_time_unix);
  if (now < genesis) return 0;
  // now >= genesis, so the truncating conversion is a floor, and a partly elapsed slot
  // still counts as the slot in progress. An infinite `now` saturates to INT64_MAX seconds.
  const int64_t elapsed_seconds = absl::ToInt64Seconds(now - genesis);
  return static_cast<uint64_t>(elapsed_seconds) / spec.seconds_per_slot;
}

absl::Time StartOf(Slot slot, const ChainSpec& spec) {
  // absl::Seconds takes int64: a product beyond it would wrap to the past, so saturate
  // instead (such a slot begins long after anything the breaker will see).
  constexpr uint64_t kMaxSeconds = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (slot > kMaxSeconds / spec.seconds_per_slot) return absl::InfiniteFuture();
  const int64_t offset_seconds = static_cast<int64_t>(slot * spec.seconds_per_slot);
  // Time + Duration saturates to InfiniteFuture rather than overflowing.
  return absl::FromUnixSeconds(spec.genesis_time_unix) + absl::Seconds(offset_seconds);
}

}  // namespace breaker::core
