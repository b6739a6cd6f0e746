#include "core/engine.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/chain_time.h"
#include "core/input_bounds.h"
#include "core/relay_id.h"

namespace breaker::core {
namespace {

// Votes kept per slot of the amendment window; bounds memory when a node reports many roots.
constexpr size_t kMaxVotesPerSlot = 64;

// Names at most this many builders in a reason, then "and N more".
constexpr size_t kMaxNamedInReason = 10;

std::string NameList(std::vector<BuilderIndex> builders) {
  std::sort(builders.begin(), builders.end());
  std::string names;
  for (size_t i = 0; i < builders.size() && i < kMaxNamedInReason; ++i) {
    absl::StrAppend(&names, i == 0 ? "" : ", ", builders[i]);
  }
  if (builders.size() > kMaxNamedInReason) {
    absl::StrAppend(&names, " and ", builders.size() - kMaxNamedInReason, " more");
  }
  return names;
}

// Merges the bans of a policy's map: a key banned for several causes reports the first kind (the
// one that counts toward the modes) and stays banned until every cause has lifted.
template <typename Key>
class BanMerger {
 public:
  explicit BanMerger(absl::flat_hash_map<Key, Ban>& bans) : bans_(bans) {}

  // Adds `ban` to `bans[key]`.
  void Add(const Key& key, Ban ban) {
    // A ban until reset has no end epoch: the policy says 0, whatever epoch a cause also had.
    if (ban.until_reset) ban.until_epoch = 0;
    // Every node receives every ban: a reason must not make the policy grow with its text.
    ban.reason = bounds::Truncate(ban.reason, bounds::kMaxBanReasonBytes);
    const std::pair<bool, Epoch> end(ban.until_reset, ban.until_epoch);
    auto [it, inserted] = bans_.try_emplace(key, ban);
    if (inserted) {
      explained_by_[key] = end;
      return;
    }
    Ban& merged = it->second;
    std::pair<bool, Epoch>& explained_by = explained_by_[key];
    // The reason shown must not depend on hash-map iteration order: policies are compared
    // across restarts. Among causes of the same kind, the longest-lasting one explains the ban
    // (compared by the cause's own end: the merged end also covers causes of other kinds), and
    // of those the least reason.
    const bool outlasts = std::tie(end.first, end.second, merged.reason) >
                          std::tie(explained_by.first, explained_by.second, ban.reason);
    if (ban.kind < merged.kind || (ban.kind == merged.kind && outlasts)) {
      merged.kind = ban.kind;
      merged.reason = std::move(ban.reason);
      explained_by = end;
    }
    merged.until_reset = merged.until_reset || ban.until_reset;
    merged.until_epoch = merged.until_reset ? 0 : std::max(merged.until_epoch, ban.until_epoch);
  }

 private:
  absl::flat_hash_map<Key, Ban>& bans_;
  // The end of the cause each merged ban's reason comes from.
  absl::flat_hash_map<Key, std::pair<bool, Epoch>> explained_by_;
};

}  // namespace

absl::StatusOr<Engine> Engine::Create(Config config, Slot current_slot) {
  if (absl::Status status = ValidateConfig(config); !status.ok()) return status;
  Engine engine(std::move(config), current_slot);
  engine.RefreshPolicy();
  return engine;
}

namespace {

// Two records of one relay, stored under two spellings that now normalize alike: the stricter
// of the two, so that merging never lifts a ban.
void MergeFailures(FailureRecord& into, const FailureRecord& from) {
  into.failed = std::max(into.failed, from.failed);
  into.ban_until_epoch = std::max(into.ban_until_epoch, from.ban_until_epoch);
  into.ban_until_reset = into.ban_until_reset || from.ban_until_reset;
  into.backoff_epoch = std::max(into.backoff_epoch, from.backoff_epoch);
  if (from.last_failure_epoch > into.last_failure_epoch) {
    into.last_failure_epoch = from.last_failure_epoch;
    into.last_failure = from.last_failure;
  }
}

void MergeRelay(RelayRecord& into, const RelayRecord& from) {
  for (const auto& [builder, epoch] : from.learned) {
    Epoch& learned = into.learned[builder];
    learned = std::max(learned, epoch);
  }
  MergeFailures(into.failures, from.failures);
  into.last_seen_epoch = std::max(into.last_seen_epoch, from.last_seen_epoch);
}

// The ban that lasts longer: one until unbanned, else the later end.
void MergeBan(OperatorBan& into, const OperatorBan& from) {
  const bool longer = into.until_epoch.has_value() &&
                      (!from.until_epoch.has_value() || *from.until_epoch > *into.until_epoch);
  if (longer) into = from;
}

// Re-keys `map` by each key's normalized identifier, merging the values of keys that collapse
// into one with `merge`, and dropping those the normalization now refuses (no observation can
// name them any more).
template <typename Value, typename Merge>
void RenormalizeKeys(absl::flat_hash_map<std::string, Value>& map, Merge merge) {
  absl::flat_hash_map<std::string, Value> renamed;
  for (auto& [relay, value] : map) {
    absl::StatusOr<std::string> id = NormalizeRelayId(relay);
    if (!id.ok()) continue;
    auto [it, inserted] = renamed.try_emplace(*std::move(id), value);
    if (!inserted) merge(it->second, value);
  }
  map = std::move(renamed);
}

// A store written under an older normalization may hold spellings that are now one relay, or
// no longer accepted: the state is re-keyed as today's normalization has it.
void RenormalizeRelays(EngineState& state) {
  RenormalizeKeys(state.relays, MergeRelay);
  RenormalizeKeys(state.operator_relay_bans, MergeBan);
  // A relay trusted under one spelling and distrusted under another is distrusted.
  RenormalizeKeys(state.relay_trust_overrides, [](bool& into, bool from) { into = into && from; });
  for (auto& [root, vote] : state.votes) {
    if (vote.relay.empty()) continue;
    absl::StatusOr<std::string> id = NormalizeRelayId(vote.relay);
    // A vote for a relay no longer accepted can never be joined by another report.
    vote.relay = id.ok() ? *std::move(id) : vote.relay;
  }
}

}  // namespace

absl::StatusOr<Engine> Engine::Import(Config config, EngineState state) {
  if (absl::Status status = ValidateConfig(config); !status.ok()) return status;
  for (const auto& [node, sequence] : state.node_sequences) {
    if (node.empty() || sequence == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("state holds node '", node, "' with sequence ", sequence,
                       "; node ids are not empty and sequences start at 1"));
    }
  }
  RenormalizeRelays(state);
  if (state.builders.contains(kSelfBuild) || state.builder_keys.contains(kSelfBuild)) {
    return absl::InvalidArgumentError("state holds a record for the self-build index");
  }
  for (const auto& [builder, key] : state.builder_keys) {
    if (key.pubkey.size() != bounds::kPubkeyBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("state holds a public key of ", key.pubkey.size(), " bytes for builder ",
                       builder, "; keys are ", bounds::kPubkeyBytes, " bytes"));
    }
  }
  Engine engine(std::move(config), state.current_slot);
  engine.missed_slots_ = MissedSlotTracker::Import(state.missed_slots);
  state.missed_slots = {};
  // The configured relays have a record from the start (DeriveFromConfig), stored or not.
  for (const auto& [relay, record] : engine.state_.relays) state.relays.try_emplace(relay);
  engine.state_ = std::move(state);
  return engine;
}

