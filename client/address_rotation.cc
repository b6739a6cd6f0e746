#include "client/address_rotation.h"

namespace breaker::client {

AddressRotation::AddressRotation(size_t addresses, Backoff* backoff)
    : addresses_(addresses < 1 ? 1 : addresses), backoff_(backoff) {}

absl::Duration AddressRotation::Ended(const Attempt& attempt) {
  current_ = (current_ + 1) % addresses_;
  if (attempt.answered) {
    // A stream that was up starts the round over, and the backoff with it.
    backoff_->Reset();
    tried_ = 0;
    standby_seen_ = false;
    all_unavailable_ = true;
  }
  ++tried_;
  standby_seen_ = standby_seen_ || attempt.standby;
  all_unavailable_ = all_unavailable_ && attempt.unavailable;
  if (tried_ < addresses_) return absl::ZeroDuration();
  if (standby_seen_ && all_unavailable_) backoff_->Reset();
  tried_ = 0;
  standby_seen_ = false;
  all_unavailable_ = true;
  return backoff_->Next();
}

}  // namespace breaker::client
