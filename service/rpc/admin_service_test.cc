// Tests of the Admin service: a real Server (SQLite state in a temporary directory,
// port 0) driven over gRPC by node clients and an operator, with time moved by a fake clock (the
// fixture is in server_test_support.h).

#include <atomic>
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

#include "absl/cleanup/cleanup.h"
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
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "service/rpc/server.h"
#include "service/rpc/server_test_support.h"
#include "service/storage/memory_state_store.h"
#include "service/storage/sqlite_state_store.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
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
using test_support::Indices;
using test_support::kStartEpoch;
using test_support::kStartSlot;
using test_support::Missing;
using test_support::NodeClient;
using test_support::ServerTest;

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

TEST_F(ServerTest, AWatchThatStopsReadingEndsAtTheWriteDeadlineAndIsCounted) {
  ServerOptions options = Options();
  options.write_timeout = absl::Seconds(30);
  options.metrics_listen = "127.0.0.1:0";
  WriteConfig("");
  StartServerWith(options);
  ASSERT_NO_FATAL_FAILURE(GrowPolicyPastAStreamWindow());
  auto write_timeouts = [&] {
    return test_support::MetricSample(server_->metrics_port(),
                                      "breakerd_write_timeouts_total{rpc=\"watch_policy\"}");
  };
  // A watch that never reads, over a connection of its own whose window it does not grow.
  grpc::ChannelArguments arguments;
  arguments.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  std::unique_ptr<v1::Admin::Stub> stalled_admin =
      v1::Admin::NewStub(grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(server_->port()),
                                                   grpc::InsecureChannelCredentials(), arguments));
  grpc::ClientContext stalled_context;
  stalled_context.set_deadline(Deadline());
  std::unique_ptr<grpc::ClientReader<v1::Policy>> stalled =
      stalled_admin->WatchPolicy(&stalled_context, v1::WatchPolicyRequest());
  // breakerd's headers go with its first write: the policy's, which waits for the reader.
  stalled->WaitForInitialMetadata();
  grpc::ClientContext live_context;
  live_context.set_deadline(Deadline());
  std::unique_ptr<grpc::ClientReader<v1::Policy>> live =
      admin_->WatchPolicy(&live_context, v1::WatchPolicyRequest());
  v1::Policy policy;
  ASSERT_TRUE(live->Read(&policy));
  EXPECT_EQ(write_timeouts(), 0);

  // Past the deadline, by the fleet's clock: the stalled watch ends at once, counted (before
  // it reads: reading would let the write complete); the live one goes on.
  clock_.Advance(absl::Seconds(31));
  EXPECT_TRUE(WaitFor([&] { return write_timeouts() == 1; }, absl::Seconds(10)));
  while (stalled->Read(&policy)) {
  }
  const grpc::Status status = stalled->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("not read within 30s"));
  absl::StatusOr<v1::Policy> unbanned = UnbanBuilder(1);
  ASSERT_THAT(unbanned, IsOk());
  ASSERT_TRUE(live->Read(&policy));
  EXPECT_EQ(policy.version(), unbanned->version());
  live_context.TryCancel();
  while (live->Read(&policy)) {
  }
  EXPECT_EQ(live->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(write_timeouts(), 1);
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
using ::breaker::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

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
  absl::StatusOr<v1::ListNodesResponse> first =
      Call(&v1::Admin::Stub::async::ListNodes, nodes_request);
  ASSERT_THAT(first, IsOk());
  ASSERT_EQ(first->nodes_size(), 2);
  EXPECT_EQ(first->nodes(0).node_id(), "a");
  EXPECT_EQ(first->nodes(1).node_id(), "b");
  nodes_request.set_page_token(first->next_page_token());
  absl::StatusOr<v1::ListNodesResponse> second =
      Call(&v1::Admin::Stub::async::ListNodes, nodes_request);
  ASSERT_THAT(second, IsOk());
  ASSERT_EQ(second->nodes_size(), 1);
  EXPECT_EQ(second->nodes(0).node_id(), "c");
  EXPECT_TRUE(second->next_page_token().empty());
  for (auto& node : nodes) EXPECT_TRUE(node->Close().ok());
}

