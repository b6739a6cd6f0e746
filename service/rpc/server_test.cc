// Tests of breakerd's server as a whole: a real Server (SQLite state in a temporary directory,
// port 0) starting, refusing what it cannot serve, shutting down and restarting on its state,
// with time moved by a fake clock (the fixture is in server_test_support.h). The node and Admin
// services are tested in node_service_test.cc and admin_service_test.cc, on the same fixture.

#include "service/rpc/server.h"

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

using ::breaker::testing::CheckHealth;
using test_support::BannedIndices;
using test_support::Bans;
using test_support::Bid;
using test_support::Deadline;
using test_support::Delivered;
using test_support::kStartSlot;
using test_support::Missing;
using test_support::NodeClient;
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

}  // namespace
}  // namespace breaker::service