Engine::Engine(Config config, Slot current_slot)
    : config_(std::move(config)), missed_slots_(current_slot) {
  state_.current_slot = current_slot;
  DeriveFromConfig();
}

void Engine::DeriveFromConfig() {
  configured_relays_.clear();
  for (const RelayConfig& relay : config_.relays) {
    // ValidateConfig has checked that every identifier normalizes.
    std::string id = NormalizeRelayId(relay.identifier).value();
    ConfiguredRelay& configured = configured_relays_[id];
    configured.trusted = relay.trusted;
    configured.indices.insert(relay.indices.begin(), relay.indices.end());
    state_.relays.try_emplace(id);
  }
  configured_trusted_ = {config_.trusted_builders.begin(), config_.trusted_builders.end()};
  configured_blacklist_ = {config_.blacklisted_builders.begin(),
                           config_.blacklisted_builders.end()};
  configured_relay_blacklist_.clear();
  for (const std::string& relay : config_.blacklisted_relays) {
    // ValidateConfig has checked that every identifier normalizes.
    configured_relay_blacklist_.insert(NormalizeRelayId(relay).value());
  }
}

Epoch Engine::current_epoch() const { return EpochOf(state_.current_slot, config_.chain); }

// ---------------------------------------------------------------------------------------------
// Observations

absl::Status Engine::ValidateObservation(const Observation& observation) const {
  const Slot slot = observation.slot;
  if (slot > SaturatingAdd(state_.current_slot, config_.max_future_slots)) {
    return absl::OutOfRangeError(absl::StrCat(
        "observation slot ", slot, " is ", slot - state_.current_slot,
        " slots ahead of the current slot ", state_.current_slot, " (at most max_future_slots = ",
        config_.max_future_slots, "); check the node's clock and the network's genesis time"));
  }
  if (SaturatingAdd(slot, config_.amendment_window_slots) < state_.current_slot) {
    return absl::OutOfRangeError(
        absl::StrCat("observation slot ", slot, " is older than the amendment window (",
                     config_.amendment_window_slots, " slots before the current slot ",
                     state_.current_slot, "); it can no longer change a verdict, drop it"));
  }
  auto builder_needed = [](BuilderIndex builder, absl::string_view what) -> absl::Status {
    if (builder != kSelfBuild) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        what, " names the self-build index (2^64-1), which is never tracked; report only ",
        "blocks whose bid names an external builder"));
  };
  auto relay_needed = [](absl::string_view relay) -> absl::Status {
    absl::StatusOr<std::string> normalized = NormalizeRelayId(relay);
    return normalized.ok() ? absl::OkStatus() : normalized.status();
  };
  return std::visit(
      Overloaded{
          [&](const BidSeen& bid) -> absl::Status {
            if (absl::Status s = builder_needed(bid.builder, "bid_seen.builder"); !s.ok()) {
              return s;
            }
            // The adapter checks the length too; the engine does not rely on it.
            if (absl::Status s = bounds::CheckExactBytes("bid_seen.builder_pubkey", bid.pubkey,
                                                         bounds::kPubkeyBytes, /*empty_ok=*/true);
                !s.ok()) {
              return s;
            }
            return bid.relay.empty() || state_.relays.contains(bid.relay) ? absl::OkStatus()
                                                                          : relay_needed(bid.relay);
          },
          [&](const PayloadMissing& missing) -> absl::Status {
            if (absl::Status s = builder_needed(missing.builder, "payload_missing.builder");
                !s.ok()) {
              return s;
            }
            if (!std::isfinite(missing.attested_fraction) || missing.attested_fraction < 0 ||
                missing.attested_fraction > 1) {
              return absl::InvalidArgumentError(absl::StrCat(
                  "payload_missing.attested_fraction is ", missing.attested_fraction,
                  "; it is the attesting fraction of the committee weight, in [0, 1]"));
            }
            auto vote = state_.votes.find(missing.root);
            if (vote != state_.votes.end() &&
                (vote->second.builder != missing.builder || !vote->second.relay.empty())) {
              return absl::InvalidArgumentError(absl::StrCat(
                  "block ", missing.root.ShortHex(), " is already reported for ",
                  vote->second.relay.empty() ? absl::StrCat("builder ", vote->second.builder)
                                             : absl::StrCat("relay ", vote->second.relay),
                  ", not builder ", missing.builder));
            }
            return absl::OkStatus();
          },
          [&](const PayloadDelivered& delivered) -> absl::Status {
            if (absl::Status s = builder_needed(delivered.builder, "payload_delivered.builder");
                !s.ok()) {
              return s;
            }
            auto vote = state_.votes.find(delivered.root);
            if (vote != state_.votes.end() &&
                (vote->second.builder != delivered.builder || !vote->second.relay.empty())) {
              return absl::InvalidArgumentError(absl::StrCat(
                  "block ", delivered.root.ShortHex(), " is already reported for ",
                  vote->second.relay.empty() ? absl::StrCat("builder ", vote->second.builder)
                                             : absl::StrCat("relay ", vote->second.relay),
                  ", not builder ", delivered.builder));
            }
            return absl::OkStatus();
          },
          [&](const BlocksSeen&) -> absl::Status { return absl::OkStatus(); },
          [&](const Finalized& finalized) -> absl::Status {
            if (finalized.epoch <= EpochOf(slot, config_.chain)) return absl::OkStatus();
            return absl::InvalidArgumentError(absl::StrCat(
                "finalized.epoch ", finalized.epoch, " is after the epoch of the observation's ",
                "slot ", slot, "; a node cannot finalize the future"));
          },
          [&](const BuilderExited& exited) -> absl::Status {
            return builder_needed(exited.builder, "builder_exited.builder");
          },
          [&](const RelayRevealMissing& missing) -> absl::Status {
            absl::StatusOr<std::string> relay = NormalizeRelayId(missing.relay);
            if (!relay.ok()) return relay.status();
            auto vote = state_.votes.find(missing.root);
            if (vote != state_.votes.end() && vote->second.relay != *relay) {
              return absl::InvalidArgumentError(absl::StrCat(
                  "block ", missing.root.ShortHex(), " is already reported for ",
                  vote->second.relay.empty() ? absl::StrCat("builder ", vote->second.builder)
                                             : absl::StrCat("relay ", vote->second.relay),
                  ", not relay ", *relay));
            }
            return absl::OkStatus();
          },
      },
      observation.event);
}