TEST_F(ServerTest, APageTokenIsTakenOnlyAsGivenOutAndOnlyByTheProcessThatGaveItOut) {
  StartServer();
  for (uint64_t builder : {10, 20, 30}) ASSERT_THAT(BanBuilder(builder, "paging"), IsOk());
  std::unique_ptr<v1::Breaker::Stub> stub = v1::Breaker::NewStub(channel_);
  for (const char* node : {"a", "b"}) {
    ASSERT_THAT(Report(*stub, node, {test_support::Missing(1, 5, 'n', 0.1)}), IsOk());
  }
  v1::ListBuildersRequest builders;
  builders.set_page_size(1);
  absl::StatusOr<v1::ListBuildersResponse> first =
      Call(&v1::Admin::Stub::async::ListBuilders, builders);
  ASSERT_THAT(first, IsOk());
  const std::string builders_token = first->next_page_token();
  builders.set_page_token(builders_token);
  absl::StatusOr<v1::ListBuildersResponse> second =
      Call(&v1::Admin::Stub::async::ListBuilders, builders);
  ASSERT_THAT(second, IsOk());
  ASSERT_EQ(second->builders_size(), 1);
  EXPECT_EQ(second->builders(0).builder_index(), 20u);
  v1::ListNodesRequest nodes;
  nodes.set_page_size(1);
  absl::StatusOr<v1::ListNodesResponse> first_nodes =
      Call(&v1::Admin::Stub::async::ListNodes, nodes);
  ASSERT_THAT(first_nodes, IsOk());
  const std::string nodes_token = first_nodes->next_page_token();
  ASSERT_FALSE(nodes_token.empty());

  // A position written by hand, as the tokens once were; a token edited; one of the other list.
  builders.set_page_token("0:00000000000000000010");
  EXPECT_THAT(Call(&v1::Admin::Stub::async::ListBuilders, builders),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("start again from an empty page_token")));
  std::string edited = builders_token;
  edited[edited.size() / 2] = edited[edited.size() / 2] == 'A' ? 'B' : 'A';
  builders.set_page_token(edited);
  EXPECT_THAT(Call(&v1::Admin::Stub::async::ListBuilders, builders),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("page_token")));
  builders.set_page_token(nodes_token);
  EXPECT_THAT(Call(&v1::Admin::Stub::async::ListBuilders, builders),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not of ListBuilders")));

  // Another process: the same state, another key.
  Restart();
  builders.set_page_token(builders_token);
  EXPECT_THAT(Call(&v1::Admin::Stub::async::ListBuilders, builders),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("another breakerd process"),
                             HasSubstr("start again from an empty page_token"))));
  nodes.set_page_token(nodes_token);
  EXPECT_THAT(Call(&v1::Admin::Stub::async::ListNodes, nodes),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("another breakerd process")));
  builders.clear_page_token();
  absl::StatusOr<v1::ListBuildersResponse> again =
      Call(&v1::Admin::Stub::async::ListBuilders, builders);
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->builders(0).builder_index(), 10u);
}

// A replica stepping down ends the operator's change that waits for its store with why, at
// once (the server's shutdown would otherwise cancel it after its grace period: CANCELLED,
// with no message), and refuses the next one with the same; the fleet's answer, when it
// comes, finds the call answered.
TEST(AdminServiceShutdownTest, EndsTheChangesWaitingForTheStoreWithWhy) {
  ::breaker::testing::FakeClock clock(core::StartOf(kStartSlot, Chain()));
  auto store = std::make_unique<MemoryStateStore>();
  MemoryStateStore* memory = store.get();
  Fleet::Options options;
  options.store = std::move(store);
  options.clock = &clock;
  options.run_ticker = false;
  absl::StatusOr<std::unique_ptr<Fleet>> fleet = Fleet::Open(std::move(options));
  ASSERT_THAT(fleet, IsOk());
  const Authorizer authorizer(std::nullopt, "");
  AdminService admin(fleet->get(), &authorizer);
  grpc::ServerBuilder builder;
  builder.RegisterService(&admin);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = v1::Admin::NewStub(server->InProcessChannel(grpc::ChannelArguments()));
  auto ban = [&](uint64_t builder_index) {
    v1::BanBuilderRequest request;
    request.set_builder_index(builder_index);
    request.set_reason("stepping down");
    return ::breaker::testing::CallUnary(*stub, &v1::Admin::Stub::async::BanBuilder, request);
  };

  // The store holds the first write until released, as etcd without a quorum would.
  std::promise<void> writing;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  // Also when an assertion below fails, so that the fleet can stop.
  absl::Cleanup unblock = [&] { release.set_value(); };
  std::atomic<bool> held{false};
  memory->SetAppendHook([&](const std::vector<std::string>&) {
    if (held.exchange(true)) return;
    writing.set_value();
    released.wait();
  });
  std::future<absl::StatusOr<v1::Policy>> waiting =
      std::async(std::launch::async, [&] { return ban(7); });
  writing.get_future().wait();

  admin.Shutdown(absl::UnavailableError("this breakerd no longer leads /breaker/test"),
                 AdminService::Pending::kEnd);
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(5)), std::future_status::ready)
      << "the change waiting for the store was not ended";
  EXPECT_THAT(waiting.get(),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no longer leads")));
  EXPECT_THAT(ban(8), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no longer leads")));

  std::move(unblock).Invoke();
  (*fleet)->Sync();
  server->Shutdown();
}

}  // namespace
}  // namespace breaker::service
