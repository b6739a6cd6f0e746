#ifndef CORE_ENGINE_INVARIANTS_H_
#define CORE_ENGINE_INVARIANTS_H_

// The engine's invariants, for tests that drive an engine step by step: the randomized property
// test (engine_property_test.cc) and the fuzzer (engine_fuzzer.cc) check the same rules through
// EngineChecker, so that a rule added here is held by both.
//
// A step is one call into the engine (an observation, time, an operator action, a new
// configuration) followed by the RefreshPolicy() the service makes after each. After every
// step, EngineChecker checks these families of invariants:
//   kVersions          the version changes exactly when the decisions do, never goes back, and
//                      a second refresh publishes nothing;
//   kObserveContract   each call answers as documented (refusals, duplicates, operator
//                      actions), a refused observation changes nothing, and after a bid under
//                      a key other than the one remembered for its index the index has no
//                      record (nor the relays of its previous owner);
//   kModeCounts        the mode follows from the builders banned by their own failures and the
//                      missed-slot breaker;
//   kBanConsistency    every ban in the policy has its cause in the state and no cause is
//                      missing; collateral bans stay within their relays' bans; a relay the
//                      operator banned is banned with every member;
//   kCapsAndSelfBuild  the memory caps hold (remembered public keys too), relay keys are
//                      normalized, and the self-build index is never tracked nor banned;
//   kExportImport      Import(Export()) gives an engine that answers and publishes alike, step
//                      for step, for a while.
// None of them depends on how the steps were chosen: whatever the caller knows beyond the
// engine's own state (an observation it made malformed on purpose) it passes as an
// expectation.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/config.h"
#include "core/engine.h"
#include "core/observation.h"
#include "core/policy.h"
#include "core/types.h"

namespace breaker::core {

enum InvariantFamily : uint32_t {
  kModeCounts = 1 << 0,
  kBanConsistency = 1 << 1,
  kVersions = 1 << 2,
  kCapsAndSelfBuild = 1 << 3,
  kObserveContract = 1 << 4,
  kExportImport = 1 << 5,
};

inline constexpr uint32_t kAllInvariantFamilies = kModeCounts | kBanConsistency | kVersions |
                                                  kCapsAndSelfBuild | kObserveContract |
                                                  kExportImport;

absl::string_view InvariantFamilyName(InvariantFamily family);

// `config` with tight caps and a tolerant, finite escalation, so that a short randomized run
// reaches every eviction path: two reporters per failure, 16 tracked builders, 3 relays of 3
// learned members, one failure tolerated, critical at 3 failures for 16 epochs, back-off of
// 40 epochs (records live long, so the tracked-builders cap fills). Shared by the property test
// and the fuzzers.
Config WithSmallCaps(Config config);

// One call into the engine. Built once, so that two engines can be given exactly the same step.
struct EngineStep {
  enum class Kind {
    kAdvance,
    kObserve,
    kBan,
    kUnban,
    kSetBuilderTrust,
    kSetRelayTrust,
    kReset,
    kReconfigure,
    kBanRelay,
    kUnbanRelay,
  };
  // What Observe must answer. kUnknown: the checker derives what it can from the engine's
  // state (the node's sequence number, the slot range, the self-build index, the attested
  // fraction, the relay's spelling) and accepts any answer the rest allows.
  enum class Expect { kUnknown, kAccepted, kDuplicate, kOutOfRange, kInvalid };

  Kind kind = Kind::kAdvance;
  // kAdvance.
  Slot slot = 0;
  // kObserve.
  Observation observation;
  Expect expect = Expect::kUnknown;
  // kBan, kUnban, kSetBuilderTrust.
  BuilderIndex builder = 0;
  // kBan, kBanRelay.
  std::string reason;
  std::optional<Epoch> until_epoch;
  // kSetBuilderTrust, kSetRelayTrust.
  bool trusted = false;
  // kSetRelayTrust, kBanRelay, kUnbanRelay.
  std::string relay;
  // kReconfigure.
  Config config;
};

// What an engine answered to a step.
struct StepResult {
  absl::Status status;
  std::optional<ObserveOutcome> outcome;
  // What Observe said it recorded.
  RecordedFailure recorded = RecordedFailure::kNone;
  // Advance's answer.
  bool changed = false;
  // The policy version right after the call, before the step's RefreshPolicy().
  uint64_t version_after_action = 0;
  // What the step's RefreshPolicy() answered.
  bool refreshed = false;
};

// Makes the step's call and then RefreshPolicy().
StepResult ApplyStep(Engine& engine, const EngineStep& step);

std::string DescribeStep(const EngineStep& step);
std::string DescribeResult(const StepResult& result);
// The version, mode and every ban, canonically ordered: one line for a failure message.
std::string DescribeBans(const Policy& policy);

// Everything the engine's inspection API shows (builder records, relay records and, with
// `with_sequences`, the nodes' sequence numbers), in a canonical order: two engines that
// behave alike print the same. A refused observation still advances its node's number, hence
// the option to leave the numbers out.
std::string EngineFingerprint(const Engine& engine, bool with_sequences = true);

// Applies steps to an engine and checks the invariants after each.
class EngineChecker {
 public:
  struct Options {
    // The families to check.
    uint32_t families = kAllInvariantFamilies;
    // In the fallback modes, builders 0..probe_max (and every builder the engine knows) are
    // asked Policy::IsAllowed.
    BuilderIndex probe_max = 40;
    // Every import_every steps the engine is exported and imported, and the copy is run in
    // lock step with it for lockstep_steps steps. 0: never.
    int import_every = 50;
    int lockstep_steps = 20;
    // When not empty, the only normalized relay identifiers the engine may hold: a caller that
    // spells a few endpoints many ways lists their identifiers, so that a spelling normalized
    // to another identifier is caught. Empty: any identifier that normalizes to itself.
    std::vector<std::string> known_relays;
  };

