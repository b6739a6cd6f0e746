// BreakerClient over gRPC: one Connect stream to breakerd at a time, a local engine beside it.
//
// Threads, all the library's own:
//   - the connection thread: connects (addresses in turn, jittered backoff), says hello, then
//     reads policies and acknowledgements until the stream ends;
//   - a sender thread per connection: writes observation batches and policy acknowledgements
//     (gRPC allows one reader and one writer on a stream at once);
//   - the ticker: moves the local engine's time along and notices when the fleet policy has
//     gone stale;
//   - the dispatcher: calls subscribers, so that a slow one never delays the network;
//   - with ClientOptions::log, the log thread: hands it the lines, outside every lock.
// Callers' threads only touch the observation buffer's and the local engine's short locks,
// and read the policy cell.

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "client/address_rotation.h"
#include "client/backoff.h"
#include "client/channel_security.h"
#include "client/client.h"
#include "client/log_thread.h"
#include "client/observation_buffer.h"
#include "client/policy_cell.h"
#include "client/policy_in_force.h"
#include "common/grpc_keepalive.h"
#include "common/mutex.h"
#include "common/replica_trailer.h"
#include "core/chain_time.h"
#include "core/engine.h"
#include "core/input_bounds.h"
#include "core/relay_id.h"
#include "glog/logging.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "proto/codec/api_codec.h"
#include "proto/codec/config_file.h"

namespace breaker::client {

namespace v1 = ::breaker::v1;

namespace {

absl::Status ValidateOptions(const ClientOptions& options) {
  if (options.addresses.empty()) {
    return absl::InvalidArgumentError(
        "addresses is empty; give at least one breakerd address, host:port");
  }
  // breakerd refuses the hello of a node id past its bounds: say so before connecting.
  if (absl::Status node_id = core::bounds::CheckNodeId("node_id", options.node_id); !node_id.ok()) {
    return node_id;
  }
  if (options.max_buffered_observations == 0) {
    return absl::InvalidArgumentError("max_buffered_observations is 0; it must be at least 1");
  }
  if (options.max_batch == 0 || options.max_batch > core::bounds::kMaxObservationsPerBatch) {
    return absl::InvalidArgumentError(absl::StrCat("max_batch is ", options.max_batch,
                                                   "; it must be in 1..",
                                                   core::bounds::kMaxObservationsPerBatch));
  }
  if (options.initial_backoff <= absl::ZeroDuration() ||
      options.max_backoff < options.initial_backoff || options.backoff_multiplier < 1 ||
      options.backoff_jitter < 0 || options.backoff_jitter >= 1) {
    return absl::InvalidArgumentError(
        "backoff: initial_backoff must be positive and at most max_backoff, "
        "backoff_multiplier at least 1, backoff_jitter in [0, 1)");
  }
  if (options.staleness_limit.has_value() && *options.staleness_limit <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("staleness_limit must be positive");
  }
  if (options.evaluation_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("evaluation_interval must be positive");
  }
  if (options.clock == nullptr) return absl::InvalidArgumentError("clock is null");
  return absl::OkStatus();
}

class GrpcClient : public BreakerClient {
 public:
  GrpcClient(ClientOptions options, core::Engine local_engine, absl::Duration staleness_limit,
             core::ChainSpec chain)
      : chain_(std::move(chain)),
        options_(std::move(options)),
        log_thread_(options_.log ? std::make_unique<LogThread>(options_.log) : nullptr),
        buffer_(options_.max_buffered_observations,
                static_cast<uint64_t>(absl::ToUnixMicros(options_.clock->Now()))),
        policy_in_force_(*options_.clock, staleness_limit),
        backoff_(options_.initial_backoff, options_.backoff_multiplier, options_.max_backoff,
                 options_.backoff_jitter,
                 static_cast<uint64_t>(absl::ToUnixNanos(options_.clock->Now()))),
        local_(std::move(local_engine)) {
    Republish();
    connection_thread_ = std::thread([this] { ConnectionLoop(); });
    ticker_thread_ = std::thread([this] { TickerLoop(); });
    dispatcher_thread_ = std::thread([this] { DispatchLoop(); });
    dispatcher_id_ = dispatcher_thread_.get_id();
  }

