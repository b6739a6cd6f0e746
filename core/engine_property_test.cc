// Randomized property tests of the engine: long random runs of observations, time and operator
// actions over a small fleet, with the policy's invariants checked after every step.
//
// The runs are deterministic (each is one fixed seed of std::mt19937_64), so a failure is
// reproducible: it names the variant, the seed and the step, and lists the actions that led to
// it. Builders come from a small range and recent block roots are reported again, so that
// collisions (the same root reported twice, by several nodes, a builder in several relays, an
// index changing hands) happen often instead of never.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <deque>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/chain_time.h"
#include "core/config.h"
#include "core/engine.h"
#include "core/observation.h"
#include "core/policy.h"
#include "core/types.h"
#include "gtest/gtest.h"

namespace breaker::core {
namespace {

constexpr Slot kSlotsPerEpoch = 32;
constexpr Slot kStartSlot = 10 * kSlotsPerEpoch;
constexpr int kNodes = 4;
// Builders 0..kMaxBuilder: few enough that the same index fails, delivers, bids through several
// relays and changes hands within one run.
constexpr BuilderIndex kMaxBuilder = 40;
constexpr BuilderIndex kBlacklisted = 3;
constexpr int kSeedsPerVariant = 5;
constexpr int kSteps = 2500;
// Every kImportEvery steps the engine is exported and imported, and both run in lock step for
// kLockstepSteps steps.
constexpr int kImportEvery = 50;
constexpr int kLockstepSteps = 20;
// Actions listed in a failure message, so that it can be reproduced without a debugger.
constexpr size_t kHistory = 16;
// Recent block roots kept for duplicate and cross-node reports.
constexpr size_t kRecentBlocks = 48;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// A relay endpoint: its normalized identifier, the spellings nodes use for it (which must all
// land on the identifier), and the builders that mostly bid through it.
struct Endpoint {
  std::string id;
  std::vector<std::string> spellings;
  BuilderIndex home_first;
  BuilderIndex home_last;
};

const std::vector<Endpoint>& Endpoints() {
  static const auto* const endpoints = new std::vector<Endpoint>{
      // Configured, trusted, indices {4, 5}.
      {"https://relay-a.example",
       {"https://relay-a.example", "HTTPS://Relay-A.example/",
        "https://0xabc@relay-a.example:443/?id=7"},
       4,
       10},
      // Configured, untrusted, indices {6, 7, 8}.
      {"http://relay-b.example:18550",
       {"relay-b.example:18550", "http://RELAY-B.example:18550/",
        "http://user:pw@relay-b.example:18550#x"},
       6,
       14},
      // Learned from bids only.
      {"https://relay-c.example", {"https://relay-c.example", "https://relay-c.example//"}, 12, 20},
      {"http://relay-d.example:9000",
       {"relay-d.example:9000", "HTTP://relay-d.example:9000/"},
       18,
       26},
      {"https://relay-e.example/builder",
       {"https://relay-e.example/builder/", "https://relay-e.example:443/builder?x=1"},
       24,
       32},
      {"http://relay-f.example", {"relay-f.example", "http://relay-f.example:80"}, 0, kMaxBuilder},
  };
  return *endpoints;
}

// Invariant families; each test checks one (the run itself is shared).
enum Family : uint32_t {
  kModeCounts = 1 << 0,
  kBanConsistency = 1 << 1,
  kVersions = 1 << 2,
  kCapsAndSelfBuild = 1 << 3,
  kObserveContract = 1 << 4,
  kExportImport = 1 << 5,
};

struct Variant {
  std::string name;
  Config config;
  // Relative weight of payload-missing reports among the actions (the others add up to ~1000).
  double missing_weight = 150;
};

Config BaseConfig() {
  Config config;
  config.trusted_builders = {1, 2};
  config.blacklisted_builders = {kBlacklisted};
  config.relays = {RelayConfig{"https://relay-a.example", true, {4, 5}},
                   RelayConfig{"relay-b.example:18550", false, {6, 7, 8}}};
  return config;
}

std::vector<Variant> Variants() {
  std::vector<Variant> variants;
  {
    // Gloas from genesis with every default; the missed-slot rules are configured but must stay
    // inactive.
    Config config = BaseConfig();
    config.chain.gloas_fork_epoch = 0;
    config.missed_slots = MissedSlotRulesForPreset("mevboost").value();
    variants.push_back({"gloas/1-reporter", config});
  }
  {
    // Gloas, two reporters per failure, tight caps so that every eviction path runs, and a
    // tolerant, finite escalation.
    Config config = BaseConfig();
    config.chain.gloas_fork_epoch = 0;
    config.min_reporting_nodes = 2;
    config.max_tracked_builders = 16;
    config.max_relays = 5;
    config.max_indices_per_relay = 4;
    config.allowed_failures = 1;
    config.critical_failures = 3;
    config.critical_blacklist_period_epochs = 16;
    // Records live long and failures come often, so that the tracked-builders cap fills.
    config.backoff_period_epochs = 40;
    variants.push_back({"gloas/2-reporters/small-caps", config, 450});
  }
  {
    // Pre-Gloas with a windowed preset that recovers by itself; the fork comes mid-run.
    Config config = BaseConfig();
    config.chain.gloas_fork_epoch = 40;
    config.missed_slots = MissedSlotRulesForPreset("prysm").value();
    config.critical_failed_untrusted_builders = 2;
    variants.push_back({"pre-gloas/prysm/1-reporter/fork-at-40", config});
  }
  {
    // Pre-Gloas with the seed's latched rule, two reporters, short relay memory and bans.
    Config config = BaseConfig();
    config.missed_slots = MissedSlotRulesForPreset("mevboost").value();
    config.min_reporting_nodes = 2;
    config.relay_association_ttl_epochs = 4;
    config.relay_blacklist_period_epochs = 2;
    config.critical_failed_builders = 5;
    variants.push_back({"pre-gloas/mevboost/2-reporters/short-ttl", config});
  }
  return variants;
}

BlockRoot RootOf(uint64_t id) {
  std::string bytes(sizeof(id), '\0');
  for (size_t i = 0; i < sizeof(id); ++i) bytes[i] = static_cast<char>((id >> (8 * i)) & 0xff);
  return BlockRootFromBytes(bytes);
}

// One step of a run. Generated once, so that two engines can be given exactly the same step.
struct Action {
  enum class Kind { kAdvance, kObserve, kBan, kUnban, kSetBuilderTrust, kSetRelayTrust, kReset };
  // What Observe must answer, known to the generator from the slot and the content.
  enum class Expect { kAccepted, kDuplicate, kOutOfRange, kInvalid };

