#ifndef SIDECAR_BUILDER_ENFORCER_H_
#define SIDECAR_BUILDER_ENFORCER_H_

// The sidecar's decisions at the builder API (ethereum/builder-specs), apart from the HTTP
// plumbing: which requests are answered 204 without contacting the upstream, and what is
// reported to breakerd through the client library.
//
//   - A getHeader (GET /eth/v1/builder/header/{slot}/{parent_hash}/{pubkey}) or a Gloas
//     getExecutionPayloadBid (POST /eth/v1/builder/execution_payload_bid/{slot}/{parent_hash}/
//     {parent_root}/{proposer_pubkey}) is refused (204) when the policy in force refuses the
//     upstream: the mode is SELF_BUILD, the upstream's relay identifier is banned, or the mode
//     is TRUSTED_ONLY and the upstream is trusted neither by the sidecar's configuration nor by
//     the policy. A pre-Gloas header names no builder index, so a ban of a builder (not of its
//     relay) cannot be applied to it.
//   - A Gloas bid answered 200 names its builder (data.message.builder_index in JSON, the
//     bid's builder_index field in SSZ). It is reported as a BidSeen through the upstream, and
//     answered 204 instead of forwarded when the policy in force by then bans that builder or
//     refuses the upstream. A bid whose builder cannot be read is answered 204 too: the policy
//     cannot be applied to it, and a 204 costs the node a bid, never its block.
//   - Every other request is forwarded.
//   - A header answered 200 is remembered (slot, block hash) for its upstream, bounded. It is
//     not reported as a BidSeen: a BidSeen needs a builder index, which a pre-Gloas header
//     does not carry.
//   - A submitBlindedBlock (POST /eth/v{1,2}/builder/blinded_blocks) that fails (transport
//     error, timeout, or a 5xx status) for a block whose header that upstream answered is a
//     RelayRevealMissing of the block's root. A 4xx answer is not: the upstream judged the
//     request invalid. Nor is a block whose root cannot be computed (ParseBlindedBlock, with
//     the beacon node's preset): that is logged, naming why, and counted.
//
// The routes are routes.h's, the rule refusal.h's, the bodies read by messages.h; this class
// keeps what is remembered between requests and the counters.

#include <array>
#include <cstdint>
#include <deque>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "client/client.h"
#include "common/mutex.h"
#include "core/policy.h"
#include "core/types.h"
#include "sidecar/builder/refusal.h"
#include "sidecar/builder/routes.h"
#include "sidecar/ssz/beacon_block.h"

namespace breaker::sidecar {

// Headers remembered per upstream, to match reveal failures with.
inline constexpr size_t kMaxRememberedHeaders = 64;

// Thread-safe.
class Enforcer {
 public:
  // REQUIRES: `client` outlives the enforcer.
  Enforcer(client::BreakerClient& client, std::vector<UpstreamIdentity> upstreams);

  // Per upstream, since the start. Every request ends as one of forwarded, refused and
  // upstream_errors.
  struct Counters {
    // The upstream's answer was passed back (a 5xx one counts as an upstream error).
    uint64_t forwarded = 0;
    // Answered 204 by the policy, before contacting the upstream or after reading its bid.
    uint64_t refused = 0;
    // The same, by cause (indexed by RefusalCause).
    std::array<uint64_t, std::size(kRefusalCauses)> refused_by_cause = {};
    // No answer (transport error, timeout, an answer too large) or a 5xx status.
    uint64_t upstream_errors = 0;
    uint64_t headers_seen = 0;
    // Gloas bids whose builder index was read, each reported as a BidSeen.
    uint64_t bids_seen = 0;
    // 200 answers to a header or bid request that could not be read.
    uint64_t malformed_answers = 0;
    uint64_t reveal_failures = 0;
    // Failed reveals whose block root could not be computed (so not reported), each logged.
    uint64_t unreadable_blocks = 0;
  };

  const UpstreamIdentity& upstream(size_t index) const { return upstreams_.at(index); }
  size_t upstream_count() const { return upstreams_.size(); }

  // Before contacting upstream `index` for `route`: the reason to answer 204 without
  // contacting it (counted as refused), or nullopt to forward.
  std::optional<std::string> Refuse(size_t index, const Route& route);

  // A forwarded request ended: the upstream's answer was passed back, or (`failed`) there was
  // none or a 5xx one.
  void OnForwarded(size_t index, bool failed);

  // The upstream answered a getHeader of `slot` with `status`, `body` and `content_type`.
  // Returns false when a 200 answer in JSON (any content type but application/octet-stream)
  // cannot be read: counted as malformed, not remembered; the answer is still passed back, for
  // the node to judge.
  bool OnHeaderAnswered(size_t index, core::Slot slot, int status, absl::string_view body,
                        absl::string_view content_type);

  // The upstream answered a getExecutionPayloadBid of `slot`. For a 200 answer: reports the
  // bid's builder as a BidSeen, then returns the reason to answer 204 instead of the bid (the
  // builder is banned, the policy in force now refuses the upstream, or the builder index
  // cannot be read), counted as refused. nullopt: pass the answer back.
  std::optional<std::string> OnBidAnswered(size_t index, core::Slot slot, int status,
                                           absl::string_view body, absl::string_view content_type);

  // The upstream answered a submitBlindedBlock (`failed`: error, timeout or 5xx). Returns
  // whether a RelayRevealMissing was reported.
  bool OnBlindedBlockAnswered(size_t index, absl::string_view request_body,
                              absl::string_view content_type, bool failed);

  Counters counters(size_t index) const;

  // The limits blocks are read with: the beacon node's preset (mainnet's until it is known).
  void SetPreset(const ssz::Preset& preset);
  ssz::Preset preset() const;

 private:
  struct Header {
    core::Slot slot = 0;
    std::string block_hash;
  };
  struct PerUpstream {
    std::deque<Header> headers;
    Counters counters;
  };

  client::BreakerClient& client_;
  const std::vector<UpstreamIdentity> upstreams_;
  mutable Mutex mu_;
  std::vector<PerUpstream> state_ ABSL_GUARDED_BY(mu_);
  ssz::Preset preset_ ABSL_GUARDED_BY(mu_) = ssz::Preset::kMainnet;
};

}  // namespace breaker::sidecar

#endif  // SIDECAR_BUILDER_ENFORCER_H_