  ~GrpcClient() override { Stop(); }

  core::ChainSpec chain() const override { return chain_; }

  absl::Status Report(core::Slot slot, core::Event event) override {
    {
      MutexLock lock(&local_mu_);
      // The ticker moves the engine's time only every evaluation_interval: catch up first, or
      // an observation of a slot the clock has reached would be refused as too far ahead.
      const core::Slot now = core::SlotAt(options_.clock->Now(), local_.config().chain);
      if (now > local_.current_slot()) local_.Advance(now);
      core::Observation observation{slot, options_.node_id, 0, std::move(event)};
      if (absl::Status refusal = CheckAsBreakerd(observation); !refusal.ok()) {
        MutexLock refusal_lock(&refusal_mu_);
        last_refusal_ = std::string(refusal.message());
        return refusal;
      }
      observation.sequence = buffer_.Add(slot, observation.event);
      // The local engine learns the node's own observations all the time, so that it is ready
      // when breakerd goes away.
      (void)local_.Observe(observation);
    }
    WakeSender();
    return absl::OkStatus();
  }

  std::shared_ptr<const PolicySnapshot> policy() const override { return cell_.Get(); }

  bool IsAllowed(core::BuilderIndex builder, absl::string_view relay) const override {
    const std::shared_ptr<const PolicySnapshot> snapshot = cell_.Get();
    if (relay.empty()) return snapshot->policy.IsAllowed(builder, "");
    // Callers pass the same few endpoints again and again: remember the last normalization.
    thread_local std::string last_raw;
    thread_local std::string last_normalized;
    if (relay != last_raw) {
      absl::StatusOr<std::string> normalized = core::NormalizeRelayId(relay);
      // An identifier that cannot be normalized is nobody's relay: refuse its bids.
      if (!normalized.ok()) return false;
      last_raw = std::string(relay);
      last_normalized = *std::move(normalized);
    }
    return snapshot->policy.IsAllowed(builder, last_normalized);
  }

  int Subscribe(PolicyCallback callback) override {
    MutexLock lock(&subscribers_mu_);
    subscribers_.emplace(next_subscriber_, std::make_shared<PolicyCallback>(std::move(callback)));
    return next_subscriber_++;
  }

  void Unsubscribe(int id) override {
    MutexLock lock(&subscribers_mu_);
    subscribers_.erase(id);
    // A callback that unsubscribes (itself or another) runs on the dispatcher, which must not
    // wait for itself.
    if (std::this_thread::get_id() == dispatcher_id_) return;
    // Elsewhere, wait for the callback to return if it is running.
    while (calling_ == id) subscribers_cv_.Wait(&subscribers_mu_);
  }

  ClientStats stats() const override {
    ClientStats stats;
    const ObservationBuffer::Stats buffer = buffer_.stats();
    stats.reported = buffer.reported;
    stats.acknowledged = buffer.acknowledged;
    stats.buffered = buffer.buffered;
    stats.dropped_bids = buffer.dropped_bids;
    stats.dropped_other = buffer.dropped_other;
    stats.dropped_failures = buffer.dropped_failures;
    stats.refused = refused_.load();
    stats.replayed = replayed_.load();
    stats.reconnects = reconnects_.load();
    {
      MutexLock lock(&refusal_mu_);
      stats.last_refusal = last_refusal_;
    }
    const std::shared_ptr<const PolicySnapshot> snapshot = cell_.Get();
    stats.fleet_policy_version = snapshot->fleet_version;
    stats.source = snapshot->source;
    stats.fallback_active = snapshot->source != PolicySource::kFleet;
    MutexLock lock(&state_mu_);
    stats.connected = policy_in_force_.connected();
    stats.address = address_;
    stats.sequence_exhausted = sequence_exhausted_;
    return stats;
  }

  void Stop() override {
    {
      MutexLock lock(&state_mu_);
      if (stopping_) return;
      stopping_ = true;
      if (context_ != nullptr) context_->TryCancel();
    }
    state_cv_.SignalAll();
    send_cv_.SignalAll();
    dispatch_cv_.SignalAll();
    connection_thread_.join();
    ticker_thread_.join();
    dispatcher_thread_.join();
  }

