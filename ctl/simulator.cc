#include "ctl/simulator.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "breaker/state/v1/state.pb.h"
#include "core/chain_time.h"
#include "core/engine.h"
#include "core/relay_id.h"
#include "ctl/format.h"
#include "google/protobuf/util/json_util.h"
#include "proto/codec/api_codec.h"
#include "proto/codec/journal_apply.h"
#include "proto/codec/scenario_codec.h"
#include "proto/codec/text_file.h"

namespace breaker::ctl {
namespace {

namespace v1 = ::breaker::v1;

// The timeline's name for the policy the scenario starts with.
constexpr absl::string_view kStartName = "start";

std::string StepName(const v1::Step& step, int number) {
  return step.name().empty() ? absl::StrCat("step ", number) : step.name();
}

// "step 3 (builder 5 fails)": how validation errors name a step.
std::string StepLabel(int number, absl::string_view name) {
  return absl::StrCat("step ", number, " (", name, ")");
}

absl::Status InvalidStep(int number, absl::string_view name, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(StepLabel(number, name), ": ", problem));
}

// What can be told from the step alone, before the engine sees it.
absl::Status ValidateStep(const v1::Step& step, int number, absl::string_view name) {
  switch (step.action_case()) {
    case v1::Step::kObserve:
      if (step.observe().node().empty()) {
        return InvalidStep(number, name, "observe needs a node");
      }
      if (step.observe().observation().event_case() == v1::Observation::EVENT_NOT_SET) {
        return InvalidStep(number, name,
                           "observe needs an observation with an event (bid_seen, "
                           "payload_missing, payload_delivered, blocks_seen, finalized, "
                           "builder_exited or relay_reveal_missing)");
      }
      break;
    case v1::Step::kAdvance:
      if (step.advance().to_case() == v1::Advance::TO_NOT_SET) {
        return InvalidStep(number, name, "advance needs one of slots, epochs, slot or epoch");
      }
      break;
    case v1::Step::kAdmin:
      // Refused by the engine's side too, but an empty action is a mistake in the file, not
      // something the breaker decides.
      if (step.admin().action_case() == state::v1::AdminAction::ACTION_NOT_SET) {
        return InvalidStep(number, name,
                           "admin needs an action (ban, unban, ban_relay, unban_relay, "
                           "builder_trust, relay_trust or reset)");
      }
      break;
    case v1::Step::ACTION_NOT_SET:
      if (!step.has_expect()) {
        return InvalidStep(number, name, "the step has neither an action nor an expectation");
      }
      // Nothing can be refused without an action: the expectation could never hold.
      if (step.expect().has_error_contains()) {
        return InvalidStep(number, name, "error_contains needs an action to refuse");
      }
      break;
  }
  return absl::OkStatus();
}

// The longest advance one step may make. Time is played slot by slot (see Simulate), a few
// microseconds a slot, so this bounds a step to a few seconds; 2^20 slots are 32768 epochs of
// 32 slots, far beyond every period of the breaker, and a longer jump is most likely a
// mistyped absolute slot.
constexpr uint64_t kMaxAdvanceSlots = uint64_t{1} << 20;

// The slot an advance moves to. INVALID_ARGUMENT for a target before `current` (the engine
// would ignore it silently, and the scenario would go on in another time than its author
// meant), past the last slot, or more than kMaxAdvanceSlots ahead.
absl::StatusOr<core::Slot> AdvanceTarget(const v1::Advance& advance, core::Slot current,
                                         const core::ChainSpec& chain, int number,
                                         absl::string_view name) {
  constexpr core::Slot kLast = std::numeric_limits<core::Slot>::max();
  const uint64_t per_epoch = chain.slots_per_epoch;
  core::Slot target = current;
  // What the step asks, for the messages below.
  std::string what;
  bool past_last_slot = false;
  switch (advance.to_case()) {
    case v1::Advance::kSlots:
      what = absl::StrCat("advance by ", advance.slots(), " slots");
      past_last_slot = advance.slots() > kLast - current;
      if (!past_last_slot) target = current + advance.slots();
      break;
    case v1::Advance::kEpochs:
      what = absl::StrCat("advance by ", advance.epochs(), " epochs");
      past_last_slot = advance.epochs() > (kLast - current) / per_epoch;
      if (!past_last_slot) target = current + advance.epochs() * per_epoch;
      break;
    case v1::Advance::kSlot:
      what = absl::StrCat("advance to slot ", advance.slot());
      target = advance.slot();
      break;
    case v1::Advance::kEpoch:
      what = absl::StrCat("advance to epoch ", advance.epoch());
      past_last_slot = advance.epoch() > kLast / per_epoch;
      if (!past_last_slot) {
        target = core::FirstSlotOf(advance.epoch(), chain);
        absl::StrAppend(&what, " (slot ", target, ")");
      }
      break;
    case v1::Advance::TO_NOT_SET:
      return InvalidStep(number, name, "advance needs one of slots, epochs, slot or epoch");
  }
  if (past_last_slot) {
    return InvalidStep(number, name, absl::StrCat(what, " goes past the last slot"));
  }
  if (target < current) {
    return InvalidStep(number, name,
                       absl::StrCat(what, " goes back: the current slot is ", current, " (epoch ",
                                    core::EpochOf(current, chain), ")"));
  }
  if (target - current > kMaxAdvanceSlots) {
    return InvalidStep(
        number, name,
        absl::StrCat(what, " is ", target - current, " slots long; one step advances at most ",
                     kMaxAdvanceSlots, " slots (start the scenario later instead)"));
  }
  return target;
}

// The journal entry breakerd writes for one node's observation, with the scenario's
// conveniences resolved: slot 0 and short block roots (ExpandScriptedObservation), sequence 0.
state::v1::JournalEntry ObservationEntry(const v1::NodeObservation& step,
                                         const core::Engine& engine) {
  v1::ObservationBatch batch;
  v1::Observation* proto = batch.add_observations();
  *proto = codec::ExpandScriptedObservation(step.observation(), engine.current_slot());
  if (proto->sequence() == 0) {
    // The engine keeps each node's highest handled number, refused observations included, so
    // the next one is never taken for a replay.
    const auto& sequences = engine.node_sequences();
    auto previous = sequences.find(step.node());
    proto->set_sequence(previous == sequences.end() ? 1 : previous->second + 1);
  }
  state::v1::JournalEntry entry;
  state::v1::NodeObservations* observations = entry.mutable_observations();
  observations->set_node_id(step.node());
  observations->set_batch(batch.SerializeAsString());
  return entry;
}

// The step's outcome: an observation's refusal, or the entry's (an admin action's). A replay
// (kDuplicate) is ignored, not refused: breakerd acknowledges it.
absl::Status ActionStatus(const codec::AppliedEntry& applied) {
  if (!applied.status.ok()) return applied.status;
  for (const codec::AppliedObservation& observation : applied.observations) {
    if (!observation.status.ok()) return observation.status;
  }
  return absl::OkStatus();
}

std::string BuilderSetText(const std::set<core::BuilderIndex>& builders) {
  return absl::StrCat("{", absl::StrJoin(builders, ", "), "}");
}

std::string RelaySetText(const std::set<std::string>& relays) {
  return absl::StrCat("{", absl::StrJoin(relays, ", "), "}");
}

// " (not banned: 3; unexpectedly banned: 7)", or "" when the sets are equal.
template <typename T, typename Format>
std::string SetDifference(const std::set<T>& expected, const std::set<T>& found, Format format) {
  std::set<T> missing;
  std::set<T> extra;
  std::set_difference(expected.begin(), expected.end(), found.begin(), found.end(),
                      std::inserter(missing, missing.end()));
  std::set_difference(found.begin(), found.end(), expected.begin(), expected.end(),
                      std::inserter(extra, extra.end()));
  std::vector<std::string> parts;
  if (!missing.empty()) parts.push_back(absl::StrCat("not banned: ", format(missing)));
  if (!extra.empty()) parts.push_back(absl::StrCat("unexpectedly banned: ", format(extra)));
  return parts.empty() ? "" : absl::StrCat(" (", absl::StrJoin(parts, "; "), ")");
}

// Checks `expect` against the engine's policy and the step's action result; appends one
// message per expectation that does not hold. INVALID_ARGUMENT for an expected relay that is
// not a relay identifier at all: the expectation cannot be checked.
absl::Status CheckExpectation(const v1::Expectation& expect, const absl::Status& action,
                              const v1::Policy& policy, int number, absl::string_view name,
                              std::vector<std::string>& messages) {
  if (expect.has_error_contains()) {
    if (action.ok()) {
      messages.push_back(absl::StrCat("error_contains: expected the action to be refused with \"",
                                      expect.error_contains(), "\", but it succeeded"));
    } else if (!absl::StrContains(action.message(), expect.error_contains())) {
      messages.push_back(absl::StrCat("error_contains: expected an error containing \"",
                                      expect.error_contains(), "\", got ", action.ToString()));
    }
  } else if (!action.ok()) {
    messages.push_back(absl::StrCat("the action was refused: ", action.ToString()));
  }

  if (expect.has_mode() && expect.mode() != policy.mode()) {
    messages.push_back(absl::StrCat("mode: expected ", v1::Mode_Name(expect.mode()), ", got ",
                                    v1::Mode_Name(policy.mode()),
                                    policy.mode_reason().empty() ? "" : " (", policy.mode_reason(),
                                    policy.mode_reason().empty() ? "" : ")"));
  }

  if (expect.has_banned_builders()) {
    const std::set<core::BuilderIndex> expected(expect.banned_builders().builder_indices().begin(),
                                                expect.banned_builders().builder_indices().end());
    std::set<core::BuilderIndex> found;
    for (const v1::BuilderBan& ban : policy.banned_builders()) found.insert(ban.builder_index());
    if (expected != found) {
      messages.push_back(absl::StrCat("banned builders: expected ", BuilderSetText(expected),
                                      ", got ", BuilderSetText(found),
                                      SetDifference(expected, found, BuilderSetText)));
    }
  }

  if (expect.has_banned_relays()) {
    std::set<std::string> expected;
    for (const std::string& relay : expect.banned_relays().relays()) {
      absl::StatusOr<std::string> normalized = core::NormalizeRelayId(relay);
      if (!normalized.ok()) {
        return InvalidStep(number, name,
                           absl::StrCat("expect.banned_relays: ", normalized.status().message()));
      }
      expected.insert(*std::move(normalized));
    }
    std::set<std::string> found;
    for (const v1::RelayBan& ban : policy.banned_relays()) found.insert(ban.relay());
    if (expected != found) {
      messages.push_back(absl::StrCat("banned relays: expected ", RelaySetText(expected), ", got ",
                                      RelaySetText(found),
                                      SetDifference(expected, found, RelaySetText)));
    }
  }

  if (expect.has_missed_slots_tripped() &&
      expect.missed_slots_tripped() != policy.missed_slots().tripped()) {
    const v1::MissedSlotState& missed = policy.missed_slots();
    messages.push_back(absl::StrCat(
        "missed_slots_tripped: expected ", expect.missed_slots_tripped() ? "true" : "false",
        ", got ", missed.tripped() ? "true" : "false",
        missed.tripped()
            ? absl::StrCat(" (", missed.rule(), ")")
            : absl::StrCat(" (", missed.consecutive_missed(), " consecutive missed, ",
                           missed.missed_in_window(), " in the window, ",
                           missed.epochs_since_finalization(), " epochs since finalization)")));
  }
  return absl::OkStatus();
}

TimelineEntry EntryFor(int step, std::string step_name, const core::Engine& engine) {
  TimelineEntry entry;
  entry.step = step;
  entry.step_name = std::move(step_name);
  entry.slot = engine.current_slot();
  entry.epoch = engine.current_epoch();
  entry.policy = codec::PolicyToProto(engine.policy());
  return entry;
}

// --- Output ---

// `text` with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD.
// The protobuf JSON printer silently drops such bytes (and logs an error); the text format
// parser lets them into names, so a step name typed in another encoding would lose letters.
std::string ValidUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char lead = static_cast<unsigned char>(text[i]);
    // The sequence's length, and the range its second byte must fall in (which excludes
    // overlong forms, surrogates and code points above U+10FFFF).
    size_t length = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xBF;
    if (lead < 0x80) {
      length = 1;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    }
    bool valid = length > 0 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k) {
      const unsigned char c = static_cast<unsigned char>(text[i + k]);
      valid = k == 1 ? (c >= low && c <= high) : (c >= 0x80 && c <= 0xBF);
    }
    if (valid) {
      out.append(text.data() + i, length);
      i += length;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

// Plays journal entries on one engine as breakerd applies them, recording every new policy
// version in the timeline and, when asked, every entry in a journal.
class Player {
 public:
  Player(core::Engine& engine, SimulationResult& result,
         std::vector<state::v1::JournalEntry>* journal)
      : engine_(engine), result_(result), journal_(journal) {}

  codec::AppliedEntry Play(state::v1::JournalEntry entry, int step, const std::string& name) {
    codec::AppliedEntry applied = codec::ApplyJournalEntry(entry, engine_);
    if (applied.policy_changed) result_.timeline.push_back(EntryFor(step, name, engine_));
    if (journal_ != nullptr) journal_->push_back(std::move(entry));
    return applied;
  }

 private:
  core::Engine& engine_;
  SimulationResult& result_;
  std::vector<state::v1::JournalEntry>* const journal_;
};

}  // namespace

