// Service-level tests of breakerd: a real Server (SQLite state in a temporary directory, port 0)
// driven over gRPC by node clients and an operator, with time moved by a fake clock (the
// fixture is in server_test_support.h).

#include "service/server.h"

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
#include "core/chain_time.h"
#include "core/types.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "service/server_test_support.h"
#include "service/storage/sqlite_state_store.h"
#include "tests/fake_clock.h"
#include "tests/status_matchers.h"
#include "tests/test_util.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::testing::CallUnary;
using ::breaker::testing::FakeClock;
using ::breaker::testing::FromGrpc;
using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::breaker::testing::TestDir;
using ::breaker::testing::WaitFor;
using ::google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using ::breaker::testing::CheckHealth;
using test_support::BannedIndices;
using test_support::Bans;
using test_support::Bid;
using test_support::Chain;
using test_support::Deadline;
using test_support::Delivered;
using test_support::Indices;
using test_support::kChainConfig;
using test_support::kSlot;
using test_support::kStartEpoch;
using test_support::kStartSlot;
using test_support::Missing;
using test_support::NodeClient;
using test_support::Root;
using test_support::ServerTest;

// ---------------------------------------------------------------------------------------------
// Start-up

TEST_F(ServerTest, ServesHealthOnAnEphemeralPort) {
  StartServer();
  ASSERT_GT(server_->port(), 0);
  EXPECT_EQ(CheckHealth(server_->port()), "SERVING");
}

TEST_F(ServerTest, RefusesAStateDirectoryThatIsAFile) {
  WriteConfig("");
  ServerOptions options = Options();
  options.state_dir = "/dev/null";
  EXPECT_THAT(Server::Start(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--state_dir")));
}

TEST_F(ServerTest, RefusesAnAddressInUse) {
  StartServer();
  ServerOptions options = Options();
  options.state_dir = dir_ + "/other-state";
  options.listen_address = "127.0.0.1:" + std::to_string(server_->port());
  EXPECT_THAT(Server::Start(options),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("--listen")));
}

TEST_F(ServerTest, RefusesASecondServerOnTheSameStateDirectory) {
  StartServer();
  EXPECT_THAT(Server::Start(Options()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("--state_dir")));
  // The refused server touched nothing: the first still serves, and once it stops the
  // directory is free again.
  EXPECT_GT(GetPolicy().version(), 0u);
  Restart();
  EXPECT_GT(GetPolicy().version(), 0u);
}

TEST_F(ServerTest, RefusesABadConfigurationFile) {
  WriteConfig("attestation_threshold: 1.5\n");
  EXPECT_THAT(Server::Start(Options()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("attestation_threshold")));
}

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
    // A refused observation counts as handled too.
    ASSERT_TRUE(node.ObserveAndAwaitAck({Bid(7, 7, ""), Missing(41, 5, 'a', 1.5)}).has_value());
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

TEST_F(ServerTest, ShutdownEndsNodeStreamsWithUnavailable) {
  StartServer();
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  // A stream that has not said hello yet, and a dashboard: they end too, at once rather than
  // when the shutdown's grace period runs out.
  NodeClient no_hello_yet(channel_);
  grpc::ClientContext watch_context;
  watch_context.set_deadline(Deadline());
  std::unique_ptr<grpc::ClientReader<v1::Policy>> watch =
      admin_->WatchPolicy(&watch_context, v1::WatchPolicyRequest());
  v1::Policy policy;
  ASSERT_TRUE(watch->Read(&policy));
  // The server has accepted the stream without hello once a call after it has an answer.
  GetPolicy();

  server_->Shutdown();
  grpc::Status status = node->AwaitEnd();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("shutting down"));
  status = no_hello_yet.AwaitEnd();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("shutting down"));
  while (watch->Read(&policy)) {
  }
  status = watch->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("shutting down"));
}

// ---------------------------------------------------------------------------------------------
// Restarts

TEST_F(ServerTest, RestartRestoresTheState) {
  StartServer();
  {
    std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
    ASSERT_TRUE(node->ObserveAndAwaitAck(
                        {Bid(1, 7, "Relay.Example:18550"), Missing(2, 5, 'a'), Missing(3, 7, 'b')})
                    .has_value());
    EXPECT_TRUE(node->Close().ok());
  }
  ASSERT_THAT(BanBuilder(9, "operator ban"), IsOk());
  v1::SetBuilderTrustRequest trust;
  trust.set_builder_index(11);
  trust.set_trusted(true);
  ASSERT_THAT(Call(&v1::Admin::Stub::async::SetBuilderTrust, trust), IsOk());
  const v1::Policy policy = GetPolicy();
  ASSERT_THAT(BannedIndices(policy), ElementsAre(5u, 7u, 9u));
  ASSERT_EQ(policy.banned_relays_size(), 1);
  const v1::ListBuildersResponse builders = ListBuilders();
  const v1::ListRelaysResponse relays = ListRelays();

  Restart();
  EXPECT_TRUE(MessageDifferencer::Equals(GetPolicy(), policy)) << GetPolicy().DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals(ListBuilders(), builders)) << ListBuilders().DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals(ListRelays(), relays)) << ListRelays().DebugString();
  std::optional<v1::Node> node_info = FindNode("bn-1");
  ASSERT_TRUE(node_info.has_value());
  EXPECT_EQ(node_info->last_sequence(), 3u);
  EXPECT_FALSE(node_info->connected());

  // Sequence numbers survive too: a resent observation is a replay.
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  ASSERT_TRUE(node->ObserveAndAwaitAck({Missing(3, 8, 'c')}).has_value());
  EXPECT_FALSE(Bans(GetPolicy(), 8));
  // The next change continues the version sequence.
  absl::StatusOr<v1::Policy> next = BanBuilder(12, "after restart");
  ASSERT_THAT(next, IsOk());
  EXPECT_EQ(next->version(), policy.version() + 1);
}