 private:
  // What breakerd refuses of `observation` for its shape, with its code and message: the bounds
  // its codec checks as it reads a batch (under the proto's field names), then its engine's
  // checks, made by the local engine, whose window is this node's clock's.
  absl::Status CheckAsBreakerd(const core::Observation& observation) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(local_mu_) {
    if (const auto* bid = std::get_if<core::BidSeen>(&observation.event)) {
      if (absl::Status key = core::bounds::CheckExactBytes("bid_seen.builder_pubkey", bid->pubkey,
                                                           core::bounds::kPubkeyBytes, true);
          !key.ok()) {
        return key;
      }
    } else if (const auto* seen = std::get_if<core::BlocksSeen>(&observation.event)) {
      if (absl::Status count = core::bounds::CheckMaxCount(
              "blocks_seen.block_roots", seen->roots.size(), core::bounds::kMaxBlockRootsPerSlot);
          !count.ok()) {
        return count;
      }
    }
    return local_.ValidateObservation(observation);
  }

  // --- Logging ----------------------------------------------------------------------------

  // To options_.log through the log thread, or to glog.
  void Log(LogLevel level, std::string message) const {
    if (log_thread_ != nullptr) {
      log_thread_->Log(level, std::move(message));
      return;
    }
    switch (level) {
      case LogLevel::kInfo:
        LOG(INFO) << message;
        break;
      case LogLevel::kWarning:
        LOG(WARNING) << message;
        break;
      case LogLevel::kError:
        LOG(ERROR) << message;
        break;
    }
  }

  // One line of Log(), written as a stream: `LogLine(this, LogLevel::kWarning) << ...;`.
  class LogLine {
   public:
    LogLine(const GrpcClient* client, LogLevel level) : client_(client), level_(level) {}
    ~LogLine() { client_->Log(level_, stream_.str()); }
    LogLine(const LogLine&) = delete;
    LogLine& operator=(const LogLine&) = delete;

    template <typename T>
    LogLine& operator<<(const T& value) {
      stream_ << value;
      return *this;
    }

   private:
    const GrpcClient* client_;
    const LogLevel level_;
    std::ostringstream stream_;
  };

  // --- The connection ---------------------------------------------------------------------

  // The addresses in turn, each at once after the one before failed, with the backoff once per
  // round (see AddressRotation).
  void ConnectionLoop() {
    AddressRotation rotation(options_.addresses.size(), &backoff_);
    while (!Stopping()) {
      const AddressRotation::Attempt attempt = RunStream(options_.addresses[rotation.current()]);
      if (Stopping()) return;
      const absl::Duration wait = rotation.Ended(attempt);
      if (wait <= absl::ZeroDuration()) continue;
      MutexLock lock(&state_mu_);
      state_cv_.Await(&state_mu_, wait,
                      [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mu_) { return stopping_; });
    }
  }

  // A new channel for every attempt, with a subchannel of its own. A channel that lost its
  // connection reconnects on gRPC's own backoff (1 s, x1.6, up to 120 s by default), and the
  // outcome of those attempts is seen only by gRPC's backup poller, every 5 s, since no call
  // waits on the channel meanwhile: a node came back many seconds after breakerd. A fresh
  // channel connects at once, on this thread's call, so that the backoff in force is ours.
  std::shared_ptr<grpc::Channel> NewChannel(const std::string& address) const {
    grpc::ChannelArguments args;
    // A long-lived stream through NATs and proxies: ping, within what breakerd permits.
    SetClientKeepalive(args);
    // Otherwise a channel with the same address and arguments (another client of the same
    // process) would share a subchannel still waiting out gRPC's backoff.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    std::shared_ptr<grpc::ChannelCredentials> credentials =
        options_.credentials != nullptr ? options_.credentials : grpc::InsecureChannelCredentials();
    return CreateChannel(address, credentials, options_.bearer_token, args);
  }