absl::StatusOr<ObserveResult> Engine::Observe(const Observation& observation) {
  if (observation.node.empty()) {
    return absl::InvalidArgumentError(
        "observation.node is empty; every observation names the node that saw it");
  }
  if (observation.sequence == 0) {
    return absl::InvalidArgumentError(
        "observation.sequence is 0; each node numbers its observations from 1");
  }
  // One look-up of the node's string, on the path every observation takes.
  auto [known, first] = state_.node_sequences.try_emplace(observation.node, 0);
  // The node has used the last number: none is left above it, and every lower one would be
  // taken for a replay and dropped without a word. Refused, saying how to recover.
  if (!first && known->second >= bounds::kMaxSequence) {
    return absl::FailedPreconditionError(SequenceExhaustedMessage(observation.node));
  }
  // Refused before it is taken as the node's highest: a number near 2^64 would leave the node
  // no number above it.
  if (observation.sequence > bounds::kMaxSequence) {
    if (first) state_.node_sequences.erase(known);
    return absl::InvalidArgumentError(absl::StrCat("observation.sequence is ", observation.sequence,
                                                   "; accepted: 1..", bounds::kMaxSequence,
                                                   " (a node numbers from 1, or from its clock)"));
  }
  if (!first && observation.sequence <= known->second) {
    return ObserveResult{ObserveOutcome::kDuplicate};
  }
  // The node's number is taken even when the observation is refused below: it was handled
  // and acknowledged, and a resend under the same number is a replay.
  known->second = observation.sequence;
  if (absl::Status status = ValidateObservation(observation); !status.ok()) return status;
  const bool is_failure = std::holds_alternative<PayloadMissing>(observation.event) ||
                          std::holds_alternative<RelayRevealMissing>(observation.event);
  if (is_failure && state_.votes.size() >= config_.amendment_window_slots * kMaxVotesPerSlot) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "too many block roots under vote (", state_.votes.size(),
        ") in the amendment window; a node is reporting more roots than the chain has"));
  }
  if (is_failure && std::holds_alternative<PayloadMissing>(observation.event)) {
    const auto& missing = std::get<PayloadMissing>(observation.event);
    if (!state_.builders.contains(missing.builder) &&
        state_.builders.size() >= config_.max_tracked_builders &&
        std::none_of(state_.builders.begin(), state_.builders.end(), [&](const auto& entry) {
          return !entry.second.failures.Banned(current_epoch());
        })) {
      return absl::ResourceExhaustedError(
          absl::StrCat("max_tracked_builders (", config_.max_tracked_builders,
                       ") builders are tracked and every one holds an active ban; raise the cap"));
    }
  }
  return ApplyEvent(observation);
}

std::string SequenceExhaustedMessage(absl::string_view node) {
  // Node ids are bounded where they enter (1..128 printable ASCII): the command is whole.
  return absl::StrCat("node ", node, " has used sequence number ", bounds::kMaxSequence,
                      ", the last one accepted; none of its observations is taken until an "
                      "operator runs `breakerctl reset --node=",
                      node, "`");
}

absl::Status Engine::ResetNodeSequence(const std::string& node) {
  auto known = state_.node_sequences.find(node);
  if (known == state_.node_sequences.end()) {
    return absl::NotFoundError(absl::StrCat("no observation of node '", bounds::QuotePrefix(node),
                                            "' was ever handled, so it has no sequence number to "
                                            "reset; `breakerctl nodes` lists the nodes known"));
  }
  // Erased rather than set to 0, which no stored state holds (Import refuses it).
  state_.node_sequences.erase(known);
  return absl::OkStatus();
}

void Engine::MarkHandled(const std::string& node, uint64_t sequence) {
  if (node.empty() || sequence == 0 || sequence > bounds::kMaxSequence) return;
  uint64_t& highest = state_.node_sequences[node];
  highest = std::max(highest, sequence);
}

ObserveResult Engine::ApplyEvent(const Observation& observation) {
  const Slot slot = observation.slot;
  return std::visit(
      Overloaded{
          [&](const BidSeen& bid) { return ObserveResult{OnBid(slot, bid)}; },
          [&](const PayloadMissing& missing) {
            // Below the threshold the block was untimely: an honest builder may withhold.
            if (missing.attested_fraction <= config_.attestation_threshold) {
              return ObserveResult{ObserveOutcome::kNoEffect};
            }
            return OnFailureReport(observation, missing.root, missing.builder, "");
          },
          [&](const PayloadDelivered& delivered) {
            return ObserveResult{OnDelivered(slot, delivered)};
          },
          [&](const BlocksSeen& blocks) {
            // An empty report is evidence too: the node saw the slot go by without a block.
            missed_slots_.RecordBlocks(slot, !blocks.roots.empty());
            return ObserveResult{ObserveOutcome::kApplied};
          },
          [&](const Finalized& finalized) {
            missed_slots_.RecordFinalized(finalized.epoch);
            return ObserveResult{ObserveOutcome::kApplied};
          },
          [&](const BuilderExited& exited) { return ObserveResult{OnExited(exited)}; },
          [&](const RelayRevealMissing& missing) {
            return OnFailureReport(observation, missing.root, kSelfBuild,
                                   NormalizeRelayId(missing.relay).value());
          },
      },
      observation.event);
}

ObserveOutcome Engine::OnBid(Slot slot, const BidSeen& bid) {
  ObserveOutcome outcome = ObserveOutcome::kNoEffect;
  // An empty key (a failed look-up) says nothing about who holds the index.
  if (!bid.pubkey.empty() && RememberKey(bid.builder, bid.pubkey)) {
    outcome = ObserveOutcome::kApplied;
  }
  // After the key: a newcomer's bid through a relay makes the newcomer its member.
  if (!bid.relay.empty()) {
    // Most bids come through relays already known by their normalized name: one look-up.
    auto known = state_.relays.find(bid.relay);
    RelayRecord* record = known != state_.relays.end()
                              ? &known->second
                              : FindOrAddRelay(NormalizeRelayId(bid.relay).value());
    if (record != nullptr) {
      record->last_seen_epoch = std::max(record->last_seen_epoch, EpochOf(slot, config_.chain));
      LearnMembership(*record, bid.builder);
      outcome = ObserveOutcome::kApplied;
    }
  }
  return outcome;
}

