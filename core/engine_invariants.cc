#include "core/engine_invariants.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <variant>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/chain_time.h"
#include "core/input_bounds.h"
#include "core/relay_id.h"

namespace breaker::core {
namespace {

// Builders asked whether a bid through a banned relay is allowed: any builder must be refused.
constexpr BuilderIndex kBannedRelayProbes[] = {0, 1, 4, 30};

std::string DescribeEvent(const Event& event) {
  return std::visit(Overloaded{
                        [](const BidSeen& bid) {
                          return absl::StrCat("BidSeen{builder=", bid.builder, " relay='",
                                              bid.relay, "' pubkey='", absl::CHexEscape(bid.pubkey),
                                              "'}");
                        },
                        [](const PayloadMissing& missing) {
                          return absl::StrCat("PayloadMissing{builder=", missing.builder,
                                              " root=", missing.root.ShortHex(),
                                              " attested=", missing.attested_fraction, "}");
                        },
                        [](const PayloadDelivered& delivered) {
                          return absl::StrCat("PayloadDelivered{builder=", delivered.builder,
                                              " root=", delivered.root.ShortHex(), "}");
                        },
                        [](const BlocksSeen& blocks) {
                          return absl::StrCat("BlocksSeen{roots=", blocks.roots.size(), "}");
                        },
                        [](const Finalized& finalized) {
                          return absl::StrCat("Finalized{epoch=", finalized.epoch, "}");
                        },
                        [](const BuilderExited& exited) {
                          return absl::StrCat("BuilderExited{builder=", exited.builder, "}");
                        },
                        [](const RelayRevealMissing& missing) {
                          return absl::StrCat("RelayRevealMissing{relay='", missing.relay,
                                              "' root=", missing.root.ShortHex(), "}");
                        },
                    },
                    event);
}

// True when some missed-slot rule is on: pre-Gloas, the breaker is then active.
bool AnyMissedSlotRule(const MissedSlotRules& rules) {
  return (rules.latched_rule && rules.max_allowed_missing_slots > 0) ||
         rules.max_consecutive_missed_slots > 0 || rules.max_missed_slots_in_window > 0 ||
         rules.max_epochs_since_finalization > 0;
}

// The operator's ban of relay `id` that has not ended, if there is one.
const OperatorBan* ActiveRelayBan(const Engine& engine, const std::string& id) {
  auto ban = engine.operator_relay_bans().find(id);
  if (ban == engine.operator_relay_bans().end()) return nullptr;
  if (ban->second.until_epoch.has_value() && *ban->second.until_epoch <= engine.current_epoch()) {
    return nullptr;
  }
  return &ban->second;
}

bool IsFailureReport(const Event& event) {
  return std::holds_alternative<PayloadMissing>(event) ||
         std::holds_alternative<RelayRevealMissing>(event);
}

// What Observe said it recorded is what the event could record, and the record holds it.
std::string CheckRecorded(const Engine& engine, const Event& event, const StepResult& result) {
  if (result.recorded == RecordedFailure::kNone) return "";
  if (!result.status.ok() || result.outcome != ObserveOutcome::kApplied) {
    return absl::StrCat("a failure was said recorded by an observation not applied: ",
                        DescribeResult(result));
  }
  if (const auto* missing = std::get_if<PayloadMissing>(&event)) {
    if (result.recorded != RecordedFailure::kBuilder) {
      return "a payload_missing report recorded a failure elsewhere than in a builder's record";
    }
    auto record = engine.builders().find(missing->builder);
    if (record == engine.builders().end() || record->second.failures.failed == 0) {
      return absl::StrCat("a failure was said recorded for builder ", missing->builder,
                          ", which has no failure record");
    }
    return "";
  }
  if (const auto* missing = std::get_if<RelayRevealMissing>(&event)) {
    if (result.recorded != RecordedFailure::kRelay) {
      return "a relay_reveal_missing report recorded a failure elsewhere than in a relay's record";
    }
    absl::StatusOr<std::string> id = NormalizeRelayId(missing->relay);
    auto record = id.ok() ? engine.relays().find(*id) : engine.relays().end();
    if (record == engine.relays().end() || record->second.failures.failed == 0) {
      return absl::StrCat("a failure was said recorded for relay ", missing->relay,
                          ", which has no failure record");
    }
    return "";
  }
  return absl::StrCat("an observation that is no failure report recorded a failure: ",
                      DescribeResult(result));
}

}  // namespace

Config WithSmallCaps(Config config) {
  config.min_reporting_nodes = 2;
  config.max_tracked_builders = 16;
  config.max_relays = 3;
  config.max_indices_per_relay = 3;
  config.allowed_failures = 1;
  config.critical_failures = 3;
  config.critical_blacklist_period_epochs = 16;
  config.backoff_period_epochs = 40;
  return config;
}

absl::string_view InvariantFamilyName(InvariantFamily family) {
  switch (family) {
    case kModeCounts:
      return "mode counts";
    case kBanConsistency:
      return "ban consistency";
    case kVersions:
      return "versions";
    case kCapsAndSelfBuild:
      return "caps and self-build";
    case kObserveContract:
      return "observe contract";
    case kExportImport:
      return "export/import";
  }
  return "?";
}

StepResult ApplyStep(Engine& engine, const EngineStep& step) {
  StepResult result;
  switch (step.kind) {
    case EngineStep::Kind::kAdvance:
      result.changed = engine.Advance(step.slot);
      break;
    case EngineStep::Kind::kObserve: {
      absl::StatusOr<ObserveResult> observed = engine.Observe(step.observation);
      result.status = observed.status();
      if (observed.ok()) {
        result.outcome = observed->outcome;
        result.recorded = observed->recorded;
      }
      break;
    }
    case EngineStep::Kind::kBan:
      result.status = engine.BanBuilder(step.builder, step.reason, step.until_epoch);
      break;
    case EngineStep::Kind::kUnban:
      result.status = engine.UnbanBuilder(step.builder);
      break;
    case EngineStep::Kind::kSetBuilderTrust:
      result.status = engine.SetBuilderTrust(step.builder, step.trusted);
      break;
    case EngineStep::Kind::kSetRelayTrust:
      result.status = engine.SetRelayTrust(step.relay, step.trusted);
      break;
    case EngineStep::Kind::kReset:
      engine.Reset();
      break;
    case EngineStep::Kind::kReconfigure:
      result.status = engine.Reconfigure(step.config);
      break;
    case EngineStep::Kind::kBanRelay:
      result.status = engine.BanRelay(step.relay, step.reason, step.until_epoch);
      break;
    case EngineStep::Kind::kUnbanRelay:
      result.status = engine.UnbanRelay(step.relay);
      break;
  }
  result.version_after_action = engine.policy().version;
  result.refreshed = engine.RefreshPolicy();
  return result;
}

std::string DescribeStep(const EngineStep& step) {
  switch (step.kind) {
    case EngineStep::Kind::kAdvance:
      return absl::StrCat("Advance(", step.slot, ")");
    case EngineStep::Kind::kObserve:
      return absl::StrCat("Observe{slot=", step.observation.slot, " node='", step.observation.node,
                          "' seq=", step.observation.sequence, " ",
                          DescribeEvent(step.observation.event), "}");
    case EngineStep::Kind::kBan:
      return absl::StrCat(
          "BanBuilder(", step.builder, ", '", step.reason, "', ",
          step.until_epoch.has_value() ? absl::StrCat(*step.until_epoch) : "nullopt", ")");
    case EngineStep::Kind::kUnban:
      return absl::StrCat("UnbanBuilder(", step.builder, ")");
    case EngineStep::Kind::kSetBuilderTrust:
      return absl::StrCat("SetBuilderTrust(", step.builder, ", ", step.trusted, ")");
    case EngineStep::Kind::kSetRelayTrust:
      return absl::StrCat("SetRelayTrust('", step.relay, "', ", step.trusted, ")");
    case EngineStep::Kind::kReset:
      return "Reset()";
    case EngineStep::Kind::kReconfigure:
      return absl::StrCat("Reconfigure(gloas_fork_epoch=", step.config.chain.gloas_fork_epoch,
                          " min_reporting_nodes=", step.config.min_reporting_nodes,
                          " max_tracked_builders=", step.config.max_tracked_builders,
                          " max_relays=", step.config.max_relays,
                          " max_indices_per_relay=", step.config.max_indices_per_relay,
                          " relays=", step.config.relays.size(),
                          " missed_slots=", step.config.missed_slots.preset, ")");
    case EngineStep::Kind::kBanRelay:
      return absl::StrCat(
          "BanRelay('", step.relay, "', '", bounds::QuotePrefix(step.reason), "' (",
          step.reason.size(), " bytes), ",
          step.until_epoch.has_value() ? absl::StrCat(*step.until_epoch) : "nullopt", ")");
    case EngineStep::Kind::kUnbanRelay:
      return absl::StrCat("UnbanRelay('", step.relay, "')");
  }
  return "?";
}

std::string DescribeResult(const StepResult& result) {
  std::string text = result.status.ok() ? "OK" : result.status.ToString();
  if (result.outcome.has_value()) {
    static constexpr const char* kNames[] = {"applied", "no-effect", "duplicate"};
    absl::StrAppend(&text, " outcome=", kNames[static_cast<int>(*result.outcome)]);
  }
  absl::StrAppend(&text, " changed=", result.changed,
                  " version_after_action=", result.version_after_action,
                  " refresh=", result.refreshed);
  return text;
}

std::string DescribeBans(const Policy& policy) {
  std::vector<std::string> parts;
  for (const auto& [builder, ban] : policy.banned_builders) {
    parts.push_back(absl::StrCat(builder, ":", BanKindName(ban.kind), "<", ban.until_epoch,
                                 ban.until_reset ? "/reset" : "", " '", ban.reason, "'"));
  }
  for (const auto& [relay, ban] : policy.banned_relays) {
    parts.push_back(absl::StrCat(relay, ":", BanKindName(ban.kind), "<", ban.until_epoch,
                                 ban.until_reset ? "/reset" : "", " '", ban.reason, "'"));
  }
  std::sort(parts.begin(), parts.end());
  return absl::StrCat("v", policy.version, " ", ModeName(policy.mode), " [",
                      absl::StrJoin(parts, "; "), "]");
}

std::string EngineFingerprint(const Engine& engine, bool with_sequences) {
  std::vector<std::string> parts;
  for (const auto& [builder, record] : engine.builders()) {
    const FailureRecord& f = record.failures;
    parts.push_back(absl::StrCat("builder ", builder, ": failed=", f.failed,
                                 " until=", f.ban_until_epoch, " reset=", f.ban_until_reset,
                                 " backoff=", f.backoff_epoch, " last='", f.last_failure, "'"));
  }
  for (const auto& [builder, key] : engine.builder_keys()) {
    parts.push_back(absl::StrCat("key ", builder, ": ", absl::BytesToHexString(key.pubkey), "@",
                                 key.last_bid_epoch));
  }
  for (const auto& [id, relay] : engine.relays()) {
    std::vector<std::pair<BuilderIndex, Epoch>> learned(relay.learned.begin(), relay.learned.end());
    std::sort(learned.begin(), learned.end());
    const FailureRecord& f = relay.failures;
    parts.push_back(absl::StrCat(
        "relay ", id, ": learned=",
        absl::StrJoin(learned, ",",
                      [](std::string* out, const std::pair<BuilderIndex, Epoch>& member) {
                        absl::StrAppend(out, member.first, "@", member.second);
                      }),
        " failed=", f.failed, " until=", f.ban_until_epoch, " reset=", f.ban_until_reset,
        " backoff=", f.backoff_epoch, " seen=", relay.last_seen_epoch));
  }
  if (with_sequences) {
    for (const auto& [node, sequence] : engine.node_sequences()) {
      parts.push_back(absl::StrCat("node ", node, ": ", sequence));
    }
  }
  std::sort(parts.begin(), parts.end());
  return absl::StrJoin(parts, "\n");
}

// ---------------------------------------------------------------------------------------------
// EngineChecker

EngineChecker::EngineChecker(const Engine& engine, Options options)
    : options_(options), families_(options.families) {
  previous_policy_ = engine.policy();
  max_version_ = previous_policy_.version;
  // An engine imported from a state may come with overrides already.
  for (const auto& [builder, trusted] : engine.Export().builder_trust_overrides) {
    trust_overrides_[builder] = trusted;
  }
  LearnConfig(engine.config());
  AllowWhatIsHeld(engine);
}

void EngineChecker::AllowWhatIsHeld(const Engine& engine) {
  const Config& config = engine.config();
  builders_allowance_ = std::max<size_t>(config.max_tracked_builders, engine.builders().size());
  keys_allowance_ = std::max<size_t>(config.max_tracked_builders, engine.builder_keys().size());
  relays_allowance_ = std::max<size_t>(config.max_relays, engine.relays().size());
  learned_allowance_.clear();
  for (const auto& [id, relay] : engine.relays()) {
    if (relay.learned.size() > config.max_indices_per_relay) {
      learned_allowance_[id] = relay.learned.size();
    }
  }
}

void EngineChecker::ShrinkAllowances(const Engine& engine) {
  const Config& config = engine.config();
  builders_allowance_ = std::max<size_t>(config.max_tracked_builders,
                                         std::min(builders_allowance_, engine.builders().size()));
  keys_allowance_ = std::max<size_t>(config.max_tracked_builders,
                                     std::min(keys_allowance_, engine.builder_keys().size()));
  relays_allowance_ =
      std::max<size_t>(config.max_relays, std::min(relays_allowance_, engine.relays().size()));
  absl::erase_if(learned_allowance_, [&](auto& entry) {
    auto relay = engine.relays().find(entry.first);
    if (relay == engine.relays().end()) return true;
    entry.second = std::min(entry.second, relay->second.learned.size());
    return entry.second <= config.max_indices_per_relay;
  });
}

void EngineChecker::LearnConfig(const Config& config) {
  configured_relays_.clear();
  for (const RelayConfig& relay : config.relays) {
    absl::StatusOr<std::string> id = NormalizeRelayId(relay.identifier);
    // ValidateConfig refuses a configuration whose relays do not normalize.
    if (!id.ok()) continue;
    configured_relays_[*id] = relay.indices;
  }
  configured_relay_blacklist_.clear();
  for (const std::string& relay : config.blacklisted_relays) {
    absl::StatusOr<std::string> id = NormalizeRelayId(relay);
    if (id.ok()) configured_relay_blacklist_.insert(*id);
  }
}

StepResult EngineChecker::Step(Engine& engine, const EngineStep& step) {
  violations_.clear();
  if ((families_ & kExportImport) && !shadow_.has_value() && options_.import_every > 0 &&
      steps_ % options_.import_every == options_.import_every - 1) {
    StartShadow(engine);
  }

  EngineStep::Expect expect = step.expect;
  if (step.kind == EngineStep::Kind::kObserve && expect == EngineStep::Expect::kUnknown) {
    expect = DeriveExpectation(engine, step.observation);
  }
  // Only refusals must leave the state alone; a well-formed payload-missing report can be
  // refused only when the tracked-builders cap is full, and an observation the caller knows
  // nothing about can be refused whenever it contradicts an earlier report.
  const bool fingerprint_needed =
      (families_ & kObserveContract) &&
      ((step.kind == EngineStep::Kind::kObserve &&
        (expect != EngineStep::Expect::kAccepted ||
         (std::holds_alternative<PayloadMissing>(step.observation.event) &&
          engine.builders().size() >= engine.config().max_tracked_builders))) ||
       step.kind == EngineStep::Kind::kReconfigure);
  const std::string fingerprint_before =
      fingerprint_needed ? EngineFingerprint(engine, /*with_sequences=*/false) : "";
  std::optional<Config> config_before;
  if (step.kind == EngineStep::Kind::kReconfigure) config_before = engine.config();
  key_before_.reset();
  relay_ban_before_.reset();
  if (step.kind == EngineStep::Kind::kBanRelay || step.kind == EngineStep::Kind::kUnbanRelay) {
    absl::StatusOr<std::string> id = NormalizeRelayId(step.relay);
    if (id.ok()) {
      if (const OperatorBan* ban = ActiveRelayBan(engine, *id)) relay_ban_before_ = *ban;
    }
  }
  if (step.kind == EngineStep::Kind::kObserve) {
    if (const auto* bid = std::get_if<BidSeen>(&step.observation.event)) {
      KeyBefore before;
      auto key = engine.builder_keys().find(bid->builder);
      if (key != engine.builder_keys().end()) before.key = key->second;
      before.had_record = engine.builders().contains(bid->builder);
      key_before_ = std::move(before);
    }
  }

  const StepResult result = ApplyStep(engine, step);

  if (step.kind == EngineStep::Kind::kSetBuilderTrust && result.status.ok()) {
    trust_overrides_[step.builder] = step.trusted;
  }
  if (step.kind == EngineStep::Kind::kReconfigure && result.status.ok()) {
    LearnConfig(engine.config());
    AllowWhatIsHeld(engine);
  }
  for (const auto& [id, relay] : engine.relays()) {
    if (!probe_relay_set_.insert(id).second) continue;
    probe_relays_.insert(std::upper_bound(probe_relays_.begin(), probe_relays_.end(), id), id);
    absl::StatusOr<std::string> normalized = NormalizeRelayId(id);
    const std::vector<std::string>& known = options_.known_relays;
    if (bad_relay_id_.empty() &&
        (!normalized.ok() || *normalized != id ||
         (!known.empty() && std::find(known.begin(), known.end(), id) == known.end()))) {
      bad_relay_id_ = id;
    }
  }

  ComputeServing(engine);
  if (families_ & kVersions) {
    Check(kVersions, CheckVersions(engine, step, result, result.version_after_action));
  }
  if (families_ & kObserveContract) {
    Check(kObserveContract, CheckContract(engine, step, expect, result, fingerprint_before,
                                          config_before.has_value() ? &*config_before : nullptr));
  }
  if (families_ & kModeCounts) Check(kModeCounts, CheckMode(engine));
  if (families_ & kBanConsistency) Check(kBanConsistency, CheckBans(engine));
  if (families_ & kCapsAndSelfBuild) Check(kCapsAndSelfBuild, CheckCaps(engine));
  if (shadow_.has_value() && (families_ & kExportImport)) {
    Check(kExportImport, StepShadow(engine, step, result));
  }
  ShrinkAllowances(engine);

  if (engine.policy().version != previous_policy_.version) previous_policy_ = engine.policy();
  ++steps_;
  return result;
}

void EngineChecker::Check(InvariantFamily family, const std::string& problem) {
  if (problem.empty()) return;
  violations_.push_back({family, problem});
  families_ &= ~static_cast<uint32_t>(family);
}

EngineStep::Expect EngineChecker::DeriveExpectation(const Engine& engine,
                                                    const Observation& observation) const {
  using Expect = EngineStep::Expect;
  if (observation.node.empty() || observation.sequence == 0) return Expect::kInvalid;
  auto highest = engine.node_sequences().find(observation.node);
  if (highest != engine.node_sequences().end() && observation.sequence <= highest->second) {
    return Expect::kDuplicate;
  }
  const Config& config = engine.config();
  const Slot now = engine.current_slot();
  if (observation.slot > now + config.max_future_slots ||
      observation.slot + config.amendment_window_slots < now) {
    return Expect::kOutOfRange;
  }
  auto malformed_relay = [&](const std::string& relay) {
    return !engine.relays().contains(relay) && !NormalizeRelayId(relay).ok();
  };
  const bool malformed = std::visit(
      Overloaded{
          [&](const BidSeen& bid) {
            return bid.builder == kSelfBuild ||
                   (!bid.relay.empty() && malformed_relay(bid.relay)) ||
                   (!bid.pubkey.empty() && bid.pubkey.size() != bounds::kPubkeyBytes);
          },
          [&](const PayloadMissing& missing) {
            return missing.builder == kSelfBuild || !std::isfinite(missing.attested_fraction) ||
                   missing.attested_fraction < 0 || missing.attested_fraction > 1;
          },
          [&](const PayloadDelivered& delivered) { return delivered.builder == kSelfBuild; },
          [&](const BlocksSeen&) { return false; },
          [&](const Finalized& finalized) {
            return finalized.epoch > EpochOf(observation.slot, config.chain);
          },
          [&](const BuilderExited& exited) { return exited.builder == kSelfBuild; },
          [&](const RelayRevealMissing& missing) { return !NormalizeRelayId(missing.relay).ok(); },
      },
      observation.event);
  return malformed ? Expect::kInvalid : Expect::kUnknown;
}

// ---------------------------------------------------------------------------------------------
// Versions and contracts

std::string EngineChecker::CheckVersions(Engine& engine, const EngineStep& step,
                                         const StepResult& result,
                                         uint64_t version_before_refresh) {
  const Policy& before = previous_policy_;
  const Policy& after = engine.policy();
  if (step.kind == EngineStep::Kind::kAdvance) {
    if (result.version_after_action != before.version + (result.changed ? 1 : 0)) {
      return absl::StrCat("Advance returned ", result.changed, " but the version went from ",
                          before.version, " to ", result.version_after_action);
    }
  } else if (result.version_after_action != before.version) {
    return absl::StrCat("the version changed from ", before.version, " to ",
                        result.version_after_action, " without a refresh");
  }
  if (after.version != version_before_refresh + (result.refreshed ? 1 : 0)) {
    return absl::StrCat("RefreshPolicy returned ", result.refreshed, " but the version went from ",
                        version_before_refresh, " to ", after.version);
  }
  // A new version iff the decisions changed (over the whole step: the call, then the refresh).
  const bool new_version = after.version != before.version;
  if (new_version == before.SameDecisions(after)) {
    return absl::StrCat("the version went from ", before.version, " to ", after.version,
                        " but SameDecisions(previous) is ", before.SameDecisions(after));
  }
  if (after.version < max_version_) {
    return absl::StrCat("the version went back from ", max_version_, " to ", after.version);
  }
  max_version_ = after.version;
  if (new_version && after.computed_at_slot != engine.current_slot()) {
    return absl::StrCat("a new version computed at slot ", after.computed_at_slot,
                        ", the current slot is ", engine.current_slot());
  }
  // Nothing happened since the refresh: another refresh must not publish anything. (Now and
  // then only: a refresh costs as much as the rest of the step.)
  if (steps_ % 10 == 0 && engine.RefreshPolicy()) {
    return "a second RefreshPolicy() right after the first published a new version";
  }
  return "";
}

std::string EngineChecker::CheckContract(const Engine& engine, const EngineStep& step,
                                         EngineStep::Expect expect, const StepResult& result,
                                         const std::string& fingerprint_before,
                                         const Config* config_before) const {
  using Expect = EngineStep::Expect;
  const Policy& before = previous_policy_;
  const Policy& after = engine.policy();
  const absl::StatusCode code = result.status.code();
  // A call that was refused, ignored as a replay or had no effect changed nothing the policy
  // is made of, so the refresh after it has nothing to publish.
  if (result.refreshed && (!result.status.ok() || result.outcome == ObserveOutcome::kDuplicate ||
                           result.outcome == ObserveOutcome::kNoEffect)) {
    return absl::StrCat("a call that changed nothing (", DescribeResult(result),
                        ") was followed by a new policy version: ", after.reason);
  }
  switch (step.kind) {
    case EngineStep::Kind::kObserve: {
      const bool refused = !result.status.ok() || (result.outcome.has_value() &&
                                                   *result.outcome == ObserveOutcome::kDuplicate);
      const Event& event = step.observation.event;
      switch (expect) {
        case Expect::kDuplicate:
          if (!result.outcome.has_value() || *result.outcome != ObserveOutcome::kDuplicate) {
            return absl::StrCat("a replayed sequence number was not a duplicate: ",
                                DescribeResult(result));
          }
          break;
        case Expect::kOutOfRange:
          if (code != absl::StatusCode::kOutOfRange) {
            return absl::StrCat("an observation outside [", engine.current_slot(), " - ",
                                engine.config().amendment_window_slots, ", ", engine.current_slot(),
                                " + ", engine.config().max_future_slots,
                                "] was not OUT_OF_RANGE: ", DescribeResult(result));
          }
          break;
        case Expect::kInvalid:
          if (code != absl::StatusCode::kInvalidArgument) {
            return absl::StrCat("a malformed observation was not INVALID_ARGUMENT: ",
                                DescribeResult(result));
          }
          break;
        case Expect::kAccepted:
        case Expect::kUnknown: {
          // The only refusal of a well-formed, in-range observation: the tracked-builders cap
          // is full of active bans. Without the caller's word that it is well formed, a report
          // may also contradict an earlier one about the same root (INVALID_ARGUMENT), and a
          // failure report may find the votes cap full.
          const bool exhausted = code == absl::StatusCode::kResourceExhausted &&
                                 (std::holds_alternative<PayloadMissing>(event) ||
                                  (expect == Expect::kUnknown && IsFailureReport(event)));
          const bool contradicts =
              expect == Expect::kUnknown && code == absl::StatusCode::kInvalidArgument &&
              (IsFailureReport(event) || std::holds_alternative<PayloadDelivered>(event));
          if (!result.status.ok() && !exhausted && !contradicts) {
            return absl::StrCat("a valid observation was refused: ", DescribeResult(result));
          }
          if (result.outcome == ObserveOutcome::kDuplicate) {
            return "a fresh sequence number was taken for a duplicate";
          }
          break;
        }
      }
      if (std::string recorded = CheckRecorded(engine, event, result); !recorded.empty()) {
        return recorded;
      }
      if (refused && EngineFingerprint(engine, /*with_sequences=*/false) != fingerprint_before) {
        return absl::StrCat("a refused observation changed the engine's state: ",
                            DescribeResult(result));
      }
      if (const auto* bid = std::get_if<BidSeen>(&event); bid != nullptr && !refused) {
        return CheckKey(engine, *bid);
      }
      return "";
    }
    case EngineStep::Kind::kBan: {
      const bool valid =
          step.builder != kSelfBuild && !step.reason.empty() &&
          (!step.until_epoch.has_value() || *step.until_epoch > engine.current_epoch());
      if (valid != result.status.ok() || (!valid && code != absl::StatusCode::kInvalidArgument)) {
        return absl::StrCat("BanBuilder answered ", result.status.ToString());
      }
      if (valid) {
        auto ban = after.banned_builders.find(step.builder);
        if (ban == after.banned_builders.end() || ban->second.kind == BanKind::kCollateral) {
          return "an operator ban is not in the policy as a failure or operator ban";
        }
      }
      return "";
    }
    case EngineStep::Kind::kUnban: {
      auto was = before.banned_builders.find(step.builder);
      const std::vector<BuilderIndex>& blacklist = engine.config().blacklisted_builders;
      if (std::find(blacklist.begin(), blacklist.end(), step.builder) != blacklist.end()) {
        if (code != absl::StatusCode::kFailedPrecondition) {
          return absl::StrCat("unbanning the configured blacklist answered ",
                              result.status.ToString());
        }
        return "";
      }
      if (code == absl::StatusCode::kNotFound && was != before.banned_builders.end()) {
        return absl::StrCat("UnbanBuilder said NOT_FOUND for a builder banned as ",
                            BanKindName(was->second.kind));
      }
      // Banned only as a member of a banned relay: as collateral, or as the member of a relay the
      // operator banned.
      const bool through_operator_relay = ServedByOperatorBannedRelay(engine, step.builder);
      if (code == absl::StatusCode::kFailedPrecondition &&
          (was == before.banned_builders.end() ||
           (was->second.kind != BanKind::kCollateral &&
            !(was->second.kind == BanKind::kOperator && through_operator_relay)))) {
        return "UnbanBuilder said FAILED_PRECONDITION for a builder not banned through a relay";
      }
      if (result.status.ok()) {
        auto now = after.banned_builders.find(step.builder);
        if (now != after.banned_builders.end() && now->second.kind != BanKind::kCollateral &&
            !(now->second.kind == BanKind::kOperator && through_operator_relay)) {
          return absl::StrCat("after UnbanBuilder the builder is still banned as ",
                              BanKindName(now->second.kind));
        }
        if (engine.builders().contains(step.builder)) {
          return "after UnbanBuilder the builder still has a failure record";
        }
      }
      return "";
    }
    case EngineStep::Kind::kSetBuilderTrust:
      if (step.builder == kSelfBuild) {
        return code == absl::StatusCode::kInvalidArgument
                   ? ""
                   : absl::StrCat("trusting the self-build index answered ",
                                  result.status.ToString());
      }
      if (!result.status.ok()) return result.status.ToString();
      if (after.trusted_builders.contains(step.builder) != step.trusted) {
        return "SetBuilderTrust is not reflected in policy.trusted_builders";
      }
      return "";
    case EngineStep::Kind::kSetRelayTrust: {
      absl::StatusOr<std::string> id = NormalizeRelayId(step.relay);
      if (!id.ok()) {
        return code == absl::StatusCode::kInvalidArgument
                   ? ""
                   : absl::StrCat("trusting a malformed relay answered ", result.status.ToString());
      }
      if (!result.status.ok()) return result.status.ToString();
      if (after.trusted_relays.contains(*id) != step.trusted) {
        return "SetRelayTrust is not reflected in policy.trusted_relays";
      }
      return "";
    }
    case EngineStep::Kind::kReset: {
      if (!engine.builders().empty()) return "failure records survived Reset()";
      for (const auto& [builder, ban] : after.banned_builders) {
        if (ban.kind != BanKind::kOperator) {
          return absl::StrCat("builder ", builder, " is banned as ", BanKindName(ban.kind),
                              " right after Reset()");
        }
      }
      for (const auto& [relay, ban] : after.banned_relays) {
        if (ban.kind != BanKind::kOperator) {
          return absl::StrCat("relay ", relay, " is banned as ", BanKindName(ban.kind),
                              " right after Reset()");
        }
      }
      if (after.missed_slots.latched) return "the missed-slot latch survived Reset()";
      return "";
    }
    case EngineStep::Kind::kBanRelay: {
      absl::StatusOr<std::string> id = NormalizeRelayId(step.relay);
      const Epoch now = engine.current_epoch();
      const bool valid =
          id.ok() && !step.reason.empty() && step.reason.size() <= bounds::kMaxReasonBytes &&
          (!step.until_epoch.has_value() ||
           (*step.until_epoch > now && *step.until_epoch - now <= bounds::kMaxPeriodEpochs));
      if (valid && code == absl::StatusCode::kResourceExhausted) {
        // Only a new relay beyond the bound.
        if (relay_ban_before_.has_value() ||
            engine.operator_relay_bans().size() < bounds::kMaxOperatorRelayBans) {
          return absl::StrCat("BanRelay answered ", result.status.ToString(), " with ",
                              engine.operator_relay_bans().size(), " relays banned");
        }
        return "";
      }
      if (valid != result.status.ok() || (!valid && code != absl::StatusCode::kInvalidArgument)) {
        return absl::StrCat("BanRelay answered ", result.status.ToString());
      }
      if (!valid) return "";
      auto ban = after.banned_relays.find(*id);
      if (ban == after.banned_relays.end()) return "a relay banned by the operator is not banned";
      if (!ban->second.until_reset &&
          (!step.until_epoch.has_value() || ban->second.until_epoch < *step.until_epoch)) {
        return absl::StrCat("relay ", *id, " is banned until epoch ", ban->second.until_epoch,
                            ", before the operator's ban ends");
      }
      return "";
    }
    case EngineStep::Kind::kUnbanRelay: {
      absl::StatusOr<std::string> id = NormalizeRelayId(step.relay);
      if (!id.ok()) {
        return code == absl::StatusCode::kInvalidArgument
                   ? ""
                   : absl::StrCat("unbanning a malformed relay answered ",
                                  result.status.ToString());
      }
      if (configured_relay_blacklist_.contains(*id)) {
        return code == absl::StatusCode::kFailedPrecondition
                   ? ""
                   : absl::StrCat("unbanning a relay of the configured blacklist answered ",
                                  result.status.ToString());
      }
      if (relay_ban_before_.has_value() != result.status.ok() ||
          (!result.status.ok() && code != absl::StatusCode::kNotFound)) {
        return absl::StrCat("UnbanRelay answered ", result.status.ToString(), " for a relay ",
                            relay_ban_before_.has_value() ? "" : "not ", "banned by the operator");
      }
      if (ActiveRelayBan(engine, *id) != nullptr) return "UnbanRelay left the operator's ban";
      auto ban = after.banned_relays.find(*id);
      if (ban != after.banned_relays.end() && ban->second.kind != BanKind::kFailure) {
        return absl::StrCat("after UnbanRelay relay ", *id, " is still banned as ",
                            BanKindName(ban->second.kind));
      }
      return "";
    }
    case EngineStep::Kind::kReconfigure: {
      const absl::Status valid = ValidateConfig(step.config);
      if (valid.ok() != result.status.ok() ||
          (!valid.ok() && code != absl::StatusCode::kInvalidArgument)) {
        return absl::StrCat("Reconfigure answered ", result.status.ToString(),
                            " for a configuration ValidateConfig answers ", valid.ToString());
      }
      if (!result.status.ok() &&
          (EngineFingerprint(engine, /*with_sequences=*/false) != fingerprint_before ||
           (config_before != nullptr && !(config_before->chain == engine.config().chain)))) {
        return "a refused configuration changed the engine";
      }
      if (result.status.ok()) {
        // Lower caps evict at once, down to what active bans and failing members keep.
        const Epoch now = engine.current_epoch();
        size_t banned = 0;
        for (const auto& [builder, record] : engine.builders()) {
          if (record.failures.Banned(now)) ++banned;
        }
        if (engine.builders().size() >
            std::max<size_t>(engine.config().max_tracked_builders, banned)) {
          return absl::StrCat("Reconfigure left ", engine.builders().size(),
                              " builder records: above max_tracked_builders and the ", banned,
                              " banned");
        }
        for (const auto& [id, relay] : engine.relays()) {
          size_t failing = 0;
          for (const auto& [member, seen] : relay.learned) {
            auto record = engine.builders().find(member);
            if (record != engine.builders().end() && record->second.failures.failed > 0) {
              ++failing;
            }
          }
          if (relay.learned.size() >
              std::max<size_t>(engine.config().max_indices_per_relay, failing)) {
            return absl::StrCat("Reconfigure left relay ", id, " with ", relay.learned.size(),
                                " learned members: above max_indices_per_relay");
          }
        }
      }
      return "";
    }
    case EngineStep::Kind::kAdvance:
      return "";
  }
  return "";
}

// An accepted bid and the index it names: a key other than the remembered one leaves the index
// without a record and without the relays of its previous owner, whichever came first, the key
// or the failure; a bid without a key changes neither the key nor the record.
std::string EngineChecker::CheckKey(const Engine& engine, const BidSeen& bid) const {
  if (!key_before_.has_value()) return "";
  const KeyBefore& before = *key_before_;
  auto key = engine.builder_keys().find(bid.builder);
  const bool has_record = engine.builders().contains(bid.builder);
  if (bid.pubkey.empty()) {
    const bool same_key = key == engine.builder_keys().end()
                              ? !before.key.has_value()
                              : before.key.has_value() && *before.key == key->second;
    if (!same_key || has_record != before.had_record) {
      return absl::StrCat("a bid without a key changed builder ", bid.builder, "'s ",
                          same_key ? "record" : "remembered key");
    }
    return "";
  }
  if (before.key.has_value() && before.key->pubkey != bid.pubkey) {
    if (has_record) {
      return absl::StrCat("builder ", bid.builder,
                          " still has a record after a bid under a key other than the "
                          "remembered one");
    }
    absl::StatusOr<std::string> through =
        bid.relay.empty() ? absl::StatusOr<std::string>("") : NormalizeRelayId(bid.relay);
    for (const auto& [id, relay] : engine.relays()) {
      if (through.ok() && id == *through) continue;
      if (relay.learned.contains(bid.builder)) {
        return absl::StrCat("builder ", bid.builder, " is still a learned member of ", id,
                            " after a bid under a key other than the remembered one");
      }
    }
  } else if (has_record != before.had_record) {
    return absl::StrCat("a bid under builder ", bid.builder, "'s ",
                        before.key.has_value() ? "remembered" : "first", " key ",
                        has_record ? "made" : "dropped", " its record");
  }
  // A known index's key is always replaced; a new one's only when the table had room.
  if (key != engine.builder_keys().end() ? key->second.pubkey != bid.pubkey
                                         : before.key.has_value()) {
    return absl::StrCat("after a bid of builder ", bid.builder,
                        " the remembered key is not the bid's");
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// Membership, trust and modes

void EngineChecker::ComputeServing(const Engine& engine) {
  serving_.clear();
  const Epoch now = engine.current_epoch();
  const uint64_t ttl = engine.config().relay_association_ttl_epochs;
  for (const auto& [id, relay] : engine.relays()) {
    for (const auto& [builder, epoch] : relay.learned) {
      if (epoch + ttl > now) serving_[builder].push_back(&id);
    }
    auto configured = configured_relays_.find(id);
    if (configured == configured_relays_.end()) continue;
    for (BuilderIndex builder : configured->second) {
      auto learned = relay.learned.find(builder);
      if (learned != relay.learned.end() && learned->second + ttl > now) continue;
      std::vector<const std::string*>& relays = serving_[builder];
      // A configuration may list an index twice for one relay.
      if (relays.empty() || relays.back() != &id) relays.push_back(&id);
    }
  }
}

std::vector<std::string> EngineChecker::Serving(BuilderIndex builder) const {
  std::vector<std::string> ids;
  auto it = serving_.find(builder);
  if (it == serving_.end()) return ids;
  for (const std::string* id : it->second) ids.push_back(*id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::string EngineChecker::CheckServing(const Engine& engine) const {
  absl::flat_hash_set<BuilderIndex> builders;
  for (BuilderIndex builder = 0; builder <= options_.probe_max; ++builder) builders.insert(builder);
  for (const auto& [builder, relays] : serving_) builders.insert(builder);
  for (const auto& [builder, record] : engine.builders()) builders.insert(builder);
  for (const auto& [builder, ban] : engine.policy().banned_builders) builders.insert(builder);
  for (BuilderIndex builder : builders) {
    const std::vector<std::string> expected = Serving(builder);
    const std::vector<std::string> actual = engine.RelaysServing(builder);
    if (actual != expected) {
      return absl::StrCat("RelaysServing(", builder, ") is [", absl::StrJoin(actual, ", "),
                          "], the relays' learned and configured members say [",
                          absl::StrJoin(expected, ", "), "]");
    }
  }
  return "";
}

// Trusted: an explicit SetBuilderTrust wins (the engine treats a relay's trust as
// configuration, which the override overrides); otherwise listed as trusted in the policy, or
// served by a trusted relay.
bool EngineChecker::Trusted(const Engine& engine, BuilderIndex builder) const {
  auto override_it = trust_overrides_.find(builder);
  if (override_it != trust_overrides_.end()) return override_it->second;
  const Policy& policy = engine.policy();
  if (policy.trusted_builders.contains(builder)) return true;
  auto serving = serving_.find(builder);
  if (serving == serving_.end()) return false;
  return std::any_of(serving->second.begin(), serving->second.end(),
                     [&](const std::string* id) { return policy.trusted_relays.contains(*id); });
}

bool EngineChecker::OperatorBansRelay(const Engine& engine, const std::string& id) const {
  return configured_relay_blacklist_.contains(id) || ActiveRelayBan(engine, id) != nullptr;
}

bool EngineChecker::ServedByOperatorBannedRelay(const Engine& engine, BuilderIndex builder) const {
  auto serving = serving_.find(builder);
  if (serving == serving_.end()) return false;
  return std::any_of(serving->second.begin(), serving->second.end(),
                     [&](const std::string* id) { return OperatorBansRelay(engine, *id); });
}

// SELF_BUILD, TRUSTED_ONLY or ALL_BUILDERS, from the builders banned by their own failures.
std::string EngineChecker::CheckMode(const Engine& engine) const {
  const Policy& policy = engine.policy();
  const Config& config = engine.config();
  const Epoch now = engine.current_epoch();
  size_t own = 0;
  size_t own_untrusted = 0;
  for (const auto& [builder, record] : engine.builders()) {
    if (!record.failures.Banned(now)) continue;
    ++own;
    if (!Trusted(engine, builder)) ++own_untrusted;
  }
  const bool missed = policy.missed_slots.active && policy.missed_slots.tripped;
  const Mode expected = own >= config.critical_failed_builders || missed ? Mode::kSelfBuild
                        : own_untrusted >= config.critical_failed_untrusted_builders
                            ? Mode::kTrustedOnly
                            : Mode::kAllBuilders;
  if (policy.mode != expected) {
    return absl::StrCat("mode is ", ModeName(policy.mode), ", expected ", ModeName(expected), ": ",
                        own, " builders banned by their own failures, ", own_untrusted,
                        " of them untrusted, missed-slot breaker ",
                        missed ? "tripped" : "not tripped");
  }
  if ((policy.mode == Mode::kAllBuilders) != policy.mode_reason.empty()) {
    return absl::StrCat("mode ", ModeName(policy.mode), " with reason '", policy.mode_reason, "'");
  }
  // Pre-Gloas the breaker is active when a rule is on or the latch holds (which outlives a
  // change of rules); from the fork on, never.
  const bool expected_active =
      !IsGloas(now, config.chain) &&
      (AnyMissedSlotRule(config.missed_slots) || policy.missed_slots.latched);
  if (policy.missed_slots.active != expected_active) {
    return absl::StrCat("missed_slots.active is ", policy.missed_slots.active, " at epoch ", now,
                        " with the Gloas fork at ", config.chain.gloas_fork_epoch,
                        " and missed-slot rules '", config.missed_slots.preset, "'");
  }
  return "";
}

// Every ban in the policy has its cause in the state, and no cause is missing from the policy.
std::string EngineChecker::CheckBans(const Engine& engine) const {
  if (steps_ % 25 == 0) {
    if (std::string problem = CheckServing(engine); !problem.empty()) return problem;
  }
  const Policy& policy = engine.policy();
  const Epoch now = engine.current_epoch();
  for (const auto& [builder, ban] : policy.banned_builders) {
    switch (ban.kind) {
      case BanKind::kFailure: {
        auto record = engine.builders().find(builder);
        if (record == engine.builders().end() || !record->second.failures.Banned(now)) {
          return absl::StrCat("builder ", builder,
                              " has a failure ban but no record banned at epoch ", now);
        }
        break;
      }
      case BanKind::kCollateral: {
        // Collateral lives and dies with a banned relay that serves the builder.
        std::optional<Epoch> longest;
        auto serving = serving_.find(builder);
        if (serving != serving_.end()) {
          for (const std::string* id : serving->second) {
            auto relay_ban = policy.banned_relays.find(*id);
            if (relay_ban == policy.banned_relays.end()) continue;
            longest = std::max(longest.value_or(0), relay_ban->second.until_reset
                                                        ? kFarFutureEpoch
                                                        : relay_ban->second.until_epoch);
          }
        }
        if (!longest.has_value()) {
          return absl::StrCat("builder ", builder,
                              " has a collateral ban but no banned relay serves it");
        }
        if (ban.until_reset || ban.until_epoch > *longest) {
          return absl::StrCat("builder ", builder, "'s collateral ban lasts until ",
                              ban.until_reset ? "reset" : absl::StrCat(ban.until_epoch),
                              ", beyond its relays' bans (", *longest, ")");
        }
        break;
      }
      case BanKind::kOperator: {
        const std::vector<BuilderIndex>& blacklist = engine.config().blacklisted_builders;
        auto own = engine.operator_bans().find(builder);
        const bool own_ban =
            own != engine.operator_bans().end() &&
            (!own->second.until_epoch.has_value() || *own->second.until_epoch > now);
        if (!own_ban && std::find(blacklist.begin(), blacklist.end(), builder) == blacklist.end() &&
            !ServedByOperatorBannedRelay(engine, builder)) {
          return absl::StrCat("builder ", builder, " has an operator ban but no operator cause: ",
                              "not listed, not banned by the operator, and no relay the operator ",
                              "banned serves it");
        }
        break;
      }
    }
    if (ban.until_reset ? ban.until_epoch != 0 : ban.until_epoch <= now) {
      return absl::StrCat("builder ", builder, "'s ban has until_epoch ", ban.until_epoch,
                          ban.until_reset ? " with until_reset" : ", not after the epoch ",
                          ban.until_reset ? "" : absl::StrCat(now));
    }
    if (policy.IsAllowed(builder, "")) {
      return absl::StrCat("banned builder ", builder, " is allowed over P2P");
    }
    // One relay per step, in turn: all of them every step would cost more than it finds.
    if (!probe_relays_.empty()) {
      const std::string& relay = probe_relays_[steps_ % probe_relays_.size()];
      if (policy.IsAllowed(builder, relay)) {
        return absl::StrCat("banned builder ", builder, " is allowed through ", relay);
      }
    }
  }
  for (const auto& [builder, record] : engine.builders()) {
    if (!record.failures.Banned(now)) continue;
    auto ban = policy.banned_builders.find(builder);
    if (ban == policy.banned_builders.end() || ban->second.kind != BanKind::kFailure) {
      return absl::StrCat("builder ", builder, "'s record is banned at epoch ", now,
                          " but the policy does not ban it for its failures");
    }
  }
  for (BuilderIndex builder : engine.config().blacklisted_builders) {
    auto blacklisted = policy.banned_builders.find(builder);
    if (blacklisted == policy.banned_builders.end() || !blacklisted->second.until_reset) {
      return absl::StrCat("builder ", builder,
                          " of the configured blacklist is not banned until reset");
    }
  }
  // A relay the operator bans is banned, and so is every builder it serves.
  for (const auto& [id, operator_ban] : engine.operator_relay_bans()) {
    if (ActiveRelayBan(engine, id) == nullptr) continue;
    auto ban = policy.banned_relays.find(id);
    if (ban == policy.banned_relays.end()) {
      return absl::StrCat("relay ", id, " is banned by the operator but not in the policy");
    }
    if (!ban->second.until_reset && (!operator_ban.until_epoch.has_value() ||
                                     ban->second.until_epoch < *operator_ban.until_epoch)) {
      return absl::StrCat("relay ", id, "'s ban ends before the operator's");
    }
  }
  for (const std::string& relay : configured_relay_blacklist_) {
    auto ban = policy.banned_relays.find(relay);
    if (ban == policy.banned_relays.end() || !ban->second.until_reset) {
      return absl::StrCat("relay ", relay,
                          " of the configured blacklist is not banned until reset");
    }
  }
  for (const auto& [relay, ban] : policy.banned_relays) {
    if (ban.kind == BanKind::kOperator && !OperatorBansRelay(engine, relay)) {
      return absl::StrCat("relay ", relay, " has an operator ban but the operator does not ban it");
    }
  }
  for (const auto& [builder, relays] : serving_) {
    if (!ServedByOperatorBannedRelay(engine, builder)) continue;
    auto ban = policy.banned_builders.find(builder);
    if (ban == policy.banned_builders.end() || ban->second.kind == BanKind::kCollateral) {
      return absl::StrCat("builder ", builder, " is served by a relay the operator banned but is ",
                          ban == policy.banned_builders.end() ? "not banned" : "only collateral");
    }
  }
  if (!policy.IsAllowed(kSelfBuild, "")) return "self-building is refused";
  for (const auto& [relay, ban] : policy.banned_relays) {
    for (BuilderIndex b : kBannedRelayProbes) {
      if (policy.IsAllowed(b, relay)) {
        return absl::StrCat("a bid through banned relay ", relay, " is allowed");
      }
    }
  }
  if (policy.mode == Mode::kSelfBuild) {
    // Through a trusted relay, if there is one: not even those bids are taken.
    std::string relay = probe_relays_.empty() ? "" : probe_relays_.front();
    for (const std::string& id : probe_relays_) {
      if (policy.trusted_relays.contains(id)) {
        relay = id;
        break;
      }
    }
    for (BuilderIndex b = 0; b <= options_.probe_max; ++b) {
      if (policy.IsAllowed(b, "") || policy.IsAllowed(b, relay)) {
        return absl::StrCat("builder ", b, " is allowed in SELF_BUILD");
      }
    }
  } else if (policy.mode == Mode::kTrustedOnly) {
    for (BuilderIndex b = 0; b <= options_.probe_max; ++b) {
      if (policy.banned_builders.contains(b)) continue;
      if (policy.IsAllowed(b, "") != policy.trusted_builders.contains(b)) {
        return absl::StrCat("in TRUSTED_ONLY, P2P bid of builder ", b,
                            " allowed: ", policy.IsAllowed(b, ""));
      }
    }
  }
  // "When every member of R has failed = 0, R and all its collateral bans are lifted": a relay
  // banned for a member's failure still serves a member whose record has failed > 0.
  absl::flat_hash_set<const std::string*> culprit_relays;
  for (const auto& [builder, record] : engine.builders()) {
    if (record.failures.failed == 0) continue;
    auto serving = serving_.find(builder);
    if (serving == serving_.end()) continue;
    culprit_relays.insert(serving->second.begin(), serving->second.end());
  }
  for (const auto& [id, relay] : engine.relays()) {
    auto ban = policy.banned_relays.find(id);
    if (ban == policy.banned_relays.end() || relay.failures.Banned(now) ||
        culprit_relays.contains(&id) || ban->second.kind == BanKind::kOperator) {
      continue;
    }
    return absl::StrCat("relay ", id, " is banned until epoch ", ban->second.until_epoch, " for '",
                        ban->second.reason,
                        "', but none of the builders it serves has failed (failed > 0); ",
                        "its members stay banned as collateral");
  }
  return "";
}

// Memory caps, relay identifiers and the self-build index.
std::string EngineChecker::CheckCaps(const Engine& engine) const {
  const Policy& policy = engine.policy();
  const Config& config = engine.config();
  if (engine.builders().contains(kSelfBuild)) return "the self-build index has a record";
  if (policy.banned_builders.contains(kSelfBuild)) return "the self-build index is banned";
  for (const auto& [builder, key] : engine.builder_keys()) {
    if (builder == kSelfBuild) return "the self-build index has a remembered key";
    if (key.pubkey.size() != bounds::kPubkeyBytes) {
      return absl::StrCat("builder ", builder, "'s remembered key is ", key.pubkey.size(),
                          " bytes");
    }
  }
  if (engine.builder_keys().size() > keys_allowance_) {
    return absl::StrCat(engine.builder_keys().size(), " keys remembered, max_tracked_builders ",
                        config.max_tracked_builders, " (", keys_allowance_,
                        " held when the cap was set)");
  }
  if (engine.builders().size() > builders_allowance_) {
    return absl::StrCat(engine.builders().size(), " builders tracked, max_tracked_builders ",
                        config.max_tracked_builders, " (", builders_allowance_,
                        " held when the cap was set)");
  }
  if (engine.relays().size() > relays_allowance_) {
    return absl::StrCat(engine.relays().size(), " relays tracked, max_relays ", config.max_relays,
                        " (", relays_allowance_, " held when the cap was set)");
  }
  for (const auto& [id, relay] : engine.relays()) {
    auto allowance = learned_allowance_.find(id);
    if (relay.learned.size() > config.max_indices_per_relay &&
        (allowance == learned_allowance_.end() || relay.learned.size() > allowance->second)) {
      return absl::StrCat("relay ", id, " has ", relay.learned.size(),
                          " learned indices, max_indices_per_relay ", config.max_indices_per_relay);
    }
  }
  // Every spelling of an endpoint must land on its one identifier.
  if (!bad_relay_id_.empty()) {
    return absl::StrCat("relay '", bad_relay_id_, "' is not a normalized endpoint identifier");
  }
  for (const auto& [id, indices] : configured_relays_) {
    if (!engine.relays().contains(id)) return absl::StrCat("configured relay ", id, " was dropped");
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// Export/Import

void EngineChecker::StartShadow(const Engine& engine) {
  absl::StatusOr<Engine> copy = Engine::Import(engine.config(), engine.Export());
  std::string problem;
  if (!copy.ok()) {
    problem = absl::StrCat("Import(Export()) failed: ", copy.status().ToString());
  } else if (copy->policy().version != engine.policy().version ||
             !copy->policy().SameDecisions(engine.policy())) {
    problem = absl::StrCat("the imported policy differs: ", DescribeBans(copy->policy()), " vs ",
                           DescribeBans(engine.policy()));
  } else if (EngineFingerprint(*copy) != EngineFingerprint(engine)) {
    problem = "the imported engine's state differs from the exported one";
  }
  if (!problem.empty()) {
    Check(kExportImport, problem);
    return;
  }
  shadow_.emplace(*std::move(copy));
  lockstep_left_ = options_.lockstep_steps;
  ++imports_;
}

std::string EngineChecker::StepShadow(const Engine& engine, const EngineStep& step,
                                      const StepResult& result) {
  Engine& shadow = *shadow_;
  const StepResult shadow_result = ApplyStep(shadow, step);
  std::string problem;
  if (shadow_result.status != result.status || shadow_result.outcome != result.outcome ||
      shadow_result.changed != result.changed || shadow_result.refreshed != result.refreshed) {
    problem = absl::StrCat("the imported engine answered ", DescribeResult(shadow_result),
                           ", the original ", DescribeResult(result));
  } else if (shadow.policy().version != engine.policy().version ||
             !shadow.policy().SameDecisions(engine.policy())) {
    problem = absl::StrCat("the imported engine's policy diverged (",
                           options_.lockstep_steps - lockstep_left_ + 1,
                           " steps after import):\n  imported ", DescribeBans(shadow.policy()),
                           "\n  original ", DescribeBans(engine.policy()));
  } else if (lockstep_left_ == 1 && EngineFingerprint(shadow) != EngineFingerprint(engine)) {
    // The states are compared once, at the end: the policies are compared at every step.
    problem = absl::StrCat("the imported engine's state diverged (",
                           options_.lockstep_steps - lockstep_left_ + 1, " steps after import):\n",
                           "imported:\n", EngineFingerprint(shadow), "\noriginal:\n",
                           EngineFingerprint(engine));
  }
  if (--lockstep_left_ <= 0 || !problem.empty()) shadow_.reset();
  return problem;
}

}  // namespace breaker::core
