#ifndef SERVICE_RPC_SERVER_TEST_SUPPORT_H_
#define SERVICE_RPC_SERVER_TEST_SUPPORT_H_

// The fixture of the service-level tests: a real Server (SQLite state in a temporary directory,
// port 0) driven over gRPC by node clients and an operator, with time moved by a fake clock;
// and the node client and observation builders they share.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "common/fake_clock.h"
#include "core/chain_time.h"
#include "core/types.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "service/rpc/server.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::service::test_support {

namespace v1 = ::breaker::v1;

// Every call and stream of a test ends by this deadline at the latest, so nothing can hang.
inline std::chrono::system_clock::time_point Deadline() {
  return std::chrono::system_clock::now() + std::chrono::seconds(10);
}

// Mainnet with Gloas from genesis: the per-builder rules apply, the missed-slot rules do not.
inline core::ChainSpec Chain() {
  core::ChainSpec spec = core::ChainSpecForNetwork("mainnet").value();
  spec.gloas_fork_epoch = 0;
  return spec;
}

inline constexpr char kChainConfig[] = "chain { network: \"mainnet\" gloas_fork_epoch: 0 }\n";
inline constexpr core::Epoch kStartEpoch = 100;
// The clock starts a few slots into epoch kStartEpoch; observations are of the slot before.
inline constexpr core::Slot kStartSlot = kStartEpoch * 32 + 8;
inline constexpr core::Slot kSlot = kStartSlot - 1;

// A 32-byte block root made of `byte`.
inline std::string Root(char byte) { return std::string(32, byte); }

inline v1::Observation Missing(uint64_t sequence, uint64_t builder, char root,
                               double fraction = 0.9, core::Slot slot = kSlot) {
  v1::Observation observation;
  observation.set_sequence(sequence);
  observation.set_slot(slot);
  v1::PayloadMissing* missing = observation.mutable_payload_missing();
  missing->set_builder_index(builder);
  missing->set_block_root(Root(root));
  missing->set_attested_fraction(fraction);
  return observation;
}

inline v1::Observation Delivered(uint64_t sequence, uint64_t builder, char root,
                                 core::Slot slot = kSlot) {
  v1::Observation observation;
  observation.set_sequence(sequence);
  observation.set_slot(slot);
  v1::PayloadDelivered* delivered = observation.mutable_payload_delivered();
  delivered->set_builder_index(builder);
  delivered->set_block_root(Root(root));
  return observation;
}

inline v1::Observation Bid(uint64_t sequence, uint64_t builder, const std::string& relay,
                           core::Slot slot = kSlot) {
  v1::Observation observation;
  observation.set_sequence(sequence);
  observation.set_slot(slot);
  observation.mutable_bid_seen()->set_builder_index(builder);
  observation.mutable_bid_seen()->set_relay(relay);
  return observation;
}

inline bool Bans(const v1::Policy& policy, uint64_t builder) {
  for (const v1::BuilderBan& ban : policy.banned_builders()) {
    if (ban.builder_index() == builder) return true;
  }
  return false;
}

inline std::vector<uint64_t> BannedIndices(const v1::Policy& policy) {
  std::vector<uint64_t> indices;
  for (const v1::BuilderBan& ban : policy.banned_builders()) indices.push_back(ban.builder_index());
  return indices;
}

inline std::vector<uint64_t> Indices(const v1::ListBuildersResponse& response) {
  std::vector<uint64_t> indices;
  for (const v1::Builder& builder : response.builders()) indices.push_back(builder.builder_index());
  return indices;
}

// The value of `series` (name and labels exactly as exposed, e.g. `x{a="b"}`) on the metrics
// port `port`; -1 when the scrape fails or does not hold it.
inline double MetricSample(int port, const std::string& series) {
  httplib::Client client("127.0.0.1", port);
  httplib::Result result = client.Get("/metrics");
  if (!result || result->status != 200) return -1;
  const std::string prefix = "\n" + series + " ";
  const size_t at = ("\n" + result->body).find(prefix);
  if (at == std::string::npos) return -1;
  return std::strtod(result->body.c_str() + at + series.size() + 1, nullptr);
}

