#ifndef CORE_CONFIG_H_
#define CORE_CONFIG_H_

// The breaker's configuration: a plain value, with the defaults of the reference semantics.
// Every field is an operator's choice; ValidateConfig says which combinations are unusable.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/chain_time.h"
#include "core/types.h"

namespace breaker::core {

// A direct-connection endpoint the operator knows about.
struct RelayConfig {
  // Any spelling NormalizeRelayId accepts; the engine keeps the normalized form.
  std::string identifier;
  // Every builder index served by a trusted endpoint is a trusted builder.
  bool trusted = false;
  // Builder indices the operator knows this endpoint serves, in addition to those learned from
  // its bids. Never expire.
  std::vector<BuilderIndex> indices;
};

// The pre-Gloas (mev-boost) missed-slot rules. A slot is missed when no node of the fleet has
// any block for it, canonical or not. Each rule trips when its count exceeds the value; 0 turns
// the rule off. Evaluated at slot p (the policy for a proposal at p), the consecutive and window
// rules look at the slots before p, as a client does; the seed rule only at those before p - 1.
struct MissedSlotRules {
  // Name of the preset these rules came from ("mevboost", "prysm", "lighthouse", "teku",
  // "off"), or "custom".
  std::string preset = "mevboost";
  // The seed rule: more than max_allowed_missing_slots missed slots since the last present
  // slot, judged from the end of the slot after each, trips the breaker, which then stays
  // tripped until an operator reset.
  bool latched_rule = true;
  uint64_t max_allowed_missing_slots = 5;
  // Consecutive missed slots ending at the slot before the current one. Recovers by itself.
  uint64_t max_consecutive_missed_slots = 0;
  // Missed slots among the window_slots slots before the current one. Recovers by itself.
  uint64_t max_missed_slots_in_window = 0;
  uint64_t window_slots = 32;
  // Epochs since the latest finalized epoch any node reported. Recovers by itself.
  uint64_t max_epochs_since_finalization = 0;

  friend bool operator==(const MissedSlotRules& a, const MissedSlotRules& b);
};

// The rules a client applies on its own at each proposal slot p, so that a mixed fleet refuses
// builders exactly when that client would (docs/semantics.md, "Presets"):
//   mevboost:   the seed's latched rule, more than 5 missed since the last present slot;
//   prysm:      more than 1 consecutive (p-2 and p-1 empty), more than 4 in the last 32;
//   lighthouse: more than 3 consecutive, more than 8 in the last 32, more than 3 epochs
//               since finalization;
//   teku:       more than 3 consecutive, more than 5 in the last 31;
//   off:        no missed-slot rule.
// Returns INVALID_ARGUMENT naming the known presets for any other name.
absl::StatusOr<MissedSlotRules> MissedSlotRulesForPreset(absl::string_view preset);

struct Config {
  ChainSpec chain;

  // --- Per-builder failure tracking (Gloas) ---
  // Failures tolerated before a ban: a builder is banned once `failed` exceeds this.
  uint32_t allowed_failures = 0;
  // From this many consecutive failures on, the ban is critical.
  uint32_t critical_failures = 2;
  // Length of a first ban, in epochs (the seed's WhitelistPeriod).
  uint64_t blacklist_period_epochs = 1;
  // Length of a critical ban, in epochs; 0 means until an operator reset or a delivered
  // payload.
  uint64_t critical_blacklist_period_epochs = 0;
  // A failure at epoch e keeps the builder's counter alive until e + this; a failure after
  // that starts counting from zero again.
  uint64_t backoff_period_epochs = 5;
  // A missing payload counts as the builder's failure only when the block was attested by more
  // than this fraction of the slot's committee weight. In [0, 1).
  double attestation_threshold = 0.60;

  // --- Systemic fallback ---
  // This many builders banned by their own failures: self-build only.
  uint32_t critical_failed_builders = 7;
  // This many untrusted builders banned by their own failures: trusted builders only.
  uint32_t critical_failed_untrusted_builders = 3;

  // --- Operator lists ---
  std::vector<BuilderIndex> trusted_builders;
  // Banned until removed from the configuration; never counted toward the fallback modes.
  std::vector<BuilderIndex> blacklisted_builders;
  std::vector<RelayConfig> relays;
  // Relays (any spelling NormalizeRelayId accepts) banned for as long as they are listed here:
  // every bid through one is refused and every builder it serves is banned. Never counted
  // toward the fallback modes. At most bounds::kMaxListedRelays, none of them trusted.
  std::vector<std::string> blacklisted_relays;

  // --- Relays ---
  // Longest ban a relay (and its other builders) gets for one member's failure, in epochs.
  uint64_t relay_blacklist_period_epochs = 32;
  // A learned builder/relay association expires after this many epochs without a bid through
  // that relay.
  uint64_t relay_association_ttl_epochs = 64;
  // Caps that bound memory under hostile input. A cap never drops an active ban.
  uint32_t max_relays = 64;
  uint32_t max_indices_per_relay = 16;
  uint32_t max_tracked_builders = 4096;

  // --- Pre-Gloas missed-slot breaker ---
  MissedSlotRules missed_slots;

  // --- Fleet aggregation ---
  // Distinct nodes that must report a failure before it counts.
  uint32_t min_reporting_nodes = 1;
  // How far back an observation may be, in slots; also how long a slot's verdict can be
  // amended by a late report. At least 2 (the seed rule judges a slot at the end of the next
  // one).
  uint64_t amendment_window_slots = 64;
  // How far ahead of the service's current slot an observation may be (clock skew), in slots.
  uint64_t max_future_slots = 2;
};

// The largest serialized breaker.v1.Policy (in its ServerMessage) that an engine running
// `config` can publish, whatever its input within core/input_bounds.h: each list at its
// longest, each string at its bound. ValidateConfig refuses caps for which it exceeds
// bounds::kMaxSentMessageBytes.
size_t WorstCasePolicyBytes(const Config& config);

// Returns OK, or INVALID_ARGUMENT whose message names the offending field (as spelled in this
// header), its value, and what would be accepted.
absl::Status ValidateConfig(const Config& config);

}  // namespace breaker::core

#endif  // CORE_CONFIG_H_
