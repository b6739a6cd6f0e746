#ifndef CORE_POLICY_H_
#define CORE_POLICY_H_

// The policy: what every beacon node of the fleet receives and applies at block production.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "core/types.h"

namespace breaker::core {

enum class Mode {
  // Bids from every builder that is not banned.
  kAllBuilders,
  // Only bids from trusted builders or through trusted relays; P2P bids from untrusted builders
  // are refused.
  kTrustedOnly,
  // No bid is taken: the proposer builds its own payload.
  kSelfBuild,
};

absl::string_view ModeName(Mode mode);

// Why a builder or relay is banned. When several causes hold at once, the first of this list
// is reported (it is the one that counts toward the fallback modes), and the ban lasts until
// every cause has lifted.
enum class BanKind {
  // The builder's (or relay's) own failures.
  kFailure,
  // The operator: the configured blacklist or an operator ban.
  kOperator,
  // Another builder served by the same relay failed ("collateral").
  kCollateral,
};

absl::string_view BanKindName(BanKind kind);

struct Ban {
  BanKind kind = BanKind::kFailure;
  // Banned while the current epoch is below this. 0 when until_reset is set.
  Epoch until_epoch = 0;
  // Banned until an operator reset, an unban, or (for failures) a delivered payload.
  bool until_reset = false;
  // Human-readable: what happened, where (slot, block root, relay).
  std::string reason;

  friend bool operator==(const Ban& a, const Ban& b) {
    return a.kind == b.kind && a.until_epoch == b.until_epoch && a.until_reset == b.until_reset &&
           a.reason == b.reason;
  }
};

// State of the pre-Gloas missed-slot breaker.
struct MissedSlotState {
  // The missed-slot rules apply (the chain is before the Gloas fork and a rule is on).
  bool active = false;
  // A rule holds: the fleet builds locally.
  bool tripped = false;
  // The seed's latched rule tripped; only an operator reset clears it.
  bool latched = false;
  // The rule that tripped, e.g. "consecutive missed slots 4 > 3"; empty when not tripped.
  std::string rule;
  // Missed slots since the last present slot (consecutive, ending at the latest judged slot).
  uint64_t consecutive_missed = 0;
  // Missed slots among the last `window_slots` judged slots.
  uint64_t missed_in_window = 0;
  // Epochs between the current epoch and the latest finalized epoch any node reported; 0
  // before any report.
  uint64_t epochs_since_finalization = 0;

  friend bool operator==(const MissedSlotState& a, const MissedSlotState& b) {
    return a.active == b.active && a.tripped == b.tripped && a.latched == b.latched &&
           a.rule == b.rule && a.consecutive_missed == b.consecutive_missed &&
           a.missed_in_window == b.missed_in_window &&
           a.epochs_since_finalization == b.epochs_since_finalization;
  }
};

struct Policy {
  // Increases with every change of the decisions below; never goes back.
  uint64_t version = 0;
  Mode mode = Mode::kAllBuilders;
  // Why the mode is what it is, naming the builders responsible; empty for kAllBuilders.
  std::string mode_reason;
  absl::flat_hash_map<BuilderIndex, Ban> banned_builders;
  // Keyed by normalized relay identifier.
  absl::flat_hash_map<std::string, Ban> banned_relays;
  // Builder indices trusted by the operator (configuration and runtime overrides).
  absl::flat_hash_set<BuilderIndex> trusted_builders;
  // Normalized identifiers of trusted relays; every bid through one is from a trusted builder.
  absl::flat_hash_set<std::string> trusted_relays;
  // The BLS public keys (48 bytes) of the banned and trusted builders, as last seen bidding:
  // what a beacon node's validator client names builders by (builder_pubkeys of produceBlockV4).
  // A builder whose key was never seen is absent; past bounds::kMaxPolicyBuilderKeys, trusted
  // builders' keys are left out before banned builders'.
  absl::flat_hash_map<BuilderIndex, std::string> builder_pubkeys;
  MissedSlotState missed_slots;
  // When this policy was computed.
  Slot computed_at_slot = 0;
  Epoch computed_at_epoch = 0;
  // What changed from the previous version, naming builders and relays.
  std::string reason;

  // True when a beacon node may take a bid from `builder` received through `relay`
  // (normalized identifier; empty for a P2P bid). O(1) expected.
  bool IsAllowed(BuilderIndex builder, absl::string_view relay) const;

  // True when a beacon node may take a header from `relay` (normalized identifier) whose
  // builder it cannot know, as before Gloas (a header names no builder index): the relay is
  // not banned, the mode is not SELF_BUILD, and in TRUSTED_ONLY the relay is trusted.
  bool IsRelayAllowed(absl::string_view relay) const;

  // True when the two policies decide the same for every bid (version, computation time and
  // change reason aside).
  bool SameDecisions(const Policy& other) const;
};

// Returns the policy a node applies when breakerd has been unreachable past the staleness
// limit: the stricter of the last `fleet` policy and the node's `local` engine's, so that a bid
// it allows is allowed by both.
//
// - mode: the stricter (kSelfBuild > kTrustedOnly > kAllBuilders), with that policy's
//   mode_reason, prefixed "local: " when it is `local`'s (a tie keeps `fleet`'s);
// - banned builders and relays: the union; a key banned by both keeps the stricter ban (until
//   reset, else the later end epoch) and its reason (a tie keeps `fleet`'s), and the lower kind;
// - trusted builders and relays: the intersection (fewer trusted is stricter);
// - builder keys: the union, `fleet`'s where both know a builder's;
// - missed_slots: `local`'s when it tripped, else `fleet`'s;
// - version: `fleet`'s (the client reports the fleet version it applies); computed_at_slot and
//   computed_at_epoch: the later of the two; reason: names the fleet version.
Policy StricterOf(const Policy& fleet, const Policy& local);

}  // namespace breaker::core

#endif  // CORE_POLICY_H_
