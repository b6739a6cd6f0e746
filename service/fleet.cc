#include "service/fleet.h"

#include <algorithm>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/mutex.h"
#include "core/chain_time.h"
#include "core/input_bounds.h"
#include "core/relay_id.h"
#include "glog/logging.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/time_util.h"
#include "proto/codec/api_codec.h"
#include "proto/codec/config_file.h"
#include "proto/codec/inspection.h"
#include "proto/codec/journal_apply.h"
#include "proto/codec/snapshot_codec.h"

namespace breaker::service {
namespace {

using ::google::protobuf::util::TimeUtil;

// Refusals listed in one acknowledgement; beyond, they are only counted in the log.
constexpr int kMaxRefusalsPerAck = 100;

std::string Serialize(const google::protobuf::Message& message) {
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  return bytes;
}

// 128 random bits, in hex: unique among the state directories a fleet will ever see.
std::string NewFleetId() {
  std::random_device random;
  std::string id;
  for (int i = 0; i < 4; ++i) absl::StrAppend(&id, absl::Hex(random(), absl::kZeroPad8));
  return id;
}

google::protobuf::Timestamp ToProto(absl::Time time) {
  return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(time));
}

// The metrics' name of an observation's event: its field name in the proto's oneof.
// A switch, not a descriptor look-up: it runs for every observation on the applier thread.
absl::string_view EventKind(breaker::v1::Observation::EventCase event) {
  using breaker::v1::Observation;
  switch (event) {
    case Observation::kBidSeen:
      return "bid_seen";
    case Observation::kPayloadMissing:
      return "payload_missing";
    case Observation::kPayloadDelivered:
      return "payload_delivered";
    case Observation::kBlocksSeen:
      return "blocks_seen";
    case Observation::kFinalized:
      return "finalized";
    case Observation::kBuilderExited:
      return "builder_exited";
    case Observation::kRelayRevealMissing:
      return "relay_reveal_missing";
    case Observation::EVENT_NOT_SET:
      return "none";
  }
  return "none";
}

ObservationOutcome OutcomeOf(core::ObserveOutcome outcome) {
  switch (outcome) {
    case core::ObserveOutcome::kApplied:
      return ObservationOutcome::kApplied;
    case core::ObserveOutcome::kNoEffect:
      return ObservationOutcome::kNoEffect;
    case core::ObserveOutcome::kDuplicate:
      return ObservationOutcome::kDuplicate;
  }
  return ObservationOutcome::kApplied;
}

// What the submitter of a change (`observations`, or another) is told when the store fails
// with `fault`. `written`: the change was in the write that failed, which may have landed,
// rather than refused before any.
absl::Status Unstored(bool observations, const absl::Status& fault, bool written) {
  constexpr absl::string_view kFix =
      "breakerd takes changes again (its health SERVING) once its store takes writes: fix "
      "what the error names (on SQLite, free disk space in the state directory or fix its "
      "permissions; on etcd, bring back its quorum)";
  if (observations) {
    return absl::UnavailableError(
        absl::StrCat("breakerd cannot store observations now, so none of these was acknowledged: ",
                     fault.message(),
                     ". Resend them later (the breaker client keeps and resends them by "
                     "itself); ",
                     kFix));
  }
  return absl::UnavailableError(absl::StrCat(
      "breakerd cannot store changes now, so this one was not applied: ", fault.message(),
      written ? ". The failed write may still have stored it, to take effect when storage "
                "recovers: check the state before retrying. "
              : ". Retry later; ",
      kFix));
}

}  // namespace

namespace v1 = ::breaker::v1;