ObserveResult Engine::OnFailureReport(const Observation& observation, const BlockRoot& root,
                                      BuilderIndex builder, absl::string_view relay) {
  auto [it, inserted] = state_.votes.try_emplace(root);
  RootVote& vote = it->second;
  if (inserted) {
    vote.slot = observation.slot;
    vote.builder = builder;
    vote.relay = std::string(relay);
  }
  if (vote.applied || vote.delivered) return ObserveResult{ObserveOutcome::kNoEffect};
  if (std::find(vote.reporters.begin(), vote.reporters.end(), observation.node) !=
      vote.reporters.end()) {
    return ObserveResult{ObserveOutcome::kNoEffect};
  }
  vote.reporters.push_back(observation.node);
  ObserveResult result{ObserveOutcome::kApplied};
  if (vote.reporters.size() >= config_.min_reporting_nodes) {
    vote.applied = true;
    if (vote.relay.empty()) {
      if (ApplyBuilderFailure(vote.builder, vote.slot, root)) {
        result.recorded = RecordedFailure::kBuilder;
      }
    } else if (ApplyRelayFailure(vote.relay, vote.slot, root)) {
      result.recorded = RecordedFailure::kRelay;
    }
  }
  return result;
}

namespace {

// Steps 2 and 3 of the per-builder rule, shared by builders and (pre-Gloas) relays.
void RecordFailure(FailureRecord& record, Epoch epoch, std::string what, const Config& config) {
  if (epoch >= record.backoff_epoch) record.failed = 0;
  record.failed += 1;
  record.backoff_epoch =
      std::max(record.backoff_epoch, SaturatingAdd(epoch, config.backoff_period_epochs));
  record.last_failure_epoch = std::max(record.last_failure_epoch, epoch);
  record.last_failure = std::move(what);
  if (record.failed <= config.allowed_failures) return;
  if (record.failed >= config.critical_failures) {
    if (config.critical_blacklist_period_epochs == 0) {
      record.ban_until_reset = true;
    } else {
      record.ban_until_epoch = std::max(
          record.ban_until_epoch, SaturatingAdd(epoch, config.critical_blacklist_period_epochs));
    }
  } else {
    record.ban_until_epoch =
        std::max(record.ban_until_epoch, SaturatingAdd(epoch, config.blacklist_period_epochs));
  }
}

}  // namespace

bool Engine::ApplyBuilderFailure(BuilderIndex builder, Slot slot, const BlockRoot& root) {
  BuilderRecord* record = FindOrAddBuilder(builder);
  // Observe() refused the report when no record could be made.
  if (record == nullptr) return false;
  const Epoch epoch = EpochOf(slot, config_.chain);
  FailureRecord& failures = record->failures;
  RecordFailure(failures, epoch,
                absl::StrCat("payload of block ", root.ShortHex(), " at slot ", slot, " missing"),
                config_);
  // The relays serving the builder are banned with it: see RelayMemberBan.
  return true;
}

bool Engine::ApplyRelayFailure(const std::string& relay_id, Slot slot, const BlockRoot& root) {
  RelayRecord* relay = FindOrAddRelay(relay_id);
  if (relay == nullptr) return false;
  RecordFailure(
      relay->failures, EpochOf(slot, config_.chain),
      absl::StrCat("did not reveal the payload of block ", root.ShortHex(), " at slot ", slot),
      config_);
  return true;
}

ObserveOutcome Engine::OnDelivered(Slot slot, const PayloadDelivered& delivered) {
  auto [it, inserted] = state_.votes.try_emplace(delivered.root);
  RootVote& vote = it->second;
  if (inserted) {
    vote.slot = slot;
    vote.builder = delivered.builder;
  }
  // A delivered payload wins over every missing report of the same root, before or after.
  const bool changed = !vote.delivered || state_.builders.contains(delivered.builder);
  vote.delivered = true;
  state_.builders.erase(delivered.builder);
  return changed ? ObserveOutcome::kApplied : ObserveOutcome::kNoEffect;
}

ObserveOutcome Engine::OnExited(const BuilderExited& exited) {
  bool changed = ForgetIndex(exited.builder);
  changed |= state_.builder_keys.erase(exited.builder) > 0;
  return changed ? ObserveOutcome::kApplied : ObserveOutcome::kNoEffect;
}

bool Engine::ForgetIndex(BuilderIndex builder) {
  bool changed = state_.builders.erase(builder) > 0;
  for (auto& [id, relay] : state_.relays) changed |= relay.learned.erase(builder) > 0;
  return changed;
}

bool Engine::RememberKey(BuilderIndex builder, const std::string& pubkey) {
  const Epoch now = current_epoch();
  auto known = state_.builder_keys.find(builder);
  if (known != state_.builder_keys.end()) {
    BuilderKey& key = known->second;
    if (key.pubkey == pubkey) {
      if (key.last_bid_epoch >= now) return false;
      key.last_bid_epoch = now;
      return true;
    }
    // The index now belongs to another builder, which must not inherit the ban, the back-off
    // count or the relays of the one before: as if the first one had exited.
    ForgetIndex(builder);
    key = BuilderKey{pubkey, now};
    return true;
  }
  // The first key seen for the index, before or after its failures: it is whom a later bid is
  // checked against.
  if (state_.builder_keys.size() >= config_.max_tracked_builders && !EvictKey()) return false;
  state_.builder_keys.emplace(builder, BuilderKey{pubkey, now});
  return true;
}

// ---------------------------------------------------------------------------------------------
// Membership, trust and caps

bool Engine::IsMember(const std::string& relay_id, const RelayRecord& relay,
                      BuilderIndex builder) const {
  auto learned = relay.learned.find(builder);
  if (learned != relay.learned.end() &&
      SaturatingAdd(learned->second, config_.relay_association_ttl_epochs) > current_epoch()) {
    return true;
  }
  auto configured = configured_relays_.find(relay_id);
  return configured != configured_relays_.end() && configured->second.indices.contains(builder);
}

std::vector<BuilderIndex> Engine::Members(const std::string& relay_id,
                                          const RelayRecord& relay) const {
  std::vector<BuilderIndex> members;
  for (const auto& [builder, epoch] : relay.learned) {
    if (IsMember(relay_id, relay, builder)) members.push_back(builder);
  }
  auto configured = configured_relays_.find(relay_id);
  if (configured != configured_relays_.end()) {
    for (BuilderIndex builder : configured->second.indices) {
      if (!relay.learned.contains(builder)) members.push_back(builder);
    }
  }
  std::sort(members.begin(), members.end());
  return members;
}

std::vector<BuilderIndex> Engine::RelayMembers(const std::string& relay_id) const {
  auto relay = state_.relays.find(relay_id);
  return relay == state_.relays.end() ? std::vector<BuilderIndex>()
                                      : Members(relay_id, relay->second);
}

std::vector<std::string> Engine::RelaysServing(BuilderIndex builder) const {
  std::vector<std::string> serving;
  for (const auto& [id, relay] : state_.relays) {
    if (IsMember(id, relay, builder)) serving.push_back(id);
  }
  std::sort(serving.begin(), serving.end());
  return serving;
}

