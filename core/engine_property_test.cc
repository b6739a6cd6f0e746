// Randomized property tests of the engine: long random runs of observations, time and operator
// actions over a small fleet, with the engine's invariants (engine_invariants.h, shared with the
// fuzzer) checked after every step.
//
// The runs are deterministic (each is one fixed seed of std::mt19937_64), so a failure is
// reproducible: it names the variant, the seed and the step, and lists the actions that led to
// it. Builders come from a small range and recent block roots are reported again, so that
// collisions (the same root reported twice, by several nodes, a builder in several relays, an
// index changing hands) happen often instead of never.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
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
#include "core/engine_invariants.h"
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
    Config config = WithSmallCaps(BaseConfig());
    config.chain.gloas_fork_epoch = 0;
    config.max_relays = 5;
    config.max_indices_per_relay = 4;
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
    // Relay d's members are banned for as long as it is listed.
    config.blacklisted_relays = {"relay-d.example:9000"};
    variants.push_back({"pre-gloas/mevboost/2-reporters/short-ttl", config});
  }
  return variants;
}

BlockRoot RootOf(uint64_t id) {
  std::string bytes(sizeof(id), '\0');
  for (size_t i = 0; i < sizeof(id); ++i) bytes[i] = static_cast<char>((id >> (8 * i)) & 0xff);
  return BlockRootFromBytes(bytes);
}

// One step of a run (see engine_invariants.h). Generated once, so that two engines can be
// given exactly the same step.
using Action = EngineStep;

// What a run saw, to show that the interesting states were reached.
struct Stats {
  int steps = 0;
  int all_builders = 0;
  int trusted_only = 0;
  int self_build = 0;
  int missed_slot_tripped = 0;
  int steps_with_collateral = 0;
  int steps_with_relay_ban = 0;
  int steps_with_operator_relay_ban = 0;
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
    steps_with_operator_relay_ban += other.steps_with_operator_relay_ban;
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
                        " operator_relay_ban_steps=", steps_with_operator_relay_ban,
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
        2,                         // kBanRelay
        3,                         // kUnbanRelay
    });
    // Pre-Gloas, time moves slot by slot, with rare jumps, so that the in-order block reports
    // keep up with the clock: the missed-slot breaker judges a slot one slot after it (two for
    // the seed rule).
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
    EngineChecker::Options options;
    options.families = families_;
    options.probe_max = kMaxBuilder;
    options.import_every = kImportEvery;
    options.lockstep_steps = kLockstepSteps;
    for (const Endpoint& endpoint : Endpoints()) options.known_relays.push_back(endpoint.id);
    EngineChecker checker(*engine_, options);
    for (step_ = 0; step_ < steps && checker.families() != 0; ++step_) {
      const Action action = NextAction();
      history_.push_back(DescribeStep(action));
      if (history_.size() > kHistory) history_.pop_front();

      const StepResult result = checker.Step(*engine_, action);
      // Only a summary per step: the full policy is printed once, at a violation.
      const Policy& after = engine_->policy();
      history_.back() +=
          absl::StrCat(" -> ", DescribeResult(result), " => v", after.version, " ",
                       ModeName(after.mode), " ", after.banned_builders.size(), " builder(s) and ",
                       after.banned_relays.size(), " relay(s) banned");
      for (const EngineChecker::Violation& violation : checker.violations()) {
        Violation(violation.family, violation.what);
      }
      Count(result);
    }
    stats_.imports = checker.imports();
  }

  struct Violated {
    InvariantFamily family;
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
    kBanRelay,
    kUnbanRelay,
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
    std::string key = absl::StrCat("pk-", builder, "-", generation_[builder]);
    key.resize(48, '.');
    return key;
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
        return action;
      }
      case kRelayTrust: {
        Action action;
        action.kind = Action::Kind::kSetRelayTrust;
        action.relay = Chance(0.05) ? "ftp://relay-x.example" : AnySpelling(AnyEndpoint());
        action.trusted = Chance(0.5);
        return action;
      }
      case kBanRelay: {
        Action action;
        action.kind = Action::Kind::kBanRelay;
        action.relay = Chance(0.05) ? "ftp://relay-x.example" : AnySpelling(AnyEndpoint());
        action.reason = Chance(0.05) ? "" : Chance(0.03) ? std::string(1025, 'r') : "property test";
        const Epoch now = engine_->current_epoch();
        if (Chance(0.85)) {
          action.until_epoch = Chance(0.1)    ? now
                               : Chance(0.03) ? now + (uint64_t{1} << 20) + 1
                                              : now + Uniform(1, 8);
        }
        return action;
      }
      case kUnbanRelay: {
        Action action;
        action.kind = Action::Kind::kUnbanRelay;
        action.relay = Chance(0.05) ? "a b" : AnySpelling(AnyEndpoint());
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
    switch (Uniform(0, 8)) {
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
      case 7:
        action = Observe(slot, BidSeen{kSelfBuild, "", ""});
        break;
      default: {
        // A public key that is not 48 bytes: the service refuses it too, the engine must.
        const BuilderIndex builder = AnyBuilder();
        action = Observe(slot, BidSeen{builder, "", Pubkey(builder).substr(0, 47) + "xx"});
        break;
      }
    }
    if (action.expect == Action::Expect::kAccepted) action.expect = Action::Expect::kInvalid;
    return action;
  }

  // --- Reporting ---

  // Records the violation with what is needed to reproduce it. (The checker stops checking
  // its family: the state that broke it would report the same cause again and again.)
  void Violation(InvariantFamily family, const std::string& what) {
    violations_.push_back(
        {family, absl::StrCat("variant=", variant_.name, " seed=", seed_, " step=", step_,
                              " slot=", engine_.has_value() ? current() : 0, ": ", what,
                              "\nlast actions (oldest first):\n  ", absl::StrJoin(history_, "\n  "),
                              "\npolicy now: ",
                              engine_.has_value() ? DescribeBans(engine_->policy()) : "none")});
  }

  void Count(const StepResult& result) {
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
    if (std::any_of(policy.banned_relays.begin(), policy.banned_relays.end(),
                    [](const auto& entry) { return entry.second.kind == BanKind::kOperator; })) {
      ++stats_.steps_with_operator_relay_ban;
    }
    if (result.status.code() == absl::StatusCode::kResourceExhausted) ++stats_.resource_exhausted;
    if (!result.status.ok()) ++stats_.refused;
    if (result.outcome == ObserveOutcome::kDuplicate) ++stats_.duplicates;
    stats_.versions = static_cast<int>(policy.version);
    stats_.max_banned = std::max(stats_.max_banned, policy.banned_builders.size());
    stats_.max_tracked = std::max(stats_.max_tracked, engine_->builders().size());
  }

  const Variant& variant_;
  const uint64_t seed_;
  // The families to check.
  const uint32_t families_;
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
  std::optional<Engine> engine_;
  int step_ = 0;
  absl::flat_hash_map<std::string, uint64_t> sequences_;
  // Bumped when an index changes hands, to give the newcomer another public key.
  absl::flat_hash_map<BuilderIndex, uint64_t> generation_;
  std::deque<Block> blocks_;
  std::deque<Reveal> reveals_;
  uint64_t next_root_ = 1;
  std::deque<std::string> history_;
  std::vector<Violated> violations_;
  Stats stats_;
};

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
        Simulation simulation(variant, seed, kAllInvariantFamilies);
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

  static void ExpectNoViolation(InvariantFamily family) {
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