  // One stream to `address`, until it ends; how it ended.
  AddressRotation::Attempt RunStream(const std::string& address) {
    std::unique_ptr<v1::Breaker::Stub> stub = v1::Breaker::NewStub(NewChannel(address));
    grpc::ClientContext context;
    {
      MutexLock lock(&state_mu_);
      if (stopping_) return AddressRotation::Attempt{};
      context_ = &context;
      address_ = address;
    }
    std::unique_ptr<grpc::ClientReaderWriter<v1::NodeMessage, v1::ServerMessage>> stream =
        stub->Connect(&context);

    v1::NodeMessage hello;
    hello.mutable_hello()->set_node_id(options_.node_id);
    hello.mutable_hello()->set_client_version(options_.client_version);
    hello.mutable_hello()->set_network(options_.network);
    {
      MutexLock lock(&state_mu_);
      // Observations wait for breakerd's first message: the NodeState may renumber them.
      stream_ready_ = false;
      sequence_exhausted_ = false;
      policy_in_force_.OnStreamStart(buffer_.stats().buffered > 0 ? buffer_.LastSequence() : 0);
      if (const std::optional<PolicyInForce::Held> held = policy_in_force_.HelloClaim()) {
        hello.mutable_hello()->set_policy_version(held->version);
        hello.mutable_hello()->set_fleet_id(held->fleet_id);
      }
    }
    // Everything not acknowledged goes again, in order; breakerd ignores what it already has.
    buffer_.Rewind();
    bool stream_open = stream->Write(hello);
    std::thread sender;
    if (stream_open) sender = std::thread([this, &stream] { SendLoop(*stream); });

    v1::ServerMessage message;
    AddressRotation::Attempt end;
    while (stream_open && stream->Read(&message)) {
      end.answered = true;
      OnServerMessage(message);
    }
    {
      MutexLock lock(&state_mu_);
      stream_done_ = true;
      if (policy_in_force_.connected()) {
        LogLine(this, LogLevel::kWarning) << "breakerd stream to " << address << " ended";
      }
      policy_in_force_.OnStreamEnd();
    }
    send_cv_.SignalAll();
    // No TryCancel here: the read side is done, so the call is over (a write in flight fails
    // at once), and a cancel would turn breakerd's status, which Finish reads only now, into
    // CANCELLED. Stop() cancels by itself.
    if (sender.joinable()) sender.join();
    const grpc::Status status = stream->Finish();
    end.unavailable = status.error_code() == grpc::StatusCode::UNAVAILABLE;
    end.standby = end.unavailable && context.GetServerTrailingMetadata().count(kLeaderTrailer) > 0;
    if (!status.ok() && !Stopping()) {
      // Info: it repeats, at every attempt, while breakerd is away; the ended stream before it
      // was a warning, and the policy's move to fleet+local past the staleness limit is one.
      LogLine(this, LogLevel::kInfo)
          << "breakerd at " << address << ": " << DescribeStatus(status) << " (code "
          << status.error_code() << "); reconnecting with backoff";
    }
    MutexLock lock(&state_mu_);
    context_ = nullptr;
    stream_done_ = false;
    pending_policy_ack_ = 0;
    ++reconnects_;
    return end;
  }

  void SendLoop(grpc::ClientReaderWriter<v1::NodeMessage, v1::ServerMessage>& stream) {
    while (true) {
      uint64_t ack = 0;
      bool observations = false;
      {
        MutexLock lock(&state_mu_);
        while (!stopping_ && !stream_done_ &&
               !(stream_ready_ &&
                 (pending_policy_ack_ != 0 || (!sequence_exhausted_ && buffer_.HasUnsent())))) {
          send_cv_.Wait(&state_mu_);
        }
        if (stopping_ || stream_done_) return;
        std::swap(ack, pending_policy_ack_);
        observations = !sequence_exhausted_;
      }
      if (ack != 0) {
        v1::NodeMessage message;
        message.mutable_policy_ack()->set_version(ack);
        if (!stream.Write(message)) return;
      }
      if (!observations) continue;
      std::vector<ObservationBuffer::Entry> batch = buffer_.NextBatch(options_.max_batch);
      if (batch.empty()) continue;
      v1::NodeMessage message;
      for (ObservationBuffer::Entry& entry : batch) {
        *message.mutable_observations()->add_observations() =
            codec::ObservationToProto(core::Observation{entry.slot, options_.node_id,
                                                        entry.sequence, std::move(entry.event)});
      }
      if (!stream.Write(message)) return;
    }
  }

