#ifndef CORE_ENGINE_H_
#define CORE_ENGINE_H_

// The breaker engine: takes the fleet's observations and the current slot, answers with a
// policy. Deterministic: the same calls in the same order give the same policies.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/config.h"
#include "core/missed_slots.h"
#include "core/observation.h"
#include "core/policy.h"
#include "core/types.h"

namespace breaker::core {

// Failure counters of one builder (or, pre-Gloas, one relay): the seed's FailedBuilder.
struct FailureRecord {
  // Consecutive failures still inside the back-off window.
  uint32_t failed = 0;
  // Banned while the current epoch is below this (the seed's whitelistEpoch).
  Epoch ban_until_epoch = 0;
  // Critical ban with no end: lifted by an operator reset or a delivered payload.
  bool ban_until_reset = false;
  // From this epoch on, the next failure counts from zero again.
  Epoch backoff_epoch = 0;
  // Epoch and description of the latest failure, for relay bans and ban reasons.
  Epoch last_failure_epoch = 0;
  std::string last_failure;

  bool Banned(Epoch now) const { return ban_until_reset || ban_until_epoch > now; }
  friend bool operator==(const FailureRecord& a, const FailureRecord& b) {
    return a.failed == b.failed && a.ban_until_epoch == b.ban_until_epoch &&
           a.ban_until_reset == b.ban_until_reset && a.backoff_epoch == b.backoff_epoch &&
           a.last_failure_epoch == b.last_failure_epoch && a.last_failure == b.last_failure;
  }
};

// What the engine knows of a builder index's failures.
struct BuilderRecord {
  FailureRecord failures;
};

// The public key a builder index was last seen bidding under. A bid under another key means the
// index changed hands: the index's record and learned relay memberships are dropped, whichever
// came first, the key or the failure.
struct BuilderKey {
  // The BLS public key: exactly bounds::kPubkeyBytes (48) bytes.
  std::string pubkey;
  // Epoch of the latest bid under this key. Once the index has no record, the entry is forgotten
  // relay_association_ttl_epochs after it.
  Epoch last_bid_epoch = 0;

  friend bool operator==(const BuilderKey& a, const BuilderKey& b) {
    return a.pubkey == b.pubkey && a.last_bid_epoch == b.last_bid_epoch;
  }
};

// What the engine knows of a relay.
struct RelayRecord {
  // Builder indices learned from bids through this relay, with the epoch of the latest bid.
  absl::flat_hash_map<BuilderIndex, Epoch> learned;
  // Pre-Gloas: the relay's own reveal failures.
  FailureRecord failures;
  // (A member's failure also bans the relay; that ban is derived from the members' records,
  // see Engine::RelayMemberBan, so it ends as soon as its cause does.)
  // Epoch of the latest bid through this relay, to evict the least recently used one.
  Epoch last_seen_epoch = 0;
};

// A builder's or relay's failure reported for one block root, before and after it counts.
struct RootVote {
  Slot slot = 0;
  // The builder named by the block's bid, or kSelfBuild for a relay's reveal failure.
  BuilderIndex builder = kSelfBuild;
  // The relay, for a pre-Gloas reveal failure; empty otherwise.
  std::string relay;
  // Distinct reporting nodes, up to min_reporting_nodes.
  std::vector<std::string> reporters;
  // The failure has been applied to the builder's (or relay's) record.
  bool applied = false;
  // A node reported the payload delivered: the root is no failure, whatever else is reported.
  bool delivered = false;
};

// An operator's ban of a builder or of a relay, on top of the configured blacklists.
struct OperatorBan {
  std::string reason;
  // Lifts at this epoch; nullopt: until unbanned.
  std::optional<Epoch> until_epoch;
};

// The engine's whole state: what an Engine holds besides its configuration (and what it
// derives from the configuration), for persistence and hand-over. Import(Export()) gives an
// engine that behaves identically and publishes the same policy.
struct EngineState {
  Slot current_slot = 0;
  Policy policy;
  absl::flat_hash_map<BuilderIndex, BuilderRecord> builders;
  absl::flat_hash_map<BuilderIndex, BuilderKey> builder_keys;
  absl::flat_hash_map<std::string, RelayRecord> relays;
  absl::flat_hash_map<BlockRoot, RootVote> votes;
  absl::flat_hash_map<std::string, uint64_t> node_sequences;
  absl::flat_hash_map<BuilderIndex, OperatorBan> operator_bans;
  // Keyed by normalized relay identifier.
  absl::flat_hash_map<std::string, OperatorBan> operator_relay_bans;
  absl::flat_hash_map<BuilderIndex, bool> builder_trust_overrides;
  absl::flat_hash_map<std::string, bool> relay_trust_overrides;
  MissedSlotTracker::State missed_slots;
};

// What Observe did with an observation.
enum class ObserveOutcome {
  // The observation changed the engine's state (the policy may change at the next refresh).
  // A failure report awaiting more reporters counts: it records its reporter's vote.
  kApplied,
  // Valid, but it changes nothing: below the attestation threshold, a root already counted or
  // already reported by the same node, a failure of a root already delivered.
  kNoEffect,
  // The node's sequence number was not above its highest: a replay, ignored.
  kDuplicate,
};

// What a failure report's completed vote was counted against.
enum class RecordedFailure {
  // No failure was recorded: not a failure report, a vote still waiting for reporters, ...
  kNone,
  // A builder's record (payload_missing).
  kBuilder,
  // A relay's own record (relay_reveal_missing, pre-Gloas).
  kRelay,
};

// What Observe did with an observation.
struct ObserveResult {
  ObserveOutcome outcome = ObserveOutcome::kNoEffect;
  // Set when the observation completed its root's vote (min_reporting_nodes reporters) and the
  // failure was recorded; the outcome is then kApplied.
  RecordedFailure recorded = RecordedFailure::kNone;
};

// Why an observation of `node` is refused once the node has used bounds::kMaxSequence: names
// the operator's command that lifts it.
std::string SequenceExhaustedMessage(absl::string_view node);

// This class is not thread-safe: callers serialize access (the service holds it under one
// lock; the client owns one per node).
class Engine {
 public:
  // Returns INVALID_ARGUMENT when the configuration is invalid (see ValidateConfig).
  static absl::StatusOr<Engine> Create(Config config, Slot current_slot);

