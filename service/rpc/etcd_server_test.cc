// breakerd over the etcd store (--store=etcd), on one real etcd member: the state lives in etcd
// across restarts, an etcd outage is a storage fault like a full disk (health NOT_SERVING,
// recovering by itself), a second breakerd on the prefix is a standby that names the leader
// and takes over with its state, and a breakerd whose lease ran out steps down. The store's
// own behaviour is tested in service/storage/etcd_state_store_test.cc; the replicas as
// processes, SIGKILLed and paused, in tests/e2e/replicas_test.cc.

#include <sys/stat.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "service/fleet.h"
#include "service/rpc/server.h"
#include "service/rpc/server_test_support.h"
#include "tests/support/etcd_cluster.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::testing::CheckHealth;
using ::breaker::testing::EtcdCluster;
using ::breaker::testing::FromGrpc;
using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::breaker::testing::WaitFor;
using ::google::protobuf::util::MessageDifferencer;
using test_support::ServerTest;
using ::testing::HasSubstr;

class EtcdServerTest : public ServerTest {
 protected:
  void SetUp() override {
    EtcdCluster::Options options;
    options.members = 1;
    options.directory = dir_ + "/etcd";
    absl::StatusOr<std::unique_ptr<EtcdCluster>> cluster = EtcdCluster::Start(options);
    ASSERT_THAT(cluster, IsOk());
    cluster_ = *std::move(cluster);
    WriteConfig("");
  }

  // The fixture's options, on etcd. The lease counts on the fixture's fake clock.
  ServerOptions EtcdOptions(int lease_ttl_seconds = 3600) {
    ServerOptions options = Options();
    options.store = "etcd";
    options.etcd.endpoints = cluster_->endpoint(0);
    options.etcd.prefix = "/breaker/test";
    options.etcd.lease_ttl_seconds = lease_ttl_seconds;
    return options;
  }

  // Starts the fixture's server on `options` and waits until it leads.
  void StartLeader(const ServerOptions& options) {
    ASSERT_NO_FATAL_FAILURE(StartServerWith(options));
    ASSERT_TRUE(server_->WaitUntilLeading(absl::Seconds(60)));
  }

  // Moves the fake clock on by the longest storage retry and lets the fleet act on it.
  void AdvanceByARetry() {
    server_->fleet()->Sync();
    clock_.Advance(StorageSupervisor::kMaxAttempt);
    server_->fleet()->Tick();
    server_->fleet()->Sync();
  }

  // GetPolicy from the server on 127.0.0.1:`port`: a standby's refusal names the leader, or
  // why it cannot campaign.
  absl::StatusOr<v1::Policy> PolicyFrom(int port) {
    std::unique_ptr<v1::Admin::Stub> admin = v1::Admin::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    v1::Policy answer;
    const absl::Status status =
        FromGrpc(admin->GetPolicy(&context, v1::GetPolicyRequest(), &answer));
    return status.ok() ? absl::StatusOr<v1::Policy>(answer) : absl::StatusOr<v1::Policy>(status);
  }

  std::unique_ptr<EtcdCluster> cluster_;
};

TEST_F(EtcdServerTest, TheStateLivesInEtcdAcrossRestarts) {
  ASSERT_NO_FATAL_FAILURE(StartLeader(EtcdOptions()));
  ASSERT_THAT(BanBuilder(9, "operator ban"), IsOk());
  const v1::Policy policy = GetPolicy();

  StopServer();
  ASSERT_NO_FATAL_FAILURE(StartLeader(EtcdOptions()));
  EXPECT_TRUE(MessageDifferencer::Equals(GetPolicy(), policy)) << GetPolicy().DebugString();
  absl::StatusOr<v1::Policy> next = BanBuilder(12, "after restart");
  ASSERT_THAT(next, IsOk());
  EXPECT_EQ(next->version(), policy.version() + 1);
  // No SQLite state was made.
  struct stat info;
  EXPECT_NE(stat(Options().state_dir.c_str(), &info), 0);
}

