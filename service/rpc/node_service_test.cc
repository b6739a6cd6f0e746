// Tests of the node service (Breaker: Connect, Report): a real Server (SQLite state in a temporary
// directory, port 0) driven over gRPC by node clients and an operator, with time moved by a fake
// clock (the fixture is in server_test_support.h).

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "common/fake_clock.h"
#include "core/chain_time.h"
#include "core/types.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "service/rpc/server.h"
#include "service/rpc/server_test_support.h"
#include "service/storage/sqlite_state_store.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using test_support::BannedIndices;
using test_support::Bans;
using test_support::Bid;
using test_support::Chain;
using test_support::Delivered;
using test_support::kSlot;
using test_support::kStartEpoch;
using test_support::kStartSlot;
using test_support::Missing;
using test_support::NodeClient;
using test_support::ServerTest;

// ---------------------------------------------------------------------------------------------
// The Connect handshake

TEST_F(ServerTest, HelloGetsTheCurrentPolicyAtOnce) {
  StartServer();
  const v1::Policy current = GetPolicy();
  ASSERT_GT(current.version(), 0u);
  NodeClient node(channel_);
  ASSERT_TRUE(node.Hello("bn-1"));
  std::optional<v1::ServerMessage> message = node.Read();
  ASSERT_TRUE(message.has_value());
  ASSERT_TRUE(message->has_policy());
  EXPECT_TRUE(MessageDifferencer::Equals(message->policy(), current))
      << message->policy().ShortDebugString();
  EXPECT_EQ(message->policy().mode(), v1::MODE_ALL_BUILDERS);
  // The configuration came first, for the node's local fallback.
  ASSERT_TRUE(node.config().has_value());
  EXPECT_EQ(node.config()->critical_failures(), 2u);
  EXPECT_EQ(node.config()->chain().gloas_fork_epoch(), 0u);
  EXPECT_TRUE(node.Close().ok());
}

// The first message after the hello says what breakerd knows of the node: the highest
// sequence number it handled, for a node whose numbering started over.
TEST_F(ServerTest, HelloGetsTheNodesLastSequenceFirst) {
  StartServer();
  {
    NodeClient node(channel_);
    ASSERT_TRUE(node.Hello("bn-1"));
    std::optional<v1::ServerMessage> first = node.ReadAny();
    ASSERT_TRUE(first.has_value());
    ASSERT_TRUE(first->has_node_state()) << first->ShortDebugString();
    EXPECT_EQ(first->node_state().last_sequence(), 0u);
    std::optional<v1::ServerMessage> second = node.ReadAny();
    ASSERT_TRUE(second.has_value());
    EXPECT_TRUE(second->has_config()) << second->ShortDebugString();
    ASSERT_TRUE(node.AwaitPolicy().has_value());
    // An observation refused for the state (its slot) counts as handled too; one refused for
    // its content (an attested fraction of 1.5) is not stored and takes no number.
    ASSERT_TRUE(node.ObserveAndAwaitAck({Bid(7, 7, ""), Missing(41, 5, 'a', 0.9, kSlot + 1000),
                                         Missing(42, 5, 'a', 1.5)})
                    .has_value());
    EXPECT_TRUE(node.Close().ok());
  }
  NodeClient again(channel_);
  ASSERT_TRUE(again.Hello("bn-1", GetPolicy().version(), "mainnet", GetPolicy().fleet_id()));
  std::optional<v1::ServerMessage> first = again.ReadAny();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(first->has_node_state()) << first->ShortDebugString();
  EXPECT_EQ(first->node_state().last_sequence(), 41u);
  // Kept across a restart, like every node's numbers.
  EXPECT_TRUE(again.Close().ok());
  Restart();
  NodeClient restarted(channel_);
  ASSERT_TRUE(restarted.Hello("bn-1"));
  ASSERT_TRUE(restarted.AwaitPolicy().has_value());
  ASSERT_TRUE(restarted.node_state().has_value());
  EXPECT_EQ(restarted.node_state()->last_sequence(), 41u);
}

