// breakerd's Prometheus endpoint: a real Server with metrics on port 0, driven by a node
// stream and operator actions, scraped over plain HTTP; the samples are checked against what
// the Admin API says.

#include "service/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "gtest/gtest.h"
#include "service/rpc/server.h"
#include "service/rpc/server_test_support.h"
#include "tests/support/etcd_cluster.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::testing::EtcdCluster;
using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::breaker::testing::WaitFor;
using test_support::Bid;
using test_support::kSlot;
using test_support::Missing;
using test_support::NodeClient;
using ::testing::HasSubstr;

// GET /metrics over a plain socket, as Prometheus does; returns the body, or "" on error.
std::string Scrape(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  // A scrape that waits longer than this failed: Prometheus gives up too.
  const timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    // HTTP/1.0: the server closes the connection after the response, which ends the read.
    const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      ssize_t n;
      while ((n = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
    }
  }
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.1 200", 0) != 0 && response.rfind("HTTP/1.0 200", 0) != 0) {
    ADD_FAILURE() << "scrape failed: " << response.substr(0, 200);
    return "";
  }
  return body == std::string::npos ? "" : response.substr(body + 4);
}

// The value of `series` (name and labels exactly as exposed, e.g. `x{a="b"}`) in `text`.
std::optional<double> Sample(const std::string& text, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, series) || !absl::ConsumePrefix(&line, " ")) continue;
    double value = 0;
    if (absl::SimpleAtod(line, &value)) return value;
  }
  return std::nullopt;
}

class MetricsTest : public test_support::ServerTest {
 protected:
  MetricsTest() { WriteConfig(""); }

  // The fixture's options, with metrics on a free port.
  ServerOptions MetricsOptions() {
    ServerOptions options = Options();
    options.metrics_listen = "127.0.0.1:0";
    return options;
  }

  void Start() {
    StartServerWith(MetricsOptions());
    ASSERT_GT(server_->metrics_port(), 0);
  }

  std::string Scrape() { return ::breaker::service::Scrape(server_->metrics_port()); }

  // Waits until the scraped `series` equals `value`: what the streams report to the fleet
  // (acks, disconnections) lands after the rpcs the test waits for.
  bool WaitForSample(const std::string& series, double value) {
    return WaitFor([&] { return Sample(Scrape(), series) == value; }, absl::Seconds(10));
  }
};

TEST_F(MetricsTest, OffWhenNoAddress) {
  ServerOptions options = MetricsOptions();
  options.metrics_listen = "";
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
  ASSERT_THAT(server, IsOk());
  EXPECT_EQ((*server)->metrics_port(), 0);
}

TEST_F(MetricsTest, BadAddressIsRefusedAtStart) {
  for (const char* address : {"9464", "localhost", "127.0.0.1:port", "127.0.0.1:70000", ":1"}) {
    ServerOptions options = MetricsOptions();
    options.metrics_listen = address;
    EXPECT_THAT(Server::Start(options),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--metrics_listen")))
        << address;
  }
}

TEST_F(MetricsTest, PortInUseIsRefusedAtStart) {
  Start();
  ServerOptions options = MetricsOptions();
  options.state_dir = dir_ + "/other-state";
  options.metrics_listen = absl::StrCat("127.0.0.1:", server_->metrics_port());
  EXPECT_THAT(Server::Start(options),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("--metrics_listen")));
}

