#include "service/rpc/node_service.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/mutex.h"
#include "core/input_bounds.h"
#include "glog/logging.h"
#include "grpcpp/support/proto_buffer_writer.h"
#include "proto/codec/received_batch.h"
#include "proto/codec/request_checks.h"
#include "service/rpc/stream_finish.h"

namespace breaker::service {

namespace v1 = ::breaker::v1;

// Refusals kept for the next acknowledgement while a write is in flight; the rest are counted
// in the log only, so a node that floods bad input cannot grow the server's memory.
constexpr int kMaxPendingRefusals = 100;

// One node's Connect stream. At most one read and one write are in flight. The next message is
// read only once the previous batch is durable, which bounds what a node can have queued.
// Writes are coalesced: a newer policy replaces an unsent one, acknowledgements merge, so a
// node that stops reading costs a bounded amount of memory, and only until its write deadline
// (EndIfWriteOverdue).
//
// Owned by shared pointers: its own (released in OnDone) and those of pending fleet callbacks,
// which may outlive the call; after OnDone they find it finished and do nothing.
class NodeStream : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
                   public PolicyListener,
                   public std::enable_shared_from_this<NodeStream> {
 public:
  // `caller`: who opened the stream, authorized for Permission::kNodeStream, by
  // `credentials`.
  NodeStream(NodeService* service, grpc::CallbackServerContext* context, Principal caller,
             Credentials credentials)
      : service_(service),
        fleet_(service->fleet()),
        peer_(context->peer()),
        caller_(std::move(caller)),
        credentials_(std::move(credentials)),
        opened_at_(fleet_->clock().Monotonic()),
        cancel_(context) {}

  void Start(std::shared_ptr<NodeStream> self) {
    self_ = std::move(self);
    StartRead(&read_buffer_);
  }

  // Ends the stream with `status` (replaced, or shutting down).
  void Kick(const grpc::Status& status) {
    MutexLock lock(&mu_);
    FinishLocked(status);
  }

  // Ends the stream, counted, when it has not said hello within `timeout` of opening, as of
  // `now` (the fleet clock's monotonic reading).
  void EndIfNoHello(absl::Duration now, absl::Duration timeout) {
    {
      MutexLock lock(&mu_);
      if (!node_id_.empty() || stream_.Ending() || now - opened_at_ < timeout) return;
    }
    LOG(WARNING) << "stream from " << peer_ << " ended: no hello within "
                 << absl::FormatDuration(timeout);
    fleet_->metrics().Refused(RefusedInput::kConnect, absl::StatusCode::kDeadlineExceeded);
    Kick(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                      absl::StrCat("no hello within ", absl::FormatDuration(timeout),
                                   " of opening the stream; a Connect stream says hello first")));
  }

  // Ends the stream at once, counted, when the write in flight started `timeout` or more
  // before `now` (the fleet clock's monotonic reading): the node stopped reading its stream,
  // and a write it does not read would hold the stream, ended or not, forever.
  void EndIfWriteOverdue(absl::Duration now, absl::Duration timeout) {
    const grpc::Status status(
        grpc::StatusCode::DEADLINE_EXCEEDED,
        absl::StrCat("breakerd's message was not read within ", absl::FormatDuration(timeout),
                     ": the node stopped reading its Connect stream (a node must read it "
                     "continuously); reconnect"));
    {
      MutexLock lock(&mu_);
      if (!stream_.AbandonOverdueWrite(now, timeout, status)) return;
    }
    // A write follows the hello: node_id_ is set.
    LOG(WARNING) << "stream from " << peer_ << " (node " << node_id_
                 << ") ended: " << status.error_message();
    fleet_->metrics().WriteTimedOut(StreamRpc::kConnect);
    // Without the stream's lock: OnWriteDone(false), which finishes, may run meanwhile.
    cancel_.Cancel(status);
  }

