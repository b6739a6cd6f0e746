#include "core/policy.h"

namespace breaker::core {

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

bool Policy::SameDecisions(const Policy& other) const {
  // The missed-slot counts and the rule text move with every slot; only the verdict decides.
  return mode == other.mode && banned_builders == other.banned_builders &&
         banned_relays == other.banned_relays && trusted_builders == other.trusted_builders &&
         trusted_relays == other.trusted_relays &&
         missed_slots.active == other.missed_slots.active &&
         missed_slots.tripped == other.missed_slots.tripped &&
         missed_slots.latched == other.missed_slots.latched;
}

}  // namespace breaker::core