  void OnServerMessage(const v1::ServerMessage& message) {
    {
      MutexLock lock(&state_mu_);
      if (policy_in_force_.OnMessage()) {
        LogLine(this, LogLevel::kInfo) << "connected to breakerd at " << address_;
      }
    }
    switch (message.kind_case()) {
      case v1::ServerMessage::kPolicy: {
        absl::StatusOr<core::Policy> policy = codec::PolicyFromProto(message.policy());
        if (!policy.ok()) {
          LogLine(this, LogLevel::kError)
              << "breakerd sent a policy this client cannot read, ignored: " << policy.status();
          break;
        }
        {
          MutexLock lock(&state_mu_);
          pending_policy_ack_ = policy->version;
          policy_in_force_.OnFleetPolicy(*std::move(policy), message.policy().fleet_id());
        }
        send_cv_.SignalAll();
        break;
      }
      case v1::ServerMessage::kObservationAck:
        buffer_.Acknowledge(message.observation_ack().sequence());
        {
          MutexLock lock(&state_mu_);
          policy_in_force_.OnAcknowledged(message.observation_ack().sequence(),
                                          message.observation_ack().policy_version());
        }
        WakeSender();
        refused_ += message.observation_ack().refused_size();
        replayed_ += message.observation_ack().replayed();
        for (const v1::ObservationRefusal& refusal : message.observation_ack().refused()) {
          const std::string why = absl::StrCat("breakerd refused observation ", refusal.sequence(),
                                               ": ", refusal.message());
          LogLine(this, LogLevel::kWarning) << why;
          {
            MutexLock refusal_lock(&refusal_mu_);
            last_refusal_ = why;
          }
          // The node's numbers ran out since its hello (another process under its id used the
          // last one): hold the rest back rather than see each refused.
          if (refusal.code() == static_cast<int32_t>(grpc::StatusCode::FAILED_PRECONDITION)) {
            HoldBackExhausted(core::bounds::kMaxSequence);
          }
        }
        break;
      case v1::ServerMessage::kConfig: {
        absl::StatusOr<core::Config> config = codec::ConfigFromProto(message.config());
        if (!config.ok()) {
          LogLine(this, LogLevel::kError)
              << "breakerd sent a configuration this client cannot use, keeping the "
                 "local one: "
              << config.status();
          break;
        }
        // At every connect, and again mid-stream after a reload of breakerd's configuration:
        // the local engine runs the fleet's rules when breakerd goes away.
        MutexLock lock(&local_mu_);
        if (absl::Status status = local_.Reconfigure(*std::move(config)); !status.ok()) {
          LogLine(this, LogLevel::kError)
              << "local engine refused breakerd's configuration: " << status;
          break;
        }
        // Under the new rules now, not at the ticker's next evaluation.
        local_.RefreshPolicy();
        break;
      }
      case v1::ServerMessage::kNodeState:
        OnNodeState(message.node_state());
        break;
      case v1::ServerMessage::KIND_NOT_SET:
        break;
    }
    // breakerd's first message has arrived (from a breakerd that sends no NodeState, the
    // configuration): the observations may go.
    bool released = false;
    {
      MutexLock lock(&state_mu_);
      released = !stream_ready_;
      stream_ready_ = true;
    }
    if (released) send_cv_.SignalAll();
    Republish();
  }

  // breakerd has handled this node's observations up to state.last_sequence(). A node whose
  // clock went back since its last run numbered its new observations from a lower start:
  // those not sent yet are renumbered above, or breakerd would ignore them as replays.
  void OnNodeState(const v1::NodeState& state) {
    if (state.last_sequence() >= core::bounds::kMaxSequence) {
      HoldBackExhausted(state.last_sequence());
      return;
    }
    const size_t renumbered = buffer_.RenumberAbove(state.last_sequence());
    if (renumbered == 0) return;
    LogLine(this, LogLevel::kWarning)
        << "breakerd has handled this node's observations up to sequence number "
        << state.last_sequence() << ", at or above the numbers of " << renumbered
        << " observations not sent yet (did the clock go back since the node last "
        << "ran?): renumbered above it";
    MutexLock lock(&state_mu_);
    policy_in_force_.OnRenumbered(buffer_.LastSequence());
  }