TEST_F(ServerTest, JournalReplayGivesTheSameVersion) {
  StartServer();
  {
    std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
    ASSERT_TRUE(node->ObserveAndAwaitAck({Bid(1, 7, "relay.example:18550"), Missing(2, 5, 'a')})
                    .has_value());
    ASSERT_TRUE(node->ObserveAndAwaitAck({Delivered(3, 5, 'a'), Missing(4, 7, 'b')}).has_value());
    EXPECT_TRUE(node->Close().ok());
  }
  ASSERT_THAT(BanBuilder(9, "operator ban"), IsOk());
  ASSERT_THAT(UnbanBuilder(9), IsOk());
  ASSERT_THAT(BanBuilder(10, "operator ban"), IsOk());
  v1::SetRelayTrustRequest relay_trust;
  relay_trust.set_relay("https://trusted.example/");
  relay_trust.set_trusted(true);
  ASSERT_THAT(Call(&v1::Admin::Stub::async::SetRelayTrust, relay_trust), IsOk());
  ASSERT_THAT(BanRelay("relay.example:18550", "from the journal"), IsOk());
  ASSERT_THAT(BanRelay("https://other.example", "lifted in the journal"), IsOk());
  ASSERT_THAT(UnbanRelay("https://other.example"), IsOk());
  AdvanceTo(kStartSlot + 3);
  server_->fleet()->Sync();
  const v1::Policy policy = GetPolicy();
  const v1::ListBuildersResponse builders = ListBuilders();

  // What a crash at this moment leaves: copy the database while the server runs. Its latest
  // snapshot is the one written at the first start, so the changes above come from the journal.
  const std::string copy = dir_ + "/crash-copy";
  std::filesystem::create_directories(copy);
  for (const char* file : {"breakerd.db", "breakerd.db-wal"}) {
    const std::filesystem::path from = std::filesystem::path(dir_) / "state" / file;
    if (std::filesystem::exists(from)) {
      std::filesystem::copy_file(from, std::filesystem::path(copy) / file);
    }
  }
  {
    absl::StatusOr<std::unique_ptr<SqliteStateStore>> store = SqliteStateStore::Open(copy);
    ASSERT_THAT(store, IsOk());
    absl::StatusOr<StoredState> stored = (*store)->Load();
    ASSERT_THAT(stored, IsOk());
    EXPECT_GE(stored->journal.size(), 7u) << "the changes should be in the journal";
  }
  StopServer();

  ServerOptions options = Options();
  options.state_dir = copy;
  StartServerWith(options);
  const v1::Policy restored = GetPolicy();
  EXPECT_EQ(restored.version(), policy.version());
  EXPECT_TRUE(MessageDifferencer::Equals(restored, policy)) << restored.DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals(ListBuilders(), builders)) << ListBuilders().DebugString();
  absl::StatusOr<v1::Policy> next = BanBuilder(12, "after restart");
  ASSERT_THAT(next, IsOk());
  EXPECT_EQ(next->version(), policy.version() + 1);
}

// ---------------------------------------------------------------------------------------------
// Report