absl::StatusOr<std::unique_ptr<Fleet>> Fleet::Open(Options options) {
  CHECK(options.clock != nullptr);
  CHECK(options.store != nullptr);
  // A genesis far ahead would leave breakerd at slot 0, waiting for years.
  if (absl::Status genesis = core::ValidateGenesisTime(options.config.chain, options.clock->Now());
      !genesis.ok()) {
    return genesis;
  }
  absl::StatusOr<StoredState> stored = options.store->Load();
  if (!stored.ok()) return stored.status();

  const core::Slot now = core::SlotAt(options.clock->Now(), options.config.chain);
  std::optional<core::Engine> engine;
  uint64_t journal_sequence = 0;
  std::string fleet_id;
  ServiceLimits limits = options.limits;
  if (stored->snapshot.has_value()) {
    state::v1::EngineSnapshot snapshot;
    if (!snapshot.ParseFromString(*stored->snapshot)) {
      return absl::DataLossError(
          "the stored snapshot cannot be parsed; restore the state directory from a backup");
    }
    absl::StatusOr<core::Config> config = codec::ConfigFromProto(snapshot.config());
    if (!config.ok() && snapshot.config().chain().network() == options.config.chain.network) {
      // Stored by an earlier breakerd, before a bound it breaks (caps whose policy is too
      // large, a period too long): the state is imported under the configuration given now,
      // which would replace the stored one next anyway, and its caps evict at once.
      LOG(WARNING) << "the stored configuration is refused by this breakerd ("
                   << config.status().message() << "); restoring under the one given";
      config = options.config;
    }
    if (!config.ok()) {
      return absl::DataLossError(absl::StrCat("the stored snapshot's configuration is invalid: ",
                                              config.status().message()));
    }
    absl::StatusOr<core::EngineState> state = codec::SnapshotFromProto(snapshot);
    if (!state.ok()) {
      return absl::DataLossError(
          absl::StrCat("the stored snapshot is inconsistent: ", state.status().message()));
    }
    absl::StatusOr<core::Engine> imported = core::Engine::Import(*config, *std::move(state));
    if (!imported.ok()) {
      return absl::DataLossError(
          absl::StrCat("the stored snapshot cannot be restored: ", imported.status().message()));
    }
    engine.emplace(*std::move(imported));
    // Limits refused by this breakerd give way to the ones given, as the configuration does.
    if (absl::StatusOr<ServiceLimits> stored_limits = ServiceLimitsFromProto(snapshot.config());
        stored_limits.ok()) {
      limits = *stored_limits;
    }
    journal_sequence = snapshot.journal_sequence();
    fleet_id = snapshot.fleet_id();
  } else {
    absl::StatusOr<core::Engine> created = core::Engine::Create(options.config, now);
    if (!created.ok()) return created.status();
    engine.emplace(*std::move(created));
  }

  const ServiceConfig given{options.config, options.limits};
  const core::Config& config = given.rules;
  if (!(config.chain == engine->config().chain)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the state directory holds the state of network '", engine->config().chain.network,
        "' with other chain settings than the configuration's (network '", config.chain.network,
        "'); use a state directory per chain"));
  }
  // A state without an identity gets one now, and keeps it from the snapshot written below.
  const bool new_identity = fleet_id.empty();
  if (new_identity) fleet_id = NewFleetId();
  absl::StatusOr<codec::PageTokens> page_tokens = codec::PageTokens::Random();
  if (!page_tokens.ok()) return page_tokens.status();
  std::unique_ptr<Fleet> fleet(new Fleet(std::move(options), *std::move(engine), limits,
                                         std::move(fleet_id), *std::move(page_tokens)));
  {
    MutexLock lock(&fleet->engine_mu_);
    fleet->journal_sequence_ = journal_sequence;
    for (const auto& [sequence, bytes] : stored->journal) {
      Work work;
      if (absl::Status parsed = ParseStored(sequence, bytes, work); !parsed.ok()) return parsed;
      fleet->ApplyOne(work);
      fleet->journal_sequence_ = sequence;
    }
    fleet->Publish();
    fleet->PublishConfig();
    fleet->config_changed_ = false;
    // The nodes the engine remembers count toward max_known_nodes from the start.
    for (const auto& [node, sequence] : fleet->engine_.node_sequences()) {
      fleet->registry_.Remember(node);
    }
    LOG(INFO) << "state restored: " << (stored->snapshot.has_value() ? "snapshot" : "no snapshot")
              << " and " << stored->journal.size() << " journal entries; policy version "
              << fleet->engine_.policy().version;
  }
  // A fresh state directory gets its first snapshot now, so the journal always has a base and
  // the fleet id is durable before any policy carries it.
  if (new_identity) {
    if (absl::Status status = fleet->WriteSnapshot(); !status.ok()) return status;
  }

  JournalWriter::Options writer;
  writer.store = fleet->store_.get();
  writer.supervisor = &fleet->supervisor_;
  writer.sink = fleet.get();
  writer.metrics = &fleet->metrics_;
  writer.clock = &fleet->clock_;
  writer.snapshot_every_entries = fleet->snapshot_every_entries_;
  writer.snapshot_every_bytes = fleet->snapshot_every_bytes_;
  writer.snapshot_every_time = fleet->snapshot_every_time_;
  // The journal replayed counts toward the next snapshot: processes killed before theirs
  // must not leave each restart more to replay than the one before.
  if (!new_identity) {
    writer.stored_entries = stored->journal.size();
    for (const auto& [sequence, bytes] : stored->journal) writer.stored_bytes += bytes.size();
  }
  fleet->writer_ = std::make_unique<JournalWriter>(writer);

  // The configuration given now replaces the stored one, through the journal like a reload.
  if (Serialize(ServiceConfigToProto(given)) != Serialize(fleet->EffectiveConfig())) {
    auto work = std::make_unique<Work>();
    *work->parsed.mutable_reconfigure() = ServiceConfigToProto(given);
    fleet->Enqueue(std::move(work));
  }
  fleet->Tick();
  fleet->Sync();
  // The configuration given, or the clock's slot, is not stored: starting would serve without
  // them (a restart, once the storage is fixed, tries again).
  if (absl::Status fault = fleet->storage_status(); !fault.ok()) return fault;
  if (fleet->ticker_enabled_) fleet->ticker_.Start();
  return fleet;
}

