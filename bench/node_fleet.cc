#include "bench/node_fleet.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "bench/workload.h"
#include "client/address_rotation.h"
#include "client/backoff.h"
#include "common/replica_trailer.h"
#include "common/grpc_keepalive.h"
#include "common/mutex.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace breaker::bench {

namespace v1 = ::breaker::v1;
using Clock = std::chrono::steady_clock;

namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// How often the harness's thread looks at the counters the callbacks move. Only detection
// waits for it; every figure is timestamped in the callback.
constexpr absl::Duration kPollInterval = absl::Milliseconds(1);

bool PollUntil(const std::function<bool()>& done, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(kPollInterval);
  }
  return true;
}

constexpr char kConnectMethod[] = "/breaker.v1.Breaker/Connect";

// The client library's channel: its keepalive, and a subchannel pool of its own, so that the
// channel has its own connection (channels with the same arguments would share one).
std::shared_ptr<grpc::Channel> NewChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  SetClientKeepalive(args);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

// A channel shared by several nodes' streams (--streams_per_channel), which cannot open a new
// one per attempt: gRPC's own reconnection backoff is aligned with the nodes'.
std::shared_ptr<grpc::Channel> NewSharedChannel(const FleetOptions& options) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  SetClientKeepalive(args);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.initial_backoff)));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.max_backoff)));
  return grpc::CreateCustomChannel(options.addresses.front(), grpc::InsecureChannelCredentials(),
                                   args);
}

}  // namespace

// One simulated beacon node: what it holds across its streams.
struct Node {
  Node(int index, const FleetOptions& options, ConnectStub* shared_stub)
      : index(index),
        id(absl::StrFormat("node-%05d", index)),
        shared_stub(shared_stub),
        backoff(options.initial_backoff, options.backoff_multiplier, options.max_backoff,
                options.backoff_jitter, static_cast<uint64_t>(index) + 1),
        // A shared channel keeps its one address across attempts.
        rotation(shared_stub == nullptr ? options.addresses.size() : 1, &backoff) {}

  const int index;
  const std::string id;
  // The stub of the channel the node shares with others; null: a new channel per attempt.
  ConnectStub* const shared_stub;

  Mutex mu;
  std::shared_ptr<NodeStream> stream ABSL_GUARDED_BY(mu);
  // The library's own schedule and choice of address, as a node would reconnect.
  client::Backoff backoff ABSL_GUARDED_BY(mu);
  client::AddressRotation rotation ABSL_GUARDED_BY(mu);
  std::string fleet_id ABSL_GUARDED_BY(mu);
  uint64_t next_sequence ABSL_GUARDED_BY(mu) = 1;
  uint64_t acked_sequence ABSL_GUARDED_BY(mu) = 0;
  // The ingestion batch awaiting its acknowledgement, if any: its last sequence and send time.
  uint64_t batch_last_sequence ABSL_GUARDED_BY(mu) = 0;
  int64_t batch_sent_ns ABSL_GUARDED_BY(mu) = 0;

  // Written on the node's read path, read by the harness's thread.
  std::atomic<uint64_t> held_version{0};
  std::atomic<int64_t> trial_ns{0};
  std::atomic<int64_t> back_ns{0};
  // Streams opened since the storm was armed, and how many it took to come back.
  std::atomic<int> storm_attempts{0};
  std::atomic<int> back_attempts{0};
};

// One attempt at a node's stream. Owned by itself until OnDone, and by its node while current.
// A read is always pending until the stream ends, so OnDone cannot run while a write is being
// started from outside the callbacks: writes are started under mu_ only while !finished_.
class NodeStream : public grpc::ClientBidiReactor<v1::NodeMessage, grpc::ByteBuffer> {
 public:
  // `own_stub`: this attempt's own channel, as the library opens one per attempt; null: the
  // node's shared one.
  NodeStream(NodeFleet* fleet, Node* node, std::unique_ptr<ConnectStub> own_stub)
      : fleet_(fleet), node_(node), own_stub_(std::move(own_stub)) {}

