#ifndef SERVICE_FLEET_H_
#define SERVICE_FLEET_H_

// The fleet's shared breaker: one core::Engine fed by every node, made durable, driven by a
// clock, published to every stream. Adapts the engine to concurrency, storage and time.
//
// Every change of state (a batch of observations, a slot passing, an operator action, a new
// configuration, a new fleet id) is a journal entry. The journal writer (journal_writer.h)
// appends the entries submitted since its last round to the state store in one durable write
// (group commit), then hands them to the fleet, which applies them to the engine in order,
// publishes the policy (and the configuration) if it changed, and only then answers the
// submitters; the next round is appended meanwhile. A restart loads the latest snapshot and
// replays the journal after it through the same code, so the engine, and the policy version,
// come back exactly as they were.
//
// Storage faults (a full disk, an unwritable state directory). When an append fails, its
// changes are not applied, and their submitters get UNAVAILABLE: nothing is acknowledged that
// the store may not hold. The fleet is then degraded: every new submission is refused at once
// with UNAVAILABLE (nodes keep their observations and resend them), storage_status() says why
// and WatchStorage's watcher hears it (breakerd's health turns NOT_SERVING). Reads go on from
// memory, which holds only what was stored. At times growing from
// StorageSupervisor::kFirstAttempt to kMaxAttempt (by the fleet's clock, at Tick()), the fleet
// loads the store again: the failed append may have landed after all, and then its entries are
// applied as a restart would replay them, so memory matches the journal (their submitters'
// resends are duplicates, counted once). Once a snapshot write succeeds too, the fleet takes
// changes again.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "breaker/state/v1/state.pb.h"
#include "breaker/v1/breaker.pb.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "core/config.h"
#include "core/engine.h"
#include "grpcpp/support/slice.h"
#include "proto/codec/inspection.h"
#include "proto/codec/journal_apply.h"
#include "proto/codec/received_batch.h"
#include "service/journal_writer.h"
#include "service/metrics_sink.h"
#include "service/node_registry.h"
#include "service/observation_rate_limiter.h"
#include "service/service_limits.h"
#include "service/storage/state_store.h"
#include "service/storage_supervisor.h"
#include "service/ticker.h"

namespace breaker::service {

// One policy version as every node receives it: built and serialized once, shared by all
// streams.
struct PublishedPolicy {
  core::Policy policy;
  breaker::v1::Policy proto;
  // A ServerMessage holding `proto`, serialized. Every stream writes this same slice.
  grpc::Slice server_message;
  // When the fleet published it, by its clock's monotonic reading, for the fan-out latency
  // metric.
  absl::Duration published_at;
  // Counts the fleet's publications since it opened, from 1: a later one has a higher number.
  // Versions alone do not order them: a new fleet id publishes the same version again.
  uint64_t generation = 0;
};

// The configuration in force as every node receives it (ServerMessage.config).
struct PublishedConfig {
  // Counts the configurations the fleet has published since it opened, from 1: a later one
  // has a higher number.
  uint64_t generation = 0;
  breaker::v1::Config proto;
};

// Receives every new policy version and every new configuration. Called on the journal
// writer's applier thread: must not block.
class PolicyListener {
 public:
  virtual ~PolicyListener() = default;
  virtual void OnPolicy(std::shared_ptr<const PublishedPolicy> policy) = 0;
  // A reconfiguration (a reload) changed the configuration in force. Not called for the
  // configuration in force when the listener subscribed: read config() after subscribing.
  virtual void OnConfig(std::shared_ptr<const PublishedConfig> /*config*/) {}
  // An operator reset the sequence numbers of node `node_id` (Admin.ResetNode): its stream
  // ends, so that the node reconnects and learns it at its hello (NodeState).
  virtual void OnNodeReset(const std::string& /*node_id*/) {}
};

// This class is thread-safe.
class Fleet : private JournalWriter::Sink {
 public:
  struct Options {
    // The configuration to run with (from the file, or the defaults): the engine's rules and
    // the service's limits.
    core::Config config;
    ServiceLimits limits;
    // The file `config` came from, re-read by ReloadConfig; empty when there is none.
    std::string config_path;
    // Reads and checks it: LoadServiceConfig, or a test's stand-in.
    std::function<absl::StatusOr<ServiceConfig>(const std::string& path)> load_config =
        &LoadServiceConfig;
    std::unique_ptr<StateStore> store;
    // REQUIRES: not null; outlives the fleet.
    const Clock* clock = nullptr;
    // Move time along by itself at every slot boundary. Tests turn it off and call Tick().
    bool run_ticker = true;
    // Fold the journal into a new snapshot after this many entries or bytes of entries in it
    // (the journal a restart found included), or this long after the last snapshot once an
    // entry waits, whichever comes first, and at every epoch. The bytes bound what the
    // snapshot then deletes from the journal while the applier waits (batches of hundreds of
    // observations make entries of tens of KB), and what a restart replays, whatever came
    // before: about 0.1 s for 16 MiB (BENCHMARKS.md).
    uint64_t snapshot_every_entries = 4096;
    uint64_t snapshot_every_bytes = 16 << 20;
    absl::Duration snapshot_every_time = absl::Minutes(1);
    // Where the fleet reports its events; null: nowhere. REQUIRES: outlives the fleet.
    MetricsSink* metrics = nullptr;
  };