// A beacon node holding a Connect stream (the generated synchronous stub). Every read or write
// fails once the stream's deadline has passed, so a test waiting for a message that never
// comes fails instead of hanging.
class NodeClient {
 public:
  explicit NodeClient(const std::shared_ptr<grpc::Channel>& channel)
      : stub_(v1::Breaker::NewStub(channel)) {
    context_.set_deadline(Deadline());
    stream_ = stub_->Connect(&context_);
  }

  ~NodeClient() {
    if (!finished_) {
      context_.TryCancel();
      AwaitEnd();
    }
  }

  bool Hello(const std::string& node_id, uint64_t policy_version = 0,
             const std::string& network = "mainnet", const std::string& fleet_id = "") {
    v1::NodeMessage message;
    message.mutable_hello()->set_fleet_id(fleet_id);
    message.mutable_hello()->set_node_id(node_id);
    message.mutable_hello()->set_client_version("test/1.0");
    message.mutable_hello()->set_network(network);
    message.mutable_hello()->set_policy_version(policy_version);
    return stream_->Write(message);
  }

  bool Send(const v1::NodeMessage& message) { return stream_->Write(message); }

  bool Observe(const std::vector<v1::Observation>& observations) {
    v1::NodeMessage message;
    for (const v1::Observation& observation : observations) {
      *message.mutable_observations()->add_observations() = observation;
    }
    return stream_->Write(message);
  }

  bool AckPolicy(uint64_t version) {
    v1::NodeMessage message;
    message.mutable_policy_ack()->set_version(version);
    return stream_->Write(message);
  }

  // The next policy or acknowledgement from the server; nullopt when the stream has ended.
  // Configurations and the node's state are kept aside (see config() and node_state()).
  std::optional<v1::ServerMessage> Read() {
    while (std::optional<v1::ServerMessage> message = ReadAny()) {
      if (!message->has_config() && !message->has_node_state()) return message;
    }
    return std::nullopt;
  }

  // The next message of any kind; a configuration is also kept as config(), the node's state
  // as node_state(). Nullopt when the stream has ended.
  std::optional<v1::ServerMessage> ReadAny() {
    v1::ServerMessage message;
    if (!stream_->Read(&message)) return std::nullopt;
    if (message.has_config()) {
      config_ = message.config();
      ++configs_read_;
    }
    if (message.has_node_state()) node_state_ = message.node_state();
    return message;
  }

  // The node's state the server sent after the hello, once read past.
  const std::optional<v1::NodeState>& node_state() const { return node_state_; }

  // The latest configuration the server sent, once read past, and how many it sent so far.
  const std::optional<v1::Config>& config() const { return config_; }
  int configs_read() const { return configs_read_; }

  // Returns the latest configuration read if `accept` holds for it, else reads on until one
  // for which it holds arrives, acknowledging policies and keeping acknowledgements on the way
  // (for AwaitPolicy and AwaitAck). Returns nullopt when the stream ends first.
  std::optional<v1::Config> AwaitConfig(const std::function<bool(const v1::Config&)>& accept) {
    if (config_.has_value() && accept(*config_)) return config_;
    while (std::optional<v1::ServerMessage> message = ReadAny()) {
      if (message->has_config()) {
        if (accept(*config_)) return config_;
      } else if (message->has_policy()) {
        if (!OnPolicy(message->policy())) return std::nullopt;
      } else if (message->has_observation_ack()) {
        Merge(message->observation_ack());
      }
    }
    return std::nullopt;
  }

  // Returns the first policy received (and not yet looked at) for which `accept` holds,
  // reading on as needed. Every policy read is acknowledged at once (the server sends the
  // next one only then); observation acks read on the way are kept for AwaitAck. Returns
  // nullopt when the stream ends first.
  std::optional<v1::Policy> AwaitPolicy(const std::function<bool(const v1::Policy&)>& accept =
                                            [](const v1::Policy&) { return true; }) {
    while (true) {
      while (!unseen_policies_.empty()) {
        v1::Policy policy = std::move(unseen_policies_.front());
        unseen_policies_.pop_front();
        if (accept(policy)) return policy;
      }
      std::optional<v1::ServerMessage> message = Read();
      if (!message.has_value()) return std::nullopt;
      if (message->has_observation_ack()) {
        Merge(message->observation_ack());
      } else if (!OnPolicy(message->policy())) {
        return std::nullopt;
      }
    }
  }