  // Checks the stream's credential against the access file in force, and its node id once the
  // hello named it; ends the stream with PERMISSION_DENIED when either no longer holds.
  // Returns whether it ended the stream.
  bool Reauthorize(const Authorizer& authorizer) {
    MutexLock lock(&mu_);
    if (stream_.Ending()) return false;
    absl::StatusOr<Principal> caller = authorizer.Authorize(credentials_, Permission::kNodeStream);
    absl::Status allowed = caller.status();
    if (caller.ok() && !node_id_.empty()) allowed = Authorizer::CheckNodeId(*caller, node_id_);
    if (allowed.ok()) return false;
    const std::string message = absl::StrCat("breakerd's access file changed: ", allowed.message());
    LOG(WARNING) << "stream from " << peer_ << (node_id_.empty() ? "" : " (node ") << node_id_
                 << (node_id_.empty() ? "" : ")") << " ended: " << message;
    fleet_->metrics().Refused(RefusedInput::kMessage, absl::StatusCode::kPermissionDenied);
    FinishLocked(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, message));
    return true;
  }

  void OnPolicy(std::shared_ptr<const PublishedPolicy> policy) override {
    MutexLock lock(&mu_);
    // OnHello's initial fleet_->policy() can arrive after a newer publication the fleet has
    // already made to this (just subscribed) listener; never step back to it. (Publications,
    // not versions: a new fleet id publishes the current version again.)
    if (latest_policy_ != nullptr && latest_policy_->generation >= policy->generation) return;
    latest_policy_ = std::move(policy);
    MaybeWriteLocked();
  }

  void OnConfig(std::shared_ptr<const PublishedConfig> config) override {
    MutexLock lock(&mu_);
    TakeConfigLocked(config);
    MaybeWriteLocked();
  }

  void OnNodeReset(const std::string& node_id) override {
    MutexLock lock(&mu_);
    if (node_id != node_id_) return;
    // The node numbers on from what its hello was answered with; only a new stream's
    // NodeState tells it to start again.
    FinishLocked(grpc::Status(grpc::StatusCode::ABORTED,
                              "an operator reset this node's sequence numbers (breakerctl reset "
                              "--node): reconnect, the new stream says where to number from"));
  }

 private:
  // Makes `config` the one to send next, unless the stream has a newer one (OnHello's read of
  // fleet_->config() can arrive after a reload published to this listener). A newer one
  // replaces an unsent one.
  void TakeConfigLocked(const std::shared_ptr<const PublishedConfig>& config)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (config == nullptr || config->generation <= config_generation_) return;
    config_generation_ = config->generation;
    pending_config_ = config->proto;
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // The node closed its side or the call broke: end cleanly, it will reconnect.
      MutexLock lock(&mu_);
      FinishLocked(grpc::Status::OK);
      return;
    }
    constexpr absl::string_view kMalformed =
        "malformed NodeMessage; send breaker.v1.NodeMessage messages";
    // The slice holds the bytes (a reference, or one copy when they came in pieces) while the
    // message is handled; the buffer is free for the next read.
    grpc::Slice slice;
    absl::string_view bytes;
    if (read_buffer_.Valid() && read_buffer_.DumpToSingleSlice(&slice).ok()) {
      bytes = absl::string_view(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
    read_buffer_.Clear();
    if (!node_id_.empty()) {
      // A batch, as breaker clients send it: read once, from bytes that the journal keeps.
      if (std::optional<absl::string_view> field = codec::LoneObservationsField(bytes)) {
        absl::StatusOr<codec::ReceivedBatch> batch =
            codec::ReceivedBatch::Parse(std::string(*field));
        if (!batch.ok()) return Refuse(grpc::StatusCode::INVALID_ARGUMENT, std::string(kMalformed));
        return OnObservations(*std::move(batch));
      }
    }
    v1::NodeMessage message;
    if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return Refuse(grpc::StatusCode::INVALID_ARGUMENT, std::string(kMalformed));
    }
    if (node_id_.empty()) return OnHello(message);
    switch (message.kind_case()) {
      case v1::NodeMessage::kHello:
        return Refuse(grpc::StatusCode::INVALID_ARGUMENT,
                      "a second hello on the same stream; send it only first");
      case v1::NodeMessage::kObservations:
        return OnObservations(codec::ReceivedBatch::Of(message.observations()));
      case v1::NodeMessage::kPolicyAck:
        OnPolicyAck(message.policy_ack().version());
        return ReadNext();
      case v1::NodeMessage::KIND_NOT_SET:
        if (!message.GetReflection()->GetUnknownFields(message).empty()) {
          // A kind of message newer than this breakerd: ignored, so that a newer client keeps
          // its stream (ending it would only make it reconnect and send it again).
          LOG_FIRST_N(WARNING, 10) << "node " << node_id_ << " sent a NodeMessage of a kind "
                                   << "this breakerd does not know; ignored";
          return ReadNext();
        }
        return Refuse(grpc::StatusCode::INVALID_ARGUMENT,
                      "empty NodeMessage; set hello, observations or policy_ack");
    }
  }

  // Reads the next message unless the stream is ending.
  void ReadNext() {
    MutexLock lock(&mu_);
    if (!stream_.Ending()) StartRead(&read_buffer_);
  }

  void OnHello(const v1::NodeMessage& message) {
    if (message.kind_case() != v1::NodeMessage::kHello) {
      return Refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    "the first message of a Connect stream must be a hello");
    }
    const v1::Hello& hello = message.hello();
    if (absl::Status bounded = codec::CheckHello(hello); !bounded.ok()) {
      return Refuse(grpc::StatusCode::INVALID_ARGUMENT, std::string(bounded.message()));
    }
    if (absl::Status allowed = Authorizer::CheckNodeId(caller_, hello.node_id()); !allowed.ok()) {
      return Refuse(grpc::StatusCode::PERMISSION_DENIED, std::string(allowed.message()));
    }
    if (!hello.network().empty() && hello.network() != fleet_->network()) {
      return Refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    absl::StrCat("hello.network is '", core::bounds::QuotePrefix(hello.network()),
                                 "' but this breakerd serves '", fleet_->network(),
                                 "'; connect to the right one"));
    }
    const uint64_t held = HeldVersion(hello);
    {
      MutexLock lock(&mu_);
      node_id_ = hello.node_id();
      // The version the node holds counts as sent and acknowledged.
      sent_version_ = acked_version_ = held;
      sent_fleet_id_ = hello.fleet_id();
      pending_node_state_.emplace().set_last_sequence(fleet_->LastSequence(node_id_));
      TakeConfigLocked(fleet_->config());
      subscribed_at_ = fleet_->clock().Monotonic();
    }
    // The access file may have been reloaded since the stream opened: a reload from now on
    // sees the node id, one before is checked here.
    if (Reauthorize(*service_->authorizer_)) return;
    if (grpc::Status registered = service_->Register(hello, held, peer_, shared_from_this());
        !registered.ok()) {
      // Shutting down is no fault of the node's: no warning for it.
      if (registered.error_code() == grpc::StatusCode::UNAVAILABLE) return Kick(registered);
      return Refuse(registered.error_code(), registered.error_message());
    }
    LOG(INFO) << "node " << hello.node_id() << " connected from " << peer_ << " ("
              << core::bounds::ForLog(hello.client_version()) << "), holds policy version "
              << hello.policy_version();
    fleet_->Subscribe(this);
    // A reload published between the read above and the subscription.
    OnConfig(fleet_->config());
    OnPolicy(fleet_->policy());
    ReadNext();
  }

  // The version of the current policy that `hello` says the node holds; 0 when it holds none
  // this service knows. A version of another fleet id (another state directory) is none of
  // this service's. Taken as is, it counted as acknowledged beyond every version to come, or
  // hid the current policy from the node.
  uint64_t HeldVersion(const v1::Hello& hello) {
    const std::shared_ptr<const PublishedPolicy> current = fleet_->policy();
    if (hello.fleet_id() != current->proto.fleet_id()) return 0;
    if (hello.policy_version() <= current->policy.version) return hello.policy_version();
    // Above the current version, under the current fleet id: the state went back (a restored
    // backup), and the versions since count other policies than the node's. The fleet takes
    // a new fleet id; meanwhile this node gets no policy of the old id below the one it
    // holds, which it would take for a newer one.
    {
      MutexLock lock(&mu_);
      stale_fleet_id_ = hello.fleet_id();
      stale_below_version_ = hello.policy_version();
    }
    fleet_->RenewFleetId(hello.node_id(), hello.fleet_id(), hello.policy_version());
    return 0;
  }

  // Whether `policy` is of the fleet id under which the node holds a later version (see
  // HeldVersion), and must not be sent.
  bool OlderThanHeldLocked(const PublishedPolicy& policy) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !stale_fleet_id_.empty() && policy.proto.fleet_id() == stale_fleet_id_ &&
           policy.policy.version < stale_below_version_;
  }

  void OnObservations(codec::ReceivedBatch batch) {
    if (absl::Status bounded = codec::CheckBatchSize(batch.size()); !bounded.ok()) {
      return Refuse(grpc::StatusCode::INVALID_ARGUMENT, std::string(bounded.message()));
    }
    std::weak_ptr<NodeStream> weak = weak_from_this();
    fleet_->SubmitObservations(node_id_, std::move(batch),
                               [weak](absl::StatusOr<v1::ObservationAck> ack) {
                                 std::shared_ptr<NodeStream> stream = weak.lock();
                                 if (stream == nullptr) return;
                                 if (!ack.ok()) return stream->OnRefused(ack.status());
                                 stream->OnDurable(*std::move(ack));
                               });
  }

  // The fleet refused the batch (it could not store it). Ending the stream makes the node send
  // again, after reconnecting, everything not acknowledged; an acknowledgement would have
  // dropped it.
  void OnRefused(const absl::Status& status) {
    fleet_->metrics().Refused(RefusedInput::kMessage, status.code());
    Kick(ToGrpcStatus(status));
  }

  // The fleet made a batch durable.
  void OnDurable(v1::ObservationAck ack) {
    MutexLock lock(&mu_);
    if (!pending_ack_.has_value()) pending_ack_.emplace();
    pending_ack_->set_sequence(std::max(pending_ack_->sequence(), ack.sequence()));
    pending_ack_->set_policy_version(
        std::max(pending_ack_->policy_version(), ack.policy_version()));
    pending_ack_->set_replayed(pending_ack_->replayed() + ack.replayed());
    for (v1::ObservationRefusal& refusal : *ack.mutable_refused()) {
      if (pending_ack_->refused_size() >= kMaxPendingRefusals) break;
      *pending_ack_->add_refused() = std::move(refusal);
    }
    MaybeWriteLocked();
    if (!stream_.Ending()) StartRead(&read_buffer_);
  }

  void OnPolicyAck(uint64_t version) {
    uint64_t acked;
    {
      MutexLock lock(&mu_);
      // Only a version sent on this stream can be acknowledged: one above it would hide the
      // node's lag in ListNodes, and count as applied a policy the node never received.
      acked_version_ = std::max(acked_version_, std::min(version, sent_version_));
      acked = acked_version_;
      MaybeWriteLocked();
    }
    fleet_->NodeAckedPolicy(node_id_, acked);
  }

  void OnWriteDone(bool ok) override {
    MutexLock lock(&mu_);
    if (ok && writing_published_at_.has_value()) {
      fleet_->metrics().FanOut(fleet_->clock().Monotonic() - *writing_published_at_);
    }
    writing_published_at_.reset();
    if (std::optional<grpc::Status> end = stream_.WriteDone(ok)) {
      Finish(*end);
      return;
    }
    MaybeWriteLocked();
  }

  void OnDone() override {
    cancel_.Done();
    fleet_->Unsubscribe(this);
    service_->Closed(this);
    if (!node_id_.empty()) {
      service_->Unregister(node_id_, this);
      LOG(INFO) << "node " << node_id_ << " disconnected";
    }
    self_.reset();  // may destroy this
  }

  void Refuse(grpc::StatusCode code, const std::string& message) {
    LOG(WARNING) << "stream from " << peer_ << (node_id_.empty() ? "" : " (node ") << node_id_
                 << (node_id_.empty() ? "" : ")") << " refused: " << message;
    fleet_->metrics().Refused(RefusedInput::kMessage, static_cast<absl::StatusCode>(code));
    Kick(grpc::Status(code, message));
  }

  // Sends the node's state (first, once), else the pending configuration, else the newest
  // policy if the node has acknowledged the last one sent, else the pending acknowledgement.
  void MaybeWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!stream_.CanWrite() || node_id_.empty()) return;
    if (pending_node_state_.has_value()) {
      v1::ServerMessage message;
      *message.mutable_node_state() = *std::move(pending_node_state_);
      pending_node_state_.reset();
      SerializeLocked(message);
    } else if (pending_config_.has_value()) {
      v1::ServerMessage message;
      *message.mutable_config() = *std::move(pending_config_);
      pending_config_.reset();
      SerializeLocked(message);
    } else if (latest_policy_ != nullptr &&
               (latest_policy_->policy.version != sent_version_ ||
                latest_policy_->proto.fleet_id() != sent_fleet_id_) &&
               acked_version_ >= sent_version_ && !OlderThanHeldLocked(*latest_policy_)) {
      grpc::Slice slice = latest_policy_->server_message;
      write_buffer_ = grpc::ByteBuffer(&slice, 1);
      sent_version_ = latest_policy_->policy.version;
      sent_fleet_id_ = latest_policy_->proto.fleet_id();
      // Fan-out counts the versions published while the stream was subscribed: the policy a
      // node gets at its hello may be hours old.
      if (latest_policy_->published_at >= subscribed_at_) {
        writing_published_at_ = latest_policy_->published_at;
      }
    } else if (pending_ack_.has_value()) {
      v1::ServerMessage message;
      *message.mutable_observation_ack() = *std::move(pending_ack_);
      pending_ack_.reset();
      SerializeLocked(message);
    } else {
      return;
    }
    stream_.WriteStarted(fleet_->clock().Monotonic());
    StartWrite(&write_buffer_);
  }

  void SerializeLocked(const v1::ServerMessage& message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // The buffer still holds the previous message, and gRPC's serializer asserts (aborting
    // the process) when it writes a message larger than an inlined slice into a non-empty
    // buffer: an ack listing refusals did exactly that.
    write_buffer_.Clear();
    bool own_buffer = false;
    grpc::SerializationTraits<v1::ServerMessage>::Serialize(message, &write_buffer_, &own_buffer);
  }

  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (std::optional<grpc::Status> end = stream_.End(status)) Finish(*end);
  }

  NodeService* const service_;
  Fleet* const fleet_;
  const std::string peer_;
  std::shared_ptr<NodeStream> self_;
  // Read and written by the reactor's read path only (one read in flight).
  grpc::ByteBuffer read_buffer_;
  const Principal caller_;
  const Credentials credentials_;
  // Set once, by the hello (under mu_), before anything else of the read path uses it.
  std::string node_id_;
  // When the stream opened, by the fleet clock's monotonic reading: its hello is due within
  // the service's hello timeout.
  const absl::Duration opened_at_;
  // Ends the call at once, a write in flight included (EndIfWriteOverdue).
  CallCancel cancel_;

  Mutex mu_;
  StreamFinish stream_ ABSL_GUARDED_BY(mu_);
  grpc::ByteBuffer write_buffer_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const PublishedPolicy> latest_policy_ ABSL_GUARDED_BY(mu_);
  uint64_t sent_version_ ABSL_GUARDED_BY(mu_) = 0;
  // The fleet id of the version sent (or held at the hello): a new fleet id sends the same
  // version again.
  std::string sent_fleet_id_ ABSL_GUARDED_BY(mu_);
  uint64_t acked_version_ ABSL_GUARDED_BY(mu_) = 0;
  // The hello held a version above the current one of this fleet id: no policy of it below
  // that version is sent (empty: none).
  std::string stale_fleet_id_ ABSL_GUARDED_BY(mu_);
  uint64_t stale_below_version_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<v1::ObservationAck> pending_ack_ ABSL_GUARDED_BY(mu_);
  // What the service knows of the node, sent first after the hello.
  std::optional<v1::NodeState> pending_node_state_ ABSL_GUARDED_BY(mu_);
  // The configuration to send: the one in force after the hello, then each new one.
  std::optional<v1::Config> pending_config_ ABSL_GUARDED_BY(mu_);
  // The generation (PublishedConfig) of the latest configuration taken for sending.
  uint64_t config_generation_ ABSL_GUARDED_BY(mu_) = 0;
  // When the stream subscribed to the fleet's policies (its hello), by the fleet clock's
  // monotonic reading.
  absl::Duration subscribed_at_ ABSL_GUARDED_BY(mu_);
  // The publication time of the policy being written, when its fan-out latency counts.
  std::optional<absl::Duration> writing_published_at_ ABSL_GUARDED_BY(mu_);
};

