#ifndef SIDECAR_BUILDER_REFUSAL_H_
#define SIDECAR_BUILDER_REFUSAL_H_

// The refusal rule: whether the policy in force lets a header or a bid through an upstream,
// and why not. Pure; the Enforcer applies it and counts.

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "core/policy.h"
#include "core/types.h"

namespace breaker::sidecar {

struct UpstreamIdentity {
  // Normalized relay identifier (core::NormalizeRelayId of the upstream URL).
  std::string relay_id;
  // Trusted by the sidecar's configuration.
  bool trusted = false;
};

// Why a header or bid is answered 204: a small fixed set, for metrics.
enum class RefusalCause {
  kSelfBuild,      // the mode is SELF_BUILD
  kRelayBanned,    // the upstream's relay is banned
  kNotTrusted,     // the mode is TRUSTED_ONLY and the upstream is not trusted
  kBuilderBanned,  // a Gloas bid's builder is banned
  kUnreadableBid,  // a Gloas bid whose builder index cannot be read
};
inline constexpr RefusalCause kRefusalCauses[] = {
    RefusalCause::kSelfBuild, RefusalCause::kRelayBanned, RefusalCause::kNotTrusted,
    RefusalCause::kBuilderBanned, RefusalCause::kUnreadableBid};
// "self_build", "relay_banned", "not_trusted", "builder_banned", "unreadable_bid".
absl::string_view RefusalCauseLabel(RefusalCause cause);

// Why `policy` refuses headers and bids through `upstream`; nullopt when it allows them. When
// it refuses and `cause` is not null, sets *cause.
std::optional<std::string> RefusalReason(const core::Policy& policy,
                                         const UpstreamIdentity& upstream,
                                         RefusalCause* cause = nullptr);

// Why `policy` refuses a Gloas bid of `builder` through `upstream`: RefusalReason's, else the
// builder's ban; nullopt when it allows it. When it refuses and `cause` is not null, sets
// *cause.
std::optional<std::string> BidRefusalReason(const core::Policy& policy,
                                            const UpstreamIdentity& upstream,
                                            core::BuilderIndex builder,
                                            RefusalCause* cause = nullptr);

}  // namespace breaker::sidecar

#endif  // SIDECAR_BUILDER_REFUSAL_H_