absl::StatusOr<v1::Scenario> LoadScenarioFile(const std::string& path) {
  absl::StatusOr<std::string> text = codec::ReadTextFile(path, "scenario file");
  if (!text.ok()) return text.status();
  v1::Scenario scenario;
  if (absl::Status status = codec::ParseTextFormat(*text, path, scenario); !status.ok()) {
    return status;
  }
  return scenario;
}

absl::StatusOr<SimulationResult> Simulate(const core::Config& config, const v1::Scenario& scenario,
                                          std::vector<state::v1::JournalEntry>* journal) {
  absl::StatusOr<core::Engine> created = core::Engine::Create(config, scenario.start_slot());
  if (!created.ok()) return created.status();
  core::Engine& engine = *created;

  SimulationResult result;
  result.description = scenario.description();
  result.timeline.push_back(EntryFor(0, std::string(kStartName), engine));
  Player player(engine, result, journal);

  for (int i = 0; i < scenario.step_size(); ++i) {
    const v1::Step& step = scenario.step(i);
    const int number = i + 1;
    const std::string name = StepName(step, number);
    if (absl::Status status = ValidateStep(step, number, name); !status.ok()) return status;

    // Each action is played as the journal entries breakerd writes for it, which breakerd
    // follows with a refresh of the policy, refused or not.
    absl::Status action;
    switch (step.action_case()) {
      case v1::Step::kObserve:
        action = ActionStatus(player.Play(ObservationEntry(step.observe(), engine), number, name));
        break;
      case v1::Step::kAdvance: {
        absl::StatusOr<core::Slot> target =
            AdvanceTarget(step.advance(), engine.current_slot(), config.chain, number, name);
        if (!target.ok()) return target.status();
        // One slot at a time, as breakerd's clock moves it (a tick at every slot boundary):
        // the missed-slot breaker judges each slot as it passes, so one jump would skip
        // verdicts that breakerd reaches (a run that trips when its last slot is judged is
        // over by the slot after). Each new version on the way is a line of the timeline.
        while (engine.current_slot() < *target) {
          state::v1::JournalEntry entry;
          entry.set_advance_to_slot(engine.current_slot() + 1);
          player.Play(std::move(entry), number, name);
        }
        break;
      }
      case v1::Step::kAdmin: {
        state::v1::JournalEntry entry;
        *entry.mutable_admin() = step.admin();
        action = ActionStatus(player.Play(std::move(entry), number, name));
        break;
      }
      case v1::Step::ACTION_NOT_SET:
        break;
    }

    if (!step.has_expect() && action.ok()) continue;
    std::vector<std::string> messages;
    if (absl::Status status = CheckExpectation(
            step.expect(), action, codec::PolicyToProto(engine.policy()), number, name, messages);
        !status.ok()) {
      return status;
    }
    for (std::string& message : messages) {
      result.failures.push_back(ExpectationFailure{number, name, std::move(message)});
    }
  }
  return result;
}

