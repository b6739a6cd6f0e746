#ifndef SIDECAR_BEACON_OBSERVER_H_
#define SIDECAR_BEACON_OBSERVER_H_

// What the sidecar reports to breakerd about its beacon node, given what the node's Beacon API
// said: the decisions, apart from the HTTP plumbing (beacon_watcher.h feeds it). Each rule is
// explained, with the spec sections it rests on, in docs/sidecar-observer.md.
//
//   - BlocksSeen: every block root the node imported (block, head and chain_reorg events, and
//     the backfill), canonical or not, reported for its slot as soon as it is known, with
//     every root known for that slot so far. A root is never taken back: a block reorged out
//     keeps its slot present.
//   - An empty BlocksSeen for a slot the node judged without a block: a slot is judged at its
//     end (the start of the next slot), if the observer watched all of it, that is if the
//     event stream was up and the node synced from the slot's start to its end. A slot not
//     watched whole is a gap: it is judged from a backfill (the node's headers and fork choice
//     for that slot), or not at all when it is older than max_backfill_slots. Nothing is
//     reported while the node syncs or the stream is down: a syncing node's gaps are no
//     evidence. Nor is a slot the node could not have judged: the genesis slot (its block is
//     the genesis block, which no event announces) is never reported, and a slot is reported
//     empty only after the first evidence, the earliest block after genesis the observer
//     knows the node has (from its events or a backfill); slots up to it are not reported.
//   - Finalized: every finalized_checkpoint epoch above the last reported, at the current slot.
//   - Gloas: a BidSeen (relay empty: P2P) per builder and slot of execution_payload_bid events;
//     a PayloadDelivered per block root of execution_payload (or execution_payload_available /
//     a full head_v2 for a block whose bid's builder is known); a PayloadMissing for a block
//     whose bid names a builder and whose payload has not come by the end of the slot after
//     the block's slot, with the attested fraction the caller measured (Tick, PayloadOverdue).

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "core/chain_time.h"
#include "core/types.h"

namespace breaker::sidecar {

struct ObserverOptions {
  // The chain the node follows (checked against the node's own at start).
  core::ChainSpec chain;
  // A gap older than this many slots is never judged (unknown, no evidence). Also how far back
  // the first backfill after start reaches.
  uint64_t max_backfill_slots = 32;
  // Block roots kept per slot; further ones are not reported (counted).
  size_t max_roots_per_slot = 16;
  // Events about a slot more than this many slots behind the current one are ignored, and
  // what is kept about older slots is forgotten: breakerd refuses them anyway (its
  // amendment_window_slots, 64 by default).
  uint64_t window_slots = 64;
  // Events about a slot more than this many slots ahead are ignored (clock skew).
  uint64_t max_future_slots = 2;
};

struct ObserverStats {
  uint64_t blocks = 0;
  uint64_t empty_slots = 0;
  uint64_t backfilled_slots = 0;
  // Gaps that aged out before a backfill judged them.
  uint64_t unjudged_slots = 0;
  // Slots without a block left unreported for want of evidence: the genesis slot, and those
  // up to the first block the node was known to have.
  uint64_t no_evidence_slots = 0;
  // Events about a slot out of range, or past a bound.
  uint64_t ignored_events = 0;
  uint64_t bids = 0;
  uint64_t payloads_delivered = 0;
  uint64_t payloads_missing = 0;
};

// A block whose payload is overdue: the caller measures its attested fraction and calls
// PayloadOverdue.
struct OverduePayload {
  core::Slot slot = 0;
  core::BlockRoot root;
  core::BuilderIndex builder = 0;
};

// This class is thread-safe. It reports through `client` under its own lock (Report never
// blocks on the network).
class Observer {
 public:
  // REQUIRES: options.chain is valid; `clock` and `client` outlive the observer.
  Observer(ObserverOptions options, const Clock& clock, client::BreakerClient& client);

  // The event stream is up and the node synced (true), or not. Slots are judged live only
  // while it holds; events are ignored while it does not.
  void SetWatching(bool watching);
  bool watching() const;