TEST_F(ServerTest, ReportAppliesObservations) {
  StartServer();
  // In-process: the same service without a socket.
  std::unique_ptr<v1::Breaker::Stub> stub = v1::Breaker::NewStub(server_->InProcessChannel());
  const uint64_t before = GetPolicy().version();
  v1::Observation bad = Missing(2, 6, 'b');
  bad.mutable_payload_missing()->set_attested_fraction(1.5);
  absl::StatusOr<v1::ReportResponse> response =
      Report(*stub, "bn-report", {Missing(1, 5, 'a'), bad});
  ASSERT_THAT(response, IsOk());
  EXPECT_EQ(response->ack().sequence(), 2u);
  ASSERT_EQ(response->ack().refused_size(), 1);
  EXPECT_EQ(response->ack().refused(0).sequence(), 2u);
  EXPECT_EQ(response->ack().refused(0).code(),
            static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
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

// ---------------------------------------------------------------------------------------------
// Admin

TEST_F(ServerTest, GetPolicyDescribesTheCurrentPolicy) {
  StartServer(
      "trusted_builders: [2, 1]\nblacklisted_builders: 3\n"
      "relays { identifier: \"HTTPS://Trusted.Example/\" trusted: true }\n");
  const v1::Policy policy = GetPolicy();
  EXPECT_GT(policy.version(), 0u);
  EXPECT_EQ(policy.mode(), v1::MODE_ALL_BUILDERS);
  EXPECT_THAT(policy.trusted_builders(), ElementsAre(1u, 2u));
  EXPECT_THAT(policy.trusted_relays(), ElementsAre("https://trusted.example"));
  ASSERT_THAT(BannedIndices(policy), ElementsAre(3u));
  EXPECT_EQ(policy.banned_builders(0).ban().kind(), v1::BAN_KIND_OPERATOR);
  EXPECT_TRUE(policy.banned_builders(0).ban().until_reset());
  EXPECT_EQ(policy.computed_at_slot(), kStartSlot);
  EXPECT_EQ(policy.computed_at_epoch(), kStartEpoch);
  EXPECT_FALSE(policy.missed_slots().active());
}

TEST_F(ServerTest, ListBuildersPutsBannedFirst) {
  StartServer("trusted_builders: [1, 2]\n");
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  ASSERT_TRUE(node->ObserveAndAwaitAck({Missing(1, 5, 'a')}).has_value());
  ASSERT_THAT(BanBuilder(9, "manual"), IsOk());
  v1::ListBuildersResponse all = ListBuilders();
  EXPECT_THAT(Indices(all), ElementsAre(5u, 9u, 1u, 2u));
  ASSERT_EQ(all.builders_size(), 4);
  EXPECT_EQ(all.builders(0).ban().kind(), v1::BAN_KIND_FAILURE);
  EXPECT_EQ(all.builders(1).ban().kind(), v1::BAN_KIND_OPERATOR);
  EXPECT_THAT(all.builders(1).ban().reason(), HasSubstr("manual"));
  EXPECT_FALSE(all.builders(2).has_ban());
  EXPECT_TRUE(all.builders(2).trusted());
  EXPECT_THAT(Indices(ListBuilders(/*banned_only=*/true)), ElementsAre(5u, 9u));
}

TEST_F(ServerTest, GetBuilderDescribesOneBuilder) {
  StartServer();
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  ASSERT_TRUE(
      node->ObserveAndAwaitAck({Bid(1, 5, "relay.example:18550"), Missing(2, 5, 'a')}).has_value());
  absl::StatusOr<v1::Builder> builder = GetBuilder(5);
  ASSERT_THAT(builder, IsOk());
  EXPECT_EQ(builder->builder_index(), 5u);
  EXPECT_EQ(builder->failed(), 1u);
  EXPECT_EQ(builder->backoff_epoch(), kStartEpoch + 5);
  ASSERT_TRUE(builder->has_ban());
  EXPECT_FALSE(builder->ban().until_reset());
  EXPECT_EQ(builder->ban().until_epoch(), kStartEpoch + 1);
  EXPECT_FALSE(builder->trusted());
  EXPECT_THAT(builder->relays(), ElementsAre("http://relay.example:18550"));

  // Unknown builders are described as unknown, not refused.
  absl::StatusOr<v1::Builder> unknown = GetBuilder(1234);
  ASSERT_THAT(unknown, IsOk());
  EXPECT_EQ(unknown->failed(), 0u);
  EXPECT_FALSE(unknown->has_ban());

  EXPECT_THAT(GetBuilder(core::kSelfBuild),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("self-build")));
}

TEST_F(ServerTest, ListRelaysShowsLearnedRelaysNormalized) {
  StartServer("relays { identifier: \"https://0xabc@Configured.Example\" builder_indices: 40 }\n");
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  ASSERT_TRUE(node->ObserveAndAwaitAck({Bid(1, 7, "Relay.Example:18550")}).has_value());
  v1::ListRelaysResponse response = ListRelays();
  // Sorted by identifier: "http:" before "https:".
  ASSERT_EQ(response.relays_size(), 2);
  const v1::Relay& learned = response.relays(0);
  EXPECT_EQ(learned.relay(), "http://relay.example:18550");
  EXPECT_FALSE(learned.configured());
  EXPECT_FALSE(learned.trusted());
  EXPECT_FALSE(learned.has_ban());
  EXPECT_THAT(learned.builder_indices(), ElementsAre(7u));
  const v1::Relay& configured = response.relays(1);
  EXPECT_EQ(configured.relay(), "https://configured.example");
  EXPECT_TRUE(configured.configured());
  EXPECT_THAT(configured.builder_indices(), ElementsAre(40u));
  EXPECT_EQ(learned.last_seen_epoch(), kStartEpoch);
}

TEST_F(ServerTest, ListNodesShowsConnectionAndLag) {
  StartServer();
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  // The observation round trip orders the server's handling of the policy ack before the
  // listing.
  ASSERT_TRUE(node->ObserveAndAwaitAck({Bid(1, 7, "")}).has_value());
  const uint64_t version = GetPolicy().version();
  v1::ListNodesResponse response = ListNodes();
  EXPECT_EQ(response.policy_version(), version);
  ASSERT_EQ(response.nodes_size(), 1);
  v1::Node info = response.nodes(0);
  EXPECT_EQ(info.node_id(), "bn-1");
  EXPECT_TRUE(info.connected());
  EXPECT_THAT(info.peer(), HasSubstr("127.0.0.1"));
  EXPECT_EQ(info.client_version(), "test/1.0");
  EXPECT_EQ(info.connected_since().seconds(), absl::ToUnixSeconds(clock_.Now()));
  EXPECT_EQ(info.last_observation().seconds(), absl::ToUnixSeconds(clock_.Now()));
  EXPECT_EQ(info.last_sequence(), 1u);
  EXPECT_EQ(info.policy_version_acked(), version);
  EXPECT_EQ(info.lag(), 0u);

  // A new version the node has not acknowledged yet.
  ASSERT_THAT(BanBuilder(9, "test"), IsOk());
  ASSERT_THAT(BanBuilder(10, "test"), IsOk());
  info = GetNode("bn-1");
  EXPECT_EQ(info.lag(), 2u);
  ASSERT_TRUE(node->AwaitPolicyVersion(version + 2).has_value());
  ASSERT_TRUE(node->ObserveAndAwaitAck({Bid(2, 7, "")}).has_value());
  EXPECT_EQ(GetNode("bn-1").lag(), 0u);

  // Disconnected nodes stay listed. The server notes the disconnect just after the stream's
  // status reaches the client.
  EXPECT_TRUE(node->Close().ok());
  node.reset();
  EXPECT_TRUE(WaitFor([&] { return !GetNode("bn-1").connected(); }));
  std::unique_ptr<NodeClient> other = ConnectedNode("bn-2");
  response = ListNodes();
  ASSERT_EQ(response.nodes_size(), 2);
  EXPECT_EQ(response.nodes(0).node_id(), "bn-1");
  EXPECT_EQ(response.nodes(0).last_sequence(), 2u);
  EXPECT_EQ(response.nodes(1).node_id(), "bn-2");
  EXPECT_TRUE(response.nodes(1).connected());
}

TEST_F(ServerTest, BanBuilderBansAndRefusesBadRequests) {
  StartServer();
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  const v1::Policy before = GetPolicy();
  EXPECT_THAT(BanBuilder(9, ""), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reason")));
  EXPECT_THAT(BanBuilder(core::kSelfBuild, "self"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("self-build")));
  EXPECT_THAT(BanBuilder(9, "past", kStartEpoch),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("epoch")));
  EXPECT_TRUE(MessageDifferencer::Equals(GetPolicy(), before));
  EXPECT_THAT(ListBuilders().builders(), IsEmpty());

  absl::StatusOr<v1::Policy> banned = BanBuilder(9, "stolen keys", kStartEpoch + 2);
  ASSERT_THAT(banned, IsOk());
  EXPECT_EQ(banned->version(), before.version() + 1);
  ASSERT_THAT(BannedIndices(*banned), ElementsAre(9u));
  const v1::Ban& ban = banned->banned_builders(0).ban();
  EXPECT_EQ(ban.kind(), v1::BAN_KIND_OPERATOR);
  EXPECT_EQ(ban.until_epoch(), kStartEpoch + 2);
  EXPECT_THAT(ban.reason(), HasSubstr("stolen keys"));
  // Operator bans do not count toward the modes.
  EXPECT_EQ(banned->mode(), v1::MODE_ALL_BUILDERS);
  std::optional<v1::Policy> received = node->AwaitPolicyVersion(banned->version());
  ASSERT_TRUE(received.has_value());
  EXPECT_TRUE(MessageDifferencer::Equals(*received, *banned));

  // The same ban again changes no decision: same version.
  absl::StatusOr<v1::Policy> again = BanBuilder(9, "stolen keys", kStartEpoch + 2);
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->version(), banned->version());
}