absl::StatusOr<SimulationResult> SimulateJournal(
    const core::Config& config, core::Slot start_slot,
    const std::vector<state::v1::JournalEntry>& journal) {
  absl::StatusOr<core::Engine> created = core::Engine::Create(config, start_slot);
  if (!created.ok()) return created.status();
  SimulationResult result;
  result.timeline.push_back(EntryFor(0, std::string(kStartName), *created));
  Player player(*created, result, nullptr);
  for (size_t i = 0; i < journal.size(); ++i) {
    const int number = static_cast<int>(i) + 1;
    player.Play(journal[i], number, absl::StrCat("entry ", number));
  }
  return result;
}

void PrintTimeline(const SimulationResult& result, Output& out) {
  if (!result.description.empty()) out.Line(result.description);
  Table table({"step", "name", "slot", "epoch", "version", "mode", "banned builders",
               "banned relays", "reason"});
  for (const TimelineEntry& entry : result.timeline) {
    const v1::Policy& policy = entry.policy;
    std::vector<std::string> builders;
    for (const v1::BuilderBan& ban : policy.banned_builders()) {
      builders.push_back(absl::StrCat(ban.builder_index()));
    }
    std::vector<std::string> relays;
    for (const v1::RelayBan& ban : policy.banned_relays()) relays.push_back(ban.relay());
    table.AddRow({absl::StrCat(entry.step), OrDash(entry.step_name), absl::StrCat(entry.slot),
                  absl::StrCat(entry.epoch), absl::StrCat(policy.version()),
                  ModeName(policy.mode()), OrDash(absl::StrJoin(builders, ",")),
                  OrDash(absl::StrJoin(relays, ",")), OrDash(policy.reason())});
  }
  out.Print(table);
  for (const ExpectationFailure& failure : result.failures) {
    out.Line(absl::StrCat("FAILED step ", failure.step, " (", failure.step_name,
                          "): ", failure.message));
  }
}

