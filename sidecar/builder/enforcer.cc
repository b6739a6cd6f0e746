#include "sidecar/builder/enforcer.h"

#include <string>
#include <utility>

#include "common/mutex.h"
#include "glog/logging.h"
#include "sidecar/builder/messages.h"

namespace breaker::sidecar {
namespace {

void CountRefusal(Enforcer::Counters& counters, RefusalCause cause) {
  ++counters.refused;
  ++counters.refused_by_cause[static_cast<size_t>(cause)];
}

}  // namespace

Enforcer::Enforcer(client::BreakerClient& client, std::vector<UpstreamIdentity> upstreams)
    : client_(client), upstreams_(std::move(upstreams)), state_(upstreams_.size()) {}

std::optional<std::string> Enforcer::Refuse(size_t index, const Route& route) {
  if (route.endpoint != Endpoint::kGetHeader &&
      route.endpoint != Endpoint::kGetExecutionPayloadBid) {
    return std::nullopt;
  }
  const std::shared_ptr<const client::PolicySnapshot> snapshot = client_.policy();
  RefusalCause cause;
  std::optional<std::string> reason = RefusalReason(snapshot->policy, upstreams_.at(index), &cause);
  if (reason) {
    MutexLock lock(&mu_);
    CountRefusal(state_.at(index).counters, cause);
  }
  return reason;
}

void Enforcer::OnForwarded(size_t index, bool failed) {
  MutexLock lock(&mu_);
  Counters& counters = state_.at(index).counters;
  ++(failed ? counters.upstream_errors : counters.forwarded);
}

bool Enforcer::OnHeaderAnswered(size_t index, core::Slot slot, int status, absl::string_view body,
                                absl::string_view content_type) {
  if (status != 200) return true;
  // An SSZ header (mev-boost may ask for one) gives no block hash: matched by slot alone.
  const bool ssz = IsSsz(content_type);
  std::optional<std::string> block_hash;
  if (ssz)
    block_hash.emplace();
  else
    block_hash = HeaderBlockHash(body);
  MutexLock lock(&mu_);
  PerUpstream& upstream = state_.at(index);
  if (!block_hash.has_value()) {
    ++upstream.counters.malformed_answers;
    return false;
  }
  ++upstream.counters.headers_seen;
  upstream.headers.push_back(Header{slot, *std::move(block_hash)});
  while (upstream.headers.size() > kMaxRememberedHeaders) upstream.headers.pop_front();
  return true;
}

std::optional<std::string> Enforcer::OnBidAnswered(size_t index, core::Slot slot, int status,
                                                   absl::string_view body,
                                                   absl::string_view content_type) {
  if (status != 200) return std::nullopt;
  const UpstreamIdentity& identity = upstreams_.at(index);
  const std::optional<core::BuilderIndex> builder = BidBuilderIndex(body, content_type);
  if (!builder) {
    MutexLock lock(&mu_);
    Counters& counters = state_.at(index).counters;
    ++counters.malformed_answers;
    CountRefusal(counters, RefusalCause::kUnreadableBid);
    return std::string("the bid's builder index cannot be read, so the policy cannot be applied");
  }
  // Here and below: what the client refuses, breakerd would refuse too, and the client's stats
  // keep why (last_refusal); the bid's answer does not depend on it.
  client_.Report(slot, core::BidSeen{*builder, identity.relay_id, ""}).IgnoreError();
  // The policy may have changed while the upstream took its time.
  const std::shared_ptr<const client::PolicySnapshot> snapshot = client_.policy();
  const core::Policy& policy = snapshot->policy;
  RefusalCause cause;
  const std::optional<std::string> reason = BidRefusalReason(policy, identity, *builder, &cause);
  MutexLock lock(&mu_);
  Counters& counters = state_.at(index).counters;
  ++counters.bids_seen;
  if (reason) CountRefusal(counters, cause);
  return reason;
}

bool Enforcer::OnBlindedBlockAnswered(size_t index, absl::string_view request_body,
                                      absl::string_view content_type, bool failed) {
  if (!failed) return false;
  ssz::Preset preset;
  {
    MutexLock lock(&mu_);
    preset = preset_;
  }
  const absl::StatusOr<BlindedBlock> block = ParseBlindedBlock(request_body, content_type, preset);
  if (!block.ok()) {
    {
      MutexLock lock(&mu_);
      ++state_.at(index).counters.unreadable_blocks;
    }
    LOG(WARNING) << "a reveal via " << upstreams_.at(index).relay_id
                 << " failed, and its block's root cannot be computed, so the failure is not "
                    "reported: "
                 << block.status().message();
    return false;
  }
  {
    MutexLock lock(&mu_);
    PerUpstream& upstream = state_.at(index);
    bool signed_for_it = false;
    for (const Header& header : upstream.headers) {
      if (header.slot != block->slot) continue;
      // Unknown on either side (SSZ): the slot alone matches.
      if (header.block_hash.empty() || block->block_hash.empty() ||
          header.block_hash == block->block_hash) {
        signed_for_it = true;
        break;
      }
    }
    if (!signed_for_it) return false;
    ++upstream.counters.reveal_failures;
  }
  client_.Report(block->slot, core::RelayRevealMissing{upstreams_.at(index).relay_id, block->root})
      .IgnoreError();
  return true;
}

void Enforcer::SetPreset(const ssz::Preset& preset) {
  MutexLock lock(&mu_);
  preset_ = preset;
}

ssz::Preset Enforcer::preset() const {
  MutexLock lock(&mu_);
  return preset_;
}

Enforcer::Counters Enforcer::counters(size_t index) const {
  MutexLock lock(&mu_);
  return state_.at(index).counters;
}

}  // namespace breaker::sidecar