TEST_F(MetricsTest, StateGaugesMatchTheAdminApi) {
  Start();
  const std::string text = Scrape();
  EXPECT_EQ(Sample(text, "breakerd_policy_version"), GetPolicy().version()) << text;
  EXPECT_EQ(Sample(text, "breakerd_mode{mode=\"all_builders\"}"), 1) << text;
  EXPECT_EQ(Sample(text, "breakerd_mode{mode=\"self_build\"}"), 0) << text;
  EXPECT_EQ(Sample(text, "breakerd_banned_builders{cause=\"own\"}"), 0) << text;
  EXPECT_EQ(Sample(text, "breakerd_connected_nodes"), 0) << text;
  // Counters exist at 0 before anything happens, so that rate() works from the start.
  EXPECT_EQ(Sample(text,
                   "breakerd_observations_total{kind=\"payload_missing\","
                   "outcome=\"applied\"}"),
            0)
      << text;
  EXPECT_EQ(Sample(text, "breakerd_refused_total{code=\"out_of_range\",input=\"observation\"}"), 0)
      << text;
  // The first snapshot of a fresh state directory was written.
  EXPECT_GE(Sample(text, "breakerd_store_write_seconds_count{operation=\"snapshot\"}"), 1) << text;
  // On SQLite there is no etcd to reach and nothing to lead.
  EXPECT_THAT(text, ::testing::Not(HasSubstr("breakerd_etcd_reachable"))) << text;
  EXPECT_THAT(text, ::testing::Not(HasSubstr("breakerd_leader"))) << text;
}