TEST_F(ServerTest, UnbanBuilderLiftsBans) {
  StartServer("blacklisted_builders: 3\n");
  EXPECT_THAT(UnbanBuilder(9), StatusIs(absl::StatusCode::kNotFound, HasSubstr("not banned")));
  EXPECT_THAT(UnbanBuilder(3),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("configur")));
  ASSERT_THAT(BanBuilder(9, "manual"), IsOk());
  absl::StatusOr<v1::Policy> unbanned = UnbanBuilder(9);
  ASSERT_THAT(unbanned, IsOk());
  EXPECT_FALSE(Bans(*unbanned, 9));
  EXPECT_TRUE(Bans(*unbanned, 3));

  // A failure ban too.
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  ASSERT_TRUE(node->ObserveAndAwaitAck({Missing(1, 5, 'a')}).has_value());
  ASSERT_TRUE(Bans(GetPolicy(), 5));
  unbanned = UnbanBuilder(5);
  ASSERT_THAT(unbanned, IsOk());
  EXPECT_FALSE(Bans(*unbanned, 5));
  EXPECT_EQ(GetBuilder(5)->failed(), 0u);
}

TEST_F(ServerTest, SetBuilderTrustOverridesTheConfiguration) {
  StartServer("trusted_builders: 1\n");
  v1::SetBuilderTrustRequest request;
  request.set_builder_index(4);
  request.set_trusted(true);
  absl::StatusOr<v1::Policy> policy = Call(&v1::Admin::Stub::async::SetBuilderTrust, request);
  ASSERT_THAT(policy, IsOk());
  EXPECT_THAT(policy->trusted_builders(), ElementsAre(1u, 4u));
  request.set_builder_index(1);
  request.set_trusted(false);
  policy = Call(&v1::Admin::Stub::async::SetBuilderTrust, request);
  ASSERT_THAT(policy, IsOk());
  EXPECT_THAT(policy->trusted_builders(), ElementsAre(4u));
  EXPECT_FALSE(GetBuilder(1)->trusted());
  EXPECT_TRUE(GetBuilder(4)->trusted());
  // Builders trusted by configuration or override are known builders.
  EXPECT_THAT(Indices(ListBuilders()), ElementsAre(1u, 4u));

  request.set_builder_index(core::kSelfBuild);
  const uint64_t version = GetPolicy().version();
  EXPECT_THAT(Call(&v1::Admin::Stub::async::SetBuilderTrust, request),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("self-build")));
  EXPECT_EQ(GetPolicy().version(), version);
}