NodeService::NodeService(Fleet* fleet, const Authorizer* authorizer, absl::Duration hello_timeout,
                         absl::Duration write_timeout)
    : NodeService(std::make_shared<const ServedFleet>(fleet), authorizer, hello_timeout,
                  write_timeout) {}

NodeService::NodeService(std::shared_ptr<const ServedFleet> served, const Authorizer* authorizer,
                         absl::Duration hello_timeout, absl::Duration write_timeout)
    : served_(std::move(served)),
      authorizer_(authorizer),
      hello_timeout_(hello_timeout),
      write_timeout_(write_timeout),
      deadline_checks_([this] { CheckDeadlines(); }) {}

NodeService::~NodeService() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  stop_checks_.SignalAll();
  deadline_checks_.join();
}

void NodeService::CheckDeadlines() {
  while (true) {
    std::vector<std::shared_ptr<NodeStream>> open;
    {
      MutexLock lock(&mu_);
      if (!stopping_) stop_checks_.WaitFor(&mu_, kDeadlineCheckPeriod);
      if (stopping_) return;
      for (const auto& [raw, weak] : open_streams_) {
        if (std::shared_ptr<NodeStream> stream = weak.lock()) open.push_back(std::move(stream));
      }
    }
    // A stream is only opened once the fleet is served (ServedFleet::Admit).
    if (open.empty()) continue;
    const absl::Duration now = fleet()->clock().Monotonic();
    for (const std::shared_ptr<NodeStream>& stream : open) {
      stream->EndIfNoHello(now, hello_timeout_);
      stream->EndIfWriteOverdue(now, write_timeout_);
    }
  }
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NodeService::Connect(
    grpc::CallbackServerContext* context) {
  // Before the caller is, as AdminService: a standby's refusal names the leader to anyone.
  if (absl::Status admitted = served_->Admit(context); !admitted.ok()) {
    return new FinishedCall<grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>>(
        ToGrpcStatus(admitted));
  }
  absl::StatusOr<Principal> caller = authorizer_->Authorize(*context, Permission::kNodeStream);
  auto stream =
      std::make_shared<NodeStream>(this, context, caller.value_or(Principal{}),
                                   Authorizer::CredentialsOf(*context).value_or(Credentials{}));
  NodeStream* raw = stream.get();
  absl::Status shutdown;
  {
    MutexLock lock(&mu_);
    shutdown = shutdown_;
    if (shutdown.ok()) open_streams_.emplace(raw, stream);
  }
  raw->Start(std::move(stream));
  if (!caller.ok()) {
    LOG(WARNING) << "stream from " << context->peer() << " refused: " << caller.status();
    fleet()->metrics().Refused(RefusedInput::kConnect, caller.status().code());
    raw->Kick(ToGrpcStatus(caller.status()));
  } else if (!shutdown.ok()) {
    raw->Kick(ToGrpcStatus(shutdown));
  }
  return raw;
}

void NodeService::Closed(const NodeStream* stream) {
  MutexLock lock(&mu_);
  open_streams_.erase(stream);
}

grpc::Status NodeService::Register(const v1::Hello& hello, uint64_t held_version,
                                   const std::string& peer,
                                   const std::shared_ptr<NodeStream>& stream) {
  const std::string& node_id = hello.node_id();
  const uint32_t max_nodes = fleet()->max_connected_nodes();
  std::shared_ptr<NodeStream> replaced;
  {
    // The fleet's registry is updated under mu_, with the stream table: a replaced stream
    // ending late must not mark the node disconnected while its newer stream is up (it did,
    // when the streams updated the registry themselves, unconditionally, in OnDone).
    MutexLock lock(&mu_);
    if (!shutdown_.ok()) return ToGrpcStatus(shutdown_);
    // The stream would end at the node's first batch, and reconnect at once: refused here, the
    // node backs off, and past its staleness limit its own engine takes part in its policy, as
    // it should while breakerd can learn nothing.
    if (absl::Status fault = fleet()->storage_status(); !fault.ok()) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          absl::StrCat("breakerd cannot store observations now, so it takes no "
                                       "streams: ",
                                       fault.message(), "; reconnect later"));
    }
    // A node already connected may always replace its stream: only new nodes count.
    if (!streams_.contains(node_id) && streams_.size() >= max_nodes) {
      return grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          absl::StrCat("breakerd already serves max_connected_nodes (", max_nodes,
                       ") nodes; node '", node_id,
                       "' refused: raise max_connected_nodes in breakerd's configuration, or "
                       "check that nodes keep stable ids"));
    }
    // Only a new node id can be beyond max_known_nodes.
    if (absl::Status admitted = fleet()->AdmitNode(node_id); !admitted.ok()) {
      return ToGrpcStatus(admitted);
    }
    std::weak_ptr<NodeStream>& slot = streams_[node_id];
    replaced = slot.lock();
    slot = stream;
    fleet()->NodeConnected(node_id, peer, hello.client_version(), held_version);
  }
  if (replaced != nullptr) {
    LOG(INFO) << "node " << node_id << " reconnected; its previous stream is ended";
    replaced->Kick(grpc::Status(grpc::StatusCode::ABORTED,
                                "a newer stream of the same node id replaced this one"));
  }
  return grpc::Status::OK;
}