  void Open(std::shared_ptr<NodeStream> self, v1::NodeMessage hello) {
    self_ = std::move(self);
    opened_ns_ = NowNs();
    ConnectStub* stub = own_stub_ != nullptr ? own_stub_.get() : node_->shared_stub;
    stub->PrepareBidiStreamingCall(&context_, kConnectMethod, grpc::StubOptions(), this);
    Send(std::move(hello));
    StartRead(&read_);
    StartCall();
  }

  void Send(v1::NodeMessage message) {
    MutexLock lock(&mu_);
    if (finished_) return;
    writes_.push_back(std::move(message));
    if (!write_in_flight_) WriteFrontLocked();
  }

  void Cancel() { context_.TryCancel(); }

  int64_t opened_ns() const { return opened_ns_; }

 private:
  void OnReadDone(bool ok) override {
    if (!ok) {
      MutexLock lock(&mu_);
      finished_ = true;
      return;
    }
    if (!up_) {
      up_ = true;
      fleet_->OnUp(*node_);
    }
    fleet_->OnMessage(*node_, *this, read_);
    StartRead(&read_);
  }

  void OnWriteDone(bool ok) override {
    MutexLock lock(&mu_);
    write_in_flight_ = false;
    writes_.pop_front();
    if (!ok) {
      finished_ = true;  // the call is over; the pending read ends it
      return;
    }
    if (!writes_.empty() && !finished_) WriteFrontLocked();
  }

  void OnDone(const grpc::Status& status) override {
    client::AddressRotation::Attempt attempt;
    attempt.answered = up_;
    attempt.unavailable = status.error_code() == grpc::StatusCode::UNAVAILABLE;
    attempt.standby =
        attempt.unavailable && context_.GetServerTrailingMetadata().count(kLeaderTrailer) > 0;
    // The fleet destroys the stream later, on a thread of its own: the stream holds the last
    // reference to its channel, and a channel must not be destroyed on one of its callback
    // threads (gRPC joins threads there).
    fleet_->OnStreamDone(*node_, std::move(self_), attempt);
  }

  void WriteFrontLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    write_in_flight_ = true;
    StartWrite(&writes_.front());
  }

  NodeFleet* const fleet_;
  Node* const node_;
  // Declared before the context, so that the call ends before its channel goes.
  const std::unique_ptr<ConnectStub> own_stub_;
  std::shared_ptr<NodeStream> self_;
  grpc::ClientContext context_;
  int64_t opened_ns_ = 0;
  // The read path's own (one read in flight).
  grpc::ByteBuffer read_;
  bool up_ = false;

  Mutex mu_;
  // The front is the write in flight, if any; a deque keeps it in place while others queue.
  std::deque<v1::NodeMessage> writes_ ABSL_GUARDED_BY(mu_);
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

NodeFleet::NodeFleet(FleetOptions options) : options_(std::move(options)) {
  const int per_channel = std::max(1, options_.streams_per_channel);
  if (per_channel > 1) {
    const int channels = (options_.nodes + per_channel - 1) / per_channel;
    for (int c = 0; c < channels; ++c) {
      stubs_.push_back(std::make_unique<ConnectStub>(NewSharedChannel(options_)));
    }
  }
  for (int i = 0; i < options_.nodes; ++i) {
    nodes_.push_back(std::make_unique<Node>(
        i, options_, per_channel > 1 ? stubs_[i / per_channel].get() : nullptr));
  }
  scheduler_ = std::thread([this] { SchedulerLoop(); });
}

NodeFleet::~NodeFleet() { Disconnect(); }

void NodeFleet::ConnectAll() {
  for (auto& node : nodes_) Open(*node);
}