TEST_F(ServerTest, SetRelayTrustNormalizesTheIdentifier) {
  StartServer();
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  ASSERT_TRUE(node->ObserveAndAwaitAck({Bid(1, 7, "relay.example:18550")}).has_value());
  v1::SetRelayTrustRequest request;
  request.set_relay("HTTP://user:pass@Relay.Example:18550/?x=1");
  request.set_trusted(true);
  absl::StatusOr<v1::Policy> policy = Call(&v1::Admin::Stub::async::SetRelayTrust, request);
  ASSERT_THAT(policy, IsOk());
  EXPECT_THAT(policy->trusted_relays(), ElementsAre("http://relay.example:18550"));
  // Every builder served by a trusted relay is trusted.
  EXPECT_TRUE(GetBuilder(7)->trusted());
  ASSERT_EQ(ListRelays().relays_size(), 1);
  EXPECT_TRUE(ListRelays().relays(0).trusted());

  const uint64_t version = policy->version();
  request.set_relay("ftp://relay.example");
  EXPECT_THAT(Call(&v1::Admin::Stub::async::SetRelayTrust, request),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ftp://relay.example")));
  request.set_relay("");
  EXPECT_THAT(Call(&v1::Admin::Stub::async::SetRelayTrust, request),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(GetPolicy().version(), version);
}

TEST_F(ServerTest, BanRelayBansTheRelayAndItsMembers) {
  StartServer("relays { identifier: \"https://configured.example\" builder_indices: [4] }\n");
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  ASSERT_TRUE(node->ObserveAndAwaitAck({Bid(1, 7, "relay.example:18550")}).has_value());
  const v1::Policy before = GetPolicy();
  EXPECT_THAT(BanRelay("relay.example:18550", ""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reason")));
  EXPECT_THAT(BanRelay("relay.example:18550", std::string(1025, 'r')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most 1024 bytes")));
  EXPECT_THAT(BanRelay("ftp://relay.example", "x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ftp://relay.example")));
  EXPECT_THAT(BanRelay("relay.example:18550", "x", kStartEpoch),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("epoch")));
  EXPECT_TRUE(MessageDifferencer::Equals(GetPolicy(), before));

  absl::StatusOr<v1::Policy> banned = BanRelay("HTTP://Relay.Example:18550/", "stolen keys");
  ASSERT_THAT(banned, IsOk());
  EXPECT_EQ(banned->version(), before.version() + 1);
  ASSERT_EQ(banned->banned_relays_size(), 1);
  EXPECT_EQ(banned->banned_relays(0).relay(), "http://relay.example:18550");
  EXPECT_EQ(banned->banned_relays(0).ban().kind(), v1::BAN_KIND_OPERATOR);
  EXPECT_TRUE(banned->banned_relays(0).ban().until_reset());
  EXPECT_EQ(banned->banned_relays(0).ban().reason(), "operator: stolen keys");
  // Its member, with the operator's kind; not counted toward the modes.
  ASSERT_THAT(BannedIndices(*banned), ElementsAre(7u));
  EXPECT_EQ(banned->banned_builders(0).ban().kind(), v1::BAN_KIND_OPERATOR);
  EXPECT_EQ(banned->mode(), v1::MODE_ALL_BUILDERS);
  std::optional<v1::Policy> received = node->AwaitPolicyVersion(banned->version());
  ASSERT_TRUE(received.has_value());
  EXPECT_TRUE(MessageDifferencer::Equals(*received, *banned));

  // A relay no bid came through yet is listed with its ban; a configured one bans its indices.
  absl::StatusOr<v1::Policy> until =
      BanRelay("https://unseen.example", "investigating", kStartEpoch + 2);
  ASSERT_THAT(until, IsOk());
  ASSERT_THAT(BanRelay("https://configured.example", "x"), IsOk());
  EXPECT_THAT(BannedIndices(GetPolicy()), ElementsAre(4u, 7u));
  const v1::ListRelaysResponse relays = ListRelays();
  ASSERT_EQ(relays.relays_size(), 3);
  // Sorted: http://relay.example:18550, https://configured.example, https://unseen.example.
  EXPECT_THAT(relays.relays(0).builder_indices(), ElementsAre(7u));
  EXPECT_TRUE(relays.relays(0).has_ban());
  EXPECT_THAT(relays.relays(1).builder_indices(), ElementsAre(4u));
  EXPECT_EQ(relays.relays(2).relay(), "https://unseen.example");
  EXPECT_EQ(relays.relays(2).ban().kind(), v1::BAN_KIND_OPERATOR);
  EXPECT_EQ(relays.relays(2).ban().until_epoch(), kStartEpoch + 2);
  EXPECT_EQ(relays.relays(2).last_seen_epoch(), 0u);
  EXPECT_FALSE(relays.relays(2).configured());
}

TEST_F(ServerTest, UnbanRelayLiftsTheOperatorsBan) {
  StartServer("blacklisted_relays: \"relay.listed:18550\"\n");
  EXPECT_THAT(UnbanRelay("relay.example:18550"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("not banned by the operator")));
  EXPECT_THAT(UnbanRelay("HTTP://relay.listed:18550/"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("blacklisted_relays")));
  EXPECT_THAT(UnbanRelay("a b"), StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_EQ(GetPolicy().banned_relays_size(), 1);

  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  ASSERT_TRUE(node->ObserveAndAwaitAck({Bid(1, 7, "relay.example:18550")}).has_value());
  ASSERT_THAT(BanRelay("relay.example:18550", "x"), IsOk());
  EXPECT_THAT(UnbanBuilder(7), StatusIs(absl::StatusCode::kFailedPrecondition,
                                        HasSubstr("http://relay.example:18550")));
  absl::StatusOr<v1::Policy> unbanned = UnbanRelay("relay.example:18550");
  ASSERT_THAT(unbanned, IsOk());
  EXPECT_FALSE(Bans(*unbanned, 7));
  ASSERT_EQ(unbanned->banned_relays_size(), 1);
  EXPECT_EQ(unbanned->banned_relays(0).relay(), "http://relay.listed:18550");
}

TEST_F(ServerTest, RelayBansSurviveARestart) {
  StartServer();
  {
    std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
    ASSERT_TRUE(node->ObserveAndAwaitAck({Bid(1, 7, "relay.example:18550")}).has_value());
    EXPECT_TRUE(node->Close().ok());
  }
  ASSERT_THAT(BanRelay("relay.example:18550", "stolen keys"), IsOk());
  ASSERT_THAT(BanRelay("https://other.example", "for a while", kStartEpoch + 5), IsOk());
  ASSERT_THAT(BanRelay("https://third.example", "lifted before the restart"), IsOk());
  ASSERT_THAT(UnbanRelay("https://third.example"), IsOk());
  const v1::Policy policy = GetPolicy();
  ASSERT_EQ(policy.banned_relays_size(), 2);
  const v1::ListRelaysResponse relays = ListRelays();

  Restart();
  EXPECT_TRUE(MessageDifferencer::Equals(GetPolicy(), policy)) << GetPolicy().DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals(ListRelays(), relays)) << ListRelays().DebugString();
  absl::StatusOr<v1::Policy> unbanned = UnbanRelay("http://relay.example:18550");
  ASSERT_THAT(unbanned, IsOk());
  EXPECT_EQ(unbanned->version(), policy.version() + 1);
  EXPECT_FALSE(Bans(*unbanned, 7));
}

TEST_F(ServerTest, ResetClearsFailuresButNotOperatorBans) {
  StartServer();
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  ASSERT_TRUE(node->ObserveAndAwaitAck({Missing(1, 5, 'a')}).has_value());
  ASSERT_THAT(BanBuilder(9, "manual"), IsOk());
  v1::ResetRequest request;
  request.set_reason("incident over");
  absl::StatusOr<v1::Policy> policy = Call(&v1::Admin::Stub::async::Reset, request);
  ASSERT_THAT(policy, IsOk());
  EXPECT_THAT(BannedIndices(*policy), ElementsAre(9u));
  EXPECT_EQ(GetBuilder(5)->failed(), 0u);
  EXPECT_TRUE(node->AwaitPolicy([](const v1::Policy& p) { return !Bans(p, 5); }).has_value());
}

TEST_F(ServerTest, GetConfigFillsEveryField) {
  StartServer("critical_failures: 3\n");
  const v1::Config config = GetConfig();
  EXPECT_EQ(config.critical_failures(), 3u);
  EXPECT_EQ(config.allowed_failures(), 0u);
  EXPECT_EQ(config.min_reporting_nodes(), 1u);
  EXPECT_EQ(config.chain().network(), "mainnet");
  EXPECT_EQ(config.chain().gloas_fork_epoch(), 0u);
  EXPECT_EQ(config.chain().genesis_time_unix(), Chain().genesis_time_unix);
  // Every field with presence is present.
  for (const google::protobuf::Message* message :
       {static_cast<const google::protobuf::Message*>(&config),
        static_cast<const google::protobuf::Message*>(&config.chain()),
        static_cast<const google::protobuf::Message*>(&config.missed_slots())}) {
    const google::protobuf::Descriptor* descriptor = message->GetDescriptor();
    for (int i = 0; i < descriptor->field_count(); ++i) {
      const google::protobuf::FieldDescriptor* field = descriptor->field(i);
      if (field->is_repeated() || !field->has_presence()) continue;
      EXPECT_TRUE(message->GetReflection()->HasField(*message, field)) << field->full_name();
    }
  }
}

TEST_F(ServerTest, ReloadConfigAppliesAGoodFile) {
  StartServer();
  ASSERT_EQ(GetConfig().critical_failures(), 2u);
  const uint64_t version = GetPolicy().version();
  WriteConfig("critical_failures: 4\nblacklisted_builders: 3\n");
  absl::StatusOr<v1::Config> reloaded = ReloadConfig();
  ASSERT_THAT(reloaded, IsOk());
  EXPECT_EQ(reloaded->critical_failures(), 4u);
  EXPECT_EQ(GetConfig().critical_failures(), 4u);
  const v1::Policy policy = GetPolicy();
  EXPECT_EQ(policy.version(), version + 1);
  EXPECT_THAT(BannedIndices(policy), ElementsAre(3u));
}

TEST_F(ServerTest, ReloadConfigRefusesABadFile) {
  StartServer("critical_failures: 3\n");
  const v1::Config before = GetConfig();
  WriteConfig("critical_failures: 4\nattestation_threshold: 1.5\n");
  EXPECT_THAT(ReloadConfig(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("attestation_threshold")));
  WriteConfig("critical_failures: 4\nno_such_field: 1\n");
  EXPECT_THAT(ReloadConfig(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no_such_field")));
  EXPECT_TRUE(MessageDifferencer::Equals(GetConfig(), before));

  // Nor can the chain change under the state.
  std::ofstream(config_path_, std::ios::trunc) << "chain { network: \"hoodi\" }\n";
  EXPECT_THAT(ReloadConfig(), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_TRUE(MessageDifferencer::Equals(GetConfig(), before));

  std::filesystem::remove(config_path_);
  EXPECT_THAT(ReloadConfig(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_TRUE(MessageDifferencer::Equals(GetConfig(), before));
}

TEST_F(ServerTest, ReloadConfigWithoutAFileIsRefused) {
  ServerOptions options = Options();
  options.config_path.clear();
  StartServerWith(options);
  EXPECT_THAT(ReloadConfig(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("--config")));
}

// A reload that changes the configuration reaches the nodes already connected, for their
// local fallback; one that changes nothing sends nothing.
TEST_F(ServerTest, AReloadedConfigurationReachesConnectedNodes) {
  StartServer();
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  ASSERT_TRUE(node->config().has_value());
  EXPECT_EQ(node->config()->critical_failures(), 2u);
  EXPECT_EQ(node->configs_read(), 1);

  WriteConfig("critical_failures: 4\nblacklisted_builders: 3\n");
  ASSERT_THAT(ReloadConfig(), IsOk());
  std::optional<v1::Config> reloaded =
      node->AwaitConfig([](const v1::Config& config) { return config.critical_failures() == 4; });
  ASSERT_TRUE(reloaded.has_value()) << "the connected node did not get the new configuration";
  EXPECT_THAT(reloaded->blacklisted_builders(), ElementsAre(3u));
  EXPECT_EQ(node->configs_read(), 2);
  // And the policy the new configuration made.
  std::optional<v1::Policy> policy =
      node->AwaitPolicy([](const v1::Policy& policy) { return Bans(policy, 3); });
  ASSERT_TRUE(policy.has_value());

  // The same file again: nothing new to send. Anything sent after the reload comes before the
  // acknowledgement of a batch sent after it.
  ASSERT_THAT(ReloadConfig(), IsOk());
  ASSERT_TRUE(node->ObserveAndAwaitAck({Bid(1, 7, "")}).has_value());
  EXPECT_EQ(node->configs_read(), 2);

  // A node that connects now gets the new configuration at its hello.
  std::unique_ptr<NodeClient> late = ConnectedNode("bn-2");
  ASSERT_TRUE(late->config().has_value());
  EXPECT_EQ(late->config()->critical_failures(), 4u);
  EXPECT_EQ(late->configs_read(), 1);
}

TEST_F(ServerTest, WatchPolicyStreamsNewVersions) {
  StartServer();
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  std::unique_ptr<grpc::ClientReader<v1::Policy>> watch =
      admin_->WatchPolicy(&context, v1::WatchPolicyRequest());
  v1::Policy policy;
  ASSERT_TRUE(watch->Read(&policy));
  EXPECT_EQ(policy.version(), GetPolicy().version());
  absl::StatusOr<v1::Policy> banned = BanBuilder(9, "manual");
  ASSERT_THAT(banned, IsOk());
  ASSERT_TRUE(watch->Read(&policy));
  EXPECT_TRUE(MessageDifferencer::Equals(policy, *banned)) << policy.ShortDebugString();
  context.TryCancel();
  while (watch->Read(&policy)) {
  }
  EXPECT_EQ(watch->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(ServerTest, ShutdownReportsNotServingWhileDraining) {
  WriteConfig("");
  ServerOptions options = Options();
  options.drain_period = absl::Seconds(5);
  StartServerWith(options);
  const int port = server_->port();
  const std::string serving = "SERVING";
  const std::string not_serving = "NOT_SERVING";
  const std::vector<std::string> services = {"", "breaker.v1.Breaker", "breaker.v1.Admin"};
  for (const std::string& service : services) EXPECT_EQ(CheckHealth(port, service), serving);
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");

  std::thread stopper([this] { server_->Shutdown(); });
  // While it drains: NOT_SERVING overall and for both services, and the node still streams.
  EXPECT_TRUE(WaitFor([&] { return CheckHealth(port) == not_serving; }));
  for (const std::string& service : services) EXPECT_EQ(CheckHealth(port, service), not_serving);
  EXPECT_TRUE(GetNode("bn-1").connected());
  stopper.join();
  const grpc::Status status = node->AwaitEnd();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace breaker::service

namespace breaker::service {
namespace {

using ::breaker::testing::IsOk;

TEST_F(ServerTest, ListBuildersAndListNodesAnswerAPageAtATime) {
  StartServer();
  // Three banned builders and two that are only trusted: banned first, then by index.
  for (uint64_t builder : {30, 10, 20}) ASSERT_THAT(BanBuilder(builder, "paging"), IsOk());
  for (uint64_t builder : {5, 40}) {
    v1::SetBuilderTrustRequest trust;
    trust.set_builder_index(builder);
    trust.set_trusted(true);
    ASSERT_THAT(Call(&v1::Admin::Stub::async::SetBuilderTrust, trust), IsOk());
  }
  std::vector<uint64_t> listed;
  std::vector<int> page_sizes;
  v1::ListBuildersRequest request;
  request.set_page_size(2);
  do {
    absl::StatusOr<v1::ListBuildersResponse> page =
        Call(&v1::Admin::Stub::async::ListBuilders, request);
    ASSERT_THAT(page, IsOk());
    page_sizes.push_back(page->builders_size());
    for (const v1::Builder& builder : page->builders()) listed.push_back(builder.builder_index());
    request.set_page_token(page->next_page_token());
  } while (!request.page_token().empty());
  EXPECT_EQ(listed, (std::vector<uint64_t>{10, 20, 30, 5, 40}));
  EXPECT_EQ(page_sizes, (std::vector<int>{2, 2, 1}));

  std::vector<std::unique_ptr<test_support::NodeClient>> nodes;
  for (const char* id : {"c", "a", "b"}) nodes.push_back(ConnectedNode(id));
  v1::ListNodesRequest nodes_request;
  nodes_request.set_page_size(2);
  absl::StatusOr<v1::ListNodesResponse> first = Call(&v1::Admin::Stub::async::ListNodes, nodes_request);
  ASSERT_THAT(first, IsOk());
  ASSERT_EQ(first->nodes_size(), 2);
  EXPECT_EQ(first->nodes(0).node_id(), "a");
  EXPECT_EQ(first->nodes(1).node_id(), "b");
  nodes_request.set_page_token(first->next_page_token());
  absl::StatusOr<v1::ListNodesResponse> second = Call(&v1::Admin::Stub::async::ListNodes, nodes_request);
  ASSERT_THAT(second, IsOk());
  ASSERT_EQ(second->nodes_size(), 1);
  EXPECT_EQ(second->nodes(0).node_id(), "c");
  EXPECT_TRUE(second->next_page_token().empty());
  for (auto& node : nodes) EXPECT_TRUE(node->Close().ok());
}

}  // namespace
}  // namespace breaker::service