Fleet::Fleet(Options options, core::Engine engine, ServiceLimits limits, std::string fleet_id,
             codec::PageTokens page_tokens)
    : clock_(*options.clock),
      store_(std::move(options.store)),
      config_path_(std::move(options.config_path)),
      load_config_(std::move(options.load_config)),
      network_(options.config.chain.network),
      snapshot_every_entries_(options.snapshot_every_entries),
      snapshot_every_bytes_(options.snapshot_every_bytes),
      snapshot_every_time_(options.snapshot_every_time),
      ticker_enabled_(options.run_ticker),
      metrics_(options.metrics != nullptr ? *options.metrics : NoMetrics()),
      page_tokens_(std::move(page_tokens)),
      engine_(std::move(engine)),
      fleet_id_(std::move(fleet_id)),
      registry_(clock_),
      rate_limiter_(clock_),
      ticker_(
          clock_, [this] { return NextTick(); }, [this] { Tick(); }),
      supervisor_(clock_, [this] { ticker_.Wake(); }) {
  snapshot_epoch_ = engine_.current_epoch();
  MutexLock lock(&engine_mu_);
  SetLimits(limits);
}

Fleet::~Fleet() {
  ticker_.Stop();
  writer_.reset();
  if (skip_final_snapshot_) return;
  if (absl::Status status = WriteSnapshot(); !status.ok()) {
    LOG(ERROR) << "final snapshot failed (the journal still holds every change): " << status;
  }
}

// ---------------------------------------------------------------------------------------------
// Submitting work

void Fleet::Enqueue(std::unique_ptr<Work> work) {
  // Here, on the submitter's thread, not the writer's: the submitters run in parallel.
  if (work->batch.has_value()) {
    // The batch's bytes as they were received, copied into the entry. The batch keeps its
    // own: a batch read in place is read from them when it is applied.
    state::v1::JournalEntry entry;
    state::v1::NodeObservations* observations = entry.mutable_observations();
    observations->set_node_id(work->parsed.observations().node_id());
    observations->set_batch(work->batch->bytes());
    work->entry = Serialize(entry);
  } else {
    work->entry = Serialize(work->parsed);
  }
  writer_->Submit(std::move(work));
}

absl::Status Fleet::ParseStored(uint64_t sequence, const std::string& bytes, Work& work) {
  work.replay = true;
  if (!work.parsed.ParseFromString(bytes)) {
    return absl::DataLossError(
        absl::StrCat("journal entry ", sequence,
                     " cannot be parsed; restore the state directory from a backup"));
  }
  if (!work.parsed.observations().batch().empty()) {
    // Moved out: the entry keeps only the node id, as a submitted one (Work::parsed).
    absl::StatusOr<codec::ReceivedBatch> batch = codec::ReceivedBatch::Parse(
        std::move(*work.parsed.mutable_observations()->mutable_batch()));
    if (!batch.ok()) {
      return absl::DataLossError(absl::StrCat("journal entry ", sequence,
                                              " holds a batch of observations that cannot be "
                                              "parsed; restore the state directory from a backup"));
    }
    work.parsed.mutable_observations()->clear_batch();
    work.batch = *std::move(batch);
  }
  return absl::OkStatus();
}