  struct Violation {
    InvariantFamily family;
    std::string what;
  };

  // `engine` is the engine the steps will be applied to, in its state before the first.
  EngineChecker(const Engine& engine, Options options);

  // Applies `step` to `engine` (the engine given to the constructor, or one imported from it
  // that behaves alike) and checks the invariants. See violations().
  StepResult Step(Engine& engine, const EngineStep& step);

  // What the last Step() found, at most one per family. A violated family is not checked
  // again: the state that broke it would report the same cause at every later step.
  const std::vector<Violation>& violations() const { return violations_; }
  // The families still checked.
  uint32_t families() const { return families_; }
  // Steps applied so far.
  int steps() const { return steps_; }
  // Export/import copies started so far.
  int imports() const { return imports_; }

 private:
  EngineStep::Expect DeriveExpectation(const Engine& engine, const Observation& observation) const;
  void LearnConfig(const Config& config);
  void ComputeServing(const Engine& engine);
  std::vector<std::string> Serving(BuilderIndex builder) const;
  bool Trusted(const Engine& engine, BuilderIndex builder) const;
  // Whether a relay the operator bans (configured blacklist or an operator ban in force) serves
  // `builder` (learned within the TTL or configured).
  bool ServedByOperatorBannedRelay(const Engine& engine, BuilderIndex builder) const;
  bool OperatorBansRelay(const Engine& engine, const std::string& id) const;

  std::string CheckVersions(Engine& engine, const EngineStep& step, const StepResult& result,
                            uint64_t version_before_refresh);
  std::string CheckContract(const Engine& engine, const EngineStep& step, EngineStep::Expect expect,
                            const StepResult& result, const std::string& fingerprint_before,
                            const Config* config_before) const;
  std::string CheckKey(const Engine& engine, const BidSeen& bid) const;
  std::string CheckServing(const Engine& engine) const;
  std::string CheckMode(const Engine& engine) const;
  std::string CheckBans(const Engine& engine) const;
  std::string CheckCaps(const Engine& engine) const;
  void StartShadow(const Engine& engine);
  std::string StepShadow(const Engine& engine, const EngineStep& step, const StepResult& result);

  void Check(InvariantFamily family, const std::string& problem);
  // Sets the cap allowances from the engine's sizes: at the start, and after a new
  // configuration.
  void AllowWhatIsHeld(const Engine& engine);
  // Lowers the allowances to what the engine holds now (never below the caps).
  void ShrinkAllowances(const Engine& engine);

  const Options options_;
  uint32_t families_;
  int steps_ = 0;
  int imports_ = 0;
  std::vector<Violation> violations_;

  // The policy as of its latest version: the policy before the step being checked (copying
  // it at every step would cost more than the engine's own work).
  Policy previous_policy_;
  uint64_t max_version_ = 0;
  // The trust the operator set explicitly with SetBuilderTrust, which survives Reset() and
  // wins over a trusted relay's membership.
  absl::flat_hash_map<BuilderIndex, bool> trust_overrides_;
  // The configured relays (normalized identifier -> configured indices), from the
  // configuration in force.
  absl::flat_hash_map<std::string, std::vector<BuilderIndex>> configured_relays_;
  // The configured blacklisted_relays, normalized.
  absl::flat_hash_set<std::string> configured_relay_blacklist_;
  // Every relay identifier the engine has held or been configured with, sorted: the relays
  // that Policy::IsAllowed is probed through, one per step in turn.
  std::vector<std::string> probe_relays_;
  absl::flat_hash_set<std::string> probe_relay_set_;
  // The first relay identifier found not normalized (or not among Options::known_relays),
  // checked once per identifier, when it is added to probe_relays_.
  std::string bad_relay_id_;
  // For the current step: the relays serving each builder (learned within the TTL or
  // configured), as keys of engine.relays(), derived in one pass. Asking
  // engine.RelaysServing() for every banned builder at every step would cost more than the
  // engine's own work; CheckServing() compares the two now and then.
  absl::flat_hash_map<BuilderIndex, std::vector<const std::string*>> serving_;
  // The memory caps hold, except that a configuration that lowers a cap evicts down to it at
  // once but for the records that hold an active ban, and their keys (Engine::Reconfigure),
  // which stay beyond it. So each count is bounded by its cap or by what a lowered cap found,
  // and that excess may only shrink.
  size_t builders_allowance_ = 0;
  size_t keys_allowance_ = 0;
  size_t relays_allowance_ = 0;
  absl::flat_hash_map<std::string, size_t> learned_allowance_;
  // For a bid: what the engine knew of its index before it (see CheckKey).
  struct KeyBefore {
    std::optional<BuilderKey> key;
    bool had_record = false;
  };
  std::optional<KeyBefore> key_before_;
  // For kBanRelay and kUnbanRelay: the operator's ban of the step's relay before it, if any.
  std::optional<OperatorBan> relay_ban_before_;
  // The copy made by Import(Export()), run in lock step for a while.
  std::optional<Engine> shadow_;
  int lockstep_left_ = 0;
};

}  // namespace breaker::core

#endif  // CORE_ENGINE_INVARIANTS_H_