  // Rebuilds an engine from Export(). Relay identifiers are normalized again, as today's
  // NormalizeRelayId has them: a store written by an older breakerd may hold two spellings
  // that are now one relay (their records merge, the stricter of the two kept) or a spelling
  // now refused (dropped: no observation can name it). Returns INVALID_ARGUMENT when the
  // configuration is invalid or the state is inconsistent with itself (a sequence number of
  // 0, a public key that is not 48 bytes).
  static absl::StatusOr<Engine> Import(Config config, EngineState state);

  // Records one observation, and says what it did with it. O(1) expected, except when a record
  // must be evicted to make room for a newcomer (max_tracked_builders, max_relays reached):
  // that scans the records, O(n). Does not recompute the policy: call RefreshPolicy() after a
  // batch.
  // Returns INVALID_ARGUMENT for a malformed observation (empty node, sequence 0, self-build
  // index where a builder is needed, attested fraction NaN or outside [0, 1], malformed relay
  // identifier, a bid's public key neither empty nor 48 bytes, a delivered report naming
  // another builder than the root's failure) and
  // OUT_OF_RANGE for a slot beyond max_future_slots ahead or older than the amendment window.
  // A refused observation changes nothing but the node's highest sequence number (it was
  // handled: a resend under the same number is a replay). A number above bounds::kMaxSequence
  // is refused (INVALID_ARGUMENT) without becoming the node's highest. A node whose highest is
  // bounds::kMaxSequence has no number left: every observation of it is refused with
  // FAILED_PRECONDITION (SequenceExhaustedMessage) until ResetNodeSequence.
  absl::StatusOr<ObserveResult> Observe(const Observation& observation);

  // What Observe refuses of an observation from its slot and contents (node and sequence
  // aside), with the same code and message, recording nothing: the client library refuses
  // such an observation at the call, as its local engine sees it.
  absl::Status ValidateObservation(const Observation& observation) const;

  // Forgets the highest sequence number of `node` (as if none of its observations had been
  // handled), so that it may number from 1 again: what lifts a node that used
  // bounds::kMaxSequence. Its next observations are taken whatever their numbers, even a
  // resend of one already taken. NOT_FOUND when the node has no number.
  absl::Status ResetNodeSequence(const std::string& node);

  // Records that observation `sequence` of `node` was handled without reaching Observe (the
  // adapter refused it as malformed), so that a resend under that number is a replay. Does
  // nothing for an empty node, sequence 0, or a number not above the node's highest.
  void MarkHandled(const std::string& node, uint64_t sequence);

