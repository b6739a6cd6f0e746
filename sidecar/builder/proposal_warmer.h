#ifndef SIDECAR_BUILDER_PROPOSAL_WARMER_H_
#define SIDECAR_BUILDER_PROPOSAL_WARMER_H_

// Warms the connections to the upstreams before each of the node's own proposals.
//
// A node proposes a few times a day: by then any kept-alive connection to a relay has long
// expired, and the getHeader at the proposal would pay for a TCP and TLS handshake inside the
// slot's tightest deadline. The warmer learns the node's validator public keys from the
// registrations (POST /eth/v1/builder/validators) the node sends through the sidecar, their
// indices and the proposer duties of this epoch and the next from the beacon node, and at the
// start of the slot before each proposal has every upstream's pool open and check a connection
// (UpstreamPool::Warm, GET <path_prefix>/eth/v1/builder/status), so that the getHeader finds
// one open.
//
// Nothing is sent to an upstream the policy in force refuses headers from at that moment
// (RefusalReason, as the enforcer decides): it is not warmed. Duties are read again at every
// epoch, after a chain reorganisation, and when keys got their index; a key the node does not
// know yet (not deposited) is asked about again once an epoch.
//
// Bounds: at most max_keys keys, the least recently registered dropped first; registration
// bodies awaiting their reading at most max_pending_bytes, later ones dropped, and a body
// identical to one of the last few read (the same, through each upstream) not read again;
// every Beacon
// API answer as BeaconApiLimits says; one warm-up per upstream and proposal, each within
// warm_budget.

#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "core/chain_time.h"
#include "sidecar/beacon/beacon_api.h"
#include "sidecar/builder/refusal.h"
#include "sidecar/builder/upstream_pool.h"

namespace breaker::sidecar {

struct ProposalWarmerOptions {
  // The beacon node's Beacon API, split as SidecarSettings keeps it.
  std::string base;
  std::string path_prefix;
  BeaconApiLimits limits;
  // The chain's genesis and slot lengths: when each slot begins.
  core::ChainSpec chain;
  size_t max_keys = 10000;
  size_t max_pending_bytes = 32 << 20;
  // Each upstream's warm-up, connect to answer.
  absl::Duration warm_budget = absl::Seconds(3);
  // Longest wait between two rounds, in real time (registrations and reorganisations wake
  // the warmer at once).
  absl::Duration tick_interval = absl::Seconds(1);
};

// One upstream to warm.
struct WarmTarget {
  UpstreamIdentity identity;
  UpstreamPool* pool = nullptr;
  // The upstream's path_prefix and /eth/v1/builder/status.
  std::string status_path;
};

struct ProposalWarmerStats {
  // Keys learned from registrations (kept), and those of them the beacon node gave an index.
  uint64_t keys_known = 0;
  uint64_t keys_indexed = 0;
  // Registration entries that were no SignedValidatorRegistrationV1 (or a body that was none).
  uint64_t invalid_registrations = 0;
  // Registration bodies dropped unread: over max_pending_bytes awaited their reading.
  uint64_t registrations_dropped = 0;
  // Proposal slots of the node's validators found in the duties.
  uint64_t proposals_scheduled = 0;
  // Reads of the proposer duties the beacon node failed (each retried a slot later).
  uint64_t duty_read_failures = 0;
  // Warm-ups before the first slot of an epoch whose duties the node did not give: one of the
  // node's validators may propose there, and the duties come too late to say.
  uint64_t unknown_duty_warmups = 0;
  // Per upstream, in the targets' order: warm-ups that left a checked connection, that failed,
  // and that were not tried because the policy refused the upstream.
  struct Upstream {
    std::string relay_id;
    uint64_t warmed = 0;
    uint64_t failed = 0;
    uint64_t refused = 0;
  };
  std::vector<Upstream> upstreams;
};

// This class is thread-safe.
class ProposalWarmer {
 public:
  // REQUIRES: `clock` and `client` outlive the warmer; options.chain is valid.
  ProposalWarmer(ProposalWarmerOptions options, const Clock& clock,
                 const client::BreakerClient& client);
  ~ProposalWarmer();