void NodeService::Unregister(const std::string& node_id, const NodeStream* stream) {
  MutexLock lock(&mu_);
  auto it = streams_.find(node_id);
  if (it == streams_.end()) return;
  std::shared_ptr<NodeStream> current = it->second.lock();
  if (current != nullptr && current.get() != stream) return;  // replaced: the newer one counts
  streams_.erase(it);
  fleet()->NodeDisconnected(node_id);
}

void NodeService::Shutdown(const absl::Status& why) {
  std::vector<std::shared_ptr<NodeStream>> streams;
  {
    MutexLock lock(&mu_);
    shutdown_ = why;
    // Every open stream, also those still waiting for their hello: Server::Shutdown would
    // otherwise wait its whole grace period for them.
    for (const auto& [raw, weak] : open_streams_) {
      if (std::shared_ptr<NodeStream> stream = weak.lock()) streams.push_back(std::move(stream));
    }
  }
  for (const auto& stream : streams) stream->Kick(ToGrpcStatus(why));
}

size_t NodeService::Reauthorize() {
  std::vector<std::shared_ptr<NodeStream>> streams;
  {
    MutexLock lock(&mu_);
    for (const auto& [raw, weak] : open_streams_) {
      if (std::shared_ptr<NodeStream> stream = weak.lock()) streams.push_back(std::move(stream));
    }
  }
  size_t ended = 0;
  for (const auto& stream : streams) ended += stream->Reauthorize(*authorizer_) ? 1 : 0;
  return ended;
}