TEST_F(EtcdServerTest, AnEtcdOutageIsAStorageFaultThatClearsByItself) {
  ASSERT_NO_FATAL_FAILURE(StartLeader(EtcdOptions()));
  ASSERT_THAT(BanBuilder(9, "before"), IsOk());
  ASSERT_EQ(CheckHealth(server_->port()), "SERVING");

  cluster_->Kill(0);
  EXPECT_THAT(BanBuilder(10, "during"), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_TRUE(WaitFor([&] { return CheckHealth(server_->port()) == "NOT_SERVING"; }));

  ASSERT_THAT(cluster_->Restart(0), IsOk());
  EXPECT_TRUE(WaitFor(
      [&] {
        AdvanceByARetry();
        return CheckHealth(server_->port()) == "SERVING";
      },
      absl::Seconds(60), absl::Milliseconds(50)));
  absl::StatusOr<v1::Policy> after = BanBuilder(11, "after");
  ASSERT_THAT(after, IsOk());
  EXPECT_TRUE(test_support::Bans(*after, 9));
  EXPECT_TRUE(test_support::Bans(*after, 11));
}

TEST_F(EtcdServerTest, ABreakerdWhoseLeaseRanOutStepsDown) {
  // A promise, not an absl::Notification: ThreadSanitizer does not see into Debian's Abseil.
  std::promise<absl::Status> stepped_down;
  ServerOptions options = EtcdOptions(/*lease_ttl_seconds=*/60);
  options.on_stepped_down = [&](const absl::Status& status) { stepped_down.set_value(status); };
  ASSERT_NO_FATAL_FAILURE(StartLeader(options));
  ASSERT_THAT(BanBuilder(9, "while leading"), IsOk());
  std::unique_ptr<test_support::NodeClient> node = ConnectedNode("node-1");
  // On its clock, no keepalive for longer than the TTL less the margin (as when etcd is out
  // of reach, or the process was paused).
  clock_.Advance(absl::Seconds(60));
  EXPECT_THAT(BanBuilder(10, "too late"), StatusIs(absl::StatusCode::kUnavailable));
  std::future<absl::Status> why = stepped_down.get_future();
  ASSERT_EQ(why.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_THAT(why.get(), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no longer leads")));
  EXPECT_EQ(CheckHealth(server_->port()), "NOT_SERVING");
  // The node's stream ends, telling it why.
  EXPECT_THAT(FromGrpc(node->AwaitEnd()),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no longer leads")));
  // It stays so: its retries find it deposed.
  for (int i = 0; i < 3; ++i) AdvanceByARetry();
  EXPECT_EQ(CheckHealth(server_->port()), "NOT_SERVING");
  EXPECT_THAT(BanBuilder(11, "still too late"), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_FALSE(server_->WaitUntilLeading(absl::ZeroDuration()));
}

TEST_F(EtcdServerTest, AStandbyNamesTheLeaderThenTakesOverWithItsState) {
  ServerOptions leader_options = EtcdOptions();
  leader_options.advertise_address = "leader.example:50051";
  ASSERT_NO_FATAL_FAILURE(StartLeader(leader_options));
  ASSERT_THAT(BanBuilder(9, "before the handover"), IsOk());
  const v1::Policy policy = GetPolicy();

  ServerOptions standby_options = EtcdOptions();
  standby_options.advertise_address = "standby.example:50052";
  absl::StatusOr<std::unique_ptr<Server>> standby = Server::Start(standby_options);
  ASSERT_THAT(standby, IsOk());
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*standby)->port()),
                                     grpc::InsecureChannelCredentials());
  std::unique_ptr<v1::Admin::Stub> standby_admin = v1::Admin::NewStub(channel);
  const auto standby_policy = [&] {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    v1::Policy answer;
    const absl::Status status =
        FromGrpc(standby_admin->GetPolicy(&context, v1::GetPolicyRequest(), &answer));
    return status.ok() ? absl::StatusOr<v1::Policy>(answer) : absl::StatusOr<v1::Policy>(status);
  };
  // Once it has seen the leader key, the standby names the leader; health says it serves not.
  EXPECT_TRUE(WaitFor([&] {
    return absl::StrContains(standby_policy().status().message(), "leader.example:50051");
  }));
  EXPECT_THAT(standby_policy(), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("standby")));
  EXPECT_EQ(CheckHealth((*standby)->port()), "NOT_SERVING");
  EXPECT_FALSE((*standby)->WaitUntilLeading(absl::ZeroDuration()));
  test_support::NodeClient node(channel);
  node.Hello("node-1");
  EXPECT_THAT(FromGrpc(node.AwaitEnd()),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("leader.example:50051")));

  // The leader lists itself and the standby.
  absl::StatusOr<v1::ListNodesResponse> nodes =
      Call(&v1::Admin::Stub::async::ListNodes, v1::ListNodesRequest());
  ASSERT_THAT(nodes, IsOk());
  EXPECT_EQ(nodes->replication().leader(), "leader.example:50051");
  EXPECT_THAT(nodes->replication().replicas(),
              ::testing::ElementsAre("leader.example:50051", "standby.example:50052"));
  EXPECT_GT(nodes->replication().leader_since().seconds(), 0);

  // The leader stops (its lease revoked): the standby leads, with the leader's state, and
  // counts versions on from it.
  StopServer();
  ASSERT_TRUE((*standby)->WaitUntilLeading(absl::Seconds(60)));
  absl::StatusOr<v1::Policy> taken_over = standby_policy();
  ASSERT_THAT(taken_over, IsOk());
  EXPECT_TRUE(MessageDifferencer::Equals(*taken_over, policy)) << taken_over->DebugString();
  EXPECT_EQ(CheckHealth((*standby)->port()), "SERVING");
}

