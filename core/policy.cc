#include "core/policy.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace breaker::core {
namespace {

// Strictness as an order: a mode that allows fewer bids is greater.
int Strictness(Mode mode) {
  switch (mode) {
    case Mode::kAllBuilders:
      return 0;
    case Mode::kTrustedOnly:
      return 1;
    case Mode::kSelfBuild:
      return 2;
  }
  return 2;
}

// True when `a` lasts strictly longer than `b`: until reset outlasts any epoch.
bool Outlasts(const Ban& a, const Ban& b) {
  if (a.until_reset != b.until_reset) return a.until_reset;
  if (a.until_reset) return false;
  return a.until_epoch > b.until_epoch;
}

// Adds `local`'s bans to `merged` (a copy of the fleet's): a key in both keeps the stricter.
template <typename Key>
void UnionBans(absl::flat_hash_map<Key, Ban>& merged, const absl::flat_hash_map<Key, Ban>& local) {
  for (const auto& [key, ban] : local) {
    auto [it, inserted] = merged.try_emplace(key, ban);
    if (inserted) continue;
    Ban& kept = it->second;
    const BanKind kind = std::min(kept.kind, ban.kind);
    if (Outlasts(ban, kept)) kept = ban;
    kept.kind = kind;
  }
}

// Keeps in `merged` (a copy of the fleet's) only the members also in `local`.
template <typename Key>
void IntersectTrusted(absl::flat_hash_set<Key>& merged, const absl::flat_hash_set<Key>& local) {
  absl::erase_if(merged, [&local](const Key& key) { return !local.contains(key); });
}

}  // namespace

absl::string_view ModeName(Mode mode) {
  switch (mode) {
    case Mode::kAllBuilders:
      return "ALL_BUILDERS";
    case Mode::kTrustedOnly:
      return "TRUSTED_ONLY";
    case Mode::kSelfBuild:
      return "SELF_BUILD";
  }
  return "UNKNOWN";
}

absl::string_view BanKindName(BanKind kind) {
  switch (kind) {
    case BanKind::kFailure:
      return "failure";
    case BanKind::kOperator:
      return "operator";
    case BanKind::kCollateral:
      return "collateral";
  }
  return "unknown";
}

bool Policy::IsAllowed(BuilderIndex builder, absl::string_view relay) const {
  if (builder == kSelfBuild) return true;
  if (mode == Mode::kSelfBuild) return false;
  if (banned_builders.contains(builder)) return false;
  if (!relay.empty() && banned_relays.contains(relay)) return false;
  if (mode == Mode::kTrustedOnly) {
    return trusted_builders.contains(builder) || (!relay.empty() && trusted_relays.contains(relay));
  }
  return true;
}

bool Policy::IsRelayAllowed(absl::string_view relay) const {
  if (mode == Mode::kSelfBuild || banned_relays.contains(relay)) return false;
  return mode != Mode::kTrustedOnly || trusted_relays.contains(relay);
}

bool Policy::SameDecisions(const Policy& other) const {
  // The missed-slot counts and the rule text move with every slot; only the verdict decides.
  return mode == other.mode && banned_builders == other.banned_builders &&
         banned_relays == other.banned_relays && trusted_builders == other.trusted_builders &&
         trusted_relays == other.trusted_relays && builder_pubkeys == other.builder_pubkeys &&
         missed_slots.active == other.missed_slots.active &&
         missed_slots.tripped == other.missed_slots.tripped &&
         missed_slots.latched == other.missed_slots.latched;
}

Policy StricterOf(const Policy& fleet, const Policy& local) {
  Policy policy = fleet;
  if (Strictness(local.mode) > Strictness(fleet.mode)) {
    policy.mode = local.mode;
    policy.mode_reason = absl::StrCat("local: ", local.mode_reason);
  }
  UnionBans(policy.banned_builders, local.banned_builders);
  UnionBans(policy.banned_relays, local.banned_relays);
  IntersectTrusted(policy.trusted_builders, local.trusted_builders);
  IntersectTrusted(policy.trusted_relays, local.trusted_relays);
  // A key either engine learned; the fleet's wins where both know one (it saw more bids).
  for (const auto& [builder, pubkey] : local.builder_pubkeys) {
    policy.builder_pubkeys.try_emplace(builder, pubkey);
  }
  if (local.missed_slots.tripped) policy.missed_slots = local.missed_slots;
  policy.computed_at_slot = std::max(fleet.computed_at_slot, local.computed_at_slot);
  policy.computed_at_epoch = std::max(fleet.computed_at_epoch, local.computed_at_epoch);
  policy.reason =
      absl::StrCat("stricter of fleet version ", fleet.version, " and the local engine");
  return policy;
}

}  // namespace breaker::core