void NodeFleet::Open(Node& node) {
  MutexLock lock(&node.mu);
  if (node.stream != nullptr) return;
  // What the library says: who it is, and the policy it holds.
  v1::NodeMessage hello;
  hello.mutable_hello()->set_node_id(node.id);
  hello.mutable_hello()->set_client_version("fleet_load");
  hello.mutable_hello()->set_network(options_.network);
  hello.mutable_hello()->set_policy_version(node.held_version.load());
  hello.mutable_hello()->set_fleet_id(node.fleet_id);
  std::unique_ptr<ConnectStub> own_stub;
  if (node.shared_stub == nullptr) {
    // The next replica on each attempt, as the library goes: a standby refuses the stream, and
    // the node tries the next address, at once unless every address failed since it waited.
    const std::string& address = options_.addresses[node.rotation.current()];
    own_stub = std::make_unique<ConnectStub>(NewChannel(address));
  }
  node.stream = std::make_shared<NodeStream>(this, &node, std::move(own_stub));
  if (storm_version_.load() != 0) ++node.storm_attempts;
  ++live_streams_;
  node.stream->Open(node.stream, std::move(hello));
}

void NodeFleet::ScheduleReconnect(Node& node, std::shared_ptr<NodeStream> done,
                                  const client::AddressRotation::Attempt& attempt) {
  absl::Duration wait;
  {
    MutexLock lock(&node.mu);
    wait = node.rotation.Ended(attempt);
  }
  MutexLock lock(&scheduler_mu_);
  retired_.push_back(std::move(done));
  if (reconnecting_) due_.emplace(Clock::now() + absl::ToChronoNanoseconds(wait), &node);
  scheduler_changed_.SignalAll();
}

void NodeFleet::SchedulerLoop() {
  MutexLock lock(&scheduler_mu_);
  while (reconnecting_) {
    if (!retired_.empty()) {
      std::vector<std::shared_ptr<NodeStream>> retired;
      retired.swap(retired_);
      scheduler_mu_.Unlock();
      retired.clear();
      scheduler_mu_.Lock();
      continue;
    }
    if (due_.empty()) {
      scheduler_changed_.Wait(&scheduler_mu_);
      continue;
    }
    const Clock::time_point next = due_.begin()->first;
    if (Clock::now() < next) {
      scheduler_changed_.WaitUntil(&scheduler_mu_, next);
      continue;
    }
    Node* node = due_.begin()->second;
    due_.erase(due_.begin());
    scheduler_mu_.Unlock();
    Open(*node);
    scheduler_mu_.Lock();
  }
}

absl::StatusOr<uint64_t> NodeFleet::WaitConverged(absl::Duration timeout) const {
  auto converged = [this] {
    if (up_nodes_.load() != size()) return false;
    const uint64_t version = nodes_.front()->held_version.load();
    return version != 0 && std::all_of(nodes_.begin(), nodes_.end(), [version](const auto& node) {
             return node->held_version.load() == version;
           });
  };
  if (!PollUntil(converged, timeout)) {
    return absl::DeadlineExceededError(absl::StrCat(
        size() - up_nodes_.load(), " of ", size(), " nodes are not connected, or the nodes hold ",
        "different policy versions, after ", absl::FormatDuration(timeout)));
  }
  return nodes_.front()->held_version.load();
}

absl::StatusOr<std::vector<Clock::time_point>> NodeFleet::WaitAllHold(
    uint64_t version, absl::Duration timeout) const {
  std::vector<Clock::time_point> seen(nodes_.size());
  int holding = 0;
  auto all_hold = [&] {
    const Clock::time_point now = Clock::now();
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (seen[i] == Clock::time_point() && nodes_[i]->held_version.load() >= version) {
        seen[i] = now;
        ++holding;
      }
    }
    return holding == size();
  };
  if (!PollUntil(all_hold, timeout)) {
    return absl::DeadlineExceededError(absl::StrCat(size() - holding, " of ", size(),
                                                    " nodes do not hold policy version ", version,
                                                    " after ", absl::FormatDuration(timeout)));
  }
  return seen;
}

