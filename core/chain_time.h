#ifndef CORE_CHAIN_TIME_H_
#define CORE_CHAIN_TIME_H_

// Chain time: slots, epochs and genesis. Pure arithmetic; the caller supplies "now".

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/types.h"

namespace breaker::core {

struct ChainSpec {
  // "mainnet", "hoodi", "sepolia", or any other name for a custom network.
  std::string network = "mainnet";
  // Seconds since the Unix epoch at which slot 0 began.
  int64_t genesis_time_unix = 1606824023;
  uint64_t seconds_per_slot = 12;
  uint64_t slots_per_epoch = 32;
  // First epoch of the Gloas fork (ePBS: the per-builder breaker applies from it on; the
  // pre-Gloas missed-slot breaker applies before it). kFarFutureEpoch: not scheduled.
  Epoch gloas_fork_epoch = kFarFutureEpoch;

  friend bool operator==(const ChainSpec& a, const ChainSpec& b) {
    return a.network == b.network && a.genesis_time_unix == b.genesis_time_unix &&
           a.seconds_per_slot == b.seconds_per_slot && a.slots_per_epoch == b.slots_per_epoch &&
           a.gloas_fork_epoch == b.gloas_fork_epoch;
  }
};

// The spec of a known network ("mainnet", "hoodi", "sepolia").
// Returns INVALID_ARGUMENT naming the known networks for any other name.
absl::StatusOr<ChainSpec> ChainSpecForNetwork(absl::string_view network);

// Returns INVALID_ARGUMENT naming the field when a value is unusable (a slot length outside
// 1..kMaxSecondsPerSlot, an epoch length outside 1..kMaxSlotsPerEpoch, an empty network name
// or one longer than bounds::kMaxNetworkBytes, a negative genesis time).
absl::Status ValidateChainSpec(const ChainSpec& spec);

// Longest slot and epoch a ChainSpec may have.
inline constexpr uint64_t kMaxSecondsPerSlot = 3600;
inline constexpr uint64_t kMaxSlotsPerEpoch = 8192;

// Returns INVALID_ARGUMENT when the genesis time is more than a year after `now` (most likely
// milliseconds written for seconds): the service refuses it when it starts.
absl::Status ValidateGenesisTime(const ChainSpec& spec, absl::Time now);

// REQUIRES: spec is valid.
inline Epoch EpochOf(Slot slot, const ChainSpec& spec) { return slot / spec.slots_per_epoch; }
inline Slot FirstSlotOf(Epoch epoch, const ChainSpec& spec) { return epoch * spec.slots_per_epoch; }

// The slot in progress at `now`; slot 0 before genesis.
// REQUIRES: spec is valid.
Slot SlotAt(absl::Time now, const ChainSpec& spec);

// The moment `slot` begins.
// REQUIRES: spec is valid.
absl::Time StartOf(Slot slot, const ChainSpec& spec);

// True when the per-builder (Gloas) rules apply at `epoch`; false for the pre-Gloas
// missed-slot rules.
inline bool IsGloas(Epoch epoch, const ChainSpec& spec) { return epoch >= spec.gloas_fork_epoch; }

}  // namespace breaker::core

#endif  // CORE_CHAIN_TIME_H_