bool Engine::EvictBuilder() {
  // Drop the record without an active ban whose back-off closes first (lowest index on a tie:
  // the choice must not depend on hash order, so that a journal replays identically). It loses
  // only its back-off memory.
  const Epoch now = current_epoch();
  auto victim = state_.builders.end();
  for (auto candidate = state_.builders.begin(); candidate != state_.builders.end(); ++candidate) {
    if (candidate->second.failures.Banned(now)) continue;
    if (victim == state_.builders.end() ||
        std::make_pair(candidate->second.failures.backoff_epoch, candidate->first) <
            std::make_pair(victim->second.failures.backoff_epoch, victim->first)) {
      victim = candidate;
    }
  }
  if (victim == state_.builders.end()) return false;
  state_.builders.erase(victim);
  return true;
}

bool Engine::EvictKey() {
  // Drop the key of an index without a record first, then of one whose record holds no active
  // ban, bid under longest ago (lowest index on a tie, for identical replays). The key of a
  // banned index stays: a newcomer's bid is checked against it.
  const Epoch now = current_epoch();
  auto victim = state_.builder_keys.end();
  std::tuple<bool, Epoch, BuilderIndex> victim_order;
  for (auto candidate = state_.builder_keys.begin(); candidate != state_.builder_keys.end();
       ++candidate) {
    auto record = state_.builders.find(candidate->first);
    const bool has_record = record != state_.builders.end();
    if (has_record && record->second.failures.Banned(now)) continue;
    const auto order =
        std::make_tuple(has_record, candidate->second.last_bid_epoch, candidate->first);
    if (victim == state_.builder_keys.end() || order < victim_order) {
      victim = candidate;
      victim_order = order;
    }
  }
  if (victim == state_.builder_keys.end()) return false;
  state_.builder_keys.erase(victim);
  return true;
}

BuilderRecord* Engine::FindOrAddBuilder(BuilderIndex builder) {
  auto it = state_.builders.find(builder);
  if (it != state_.builders.end()) return &it->second;
  if (state_.builders.size() >= config_.max_tracked_builders && !EvictBuilder()) return nullptr;
  return &state_.builders[builder];
}

bool Engine::EvictRelay() {
  // Drop the least recently seen learned relay that holds no ban; configured relays stay.
  auto victim = state_.relays.end();
  for (auto candidate = state_.relays.begin(); candidate != state_.relays.end(); ++candidate) {
    const RelayRecord& relay = candidate->second;
    if (configured_relays_.contains(candidate->first) || RelayBanned(candidate->first, relay)) {
      continue;
    }
    if (victim == state_.relays.end() ||
        std::tie(relay.last_seen_epoch, candidate->first) <
            std::tie(victim->second.last_seen_epoch, victim->first)) {
      victim = candidate;
    }
  }
  if (victim == state_.relays.end()) return false;
  state_.relays.erase(victim);
  return true;
}

RelayRecord* Engine::FindOrAddRelay(const std::string& relay_id) {
  auto it = state_.relays.find(relay_id);
  if (it != state_.relays.end()) return &it->second;
  if (state_.relays.size() >= config_.max_relays && !EvictRelay()) return nullptr;
  return &state_.relays[relay_id];
}

bool Engine::EvictMember(RelayRecord& relay) {
  // Forget the member seen longest ago, but never one whose failure holds the relay's ban.
  auto victim = relay.learned.end();
  for (auto candidate = relay.learned.begin(); candidate != relay.learned.end(); ++candidate) {
    auto record = state_.builders.find(candidate->first);
    if (record != state_.builders.end() && record->second.failures.failed > 0) continue;
    if (victim == relay.learned.end() ||
        std::tie(candidate->second, candidate->first) < std::tie(victim->second, victim->first)) {
      victim = candidate;
    }
  }
  if (victim == relay.learned.end()) return false;
  relay.learned.erase(victim);
  return true;
}

void Engine::EnforceCaps() {
  while (state_.builders.size() > config_.max_tracked_builders && EvictBuilder()) {
  }
  while (state_.builder_keys.size() > config_.max_tracked_builders && EvictKey()) {
  }
  while (state_.relays.size() > config_.max_relays && EvictRelay()) {
  }
  for (auto& [id, relay] : state_.relays) {
    while (relay.learned.size() > config_.max_indices_per_relay && EvictMember(relay)) {
    }
  }
}

void Engine::LearnMembership(RelayRecord& relay, BuilderIndex builder) {
  const Epoch now = current_epoch();
  auto it = relay.learned.find(builder);
  if (it != relay.learned.end()) {
    it->second = std::max(it->second, now);
    return;
  }
  if (relay.learned.size() >= config_.max_indices_per_relay && !EvictMember(relay)) return;
  relay.learned.emplace(builder, now);
}

std::optional<Engine::MemberBan> Engine::RelayMemberBan(const std::string& relay_id,
                                                        const RelayRecord& relay) const {
  // The relay is banned as if it were one builder: while a member that failed is banned, and
  // for at most relay_blacklist_period_epochs after that member's latest failure. Derived from
  // the members' records, so the ban ends when they are cleared (a delivered payload, an exit,
  // a new key), expire or are pruned. A member that never failed adds nothing, so it cannot
  // lift a ban its sibling earned; collateral bans do not count, so it spreads one level only.
  const Epoch now = current_epoch();
  std::optional<MemberBan> ban;
  BuilderIndex culprit = 0;
  for (BuilderIndex member : Members(relay_id, relay)) {
    auto record = state_.builders.find(member);
    if (record == state_.builders.end()) continue;
    const FailureRecord& failures = record->second.failures;
    if (failures.failed == 0 || !failures.Banned(now)) continue;
    const Epoch cap =
        SaturatingAdd(failures.last_failure_epoch, config_.relay_blacklist_period_epochs);
    const Epoch until = failures.ban_until_reset ? cap : std::min(failures.ban_until_epoch, cap);
    if (until <= now) continue;
    // Members are sorted: on a tie the lowest index explains the ban.
    if (!ban.has_value() || until > ban->until_epoch) {
      ban = MemberBan{until, ""};
      culprit = member;
    }
  }
  if (ban.has_value()) {
    ban->reason = absl::StrCat("builder ", culprit,
                               " failed: ", state_.builders.at(culprit).failures.last_failure);
  }
  return ban;
}

bool Engine::RelayBanned(const std::string& relay_id, const RelayRecord& relay) const {
  return relay.failures.Banned(current_epoch()) || RelayBannedByOperator(relay_id) ||
         RelayMemberBan(relay_id, relay).has_value();
}

bool Engine::RelayBannedByOperator(const std::string& relay_id) const {
  if (configured_relay_blacklist_.contains(relay_id)) return true;
  auto ban = state_.operator_relay_bans.find(relay_id);
  return ban != state_.operator_relay_bans.end() &&
         (!ban->second.until_epoch.has_value() || *ban->second.until_epoch > current_epoch());
}