  Kind kind = Kind::kAdvance;
  Slot slot = 0;
  Observation observation;
  Expect expect = Expect::kAccepted;
  BuilderIndex builder = 0;
  std::string reason;
  std::optional<Epoch> until_epoch;
  bool trusted = false;
  std::string relay;
};

std::string DescribeEvent(const Event& event) {
  return std::visit(Overloaded{
                        [](const BidSeen& bid) {
                          return absl::StrCat("BidSeen{builder=", bid.builder, " relay='",
                                              bid.relay, "' pubkey='", bid.pubkey, "'}");
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

std::string Describe(const Action& action) {
  switch (action.kind) {
    case Action::Kind::kAdvance:
      return absl::StrCat("Advance(", action.slot, ")");
    case Action::Kind::kObserve:
      return absl::StrCat("Observe{slot=", action.observation.slot, " node='",
                          action.observation.node, "' seq=", action.observation.sequence, " ",
                          DescribeEvent(action.observation.event), "}");
    case Action::Kind::kBan:
      return absl::StrCat(
          "BanBuilder(", action.builder, ", '", action.reason, "', ",
          action.until_epoch.has_value() ? absl::StrCat(*action.until_epoch) : "nullopt", ")");
    case Action::Kind::kUnban:
      return absl::StrCat("UnbanBuilder(", action.builder, ")");
    case Action::Kind::kSetBuilderTrust:
      return absl::StrCat("SetBuilderTrust(", action.builder, ", ", action.trusted, ")");
    case Action::Kind::kSetRelayTrust:
      return absl::StrCat("SetRelayTrust('", action.relay, "', ", action.trusted, ")");
    case Action::Kind::kReset:
      return "Reset()";
  }
  return "?";
}

// What an engine answered to an action.
struct Result {
  absl::Status status;
  std::optional<ObserveOutcome> outcome;
  // Advance's answer.
  bool changed = false;
  // The policy version right after the action, before the step's RefreshPolicy().
  uint64_t version_after_action = 0;
};

Result Apply(Engine& engine, const Action& action) {
  Result result;
  switch (action.kind) {
    case Action::Kind::kAdvance:
      result.changed = engine.Advance(action.slot);
      break;
    case Action::Kind::kObserve: {
      absl::StatusOr<ObserveOutcome> outcome = engine.Observe(action.observation);
      result.status = outcome.status();
      if (outcome.ok()) result.outcome = *outcome;
      break;
    }
    case Action::Kind::kBan:
      result.status = engine.BanBuilder(action.builder, action.reason, action.until_epoch);
      break;
    case Action::Kind::kUnban:
      result.status = engine.UnbanBuilder(action.builder);
      break;
    case Action::Kind::kSetBuilderTrust:
      result.status = engine.SetBuilderTrust(action.builder, action.trusted);
      break;
    case Action::Kind::kSetRelayTrust:
      result.status = engine.SetRelayTrust(action.relay, action.trusted);
      break;
    case Action::Kind::kReset:
      engine.Reset();
      break;
  }
  result.version_after_action = engine.policy().version;
  return result;
}

std::string DescribeResult(const Result& result) {
  std::string text = result.status.ok() ? "OK" : result.status.ToString();
  if (result.outcome.has_value()) {
    static constexpr const char* kNames[] = {"applied", "no-effect", "duplicate"};
    absl::StrAppend(&text, " outcome=", kNames[static_cast<int>(*result.outcome)]);
  }
  absl::StrAppend(&text, " changed=", result.changed,
                  " version_after_action=", result.version_after_action);
  return text;
}

// Everything the inspection API shows of an engine, in a canonical order: two engines that
// behave alike must print the same.
// Everything the engine holds, as text; `with_sequences` false leaves out the nodes' sequence
// numbers (which a refused observation still advances).
std::string Fingerprint(const Engine& engine, bool with_sequences = true) {
  std::vector<std::string> parts;
  for (const auto& [builder, record] : engine.builders()) {
    const FailureRecord& f = record.failures;
    parts.push_back(absl::StrCat("builder ", builder, ": failed=", f.failed,
                                 " until=", f.ban_until_epoch, " reset=", f.ban_until_reset,
                                 " backoff=", f.backoff_epoch, " key='", record.pubkey, "' last='",
                                 f.last_failure, "'"));
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
  for (const auto& [node, sequence] : engine.node_sequences()) {
    if (with_sequences) parts.push_back(absl::StrCat("node ", node, ": ", sequence));
  }
  std::sort(parts.begin(), parts.end());
  return absl::StrJoin(parts, "\n");
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

// What a run saw, to show that the interesting states were reached.
struct Stats {
  int steps = 0;
  int all_builders = 0;
  int trusted_only = 0;
  int self_build = 0;
  int missed_slot_tripped = 0;
  int steps_with_collateral = 0;
  int steps_with_relay_ban = 0;
  int resource_exhausted = 0;
  int refused = 0;
  int duplicates = 0;
  int versions = 0;
  int imports = 0;
  size_t max_banned = 0;
  size_t max_tracked = 0;

  void Add(const Stats& other) {
    steps += other.steps;
    all_builders += other.all_builders;
    trusted_only += other.trusted_only;
    self_build += other.self_build;
    missed_slot_tripped += other.missed_slot_tripped;
    steps_with_collateral += other.steps_with_collateral;
    steps_with_relay_ban += other.steps_with_relay_ban;
    resource_exhausted += other.resource_exhausted;
    refused += other.refused;
    duplicates += other.duplicates;
    versions += other.versions;
    imports += other.imports;
    max_banned = std::max(max_banned, other.max_banned);
    max_tracked = std::max(max_tracked, other.max_tracked);
  }
  std::string ToString() const {
    return absl::StrCat("steps=", steps, " modes(all/trusted/self)=", all_builders, "/",
                        trusted_only, "/", self_build, " missed_slot_tripped=", missed_slot_tripped,
                        " collateral_steps=", steps_with_collateral,
                        " relay_ban_steps=", steps_with_relay_ban,
                        " resource_exhausted=", resource_exhausted, " refused=", refused,
                        " duplicates=", duplicates, " versions=", versions, " imports=", imports,
                        " max_banned=", max_banned, " max_tracked=", max_tracked);
  }
};

// One run: an engine, the fleet's bookkeeping that the generator needs, and the checks.
class Simulation {
 public:
  Simulation(const Variant& variant, uint64_t seed, uint32_t families)
      : variant_(variant), seed_(seed), families_(families), rng_(seed) {
    const bool pre_gloas =
        !IsGloas(EpochOf(kStartSlot, variant.config.chain), variant.config.chain);
    pre_gloas_ = pre_gloas;
    // Pre-Gloas, blocks must be reported often enough that the missed-slot breaker both trips
    // and recovers; with Gloas they matter little.
    choice_ = std::discrete_distribution<int>({
        140,                       // kAdvance
        300,                       // kBid
        variant.missing_weight,    // kMissing
        90,                        // kDelivered
        pre_gloas ? 400.0 : 40.0,  // kBlocks
        20,                        // kFinalized
        15,                        // kExited
        pre_gloas ? 15.0 : 0.0,    // kReveal
        30,                        // kReplay
        20,                        // kMalformed
        8,                         // kBan
        8,                         // kUnban
        8,                         // kBuilderTrust
        4,                         // kRelayTrust
        3,                         // kReset
    });
    // Pre-Gloas, time moves slot by slot, with rare jumps, so that the in-order block reports
    // keep up with the clock: the missed-slot breaker judges a slot two slots after it.
    big_jump_ = pre_gloas ? 0.015 : 0.10;
    small_step_ = pre_gloas ? 0.85 : 0.65;
    for (BuilderIndex b = 0; b <= kMaxBuilder; ++b) generation_[b] = 0;
  }

  // Runs `steps` steps. A violated invariant is recorded (see violations()) and its family is
  // not checked again in this run, so that the other families keep being checked.
  void Run(int steps) {
    absl::StatusOr<Engine> engine = Engine::Create(variant_.config, kStartSlot);
    if (!engine.ok()) {
      Violation(kVersions, absl::StrCat("Create: ", engine.status().ToString()));
      return;
    }
    engine_.emplace(*std::move(engine));
    previous_policy_ = engine_->policy();
    max_version_ = previous_policy_.version;
    for (step_ = 0; step_ < steps && families_ != 0; ++step_) {
      if ((families_ & kExportImport) && !shadow_.has_value() &&
          step_ % kImportEvery == kImportEvery - 1) {
        StartShadow();
      }
      const Action action = NextAction();
      history_.push_back(Describe(action));
      if (history_.size() > kHistory) history_.pop_front();

      // The policy object only changes with its version, so the copy kept from the last change
      // is the policy before this step (copying it every step would dominate the run time).
      const Policy& before = previous_policy_;
      // Only refusals must leave the state alone; a well-formed payload-missing report can be
      // refused only when the tracked-builders cap is full.
      const bool fingerprint_needed =
          (families_ & kObserveContract) && action.kind == Action::Kind::kObserve &&
          (action.expect != Action::Expect::kAccepted ||
           (std::holds_alternative<PayloadMissing>(action.observation.event) &&
            engine_->builders().size() >= config().max_tracked_builders));
      const std::string fingerprint_before =
          fingerprint_needed ? Fingerprint(*engine_, /*with_sequences=*/false) : "";
      const Result result = Apply(*engine_, action);
      const uint64_t version_before_refresh = engine_->policy().version;
      const bool refreshed = engine_->RefreshPolicy();
      // Only a summary per step: the full policy is printed once, at a violation.
      const Policy& after = engine_->policy();
      history_.back() +=
          absl::StrCat(" -> ", DescribeResult(result), " refresh=", refreshed, " => v",
                       after.version, " ", ModeName(after.mode), " ", after.banned_builders.size(),
                       " builder(s) and ", after.banned_relays.size(), " relay(s) banned");

      ComputeServing();
      Check(kVersions, [&] {
        return CheckVersions(action, before, result, version_before_refresh, refreshed);
      });
      Check(kObserveContract,
            [&] { return CheckContract(action, before, result, fingerprint_before); });
      Check(kModeCounts, [&] { return CheckMode(); });
      Check(kBanConsistency, [&] { return CheckBans(); });
      Check(kCapsAndSelfBuild, [&] { return CheckCaps(); });
      if (shadow_.has_value()) {
        Check(kExportImport, [&] { return StepShadow(action, result, refreshed); });
      }
      Count(result);
      if (engine_->policy().version != previous_policy_.version) {
        previous_policy_ = engine_->policy();
      }
    }
  }

  struct Violated {
    Family family;
    std::string message;
  };
  const std::vector<Violated>& violations() const { return violations_; }
  const Stats& stats() const { return stats_; }

 private:
  enum Choice {
    kAdvance,
    kBid,
    kMissing,
    kDelivered,
    kBlocks,
    kFinalized,
    kExited,
    kReveal,
    kReplay,
    kMalformed,
    kBan,
    kUnban,
    kBuilderTrust,
    kRelayTrust,
    kReset,
  };

  struct Block {
    uint64_t root_id;
    Slot slot;
    BuilderIndex builder;
    // The block's attestation, as every node sees it (nodes differ by a little noise).
    double attested;
  };
  struct Reveal {
    uint64_t root_id;
    Slot slot;
    size_t endpoint;
  };

  const Config& config() const { return variant_.config; }
  Slot current() const { return engine_->current_slot(); }

  // --- Random draws ---

  uint64_t Uniform(uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_);
  }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  double Real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  BuilderIndex AnyBuilder() { return Uniform(0, kMaxBuilder); }
  size_t AnyEndpoint() { return Uniform(0, Endpoints().size() - 1); }
  const std::string& AnySpelling(size_t endpoint) {
    const std::vector<std::string>& spellings = Endpoints()[endpoint].spellings;
    return spellings[Uniform(0, spellings.size() - 1)];
  }

  bool InRange(Slot slot) const {
    return slot <= current() + config().max_future_slots &&
           slot + config().amendment_window_slots >= current();
  }

  // A slot a node might report about: mostly the present or the last few slots, sometimes a
  // little ahead (clock skew), rarely outside the accepted range.
  Slot ObservedSlot() {
    if (Chance(0.02)) {
      return Chance(0.5) ? current() + config().max_future_slots + Uniform(1, 5)
                         : current() - config().amendment_window_slots - Uniform(1, 10);
    }
    if (Chance(0.1)) return current() + Uniform(0, config().max_future_slots);
    return current() - Uniform(0, 3);
  }

  // An observation from a random node with its next sequence number.
  Action Observe(Slot slot, Event event) {
    Action action;
    action.kind = Action::Kind::kObserve;
    const std::string node = absl::StrCat("node-", Uniform(0, kNodes - 1));
    action.observation = Observation{slot, node, ++sequences_[node], std::move(event)};
    action.expect = InRange(slot) ? Action::Expect::kAccepted : Action::Expect::kOutOfRange;
    return action;
  }

  std::string Pubkey(BuilderIndex builder) {
    if (Chance(0.25)) return "";  // The node's look-up failed.
    // Now and then the index changes hands without an exit report: a new key.
    if (Chance(0.03)) ++generation_[builder];
    return absl::StrCat("pk-", builder, "-", generation_[builder]);
  }

  double AttestedFraction() {
    if (Chance(0.08)) return config().attestation_threshold;
    if (Chance(0.04)) return 1.0;
    if (Chance(0.03)) return 0.0;
    return Real(0.45, 0.8);
  }

  void Remember(const Block& block) {
    blocks_.push_back(block);
    if (blocks_.size() > kRecentBlocks) blocks_.pop_front();
  }

  Action NextAction() {
    switch (choice_(rng_)) {
      case kAdvance: {
        Action action;
        const double u = Real(0, 1);
        const uint64_t delta = u < 0.05              ? 0
                               : u < small_step_     ? (pre_gloas_ ? 1 : Uniform(1, 2))
                               : u < 1.0 - big_jump_ ? Uniform(2, 5)
                                                     : Uniform(6, 40);
        action.slot = current() + delta;
        return action;
      }
      case kBid: {
        BidSeen bid;
        if (Chance(0.35)) {
          bid.builder = AnyBuilder();
        } else {
          const size_t endpoint = AnyEndpoint();
          const Endpoint& e = Endpoints()[endpoint];
          bid.builder = Chance(0.93) ? Uniform(e.home_first, e.home_last) : AnyBuilder();
          bid.relay = AnySpelling(endpoint);
        }
        bid.pubkey = Pubkey(bid.builder);
        return Observe(ObservedSlot(), std::move(bid));
      }
      case kMissing: {
        Block block;
        if (!blocks_.empty() && Chance(0.5)) {
          // The same root again, mostly a recent one: another node, or the same node with a
          // new sequence number.
          block = Chance(0.8) ? blocks_[blocks_.size() - 1 -
                                        Uniform(0, std::min<size_t>(3, blocks_.size() - 1))]
                              : blocks_[Uniform(0, blocks_.size() - 1)];
        } else {
          block = Block{next_root_++, ObservedSlot(), AnyBuilder(), AttestedFraction()};
          Remember(block);
        }
        // Nodes see about the same attestation; the noise puts some reports of a block near
        // the threshold on both sides of it.
        double attested = block.attested;
        if (Chance(0.2)) attested = std::clamp(attested + Real(-0.03, 0.03), 0.0, 1.0);
        return Observe(block.slot, PayloadMissing{block.builder, RootOf(block.root_id), attested});
      }
      case kDelivered: {
        Block block;
        if (!blocks_.empty() && Chance(0.5)) {
          block = blocks_[Uniform(0, blocks_.size() - 1)];
        } else {
          block = Block{next_root_++, ObservedSlot(), AnyBuilder(), AttestedFraction()};
          Remember(block);
        }
        return Observe(block.slot, PayloadDelivered{block.builder, RootOf(block.root_id)});
      }
      case kBlocks: {
        // Mostly the next slot no node has reported yet, as a fleet reports every slot, now
        // and then empty (a missed slot); otherwise any slot, late or early. Pre-Gloas, the
        // chain now and then stalls for a few slots that no node has a block for, so that the
        // missed-slot breaker trips: slots no node reported on never count as missed.
        Slot slot = ObservedSlot();
        double empty = 0.15;
        const Slot oldest = current() - config().amendment_window_slots;
        if (Chance(0.85)) {
          next_blocks_slot_ = std::max(next_blocks_slot_, oldest);
          if (next_blocks_slot_ <= current()) {
            slot = next_blocks_slot_++;
            empty = 0.03;
            if (pre_gloas_ && slot >= stall_end_ && Chance(0.02)) {
              stall_begin_ = slot;
              stall_end_ = slot + Uniform(2, 10);
            }
          }
        }
        if (slot >= stall_begin_ && slot < stall_end_) empty = 1.0;
        BlocksSeen blocks;
        const uint64_t roots = Chance(empty) ? 0 : Chance(0.9) ? 1 : 2;
        for (uint64_t i = 0; i < roots; ++i) blocks.roots.push_back(RootOf(next_root_++));
        return Observe(slot, std::move(blocks));
      }
      case kFinalized: {
        const Slot slot = ObservedSlot();
        const Epoch epoch = EpochOf(slot, config().chain);
        if (Chance(0.05)) {
          Action action = Observe(slot, Finalized{epoch + 1});
          if (action.expect == Action::Expect::kAccepted) action.expect = Action::Expect::kInvalid;
          return action;
        }
        return Observe(slot, Finalized{epoch - std::min<Epoch>(epoch, Uniform(0, 4))});
      }
      case kExited: {
        const BuilderIndex builder = AnyBuilder();
        ++generation_[builder];
        return Observe(ObservedSlot(), BuilderExited{builder});
      }
      case kReveal: {
        Reveal reveal;
        if (!reveals_.empty() && Chance(0.4)) {
          reveal = reveals_[Uniform(0, reveals_.size() - 1)];
        } else {
          // Root ids of reveal failures live apart from the builders' roots: a root is one
          // builder's or one relay's failure, never both.
          reveal = Reveal{(uint64_t{1} << 40) + next_root_++, ObservedSlot(), AnyEndpoint()};
          reveals_.push_back(reveal);
          if (reveals_.size() > kRecentBlocks) reveals_.pop_front();
        }
        return Observe(reveal.slot,
                       RelayRevealMissing{AnySpelling(reveal.endpoint), RootOf(reveal.root_id)});
      }
      case kReplay: {
        // A node reconnects and sends again what the engine took from it before (the
        // generator's own counter also counts observations the engine refused).
        const std::string node = absl::StrCat("node-", Uniform(0, kNodes - 1));
        auto it = engine_->node_sequences().find(node);
        if (it == engine_->node_sequences().end()) {
          return Observe(ObservedSlot(), BidSeen{AnyBuilder(), "", ""});
        }
        Action action;
        action.kind = Action::Kind::kObserve;
        action.observation = Observation{ObservedSlot(), node, Uniform(1, it->second),
                                         BidSeen{AnyBuilder(), AnySpelling(AnyEndpoint()), ""}};
        action.expect = Action::Expect::kDuplicate;
        return action;
      }
      case kMalformed:
        return Malformed();
      case kBan: {
        Action action;
        action.kind = Action::Kind::kBan;
        action.builder = Chance(0.05) ? kSelfBuild : AnyBuilder();
        action.reason = Chance(0.05) ? "" : "property test";
        const Epoch now = engine_->current_epoch();
        if (Chance(0.5)) {
          action.until_epoch = Chance(0.1) ? now : now + Uniform(1, 8);
        }
        return action;
      }
      case kUnban: {
        Action action;
        action.kind = Action::Kind::kUnban;
        action.builder = AnyBuilder();
        return action;
      }
      case kBuilderTrust: {
        Action action;
        action.kind = Action::Kind::kSetBuilderTrust;
        action.builder = Chance(0.05) ? kSelfBuild : AnyBuilder();
        action.trusted = Chance(0.5);
        if (action.builder != kSelfBuild) trust_overrides_[action.builder] = action.trusted;
        return action;
      }
      case kRelayTrust: {
        Action action;
        action.kind = Action::Kind::kSetRelayTrust;
        action.relay = Chance(0.05) ? "ftp://relay-x.example" : AnySpelling(AnyEndpoint());
        action.trusted = Chance(0.5);
        return action;
      }
      case kReset:
      default: {
        Action action;
        action.kind = Action::Kind::kReset;
        return action;
      }
    }
  }

  // An observation the engine must refuse as INVALID_ARGUMENT (or OUT_OF_RANGE when the slot
  // is also out of range, which is checked first).
  Action Malformed() {
    const Slot slot = ObservedSlot();
    Action action;
    switch (Uniform(0, 7)) {
      case 0:
        action = Observe(slot, BidSeen{AnyBuilder(), "", ""});
        action.observation.node.clear();
        action.expect = Action::Expect::kInvalid;
        return action;
      case 1:
        action = Observe(slot, BidSeen{AnyBuilder(), "", ""});
        action.observation.sequence = 0;
        action.expect = Action::Expect::kInvalid;
        return action;
      case 2:
        action = Observe(slot, PayloadMissing{kSelfBuild, RootOf(next_root_++), 0.9});
        break;
      case 3: {
        const double fractions[] = {std::nan(""), 1.5, -0.1,
                                    std::numeric_limits<double>::infinity()};
        action = Observe(
            slot, PayloadMissing{AnyBuilder(), RootOf(next_root_++), fractions[Uniform(0, 3)]});
        break;
      }
      case 4:
        action =
            Observe(slot, BidSeen{AnyBuilder(), Chance(0.5) ? "ftp://relay-x.example" : "a b", ""});
        break;
      case 5:
        action = Observe(slot, PayloadDelivered{kSelfBuild, RootOf(next_root_++)});
        break;
      case 6:
        action = Observe(slot, BuilderExited{kSelfBuild});
        break;
      default:
        action = Observe(slot, BidSeen{kSelfBuild, "", "pk-self"});
        break;
    }
    if (action.expect == Action::Expect::kAccepted) action.expect = Action::Expect::kInvalid;
    return action;
  }

  // --- Checks. Each returns an empty string, or what is wrong. ---

  std::string CheckVersions(const Action& action, const Policy& before, const Result& result,
                            uint64_t version_before_refresh, bool refreshed) {
    const Policy& after = engine_->policy();
    if (action.kind == Action::Kind::kAdvance) {
      if (result.version_after_action != before.version + (result.changed ? 1 : 0)) {
        return absl::StrCat("Advance returned ", result.changed, " but the version went from ",
                            before.version, " to ", result.version_after_action);
      }
    } else if (result.version_after_action != before.version) {
      return absl::StrCat("the version changed from ", before.version, " to ",
                          result.version_after_action, " without a refresh");
    }
    if (after.version != version_before_refresh + (refreshed ? 1 : 0)) {
      return absl::StrCat("RefreshPolicy returned ", refreshed, " but the version went from ",
                          version_before_refresh, " to ", after.version);
    }
    // A new version iff the decisions changed (over the whole step: advance, then refresh).
    const bool new_version = after.version != before.version;
    if (new_version == before.SameDecisions(after)) {
      return absl::StrCat("the version went from ", before.version, " to ", after.version,
                          " but SameDecisions(previous) is ", before.SameDecisions(after));
    }
    if (after.version < max_version_) {
      return absl::StrCat("the version went back from ", max_version_, " to ", after.version);
    }
    max_version_ = after.version;
    if (new_version && after.computed_at_slot != current()) {
      return absl::StrCat("a new version computed at slot ", after.computed_at_slot,
                          ", the current slot is ", current());
    }
    // Nothing happened since the refresh: another refresh must not publish anything.
    if (step_ % 10 == 0 && engine_->RefreshPolicy()) {
      return "a second RefreshPolicy() right after the first published a new version";
    }
    return "";
  }

  std::string CheckContract(const Action& action, const Policy& before, const Result& result,
                            const std::string& fingerprint_before) {
    const Policy& after = engine_->policy();
    const absl::StatusCode code = result.status.code();
    switch (action.kind) {
      case Action::Kind::kObserve: {
        const bool refused = !result.status.ok() || (result.outcome.has_value() &&
                                                     *result.outcome == ObserveOutcome::kDuplicate);
        switch (action.expect) {
          case Action::Expect::kDuplicate:
            if (!result.outcome.has_value() || *result.outcome != ObserveOutcome::kDuplicate) {
              return absl::StrCat("a replayed sequence number was not a duplicate: ",
                                  DescribeResult(result));
            }
            break;
          case Action::Expect::kOutOfRange:
            if (code != absl::StatusCode::kOutOfRange) {
              return absl::StrCat("an observation outside [", current(), " - ",
                                  config().amendment_window_slots, ", ", current(), " + ",
                                  config().max_future_slots,
                                  "] was not OUT_OF_RANGE: ", DescribeResult(result));
            }
            break;
          case Action::Expect::kInvalid:
            if (code != absl::StatusCode::kInvalidArgument) {
              return absl::StrCat("a malformed observation was not INVALID_ARGUMENT: ",
                                  DescribeResult(result));
            }
            break;
          case Action::Expect::kAccepted: {
            // The only refusal of a well-formed, in-range observation: the tracked-builders cap
            // is full of active bans.
            const bool exhausted = code == absl::StatusCode::kResourceExhausted &&
                                   std::holds_alternative<PayloadMissing>(action.observation.event);
            if (!result.status.ok() && !exhausted) {
              return absl::StrCat("a valid observation was refused: ", DescribeResult(result));
            }
            if (result.outcome == ObserveOutcome::kDuplicate) {
              return "a fresh sequence number was taken for a duplicate";
            }
            break;
          }
        }
        if (refused && Fingerprint(*engine_, /*with_sequences=*/false) != fingerprint_before) {
          return absl::StrCat("a refused observation changed the engine's state: ",
                              DescribeResult(result));
        }
        return "";
      }
      case Action::Kind::kBan: {
        const bool valid =
            action.builder != kSelfBuild && !action.reason.empty() &&
            (!action.until_epoch.has_value() || *action.until_epoch > engine_->current_epoch());
        if (valid != result.status.ok() || (!valid && code != absl::StatusCode::kInvalidArgument)) {
          return absl::StrCat("BanBuilder answered ", result.status.ToString());
        }
        if (valid) {
          auto ban = after.banned_builders.find(action.builder);
          if (ban == after.banned_builders.end() || ban->second.kind == BanKind::kCollateral) {
            return "an operator ban is not in the policy as a failure or operator ban";
          }
        }
        return "";
      }
      case Action::Kind::kUnban: {
        auto was = before.banned_builders.find(action.builder);
        if (action.builder == kBlacklisted) {
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
        if (code == absl::StatusCode::kFailedPrecondition &&
            (was == before.banned_builders.end() || was->second.kind != BanKind::kCollateral)) {
          return "UnbanBuilder said FAILED_PRECONDITION for a builder not banned as collateral";
        }
        if (result.status.ok()) {
          auto now = after.banned_builders.find(action.builder);
          if (now != after.banned_builders.end() && now->second.kind != BanKind::kCollateral) {
            return absl::StrCat("after UnbanBuilder the builder is still banned as ",
                                BanKindName(now->second.kind));
          }
          if (engine_->builders().contains(action.builder)) {
            return "after UnbanBuilder the builder still has a failure record";
          }
        }
        return "";
      }
      case Action::Kind::kSetBuilderTrust:
        if (action.builder == kSelfBuild) {
          return code == absl::StatusCode::kInvalidArgument
                     ? ""
                     : absl::StrCat("trusting the self-build index answered ",
                                    result.status.ToString());
        }
        if (!result.status.ok()) return result.status.ToString();
        if (after.trusted_builders.contains(action.builder) != action.trusted) {
          return "SetBuilderTrust is not reflected in policy.trusted_builders";
        }
        return "";
      case Action::Kind::kSetRelayTrust: {
        const auto endpoint =
            std::find_if(Endpoints().begin(), Endpoints().end(), [&](const Endpoint& e) {
              return std::find(e.spellings.begin(), e.spellings.end(), action.relay) !=
                     e.spellings.end();
            });
        if (endpoint == Endpoints().end()) {
          return code == absl::StatusCode::kInvalidArgument
                     ? ""
                     : absl::StrCat("trusting a malformed relay answered ",
                                    result.status.ToString());
        }
        if (!result.status.ok()) return result.status.ToString();
        if (after.trusted_relays.contains(endpoint->id) != action.trusted) {
          return "SetRelayTrust is not reflected in policy.trusted_relays";
        }
        return "";
      }
      case Action::Kind::kReset: {
        if (!engine_->builders().empty()) return "failure records survived Reset()";
        for (const auto& [builder, ban] : after.banned_builders) {
          if (ban.kind != BanKind::kOperator) {
            return absl::StrCat("builder ", builder, " is banned as ", BanKindName(ban.kind),
                                " right after Reset()");
          }
        }
        if (!after.banned_relays.empty()) return "a relay is banned right after Reset()";
        if (after.missed_slots.latched) return "the missed-slot latch survived Reset()";
        return "";
      }
      case Action::Kind::kAdvance:
        return "";
    }
    return "";
  }

  // The endpoints serving each builder (bit e: Endpoints()[e]), derived from engine.relays()
  // in one pass per step. Asking engine.RelaysServing() for every banned builder at every step
  // would cost more than the engine's own work; CheckServing() compares the two.
  void ComputeServing() {
    serving_.fill(0);
    const Epoch now = engine_->current_epoch();
    for (size_t e = 0; e < Endpoints().size(); ++e) {
      auto relay = engine_->relays().find(Endpoints()[e].id);
      if (relay == engine_->relays().end()) continue;
      for (const auto& [builder, epoch] : relay->second.learned) {
        if (builder <= kMaxBuilder && epoch + config().relay_association_ttl_epochs > now) {
          serving_[builder] |= uint32_t{1} << e;
        }
      }
      // The configured relays are the first endpoints, in the same order.
      if (e < config().relays.size()) {
        for (BuilderIndex builder : config().relays[e].indices) {
          serving_[builder] |= uint32_t{1} << e;
        }
      }
    }
  }

  std::vector<std::string> Serving(BuilderIndex builder) const {
    if (builder > kMaxBuilder) return engine_->RelaysServing(builder);
    std::vector<std::string> ids;
    for (size_t e = 0; e < Endpoints().size(); ++e) {
      if (serving_[builder] & (uint32_t{1} << e)) ids.push_back(Endpoints()[e].id);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  // The membership index agrees with engine.RelaysServing().
  std::string CheckServing() const {
    for (BuilderIndex builder = 0; builder <= kMaxBuilder; ++builder) {
      const std::vector<std::string> expected = Serving(builder);
      const std::vector<std::string> actual = engine_->RelaysServing(builder);
      if (actual != expected) {
        return absl::StrCat("RelaysServing(", builder, ") is [", absl::StrJoin(actual, ", "),
                            "], the relays' learned and configured members say [",
                            absl::StrJoin(expected, ", "), "]");
      }
    }
    return "";
  }

  // Trusted: listed as trusted in the policy, or served by a trusted relay. An explicit
  // SetBuilderTrust(b, false) wins over a trusted relay's membership: the engine treats the
  // relay's trust as configuration, which the override overrides (see IsTrustedBuilder).
  bool Trusted(BuilderIndex builder) const {
    auto override_it = trust_overrides_.find(builder);
    if (override_it != trust_overrides_.end()) return override_it->second;
    const Policy& policy = engine_->policy();
    if (policy.trusted_builders.contains(builder)) return true;
    for (size_t e = 0; e < Endpoints().size(); ++e) {
      if ((serving_[builder] & (uint32_t{1} << e)) &&
          policy.trusted_relays.contains(Endpoints()[e].id)) {
        return true;
      }
    }
    return false;
  }

  // SELF_BUILD, TRUSTED_ONLY or ALL_BUILDERS, from the builders banned by their own failures.
  std::string CheckMode() const {
    const Engine& engine = *engine_;
    const Policy& policy = engine.policy();
    const Epoch now = engine.current_epoch();
    // Builders banned by their own failures, and the untrusted ones among them.
    size_t own = 0;
    size_t own_untrusted = 0;
    for (const auto& [builder, record] : engine.builders()) {
      if (!record.failures.Banned(now)) continue;
      ++own;
      if (!Trusted(builder)) ++own_untrusted;
    }
    const bool missed = policy.missed_slots.active && policy.missed_slots.tripped;
    const Mode expected = own >= config().critical_failed_builders || missed ? Mode::kSelfBuild
                          : own_untrusted >= config().critical_failed_untrusted_builders
                              ? Mode::kTrustedOnly
                              : Mode::kAllBuilders;
    if (policy.mode != expected) {
      return absl::StrCat("mode is ", ModeName(policy.mode), ", expected ", ModeName(expected),
                          ": ", own, " builders banned by their own failures, ", own_untrusted,
                          " of them untrusted, missed-slot breaker ",
                          missed ? "tripped" : "not tripped");
    }
    if ((policy.mode == Mode::kAllBuilders) != policy.mode_reason.empty()) {
      return absl::StrCat("mode ", ModeName(policy.mode), " with reason '", policy.mode_reason,
                          "'");
    }
    if (policy.missed_slots.active == IsGloas(now, config().chain)) {
      return absl::StrCat("missed_slots.active is ", policy.missed_slots.active, " at epoch ", now,
                          " with the Gloas fork at ", config().chain.gloas_fork_epoch);
    }
    return "";
  }

  // Every ban in the policy has its cause in the state, and no cause is missing from the policy.
  std::string CheckBans() const {
    if (step_ % 25 == 0) {
      if (std::string problem = CheckServing(); !problem.empty()) return problem;
    }
    const Engine& engine = *engine_;
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
          for (size_t e = 0; e < Endpoints().size(); ++e) {
            if (builder > kMaxBuilder || !(serving_[builder] & (uint32_t{1} << e))) continue;
            auto relay_ban = policy.banned_relays.find(Endpoints()[e].id);
            if (relay_ban == policy.banned_relays.end()) continue;
            longest = std::max(longest.value_or(0), relay_ban->second.until_reset
                                                        ? kFarFutureEpoch
                                                        : relay_ban->second.until_epoch);
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
        case BanKind::kOperator:
          break;
      }
      if (ban.until_reset ? ban.until_epoch != 0 : ban.until_epoch <= now) {
        return absl::StrCat("builder ", builder, "'s ban has until_epoch ", ban.until_epoch,
                            ban.until_reset ? " with until_reset" : ", not after the epoch ",
                            ban.until_reset ? "" : absl::StrCat(now));
      }
      if (policy.IsAllowed(builder, "")) {
        return absl::StrCat("banned builder ", builder, " is allowed over P2P");
      }
      // One endpoint per step, in turn: all of them every step would cost more than it finds.
      const std::string& relay = Endpoints()[step_ % Endpoints().size()].id;
      if (policy.IsAllowed(builder, relay)) {
        return absl::StrCat("banned builder ", builder, " is allowed through ", relay);
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
    auto blacklisted = policy.banned_builders.find(kBlacklisted);
    if (blacklisted == policy.banned_builders.end() || !blacklisted->second.until_reset) {
      return "the configured blacklist entry is not banned until reset";
    }
    if (!policy.IsAllowed(kSelfBuild, "")) return "self-building is refused";
    for (const auto& [relay, ban] : policy.banned_relays) {
      for (BuilderIndex b : {BuilderIndex{1}, BuilderIndex{4}, BuilderIndex{30}}) {
        if (policy.IsAllowed(b, relay)) {
          return absl::StrCat("a bid through banned relay ", relay, " is allowed");
        }
      }
    }
    if (policy.mode == Mode::kSelfBuild) {
      for (BuilderIndex b = 0; b <= kMaxBuilder; ++b) {
        if (policy.IsAllowed(b, "") || policy.IsAllowed(b, Endpoints()[0].id)) {
          return absl::StrCat("builder ", b, " is allowed in SELF_BUILD");
        }
      }
    } else if (policy.mode == Mode::kTrustedOnly) {
      for (BuilderIndex b = 0; b <= kMaxBuilder; ++b) {
        if (policy.banned_builders.contains(b)) continue;
        if (policy.IsAllowed(b, "") != policy.trusted_builders.contains(b)) {
          return absl::StrCat("in TRUSTED_ONLY, P2P bid of builder ", b,
                              " allowed: ", policy.IsAllowed(b, ""));
        }
      }
    }
    // "When every member of R has failed = 0, R and all its collateral bans are lifted": a
    // relay banned for a member's failure still serves a member whose record has failed > 0.
    uint32_t culprit_relays = 0;
    for (const auto& [builder, record] : engine.builders()) {
      if (record.failures.failed > 0 && builder <= kMaxBuilder) {
        culprit_relays |= serving_[builder];
      }
    }
    for (size_t e = 0; e < Endpoints().size(); ++e) {
      const std::string& id = Endpoints()[e].id;
      auto it = engine.relays().find(id);
      if (it == engine.relays().end()) continue;
      const RelayRecord& relay = it->second;
      auto ban = policy.banned_relays.find(id);
      if (ban == policy.banned_relays.end() || relay.failures.Banned(now) ||
          (culprit_relays & (uint32_t{1} << e))) {
        continue;
      }
      return absl::StrCat("relay ", id, " is banned until epoch ", ban->second.until_epoch,
                          " for '", ban->second.reason,
                          "', but none of the builders it serves has failed (failed > 0); ",
                          "its members stay banned as collateral");
    }
    return "";
  }

  // Memory caps, relay identifiers and the self-build index.
  std::string CheckCaps() const {
    const Engine& engine = *engine_;
    const Policy& policy = engine.policy();
    if (engine.builders().contains(kSelfBuild)) return "the self-build index has a record";
    if (policy.banned_builders.contains(kSelfBuild)) return "the self-build index is banned";
    if (engine.builders().size() > config().max_tracked_builders) {
      return absl::StrCat(engine.builders().size(), " builders tracked, max_tracked_builders ",
                          config().max_tracked_builders);
    }
    if (engine.relays().size() > config().max_relays) {
      return absl::StrCat(engine.relays().size(), " relays tracked, max_relays ",
                          config().max_relays);
    }
    for (const auto& [id, relay] : engine.relays()) {
      if (relay.learned.size() > config().max_indices_per_relay) {
        return absl::StrCat("relay ", id, " has ", relay.learned.size(),
                            " learned indices, max_indices_per_relay ",
                            config().max_indices_per_relay);
      }
      // Every spelling of an endpoint must land on its one identifier.
      if (std::none_of(Endpoints().begin(), Endpoints().end(),
                       [&](const Endpoint& e) { return e.id == id; })) {
        return absl::StrCat("relay '", id, "' is not a normalized endpoint identifier");
      }
    }
    for (size_t i = 0; i < 2; ++i) {
      if (!engine.relays().contains(Endpoints()[i].id)) {
        return absl::StrCat("configured relay ", Endpoints()[i].id, " was dropped");
      }
    }
    return "";
  }

  // --- Export/Import ---

  void StartShadow() {
    absl::StatusOr<Engine> copy = Engine::Import(config(), engine_->Export());
    std::string problem;
    if (!copy.ok()) {
      problem = absl::StrCat("Import(Export()) failed: ", copy.status().ToString());
    } else if (copy->policy().version != engine_->policy().version ||
               !copy->policy().SameDecisions(engine_->policy())) {
      problem = absl::StrCat("the imported policy differs: ", DescribeBans(copy->policy()), " vs ",
                             DescribeBans(engine_->policy()));
    } else if (Fingerprint(*copy) != Fingerprint(*engine_)) {
      problem = "the imported engine's state differs from the exported one";
    }
    if (!problem.empty()) {
      Violation(kExportImport, problem);
      return;
    }
    shadow_.emplace(*std::move(copy));
    lockstep_left_ = kLockstepSteps;
    ++stats_.imports;
  }

  std::string StepShadow(const Action& action, const Result& result, bool refreshed) {
    Engine& shadow = *shadow_;
    const Result shadow_result = Apply(shadow, action);
    const bool shadow_refreshed = shadow.RefreshPolicy();
    std::string problem;
    if (shadow_result.status != result.status || shadow_result.outcome != result.outcome ||
        shadow_result.changed != result.changed || shadow_refreshed != refreshed) {
      problem = absl::StrCat("the imported engine answered ", DescribeResult(shadow_result),
                             " refresh=", shadow_refreshed, ", the original ",
                             DescribeResult(result), " refresh=", refreshed);
    } else if (shadow.policy().version != engine_->policy().version ||
               !shadow.policy().SameDecisions(engine_->policy())) {
      problem = absl::StrCat("the imported engine's policy diverged (",
                             kLockstepSteps - lockstep_left_ + 1,
                             " steps after import):\n  imported ", DescribeBans(shadow.policy()),
                             "\n  original ", DescribeBans(engine_->policy()));
    } else if (lockstep_left_ == 1 && Fingerprint(shadow) != Fingerprint(*engine_)) {
      // The states are compared once, at the end: the policies are compared at every step.
      problem =
          absl::StrCat("the imported engine's state diverged (",
                       kLockstepSteps - lockstep_left_ + 1, " steps after import):\n",
                       "imported:\n", Fingerprint(shadow), "\noriginal:\n", Fingerprint(*engine_));
    }
    if (--lockstep_left_ == 0 || !problem.empty()) shadow_.reset();
    return problem;
  }

  // --- Reporting ---

  template <typename CheckFn>
  void Check(Family family, CheckFn check) {
    if ((families_ & family) == 0) return;
    std::string problem = check();
    if (!problem.empty()) Violation(family, problem);
  }

  // Records the violation with what is needed to reproduce it, and stops checking `family`:
  // the state that broke it would report the same cause again and again.
  void Violation(Family family, const std::string& what) {
    violations_.push_back(
        {family, absl::StrCat("variant=", variant_.name, " seed=", seed_, " step=", step_,
                              " slot=", engine_.has_value() ? current() : 0, ": ", what,
                              "\nlast actions (oldest first):\n  ", absl::StrJoin(history_, "\n  "),
                              "\npolicy now: ",
                              engine_.has_value() ? DescribeBans(engine_->policy()) : "none")});
    families_ &= ~static_cast<uint32_t>(family);
  }

  void Count(const Result& result) {
    const Policy& policy = engine_->policy();
    ++stats_.steps;
    switch (policy.mode) {
      case Mode::kAllBuilders:
        ++stats_.all_builders;
        break;
      case Mode::kTrustedOnly:
        ++stats_.trusted_only;
        break;
      case Mode::kSelfBuild:
        ++stats_.self_build;
        break;
    }
    if (policy.missed_slots.tripped) ++stats_.missed_slot_tripped;
    if (std::any_of(policy.banned_builders.begin(), policy.banned_builders.end(),
                    [](const auto& entry) { return entry.second.kind == BanKind::kCollateral; })) {
      ++stats_.steps_with_collateral;
    }
    if (!policy.banned_relays.empty()) ++stats_.steps_with_relay_ban;
    if (result.status.code() == absl::StatusCode::kResourceExhausted) ++stats_.resource_exhausted;
    if (!result.status.ok()) ++stats_.refused;
    if (result.outcome == ObserveOutcome::kDuplicate) ++stats_.duplicates;
    stats_.versions = static_cast<int>(policy.version);
    stats_.max_banned = std::max(stats_.max_banned, policy.banned_builders.size());
    stats_.max_tracked = std::max(stats_.max_tracked, engine_->builders().size());
  }

  const Variant& variant_;
  const uint64_t seed_;
  // The families still checked.
  uint32_t families_;
  std::mt19937_64 rng_;
  std::discrete_distribution<int> choice_;
  // Probability that an advance is a jump of more than 5 slots, or of at most 2 (1 pre-Gloas).
  double big_jump_ = 0;
  double small_step_ = 0;
  bool pre_gloas_ = false;
  // The lowest slot for which the generator has not yet sent a BlocksSeen in order.
  Slot next_blocks_slot_ = kStartSlot;
  // The latest stall: no node has a block for the slots [stall_begin_, stall_end_).
  Slot stall_begin_ = 0;
  Slot stall_end_ = 0;
  // The trust the operator set explicitly with SetBuilderTrust, which survives Reset().
  absl::flat_hash_map<BuilderIndex, bool> trust_overrides_;
  std::optional<Engine> engine_;
  // The copy made by Import(Export()), run in lock step with engine_ for a while.
  std::optional<Engine> shadow_;
  int lockstep_left_ = 0;
  int step_ = 0;
  uint64_t max_version_ = 0;
  absl::flat_hash_map<std::string, uint64_t> sequences_;
  // Bumped when an index changes hands, to give the newcomer another public key.
  absl::flat_hash_map<BuilderIndex, uint64_t> generation_;
  std::deque<Block> blocks_;
  std::deque<Reveal> reveals_;
  uint64_t next_root_ = 1;
  std::deque<std::string> history_;
  // ComputeServing()'s index for the current step.
  std::array<uint32_t, kMaxBuilder + 1> serving_{};
  // The policy as of its latest version.
  Policy previous_policy_;
  std::vector<Violated> violations_;
  Stats stats_;
};

constexpr uint32_t kAllFamilies = kModeCounts | kBanConsistency | kVersions | kCapsAndSelfBuild |
                                  kObserveContract | kExportImport;

// The runs are shared by the tests below: one pass checks every family (the engine's own work
// dominates the run time, so a pass per family would cost six times as much), and each test
// reports the violations of its family.
class EngineProperty : public ::testing::Test {
 protected:
  struct Outcome {
    // Per family, the first violation of each variant (later seeds would mostly repeat it).
    absl::flat_hash_map<uint32_t, std::vector<std::string>> violations;
  };

  static void SetUpTestSuite() {
    if (outcome_ != nullptr) return;
    outcome_ = new Outcome;
    for (const Variant& variant : Variants()) {
      Stats total;
      absl::flat_hash_set<uint32_t> reported;
      for (int i = 0; i < kSeedsPerVariant; ++i) {
        const uint64_t seed = 0x5eed0000 + static_cast<uint64_t>(i);
        Simulation simulation(variant, seed, kAllFamilies);
        simulation.Run(kSteps);
        total.Add(simulation.stats());
        for (const Simulation::Violated& violated : simulation.violations()) {
          if (reported.insert(violated.family).second) {
            outcome_->violations[violated.family].push_back(violated.message);
          }
        }
      }
      // Shows that the runs reach the interesting states (modes, collateral, caps, imports).
      std::cout << variant.name << ": " << total.ToString() << "\n";
    }
  }

  static void ExpectNoViolation(Family family) {
    auto it = outcome_->violations.find(family);
    if (it == outcome_->violations.end()) return;
    for (const std::string& message : it->second) ADD_FAILURE() << message;
  }

  static Outcome* outcome_;
};

EngineProperty::Outcome* EngineProperty::outcome_ = nullptr;

TEST_F(EngineProperty, ModeMatchesOwnFailureBanCounts) { ExpectNoViolation(kModeCounts); }

TEST_F(EngineProperty, BansMatchTheirCausesAndCollateralStaysWithinRelayBans) {
  ExpectNoViolation(kBanConsistency);
}

TEST_F(EngineProperty, VersionsNeverGoBackAndChangeExactlyWithDecisions) {
  ExpectNoViolation(kVersions);
}

TEST_F(EngineProperty, SelfBuildNeverTrackedAndMemoryCapsHold) {
  ExpectNoViolation(kCapsAndSelfBuild);
}

TEST_F(EngineProperty, ObservationsAndOperatorActionsKeepTheirContract) {
  ExpectNoViolation(kObserveContract);
}

TEST_F(EngineProperty, ExportImportBehavesIdentically) { ExpectNoViolation(kExportImport); }

}  // namespace
}  // namespace breaker::core
