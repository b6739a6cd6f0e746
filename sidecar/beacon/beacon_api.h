#ifndef SIDECAR_BEACON_BEACON_API_H_
#define SIDECAR_BEACON_BEACON_API_H_

// The sidecar's client of its beacon node's Beacon API (ethereum/beacon-APIs): the few REST
// reads the observer needs, decoded, and the event stream. Every read is bounded: its body's
// size, its time, and for the event stream the length of a line, of an event, and the events
// per second. A node that answers garbage gets an error naming what was wrong, never a crash.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "core/types.h"
#include "sidecar/beacon/sse_parser.h"
#include "sidecar/ssz/beacon_block.h"

namespace httplib {
class Client;
}  // namespace httplib

namespace breaker::sidecar {

struct BeaconApiLimits {
  // Largest REST answer body read.
  size_t max_body_bytes = 8 << 20;
  // Longest a REST read may take; also the connection timeout of the event stream.
  absl::Duration request_timeout = absl::Seconds(10);
  // Longest the event stream may stay silent before it is dropped (and reopened).
  absl::Duration stream_idle_timeout = absl::Seconds(60);
  SseParser::Limits sse;
  // Events per second passed on; the excess of a second is dropped and counted.
  uint32_t max_events_per_second = 500;
};

// The chain settings a node says it follows (/eth/v1/beacon/genesis, /eth/v1/config/spec).
struct NodeChain {
  int64_t genesis_time_unix = 0;
  uint64_t seconds_per_slot = 0;
  uint64_t slots_per_epoch = 0;
  // Absent when the node's spec does not name the fork.
  std::optional<core::Epoch> gloas_fork_epoch;
  // The limits of the node's preset (its spec's PRESET_BASE, then each limit the spec lists);
  // mainnet's when the spec names none.
  ssz::Preset preset = ssz::Preset::kMainnet;

  // The node schedules Gloas: its spec names a fork epoch, and not the far future's.
  bool SchedulesGloas() const {
    return gloas_fork_epoch.has_value() && *gloas_fork_epoch != core::kFarFutureEpoch;
  }
};

// How the event stream's topics go in its query. The Beacon API's OpenAPI description makes
// `topics` an array, which the spec's query style reads either way, and clients differ:
// Lodestar 1.5 never answers the comma-joined form, other nodes read only that one.
enum class TopicsForm {
  kRepeated,  // ?topics=a&topics=b
  kComma,     // ?topics=a,b
};

// "repeated", "comma".
absl::string_view TopicsFormName(TopicsForm form);

struct SyncStatus {
  bool is_syncing = false;
  bool is_optimistic = false;
};

// One node of the node's fork choice. `weight` is the votes for the block and for every
// descendant (as proto-array keeps it); `parent_root` is absent for the tree's anchor.
struct ForkChoiceNode {
  core::Slot slot = 0;
  core::BlockRoot root;
  uint64_t weight = 0;
  std::optional<core::BlockRoot> parent_root;
};

// The votes for block `root` itself: its weight minus its children's weights (the votes its
// descendants hold). 0 when `root` is not among `nodes`.
uint64_t OwnWeight(const std::vector<ForkChoiceNode>& nodes, const core::BlockRoot& root);

// A validator the node knows: its public key (0x and 96 lower-case hex digits) and index.
struct ValidatorKeyIndex {
  std::string pubkey;
  uint64_t index = 0;
};

// The proposer of one slot (/eth/v1/validator/duties/proposer/{epoch}); pubkey as above.
struct ProposerDuty {
  std::string pubkey;
  uint64_t validator_index = 0;
  core::Slot slot = 0;
};

// `text` in lower case when it is a validator's public key (0x and 96 hex digits, any case);
// nullopt otherwise.
std::optional<std::string> ValidatorPubkey(absl::string_view text);

// The decoders of the node's answers, pure (BeaconApi's reads call them on the bodies they
// get; fuzzed by beacon_fuzzer). Each returns DATA_LOSS naming the endpoint and the field for
// an answer that is not what the spec says.
//
// /eth/v1/beacon/genesis and /eth/v1/config/spec.
absl::StatusOr<NodeChain> DecodeChain(absl::string_view genesis_body, absl::string_view spec_body);
absl::StatusOr<SyncStatus> DecodeSyncing(absl::string_view body);
// The roots of the headers of `slot` (others, of a node that ignores the query, are skipped).
absl::StatusOr<std::vector<core::BlockRoot>> DecodeHeaders(absl::string_view body, core::Slot slot);
absl::StatusOr<core::Epoch> DecodeFinalizedEpoch(absl::string_view body);
absl::StatusOr<std::vector<ForkChoiceNode>> DecodeForkChoice(absl::string_view body);
absl::StatusOr<core::BuilderIndex> DecodeBlockBidBuilder(absl::string_view body);
// The validators of the answer, each of `asked` (lower-case keys), at most as many.
absl::StatusOr<std::vector<ValidatorKeyIndex>> DecodeValidators(
    absl::string_view body, const std::vector<std::string>& asked);
// The duties of `epoch`, at most `slots_per_epoch`. REQUIRES: slots_per_epoch > 0.
absl::StatusOr<std::vector<ProposerDuty>> DecodeProposerDuties(absl::string_view body,
                                                               core::Epoch epoch,
                                                               uint64_t slots_per_epoch);

// Public keys asked of the node in one read, at most: about 5 kB of query.
inline constexpr size_t kMaxValidatorIdsPerRead = 50;

// Counters of what the node sent that was refused or dropped.
struct BeaconApiStats {
  uint64_t bad_answers = 0;
  uint64_t dropped_events = 0;
  uint64_t streams_opened = 0;
};

// This class is thread-safe: REST reads may run on several threads at once, and Interrupt
// from any thread stops the stream in progress.
class BeaconApi {
 public:
  // `base` is "scheme://host[:port]" and `path_prefix` what goes before every path ("" or
  // "/prefix"). `clock` times each read and the events per second. REQUIRES: `clock` outlives
  // the client.
  BeaconApi(std::string base, std::string path_prefix, BeaconApiLimits limits, const Clock& clock);
  ~BeaconApi();