bool Engine::IsTrustedRelay(const std::string& relay_id) const {
  auto override_it = state_.relay_trust_overrides.find(relay_id);
  if (override_it != state_.relay_trust_overrides.end()) return override_it->second;
  auto configured = configured_relays_.find(relay_id);
  return configured != configured_relays_.end() && configured->second.trusted;
}

bool Engine::IsTrustedBuilder(BuilderIndex builder) const {
  auto override_it = state_.builder_trust_overrides.find(builder);
  if (override_it != state_.builder_trust_overrides.end()) return override_it->second;
  if (configured_trusted_.contains(builder)) return true;
  for (const auto& [id, relay] : state_.relays) {
    if (IsTrustedRelay(id) && IsMember(id, relay, builder)) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Time and policy

bool Engine::Advance(Slot slot) {
  if (slot > state_.current_slot) {
    const Epoch before = current_epoch();
    state_.current_slot = slot;
    PruneVotes();
    if (current_epoch() != before) Prune();
  }
  return RefreshPolicy();
}

void Engine::PruneVotes() {
  absl::erase_if(state_.votes, [&](const auto& entry) {
    return SaturatingAdd(entry.second.slot, config_.amendment_window_slots) < state_.current_slot;
  });
}

void Engine::Prune() {
  const Epoch now = current_epoch();
  absl::erase_if(state_.builders, [&](const auto& entry) {
    const FailureRecord& failures = entry.second.failures;
    return !failures.Banned(now) && failures.backoff_epoch <= now;
  });
  // A key is kept while its index has a record (which a newcomer's bid must drop) and for the
  // relay association TTL after the index's latest bid under it.
  absl::erase_if(state_.builder_keys, [&](const auto& entry) {
    return !state_.builders.contains(entry.first) &&
           entry.second.last_bid_epoch + config_.relay_association_ttl_epochs <= now;
  });
  for (auto& [id, relay] : state_.relays) {
    absl::erase_if(relay.learned, [&](const auto& member) {
      return SaturatingAdd(member.second, config_.relay_association_ttl_epochs) <= now;
    });
  }
  absl::erase_if(state_.relays, [&](const auto& entry) {
    const RelayRecord& relay = entry.second;
    return !configured_relays_.contains(entry.first) && relay.learned.empty() &&
           !relay.failures.Banned(now) && relay.failures.backoff_epoch <= now;
  });
  absl::erase_if(state_.operator_bans, [&](const auto& entry) {
    return entry.second.until_epoch.has_value() && *entry.second.until_epoch <= now;
  });
  absl::erase_if(state_.operator_relay_bans, [&](const auto& entry) {
    return entry.second.until_epoch.has_value() && *entry.second.until_epoch <= now;
  });
}

bool Engine::RefreshPolicy() {
  MissedSlotState missed_slots;
  if (!IsGloas(current_epoch(), config_.chain)) {
    missed_slots = missed_slots_.Evaluate(state_.current_slot, config_.missed_slots, config_.chain);
  }
  Policy next = ComputePolicy(missed_slots);
  if (state_.policy.version != 0 && next.SameDecisions(state_.policy)) return false;

  std::vector<std::string> changes;
  if (next.mode != state_.policy.mode || state_.policy.version == 0) {
    changes.push_back(absl::StrCat("mode ", ModeName(next.mode),
                                   next.mode_reason.empty() ? "" : ": ", next.mode_reason));
  }
  std::vector<BuilderIndex> banned;
  std::vector<BuilderIndex> allowed;
  for (const auto& [builder, ban] : next.banned_builders) {
    auto before = state_.policy.banned_builders.find(builder);
    if (before == state_.policy.banned_builders.end() || !(before->second == ban)) {
      banned.push_back(builder);
    }
  }
  for (const auto& [builder, ban] : state_.policy.banned_builders) {
    if (!next.banned_builders.contains(builder)) allowed.push_back(builder);
  }
  if (!banned.empty()) changes.push_back(absl::StrCat("banned builders ", NameList(banned)));
  if (!allowed.empty())
    changes.push_back(absl::StrCat("builders allowed again ", NameList(allowed)));
  std::vector<std::string> relays_banned;
  std::vector<std::string> relays_allowed;
  for (const auto& [relay, ban] : next.banned_relays) {
    if (!state_.policy.banned_relays.contains(relay)) relays_banned.push_back(relay);
  }
  for (const auto& [relay, ban] : state_.policy.banned_relays) {
    if (!next.banned_relays.contains(relay)) relays_allowed.push_back(relay);
  }
  std::sort(relays_banned.begin(), relays_banned.end());
  std::sort(relays_allowed.begin(), relays_allowed.end());
  if (!relays_banned.empty()) {
    changes.push_back(absl::StrCat("banned relays ", absl::StrJoin(relays_banned, ", ")));
  }
  if (!relays_allowed.empty()) {
    changes.push_back(absl::StrCat("relays allowed again ", absl::StrJoin(relays_allowed, ", ")));
  }
  if (next.trusted_builders != state_.policy.trusted_builders ||
      next.trusted_relays != state_.policy.trusted_relays) {
    changes.push_back("trusted set changed");
  }
  if (next.builder_pubkeys != state_.policy.builder_pubkeys) {
    changes.push_back("builder keys learned");
  }
  if (next.missed_slots.tripped != state_.policy.missed_slots.tripped) {
    changes.push_back(next.missed_slots.tripped
                          ? absl::StrCat("missed-slot breaker tripped: ", next.missed_slots.rule)
                          : "missed-slot breaker cleared");
  }
  next.version = state_.policy.version + 1;
  next.reason = bounds::Truncate(absl::StrJoin(changes, "; "), bounds::kMaxReasonBytes);
  state_.policy = std::move(next);
  return true;
}

Policy Engine::ComputePolicy(const MissedSlotState& missed_slots) const {
  const Epoch now = current_epoch();
  Policy policy;
  policy.computed_at_slot = state_.current_slot;
  policy.computed_at_epoch = now;
  policy.missed_slots = missed_slots;

  policy.trusted_builders = configured_trusted_;
  for (const auto& [builder, trusted] : state_.builder_trust_overrides) {
    if (trusted) {
      policy.trusted_builders.insert(builder);
    } else {
      policy.trusted_builders.erase(builder);
    }
  }
  for (const auto& [id, relay] : configured_relays_) {
    if (relay.trusted) policy.trusted_relays.insert(id);
  }
  for (const auto& [id, trusted] : state_.relay_trust_overrides) {
    if (trusted) {
      policy.trusted_relays.insert(id);
    } else {
      policy.trusted_relays.erase(id);
    }
  }

  BanMerger<BuilderIndex> builder_bans(policy.banned_builders);
  BanMerger<std::string> relay_bans(policy.banned_relays);
  // Bans by the builders' own failures: the only ones counted toward the modes.
  std::vector<BuilderIndex> failed;
  std::vector<BuilderIndex> failed_untrusted;
  for (const auto& [builder, record] : state_.builders) {
    const FailureRecord& failures = record.failures;
    if (!failures.Banned(now)) continue;
    builder_bans.Add(builder,
                     Ban{BanKind::kFailure, failures.ban_until_epoch, failures.ban_until_reset,
                         absl::StrCat(failures.failed,
                                      " consecutive failure(s); last: ", failures.last_failure)});
    failed.push_back(builder);
    if (!IsTrustedBuilder(builder)) failed_untrusted.push_back(builder);
  }

  for (BuilderIndex builder : configured_blacklist_) {
    builder_bans.Add(builder, Ban{BanKind::kOperator, 0, true, "in the configured blacklist"});
  }
  for (const auto& [builder, ban] : state_.operator_bans) {
    if (ban.until_epoch.has_value() && *ban.until_epoch <= now) continue;
    builder_bans.Add(
        builder, Ban{BanKind::kOperator, ban.until_epoch.value_or(0), !ban.until_epoch.has_value(),
                     absl::StrCat("operator: ", ban.reason)});
  }

  for (const auto& [id, relay] : state_.relays) {
    if (relay.failures.Banned(now)) {
      relay_bans.Add(
          id, Ban{BanKind::kFailure, relay.failures.ban_until_epoch, relay.failures.ban_until_reset,
                  absl::StrCat(relay.failures.failed,
                               " consecutive failure(s); last: ", relay.failures.last_failure)});
    }
    std::optional<MemberBan> member_ban = RelayMemberBan(id, relay);
    if (!member_ban.has_value()) continue;
    relay_bans.Add(id, Ban{BanKind::kFailure, member_ban->until_epoch, false, member_ban->reason});
    for (BuilderIndex member : Members(id, relay)) {
      builder_bans.Add(member, Ban{BanKind::kCollateral, member_ban->until_epoch, false,
                                   absl::StrCat("relay ", id, " is banned: ", member_ban->reason)});
    }
  }

  // Relays the operator banned, and with each every builder it serves: kind operator, as the
  // operator's decision, never counted toward the modes (they make no failure record).
  auto ban_relay = [&](const std::string& id, Ban ban) {
    if (auto relay = state_.relays.find(id); relay != state_.relays.end()) {
      for (BuilderIndex member : Members(id, relay->second)) {
        builder_bans.Add(member, Ban{BanKind::kOperator, ban.until_epoch, ban.until_reset,
                                     absl::StrCat("relay ", id, " is banned: ", ban.reason)});
      }
    }
    relay_bans.Add(id, std::move(ban));
  };
  for (const std::string& id : configured_relay_blacklist_) {
    ban_relay(id, Ban{BanKind::kOperator, 0, true, "in the configured blacklist"});
  }
  for (const auto& [id, ban] : state_.operator_relay_bans) {
    if (ban.until_epoch.has_value() && *ban.until_epoch <= now) continue;
    ban_relay(id, Ban{BanKind::kOperator, ban.until_epoch.value_or(0), !ban.until_epoch.has_value(),
                      absl::StrCat("operator: ", ban.reason)});
  }

  if (missed_slots.active && missed_slots.tripped) {
    policy.mode = Mode::kSelfBuild;
    policy.mode_reason = absl::StrCat("pre-Gloas missed-slot breaker: ", missed_slots.rule);
  } else if (failed.size() >= config_.critical_failed_builders) {
    policy.mode = Mode::kSelfBuild;
    policy.mode_reason =
        absl::StrCat(failed.size(), " builders banned for their own failures (", NameList(failed),
                     "), critical_failed_builders is ", config_.critical_failed_builders);
  } else if (failed_untrusted.size() >= config_.critical_failed_untrusted_builders) {
    policy.mode = Mode::kTrustedOnly;
    policy.mode_reason =
        absl::StrCat(failed_untrusted.size(), " untrusted builders banned for their own failures (",
                     NameList(failed_untrusted), "), critical_failed_untrusted_builders is ",
                     config_.critical_failed_untrusted_builders);
  }
  policy.mode_reason = bounds::Truncate(policy.mode_reason, bounds::kMaxReasonBytes);
  AddBuilderPubkeys(policy);
  return policy;
}

void Engine::AddBuilderPubkeys(Policy& policy) const {
  // Banned builders' keys first, then trusted ones', each by index, up to the bound.
  std::vector<BuilderIndex> banned;
  for (const auto& [builder, ban] : policy.banned_builders) banned.push_back(builder);
  std::vector<BuilderIndex> trusted(policy.trusted_builders.begin(), policy.trusted_builders.end());
  std::sort(banned.begin(), banned.end());
  std::sort(trusted.begin(), trusted.end());
  for (const std::vector<BuilderIndex>* builders : {&banned, &trusted}) {
    for (BuilderIndex builder : *builders) {
      if (policy.builder_pubkeys.size() >= bounds::kMaxPolicyBuilderKeys) return;
      const auto key = state_.builder_keys.find(builder);
      if (key != state_.builder_keys.end()) policy.builder_pubkeys[builder] = key->second.pubkey;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Operator actions

absl::Status Engine::BanBuilder(BuilderIndex builder, std::string reason,
                                std::optional<Epoch> until_epoch) {
  if (builder == kSelfBuild) {
    return absl::InvalidArgumentError("cannot ban the self-build index (2^64-1)");
  }
  if (reason.empty()) {
    return absl::InvalidArgumentError("a ban needs a reason, for the other operators to read");
  }
  if (absl::Status bounded = bounds::CheckMaxBytes("reason", reason, bounds::kMaxReasonBytes);
      !bounded.ok()) {
    return bounded;
  }
  if (until_epoch.has_value() && *until_epoch <= current_epoch()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ban until epoch ", *until_epoch, " would already be over (current epoch ",
                     current_epoch(), "); give a later epoch or none for an open-ended ban"));
  }
  if (until_epoch.has_value() && *until_epoch - current_epoch() > bounds::kMaxPeriodEpochs) {
    return absl::InvalidArgumentError(
        absl::StrCat("ban until epoch ", *until_epoch, " is more than ", bounds::kMaxPeriodEpochs,
                     " epochs ahead (current epoch ", current_epoch(),
                     "); give a nearer epoch, or none for a ban until unbanned"));
  }
  if (!state_.operator_bans.contains(builder) &&
      state_.operator_bans.size() >= bounds::kMaxOperatorBuilderBans) {
    return absl::ResourceExhaustedError(
        absl::StrCat("breakerd already holds ", state_.operator_bans.size(),
                     " operator bans of builders, the most it keeps; unban some, or list "
                     "permanent ones in the configuration's blacklisted_builders"));
  }
  state_.operator_bans[builder] = OperatorBan{std::move(reason), until_epoch};
  return absl::OkStatus();
}

absl::Status Engine::UnbanBuilder(BuilderIndex builder) {
  if (configured_blacklist_.contains(builder)) {
    return absl::FailedPreconditionError(
        absl::StrCat("builder ", builder, " is in the configured blacklist; remove it from the ",
                     "configuration and reload"));
  }
  const bool had_ban = state_.operator_bans.erase(builder) > 0;
  const bool had_record = state_.builders.erase(builder) > 0;
  if (had_ban || had_record) return absl::OkStatus();
  std::vector<std::string> by_sibling;
  std::vector<std::string> by_operator;
  for (const auto& [id, relay] : state_.relays) {
    if (!IsMember(id, relay, builder)) continue;
    if (RelayBannedByOperator(id)) {
      by_operator.push_back(id);
    } else if (RelayMemberBan(id, relay).has_value()) {
      by_sibling.push_back(id);
    }
  }
  if (by_sibling.empty() && by_operator.empty()) {
    return absl::NotFoundError(absl::StrCat("builder ", builder, " is not banned"));
  }
  std::sort(by_sibling.begin(), by_sibling.end());
  std::sort(by_operator.begin(), by_operator.end());
  std::vector<std::string> causes;
  if (!by_sibling.empty()) {
    causes.push_back(absl::StrCat(absl::StrJoin(by_sibling, ", "),
                                  ", which a failing sibling keeps banned; reset clears them"));
  }
  if (!by_operator.empty()) {
    causes.push_back(absl::StrCat(absl::StrJoin(by_operator, ", "),
                                  ", which the operator banned; unban the relay to lift it"));
  }
  return absl::FailedPreconditionError(absl::StrCat("builder ", builder,
                                                    " is banned only as a member of relay(s) ",
                                                    absl::StrJoin(causes, "; and of relay(s) ")));
}

absl::Status Engine::BanRelay(absl::string_view relay, std::string reason,
                              std::optional<Epoch> until_epoch) {
  absl::StatusOr<std::string> id = NormalizeRelayId(relay);
  if (!id.ok()) return id.status();
  if (reason.empty()) {
    return absl::InvalidArgumentError("a ban needs a reason, for the other operators to read");
  }
  if (absl::Status length = bounds::CheckMaxBytes("reason", reason, bounds::kMaxReasonBytes);
      !length.ok()) {
    return length;
  }
  const Epoch now = current_epoch();
  if (until_epoch.has_value() && *until_epoch <= now) {
    return absl::InvalidArgumentError(
        absl::StrCat("ban until epoch ", *until_epoch, " would already be over (current epoch ",
                     now, "); give a later epoch or none for an open-ended ban"));
  }
  if (until_epoch.has_value() && *until_epoch - now > bounds::kMaxPeriodEpochs) {
    return absl::InvalidArgumentError(
        absl::StrCat("ban until epoch ", *until_epoch, " is ", *until_epoch - now,
                     " epochs ahead of the current epoch ", now, "; accepted: at most ",
                     bounds::kMaxPeriodEpochs, " epochs ahead, or none for a ban until unbanned"));
  }
  auto existing = state_.operator_relay_bans.find(*id);
  if (existing != state_.operator_relay_bans.end()) {
    existing->second = OperatorBan{std::move(reason), until_epoch};
    return absl::OkStatus();
  }
  if (state_.operator_relay_bans.size() >= bounds::kMaxOperatorRelayBans) {
    return absl::ResourceExhaustedError(absl::StrCat(
        state_.operator_relay_bans.size(),
        " relays are banned by the operator, the most held at once (",
        bounds::kMaxOperatorRelayBans, "); unban one first, or list long-lived bans in the ",
        "configuration's blacklisted_relays"));
  }
  state_.operator_relay_bans.emplace(*std::move(id), OperatorBan{std::move(reason), until_epoch});
  return absl::OkStatus();
}

absl::Status Engine::UnbanRelay(absl::string_view relay) {
  absl::StatusOr<std::string> id = NormalizeRelayId(relay);
  if (!id.ok()) return id.status();
  if (configured_relay_blacklist_.contains(*id)) {
    return absl::FailedPreconditionError(
        absl::StrCat("relay ", *id, " is in the configured blacklisted_relays; remove it from the ",
                     "configuration and reload"));
  }
  // An ended ban not pruned yet (the epoch has not turned since) bans nothing either.
  const bool banned = RelayBannedByOperator(*id);
  state_.operator_relay_bans.erase(*id);
  if (banned) return absl::OkStatus();
  auto record = state_.relays.find(*id);
  const bool by_failures = record != state_.relays.end() && RelayBanned(*id, record->second);
  return absl::NotFoundError(absl::StrCat(
      "relay ", *id, " is not banned by the operator",
      by_failures ? "; it is banned for failures, which lift by themselves or by a reset" : ""));
}

absl::Status Engine::SetBuilderTrust(BuilderIndex builder, bool trusted) {
  if (builder == kSelfBuild) {
    return absl::InvalidArgumentError("the self-build index (2^64-1) has no trust to set");
  }
  if (!state_.builder_trust_overrides.contains(builder) &&
      state_.builder_trust_overrides.size() >= bounds::kMaxBuilderTrustOverrides) {
    return absl::ResourceExhaustedError(
        absl::StrCat("breakerd already holds ", state_.builder_trust_overrides.size(),
                     " builder trust overrides, the most it keeps; list trusted builders in the "
                     "configuration's trusted_builders instead"));
  }
  state_.builder_trust_overrides[builder] = trusted;
  return absl::OkStatus();
}

absl::Status Engine::SetRelayTrust(absl::string_view relay, bool trusted) {
  absl::StatusOr<std::string> id = NormalizeRelayId(relay);
  if (!id.ok()) return id.status();
  if (!state_.relay_trust_overrides.contains(*id) &&
      state_.relay_trust_overrides.size() >= bounds::kMaxRelayTrustOverrides) {
    return absl::ResourceExhaustedError(
        absl::StrCat("breakerd already holds ", state_.relay_trust_overrides.size(),
                     " relay trust overrides, the most it keeps; mark relays trusted in the "
                     "configuration's relays instead"));
  }
  state_.relay_trust_overrides[*id] = trusted;
  return absl::OkStatus();
}

void Engine::Reset() {
  state_.builders.clear();
  for (auto& [id, relay] : state_.relays) {
    relay.failures = FailureRecord();
  }
  state_.votes.clear();
  missed_slots_.Reset(state_.current_slot);
}

absl::Status Engine::Reconfigure(Config config) {
  if (absl::Status status = ValidateConfig(config); !status.ok()) return status;
  config_ = std::move(config);
  DeriveFromConfig();
  // Lowered caps take effect at once, by the same evictions as when a record is added: memory
  // stays bounded by the configuration in force, and no active ban is dropped.
  EnforceCaps();
  return absl::OkStatus();
}

EngineState Engine::Export() const {
  EngineState state = state_;
  state.missed_slots = missed_slots_.Export();
  return state;
}

}  // namespace breaker::core