TEST_F(MetricsTest, CountsWhatNodesAndOperatorsDo) {
  Start();
  const uint64_t first_version = GetPolicy().version();
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  ASSERT_TRUE(WaitForSample("breakerd_connected_nodes", 1)) << Scrape();

  // A failure (bans builder 5), the same failure again from the same node (no effect), a bid,
  // a replay, and an observation 100 slots ahead (refused: OUT_OF_RANGE).
  // The bid goes through a relay: the engine learns the relay serves the builder, so the bid is
  // applied.
  const std::string relay = "https://relay.example.com";
  ASSERT_TRUE(node->ObserveAndAwaitAck({Missing(1, 5, 'a'), Missing(2, 5, 'a'), Bid(3, 6, relay)}));
  ASSERT_TRUE(node->ObserveAndAwaitAck({Bid(3, 6, relay), Missing(4, 7, 'b', 0.9, kSlot + 100)}));
  ASSERT_TRUE(node->AwaitPolicy([](const v1::Policy& p) { return p.banned_builders_size() > 0; }));

  // An operator ban.
  v1::BanBuilderRequest ban;
  ban.set_builder_index(42);
  ban.set_reason("withheld twice");
  ASSERT_THAT(Call(&v1::Admin::Stub::async::BanBuilder, ban), IsOk());
  ASSERT_TRUE(node->AwaitPolicy([](const v1::Policy& p) { return p.banned_builders_size() == 2; }));

  // A stream refused at its hello.
  {
    std::unique_ptr<NodeClient> nameless = Node();
    ASSERT_TRUE(nameless->Hello(""));
    EXPECT_EQ(nameless->AwaitEnd().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }

  const v1::Policy policy = GetPolicy();
  ASSERT_GT(policy.version(), first_version);
  // The node's acknowledgement of the last version travels on its own.
  ASSERT_TRUE(WaitForSample("breakerd_node_policy_lag{node_id=\"bn-1\"}", 0)) << Scrape();
  const std::string text = Scrape();
  EXPECT_EQ(Sample(text, "breakerd_policy_version"), policy.version()) << text;
  EXPECT_EQ(Sample(text, "breakerd_banned_builders{cause=\"own\"}"), 1) << text;
  EXPECT_EQ(Sample(text, "breakerd_banned_builders{cause=\"operator\"}"), 1) << text;
  EXPECT_EQ(Sample(text, "breakerd_banned_builders{cause=\"collateral\"}"), 0) << text;
  EXPECT_EQ(Sample(text, "breakerd_mode{mode=\"all_builders\"}"), 1) << text;
  EXPECT_EQ(Sample(text, "breakerd_connected_nodes"), 1) << text;
  EXPECT_EQ(Sample(text, "breakerd_known_nodes"), 1) << text;
  EXPECT_EQ(Sample(text, "breakerd_node_connected{node_id=\"bn-1\"}"), 1) << text;

  EXPECT_EQ(
      Sample(text, "breakerd_observations_total{kind=\"payload_missing\",outcome=\"applied\"}"), 1)
      << text;
  EXPECT_EQ(
      Sample(text, "breakerd_observations_total{kind=\"payload_missing\",outcome=\"no_effect\"}"),
      1)
      << text;
  EXPECT_EQ(
      Sample(text, "breakerd_observations_total{kind=\"payload_missing\",outcome=\"refused\"}"), 1)
      << text;
  EXPECT_EQ(Sample(text, "breakerd_observations_total{kind=\"bid_seen\",outcome=\"applied\"}"), 1)
      << text;
  EXPECT_EQ(Sample(text, "breakerd_observations_total{kind=\"bid_seen\",outcome=\"duplicate\"}"), 1)
      << text;
  EXPECT_EQ(Sample(text, "breakerd_refused_total{code=\"out_of_range\",input=\"observation\"}"), 1)
      << text;
  EXPECT_EQ(Sample(text, "breakerd_refused_total{code=\"invalid_argument\",input=\"message\"}"), 1)
      << text;
  EXPECT_EQ(Sample(text, "breakerd_failures_recorded_total{target=\"builder\"}"), 1) << text;
  EXPECT_GE(Sample(text, "breakerd_store_write_seconds_count{operation=\"append\"}"), 3) << text;
  // The ban of builder 5 and the operator's were each written to the subscribed stream.
  EXPECT_GE(Sample(text, "breakerd_policy_fanout_seconds_count"), 2) << text;
  EXPECT_THAT(text, HasSubstr("# TYPE breakerd_policy_fanout_seconds histogram"));

  // The node leaves: it shows as not connected.
  EXPECT_TRUE(node->Close().ok());
  EXPECT_TRUE(WaitForSample("breakerd_connected_nodes", 0)) << Scrape();
  EXPECT_EQ(Sample(Scrape(), "breakerd_node_connected{node_id=\"bn-1\"}"), 0);
}

TEST_F(MetricsTest, IdleConnectionsDoNotHoldUpAScrape) {
  Start();
  const int port = server_->metrics_port();
  // Connections that never send a request, as a stuck or hostile client holds them.
  std::vector<int> idle;
  for (int i = 0; i < 3; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    idle.push_back(fd);
  }
  // Served while they stay open (a single server thread waited for the first one's request).
  EXPECT_THAT(Scrape(), HasSubstr("breakerd_policy_version"));
  for (int fd : idle) close(fd);
}

TEST_F(MetricsTest, ShutdownStopsServing) {
  Start();
  const int port = server_->metrics_port();
  server_->Shutdown();
  // Once shut down, nothing listens; the scrape fails cleanly instead of reading a dead fleet.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_NE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  close(fd);
}

// Replicas on one real etcd member: the leader and a standby each export whether etcd answers
// them and whether they lead.
class ReplicaMetricsTest : public MetricsTest {
 protected:
  void SetUp() override {
    EtcdCluster::Options options;
    options.members = 1;
    options.directory = dir_ + "/etcd";
    absl::StatusOr<std::unique_ptr<EtcdCluster>> cluster = EtcdCluster::Start(options);
    ASSERT_THAT(cluster, IsOk());
    cluster_ = *std::move(cluster);
  }

  // With metrics, on etcd; the lease counts on the fixture's fake clock. A short TTL lets etcd
  // free the key of a deposed leader soon.
  ServerOptions ReplicaOptions(int lease_ttl_seconds = 60) {
    ServerOptions options = MetricsOptions();
    options.store = "etcd";
    options.etcd.endpoints = cluster_->endpoint(0);
    options.etcd.prefix = "/breaker/metrics";
    options.etcd.lease_ttl_seconds = lease_ttl_seconds;
    return options;
  }

  std::unique_ptr<EtcdCluster> cluster_;
};

TEST_F(ReplicaMetricsTest, LeaderAndStandbyEachSayWhetherTheyLeadAndReachEtcd) {
  const ServerOptions leader_options = ReplicaOptions();
  ASSERT_NO_FATAL_FAILURE(StartServerWith(leader_options));
  ASSERT_TRUE(server_->WaitUntilLeading(absl::Seconds(60)));
  const int leader_port = server_->metrics_port();
  std::string text = ::breaker::service::Scrape(leader_port);
  EXPECT_EQ(Sample(text, "breakerd_leader"), 1) << text;
  EXPECT_EQ(Sample(text, "breakerd_etcd_reachable"), 1) << text;
  EXPECT_EQ(Sample(text, "breakerd_leadership_changes_total"), 1) << text;

  // A standby has no fleet, and still says what it sees of etcd.
  absl::StatusOr<std::unique_ptr<Server>> standby = Server::Start(ReplicaOptions());
  ASSERT_THAT(standby, IsOk());
  const int standby_port = (*standby)->metrics_port();
  ASSERT_GT(standby_port, 0);
  EXPECT_TRUE(WaitFor(
      [&] {
        return Sample(::breaker::service::Scrape(standby_port), "breakerd_etcd_reachable") == 1;
      },
      absl::Seconds(30)));
  text = ::breaker::service::Scrape(standby_port);
  EXPECT_EQ(Sample(text, "breakerd_leader"), 0) << text;
  EXPECT_EQ(Sample(text, "breakerd_leadership_changes_total"), 0) << text;
  EXPECT_THAT(text, ::testing::Not(HasSubstr("breakerd_policy_version"))) << text;

  // etcd goes: the standby's next campaign try, and the leader's next write, go unanswered.
  cluster_->Kill(0);
  EXPECT_TRUE(WaitFor(
      [&] {
        return Sample(::breaker::service::Scrape(standby_port), "breakerd_etcd_reachable") == 0;
      },
      absl::Seconds(30)));
  EXPECT_THAT(BanBuilder(10, "during the outage"), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_TRUE(WaitForSample("breakerd_etcd_reachable", 0)) << Scrape();
  // Not deposed yet by its clock: it still holds the key.
  EXPECT_EQ(Sample(Scrape(), "breakerd_leader"), 1);

  // etcd back, the standby's campaign is answered again.
  ASSERT_THAT(cluster_->Restart(0), IsOk());
  EXPECT_TRUE(WaitFor(
      [&] {
        return Sample(::breaker::service::Scrape(standby_port), "breakerd_etcd_reachable") == 1;
      },
      absl::Seconds(60)));
  standby->reset();
}

TEST_F(ReplicaMetricsTest, LeadershipChangesCountOnAcrossTheServersOfOneProcess) {
  const ServerOptions options = ReplicaOptions(/*lease_ttl_seconds=*/2);
  ASSERT_NO_FATAL_FAILURE(StartServerWith(options));
  ASSERT_TRUE(server_->WaitUntilLeading(absl::Seconds(60)));
  // No keepalive answered for longer than the TTL, on its clock: deposed.
  clock_.Advance(absl::Seconds(2));
  EXPECT_THAT(BanBuilder(10, "too late"), StatusIs(absl::StatusCode::kUnavailable));
  ASSERT_TRUE(WaitForSample("breakerd_leader", 0)) << Scrape();
  EXPECT_EQ(Sample(Scrape(), "breakerd_leadership_changes_total"), 2);

  // The next server of the process (RunBreakerd's, after the step-down) goes on from there.
  StopServer();
  ASSERT_NO_FATAL_FAILURE(StartServerWith(options));
  ASSERT_TRUE(server_->WaitUntilLeading(absl::Seconds(60)));
  const std::string text = Scrape();
  EXPECT_EQ(Sample(text, "breakerd_leader"), 1) << text;
  EXPECT_EQ(Sample(text, "breakerd_leadership_changes_total"), 3) << text;
}

}  // namespace
}  // namespace breaker::service