  // A block the node imported (the `block` event; also a `head` event's block and a
  // `chain_reorg`'s new head).
  void OnBlock(core::Slot slot, const core::BlockRoot& root);
  // The node's finalized checkpoint's epoch.
  void OnFinalized(core::Epoch epoch);

  // Gloas. A bid the node received over P2P.
  void OnBid(core::Slot slot, core::BuilderIndex builder);
  // The block `root` carries a bid of `builder` (core::kSelfBuild: the proposer's own).
  void OnBlockBid(core::Slot slot, const core::BlockRoot& root, core::BuilderIndex builder);
  // The node imported the payload envelope of block `root`, from `builder`.
  void OnPayload(core::Slot slot, const core::BlockRoot& root, core::BuilderIndex builder);
  // The node holds the payload of block `root` (execution_payload_available, a full head_v2).
  void OnPayloadAvailable(core::Slot slot, const core::BlockRoot& root);

  // The gaps a backfill may still judge, oldest first (at most max_backfill_slots).
  std::vector<core::Slot> SlotsToBackfill() const;
  // What the node has for `slot` (a gap): reports BlocksSeen with these roots and those already
  // known; empty when there are none, if `slot` comes after the first evidence (otherwise
  // nothing). Ignored for a slot that is no gap.
  void OnBackfill(core::Slot slot, const std::vector<core::BlockRoot>& roots);

  // Judges the slots that have ended, and returns the blocks whose payload is now overdue
  // (each once). A slot watched whole without a block before the first evidence is left to
  // the backfill, which runs oldest first and so may find the evidence before judging it.
  std::vector<OverduePayload> Tick();
  // Reports the payload of `overdue` missing, unless it came meanwhile. `attested_fraction` is
  // clamped to [0, 1].
  void PayloadOverdue(const OverduePayload& overdue, double attested_fraction);

  ObserverStats stats() const;

 private:
  struct SlotRecord {
    std::vector<core::BlockRoot> roots;
    bool judged = false;
    bool gap = false;
  };

  core::Slot CurrentSlot() const;
  // Whether an event about `slot` is in range now; counts it when not.
  bool InRange(core::Slot slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddRoot(core::Slot slot, const core::BlockRoot& root) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Notes that the node has a block at `slot`.
  void Evidence(core::Slot slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a slot without a block may be reported empty: after the genesis slot and the
  // first evidence.
  bool Judgeable(core::Slot slot) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Delivered(core::Slot slot, const core::BlockRoot& root, core::BuilderIndex builder)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Prune(core::Slot current) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  struct PayloadCame {
    core::Slot slot = 0;
    // Reported as delivered (false: available before the block's bid was known).
    bool reported = false;
  };

  const ObserverOptions options_;
  const Clock& clock_;
  client::BreakerClient& client_;

  mutable Mutex mu_;
  std::optional<absl::Time> watching_since_ ABSL_GUARDED_BY(mu_);
  // The first slot Tick has not considered yet.
  core::Slot next_to_judge_ ABSL_GUARDED_BY(mu_);
  std::map<core::Slot, SlotRecord> slots_ ABSL_GUARDED_BY(mu_);
  // The earliest slot after genesis with a block the node is known to have; kept beyond the
  // window (slots_ is pruned).
  std::optional<core::Slot> first_evidence_ ABSL_GUARDED_BY(mu_);
  std::optional<core::Epoch> finalized_ ABSL_GUARDED_BY(mu_);
  // Gloas: (slot, builder) pairs whose bid was reported; blocks waiting for their payload, by
  // root; roots whose payload came (delivered, or available before its bid was known).
  std::set<std::pair<core::Slot, core::BuilderIndex>> bids_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<core::BlockRoot, OverduePayload> awaiting_payload_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<core::BlockRoot, PayloadCame> payload_came_ ABSL_GUARDED_BY(mu_);
  ObserverStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace breaker::sidecar

#endif  // SIDECAR_BEACON_OBSERVER_H_