  // Restores the stored state (snapshot, then journal), applies `options.config` if it differs
  // from the stored one, moves time to the clock's slot and starts the writer.
  // Returns the store's errors, or DATA_LOSS when a stored snapshot or entry cannot be parsed,
  // or INTERNAL when there is no randomness for the page tokens' key.
  // A store that fails to append while the fleet opens is an error too (UNAVAILABLE): the
  // configuration given could not be stored.
  static absl::StatusOr<std::unique_ptr<Fleet>> Open(Options options);

  // Stops the ticker, applies and persists everything submitted, writes a final snapshot
  // (unless SkipFinalSnapshot).
  ~Fleet();

  // The store is handed to another writer (a leader on etcd that resigned): the destructor
  // writes no final snapshot, which the store would refuse; the next leader replays the
  // journal.
  void SkipFinalSnapshot() { skip_final_snapshot_ = true; }

  using AckCallback = std::function<void(absl::StatusOr<breaker::v1::ObservationAck>)>;
  using PolicyCallback =
      std::function<void(absl::StatusOr<std::shared_ptr<const PublishedPolicy>>)>;
  using ConfigCallback = std::function<void(absl::StatusOr<breaker::v1::Config>)>;

  // Submits a node's observations. `done` runs once they are applied and durable, with the
  // acknowledgement (and the refused ones); or with UNAVAILABLE when the store failed (see
  // Storage faults above): none of them was acknowledged, the node resends them; or with
  // AdmitNode's RESOURCE_EXHAUSTED for a new node beyond max_known_nodes. It runs on the
  // journal writer's threads, or on the caller's when the answer is known at once.
  // Observations refused for their content (codec::RefusedForContent) or beyond the node's
  // rate are cut before the journal: never stored, and the batch's bytes stored are the rest.
  void SubmitObservations(std::string node_id, codec::ReceivedBatch batch, AckCallback done);

  // Submits an operator action; `done` gets the resulting policy or the action's error, or
  // UNAVAILABLE when the store failed. An action whose own write failed may still surface
  // once the store recovers (the write may have landed); the message says so.
  void SubmitAdmin(breaker::state::v1::AdminAction action, PolicyCallback done);

  // Re-reads the configuration file and applies it. FAILED_PRECONDITION without a file; the
  // file's errors (state unchanged) otherwise; UNAVAILABLE as SubmitAdmin.
  // Reloads may overlap; each one is numbered when it is called, and one that finishes reading
  // after a later-called one was submitted changes nothing and gets ABORTED: the later one,
  // which read the file after it, stays in force.
  void ReloadConfig(ConfigCallback done);

  // Moves time to the clock's current slot (journaled like any change). While the store
  // fails, instead, submits the next attempt to store again once its time has come.
  void Tick();

