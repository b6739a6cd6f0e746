#include "sidecar/builder/refusal.h"

#include "absl/strings/str_cat.h"

namespace breaker::sidecar {

absl::string_view RefusalCauseLabel(RefusalCause cause) {
  switch (cause) {
    case RefusalCause::kSelfBuild:
      return "self_build";
    case RefusalCause::kRelayBanned:
      return "relay_banned";
    case RefusalCause::kNotTrusted:
      return "not_trusted";
    case RefusalCause::kBuilderBanned:
      return "builder_banned";
    case RefusalCause::kUnreadableBid:
      return "unreadable_bid";
  }
  return "unknown";
}

std::optional<std::string> RefusalReason(const core::Policy& policy,
                                         const UpstreamIdentity& upstream, RefusalCause* cause) {
  RefusalCause ignored;
  if (cause == nullptr) cause = &ignored;
  if (policy.mode == core::Mode::kSelfBuild) {
    *cause = RefusalCause::kSelfBuild;
    return absl::StrCat("mode SELF_BUILD: ", policy.mode_reason);
  }
  if (auto it = policy.banned_relays.find(upstream.relay_id); it != policy.banned_relays.end()) {
    *cause = RefusalCause::kRelayBanned;
    return absl::StrCat("relay ", upstream.relay_id, " is banned (",
                        core::BanKindName(it->second.kind), "): ", it->second.reason);
  }
  if (policy.mode == core::Mode::kTrustedOnly && !upstream.trusted &&
      !policy.trusted_relays.contains(upstream.relay_id)) {
    *cause = RefusalCause::kNotTrusted;
    return absl::StrCat("mode TRUSTED_ONLY and relay ", upstream.relay_id, " is not trusted");
  }
  return std::nullopt;
}

std::optional<std::string> BidRefusalReason(const core::Policy& policy,
                                            const UpstreamIdentity& upstream,
                                            core::BuilderIndex builder, RefusalCause* cause) {
  RefusalCause ignored;
  if (cause == nullptr) cause = &ignored;
  std::optional<std::string> reason = RefusalReason(policy, upstream, cause);
  if (reason) return reason;
  if (auto it = policy.banned_builders.find(builder); it != policy.banned_builders.end()) {
    *cause = RefusalCause::kBuilderBanned;
    return absl::StrCat("builder ", builder, " is banned (", core::BanKindName(it->second.kind),
                        "): ", it->second.reason);
  }
  return std::nullopt;
}

}  // namespace breaker::sidecar