  ProposalWarmer(const ProposalWarmer&) = delete;
  ProposalWarmer& operator=(const ProposalWarmer&) = delete;

  // A registration body the node sent (a JSON array of SignedValidatorRegistrationV1, or SSZ
  // when `content_type` is application/octet-stream): copied for the warmer's thread to read.
  // Never blocks on the network.
  void OnRegistration(absl::string_view body, absl::string_view content_type);

  // The node's head was reorganised: the duties are read again.
  void OnChainReorg();

  // The upstreams to warm. REQUIRES: called once, before Start() and any Tick(); the pools
  // outlive the warmer (or its Stop()).
  void SetTargets(std::vector<WarmTarget> targets);

  // Starts the thread that runs Tick() until Stop(). REQUIRES: called at most once.
  void Start();

  // Interrupts the thread's wait at once and joins it; a warm-up in progress ends within
  // warm_budget. Idempotent.
  void Stop();

  // One round, by the clock's time: warms the upstreams if a proposal is one slot away, reads
  // the registrations received, asks the beacon node for the indices of new keys and for the
  // duties when they are due. Returns how long until the next warm-up is due (at most until
  // the next epoch). Beacon node errors are logged and retried a slot later. REQUIRES: not
  // called while Start()'s thread runs, nor from two threads at once.
  absl::Duration Tick();

  ProposalWarmerStats stats() const;

 private:
  struct Pending {
    std::string body;
    bool ssz = false;
  };
  struct Key {
    std::optional<uint64_t> index;
    // The epoch the node was last asked about this key.
    std::optional<core::Epoch> asked_at;
    std::list<std::string>::iterator order;
  };

  void Loop();
  // The steps of Tick.
  void WarmDue(absl::Time now, core::Slot slot);
  void Warm(size_t target);
  void LearnPending();
  void AddKey(std::string pubkey) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Return false when the beacon node failed.
  bool ResolveIndices(core::Epoch epoch);
  bool ReadDuties(core::Epoch epoch);
  // Whether `slot` is the last of its epoch and the next epoch's duties were not read.
  bool NextEpochDutiesUnknown(core::Slot slot) const;

  const ProposalWarmerOptions options_;
  const Clock& clock_;
  const client::BreakerClient& client_;
  BeaconApi api_;
  std::vector<WarmTarget> targets_;
  std::thread thread_;

  // Touched by Tick only. The epoch the duties were last read in, and which of its duties and
  // the next epoch's were read then; the epochs whose failed read was logged (once each: a
  // node may fail one every slot, as a node that answers the next epoch with this one's does).
  std::optional<core::Epoch> duties_epoch_;
  std::set<core::Epoch> duties_read_;
  std::set<core::Epoch> duties_failure_logged_;
  // Hashes of the latest registration bodies read, one per upstream at most: the same body
  // through another upstream's port is not read again.
  std::deque<size_t> recent_bodies_;
  absl::Time beacon_retry_at_ = absl::InfinitePast();

  mutable Mutex mu_;
  CondVar wake_cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  bool duties_stale_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);
  size_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Keys by lower-case 0x hex; `order_` least recently registered first.
  std::map<std::string, Key> keys_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> order_ ABSL_GUARDED_BY(mu_);
  // The proposals ahead (slot: pubkey), and those warmed for.
  std::map<core::Slot, std::string> proposals_ ABSL_GUARDED_BY(mu_);
  std::set<core::Slot> warmed_slots_ ABSL_GUARDED_BY(mu_);
  ProposalWarmerStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace breaker::sidecar

#endif  // SIDECAR_BUILDER_PROPOSAL_WARMER_H_