  // Blocks until everything submitted before the call has been applied and answered. It waits
  // for the queue to be empty and the writer idle, so under steady load it also waits for work
  // submitted after the call: for tests and shutdown, not for a serving path.
  void Sync();

  // The current policy. Never blocks on the store.
  std::shared_ptr<const PublishedPolicy> policy() const;
  // The configuration in force, as the nodes receive it. Never blocks on the store.
  std::shared_ptr<const PublishedConfig> config() const;

  // OK while the store takes writes; otherwise the error of its latest failure, while the
  // fleet refuses changes.
  absl::Status storage_status() const;

  // `watcher` hears whether the store takes writes: at once, then at every change, on the
  // journal writer's appender thread (it must not block, nor call WatchStorage). Replaces the
  // previous watcher; after it returns, that one is not called any more. Null: none.
  void WatchStorage(std::function<void(bool writable)> watcher);

  // Listeners get every version published after they subscribe.
  void Subscribe(PolicyListener* listener);
  // After it returns, `listener` is not called any more.
  void Unsubscribe(PolicyListener* listener);

  // --- Inspection. Consistent snapshots of the engine; never wait for the store. ---
  // A page of the answers, bounded by the request's page_size, 1000 entries and
  // core::bounds::kMaxPageBytes. INVALID_ARGUMENT for a page token this fleet did not give out
  // (codec::PageTokens: another process's, edited or cut).
  absl::StatusOr<breaker::v1::ListBuildersResponse> ListBuilders(
      const breaker::v1::ListBuildersRequest& request) const;
  // INVALID_ARGUMENT for the self-build index.
  absl::StatusOr<breaker::v1::Builder> GetBuilder(core::BuilderIndex builder) const;
  breaker::v1::ListRelaysResponse ListRelays() const;
  absl::StatusOr<breaker::v1::ListNodesResponse> ListNodes(
      const breaker::v1::ListNodesRequest& request) const;
  // Every node, page after page (for metrics and tests: an answer to send is a page).
  std::vector<breaker::v1::Node> AllNodes() const;
  breaker::v1::Config EffectiveConfig() const;
  const std::string& network() const { return network_; }
  // This state's identity (breaker.v1.Policy.fleet_id): policy versions count under it.
  std::string fleet_id() const { return policy()->proto.fleet_id(); }
  // Node `node_id` says at its hello that it holds version `held_version` of fleet id
  // `fleet_id`. A version above the current one under the current fleet id means the state
  // went back (an old backup of the state directory was restored), and the versions counted
  // since the backup name other policies than the ones the nodes hold: the fleet then takes a
  // new random fleet id (journaled, kept by later snapshots), publishes the current policy
  // under it to every listener, and logs a warning. Does nothing otherwise, or while a renewal
  // is under way. Returns at once; the new policy follows on the journal writer's thread.
  void RenewFleetId(const std::string& node_id, const std::string& fleet_id, uint64_t held_version);
  // The highest observation sequence number handled from `node_id` (0: none), as the node's
  // hello is answered (breaker.v1.NodeState).
  uint64_t LastSequence(const std::string& node_id) const;
  // The configuration's max_connected_nodes, kept by the node service.
  uint32_t max_connected_nodes() const;
  // Makes `node_id` a known node (in the registry, listed by ListNodes) unless it is one
  // already. RESOURCE_EXHAUSTED, naming max_known_nodes, for a new node beyond it: what the
  // fleet remembers of a node is kept for good, and node ids are the nodes' to choose.
  absl::Status AdmitNode(const std::string& node_id);
  // Where the fleet and its streams report events (a no-op sink when metrics are off).
  MetricsSink& metrics() const { return metrics_; }
  // The fleet's clock, for its streams' timings too.
  const Clock& clock() const { return clock_; }

  // --- The node registry, kept by the streams. ---
  // A node opened a stream (now, by the fleet's clock), holding policy `policy_version`.
  void NodeConnected(const std::string& node_id, const std::string& peer,
                     const std::string& client_version, uint64_t policy_version);
  // The node's current stream ended. Not called for a stream that a newer one replaced.
  void NodeDisconnected(const std::string& node_id);
  void NodeAckedPolicy(const std::string& node_id, uint64_t version);

