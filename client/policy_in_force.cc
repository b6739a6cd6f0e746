#include "client/policy_in_force.h"

#include <utility>

namespace breaker::client {

PolicyInForce::PolicyInForce(const Clock& clock, absl::Duration staleness_limit)
    : clock_(clock), staleness_limit_(staleness_limit), last_contact_(clock.Now()) {}

void PolicyInForce::OnStreamStart(uint64_t last_unacknowledged) {
  connected_ = false;
  catching_up_ = SourceNow() != PolicySource::kFleet;
  stream_policy_received_ = false;
  catch_up_sequence_ = catching_up_ ? last_unacknowledged : 0;
  catch_up_version_ = 0;
}

bool PolicyInForce::OnMessage() {
  last_contact_ = clock_.Now();
  const bool first = !connected_;
  connected_ = true;
  return first;
}

void PolicyInForce::OnFleetPolicy(core::Policy policy, std::string fleet_id) {
  fleet_ = std::move(policy);
  fleet_id_ = std::move(fleet_id);
  stream_policy_received_ = true;
  UpdateCatchUp();
}

void PolicyInForce::OnAcknowledged(uint64_t sequence, uint64_t policy_version) {
  if (catch_up_sequence_ != 0 && sequence >= catch_up_sequence_) {
    catch_up_sequence_ = 0;
    catch_up_version_ = policy_version;
  }
  UpdateCatchUp();
}

void PolicyInForce::OnRenumbered(uint64_t last_unacknowledged) {
  // Catching up waits for the acknowledgement of what was reported before the hello, under its
  // new numbers (and of what came since, renumbered with it).
  if (catch_up_sequence_ != 0) catch_up_sequence_ = last_unacknowledged;
}

void PolicyInForce::OnStreamEnd() {
  if (connected_) last_contact_ = clock_.Now();
  connected_ = false;
}

PolicySnapshot PolicyInForce::Evaluate(const core::Policy& local) const {
  PolicySnapshot snapshot;
  snapshot.source = SourceNow();
  switch (snapshot.source) {
    case PolicySource::kLocal:
      snapshot.policy = local;
      return snapshot;
    case PolicySource::kFleetAndLocal:
      snapshot.policy = core::StricterOf(*fleet_, local);
      break;
    case PolicySource::kFleet:
      snapshot.policy = *fleet_;
      break;
  }
  snapshot.fleet_version = fleet_->version;
  return snapshot;
}

std::optional<PolicyInForce::Held> PolicyInForce::HelloClaim() const {
  if (!fleet_.has_value() || catching_up_) return std::nullopt;
  return Held{fleet_->version, fleet_id_};
}

PolicySource PolicyInForce::SourceNow() const {
  if (!fleet_.has_value()) return PolicySource::kLocal;
  const bool stale = !connected_ && clock_.Now() - last_contact_ > staleness_limit_;
  return stale || catching_up_ ? PolicySource::kFleetAndLocal : PolicySource::kFleet;
}

void PolicyInForce::UpdateCatchUp() {
  if (catching_up_ && stream_policy_received_ && catch_up_sequence_ == 0 &&
      fleet_->version >= catch_up_version_) {
    catching_up_ = false;
  }
}

}  // namespace breaker::client