TEST_F(ServerTest, HelloOverAnInProcessChannelGetsThePolicy) {
  StartServer();
  NodeClient node(server_->InProcessChannel());
  ASSERT_TRUE(node.Hello("bn-in-process"));
  std::optional<v1::Policy> policy = node.AwaitPolicy();
  ASSERT_TRUE(policy.has_value());
  EXPECT_EQ(policy->version(), GetPolicy().version());
  std::optional<v1::ObservationAck> ack = node.ObserveAndAwaitAck({Missing(1, 5, 'a')});
  ASSERT_TRUE(ack.has_value());
  EXPECT_THAT(ack->refused(), IsEmpty());
  std::optional<v1::Policy> banned = node.AwaitPolicy();
  ASSERT_TRUE(banned.has_value());
  EXPECT_TRUE(Bans(*banned, 5));
  // The acknowledgement names the version that reflects the failure.
  EXPECT_EQ(ack->policy_version(), banned->version());
  EXPECT_TRUE(node.Close().ok());
}

TEST_F(ServerTest, StreamNotStartingWithHelloIsRefused) {
  StartServer();
  NodeClient node(channel_);
  node.Observe({Bid(1, 7, "")});
  grpc::Status status = node.AwaitEnd();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("hello"));
}

TEST_F(ServerTest, AStreamThatSaysNoHelloEndsAtTheHelloDeadline) {
  ServerOptions options = Options();
  options.hello_timeout = absl::Seconds(10);
  WriteConfig("");
  StartServerWith(options);
  NodeClient silent(channel_);
  std::unique_ptr<NodeClient> talking = ConnectedNode("bn-1");
  // Past the deadline by the fleet's clock: the silent stream ends, the one that said hello
  // goes on.
  clock_.Advance(absl::Seconds(11));
  const grpc::Status status = silent.AwaitEnd();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(status.error_message(), HasSubstr("no hello within 10s"));
  EXPECT_TRUE(talking->ObserveAndAwaitAck({Bid(1, 7, "")}).has_value());
}

// Nodes that stop reading their stream, while breakerd has a policy larger than a stream's
// flow-control window to write to them.
class StalledStreamTest : public ServerTest {
 protected:
  // A server with a 30 s write timeout, metrics, and the large policy.
  void StartWithLargePolicy() {
    ServerOptions options = Options();
    options.write_timeout = absl::Seconds(30);
    options.metrics_listen = "127.0.0.1:0";
    WriteConfig("");
    StartServerWith(options);
    ASSERT_NO_FATAL_FAILURE(GrowPolicyPastAStreamWindow());
  }

  // A node that says hello, then never reads, over a connection of its own whose window it
  // does not grow; returned once breakerd's write of the policy to it has started (and waits
  // for the node).
  std::unique_ptr<NodeClient> StalledNode(const std::string& node_id) {
    grpc::ChannelArguments arguments;
    arguments.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto node = std::make_unique<NodeClient>(
        grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(server_->port()),
                                  grpc::InsecureChannelCredentials(), arguments));
    // A batch is read only once the hello is handled, which started the policy's write.
    std::optional<v1::Node> known = FindNode(node_id);
    const uint64_t sequence = (known.has_value() ? known->last_sequence() : 0) + 1;
    EXPECT_TRUE(node->Hello(node_id));
    EXPECT_TRUE(node->Observe({Bid(sequence, 7, "")}));
    EXPECT_TRUE(::breaker::testing::WaitFor(
        [&] {
          std::optional<v1::Node> info = FindNode(node_id);
          return info.has_value() && info->last_sequence() == sequence;
        },
        absl::Seconds(10)))
        << node_id << "'s batch was not handled";
    return node;
  }

  // Node streams ended at their write deadline, by the server's metrics.
  double WriteTimeouts() {
    return test_support::MetricSample(server_->metrics_port(),
                                      "breakerd_write_timeouts_total{rpc=\"connect\"}");
  }
};

TEST_F(StalledStreamTest, AStreamThatStopsReadingEndsAtTheWriteDeadlineAndIsCounted) {
  ASSERT_NO_FATAL_FAILURE(StartWithLargePolicy());
  std::unique_ptr<NodeClient> live = ConnectedNode("bn-live");
  std::unique_ptr<NodeClient> stalled = StalledNode("bn-stalled");
  EXPECT_EQ(WriteTimeouts(), 0);

  // Past the deadline, by the fleet's clock: the stalled stream ends at once, counted; the live
  // one, whose writes complete, goes on.
  clock_.Advance(absl::Seconds(31));
  // Not reading yet: reading would let the write complete.
  EXPECT_TRUE(::breaker::testing::WaitFor([&] { return !GetNode("bn-stalled").connected(); },
                                          absl::Seconds(10)));
  EXPECT_EQ(WriteTimeouts(), 1);
  const grpc::Status status = stalled->AwaitEnd();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("not read within 30s"));
  EXPECT_THAT(status.error_message(), HasSubstr("stopped reading"));
  ASSERT_THAT(UnbanBuilder(1), IsOk());
  EXPECT_TRUE(live->AwaitPolicy([](const v1::Policy& p) { return !Bans(p, 1); }).has_value());
  EXPECT_TRUE(live->ObserveAndAwaitAck({Bid(1, 7, "")}).has_value());
  EXPECT_TRUE(GetNode("bn-live").connected());
  EXPECT_EQ(WriteTimeouts(), 1);
}