  std::optional<v1::Policy> AwaitPolicyVersion(uint64_t version) {
    return AwaitPolicy([version](const v1::Policy& policy) { return policy.version() >= version; });
  }

  // Reads until the acknowledgements cover `sequence`, acknowledging policies read on the way.
  // Returns the acknowledgements read since the last call, merged; nullopt when the stream
  // ends first.
  std::optional<v1::ObservationAck> AwaitAck(uint64_t sequence) {
    while (acks_.sequence() < sequence) {
      std::optional<v1::ServerMessage> message = Read();
      if (!message.has_value()) return std::nullopt;
      if (message->has_policy()) {
        if (!OnPolicy(message->policy())) return std::nullopt;
      } else {
        Merge(message->observation_ack());
      }
    }
    v1::ObservationAck merged = std::move(acks_);
    acks_.Clear();
    acks_.set_sequence(merged.sequence());
    return merged;
  }

  // Sends observations and waits until they are acknowledged.
  std::optional<v1::ObservationAck> ObserveAndAwaitAck(
      const std::vector<v1::Observation>& observations) {
    if (!Observe(observations)) return std::nullopt;
    return AwaitAck(observations.back().sequence());
  }

  // The latest policy read by AwaitPolicy or AwaitAck.
  const std::optional<v1::Policy>& latest_policy() const { return latest_policy_; }

  // Closes the node's side and returns the stream's status.
  grpc::Status Close() {
    stream_->WritesDone();
    return AwaitEnd();
  }

  // Waits for the server to end the stream and returns its status.
  grpc::Status AwaitEnd() {
    v1::ServerMessage ignored;
    while (stream_->Read(&ignored)) {
    }
    finished_ = true;
    return stream_->Finish();
  }

 private:
  // Acknowledges a policy read and keeps it for AwaitPolicy.
  bool OnPolicy(const v1::Policy& policy) {
    latest_policy_ = policy;
    unseen_policies_.push_back(policy);
    return AckPolicy(policy.version());
  }

  void Merge(const v1::ObservationAck& ack) {
    acks_.set_sequence(std::max(acks_.sequence(), ack.sequence()));
    acks_.set_policy_version(std::max(acks_.policy_version(), ack.policy_version()));
    for (const v1::ObservationRefusal& refusal : ack.refused()) *acks_.add_refused() = refusal;
  }

  std::unique_ptr<v1::Breaker::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::NodeMessage, v1::ServerMessage>> stream_;
  std::optional<v1::Config> config_;
  int configs_read_ = 0;
  std::optional<v1::NodeState> node_state_;
  bool finished_ = false;
  v1::ObservationAck acks_;
  std::optional<v1::Policy> latest_policy_;
  // Policies read (and acknowledged) that AwaitPolicy has not looked at yet.
  std::deque<v1::Policy> unseen_policies_;
};

class ServerTest : public ::testing::Test {
 protected:
  ServerTest()
      : dir_(::breaker::testing::TestDir()),
        config_path_(dir_ + "/breakerd.textproto"),
        clock_(core::StartOf(kStartSlot, Chain())) {}

  void TearDown() override { StopServer(); }

  ServerOptions Options() {
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.state_dir = dir_ + "/state";
    options.config_path = config_path_;
    options.clock = &clock_;
    options.run_ticker = false;
    return options;
  }

  // Writes the configuration file: the chain, then `extra` (text-format Config fields).
  void WriteConfig(const std::string& extra) {
    std::ofstream file(config_path_, std::ios::trunc);
    file << kChainConfig << extra;
    ASSERT_TRUE(file.good()) << config_path_;
  }