void Fleet::SubmitObservations(std::string node_id, codec::ReceivedBatch batch, AckCallback done) {
  // Before the rate limit: a node resending while the store fails must not spend its
  // allowance on observations that are not taken.
  if (absl::Status fault = storage_status(); !fault.ok()) {
    done(Unstored(/*observations=*/true, fault, /*written=*/false));
    return;
  }
  if (absl::Status admitted = AdmitNode(node_id); !admitted.ok()) {
    done(admitted);
    return;
  }
  // Refused before the journal, so never stored: what is refused for its content, then what
  // is beyond the node's rate. Both are cut from the batch, and the acknowledgement lists them.
  v1::ObservationAck refused_early;
  CutRefusedContent(node_id, batch, refused_early);
  // The rate limit applies here, before the journal, not in Apply: it depends on the clock,
  // which a replay of the journal must not; and observations refused here cost no disk write.
  std::string over_rate_message;
  const int size = batch.size();
  const int allowed = rate_limiter_.Take(node_id, size, &over_rate_message);
  if (allowed < size) {
    for (int i = allowed; i < size; ++i) {
      const uint64_t sequence = batch.sequence(i);
      refused_early.set_sequence(std::max(refused_early.sequence(), sequence));
      if (refused_early.refused_size() >= kMaxRefusalsPerAck) continue;
      v1::ObservationRefusal* refusal = refused_early.add_refused();
      refusal->set_sequence(sequence);
      refusal->set_code(static_cast<int32_t>(absl::StatusCode::kResourceExhausted));
      refusal->set_message(over_rate_message);
    }
    LOG(WARNING) << "node " << node_id << ": " << size - allowed << " of " << size
                 << " observations refused: " << over_rate_message;
    registry_.Observed(node_id, size - allowed, /*replayed=*/0);
    batch.KeepFirst(allowed);
  }
  if (batch.size() == 0) {
    // Nothing to apply: answer at once rather than journal an empty batch.
    refused_early.set_policy_version(policy()->policy.version);
    done(std::move(refused_early));
    return;
  }
  auto work = std::make_unique<Work>();
  work->parsed.mutable_observations()->set_node_id(std::move(node_id));
  work->batch = std::move(batch);
  Work* raw = work.get();
  work->on_done = [done, raw, refused_early] {
    if (!raw->status.ok()) {
      done(raw->status);
      return;
    }
    v1::ObservationAck ack = std::move(raw->ack);
    if (refused_early.refused_size() > 0) {
      ack.set_sequence(std::max(ack.sequence(), refused_early.sequence()));
      for (const v1::ObservationRefusal& refusal : refused_early.refused()) {
        if (ack.refused_size() >= kMaxRefusalsPerAck) break;
        *ack.add_refused() = refusal;
      }
    }
    done(std::move(ack));
  };
  Enqueue(std::move(work));
}

void Fleet::CutRefusedContent(const std::string& node_id, codec::ReceivedBatch& batch,
                              v1::ObservationAck& ack) {
  const std::vector<codec::ContentRefusal> refused = codec::RefusedForContent(batch, node_id);
  if (refused.empty()) return;
  std::vector<bool> cut(batch.size(), false);
  for (const codec::ContentRefusal& refusal : refused) {
    cut[refusal.index] = true;
    metrics_.ObservationHandled(EventKind(refusal.event), ObservationOutcome::kRefused);
    metrics_.Refused(RefusedInput::kObservation, refusal.status.code());
    ack.set_sequence(std::max(ack.sequence(), refusal.sequence));
    if (ack.refused_size() >= kMaxRefusalsPerAck) continue;
    v1::ObservationRefusal* answer = ack.add_refused();
    answer->set_sequence(refusal.sequence);
    answer->set_code(static_cast<int32_t>(refusal.status.code()));
    answer->set_message(std::string(refusal.status.message()));
  }
  LOG(WARNING) << "node " << node_id << ": " << refused.size() << " of " << batch.size()
               << " observations refused for their content (not stored), first: "
               << refused.front().status.message();
  registry_.Observed(node_id, static_cast<int>(refused.size()), /*replayed=*/0);
  batch.Keep([&cut](int i) { return !cut[i]; });
}

void Fleet::Submit(state::v1::JournalEntry entry, std::function<void(const absl::Status&)> done) {
  auto work = std::make_unique<Work>();
  work->parsed = std::move(entry);
  Work* raw = work.get();
  work->on_done = [done = std::move(done), raw] { done(raw->status); };
  Enqueue(std::move(work));
}

void Fleet::SubmitAdmin(state::v1::AdminAction action, PolicyCallback done) {
  state::v1::JournalEntry entry;
  *entry.mutable_admin() = std::move(action);
  Submit(std::move(entry), [this, done = std::move(done)](const absl::Status& status) {
    if (status.ok()) {
      done(policy());
    } else {
      done(status);
    }
  });
}

void Fleet::ReloadConfig(ConfigCallback done) {
  if (config_path_.empty()) {
    done(absl::FailedPreconditionError(
        "breakerd runs without a configuration file; restart it with --config to reload one"));
    return;
  }
  uint64_t number = 0;
  {
    MutexLock lock(&reload_mu_);
    number = ++reloads_called_;
  }
  absl::StatusOr<ServiceConfig> config = load_config_(config_path_);
  if (!config.ok()) {
    LOG(WARNING) << "reload refused, configuration unchanged: " << config.status();
    done(config.status());
    return;
  }
  {
    MutexLock lock(&engine_mu_);
    if (!(config->rules.chain == engine_.config().chain)) {
      done(absl::FailedPreconditionError(
          "the chain settings differ from those in force; they cannot change while breakerd "
          "runs: restart it with a state directory for that chain"));
      return;
    }
  }
  state::v1::JournalEntry entry;
  *entry.mutable_reconfigure() = ServiceConfigToProto(*config);
  MutexLock lock(&reload_mu_);
  if (number < reload_submitted_) {
    const absl::Status superseded = absl::AbortedError(absl::StrCat(
        "a reload of ", config_path_,
        " called after this one finished first and stays in force; this one read the file "
        "earlier and changed nothing: reload again to read it as it is now"));
    LOG(WARNING) << "reload refused, configuration unchanged: " << superseded;
    done(superseded);
    return;
  }
  reload_submitted_ = number;
  Submit(std::move(entry), [this, done = std::move(done)](const absl::Status& status) {
    if (status.ok()) {
      done(EffectiveConfig());
    } else {
      done(status);
    }
  });
}