  // breakerd has handled number `last` of this node, the last it accepts: it would refuse
  // every observation, whatever its number. They stay buffered, unsent (the oldest dropped
  // when the buffer is full), until an operator resets the node's numbers; the reset ends the
  // stream, and the next one's NodeState lets them go.
  void HoldBackExhausted(uint64_t last) {
    {
      MutexLock lock(&state_mu_);
      if (sequence_exhausted_) return;
      sequence_exhausted_ = true;
    }
    LogLine(this, LogLevel::kError)
        << "breakerd has handled sequence number " << last << " of node " << options_.node_id
        << ", the last one it accepts, and refuses every other: "
        << "this node's observations are kept unsent until an operator runs "
        << "`breakerctl reset --node=" << options_.node_id << "`";
  }

  // --- Time and the policy in force -------------------------------------------------------

  void TickerLoop() {
    while (true) {
      {
        // Often enough to notice staleness and slot changes; cheap when nothing changed.
        MutexLock lock(&state_mu_);
        const bool stopping = state_cv_.Await(
            &state_mu_, options_.evaluation_interval,
            [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mu_) { return stopping_; });
        if (stopping) return;
      }
      {
        MutexLock lock(&local_mu_);
        local_.Advance(core::SlotAt(options_.clock->Now(), local_.config().chain));
      }
      Republish();
    }
  }

  // Recomputes the policy in force and publishes it when it changed.
  void Republish() {
    core::Policy local;
    {
      MutexLock lock(&local_mu_);
      local = local_.policy();
    }
    {
      MutexLock lock(&state_mu_);
      auto next = std::make_shared<const PolicySnapshot>(policy_in_force_.Evaluate(local));
      const std::shared_ptr<const PolicySnapshot> current = cell_.Get();
      if (current != nullptr && current->source == next->source &&
          current->fleet_version == next->fleet_version &&
          current->policy.SameDecisions(next->policy)) {
        return;
      }
      if (current != nullptr && current->source != next->source) {
        // Back to the fleet's policy is how it should be; the local engine taking part is
        // what an operator should know.
        LogLine(this, next->source == PolicySource::kFleet ? LogLevel::kInfo : LogLevel::kWarning)
            << "breaker policy now from " << PolicySourceName(next->source) << " (was "
            << PolicySourceName(current->source) << "), mode " << core::ModeName(next->policy.mode);
      }
      cell_.Set(next);
    }
    dispatch_cv_.Signal();
  }

  void DispatchLoop() {
    std::shared_ptr<const PolicySnapshot> delivered;
    while (true) {
      std::shared_ptr<const PolicySnapshot> latest;
      {
        MutexLock lock(&state_mu_);
        while (!stopping_ && cell_.Get() == delivered) dispatch_cv_.Wait(&state_mu_);
        if (stopping_) return;
        latest = cell_.Get();
      }
      delivered = latest;
      // Each subscriber in turn, by id, without holding subscribers_mu_ during the call: a
      // callback may Subscribe or Unsubscribe.
      int last_called = 0;
      while (true) {
        std::shared_ptr<PolicyCallback> callback;
        {
          MutexLock lock(&subscribers_mu_);
          auto next = subscribers_.upper_bound(last_called);
          if (next == subscribers_.end()) break;
          last_called = next->first;
          callback = next->second;
          calling_ = last_called;
        }
        (*callback)(latest);
        {
          MutexLock lock(&subscribers_mu_);
          calling_ = 0;
        }
        subscribers_cv_.SignalAll();
      }
    }
  }

  // The sender waits on state_mu_: taking it before notifying means it cannot miss the news
  // between checking for work and going to sleep.
  void WakeSender() {
    { MutexLock lock(&state_mu_); }
    send_cv_.SignalAll();
  }