  // Each REST read returns UNAVAILABLE when the node cannot be reached or answers 5xx,
  // DEADLINE_EXCEEDED past request_timeout, RESOURCE_EXHAUSTED for a body over
  // max_body_bytes, and DATA_LOSS for an answer that is not what the spec says (the message
  // names the endpoint and the field), CANCELLED once Interrupt() was called (a request in
  // flight then ends at once).
  absl::StatusOr<NodeChain> GetChain();
  absl::StatusOr<SyncStatus> GetSyncing();
  // The roots of the node's blocks at `slot` (/eth/v1/beacon/headers?slot=); none for a 404.
  absl::StatusOr<std::vector<core::BlockRoot>> GetHeaders(core::Slot slot);
  // The epoch of the node's finalized checkpoint
  // (/eth/v1/beacon/states/head/finality_checkpoints).
  absl::StatusOr<core::Epoch> GetFinalizedEpoch();
  // /eth/v1/debug/fork_choice; NOT_FOUND when the node does not serve it.
  absl::StatusOr<std::vector<ForkChoiceNode>> GetForkChoice();
  // Gloas: the builder index the bid in block `root` names (/eth/v2/beacon/blocks/{root}).
  absl::StatusOr<core::BuilderIndex> GetBlockBidBuilder(const core::BlockRoot& root);
  // The indices of those of `pubkeys` (0x and 96 hex digits each, at most
  // kMaxValidatorIdsPerRead: INVALID_ARGUMENT otherwise) the node knows
  // (/eth/v1/beacon/states/head/validators?id=...): a key not yet deposited is absent. The
  // keys go as repeated `id` keys, and comma-joined too when that finds fewer than asked
  // (clients read one form or the other). Entries for keys not asked about are refused
  // (DATA_LOSS).
  absl::StatusOr<std::vector<ValidatorKeyIndex>> GetValidatorIndices(
      const std::vector<std::string>& pubkeys);
  // The proposers of `epoch`'s slots (/eth/v1/validator/duties/proposer/{epoch}): DATA_LOSS
  // for a duty of a slot outside the epoch (of `slots_per_epoch` slots) or more duties than
  // slots. REQUIRES: slots_per_epoch > 0.
  absl::StatusOr<std::vector<ProposerDuty>> GetProposerDuties(core::Epoch epoch,
                                                              uint64_t slots_per_epoch);

