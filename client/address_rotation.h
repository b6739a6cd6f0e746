#ifndef CLIENT_ADDRESS_ROTATION_H_
#define CLIENT_ADDRESS_ROTATION_H_

// Which breakerd address a client tries next, and how long it waits first, when it is given
// several (every replica's, with breakerd on etcd). The addresses are tried in turn. One that
// fails (down, or a standby) sends the client on to the next at once; the backoff waits only
// once every address has failed since the last wait or the last stream breakerd answered.
// A round in which a standby named a leader and every other address was unavailable is a
// failover under way (or a leader out of this client's reach): its wait is the backoff's first
// step, not a growing one, so that the client reaches the new leader about a second after it
// serves, instead of at its next, longer, backoff.

#include <cstddef>

#include "absl/time/time.h"
#include "client/backoff.h"

namespace breaker::client {

// This class is thread-compatible: one thread (the client's connection thread) uses it.
class AddressRotation {
 public:
  // How an attempt ended.
  struct Attempt {
    // breakerd answered on it (the stream was up).
    bool answered = false;
    // It ended UNAVAILABLE: breakerd down, shutting down, or a standby.
    bool unavailable = false;
    // A standby refused it, naming the leader (kLeaderTrailer).
    bool standby = false;
  };

  // REQUIRES: addresses >= 1; `backoff` outlives the rotation.
  AddressRotation(size_t addresses, Backoff* backoff);

  // The index of the address to try now.
  size_t current() const { return current_; }

  // The attempt at current() ended as `attempt`: moves on to the next address and returns how
  // long to wait before trying it (zero: at once).
  absl::Duration Ended(const Attempt& attempt);

 private:
  const size_t addresses_;
  Backoff* const backoff_;
  size_t current_ = 0;
  // Since the last wait or the last answered stream: attempts, whether a standby named a
  // leader, and whether every one ended UNAVAILABLE.
  size_t tried_ = 0;
  bool standby_seen_ = false;
  bool all_unavailable_ = true;
};

}  // namespace breaker::client

#endif  // CLIENT_ADDRESS_ROTATION_H_