  bool Stopping() {
    MutexLock lock(&state_mu_);
    return stopping_;
  }

  const core::ChainSpec chain_;
  const ClientOptions options_;
  // Delivers log lines to options_.log; null when it is empty (glog). Outlives every other
  // thread of the client: they end in Stop(), it in its destructor, which runs after.
  const std::unique_ptr<LogThread> log_thread_;
  ObservationBuffer buffer_;
  PolicyCell<PolicySnapshot> cell_;
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> replayed_{0};
  std::atomic<uint64_t> reconnects_{0};

  // Lock order: state_mu_, then local_mu_; subscribers_mu_ is never held with either.
  //
  // The connection's state. The policy cell is written under it, so that publications are
  // ordered; readers of the cell never take it.
  mutable Mutex state_mu_;
  CondVar state_cv_;
  CondVar send_cv_;
  CondVar dispatch_cv_;
  bool stopping_ ABSL_GUARDED_BY(state_mu_) = false;
  bool stream_done_ ABSL_GUARDED_BY(state_mu_) = false;
  // The current stream has brought its first message: the sender may send observations.
  bool stream_ready_ ABSL_GUARDED_BY(state_mu_) = false;
  // The current stream said the node has used its last sequence number: no observation goes.
  bool sequence_exhausted_ ABSL_GUARDED_BY(state_mu_) = false;
  std::string address_ ABSL_GUARDED_BY(state_mu_);
  grpc::ClientContext* context_ ABSL_GUARDED_BY(state_mu_) = nullptr;
  // Fleet, fleet+local or local: what the stream brings and the clock decide it.
  PolicyInForce policy_in_force_ ABSL_GUARDED_BY(state_mu_);
  uint64_t pending_policy_ack_ ABSL_GUARDED_BY(state_mu_) = 0;
  // The connection thread's own: the waits of its AddressRotation.
  Backoff backoff_;

  Mutex local_mu_;
  core::Engine local_ ABSL_GUARDED_BY(local_mu_);

  // Taken alone, or inside local_mu_ (as the observation buffer's own mutex is).
  mutable Mutex refusal_mu_;
  std::string last_refusal_ ABSL_GUARDED_BY(refusal_mu_);

  Mutex subscribers_mu_;
  // Signalled when calling_ changes.
  CondVar subscribers_cv_;
  std::map<int, std::shared_ptr<PolicyCallback>> subscribers_ ABSL_GUARDED_BY(subscribers_mu_);
  int next_subscriber_ ABSL_GUARDED_BY(subscribers_mu_) = 1;
  // The subscriber whose callback the dispatcher is running; 0 when none.
  int calling_ ABSL_GUARDED_BY(subscribers_mu_) = 0;

  std::thread connection_thread_;
  std::thread ticker_thread_;
  std::thread dispatcher_thread_;
  // Set once at construction (join() clears dispatcher_thread_'s).
  std::thread::id dispatcher_id_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BreakerClient>> StartGrpcClient(ClientOptions options) {
  if (absl::Status status = ValidateOptions(options); !status.ok()) return status;
  core::Config config;
  if (options.fallback_config.has_value()) {
    config = *options.fallback_config;
  } else if (!options.network.empty()) {
    absl::StatusOr<core::ChainSpec> chain = core::ChainSpecForNetwork(options.network);
    if (!chain.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("network '", options.network, "' has no built-in chain settings; give ",
                       "fallback_config with its chain: ", chain.status().message()));
    }
    config.chain = *chain;
  }
  const core::Slot now = core::SlotAt(options.clock->Now(), config.chain);
  absl::StatusOr<core::Engine> engine = core::Engine::Create(config, now);
  if (!engine.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("fallback_config: ", engine.status().message()));
  }
  const absl::Duration staleness_limit = options.staleness_limit.value_or(
      absl::Seconds(2 * config.chain.slots_per_epoch * config.chain.seconds_per_slot));
  return std::unique_ptr<BreakerClient>(
      new GrpcClient(std::move(options), *std::move(engine), staleness_limit, config.chain));
}

}  // namespace breaker::client
