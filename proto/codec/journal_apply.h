#ifndef PROTO_CODEC_JOURNAL_APPLY_H_
#define PROTO_CODEC_JOURNAL_APPLY_H_

// What one entry of breakerd's journal (breaker/state/v1/state.proto, JournalEntry) does to the
// engine: the one definition, used by breakerd (live, and when it replays its journal at
// start-up), by `breakerctl simulate` and by the fuzzers. An engine given the same entries
// from the same state ends in the same state, whichever of them plays the entries.

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "breaker/state/v1/state.pb.h"
#include "breaker/v1/breaker.pb.h"
#include "core/engine.h"
#include "proto/codec/received_batch.h"

namespace breaker::codec {

// What became of one observation of an observations entry.
struct AppliedObservation {
  // OK, or why it was refused: ObservationFromProto's error (the engine then only marks its
  // sequence number handled) or Observe's.
  absl::Status status;
  // What the engine did with it; meaningful when `status` is OK.
  core::ObserveResult observed;
  // The observation's own sequence number and kind, for the acknowledgement and the metrics.
  uint64_t sequence = 0;
  breaker::v1::Observation::EventCase event = breaker::v1::Observation::EVENT_NOT_SET;
};

// What applying one journal entry did.
struct AppliedEntry {
  // The refusal of an admin action (ApplyAdminAction's error), of a reconfiguration (the
  // configuration's or Reconfigure's error; nothing changed), of a fleet id renewal without
  // a fleet id (INVALID_ARGUMENT), or of an observations entry whose batch bytes do not parse
  // (INVALID_ARGUMENT; none of it applied). OK otherwise: observations are refused one by one,
  // below.
  absl::Status status;
  // For an observations entry: one per observation, in the entry's order.
  std::vector<AppliedObservation> observations;
  // A reconfiguration replaced the configuration by a different one.
  bool config_changed = false;
  // The policy's version before the entry.
  uint64_t previous_version = 0;
  // The entry made a new policy version (the engine's policy() is the new one).
  bool policy_changed = false;
};

// Applies `entry` to `engine`, then refreshes the policy. Deterministic: the result and the
// engine's state depend only on the engine's state before and on the entry, never on when the
// entry is played or by whom. A fleet id renewal changes nothing in the engine: the fleet id
// is the caller's to keep (the entry is only checked). An entry without a change does nothing
// but the refresh. Never fails as a whole: refusals are in the result.
//
// An observations entry applies NodeObservations.observations (entries of earlier breakerds),
// then the observations of NodeObservations.batch, read here (ReceivedBatch: in place, or
// parsed). A caller that read the batch already (breakerd, from the bytes it received or
// stored) passes it as `batch`, which then stands for the entry's batch bytes: those are not
// read.
// Not thread-safe: the caller serializes access to `engine`.
AppliedEntry ApplyJournalEntry(const breaker::state::v1::JournalEntry& entry, core::Engine& engine,
                               const ReceivedBatch* batch = nullptr);

// An observation of a batch refused for what it holds.
struct ContentRefusal {
  // Its place in the batch, its sequence number and kind, and why (INVALID_ARGUMENT, naming
  // the field).
  int index = 0;
  uint64_t sequence = 0;
  breaker::v1::Observation::EventCase event = breaker::v1::Observation::EVENT_NOT_SET;
  absl::Status status;
};

// The observations of `batch`, sent by `node_id`, that every engine refuses whatever its
// state: those that do not convert (ObservationFromProto), or that core::Engine::CheckContent
// refuses. breakerd cuts them from the batch before its journal (ReceivedBatch::Keep), so what
// is refused for its content is never stored and never applied, and does not take its
// sequence number. Thread-safe: reads `batch` only.
std::vector<ContentRefusal> RefusedForContent(const ReceivedBatch& batch,
                                              const std::string& node_id);

}  // namespace breaker::codec

#endif  // PROTO_CODEC_JOURNAL_APPLY_H_
