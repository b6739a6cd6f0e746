#include "core/config.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/input_bounds.h"
#include "core/relay_id.h"

namespace breaker::core {

bool operator==(const MissedSlotRules& a, const MissedSlotRules& b) {
  return a.preset == b.preset && a.latched_rule == b.latched_rule &&
         a.max_allowed_missing_slots == b.max_allowed_missing_slots &&
         a.max_consecutive_missed_slots == b.max_consecutive_missed_slots &&
         a.max_missed_slots_in_window == b.max_missed_slots_in_window &&
         a.window_slots == b.window_slots &&
         a.max_epochs_since_finalization == b.max_epochs_since_finalization;
}

absl::StatusOr<MissedSlotRules> MissedSlotRulesForPreset(absl::string_view preset) {
  // Every preset starts from "no rule" and turns on only its own, so that no default of the
  // struct leaks into a preset that does not mention it.
  MissedSlotRules rules;
  rules.preset = std::string(preset);
  rules.latched_rule = false;
  rules.max_allowed_missing_slots = 0;
  rules.max_consecutive_missed_slots = 0;
  rules.max_missed_slots_in_window = 0;
  rules.window_slots = 32;
  rules.max_epochs_since_finalization = 0;

  // Each client's own check, written in the engine's "count exceeds the value" form over the
  // slots before the proposal slot (docs/semantics.md, "Presets").
  if (preset == "mevboost") {
    rules.latched_rule = true;
    rules.max_allowed_missing_slots = 5;
  } else if (preset == "prysm") {
    // proposal slot - highest block slot >= 3: slots p-2 and p-1 both empty.
    rules.max_consecutive_missed_slots = 1;
    // 32 - slots with a block in [p-32, p-1] >= 5.
    rules.max_missed_slots_in_window = 4;
  } else if (preset == "lighthouse") {
    // (p-1) - head slot > 3.
    rules.max_consecutive_missed_slots = 3;
    // Skipped slots in [p-32, p-1] > 8.
    rules.max_missed_slots_in_window = 8;
    // epoch(p) - finalized epoch > 3.
    rules.max_epochs_since_finalization = 3;
  } else if (preset == "teku") {
    // (p-1) - parent block slot > 3.
    rules.max_consecutive_missed_slots = 3;
    // Fewer than 27 distinct block roots in [p-32, p-1]: more than 5 empty slots in
    // [p-31, p-1], since the root at p-32 counts whether or not it is that slot's block.
    rules.max_missed_slots_in_window = 5;
    rules.window_slots = 31;
  } else if (preset != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown missed-slot preset \"", preset,
                     "\"; known presets: mevboost, prysm, lighthouse, teku, off"));
  }
  return rules;
}

namespace {

// "<field> is <value>; accepted: <accepted>", the shape of every message below.
template <typename T>
absl::Status Invalid(absl::string_view field, const T& value, absl::string_view accepted) {
  return absl::InvalidArgumentError(absl::StrCat(field, " is ", value, "; accepted: ", accepted));
}

template <typename T>
absl::Status CheckAtLeastOne(absl::string_view field, T value) {
  if (value >= 1) return absl::OkStatus();
  return Invalid(field, value, "at least 1");
}

template <typename T>
absl::Status CheckRange(absl::string_view field, T value, T min, T max) {
  if (value >= min && value <= max) return absl::OkStatus();
  return Invalid(field, value, absl::StrCat(min, "..", max));
}

// A period in epochs: `min`..kMaxPeriodEpochs, so that no epoch plus a period can wrap.
absl::Status CheckPeriod(absl::string_view field, uint64_t value, uint64_t min) {
  if (value >= min && value <= bounds::kMaxPeriodEpochs) return absl::OkStatus();
  return Invalid(
      field, value,
      absl::StrCat(min, "..", bounds::kMaxPeriodEpochs, " epochs (about 12 years on mainnet)",
                   field == "critical_blacklist_period_epochs"
                       ? "; 0 bans until an operator reset or a delivered payload"
                       : ""));
}

// The self-build index stands for the proposer itself, which the breaker never tracks: listing
// it is a mistake (most likely a -1 that wrapped), not a way to trust or ban self-building.
absl::Status CheckNotSelfBuild(const std::vector<BuilderIndex>& indices, absl::string_view field) {
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] == kSelfBuild) {
      return Invalid(absl::StrCat(field, "[", i, "]"), indices[i],
                     "any builder index but the self-build index 18446744073709551615 "
                     "(kSelfBuild), which is never tracked");
    }
  }
  return absl::OkStatus();
}

// Runs the checks in the order they are written and returns the first failure.
#define BREAKER_RETURN_IF_ERROR(expr)  \
  do {                                 \
    absl::Status status_ = (expr);     \
    if (!status_.ok()) return status_; \
  } while (false)