  // Moves time to `slot` (never backwards: an earlier slot is ignored) and refreshes the
  // policy. Returns true when the policy's decisions changed (a new version).
  bool Advance(Slot slot);

  // Recomputes the policy from the current state. Returns true when its decisions changed,
  // in which case the version was incremented and `reason` says what changed.
  bool RefreshPolicy();

  // The latest computed policy.
  const Policy& policy() const { return state_.policy; }
  Slot current_slot() const { return state_.current_slot; }
  Epoch current_epoch() const;
  const Config& config() const { return config_; }

  // --- Operator actions. Each takes effect at the next RefreshPolicy(). ---

  // Bans `builder` until `until_epoch` (nullopt: until unbanned). Not counted toward the
  // fallback modes. INVALID_ARGUMENT for the self-build index or an empty reason.
  absl::Status BanBuilder(BuilderIndex builder, std::string reason,
                          std::optional<Epoch> until_epoch);
  // Lifts the operator ban and the failure record of `builder` (the bans it has as a member of
  // a banned relay stay with their relays). FAILED_PRECONDITION when the builder is in the
  // configured blacklist, which only a configuration change lifts, or banned only as a member
  // of banned relays (named); NOT_FOUND when nothing bans it.
  absl::Status UnbanBuilder(BuilderIndex builder);
  // Bans relay `relay` (any spelling; kept normalized) until `until_epoch` (nullopt: until
  // unbanned). Every bid through it is refused, and every builder it serves (its members,
  // learned within the TTL or configured) is banned, with kind operator. Not counted toward the
  // fallback modes. A new ban of a banned relay replaces the old one.
  // INVALID_ARGUMENT for a malformed identifier, an empty reason or one longer than
  // bounds::kMaxReasonBytes, an until_epoch not after the current epoch or more than
  // bounds::kMaxPeriodEpochs after it; RESOURCE_EXHAUSTED when bounds::kMaxOperatorRelayBans
  // other relays are banned by the operator already.
  absl::Status BanRelay(absl::string_view relay, std::string reason,
                        std::optional<Epoch> until_epoch);
  // Lifts the operator ban of `relay` (its members' failures may still ban it).
  // INVALID_ARGUMENT for a malformed identifier; FAILED_PRECONDITION when the relay is in the
  // configured blacklisted_relays, which only a configuration change lifts; NOT_FOUND when the
  // operator does not ban it.
  absl::Status UnbanRelay(absl::string_view relay);
  // Marks a builder or relay trusted (true) or untrusted (false), overriding the
  // configuration. INVALID_ARGUMENT for the self-build index or a malformed relay identifier.
  absl::Status SetBuilderTrust(BuilderIndex builder, bool trusted);
  absl::Status SetRelayTrust(absl::string_view relay, bool trusted);
  // Clears all failure tracking, relay bans for failures, pending votes and the latched
  // missed-slot breaker: what restarting a beacon node did in the seed designs. Operator bans
  // (of builders and of relays), trust overrides, relay memberships and the builders' public
  // keys stay.
  void Reset();

  // Replaces the configuration. INVALID_ARGUMENT (state unchanged) when it is invalid. Lower
  // caps (max_tracked_builders, which also bounds the remembered public keys, max_relays,
  // max_indices_per_relay) evict at once, never a record that holds an active ban nor the key
  // of its index.
  absl::Status Reconfigure(Config config);

  EngineState Export() const;

  // Read access for inspection APIs.
  const absl::flat_hash_map<BuilderIndex, BuilderRecord>& builders() const {
    return state_.builders;
  }
  // The public key each index was last seen bidding under: at most max_tracked_builders.
  const absl::flat_hash_map<BuilderIndex, BuilderKey>& builder_keys() const {
    return state_.builder_keys;
  }
  const absl::flat_hash_map<std::string, RelayRecord>& relays() const { return state_.relays; }
  const absl::flat_hash_map<std::string, uint64_t>& node_sequences() const {
    return state_.node_sequences;
  }
  const absl::flat_hash_map<BuilderIndex, OperatorBan>& operator_bans() const {
    return state_.operator_bans;
  }
  const absl::flat_hash_map<std::string, OperatorBan>& operator_relay_bans() const {
    return state_.operator_relay_bans;
  }
  // The normalized identifiers of the relays serving `builder` (learned within the TTL, or
  // configured), sorted.
  std::vector<std::string> RelaysServing(BuilderIndex builder) const;
  // The members of relay `relay_id` (normalized): learned within the TTL and configured,
  // sorted. Empty for an unknown relay.
  std::vector<BuilderIndex> RelayMembers(const std::string& relay_id) const;