void Fleet::RenewFleetId(const std::string& node_id, const std::string& fleet_id,
                         uint64_t held_version) {
  {
    MutexLock lock(&engine_mu_);
    if (renewing_fleet_id_ || fleet_id.empty() || fleet_id != fleet_id_ ||
        held_version <= engine_.policy().version) {
      return;
    }
    renewing_fleet_id_ = true;
  }
  // Made here, not in Apply(): a replay of the journal must take the same id.
  state::v1::JournalEntry entry;
  state::v1::FleetIdRenewal* renewal = entry.mutable_renew_fleet_id();
  renewal->set_fleet_id(NewFleetId());
  renewal->set_node_id(node_id);
  renewal->set_held_version(held_version);
  Submit(std::move(entry), [this](const absl::Status& status) {
    {
      MutexLock lock(&engine_mu_);
      renewing_fleet_id_ = false;
    }
    if (!status.ok()) {
      LOG(ERROR) << "a new fleet id could not be stored (the next hello holding a version above "
                 << "the current one tries again): " << status;
    }
  });
}

core::Slot Fleet::ClockSlot() const {
  MutexLock lock(&engine_mu_);
  return core::SlotAt(clock_.Now(), engine_.config().chain);
}

void Fleet::Tick() {
  if (!supervisor_.status().ok()) {
    // No advance while nothing can be stored: the recovery submits it.
    if (supervisor_.TakeDueAttempt()) writer_->RequestRecovery();
    return;
  }
  const core::Slot slot = ClockSlot();
  core::Slot submitted = submitted_slot_.load();
  do {
    if (slot <= submitted) return;
  } while (!submitted_slot_.compare_exchange_weak(submitted, slot));
  auto work = std::make_unique<Work>();
  work->parsed.set_advance_to_slot(slot);
  Enqueue(std::move(work));
}

absl::Time Fleet::NextTick() const {
  absl::Time next_slot;
  {
    MutexLock lock(&engine_mu_);
    const core::ChainSpec& chain = engine_.config().chain;
    next_slot = core::StartOf(core::SlotAt(clock_.Now(), chain) + 1, chain);
  }
  return std::min(next_slot, supervisor_.next_attempt());
}

void Fleet::Sync() { writer_->Sync(); }

// ---------------------------------------------------------------------------------------------
// Applying what the journal writer stored

bool Fleet::Apply(const JournalChanges& changes, uint64_t last_sequence) {
  std::vector<std::shared_ptr<const PublishedPolicy>> published;
  std::shared_ptr<const PublishedConfig> config;
  bool new_epoch;
  {
    MutexLock lock(&engine_mu_);
    const uint64_t before = engine_.policy().version;
    // Every change the fleet submits is a Work (Enqueue).
    for (const auto& change : changes) ApplyOne(static_cast<Work&>(*change));
    journal_sequence_ = last_sequence;
    if (engine_.policy().version != before || republish_) published.push_back(Publish());
    config = TakeConfigChange();
    new_epoch = engine_.current_epoch() != snapshot_epoch_;
  }
  // Tell the streams, then the submitters. The configuration first: a node gets the rules
  // before the policy they made.
  NotifyConfigListeners(config);
  NotifyListeners(published);
  NotifyNodeResets(changes);
  for (const auto& change : changes) {
    const Work& work = static_cast<const Work&>(*change);
    if (work.on_done) work.on_done();
  }
  return new_epoch;
}

void Fleet::Refuse(const JournalChanges& changes, const absl::Status& fault, bool written) {
  for (const auto& change : changes) {
    Work& work = static_cast<Work&>(*change);
    work.status = Unstored(work.parsed.has_observations(), fault, written);
    if (work.on_done) work.on_done();
  }
}

void Fleet::NotifyListeners(const std::vector<std::shared_ptr<const PublishedPolicy>>& published) {
  for (const auto& policy : published) {
    MutexLock lock(&listeners_mu_);
    for (PolicyListener* listener : listeners_) listener->OnPolicy(policy);
  }
}

void Fleet::NotifyConfigListeners(const std::shared_ptr<const PublishedConfig>& config) {
  if (config == nullptr) return;
  MutexLock lock(&listeners_mu_);
  for (PolicyListener* listener : listeners_) listener->OnConfig(config);
}