grpc::ServerUnaryReactor* NodeService::Report(grpc::CallbackServerContext* context,
                                              const v1::ReportRequest* request,
                                              v1::ReportResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status admitted = served_->Admit(context); !admitted.ok()) {
    reactor->Finish(ToGrpcStatus(admitted));
    return reactor;
  }
  absl::StatusOr<Principal> caller = authorizer_->Authorize(*context, Permission::kNodeStream);
  absl::Status allowed =
      caller.ok() ? Authorizer::CheckNodeId(*caller, request->node_id()) : caller.status();
  if (!allowed.ok()) {
    LOG(WARNING) << "report from " << context->peer() << " refused: " << allowed;
    fleet()->metrics().Refused(RefusedInput::kReport, allowed.code());
    reactor->Finish(ToGrpcStatus(allowed));
    return reactor;
  }
  if (absl::Status bounded = codec::CheckReportRequest(*request); !bounded.ok()) {
    fleet()->metrics().Refused(RefusedInput::kReport, bounded.code());
    reactor->Finish(ToGrpcStatus(bounded));
    return reactor;
  }
  fleet()->SubmitObservations(request->node_id(), codec::ReceivedBatch::Of(request->observations()),
                              [this, reactor, response](absl::StatusOr<v1::ObservationAck> ack) {
                                if (!ack.ok()) {
                                  fleet()->metrics().Refused(RefusedInput::kReport,
                                                             ack.status().code());
                                  reactor->Finish(ToGrpcStatus(ack.status()));
                                  return;
                                }
                                *response->mutable_ack() = *std::move(ack);
                                response->set_policy_version(fleet()->policy()->policy.version);
                                reactor->Finish(grpc::Status::OK);
                              });
  return reactor;
}

}  // namespace breaker::service