// A standby's campaign that lost its lease (its clock ran past the TTL while the leader held
// the key) failed, and the next campaign has a lease of its own: when that one leads, the
// old loss must not end the lead as soon as it starts.
TEST_F(EtcdServerTest, AStandbyWhoseCampaignLostItsLeaseLeadsWhenTheLeaderStops) {
  ServerOptions leader_options = EtcdOptions();
  leader_options.advertise_address = "leader.example:50051";
  ASSERT_NO_FATAL_FAILURE(StartLeader(leader_options));

  ::breaker::testing::FakeClock standby_clock(clock_.Now());
  ServerOptions standby_options = EtcdOptions(/*lease_ttl_seconds=*/60);
  standby_options.advertise_address = "standby.example:50052";
  standby_options.clock = &standby_clock;
  absl::StatusOr<std::unique_ptr<Server>> standby = Server::Start(standby_options);
  ASSERT_THAT(standby, IsOk());
  const int port = (*standby)->port();
  // Naming the leader, it campaigns with a lease.
  ASSERT_TRUE(WaitFor([&] {
    return absl::StrContains(PolicyFrom(port).status().message(), "leader.example:50051");
  }));
  standby_clock.Advance(absl::Seconds(60));
  ASSERT_TRUE(WaitFor([&] {
    return absl::StrContains(PolicyFrom(port).status().message(), "lost the etcd lease");
  })) << "the standby's campaign did not lose its lease";

  StopServer();
  ASSERT_TRUE((*standby)->WaitUntilLeading(absl::Seconds(60)))
      << "the standby did not lead, or stepped down at once";
  EXPECT_THAT(PolicyFrom(port), IsOk());
  EXPECT_EQ(CheckHealth(port), "SERVING");
}

TEST_F(EtcdServerTest, BadStoreFlagsNameTheFlag) {
  ServerOptions options = EtcdOptions();
  options.store = "zookeeper";
  EXPECT_THAT(Server::Start(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--store")));
  options = EtcdOptions();
  options.etcd.endpoints = "";
  EXPECT_THAT(Server::Start(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--etcd_endpoints")));
  options = EtcdOptions();
  options.etcd.prefix = "";
  EXPECT_THAT(Server::Start(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--etcd_prefix")));
  options = EtcdOptions();
  options.etcd.prefix = "no-slash";
  EXPECT_THAT(Server::Start(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--etcd_prefix")));
  options = EtcdOptions();
  options.etcd.lease_ttl_seconds = 1;
  EXPECT_THAT(Server::Start(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--etcd_lease_ttl")));
  options = EtcdOptions();
  options.etcd.tls.cert_file = "cert.pem";
  EXPECT_THAT(Server::Start(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--etcd_key")));
  options = Options();
  options.etcd.prefix = "/breaker/test";
  EXPECT_THAT(Server::Start(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--store=etcd")));
}

}  // namespace
}  // namespace breaker::service