void Fleet::NotifyNodeResets(const JournalChanges& changes) {
  for (const auto& change : changes) {
    const Work& work = static_cast<const Work&>(*change);
    if (work.replay || !work.status.ok() || !work.parsed.admin().has_reset_node()) continue;
    const std::string& node_id = work.parsed.admin().reset_node().node_id();
    LOG(INFO) << "node " << node_id << ": sequence numbers reset by an operator";
    MutexLock lock(&listeners_mu_);
    for (PolicyListener* listener : listeners_) listener->OnNodeReset(node_id);
  }
}

// ---------------------------------------------------------------------------------------------
// Storage faults

absl::Status Fleet::storage_status() const { return supervisor_.status(); }

void Fleet::WatchStorage(std::function<void(bool writable)> watcher) {
  supervisor_.Watch(std::move(watcher));
}

void Fleet::Recover() {
  const absl::Status status = RecoverStorage();
  const absl::Duration next_wait = supervisor_.AttemptDone(status);
  if (!status.ok()) {
    LOG(WARNING) << "the state store still fails, trying again in " << next_wait << ": " << status;
    return;
  }
  LOG(INFO) << "the state store takes writes again; breakerd takes observations and changes";
  // An advance refused while the store failed is submitted again (a slot already reached
  // changes nothing).
  submitted_slot_ = 0;
  Tick();
}

absl::Status Fleet::RecoverStorage() {
  absl::StatusOr<StoredState> stored = store_->Load();
  if (!stored.ok()) return stored.status();
  std::vector<std::shared_ptr<const PublishedPolicy>> published;
  std::shared_ptr<const PublishedConfig> config;
  {
    MutexLock lock(&engine_mu_);
    // Only this fleet writes the store, and only after the journal_sequence_ it holds.
    if (stored->snapshot_sequence > journal_sequence_ ||
        stored->last_sequence() < journal_sequence_) {
      return absl::DataLossError(absl::StrCat(
          "the state store holds a snapshot through entry ", stored->snapshot_sequence,
          " and entries up to ", stored->last_sequence(), ", but breakerd applied entries up to ",
          journal_sequence_,
          ": something else changed the state directory; restart breakerd to load it, or "
          "restore the directory from a backup"));
    }
    // What the failed append stored after all: parsed first, so that a bad entry applies none.
    std::vector<Work> landed;
    for (const auto& [sequence, bytes] : stored->journal) {
      if (sequence <= journal_sequence_) continue;
      if (absl::Status parsed = ParseStored(sequence, bytes, landed.emplace_back()); !parsed.ok()) {
        return parsed;
      }
    }
    if (!landed.empty()) {
      LOG(WARNING) << "the failed append stored its " << landed.size()
                   << " changes after all; applying them as a restart would";
      const uint64_t before = engine_.policy().version;
      for (Work& work : landed) ApplyOne(work);
      journal_sequence_ = stored->last_sequence();
      if (engine_.policy().version != before || republish_) published.push_back(Publish());
      config = TakeConfigChange();
    }
  }
  // Durable, so published even if the store fails again below.
  NotifyConfigListeners(config);
  NotifyListeners(published);
  // Proves that the store writes again, and folds in what landed.
  return WriteSnapshot();
}

void Fleet::ApplyOne(Work& work) {
  const state::v1::JournalEntry& entry = work.parsed;
  const codec::AppliedEntry applied =
      codec::ApplyJournalEntry(entry, engine_, work.batch.has_value() ? &*work.batch : nullptr);
  work.status = applied.status;
  switch (entry.change_case()) {
    case state::v1::JournalEntry::kObservations:
      AnswerObservations(work, applied);
      break;
    case state::v1::JournalEntry::kReconfigure: {
      if (applied.config_changed) config_changed_ = true;
      if (!work.status.ok()) break;
      // Validated before it was journaled; an entry of an earlier breakerd whose limits this
      // one refuses keeps the limits in force.
      absl::StatusOr<ServiceLimits> limits = ServiceLimitsFromProto(entry.reconfigure());
      if (limits.ok() && *limits != limits_) {
        config_changed_ = true;
        SetLimits(*limits);
      }
      if (!work.replay) LOG(INFO) << "configuration applied";
      break;
    }
    case state::v1::JournalEntry::kRenewFleetId: {
      if (!work.status.ok()) break;
      const state::v1::FleetIdRenewal& renewal = entry.renew_fleet_id();
      if (!work.replay) {
        LOG(WARNING) << "node " << renewal.node_id() << " holds policy version "
                     << renewal.held_version() << " of fleet id " << fleet_id_
                     << ", above this state's own version " << engine_.policy().version
                     << ": the state went back (was an old backup of the state directory "
                     << "restored?), and its versions since name other policies than the nodes "
                     << "hold. Taking the new fleet id " << renewal.fleet_id()
                     << ": every node takes the current policy as new";
      }
      fleet_id_ = renewal.fleet_id();
      republish_ = true;
      break;
    }
    case state::v1::JournalEntry::kAdvanceToSlot:
    case state::v1::JournalEntry::kAdmin:
    case state::v1::JournalEntry::CHANGE_NOT_SET:
      break;
  }
  if (applied.policy_changed && !work.replay) {
    LOG(INFO) << "policy version " << engine_.policy().version << " (was "
              << applied.previous_version << "), mode " << core::ModeName(engine_.policy().mode)
              << ": " << engine_.policy().reason;
  }
  if (entry.has_observations()) work.ack.set_policy_version(engine_.policy().version);
}