 private:
  // A journal entry waiting for the writer, and who to tell when it is applied.
  struct Work : JournalChange {
    // The entry, parsed; for an observations entry, without its batch's bytes: `batch` holds
    // the batch, read once.
    breaker::state::v1::JournalEntry parsed;
    std::optional<codec::ReceivedBatch> batch;
    // Replayed from the journal (at start-up, or what a failed write stored after all):
    // nobody to answer, nothing to log.
    bool replay = false;
    // Answers the submitter once the work is applied, or refused (status UNAVAILABLE).
    std::function<void()> on_done;
    // Filled by Apply() for on_done, or by a refusal.
    absl::Status status;
    breaker::v1::ObservationAck ack;
  };

  Fleet(Options options, core::Engine engine, ServiceLimits limits, std::string fleet_id,
        codec::PageTokens page_tokens);

  // Serializes `work`'s entry (on the caller's thread) and hands it to the journal writer.
  void Enqueue(std::unique_ptr<Work> work);
  // Parses stored journal entry `sequence` into `work`, for a replay; DATA_LOSS when it (or
  // its batch) does not parse.
  static absl::Status ParseStored(uint64_t sequence, const std::string& bytes, Work& work);
  // Enqueues `entry`; `done` gets the status of applying it.
  void Submit(breaker::state::v1::JournalEntry entry,
              std::function<void(const absl::Status&)> done);

  // --- JournalWriter::Sink ---
  // Applies a stored round, publishes what changed and answers the submitters. Wants a
  // snapshot at every new epoch.
  bool Apply(const JournalChanges& changes, uint64_t last_sequence) override;
  void Refuse(const JournalChanges& changes, const absl::Status& fault, bool written) override;
  absl::Status WriteSnapshot() override;
  // Tries the store again (see Storage faults above), and leaves the fault when it works.
  void Recover() override;

  // Applies what a failed append stored after all, and proves that the store writes again.
  absl::Status RecoverStorage();
  // Tells the listeners about each of `published`, in order.
  void NotifyListeners(const std::vector<std::shared_ptr<const PublishedPolicy>>& published);
  // Builds the published form of the engine's configuration and makes it current.
  std::shared_ptr<const PublishedConfig> PublishConfig() ABSL_EXCLUSIVE_LOCKS_REQUIRED(engine_mu_);
  // Publishes the configuration when ApplyOne() changed it since the last call; null otherwise.
  std::shared_ptr<const PublishedConfig> TakeConfigChange()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(engine_mu_);
  // Tells the listeners about `config` (nothing when null).
  void NotifyConfigListeners(const std::shared_ptr<const PublishedConfig>& config);
  // Tells the listeners about every node reset among `changes` (applied, not replayed).
  void NotifyNodeResets(const JournalChanges& changes);
  // When Tick() has something to do next: the next slot boundary, or the next attempt to
  // store again.
  absl::Time NextTick() const;
  // Applies one journal entry to the engine (codec::ApplyJournalEntry, as `breakerctl
  // simulate` does), then keeps what the fleet holds beside the engine: the fleet id, the
  // configuration's publication and limits, the answer to the submitter, the metrics.
  void ApplyOne(Work& work) ABSL_EXCLUSIVE_LOCKS_REQUIRED(engine_mu_);
  // Cuts from `batch` the observations refused for their content, listing and counting them
  // in `ack`, the metrics and the node's registry entry.
  void CutRefusedContent(const std::string& node_id, codec::ReceivedBatch& batch,
                         breaker::v1::ObservationAck& ack);
  // Fills the acknowledgement of an observations entry from what applying it did, and counts
  // it (not for a replay).
  void AnswerObservations(Work& work, const codec::AppliedEntry& applied)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(engine_mu_);
  // Builds the published form of the engine's policy and makes it current.
  std::shared_ptr<const PublishedPolicy> Publish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(engine_mu_);
  core::Slot ClockSlot() const;