  // Writes the configuration and starts a server with it; connects the admin stub.
  void StartServer(const std::string& extra_config = "") {
    WriteConfig(extra_config);
    StartServerWith(Options());
  }

  void StartServerWith(const ServerOptions& options) {
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
    ASSERT_THAT(server, ::breaker::testing::IsOk());
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                   grpc::InsecureChannelCredentials());
    admin_ = v1::Admin::NewStub(channel_);
  }

  void StopServer() {
    admin_.reset();
    channel_.reset();
    server_.reset();
  }

  // Stops the server and starts another on the same state directory and configuration file.
  void Restart() {
    StopServer();
    StartServerWith(Options());
  }

  std::unique_ptr<NodeClient> Node() { return std::make_unique<NodeClient>(channel_); }

  // A node that has said hello and read the current policy.
  std::unique_ptr<NodeClient> ConnectedNode(const std::string& node_id) {
    std::unique_ptr<NodeClient> node = Node();
    EXPECT_TRUE(node->Hello(node_id));
    EXPECT_TRUE(node->AwaitPolicy().has_value()) << node_id << " got no policy";
    return node;
  }

  // Moves the fake clock to the start of `slot` and lets the fleet catch up.
  void AdvanceTo(core::Slot slot) {
    // The writer reads the clock too: let it finish first (and ThreadSanitizer see it did).
    server_->fleet()->Sync();
    clock_.Set(core::StartOf(slot, Chain()));
    server_->fleet()->Tick();
    server_->fleet()->Sync();
  }

  // Calls a unary Admin rpc and waits for it (see breaker::testing::CallUnary).
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(
      void (v1::Admin::Stub::async::*method)(grpc::ClientContext*, const Request*, Response*,
                                             std::function<void(grpc::Status)>),
      const Request& request) {
    return ::breaker::testing::CallUnary(*admin_, method, request);
  }

  v1::Policy GetPolicy() {
    absl::StatusOr<v1::Policy> policy =
        Call(&v1::Admin::Stub::async::GetPolicy, v1::GetPolicyRequest());
    EXPECT_THAT(policy, ::breaker::testing::IsOk());
    return policy.value_or(v1::Policy());
  }

  absl::StatusOr<v1::Policy> BanBuilder(uint64_t builder, const std::string& reason,
                                        uint64_t until_epoch = 0) {
    v1::BanBuilderRequest request;
    request.set_builder_index(builder);
    request.set_reason(reason);
    request.set_until_epoch(until_epoch);
    return Call(&v1::Admin::Stub::async::BanBuilder, request);
  }

  absl::StatusOr<v1::Policy> UnbanBuilder(uint64_t builder) {
    v1::UnbanBuilderRequest request;
    request.set_builder_index(builder);
    return Call(&v1::Admin::Stub::async::UnbanBuilder, request);
  }

  absl::StatusOr<v1::Policy> BanRelay(const std::string& relay, const std::string& reason,
                                      uint64_t until_epoch = 0) {
    v1::BanRelayRequest request;
    request.set_relay(relay);
    request.set_reason(reason);
    request.set_until_epoch(until_epoch);
    return Call(&v1::Admin::Stub::async::BanRelay, request);
  }

  absl::StatusOr<v1::Policy> UnbanRelay(const std::string& relay) {
    v1::UnbanRelayRequest request;
    request.set_relay(relay);
    return Call(&v1::Admin::Stub::async::UnbanRelay, request);
  }

  // Makes the policy larger than a stream's flow-control window (64 KiB, for a client that
  // does not grow it): every operator ban there may be, with long names and reasons. Bans
  // builders 1..256.
  void GrowPolicyPastAStreamWindow() {
    for (int relay = 0; relay < 64; ++relay) {
      ASSERT_THAT(BanRelay("https://relay-" + std::to_string(relay) + "." + std::string(480, 'r'),
                           std::string(96, 'x')),
                  ::breaker::testing::IsOk());
    }
    for (uint64_t builder = 1; builder <= 256; ++builder) {
      ASSERT_THAT(BanBuilder(builder, std::string(96, 'x')), ::breaker::testing::IsOk());
    }
    ASSERT_GT(GetPolicy().ByteSizeLong(), 66000u);
  }

  absl::StatusOr<v1::Builder> GetBuilder(uint64_t builder) {
    v1::GetBuilderRequest request;
    request.set_builder_index(builder);
    return Call(&v1::Admin::Stub::async::GetBuilder, request);
  }

  // Every page, merged.
  v1::ListBuildersResponse ListBuilders(bool banned_only = false) {
    v1::ListBuildersRequest request;
    request.set_banned_only(banned_only);
    v1::ListBuildersResponse all;
    do {
      absl::StatusOr<v1::ListBuildersResponse> page =
          Call(&v1::Admin::Stub::async::ListBuilders, request);
      EXPECT_THAT(page, ::breaker::testing::IsOk());
      if (!page.ok()) break;
      all.mutable_builders()->MergeFrom(page->builders());
      request.set_page_token(page->next_page_token());
    } while (!request.page_token().empty());
    return all;
  }

  v1::ListRelaysResponse ListRelays() {
    absl::StatusOr<v1::ListRelaysResponse> response =
        Call(&v1::Admin::Stub::async::ListRelays, v1::ListRelaysRequest());
    EXPECT_THAT(response, ::breaker::testing::IsOk());
    return response.value_or(v1::ListRelaysResponse());
  }

  // Every page, merged.
  v1::ListNodesResponse ListNodes() {
    v1::ListNodesRequest request;
    v1::ListNodesResponse all;
    do {
      absl::StatusOr<v1::ListNodesResponse> page =
          Call(&v1::Admin::Stub::async::ListNodes, request);
      EXPECT_THAT(page, ::breaker::testing::IsOk());
      if (!page.ok()) break;
      all.mutable_nodes()->MergeFrom(page->nodes());
      all.set_policy_version(page->policy_version());
      request.set_page_token(page->next_page_token());
    } while (!request.page_token().empty());
    return all;
  }

  std::optional<v1::Node> FindNode(const std::string& node_id) {
    const v1::ListNodesResponse response = ListNodes();
    for (const v1::Node& node : response.nodes()) {
      if (node.node_id() == node_id) return node;
    }
    return std::nullopt;
  }

  // The node, or an empty one (and a test failure) when it is not listed.
  v1::Node GetNode(const std::string& node_id) {
    std::optional<v1::Node> node = FindNode(node_id);
    if (!node.has_value()) ADD_FAILURE() << node_id << " is not listed";
    return node.value_or(v1::Node());
  }

  v1::Config GetConfig() {
    absl::StatusOr<v1::Config> config =
        Call(&v1::Admin::Stub::async::GetConfig, v1::GetConfigRequest());
    EXPECT_THAT(config, ::breaker::testing::IsOk());
    return config.value_or(v1::Config());
  }

  absl::StatusOr<v1::Config> ReloadConfig() {
    return Call(&v1::Admin::Stub::async::ReloadConfig, v1::ReloadConfigRequest());
  }

  absl::StatusOr<v1::ReportResponse> Report(v1::Breaker::Stub& stub, const std::string& node_id,
                                            const std::vector<v1::Observation>& observations) {
    v1::ReportRequest request;
    request.set_node_id(node_id);
    for (const v1::Observation& observation : observations) {
      *request.mutable_observations()->add_observations() = observation;
    }
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    v1::ReportResponse response;
    std::promise<absl::Status> done;  // the callback API, as in Call()
    stub.async()->Report(&context, &request, &response, [&done](grpc::Status status) {
      done.set_value(::breaker::testing::FromGrpc(status));
    });
    if (absl::Status status = done.get_future().get(); !status.ok()) return status;
    return response;
  }

  const std::string dir_;
  const std::string config_path_;
  ::breaker::testing::FakeClock clock_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Admin::Stub> admin_;
};

}  // namespace breaker::service::test_support

#endif  // SERVICE_RPC_SERVER_TEST_SUPPORT_H_