void Fleet::AnswerObservations(Work& work, const codec::AppliedEntry& applied) {
  const std::string& node_id = work.parsed.observations().node_id();
  uint64_t highest = 0;
  int refused = 0;
  uint32_t replayed = 0;
  for (const codec::AppliedObservation& result : applied.observations) {
    highest = std::max(highest, result.sequence);
    // Replays are not counted again: the metrics count since this process started.
    if (result.status.ok()) {
      if (result.observed.outcome == core::ObserveOutcome::kDuplicate) ++replayed;
      if (work.replay) continue;
      metrics_.ObservationHandled(EventKind(result.event), OutcomeOf(result.observed.outcome));
      if (result.observed.recorded != core::RecordedFailure::kNone) {
        metrics_.FailureRecorded(result.observed.recorded == core::RecordedFailure::kBuilder
                                     ? FailureTarget::kBuilder
                                     : FailureTarget::kRelay);
      }
      continue;
    }
    if (!work.replay) {
      metrics_.ObservationHandled(EventKind(result.event), ObservationOutcome::kRefused);
      metrics_.Refused(RefusedInput::kObservation, result.status.code());
    }
    if (++refused <= kMaxRefusalsPerAck) {
      v1::ObservationRefusal* refusal = work.ack.add_refused();
      refusal->set_sequence(result.sequence);
      refusal->set_code(static_cast<int32_t>(result.status.code()));
      refusal->set_message(std::string(result.status.message()));
    }
  }
  if (work.replay) return;
  if (refused > 0) {
    LOG(WARNING) << "node " << node_id << ": " << refused << " of " << applied.observations.size()
                 << " observations refused, first: " << work.ack.refused(0).message();
  }
  work.ack.set_sequence(highest);
  work.ack.set_replayed(replayed);
  registry_.Observed(node_id, refused, replayed);
}

std::shared_ptr<const PublishedPolicy> Fleet::Publish() {
  auto published = std::make_shared<PublishedPolicy>();
  published->policy = engine_.policy();
  published->proto = codec::PolicyToProto(published->policy);
  published->proto.set_fleet_id(fleet_id_);
  v1::ServerMessage message;
  *message.mutable_policy() = published->proto;
  const std::string bytes = message.SerializeAsString();
  published->server_message = grpc::Slice(bytes);
  published->published_at = clock_.Monotonic();
  republish_ = false;
  MutexLock lock(&policy_mu_);
  published->generation = policy_ == nullptr ? 1 : policy_->generation + 1;
  policy_ = published;
  return published;
}

std::shared_ptr<const PublishedConfig> Fleet::PublishConfig() {
  auto published = std::make_shared<PublishedConfig>();
  published->proto = EffectiveConfigLocked();
  MutexLock lock(&policy_mu_);
  published->generation = config_ == nullptr ? 1 : config_->generation + 1;
  config_ = published;
  return published;
}

std::shared_ptr<const PublishedConfig> Fleet::TakeConfigChange() {
  if (!config_changed_) return nullptr;
  config_changed_ = false;
  return PublishConfig();
}

absl::Status Fleet::WriteSnapshot() {
  state::v1::EngineSnapshot snapshot;
  {
    MutexLock lock(&engine_mu_);
    snapshot = codec::SnapshotToProto(engine_.Export());
    *snapshot.mutable_config() = EffectiveConfigLocked();
    snapshot.set_journal_sequence(journal_sequence_);
    snapshot.set_fleet_id(fleet_id_);
    snapshot_epoch_ = engine_.current_epoch();
  }
  const std::string bytes = Serialize(snapshot);
  StoreTimer timer(metrics_, clock_, StoreOperation::kSnapshot);
  return store_->WriteSnapshot(bytes, snapshot.journal_sequence());
}

// ---------------------------------------------------------------------------------------------
// Reads

std::shared_ptr<const PublishedPolicy> Fleet::policy() const {
  MutexLock lock(&policy_mu_);
  return policy_;
}

std::shared_ptr<const PublishedConfig> Fleet::config() const {
  MutexLock lock(&policy_mu_);
  return config_;
}

void Fleet::Subscribe(PolicyListener* listener) {
  MutexLock lock(&listeners_mu_);
  listeners_.insert(listener);
}