// A stalled node reconnects: its old stream, ended (replaced) but holding a write the node
// never reads, still ends at the deadline; the new stream is the node's.
TEST_F(StalledStreamTest, AReplacedStreamHoldingAnUnreadWriteEndsAtTheWriteDeadline) {
  ASSERT_NO_FATAL_FAILURE(StartWithLargePolicy());
  std::unique_ptr<NodeClient> stalled = StalledNode("bn-1");
  std::unique_ptr<NodeClient> again = ConnectedNode("bn-1");

  clock_.Advance(absl::Seconds(31));
  EXPECT_TRUE(::breaker::testing::WaitFor([&] { return WriteTimeouts() == 1; }, absl::Seconds(10)));
  const grpc::Status status = stalled->AwaitEnd();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("not read within 30s"));
  EXPECT_TRUE(GetNode("bn-1").connected());
  EXPECT_TRUE(again->ObserveAndAwaitAck({Bid(2, 7, "")}).has_value());
}

TEST_F(ServerTest, HelloWithoutNodeIdIsRefused) {
  StartServer();
  NodeClient node(channel_);
  node.Hello("");
  grpc::Status status = node.AwaitEnd();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("node_id"));
}

TEST_F(ServerTest, HelloForAnotherNetworkIsRefused) {
  StartServer();
  NodeClient node(channel_);
  node.Hello("bn-1", 0, "hoodi");
  grpc::Status status = node.AwaitEnd();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("hoodi"));
  // An empty network is not checked.
  NodeClient unchecked(channel_);
  unchecked.Hello("bn-2", 0, "");
  EXPECT_TRUE(unchecked.AwaitPolicy().has_value());
}

