#ifndef CTL_SIMULATOR_H_
#define CTL_SIMULATOR_H_

// `breakerctl simulate`: plays a scenario (breaker/v1/scenario.proto) on the breaker engine
// offline, with the same checks and the same policy recomputation as breakerd, and records
// every new policy version and every failed expectation.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "breaker/state/v1/state.pb.h"
#include "breaker/v1/breaker.pb.h"
#include "breaker/v1/scenario.pb.h"
#include "core/config.h"
#include "core/types.h"
#include "ctl/format.h"

namespace breaker::ctl {

// A new policy version, and the step that made it.
struct TimelineEntry {
  // 0 for the policy the scenario starts with; steps count from 1.
  int step = 0;
  // The step's name ("step N" when the scenario gives none).
  std::string step_name;
  core::Slot slot = 0;
  core::Epoch epoch = 0;
  breaker::v1::Policy policy;
};

// An expectation that did not hold.
struct ExpectationFailure {
  int step = 0;
  std::string step_name;
  // What was expected and what was found, e.g. "mode: expected MODE_TRUSTED_ONLY, got
  // MODE_ALL_BUILDERS".
  std::string message;
};

struct SimulationResult {
  std::string description;
  std::vector<TimelineEntry> timeline;
  std::vector<ExpectationFailure> failures;
};

// Reads a text-format breaker.v1.Scenario. Returns NOT_FOUND for a missing file and
// INVALID_ARGUMENT with the parser's line and column for a malformed one.
absl::StatusOr<breaker::v1::Scenario> LoadScenarioFile(const std::string& path);

// Plays `scenario` under `config`. Each step's action becomes the journal entries breakerd
// writes for it (an observation, one advance per slot, an admin action), applied by
// codec::ApplyJournalEntry as breakerd applies them. When `journal` is not null, it receives
// those entries in order: a breakerd whose state holds that journal (from an empty state at
// the scenario's start slot, under `config`) publishes the timeline's last policy.
// Returns INVALID_ARGUMENT naming the step for a scenario that cannot be played (a step
// without node, an advance backwards, ...). A refused action or an unmet expectation is not
// an error: it is a failure in the result.
absl::StatusOr<SimulationResult> Simulate(
    const core::Config& config, const breaker::v1::Scenario& scenario,
    std::vector<breaker::state::v1::JournalEntry>* journal = nullptr);

// Plays the entries of a breakerd journal in order, from an empty state at `start_slot` under
// `config`, as breakerd replays them: the timeline has a line per entry that made a new policy
// version (step: the entry's number from 1). Returns Engine::Create's error for an invalid
// configuration. A refused entry is not an error: breakerd journals an operator's action or a
// reconfiguration before the engine judges it, and replays a refusal as a refusal.
absl::StatusOr<SimulationResult> SimulateJournal(
    const core::Config& config, core::Slot start_slot,
    const std::vector<breaker::state::v1::JournalEntry>& journal);

// The timeline for people, to `out`: the scenario's description, a table with one line per
// version (step, slot, epoch, version, mode, banned builders and relays, reason), then one line
// per failed expectation. Every string from the scenario or the configuration is escaped (as
// Output escapes), and the columns are aligned on the escaped text.
void PrintTimeline(const SimulationResult& result, Output& out);
// What PrintTimeline writes, as a string.
std::string FormatTimeline(const SimulationResult& result);

// The timeline as JSON for scripts: a breaker.v1.SimulationReport in proto JSON, every field
// present, one line. Fields print in their declared order, so the same result gives the same
// bytes. Bytes of names that are not UTF-8 become U+FFFD.
std::string TimelineToJson(const SimulationResult& result);

}  // namespace breaker::ctl

#endif  // CTL_SIMULATOR_H_
