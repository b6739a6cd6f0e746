#include "bench/baseline_service.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "bench/workload.h"
#include "common/mutex.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/proto_buffer_writer.h"

namespace breaker::bench {
namespace {

namespace v1 = ::breaker::v1;

std::shared_ptr<const Snapshot> SnapshotOf(const v1::ServerMessage& message) {
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->version = message.policy().version();
  snapshot->fleet_id = message.policy().fleet_id();
  const std::string bytes = message.SerializeAsString();
  snapshot->message = grpc::Slice(bytes);
  return snapshot;
}

std::shared_ptr<const Snapshot> SnapshotOf(const std::string& bytes) {
  v1::ServerMessage message;
  message.ParseFromString(bytes);
  return SnapshotOf(message);
}

grpc::ByteBuffer BufferOf(const grpc::Slice& slice) {
  grpc::Slice copy = slice;  // a reference, not the bytes
  return grpc::ByteBuffer(&copy, 1);
}

}  // namespace

// One node's stream: breakerd's NodeStream without the fleet behind it.
class BaselineStream : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
                       public std::enable_shared_from_this<BaselineStream> {
 public:
  explicit BaselineStream(BaselineService* service) : service_(service) {}

  void Start(std::shared_ptr<BaselineStream> self) {
    self_ = std::move(self);
    StartRead(&read_buffer_);
  }

  void Kick(const grpc::Status& status) {
    MutexLock lock(&mu_);
    FinishLocked(status);
  }

  void OnSnapshot(std::shared_ptr<const Snapshot> snapshot) {
    MutexLock lock(&mu_);
    if (latest_ != nullptr && latest_->version >= snapshot->version) return;
    latest_ = std::move(snapshot);
    MaybeWriteLocked();
  }

 private:
  void OnReadDone(bool ok) override {
    if (!ok) {
      MutexLock lock(&mu_);
      FinishLocked(grpc::Status::OK);
      return;
    }
    v1::NodeMessage message;
    if (!grpc::SerializationTraits<v1::NodeMessage>::Deserialize(&read_buffer_, &message).ok()) {
      return Kick(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "malformed NodeMessage"));
    }
    switch (message.kind_case()) {
      case v1::NodeMessage::kHello:
        OnHello(message.hello());
        break;
      case v1::NodeMessage::kObservations:
        OnObservations(message.observations());
        break;
      case v1::NodeMessage::kPolicyAck:
        OnPolicyAck(message.policy_ack().version());
        break;
      case v1::NodeMessage::KIND_NOT_SET:
        return Kick(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "empty NodeMessage"));
    }
    MutexLock lock(&mu_);
    if (!finished_ && !pending_finish_.has_value()) StartRead(&read_buffer_);
  }

  void OnHello(const v1::Hello& hello) {
    std::shared_ptr<const Snapshot> current = service_->current();
    {
      MutexLock lock(&mu_);
      hello_done_ = true;
      const bool holds_current =
          hello.fleet_id() == current->fleet_id && hello.policy_version() == current->version;
      sent_version_ = acked_version_ = holds_current ? current->version : 0;
      config_pending_ = true;
    }
    OnSnapshot(std::move(current));
  }

  void OnObservations(const v1::ObservationBatch& batch) {
    uint64_t highest = 0;
    for (const v1::Observation& observation : batch.observations()) {
      highest = std::max(highest, observation.sequence());
    }
    {
      MutexLock lock(&mu_);
      pending_ack_ = std::max(pending_ack_.value_or(0), highest);
      MaybeWriteLocked();
    }
    if (HoldsDecisiveFailure(batch)) service_->RequestFanOut();
  }

  void OnPolicyAck(uint64_t version) {
    MutexLock lock(&mu_);
    acked_version_ = std::max(acked_version_, version);
    MaybeWriteLocked();
  }

  void OnWriteDone(bool ok) override {
    MutexLock lock(&mu_);
    write_in_flight_ = false;
    if (!ok) return FinishLocked(grpc::Status::OK);
    if (pending_finish_.has_value()) return FinishLocked(*pending_finish_);
    MaybeWriteLocked();
  }

  void OnDone() override {
    service_->Closed(this);
    self_.reset();  // may destroy this
  }

  // breakerd's order: the configuration, the newest snapshot once the last one sent is
  // acknowledged, then the acknowledgement of observations.
  void MaybeWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || write_in_flight_ || pending_finish_.has_value() || !hello_done_) return;
    if (config_pending_) {
      config_pending_ = false;
      write_buffer_ = BufferOf(service_->config_message());
    } else if (latest_ != nullptr && latest_->version != sent_version_ &&
               acked_version_ >= sent_version_) {
      write_buffer_ = BufferOf(latest_->message);
      sent_version_ = latest_->version;
    } else if (pending_ack_.has_value()) {
      v1::ServerMessage message;
      message.mutable_observation_ack()->set_sequence(*pending_ack_);
      pending_ack_.reset();
      write_buffer_.Clear();
      bool own_buffer = false;
      grpc::SerializationTraits<v1::ServerMessage>::Serialize(message, &write_buffer_, &own_buffer);
    } else {
      return;
    }
    write_in_flight_ = true;
    StartWrite(&write_buffer_);
  }

  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    if (write_in_flight_) {
      if (!pending_finish_.has_value()) pending_finish_ = status;
      return;
    }
    finished_ = true;
    Finish(status);
  }

  BaselineService* const service_;
  std::shared_ptr<BaselineStream> self_;
  grpc::ByteBuffer read_buffer_;

  Mutex mu_;
  bool hello_done_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> pending_finish_ ABSL_GUARDED_BY(mu_);
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ByteBuffer write_buffer_ ABSL_GUARDED_BY(mu_);
  bool config_pending_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<const Snapshot> latest_ ABSL_GUARDED_BY(mu_);
  uint64_t sent_version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t acked_version_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<uint64_t> pending_ack_ ABSL_GUARDED_BY(mu_);
};