  const Clock& clock_;
  const std::unique_ptr<StateStore> store_;
  const std::string config_path_;
  const std::function<absl::StatusOr<ServiceConfig>(const std::string& path)> load_config_;
  const std::string network_;
  const uint64_t snapshot_every_entries_;
  const uint64_t snapshot_every_bytes_;
  const absl::Duration snapshot_every_time_;
  std::atomic<bool> skip_final_snapshot_{false};
  const bool ticker_enabled_;
  MetricsSink& metrics_;
  // Seals and checks ListBuilders' and ListNodes' page tokens, under a key of this fleet's: a
  // token lasts as long as the fleet that gave it out.
  const codec::PageTokens page_tokens_;

  // Lock order, the one place it is written:
  //   - engine_mu_ before policy_mu_ (Publish runs under engine_mu_), and before the locks of
  //     registry_ and rate_limiter_, which are leaves (their classes take nothing else);
  //   - listeners_mu_ is taken with no other lock of the fleet held (listeners are called
  //     under it);
  //   - the journal writer's, the supervisor's and the ticker's locks are their own: the fleet
  //     calls them with none of its locks held, and they call the fleet with none of theirs;
  //   - but reload_mu_, taken by ReloadConfig only and with no other lock held, comes before
  //     all of them: it is held while a reconfiguration is handed to the writer, so that
  //     reconfigurations enter the journal in the order of their numbers.
  Mutex reload_mu_;
  // How many reloads were called, and the number of the latest one submitted.
  uint64_t reloads_called_ ABSL_GUARDED_BY(reload_mu_) = 0;
  uint64_t reload_submitted_ ABSL_GUARDED_BY(reload_mu_) = 0;
  mutable Mutex engine_mu_;
  core::Engine engine_ ABSL_GUARDED_BY(engine_mu_);
  // The last journal sequence applied to engine_.
  uint64_t journal_sequence_ ABSL_GUARDED_BY(engine_mu_) = 0;
  core::Epoch snapshot_epoch_ ABSL_GUARDED_BY(engine_mu_) = 0;
  // This state's identity; changes only by a journaled renewal (RenewFleetId).
  std::string fleet_id_ ABSL_GUARDED_BY(engine_mu_);
  // A renewal of the fleet id is submitted and not yet answered.
  bool renewing_fleet_id_ ABSL_GUARDED_BY(engine_mu_) = false;
  // ApplyOne() changed what the policy is published under (the fleet id), not its version.
  bool republish_ ABSL_GUARDED_BY(engine_mu_) = false;
  // A reconfiguration applied since the configuration was last published changed it.
  bool config_changed_ ABSL_GUARDED_BY(engine_mu_) = false;

  mutable Mutex policy_mu_;
  std::shared_ptr<const PublishedPolicy> policy_ ABSL_GUARDED_BY(policy_mu_);
  std::shared_ptr<const PublishedConfig> config_ ABSL_GUARDED_BY(policy_mu_);

  Mutex listeners_mu_;
  absl::flat_hash_set<PolicyListener*> listeners_ ABSL_GUARDED_BY(listeners_mu_);

  NodeRegistry registry_;

  // The latest slot an advance was submitted for, so that Tick() submits each slot once.
  std::atomic<core::Slot> submitted_slot_{0};

  // --- Service limits (the configuration's; the engine ignores them) ---
  // Takes `limits` (at start and at every reconfiguration).
  void SetLimits(const ServiceLimits& limits) ABSL_EXCLUSIVE_LOCKS_REQUIRED(engine_mu_);
  // The configuration in force: the engine's and the limits.
  breaker::v1::Config EffectiveConfigLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(engine_mu_);
  ServiceLimits limits_ ABSL_GUARDED_BY(engine_mu_);
  std::atomic<uint32_t> max_connected_nodes_{0};
  ObservationRateLimiter rate_limiter_;

  // Runs Tick() at slot boundaries and when an attempt to store again is due (if
  // Options::run_ticker). Stopped first at destruction; the supervisor wakes it.
  Ticker ticker_;
  StorageSupervisor supervisor_;
  // Started once the stored state is restored; destroyed after the ticker stops.
  std::unique_ptr<JournalWriter> writer_;
};

}  // namespace breaker::service

#endif  // SERVICE_FLEET_H_