absl::Status ValidateBuilderLists(const Config& config) {
  BREAKER_RETURN_IF_ERROR(CheckNotSelfBuild(config.trusted_builders, "trusted_builders"));
  BREAKER_RETURN_IF_ERROR(CheckNotSelfBuild(config.blacklisted_builders, "blacklisted_builders"));
  for (size_t r = 0; r < config.relays.size(); ++r) {
    BREAKER_RETURN_IF_ERROR(
        CheckNotSelfBuild(config.relays[r].indices, absl::StrCat("relays[", r, "].indices")));
  }

  // Trusted means listed in trusted_builders or configured for a trusted relay. A trusted
  // index on the blacklist is a contradiction the operator should resolve, not something for
  // the engine to settle silently.
  absl::flat_hash_map<BuilderIndex, std::string> trusted;
  for (size_t i = 0; i < config.trusted_builders.size(); ++i) {
    trusted.try_emplace(config.trusted_builders[i], absl::StrCat("trusted_builders[", i, "]"));
  }
  for (size_t r = 0; r < config.relays.size(); ++r) {
    if (!config.relays[r].trusted) continue;
    const std::vector<BuilderIndex>& indices = config.relays[r].indices;
    for (size_t i = 0; i < indices.size(); ++i) {
      trusted.try_emplace(indices[i],
                          absl::StrCat("relays[", r, "].indices[", i, "] (a trusted relay)"));
    }
  }
  for (size_t i = 0; i < config.blacklisted_builders.size(); ++i) {
    const BuilderIndex index = config.blacklisted_builders[i];
    if (auto it = trusted.find(index); it != trusted.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "blacklisted_builders[", i, "] is ", index, ", which is also trusted as ", it->second,
          "; accepted: an index that is not trusted (remove it from one of the lists)"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateRelays(const Config& config) {
  // Normalized identifier -> position of the relay that first used it.
  absl::flat_hash_map<std::string, size_t> seen;
  for (size_t r = 0; r < config.relays.size(); ++r) {
    const std::string field = absl::StrCat("relays[", r, "].identifier");
    absl::StatusOr<std::string> normalized = NormalizeRelayId(config.relays[r].identifier);
    if (!normalized.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": ", normalized.status().message()));
    }
    auto [it, inserted] = seen.try_emplace(*normalized, r);
    if (!inserted) {
      // Two entries for one endpoint would disagree on its trust and indices.
      return absl::InvalidArgumentError(absl::StrCat(
          field, " is \"", bounds::QuotePrefix(config.relays[r].identifier),
          "\", the same endpoint (", bounds::QuotePrefix(*normalized), ") as relays[", it->second,
          "].identifier \"", bounds::QuotePrefix(config.relays[it->second].identifier),
          "\"; accepted: each endpoint listed once"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateRelayBlacklist(const Config& config) {
  const std::vector<std::string>& blacklist = config.blacklisted_relays;
  BREAKER_RETURN_IF_ERROR(
      bounds::CheckMaxCount("blacklisted_relays", blacklist.size(), bounds::kMaxListedRelays));
  // Normalized identifier -> position of the trusted relay (ValidateRelays has checked that
  // every identifier normalizes).
  absl::flat_hash_map<std::string, size_t> trusted;
  for (size_t r = 0; r < config.relays.size(); ++r) {
    if (!config.relays[r].trusted) continue;
    absl::StatusOr<std::string> id = NormalizeRelayId(config.relays[r].identifier);
    if (id.ok()) trusted.try_emplace(*id, r);
  }
  // Normalized identifier -> position of the entry that first listed it.
  absl::flat_hash_map<std::string, size_t> seen;
  for (size_t i = 0; i < blacklist.size(); ++i) {
    const std::string field = absl::StrCat("blacklisted_relays[", i, "]");
    absl::StatusOr<std::string> id = NormalizeRelayId(blacklist[i]);
    if (!id.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": ", id.status().message()));
    }
    auto [first, inserted] = seen.try_emplace(*id, i);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, " is \"", bounds::QuotePrefix(blacklist[i]), "\", the same endpoint (", *id,
          ") as blacklisted_relays[", first->second, "]; accepted: each endpoint listed once"));
    }
    // As for builders: a trusted relay on the blacklist is a contradiction for the operator to
    // resolve.
    if (auto relay = trusted.find(*id); relay != trusted.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, " is \"", bounds::QuotePrefix(blacklist[i]),
          "\", which is also trusted as relays[", relay->second, "] (the same endpoint, ", *id,
          "); accepted: a relay that is not trusted (remove it from one of the lists)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

size_t WorstCasePolicyBytes(const Config& config) {
  // Protobuf's wire format: a field's tag takes 1 byte (field numbers below 16), a varint at
  // most 10, a length prefix at most 3 (lengths below 2 MiB).
  constexpr size_t kTag = 1, kVarint = 10, kLength = 3;
  constexpr size_t kString = kTag + kLength;  // and the string's bytes
  // Ban{kind, until_epoch, until_reset, reason}.
  constexpr size_t kBan =
      kTag + kVarint + kTag + kVarint + kTag + 1 + kString + bounds::kMaxBanReasonBytes;
  // The longest normalized identifier: the input's bytes, plus "http://" for a bare host.
  constexpr size_t kRelayId = bounds::kMaxRelayIdBytes + 7;
  // BuilderBan{builder_index, ban} and RelayBan{relay, ban}, each a length-delimited entry.
  constexpr size_t kBuilderBan = kString + kTag + kVarint + kString + kBan;
  constexpr size_t kRelayBan = kString + kString + kRelayId + kString + kBan;

  // Every builder a policy can list is tracked, banned by an operator, blacklisted, or a member
  // of a relay (learned, or configured: both at most max_indices_per_relay).
  const size_t relay_members = size_t{config.max_relays} * config.max_indices_per_relay * 2;
  const size_t builders = config.max_tracked_builders + bounds::kMaxOperatorBuilderBans +
                          bounds::kMaxListedBuilders + relay_members;
  // A relay is banned as a record (at most max_relays), or by the operator.
  const size_t relays =
      config.max_relays + bounds::kMaxListedRelays + bounds::kMaxOperatorRelayBans;
  // Trusted: listed, configured for a trusted relay, or overridden.
  const size_t trusted_builders = bounds::kMaxListedBuilders +
                                  size_t{config.max_relays} * config.max_indices_per_relay +
                                  bounds::kMaxBuilderTrustOverrides;
  const size_t trusted_relays = config.max_relays + bounds::kMaxRelayTrustOverrides;

  // version, mode, computed_at_slot and _epoch; mode_reason, reason and missed_slots.rule;
  // missed_slots' flags and counts; fleet_id; the ServerMessage around the policy.
  const size_t fixed = 4 * (kTag + kVarint) + 3 * (kString + bounds::kMaxReasonBytes) + kString +
                       3 * (kTag + 1) + 3 * (kTag + kVarint) + kString + bounds::kMaxFleetIdBytes +
                       kString;
  // BuilderPubkey{builder_index, pubkey}: a key is known only of a tracked builder, and a policy
  // carries a bounded number of them.
  constexpr size_t kBuilderPubkey = kString + kTag + kVarint + kString + bounds::kPubkeyBytes;
  const size_t keys = std::min<size_t>(config.max_tracked_builders, bounds::kMaxPolicyBuilderKeys);
  return fixed + builders * kBuilderBan + relays * kRelayBan + kString +
         trusted_builders * kVarint + trusted_relays * (kString + kRelayId) + keys * kBuilderPubkey;
}

absl::Status ValidateConfig(const Config& config) {
  BREAKER_RETURN_IF_ERROR(ValidateChainSpec(config.chain));

  // --- Per-builder failure tracking ---
  if (config.critical_failures <= config.allowed_failures) {
    return Invalid("critical_failures", config.critical_failures,
                   absl::StrCat("more than allowed_failures (", config.allowed_failures,
                                "); otherwise the first ban would already be critical"));
  }
  BREAKER_RETURN_IF_ERROR(
      CheckPeriod("blacklist_period_epochs", config.blacklist_period_epochs, 1));
  BREAKER_RETURN_IF_ERROR(
      CheckPeriod("critical_blacklist_period_epochs", config.critical_blacklist_period_epochs, 0));
  BREAKER_RETURN_IF_ERROR(CheckPeriod("backoff_period_epochs", config.backoff_period_epochs, 1));
  // Written so that NaN fails too: every comparison with NaN is false.
  if (!(std::isfinite(config.attestation_threshold) && config.attestation_threshold >= 0.0 &&
        config.attestation_threshold < 1.0)) {
    return Invalid("attestation_threshold", config.attestation_threshold,
                   "a fraction in [0, 1); at 1 no block could ever count as a failure");
  }

  // --- Systemic fallback ---
  BREAKER_RETURN_IF_ERROR(
      CheckAtLeastOne("critical_failed_builders", config.critical_failed_builders));
  BREAKER_RETURN_IF_ERROR(CheckAtLeastOne("critical_failed_untrusted_builders",
                                          config.critical_failed_untrusted_builders));

  // --- Operator lists ---
  BREAKER_RETURN_IF_ERROR(bounds::CheckMaxCount("trusted_builders", config.trusted_builders.size(),
                                                bounds::kMaxListedBuilders));
  BREAKER_RETURN_IF_ERROR(bounds::CheckMaxCount(
      "blacklisted_builders", config.blacklisted_builders.size(), bounds::kMaxListedBuilders));
  BREAKER_RETURN_IF_ERROR(ValidateBuilderLists(config));
  BREAKER_RETURN_IF_ERROR(ValidateRelays(config));
  BREAKER_RETURN_IF_ERROR(ValidateRelayBlacklist(config));

  // --- Relays and memory caps ---
  BREAKER_RETURN_IF_ERROR(
      CheckPeriod("relay_blacklist_period_epochs", config.relay_blacklist_period_epochs, 1));
  BREAKER_RETURN_IF_ERROR(
      CheckPeriod("relay_association_ttl_epochs", config.relay_association_ttl_epochs, 1));
  BREAKER_RETURN_IF_ERROR(CheckRange<uint32_t>("max_relays", config.max_relays, 1, 1024));
  BREAKER_RETURN_IF_ERROR(
      CheckRange<uint32_t>("max_indices_per_relay", config.max_indices_per_relay, 1, 1024));
  BREAKER_RETURN_IF_ERROR(
      CheckRange<uint32_t>("max_tracked_builders", config.max_tracked_builders, 16, 16384));
  // The caps bound what a policy lists; every node must be able to receive it.
  if (const size_t worst = WorstCasePolicyBytes(config); worst > bounds::kMaxSentMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_tracked_builders (", config.max_tracked_builders, "), max_relays (", config.max_relays,
        ") and max_indices_per_relay (", config.max_indices_per_relay, ") let a policy reach ",
        worst, " bytes; accepted: caps whose policy fits in ", bounds::kMaxSentMessageBytes,
        " bytes (lower one of them)"));
  }
  // Configured relays and their indices never expire, so a cap below them could not hold.
  if (config.relays.size() > config.max_relays) {
    return absl::InvalidArgumentError(absl::StrCat("relays lists ", config.relays.size(),
                                                   " relays; accepted: at most max_relays (",
                                                   config.max_relays, ")"));
  }
  for (size_t r = 0; r < config.relays.size(); ++r) {
    if (config.relays[r].indices.size() > config.max_indices_per_relay) {
      return absl::InvalidArgumentError(
          absl::StrCat("relays[", r, "].indices lists ", config.relays[r].indices.size(),
                       " indices; accepted: at most max_indices_per_relay (",
                       config.max_indices_per_relay, ")"));
    }
  }

  // --- Pre-Gloas missed-slot breaker ---
  BREAKER_RETURN_IF_ERROR(
      CheckRange<uint64_t>("missed_slots.window_slots", config.missed_slots.window_slots, 1, 64));
  // Counts of missed slots reach back at most MissedSlotTracker::kRingSlots (256) slots, so a
  // larger value could never trip.
  BREAKER_RETURN_IF_ERROR(CheckRange<uint64_t>("missed_slots.max_allowed_missing_slots",
                                               config.missed_slots.max_allowed_missing_slots, 0,
                                               255));
  BREAKER_RETURN_IF_ERROR(CheckRange<uint64_t>("missed_slots.max_consecutive_missed_slots",
                                               config.missed_slots.max_consecutive_missed_slots, 0,
                                               255));
  BREAKER_RETURN_IF_ERROR(CheckRange<uint64_t>("missed_slots.max_missed_slots_in_window",
                                               config.missed_slots.max_missed_slots_in_window, 0,
                                               config.missed_slots.window_slots));
  BREAKER_RETURN_IF_ERROR(CheckPeriod("missed_slots.max_epochs_since_finalization",
                                      config.missed_slots.max_epochs_since_finalization, 0));
  if (config.missed_slots.latched_rule && config.missed_slots.max_allowed_missing_slots == 0) {
    return Invalid("missed_slots.max_allowed_missing_slots",
                   config.missed_slots.max_allowed_missing_slots,
                   "at least 1 when missed_slots.latched_rule is on (0 would latch on the first "
                   "missed slot); turn latched_rule off to disable the rule");
  }

  // --- Fleet aggregation ---
  BREAKER_RETURN_IF_ERROR(CheckAtLeastOne("min_reporting_nodes", config.min_reporting_nodes));
  // The seed rule judges a slot at the end of the next one, so a verdict needs two slots of
  // history.
  BREAKER_RETURN_IF_ERROR(
      CheckRange<uint64_t>("amendment_window_slots", config.amendment_window_slots, 2, 128));
  if (config.max_future_slots > 8) {
    return Invalid("max_future_slots", config.max_future_slots,
                   "0..8 (more than 8 slots of clock skew means a broken clock)");
  }
  return absl::OkStatus();
}

#undef BREAKER_RETURN_IF_ERROR

}  // namespace breaker::core