std::vector<double> NodeFleet::FanOutTrial(int sender, uint64_t builder, absl::Duration timeout,
                                           int* missed) {
  for (auto& node : nodes_) node->trial_ns = 0;
  trial_reached_ = 0;
  trial_base_ = nodes_[sender]->held_version.load();
  trial_active_ = true;
  Node& node = *nodes_[sender];
  int64_t sent_ns = 0;
  {
    MutexLock lock(&node.mu);
    v1::NodeMessage failure = DecisiveFailure(builder, node.next_sequence++, CurrentMainnetSlot());
    sent_ns = NowNs();
    if (node.stream != nullptr) node.stream->Send(std::move(failure));
  }
  PollUntil([this] { return trial_reached_.load() == size(); }, timeout);
  trial_active_ = false;
  std::vector<double> latencies_ms;
  for (const auto& each : nodes_) {
    const int64_t at = each->trial_ns.load();
    if (at != 0) latencies_ms.push_back(static_cast<double>(at - sent_ns) / 1e6);
  }
  *missed = size() - static_cast<int>(latencies_ms.size());
  return latencies_ms;
}

void NodeFleet::StartIngestion(int senders, int batch) {
  ingest_batch_ = batch;
  ingesting_ = true;
  // Spread over the fleet, and so over its connections: the first nodes would all share one,
  // and a single connection's transport is a bottleneck of its own (for the baseline first).
  const int count = std::min(senders, size());
  for (int k = 0; k < count; ++k) {
    SendBatch(*nodes_[static_cast<int64_t>(k) * size() / count]);
  }
}

void NodeFleet::SendBatch(Node& node) {
  MutexLock lock(&node.mu);
  if (node.stream == nullptr || node.batch_last_sequence != 0) return;
  const int count = ingest_batch_.load();
  const uint64_t first = node.next_sequence;
  node.next_sequence += static_cast<uint64_t>(count);
  node.batch_last_sequence = node.next_sequence - 1;
  v1::NodeMessage batch = BidBatch(node.index, first, count, CurrentMainnetSlot());
  node.batch_sent_ns = NowNs();
  node.stream->Send(std::move(batch));
}

absl::StatusOr<std::vector<double>> NodeFleet::StopIngestion(absl::Duration timeout) {
  ingesting_ = false;
  auto drained = [this] {
    return std::all_of(nodes_.begin(), nodes_.end(), [](const auto& node) {
      MutexLock lock(&node->mu);
      return node->batch_last_sequence == 0;
    });
  };
  if (!PollUntil(drained, timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("batches still unacknowledged after ", absl::FormatDuration(timeout)));
  }
  MutexLock lock(&latencies_mu_);
  return std::exchange(batch_latencies_ms_, {});
}

void NodeFleet::ClearBatchLatencies() {
  MutexLock lock(&latencies_mu_);
  batch_latencies_ms_.clear();
}

void NodeFleet::ArmStorm(uint64_t version) {
  for (auto& node : nodes_) {
    node->back_ns = 0;
    node->storm_attempts = 0;
    node->back_attempts = 0;
  }
  back_nodes_ = 0;
  storm_armed_ns_ = NowNs();
  storm_version_ = version;
}

std::vector<double> NodeFleet::WaitAllBack(Clock::time_point since, absl::Duration timeout,
                                           int* missed, std::vector<int>* attempts) {
  PollUntil([this] { return back_nodes_.load() == size(); }, timeout);
  storm_version_ = 0;
  const int64_t since_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(since.time_since_epoch()).count();
  std::vector<double> seconds;
  attempts->clear();
  for (const auto& node : nodes_) {
    const int64_t at = node->back_ns.load();
    if (at == 0) continue;
    seconds.push_back(static_cast<double>(at - since_ns) / 1e9);
    const size_t took = static_cast<size_t>(std::max(1, node->back_attempts.load()));
    if (attempts->size() < took) attempts->resize(took, 0);
    ++(*attempts)[took - 1];
  }
  *missed = size() - static_cast<int>(seconds.size());
  return seconds;
}

ServerMessages NodeFleet::Captured() const {
  MutexLock lock(&capture_mu_);
  ServerMessages messages;
  messages.config = captured_config_;
  for (const auto& [version, bytes] : captured_policies_) messages.policies.push_back(bytes);
  return messages;
}