TEST_F(ServerTest, SecondHelloIsRefused) {
  StartServer();
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  node->Hello("bn-1");
  grpc::Status status = node->AwaitEnd();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// ---------------------------------------------------------------------------------------------
// Fleet aggregation

TEST_F(ServerTest, FailureReportedByManyNodesIsCountedOnce) {
  StartServer();
  const uint64_t before = GetPolicy().version();
  std::vector<std::unique_ptr<NodeClient>> nodes;
  for (const char* id : {"bn-1", "bn-2", "bn-3"}) nodes.push_back(ConnectedNode(id));
  for (auto& node : nodes) {
    // Each node reports the failure, twice over (as a child block would).
    std::optional<v1::ObservationAck> ack =
        node->ObserveAndAwaitAck({Missing(1, 5, 'a'), Missing(2, 5, 'a')});
    ASSERT_TRUE(ack.has_value());
    EXPECT_THAT(ack->refused(), IsEmpty());
  }
  absl::StatusOr<v1::Builder> builder = GetBuilder(5);
  ASSERT_THAT(builder, IsOk());
  EXPECT_EQ(builder->failed(), 1u);
  EXPECT_EQ(builder->backoff_epoch(), kStartEpoch + 5);
  ASSERT_TRUE(builder->has_ban());
  EXPECT_EQ(builder->ban().kind(), v1::BAN_KIND_FAILURE);
  EXPECT_EQ(builder->ban().until_epoch(), kStartEpoch + 1);

  const v1::Policy policy = GetPolicy();
  EXPECT_EQ(policy.version(), before + 1);
  EXPECT_THAT(BannedIndices(policy), ElementsAre(5u));
  for (auto& node : nodes) {
    std::optional<v1::Policy> received =
        node->AwaitPolicy([](const v1::Policy& p) { return Bans(p, 5); });
    ASSERT_TRUE(received.has_value());
    EXPECT_EQ(received->version(), policy.version());
  }
}

TEST_F(ServerTest, DeliveredReportRevertsTheFailure) {
  StartServer();
  std::unique_ptr<NodeClient> reporter = ConnectedNode("bn-1");
  std::unique_ptr<NodeClient> witness = ConnectedNode("bn-2");
  ASSERT_TRUE(reporter->ObserveAndAwaitAck({Missing(1, 5, 'a')}).has_value());
  std::optional<v1::Policy> banned = reporter->AwaitPolicy();
  ASSERT_TRUE(banned.has_value());
  EXPECT_TRUE(Bans(*banned, 5));

  std::optional<v1::ObservationAck> ack = witness->ObserveAndAwaitAck({Delivered(1, 5, 'a')});
  ASSERT_TRUE(ack.has_value());
  EXPECT_THAT(ack->refused(), IsEmpty());
  std::optional<v1::Policy> reverted =
      reporter->AwaitPolicy([](const v1::Policy& p) { return !Bans(p, 5); });
  ASSERT_TRUE(reverted.has_value());
  EXPECT_EQ(reverted->version(), banned->version() + 1);
  EXPECT_THAT(reverted->banned_builders(), IsEmpty());
  absl::StatusOr<v1::Builder> builder = GetBuilder(5);
  ASSERT_THAT(builder, IsOk());
  EXPECT_EQ(builder->failed(), 0u);
  EXPECT_FALSE(builder->has_ban());

  // A late failure report of the same root stays reverted.
  ASSERT_TRUE(reporter->ObserveAndAwaitAck({Missing(2, 5, 'a')}).has_value());
  EXPECT_FALSE(Bans(GetPolicy(), 5));
}

TEST_F(ServerTest, MinReportingNodesWaitsForDistinctNodes) {
  StartServer("min_reporting_nodes: 2\n");
  std::unique_ptr<NodeClient> first = ConnectedNode("bn-1");
  std::unique_ptr<NodeClient> second = ConnectedNode("bn-2");
  const uint64_t before = GetPolicy().version();

  ASSERT_TRUE(first->ObserveAndAwaitAck({Missing(1, 5, 'a')}).has_value());
  // The same node again does not make two reporters.
  ASSERT_TRUE(first->ObserveAndAwaitAck({Missing(2, 5, 'a')}).has_value());
  EXPECT_EQ(GetPolicy().version(), before);
  EXPECT_FALSE(Bans(GetPolicy(), 5));
  EXPECT_FALSE(GetBuilder(5)->has_ban());

  ASSERT_TRUE(second->ObserveAndAwaitAck({Missing(1, 5, 'a')}).has_value());
  const v1::Policy policy = GetPolicy();
  EXPECT_EQ(policy.version(), before + 1);
  EXPECT_TRUE(Bans(policy, 5));
  EXPECT_TRUE(first->AwaitPolicy([](const v1::Policy& p) { return Bans(p, 5); }).has_value());
}

TEST_F(ServerTest, BanExpiresByTimeAlone) {
  StartServer();
  std::vector<std::unique_ptr<NodeClient>> nodes;
  for (const char* id : {"bn-1", "bn-2"}) nodes.push_back(ConnectedNode(id));
  ASSERT_TRUE(nodes[0]->ObserveAndAwaitAck({Missing(1, 5, 'a')}).has_value());
  const v1::Policy banned = GetPolicy();
  ASSERT_TRUE(Bans(banned, 5));
  for (auto& node : nodes) ASSERT_TRUE(node->AwaitPolicyVersion(banned.version()).has_value());

  // Within the epoch nothing changes.
  AdvanceTo(kStartSlot + 10);
  EXPECT_EQ(GetPolicy().version(), banned.version());

  // The ban lifts when epoch kStartEpoch + 1 begins; nobody sends anything.
  AdvanceTo(core::FirstSlotOf(kStartEpoch + 1, Chain()));
  const v1::Policy lifted = GetPolicy();
  EXPECT_EQ(lifted.version(), banned.version() + 1);
  EXPECT_FALSE(Bans(lifted, 5));
  EXPECT_EQ(lifted.computed_at_epoch(), kStartEpoch + 1);
  for (auto& node : nodes) {
    std::optional<v1::Policy> received = node->AwaitPolicyVersion(lifted.version());
    ASSERT_TRUE(received.has_value());
    EXPECT_TRUE(MessageDifferencer::Equals(*received, lifted)) << received->ShortDebugString();
  }
  // The record lives on until the back-off closes: the next failure escalates.
  EXPECT_EQ(GetBuilder(5)->failed(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Observation acknowledgements

TEST_F(ServerTest, ObservationAcksListRefusals) {
  StartServer();
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  v1::Observation short_root = Missing(3, 6, 'b');
  short_root.mutable_payload_missing()->set_block_root("12345");
  std::optional<v1::ObservationAck> ack = node->ObserveAndAwaitAck({
      Bid(1, 7, ""),
      Bid(2, 7, "", kStartSlot + 1000),  // far in the future
      short_root,
      Bid(4, 7, ""),
  });
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->sequence(), 4u);
  ASSERT_EQ(ack->refused_size(), 2);
  EXPECT_EQ(ack->refused(0).sequence(), 2u);
  EXPECT_EQ(ack->refused(0).code(), static_cast<int>(grpc::StatusCode::OUT_OF_RANGE));
  EXPECT_THAT(ack->refused(0).message(), HasSubstr("slot"));
  EXPECT_EQ(ack->refused(1).sequence(), 3u);
  EXPECT_EQ(ack->refused(1).code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_THAT(ack->refused(1).message(), HasSubstr("block_root"));
  // The refused failure did not count.
  EXPECT_FALSE(Bans(GetPolicy(), 6));
}

TEST_F(ServerTest, ReplayedSequenceIsAcknowledgedAndIgnored) {
  StartServer();
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  ASSERT_TRUE(node->ObserveAndAwaitAck({Bid(1, 7, ""), Bid(2, 7, "")}).has_value());
  const uint64_t version = GetPolicy().version();
  // A failure under an old sequence number is a replay: acknowledged, not applied.
  std::optional<v1::ObservationAck> ack = node->ObserveAndAwaitAck({Missing(2, 5, 'a')});
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->sequence(), 2u);
  EXPECT_THAT(ack->refused(), IsEmpty());
  EXPECT_EQ(GetPolicy().version(), version);
  EXPECT_FALSE(GetBuilder(5)->has_ban());
  EXPECT_EQ(GetNode("bn-1").last_sequence(), 2u);
}

// The node that used 2^62 is refused, not silently replayed, until the operator's reset,
// which ends its stream (and no other) and holds across a restart (journaled).
TEST_F(ServerTest, ResetNodeEndsTheStreamOfANodeAtItsLastNumberAndLetsItNumberAgain) {
  StartServer();
  constexpr uint64_t kLast = uint64_t{1} << 62;
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  std::unique_ptr<NodeClient> other = ConnectedNode("bn-2");
  ASSERT_TRUE(node->ObserveAndAwaitAck({Bid(kLast, 7, "")}).has_value());
  ASSERT_TRUE(other->ObserveAndAwaitAck({Bid(4, 7, "")}).has_value());
  // Unary, for an acknowledgement of these observations alone.
  std::unique_ptr<v1::Breaker::Stub> stub = v1::Breaker::NewStub(channel_);
  absl::StatusOr<v1::ReportResponse> report = Report(*stub, "bn-1", {Missing(3, 5, 'a')});
  ASSERT_THAT(report, IsOk());
  ASSERT_EQ(report->ack().refused_size(), 1);
  EXPECT_EQ(report->ack().refused(0).code(),
            static_cast<int32_t>(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(report->ack().replayed(), 0u);
  EXPECT_EQ(GetNode("bn-1").observations_refused(), 1u);
  report = Report(*stub, "bn-2", {Bid(4, 7, "")});
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(report->ack().replayed(), 1u);
  EXPECT_THAT(report->ack().refused(), IsEmpty());
  EXPECT_EQ(GetNode("bn-2").observations_replayed(), 1u);
  EXPECT_EQ(GetNode("bn-2").observations_refused(), 0u);

  v1::ResetNodeRequest reset;
  reset.set_node_id("bn-1");
  ASSERT_THAT(Call(&v1::Admin::Stub::async::ResetNode, reset), IsOk());
  const grpc::Status ended = node->AwaitEnd();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_THAT(ended.error_message(), HasSubstr("reset this node's sequence numbers"));
  // Another node's stream goes on.
  ASSERT_TRUE(other->ObserveAndAwaitAck({Bid(5, 7, "")}).has_value());

  Restart();
  node = ConnectedNode("bn-1");
  ASSERT_TRUE(node->node_state().has_value());
  EXPECT_EQ(node->node_state()->last_sequence(), 0u);
  std::optional<v1::ObservationAck> ack = node->ObserveAndAwaitAck({Missing(3, 5, 'a')});
  ASSERT_TRUE(ack.has_value());
  EXPECT_THAT(ack->refused(), IsEmpty());
  EXPECT_TRUE(GetBuilder(5)->has_ban());

  reset.set_node_id("bn-none");
  EXPECT_THAT(Call(&v1::Admin::Stub::async::ResetNode, reset),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(ServerTest, ReconnectWithTheCurrentVersionGetsNoPolicy) {
  StartServer();
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  const uint64_t version = node->latest_policy()->version();
  const std::string fleet_id = node->latest_policy()->fleet_id();
  EXPECT_TRUE(node->Close().ok());

  NodeClient again(channel_);
  ASSERT_TRUE(again.Hello("bn-1", version, "mainnet", fleet_id));
  ASSERT_TRUE(again.Observe({Bid(1, 7, "")}));
  std::optional<v1::ServerMessage> message = again.Read();
  ASSERT_TRUE(message.has_value());
  EXPECT_TRUE(message->has_observation_ack()) << message->ShortDebugString();
  EXPECT_EQ(message->observation_ack().sequence(), 1u);

  // It still gets the next version.
  ASSERT_THAT(BanBuilder(9, "test"), IsOk());
  std::optional<v1::Policy> next = again.AwaitPolicy();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->version(), version + 1);
}

// A node that held version v of a breakerd on another state directory (or of an older
// breakerd, which sent no fleet id) holds nothing of this one's, even when the numbers match.
TEST_F(ServerTest, TheCurrentVersionOfAnotherFleetIdGetsThePolicy) {
  StartServer();
  const v1::Policy current = GetPolicy();
  ASSERT_FALSE(current.fleet_id().empty());
  for (const std::string& fleet_id : {std::string("another-state-directory"), std::string()}) {
    NodeClient node(channel_);
    ASSERT_TRUE(node.Hello("bn-1", current.version(), "mainnet", fleet_id));
    std::optional<v1::ServerMessage> message = node.Read();
    ASSERT_TRUE(message.has_value()) << "fleet id '" << fleet_id << "'";
    ASSERT_TRUE(message->has_policy()) << message->ShortDebugString();
    EXPECT_EQ(message->policy().version(), current.version());
    EXPECT_EQ(message->policy().fleet_id(), current.fleet_id());
    EXPECT_TRUE(node.Close().ok());
  }
}

// breakerd's state went back (an old backup restored): a node holds a version above the
// current one under the same fleet id. breakerd takes a new fleet id and publishes the policy
// under it, to that node (which gets nothing of the old fleet id first) and to every other.
TEST_F(ServerTest, AHelloHoldingAVersionAboveTheCurrentOneTakesANewFleetId) {
  StartServer();
  ASSERT_THAT(BanBuilder(9, "test"), IsOk());
  const v1::Policy current = GetPolicy();
  std::unique_ptr<NodeClient> other = ConnectedNode("bn-other");
  ASSERT_EQ(other->latest_policy()->fleet_id(), current.fleet_id());

  NodeClient node(channel_);
  ASSERT_TRUE(node.Hello("bn-1", current.version() + 5, "mainnet", current.fleet_id()));
  std::optional<v1::Policy> renewed = node.AwaitPolicy();
  ASSERT_TRUE(renewed.has_value());
  EXPECT_NE(renewed->fleet_id(), current.fleet_id());
  EXPECT_FALSE(renewed->fleet_id().empty());
  EXPECT_EQ(renewed->version(), current.version());
  EXPECT_TRUE(Bans(*renewed, 9));
  EXPECT_EQ(GetPolicy().fleet_id(), renewed->fleet_id());
  // The node that held the current version gets it again, under the new fleet id.
  std::optional<v1::Policy> again = other->AwaitPolicy();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->fleet_id(), renewed->fleet_id());
  EXPECT_EQ(again->version(), current.version());

  // The new fleet id survives a restart, and versions go on under it.
  Restart();
  EXPECT_EQ(GetPolicy().fleet_id(), renewed->fleet_id());
  // A node holding the current version under the old fleet id holds nothing now.
  NodeClient late(channel_);
  ASSERT_TRUE(late.Hello("bn-2", current.version(), "mainnet", current.fleet_id()));
  std::optional<v1::Policy> taken = late.AwaitPolicy();
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->fleet_id(), renewed->fleet_id());
  EXPECT_EQ(taken->version(), current.version());
}

TEST_F(ServerTest, ReconnectWithAnOldVersionGetsTheCurrentPolicy) {
  StartServer();
  ASSERT_THAT(BanBuilder(9, "test"), IsOk());
  NodeClient node(channel_);
  ASSERT_TRUE(node.Hello("bn-1", GetPolicy().version() - 1));
  std::optional<v1::ServerMessage> message = node.Read();
  ASSERT_TRUE(message.has_value());
  ASSERT_TRUE(message->has_policy());
  EXPECT_EQ(message->policy().version(), GetPolicy().version());
}

TEST_F(ServerTest, HelloWithAnUnknownVersionIsTreatedAsHoldingNone) {
  StartServer();
  const uint64_t current = GetPolicy().version();
  NodeClient node(channel_);
  ASSERT_TRUE(node.Hello("bn-1", current + 1000));
  std::optional<v1::ServerMessage> message = node.Read();
  ASSERT_TRUE(message.has_value());
  ASSERT_TRUE(message->has_policy());
  EXPECT_EQ(message->policy().version(), current);
  EXPECT_EQ(GetNode("bn-1").lag(), current);
  // Until it acknowledges that policy it gets no other.
  ASSERT_THAT(BanBuilder(9, "test"), IsOk());
  ASSERT_TRUE(node.Observe({Bid(1, 7, "")}));
  message = node.Read();
  ASSERT_TRUE(message.has_value());
  EXPECT_TRUE(message->has_observation_ack()) << message->ShortDebugString();
}

TEST_F(ServerTest, ReconnectWithoutAPolicyShowsTheLag) {
  StartServer();
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  ASSERT_TRUE(node->ObserveAndAwaitAck({Bid(1, 7, "")}).has_value());
  EXPECT_EQ(GetNode("bn-1").lag(), 0u);
  EXPECT_TRUE(node->Close().ok());
  // The node restarted and lost its policy.
  NodeClient again(channel_);
  ASSERT_TRUE(again.Hello("bn-1", 0));
  ASSERT_TRUE(again.Observe({Bid(2, 7, "")}));
  std::optional<v1::ServerMessage> message = again.Read();  // the policy, not acknowledged yet
  ASSERT_TRUE(message.has_value());
  ASSERT_TRUE(message->has_policy());
  std::optional<v1::Node> info = FindNode("bn-1");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->policy_version_acked(), 0u);
  EXPECT_EQ(info->lag(), GetPolicy().version());
}

// ---------------------------------------------------------------------------------------------
// Streams

TEST_F(ServerTest, NodeThatStopsReadingDoesNotBlockOthers) {
  StartServer();
  NodeClient stalled(channel_);
  ASSERT_TRUE(stalled.Hello("bn-stalled"));
  std::unique_ptr<NodeClient> live = ConnectedNode("bn-live");
  const uint64_t first = GetPolicy().version();

  constexpr int kChanges = 50;
  uint64_t version = first;
  for (int i = 0; i < kChanges; ++i) {
    absl::StatusOr<v1::Policy> policy = i % 2 == 0 ? BanBuilder(77, "flapping") : UnbanBuilder(77);
    ASSERT_THAT(policy, IsOk());
    version = policy->version();
    std::optional<v1::Policy> received = live->AwaitPolicyVersion(version);
    ASSERT_TRUE(received.has_value()) << "change " << i;
    EXPECT_EQ(received->version(), version);
  }
  EXPECT_EQ(version, first + kChanges);
  EXPECT_EQ(GetPolicy().version(), version);
  std::optional<v1::Node> stalled_node = FindNode("bn-stalled");
  ASSERT_TRUE(stalled_node.has_value());
  EXPECT_TRUE(stalled_node->connected());
  EXPECT_EQ(stalled_node->lag(), version);

  // The stalled node gets the policy of its hello, then, once it acknowledges it, the newest
  // version: never the backlog in between.
  std::optional<v1::ServerMessage> message = stalled.Read();
  ASSERT_TRUE(message.has_value());
  ASSERT_TRUE(message->has_policy());
  EXPECT_EQ(message->policy().version(), first);
  ASSERT_TRUE(stalled.AckPolicy(first));
  message = stalled.Read();
  ASSERT_TRUE(message.has_value());
  ASSERT_TRUE(message->has_policy());
  EXPECT_EQ(message->policy().version(), version);
}

TEST_F(ServerTest, DuplicateNodeIdReplacesTheOlderStream) {
  StartServer();
  std::unique_ptr<NodeClient> older = ConnectedNode("bn-1");
  std::unique_ptr<NodeClient> newer = ConnectedNode("bn-1");
  grpc::Status status = older->AwaitEnd();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_THAT(status.error_message(), HasSubstr("replaced"));

  // The newer stream works, and the node stays listed as connected after the older one ends.
  std::optional<v1::ObservationAck> ack = newer->ObserveAndAwaitAck({Bid(1, 7, "")});
  ASSERT_TRUE(ack.has_value());
  std::optional<v1::Node> node = FindNode("bn-1");
  ASSERT_TRUE(node.has_value());
  EXPECT_TRUE(node->connected());
  ASSERT_THAT(BanBuilder(9, "test"), IsOk());
  EXPECT_TRUE(newer->AwaitPolicy([](const v1::Policy& p) { return Bans(p, 9); }).has_value());
  EXPECT_TRUE(GetNode("bn-1").connected());
}

// ---------------------------------------------------------------------------------------------
// Report

TEST_F(ServerTest, ReportAppliesObservations) {
  StartServer();
  // In-process: the same service without a socket.
  std::unique_ptr<v1::Breaker::Stub> stub = v1::Breaker::NewStub(server_->InProcessChannel());
  const uint64_t before = GetPolicy().version();
  // Refused for its slot: the state decides, so it is journaled and takes its number.
  v1::Observation bad = Missing(2, 6, 'b', 0.9, kSlot + 1000);
  absl::StatusOr<v1::ReportResponse> response =
      Report(*stub, "bn-report", {Missing(1, 5, 'a'), bad});
  ASSERT_THAT(response, IsOk());
  EXPECT_EQ(response->ack().sequence(), 2u);
  ASSERT_EQ(response->ack().refused_size(), 1);
  EXPECT_EQ(response->ack().refused(0).sequence(), 2u);
  EXPECT_EQ(response->ack().refused(0).code(), static_cast<int>(grpc::StatusCode::OUT_OF_RANGE));
  EXPECT_EQ(response->policy_version(), before + 1);
  EXPECT_EQ(GetPolicy().version(), before + 1);
  EXPECT_TRUE(Bans(GetPolicy(), 5));
  // A refused observation changes nothing but the node's sequence number: it was handled.
  EXPECT_EQ(GetNode("bn-report").last_sequence(), 2u);

  // Over the real port as well; a replay is acknowledged and changes nothing.
  std::unique_ptr<v1::Breaker::Stub> remote = v1::Breaker::NewStub(channel_);
  response = Report(*remote, "bn-report", {Missing(1, 8, 'c')});
  ASSERT_THAT(response, IsOk());
  EXPECT_EQ(response->ack().sequence(), 1u);
  EXPECT_THAT(response->ack().refused(), IsEmpty());
  EXPECT_EQ(response->policy_version(), before + 1);
  EXPECT_FALSE(Bans(GetPolicy(), 8));
}

TEST_F(ServerTest, ReportRefusesAnOversizedBatch) {
  StartServer();
  std::unique_ptr<v1::Breaker::Stub> stub = v1::Breaker::NewStub(channel_);
  std::vector<v1::Observation> batch;
  for (uint64_t sequence = 1; sequence <= 1001; ++sequence) batch.push_back(Bid(sequence, 7, ""));
  EXPECT_THAT(Report(*stub, "bn-1", batch),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1000")));
  batch.pop_back();
  EXPECT_THAT(Report(*stub, "bn-1", batch), IsOk());
}

TEST_F(ServerTest, ReportWithoutNodeIdIsRefused) {
  StartServer();
  std::unique_ptr<v1::Breaker::Stub> stub = v1::Breaker::NewStub(channel_);
  EXPECT_THAT(Report(*stub, "", {Missing(1, 5, 'a')}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("node_id")));
  EXPECT_FALSE(Bans(GetPolicy(), 5));
}

}  // namespace
}  // namespace breaker::service