std::string FormatTimeline(const SimulationResult& result) {
  std::ostringstream stream;
  Output out(stream);
  PrintTimeline(result, out);
  return stream.str();
}

std::string TimelineToJson(const SimulationResult& result) {
  v1::SimulationReport report;
  report.set_description(ValidUtf8(result.description));
  for (const TimelineEntry& entry : result.timeline) {
    v1::SimulationReport::Entry* out = report.add_timeline();
    out->set_step(entry.step);
    out->set_step_name(ValidUtf8(entry.step_name));
    out->set_slot(entry.slot);
    out->set_epoch(entry.epoch);
    *out->mutable_policy() = entry.policy;
  }
  for (const ExpectationFailure& failure : result.failures) {
    v1::SimulationReport::Failure* out = report.add_failures();
    out->set_step(failure.step);
    out->set_step_name(ValidUtf8(failure.step_name));
    out->set_message(ValidUtf8(failure.message));
  }
  google::protobuf::util::JsonPrintOptions options;
  // Every field present, so that a script need not know proto3's defaults (an empty ban list,
  // a breaker that has not tripped).
  options.always_print_primitive_fields = true;
  std::string json;
  // Printing fails on nothing but invalid UTF-8: ValidUtf8 removed it from the report's own
  // strings, and the policy's are the engine's (identifiers, numbers, reasons built from them).
  if (!google::protobuf::util::MessageToJsonString(report, &json, options).ok()) {
    return "{\"error\":\"the timeline cannot be printed as JSON\"}\n";
  }
  return json + "\n";
}

}  // namespace breaker::ctl