void NodeFleet::Disconnect() {
  {
    MutexLock lock(&scheduler_mu_);
    reconnecting_ = false;
    due_.clear();
    scheduler_changed_.SignalAll();
  }
  if (scheduler_.joinable()) scheduler_.join();
  ingesting_ = false;
  for (auto& node : nodes_) {
    MutexLock lock(&node->mu);
    if (node->stream != nullptr) node->stream->Cancel();
  }
  // Every stream's OnDone uses this object.
  while (live_streams_.load() != 0) absl::SleepFor(kPollInterval);
  std::vector<std::shared_ptr<NodeStream>> retired;
  MutexLock lock(&scheduler_mu_);
  retired.swap(retired_);
}

// --- The streams' callbacks -----------------------------------------------------------------

void NodeFleet::OnUp(Node& /*node*/) { ++up_nodes_; }

void NodeFleet::OnMessage(Node& node, const NodeStream& stream, grpc::ByteBuffer& message) {
  const int64_t now_ns = NowNs();
  ServerMessageView view;
  if (!ParseServerMessageView(message, &view)) return;
  switch (view.kind) {
    case ServerMessageView::Kind::kPolicy:
      OnPolicy(node, view, message, now_ns);
      break;
    case ServerMessageView::Kind::kObservationAck:
      refused_observations_ += static_cast<uint64_t>(view.refused);
      OnObservationAck(node, view.ack_sequence, now_ns);
      break;
    case ServerMessageView::Kind::kConfig:
      if (node.index == 0) {
        MutexLock lock(&capture_mu_);
        captured_config_ = BytesOf(message);
      }
      break;
    case ServerMessageView::Kind::kUnknown:
      break;
  }
  const uint64_t storm_version = storm_version_.load();
  if (storm_version != 0 && node.back_ns.load() == 0 &&
      stream.opened_ns() > storm_armed_ns_.load() && node.held_version.load() == storm_version) {
    node.back_ns = now_ns;
    node.back_attempts = node.storm_attempts.load();
    ++back_nodes_;
  }
}

void NodeFleet::OnPolicy(Node& node, const ServerMessageView& policy, grpc::ByteBuffer& message,
                         int64_t now_ns) {
  const uint64_t version = policy.version;
  uint64_t held = 0;
  {
    MutexLock lock(&node.mu);
    held = node.held_version.load();
    const bool newer = version > held || policy.fleet_id != node.fleet_id;
    if (!newer) return;
    node.fleet_id = policy.fleet_id;
    node.held_version = version;
    v1::NodeMessage ack;
    ack.mutable_policy_ack()->set_version(version);
    if (node.stream != nullptr) node.stream->Send(std::move(ack));
  }
  if (node.index == 0) {
    MutexLock lock(&capture_mu_);
    captured_policies_[version] = BytesOf(message);
  }
  const uint64_t base = trial_base_.load();
  if (trial_active_.load() && held <= base && version > base) {
    node.trial_ns = now_ns;
    ++trial_reached_;
  }
}

void NodeFleet::OnObservationAck(Node& node, uint64_t sequence, int64_t now_ns) {
  bool batch_done = false;
  {
    MutexLock lock(&node.mu);
    if (sequence > node.acked_sequence) {
      acked_observations_ += sequence - node.acked_sequence;
      node.acked_sequence = sequence;
    }
    if (node.batch_last_sequence != 0 && sequence >= node.batch_last_sequence) {
      batch_done = true;
      node.batch_last_sequence = 0;
      MutexLock latencies_lock(&latencies_mu_);
      batch_latencies_ms_.push_back(static_cast<double>(now_ns - node.batch_sent_ns) / 1e6);
    }
  }
  if (batch_done && ingesting_.load()) SendBatch(node);
}

void NodeFleet::OnStreamDone(Node& node, std::shared_ptr<NodeStream> stream,
                             const client::AddressRotation::Attempt& attempt) {
  {
    MutexLock lock(&node.mu);
    if (node.stream == stream) node.stream.reset();
    // A batch sent on this stream is lost with it: the library would resend it; the harness
    // only stops waiting for it.
    node.batch_last_sequence = 0;
  }
  if (attempt.answered) --up_nodes_;
  ScheduleReconnect(node, std::move(stream), attempt);
  --live_streams_;  // last: Disconnect waits for it before it destroys the retired streams
}

}  // namespace breaker::bench