  // Opens GET /eth/v1/events with `topics` in the query as `form` says, and calls `on_open`
  // once the node answered 200, then `on_event` for every event, on the calling thread, until
  // the stream ends, stays silent past stream_idle_timeout, or EndStream or Interrupt is
  // called. Returns INVALID_ARGUMENT when the node refuses the request (4xx: the topics, or
  // their form), ABORTED after EndStream, CANCELLED after Interrupt, otherwise why the stream
  // ended.
  absl::Status StreamEvents(const std::vector<std::string>& topics, TopicsForm form,
                            const std::function<void()>& on_open,
                            const std::function<void(const SseEvent&)>& on_event);
  // Ends the StreamEvents in progress, if any (not a later one).
  void EndStream();
  // Ends a StreamEvents in progress, and the next one at once. Idempotent.
  void Interrupt();

  BeaconApiStats stats() const;

 private:
  // GETs `path` and returns its body, bounded.
  absl::StatusOr<std::string> Get(const std::string& path);
  // `decoded`, a DATA_LOSS (an answer not as the spec says) counted among the bad answers.
  template <typename T>
  absl::StatusOr<T> Checked(absl::StatusOr<T> decoded) {
    if (absl::IsDataLoss(decoded.status())) ++bad_answers_;
    return decoded;
  }

  const std::string base_;
  const std::string path_prefix_;
  const BeaconApiLimits limits_;
  const Clock& clock_;

  Mutex mu_;
  httplib::Client* stream_client_ ABSL_GUARDED_BY(mu_) = nullptr;  // The stream's, while it runs.
  bool interrupted_ ABSL_GUARDED_BY(mu_) = false;
  // The REST requests in flight, which Interrupt() cuts short: a stop must not wait out a
  // request_timeout on a node that does not answer.
  std::set<httplib::Client*> rest_clients_ ABSL_GUARDED_BY(mu_);
  // interrupted_, for the stream's callbacks, which must not wait for mu_.
  std::atomic<bool> stopping_{false};
  // EndStream was called for the stream in progress; reset as each stream starts.
  std::atomic<bool> ending_{false};

  std::atomic<uint64_t> bad_answers_{0};
  std::atomic<uint64_t> dropped_events_{0};
  std::atomic<uint64_t> streams_opened_{0};
};

// One event of the stream, of the topics the observer uses.
struct BeaconEvent {
  enum class Kind {
    kBlock,             // block: slot, root
    kHead,              // head, head_v2: slot, root, payload_full (head_v2's payload_status)
    kReorg,             // chain_reorg: slot, root (new head), old_root
    kFinalized,         // finalized_checkpoint: epoch
    kBid,               // execution_payload_bid: slot, builder
    kPayload,           // execution_payload: slot, root, builder
    kPayloadAvailable,  // execution_payload_available: slot, root
  };
  Kind kind = Kind::kBlock;
  core::Slot slot = 0;
  core::BlockRoot root;
  core::BlockRoot old_root;
  core::Epoch epoch = 0;
  core::BuilderIndex builder = 0;
  bool payload_full = false;
};

// The topics asked for: the pre-Gloas ones, then those of Gloas.
inline const std::vector<std::string>& PreGloasTopics() {
  static const auto* topics =
      new std::vector<std::string>{"block", "head", "chain_reorg", "finalized_checkpoint"};
  return *topics;
}
inline const std::vector<std::string>& GloasTopics() {
  static const auto* topics = new std::vector<std::string>{"block",
                                                           "head",
                                                           "chain_reorg",
                                                           "finalized_checkpoint",
                                                           "execution_payload_bid",
                                                           "execution_payload",
                                                           "execution_payload_available",
                                                           "head_v2"};
  return *topics;
}

// Decodes `event`: NOT_FOUND for an event of another topic, DATA_LOSS naming the event and the
// field for one that is not what the spec says (ethereum/beacon-APIs, apis/eventstream).
// Integers are quoted decimals (a bare number is accepted too), roots 0x and 64 hex digits;
// `{"version": ..., "data": {...}}` envelopes (Gloas events) are opened.
absl::StatusOr<BeaconEvent> DecodeEvent(const SseEvent& event);

}  // namespace breaker::sidecar

#endif  // SIDECAR_BEACON_BEACON_API_H_