void Fleet::Unsubscribe(PolicyListener* listener) {
  MutexLock lock(&listeners_mu_);
  listeners_.erase(listener);
}

absl::StatusOr<v1::ListBuildersResponse> Fleet::ListBuilders(
    const v1::ListBuildersRequest& request) const {
  // One lock for the whole listing, so that it is one consistent snapshot.
  MutexLock lock(&engine_mu_);
  return codec::ListBuilders(engine_, request, page_tokens_);
}

absl::StatusOr<v1::Builder> Fleet::GetBuilder(core::BuilderIndex builder) const {
  if (builder == core::kSelfBuild) {
    return absl::InvalidArgumentError(
        "builder_index is the self-build index (2^64-1), which is never tracked");
  }
  MutexLock lock(&engine_mu_);
  return codec::DescribeBuilder(engine_, builder);
}

v1::ListRelaysResponse Fleet::ListRelays() const {
  MutexLock lock(&engine_mu_);
  return codec::ListRelays(engine_);
}

absl::StatusOr<v1::ListNodesResponse> Fleet::ListNodes(const v1::ListNodesRequest& request) const {
  absl::flat_hash_map<std::string, uint64_t> sequences;
  uint64_t policy_version;
  {
    MutexLock lock(&engine_mu_);
    sequences = engine_.node_sequences();
    policy_version = engine_.policy().version;
  }
  const absl::flat_hash_map<std::string, NodeRegistry::Entry> entries = registry_.Entries();
  std::vector<std::string> ids;
  for (const auto& [id, sequence] : sequences) ids.push_back(id);
  for (const auto& [id, entry] : entries) {
    if (!sequences.contains(id)) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  absl::StatusOr<v1::ListNodesResponse> response = codec::ListNodes(
      ids, request,
      [&](v1::Node& node) {
        if (auto sequence = sequences.find(node.node_id()); sequence != sequences.end()) {
          node.set_last_sequence(sequence->second);
        }
        auto entry = entries.find(node.node_id());
        if (entry == entries.end()) return;
        const NodeRegistry::Entry& info = entry->second;
        node.set_connected(info.connected);
        node.set_peer(info.peer);
        node.set_client_version(info.client_version);
        if (info.connected_since != absl::InfinitePast()) {
          *node.mutable_connected_since() = ToProto(info.connected_since);
        }
        if (info.last_observation != absl::InfinitePast()) {
          *node.mutable_last_observation() = ToProto(info.last_observation);
        }
        node.set_policy_version_acked(info.policy_version_acked);
        node.set_observations_refused(info.observations_refused);
        node.set_observations_replayed(info.observations_replayed);
        node.set_lag(policy_version - std::min(policy_version, info.policy_version_acked));
      },
      page_tokens_);
  if (response.ok()) response->set_policy_version(policy_version);
  return response;
}

std::vector<v1::Node> Fleet::AllNodes() const {
  std::vector<v1::Node> nodes;
  v1::ListNodesRequest request;
  do {
    // Only a page token breakerd did not give out fails, and these are its own.
    v1::ListNodesResponse page = ListNodes(request).value();
    for (v1::Node& node : *page.mutable_nodes()) nodes.push_back(std::move(node));
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  return nodes;
}

uint64_t Fleet::LastSequence(const std::string& node_id) const {
  MutexLock lock(&engine_mu_);
  auto it = engine_.node_sequences().find(node_id);
  return it == engine_.node_sequences().end() ? 0 : it->second;
}

v1::Config Fleet::EffectiveConfig() const {
  MutexLock lock(&engine_mu_);
  return EffectiveConfigLocked();
}

v1::Config Fleet::EffectiveConfigLocked() const {
  return ServiceConfigToProto({engine_.config(), limits_});
}

void Fleet::NodeConnected(const std::string& node_id, const std::string& peer,
                          const std::string& client_version, uint64_t policy_version) {
  registry_.Connected(node_id, peer, client_version, policy_version);
}

void Fleet::NodeDisconnected(const std::string& node_id) { registry_.Disconnected(node_id); }

void Fleet::NodeAckedPolicy(const std::string& node_id, uint64_t version) {
  registry_.AckedPolicy(node_id, version);
}

// ---------------------------------------------------------------------------------------------
// Service limits

uint32_t Fleet::max_connected_nodes() const { return max_connected_nodes_.load(); }

void Fleet::SetLimits(const ServiceLimits& limits) {
  limits_ = limits;
  max_connected_nodes_.store(limits.max_connected_nodes);
  rate_limiter_.SetLimits(limits.node_observation_rate, limits.node_observation_burst);
  registry_.SetMaxKnownNodes(limits.max_known_nodes);
}

absl::Status Fleet::AdmitNode(const std::string& node_id) { return registry_.Admit(node_id); }

}  // namespace breaker::service