 private:
  Engine(Config config, Slot current_slot);

  void DeriveFromConfig();
  ObserveResult ApplyEvent(const Observation& observation);
  ObserveOutcome OnBid(Slot slot, const BidSeen& bid);
  ObserveResult OnFailureReport(const Observation& observation, const BlockRoot& root,
                                BuilderIndex builder, absl::string_view relay);
  ObserveOutcome OnDelivered(Slot slot, const PayloadDelivered& delivered);
  ObserveOutcome OnExited(const BuilderExited& exited);
  // Remembers that `builder` bid under `pubkey` (not empty); a key other than the remembered one
  // forgets the index first. True when the state changed.
  bool RememberKey(BuilderIndex builder, const std::string& pubkey);
  // Drops the record of `builder` and its learned relay memberships: the index may belong to
  // another builder now. True when there was something to drop.
  bool ForgetIndex(BuilderIndex builder);
  // Each records the failure of `root` in the record of `builder` (or `relay`), made when
  // missing; false when no record could be made (every one holds an active ban).
  bool ApplyBuilderFailure(BuilderIndex builder, Slot slot, const BlockRoot& root);
  bool ApplyRelayFailure(const std::string& relay, Slot slot, const BlockRoot& root);
  // Why and until when a member's failure bans `relay`, if it does.
  struct MemberBan {
    Epoch until_epoch = 0;
    std::string reason;
  };
  std::optional<MemberBan> RelayMemberBan(const std::string& relay_id,
                                          const RelayRecord& relay) const;
  bool RelayBanned(const std::string& relay_id, const RelayRecord& relay) const;
  // The relay is in the configured blacklist or under an operator ban that has not ended.
  bool RelayBannedByOperator(const std::string& relay_id) const;
  bool IsMember(const std::string& relay_id, const RelayRecord& relay, BuilderIndex builder) const;
  std::vector<BuilderIndex> Members(const std::string& relay_id, const RelayRecord& relay) const;
  // The record of `builder` (or relay), added when missing; a full table first drops one record
  // by Evict*; null when every record is kept by an active ban.
  BuilderRecord* FindOrAddBuilder(BuilderIndex builder);
  RelayRecord* FindOrAddRelay(const std::string& relay_id);
  void LearnMembership(RelayRecord& relay, BuilderIndex builder);
  // Each drops the one record its table can spare, never an active ban's; false when none can
  // go.
  bool EvictBuilder();
  bool EvictKey();
  bool EvictRelay();
  bool EvictMember(RelayRecord& relay);
  // Evicts down to the configuration's caps, as far as active bans allow.
  void EnforceCaps();
  bool IsTrustedBuilder(BuilderIndex builder) const;
  bool IsTrustedRelay(const std::string& relay_id) const;
  void Prune();
  void PruneVotes();
  Policy ComputePolicy(const MissedSlotState& missed_slots) const;
  // Sets policy.builder_pubkeys: the keys known of its banned and trusted builders.
  void AddBuilderPubkeys(Policy& policy) const;

  Config config_;
  // A configured relay, as the engine looks it up.
  struct ConfiguredRelay {
    bool trusted = false;
    absl::flat_hash_set<BuilderIndex> indices;
  };

  // Derived from config_ by DeriveFromConfig(): configured relays by normalized identifier,
  // trusted and blacklisted indices, blacklisted relays by normalized identifier.
  absl::flat_hash_map<std::string, ConfiguredRelay> configured_relays_;
  absl::flat_hash_set<BuilderIndex> configured_trusted_;
  absl::flat_hash_set<BuilderIndex> configured_blacklist_;
  absl::flat_hash_set<std::string> configured_relay_blacklist_;

  // Everything the engine knows but the missed-slot tracker, which is kept live in
  // missed_slots_ (rings of bits): state_.missed_slots stays empty, Export() fills it in.
  EngineState state_;
  MissedSlotTracker missed_slots_;
};

}  // namespace breaker::core

#endif  // CORE_ENGINE_H_