BaselineService::BaselineService(ServerMessages messages, uint64_t start_version)
    : config_message_(messages.config), policies_(std::move(messages.policies)) {
  MutexLock lock(&mu_);
  for (size_t i = 0; i < policies_.size(); ++i) {
    std::shared_ptr<const Snapshot> snapshot = SnapshotOf(policies_[i]);
    if (current_ == nullptr || snapshot->version == start_version) {
      current_ = std::move(snapshot);
      next_policy_ = i + 1;
    }
  }
  fan_out_thread_ = std::thread([this] { FanOutLoop(); });
}

BaselineService::~BaselineService() {
  {
    MutexLock lock(&fan_out_mu_);
    stopping_ = true;
  }
  fan_out_requested_.SignalAll();
  fan_out_thread_.join();
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* BaselineService::Connect(
    grpc::CallbackServerContext* /*context*/) {
  auto stream = std::make_shared<BaselineStream>(this);
  BaselineStream* raw = stream.get();
  const bool registered = Register(stream);
  raw->Start(std::move(stream));
  if (!registered) {
    raw->Kick(grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down; reconnect"));
  }
  return raw;
}

std::shared_ptr<const Snapshot> BaselineService::current() const {
  MutexLock lock(&mu_);
  return current_;
}

void BaselineService::RequestFanOut() {
  {
    MutexLock lock(&fan_out_mu_);
    ++pending_fan_outs_;
  }
  fan_out_requested_.SignalAll();
}

void BaselineService::FanOutLoop() {
  MutexLock lock(&fan_out_mu_);
  while (true) {
    while (pending_fan_outs_ == 0 && !stopping_) fan_out_requested_.Wait(&fan_out_mu_);
    if (stopping_) return;
    --pending_fan_outs_;
    fan_out_mu_.Unlock();
    FanOut();
    fan_out_mu_.Lock();
  }
}

void BaselineService::FanOut() {
  std::vector<std::shared_ptr<BaselineStream>> streams;
  std::shared_ptr<const Snapshot> snapshot;
  {
    MutexLock lock(&mu_);
    if (next_policy_ < policies_.size()) {
      current_ = SnapshotOf(policies_[next_policy_++]);
    } else {
      v1::ServerMessage message;
      message.ParseFromString(policies_.back());
      message.mutable_policy()->set_version(current_->version + 1);
      current_ = SnapshotOf(message);
    }
    snapshot = current_;
    streams.reserve(streams_.size());
    for (const auto& [raw, weak] : streams_) {
      if (std::shared_ptr<BaselineStream> stream = weak.lock()) streams.push_back(stream);
    }
  }
  for (const auto& stream : streams) stream->OnSnapshot(snapshot);
}

bool BaselineService::Register(const std::shared_ptr<BaselineStream>& stream) {
  MutexLock lock(&mu_);
  if (shutting_down_) return false;
  streams_.emplace(stream.get(), stream);
  return true;
}

void BaselineService::Closed(const BaselineStream* stream) {
  MutexLock lock(&mu_);
  streams_.erase(stream);
}

void BaselineService::Shutdown() {
  std::vector<std::shared_ptr<BaselineStream>> streams;
  {
    MutexLock lock(&mu_);
    shutting_down_ = true;
    for (const auto& [raw, weak] : streams_) {
      if (std::shared_ptr<BaselineStream> stream = weak.lock()) streams.push_back(stream);
    }
  }
  for (const auto& stream : streams) {
    stream->Kick(grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down; reconnect"));
  }
}

}  // namespace breaker::bench
