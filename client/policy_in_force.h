#ifndef CLIENT_POLICY_IN_FORCE_H_
#define CLIENT_POLICY_IN_FORCE_H_

// Which policy a beacon node applies while breakerd comes and goes. The rules, with no thread,
// network or clock of their own:
//
// - No fleet policy received yet: the local engine's (kLocal).
// - A fleet policy held, and breakerd reachable or unreachable for at most the staleness limit:
//   the fleet policy alone (kFleet, fail-static). The limit counts from the last contact: a
//   message from breakerd, or the end of a stream that had brought one.
// - Unreachable for longer than the limit (strictly): the stricter of the last fleet policy and
//   the local engine's (kFleetAndLocal).
// - Catching up. A stream that starts while the local engine takes part in the policy in force
//   (kFleetAndLocal or kLocal) keeps the stricter of the two in force, connected or not, until
//     (a) this stream has brought a fleet policy,
//     (b) breakerd has acknowledged every observation the node held unacknowledged when the
//         stream started, and
//     (c) the fleet policy held is at least the version that acknowledgement names (the one
//         current when breakerd applied them).
//   Then the fleet policy alone is in force again. Taking the fleet policy at once would allow,
//   for a moment, a builder the node saw fail while breakerd was away.
//
// The connection code reports what happens on each stream (the On* methods) and calls
// Evaluate() whenever something may have changed, the passing of time included.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "client/policy_snapshot.h"
#include "common/clock.h"
#include "core/policy.h"

namespace breaker::client {

// This class is thread-compatible: the caller serializes every call (the gRPC client holds
// its connection lock around each).
class PolicyInForce {
 public:
  // The clock's reading now counts as the last contact: a node that has just started is not
  // stale (it holds no fleet policy either). The limit does not change afterwards.
  // REQUIRES: staleness_limit > 0; `clock` outlives this object.
  PolicyInForce(const Clock& clock, absl::Duration staleness_limit);

  // --- What happens on the stream -------------------------------------------------------

  // A stream to breakerd starts, before its hello. `last_unacknowledged` is the sequence
  // number of the last observation the node holds that breakerd has not acknowledged; 0 when
  // none. Decides whether this stream must catch up.
  // REQUIRES: the previous stream, if any, has ended (OnStreamEnd).
  void OnStreamStart(uint64_t last_unacknowledged);

  // A message from breakerd has arrived on the current stream (any message: the policy,
  // an acknowledgement, the configuration, the node state). Call it before the specific
  // method below. Returns true for the stream's first message: connected from now on.
  bool OnMessage();

  // breakerd's fleet policy, from the current stream; `fleet_id` names the breakerd whose
  // versions these are.
  void OnFleetPolicy(core::Policy policy, std::string fleet_id);

  // breakerd has acknowledged the node's observations up to `sequence`, having applied them
  // when its policy was at `policy_version`.
  void OnAcknowledged(uint64_t sequence, uint64_t policy_version);

  // The node's observations not sent yet were numbered anew (breakerd's NodeState said it had
  // handled numbers above theirs): the last unacknowledged one is now `last_unacknowledged`.
  void OnRenumbered(uint64_t last_unacknowledged);

  // The current stream has ended, whatever the reason. If it had brought a message, breakerd
  // was reachable until now, however quiet the stream was: the staleness limit counts from
  // here.
  void OnStreamEnd();

  // --- What the node applies ------------------------------------------------------------

  // The policy in force now, given the local engine's policy `local` (its configuration is
  // whatever breakerd sent last, a reload included). Reads the clock.
  PolicySnapshot Evaluate(const core::Policy& local) const;

  // The fleet policy the hello says the node holds, so that breakerd sends one only when its
  // own differs.
  struct Held {
    uint64_t version = 0;
    std::string fleet_id;
  };
  // nullopt when no fleet policy is held, or when the current stream catches up: catching up
  // needs this stream's own policy, even when the version held is current.
  // REQUIRES: OnStreamStart has been called for the current stream.
  std::optional<Held> HelloClaim() const;

  // Between a stream's first message and its end.
  bool connected() const { return connected_; }

 private:
  // Where the policy in force comes from now.
  PolicySource SourceNow() const;
  // Ends catching up when (a), (b) and (c) hold.
  void UpdateCatchUp();

  // Constant after construction.
  const Clock& clock_;
  const absl::Duration staleness_limit_;

  bool connected_ = false;
  absl::Time last_contact_;
  std::optional<core::Policy> fleet_;
  std::string fleet_id_;
  // Catching up: whether, whether this stream has brought a policy (a), the last observation
  // still to be acknowledged (0: none, (b) holds) and the version that reflects them (c).
  bool catching_up_ = false;
  bool stream_policy_received_ = false;
  uint64_t catch_up_sequence_ = 0;
  uint64_t catch_up_version_ = 0;
};

}  // namespace breaker::client

#endif  // CLIENT_POLICY_IN_FORCE_H_
