// The client library against a real breakerd: an in-process Server on a real loopback port
// (SQLite state in a temporary directory), the client's gRPC stream to it, and one fake clock
// shared by both. Real time only paces the client's threads (reconnect backoff, policy
// evaluation), which the tests shorten; every wait is for a condition, with a deadline.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "client/client.h"
#include "common/fake_clock.h"
#include "common/mutex.h"
#include "core/chain_time.h"
#include "core/observation.h"
#include "core/policy.h"
#include "core/types.h"
#include "glog/logging.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "service/rpc/server.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::client::BreakerClient;
using ::breaker::client::ClientOptions;
using ::breaker::client::ClientStats;
using ::breaker::client::PolicySnapshot;
using ::breaker::client::PolicySource;
using ::breaker::testing::CallUnary;
using ::breaker::testing::FakeClock;
using ::breaker::testing::IsOk;
using ::breaker::testing::TestDir;
using ::breaker::testing::WaitFor;

// Mainnet with Gloas from genesis: the per-builder rules apply, the missed-slot rules do not.
core::ChainSpec Chain() {
  core::ChainSpec spec = core::ChainSpecForNetwork("mainnet").value();
  spec.gloas_fork_epoch = 0;
  return spec;
}

constexpr char kChainConfig[] = "chain { network: \"mainnet\" gloas_fork_epoch: 0 }\n";
constexpr core::Epoch kStartEpoch = 100;
// The clock starts a few slots into epoch kStartEpoch; observations are of the slot before.
constexpr core::Slot kStartSlot = kStartEpoch * 32 + 8;
constexpr core::Slot kSlot = kStartSlot - 1;

// A block root of its own for each `n`.
core::BlockRoot Root(uint64_t n) { return core::BlockRootFromBytes(absl::StrCat("root-", n)); }

// Builder `builder`'s block `n` got no payload, though 90% of the committee attested it: a
// failure.
core::PayloadMissing Missing(core::BuilderIndex builder, uint64_t n) {
  return core::PayloadMissing{builder, Root(n), 0.9};
}

// A TCP listener on 127.0.0.1 that accepts connections and never reads or writes a byte: a
// breakerd stuck somewhere on the network path (the TLS/HTTP2 handshake never completes).
class SilentListener {
 public:
  SilentListener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_GE(fd_, 0) << "socket";
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    CHECK_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << "bind";
    CHECK_EQ(listen(fd_, 16), 0) << "listen";
    socklen_t length = sizeof(address);
    CHECK_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }

  ~SilentListener() {
    stopping_ = true;
    acceptor_.join();
    for (int connection : connections_) close(connection);
    close(fd_);
  }

  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;

  int port() const { return port_; }
  int accepted() const { return accepted_.load(); }

 private:
  void AcceptLoop() {
    while (!stopping_.load()) {
      pollfd listening{fd_, POLLIN, 0};
      if (poll(&listening, 1, /*timeout_ms=*/5) <= 0) continue;
      const int connection = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (connection < 0) continue;
      connections_.push_back(connection);  // held open, silent, until the listener goes
      ++accepted_;
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  // Only the acceptor thread touches it until it is joined.
  std::vector<int> connections_;
  std::thread acceptor_;
};

// Aborts the test binary, naming `what`, unless Done() is called within `limit`: for code
// that must return while something else is stuck, where a hang would otherwise last until the
// test runner's timeout.
class Watchdog {
 public:
  Watchdog(std::string what, absl::Duration limit)
      : what_(std::move(what)), thread_([this, limit] {
          MutexLock lock(&mu_);
          const auto deadline = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(limit);
          while (!done_ && !cv_.WaitUntil(&mu_, deadline)) {
          }
          if (!done_) {
            LOG(FATAL) << what_ << " did not return within " << limit;
          }
        }) {}

  ~Watchdog() {
    Done();
    thread_.join();
  }

  void Done() {
    {
      MutexLock lock(&mu_);
      done_ = true;
    }
    cv_.SignalAll();
  }

 private:
  const std::string what_;
  Mutex mu_;
  CondVar cv_;
  bool done_ = false;
  std::thread thread_;
};

class ClientServiceTest : public ::testing::Test {
 protected:
  ClientServiceTest()
      : dir_(TestDir()),
        config_path_(dir_ + "/breakerd.textproto"),
        clock_(core::StartOf(kStartSlot, Chain())) {
    std::ofstream file(config_path_, std::ios::trunc);
    file << kChainConfig;
  }

  void TearDown() override { StopServer(); }

  // Starts breakerd on `port` (0: any free one) over the test's state directory (or another
  // one, `state`, under the test's directory), and connects the admin stub. A restart passes
  // the first server's port: the clients know that address.
  void StartServer(int port = 0, const std::string& state = "state") {
    service::ServerOptions options;
    options.listen_address = absl::StrCat("127.0.0.1:", port);
    options.state_dir = absl::StrCat(dir_, "/", state);
    options.config_path = config_path_;
    options.clock = &clock_;
    options.run_ticker = false;
    absl::StatusOr<std::unique_ptr<service::Server>> server = service::Server::Start(options);
    ASSERT_THAT(server, IsOk());
    server_ = *std::move(server);
    address_ = absl::StrCat("127.0.0.1:", server_->port());
    admin_ = v1::Admin::NewStub(grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  }

  // Shuts breakerd down (node streams end with UNAVAILABLE, the state is flushed) and forgets
  // it. The address stays: clients keep trying it.
  void StopServer() {
    admin_.reset();
    if (server_ != nullptr) server_->Shutdown();
    server_.reset();
  }

  // Options for a client of the running breakerd, on the fake clock, with backoff and
  // evaluation short enough for a test.
  ClientOptions ClientOptionsFor(const std::string& node_id) {
    ClientOptions options;
    options.addresses = {address_};
    options.node_id = node_id;
    options.network = "mainnet";
    options.initial_backoff = absl::Milliseconds(10);
    options.max_backoff = absl::Milliseconds(100);
    options.evaluation_interval = absl::Milliseconds(10);
    options.clock = &clock_;
    return options;
  }

  // Starts a client; null (and a test failure) when it cannot start.
  std::unique_ptr<BreakerClient> StartClient(ClientOptions options) {
    absl::StatusOr<std::unique_ptr<BreakerClient>> client =
        client::StartGrpcClient(std::move(options));
    EXPECT_THAT(client, IsOk());
    if (!client.ok()) return nullptr;
    return *std::move(client);
  }

  // Waits until `client` applies breakerd's current policy, from the fleet.
  bool AwaitFleetPolicy(const BreakerClient& client) {
    const uint64_t version = GetPolicy().version();
    return WaitFor([&] {
      const std::shared_ptr<const PolicySnapshot> snapshot = client.policy();
      return snapshot->source == PolicySource::kFleet && snapshot->fleet_version == version;
    });
  }

  // Waits until breakerd has acknowledged everything `client` reported.
  static bool AwaitAllAcknowledged(const BreakerClient& client) {
    return WaitFor([&] {
      const ClientStats stats = client.stats();
      return stats.acknowledged == stats.reported && stats.buffered == 0;
    });
  }

  // Moves both clocks' time (breakerd's and the clients') on by `duration`, and lets breakerd
  // catch up when it runs.
  void AdvanceClock(absl::Duration duration) {
    if (server_ != nullptr) server_->fleet()->Sync();
    clock_.Advance(duration);
    if (server_ != nullptr) {
      server_->fleet()->Tick();
      server_->fleet()->Sync();
    }
  }

  // Calls a unary Admin rpc and waits for it (see breaker::testing::CallUnary).
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(
      void (v1::Admin::Stub::async::*method)(grpc::ClientContext*, const Request*, Response*,
                                             std::function<void(grpc::Status)>),
      const Request& request) {
    return CallUnary(*admin_, method, request);
  }

  v1::Policy GetPolicy() {
    absl::StatusOr<v1::Policy> policy =
        Call(&v1::Admin::Stub::async::GetPolicy, v1::GetPolicyRequest());
    EXPECT_THAT(policy, IsOk());
    return policy.value_or(v1::Policy());
  }

  absl::StatusOr<v1::Policy> BanBuilder(uint64_t builder) {
    v1::BanBuilderRequest request;
    request.set_builder_index(builder);
    request.set_reason("client_service_test");
    return Call(&v1::Admin::Stub::async::BanBuilder, request);
  }

  absl::StatusOr<v1::Policy> UnbanBuilder(uint64_t builder) {
    v1::UnbanBuilderRequest request;
    request.set_builder_index(builder);
    return Call(&v1::Admin::Stub::async::UnbanBuilder, request);
  }

  v1::Builder GetBuilder(uint64_t builder) {
    v1::GetBuilderRequest request;
    request.set_builder_index(builder);
    absl::StatusOr<v1::Builder> response = Call(&v1::Admin::Stub::async::GetBuilder, request);
    EXPECT_THAT(response, IsOk());
    return response.value_or(v1::Builder());
  }

  // The node as breakerd lists it, or an empty one (and a test failure) when it is not listed.
  v1::Node GetNode(const std::string& node_id) {
    absl::StatusOr<v1::ListNodesResponse> response =
        Call(&v1::Admin::Stub::async::ListNodes, v1::ListNodesRequest());
    EXPECT_THAT(response, IsOk());
    if (response.ok()) {
      for (const v1::Node& node : response->nodes()) {
        if (node.node_id() == node_id) return node;
      }
    }
    ADD_FAILURE() << node_id << " is not listed";
    return v1::Node();
  }

  const std::string dir_;
  const std::string config_path_;
  FakeClock clock_;
  std::unique_ptr<service::Server> server_;
  // "127.0.0.1:port" of the latest breakerd started.
  std::string address_;
  std::unique_ptr<v1::Admin::Stub> admin_;
};

// ---------------------------------------------------------------------------------------------
// The fleet policy

TEST_F(ClientServiceTest, ReadersSeeFleetPolicyVersionsOnlyGoForward) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::unique_ptr<BreakerClient> client = StartClient(ClientOptionsFor("bn-readers"));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(AwaitFleetPolicy(*client));
  const uint64_t initial = client->policy()->fleet_version;
  EXPECT_GT(initial, 0u);

  // Beacon node threads read the policy all the time while breakerd changes it.
  constexpr int kReaders = 8;
  constexpr uint64_t kFirstBuilder = 1000;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> regressions{0};
  std::atomic<uint64_t> inconsistent{0};
  std::atomic<uint64_t> reads{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < kReaders; ++i) {
    readers.emplace_back([&, i] {
      uint64_t last = 0;
      while (!done.load()) {
        const std::shared_ptr<const PolicySnapshot> snapshot = client->policy();
        if (snapshot->fleet_version < last) ++regressions;
        if (snapshot->source != PolicySource::kFleet ||
            snapshot->fleet_version != snapshot->policy.version) {
          ++inconsistent;
        }
        last = snapshot->fleet_version;
        // P2P, and one relay spelled two ways (each thread keeps its own normalization).
        (void)client->IsAllowed(kFirstBuilder + i, "");
        (void)client->IsAllowed(kFirstBuilder + i,
                                i % 2 == 0 ? "Relay.Example:18550" : "http://relay.example:18550/");
        ++reads;
      }
    });
  }

  constexpr int kChanges = 30;
  for (int i = 0; i < kChanges / 2; ++i) {
    EXPECT_THAT(BanBuilder(kFirstBuilder + i), IsOk());
    EXPECT_THAT(UnbanBuilder(kFirstBuilder + i), IsOk());
  }
  const uint64_t latest = GetPolicy().version();
  EXPECT_EQ(latest, initial + kChanges);
  EXPECT_TRUE(WaitFor([&] { return client->policy()->fleet_version == latest; }))
      << "the client holds version " << client->policy()->fleet_version << ", breakerd " << latest;
  done = true;
  for (std::thread& reader : readers) reader.join();

  EXPECT_EQ(regressions.load(), 0u);
  EXPECT_EQ(inconsistent.load(), 0u);
  EXPECT_GT(reads.load(), 0u);
  const std::shared_ptr<const PolicySnapshot> last = client->policy();
  EXPECT_EQ(last->source, PolicySource::kFleet);
  EXPECT_EQ(last->fleet_version, latest);
  EXPECT_EQ(client->stats().fleet_policy_version, latest);
  for (int i = 0; i < kChanges / 2; ++i) EXPECT_TRUE(client->IsAllowed(kFirstBuilder + i, ""));
}

// ---------------------------------------------------------------------------------------------
// Observations

TEST_F(ClientServiceTest, ReportedObservationsAreAcknowledgedAndTakeEffectFleetWide) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::unique_ptr<BreakerClient> first = StartClient(ClientOptionsFor("bn-1"));
  std::unique_ptr<BreakerClient> second = StartClient(ClientOptionsFor("bn-2"));
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(AwaitFleetPolicy(*first));
  ASSERT_TRUE(AwaitFleetPolicy(*second));
  EXPECT_TRUE(first->IsAllowed(5, ""));

  // Both nodes saw the same block of builder 5 go without its payload.
  EXPECT_TRUE(first->Report(kSlot, Missing(5, 1)).ok());
  EXPECT_TRUE(second->Report(kSlot, Missing(5, 1)).ok());

  for (BreakerClient* client : {first.get(), second.get()}) {
    EXPECT_TRUE(AwaitAllAcknowledged(*client));
    const ClientStats stats = client->stats();
    EXPECT_EQ(stats.reported, 1u);
    EXPECT_EQ(stats.acknowledged, 1u);
    EXPECT_EQ(stats.buffered, 0u);
    EXPECT_EQ(stats.refused, 0u);
    EXPECT_TRUE(stats.connected);
    EXPECT_FALSE(stats.fallback_active);
  }
  // One block root, one failure, however many nodes report it.
  EXPECT_EQ(GetBuilder(5).failed(), 1u);
  for (BreakerClient* client : {first.get(), second.get()}) {
    EXPECT_TRUE(WaitFor([&] { return !client->IsAllowed(5, ""); }));
    EXPECT_EQ(client->policy()->source, PolicySource::kFleet);
    EXPECT_EQ(client->policy()->fleet_version, GetPolicy().version());
  }
}

// ---------------------------------------------------------------------------------------------
// Subscribers

TEST_F(ClientServiceTest, SubscribersAreCalledOnALibraryThreadUntilUnsubscribed) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  // What the callbacks record; declared before the client, which calls them until it stops.
  struct Call {
    std::thread::id thread;
    std::shared_ptr<const PolicySnapshot> snapshot;
  };
  Mutex mu;
  std::vector<Call> calls;         // the recording subscriber's
  std::vector<uint64_t> sentinel;  // fleet versions the sentinel subscriber saw
  std::atomic<int> self_removing_calls{0};
  std::atomic<int> self_removing_id{0};
  std::unique_ptr<BreakerClient> client = StartClient(ClientOptionsFor("bn-subscriber"));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(AwaitFleetPolicy(*client));

  const int recording = client->Subscribe([&](std::shared_ptr<const PolicySnapshot> snapshot) {
    MutexLock lock(&mu);
    calls.push_back(Call{std::this_thread::get_id(), std::move(snapshot)});
  });
  // A subscriber that unsubscribes itself from its callback, on the library's thread, at the
  // first new version.
  const uint64_t initial = client->policy()->fleet_version;
  self_removing_id = client->Subscribe([&](std::shared_ptr<const PolicySnapshot> snapshot) {
    if (snapshot->fleet_version <= initial) return;
    ++self_removing_calls;
    client->Unsubscribe(self_removing_id.load());
  });

  absl::StatusOr<v1::Policy> banned = BanBuilder(7);
  ASSERT_THAT(banned, IsOk());
  EXPECT_TRUE(WaitFor([&] {
    MutexLock lock(&mu);
    return !calls.empty() && calls.back().snapshot->fleet_version == banned->version();
  }));
  EXPECT_TRUE(WaitFor([&] { return self_removing_calls.load() == 1; }));
  size_t calls_before_unsubscribe = 0;
  {
    MutexLock lock(&mu);
    for (const Call& call : calls) {
      EXPECT_NE(call.thread, std::this_thread::get_id());
      EXPECT_EQ(call.snapshot->source, PolicySource::kFleet);
    }
    EXPECT_FALSE(calls.back().snapshot->policy.IsAllowed(7, ""));
    calls_before_unsubscribe = calls.size();
  }

  client->Unsubscribe(recording);
  // A subscriber added after, to know when the next version has been delivered: subscribers
  // are called in turn with each version, so the others' turn for it has passed.
  client->Subscribe([&](std::shared_ptr<const PolicySnapshot> snapshot) {
    MutexLock lock(&mu);
    sentinel.push_back(snapshot->fleet_version);
  });
  absl::StatusOr<v1::Policy> banned_too = BanBuilder(8);
  ASSERT_THAT(banned_too, IsOk());
  EXPECT_TRUE(WaitFor([&] {
    MutexLock lock(&mu);
    return !sentinel.empty() && sentinel.back() == banned_too->version();
  }));
  {
    MutexLock lock(&mu);
    EXPECT_EQ(calls.size(), calls_before_unsubscribe);
  }
  EXPECT_EQ(self_removing_calls.load(), 1);
  client->Stop();
}

// ---------------------------------------------------------------------------------------------
// Losing breakerd

TEST_F(ClientServiceTest, RestartedServiceGetsEveryObservationOnce) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const int port = server_->port();
  // The client numbers its observations from its clock's Unix microseconds at start (so that
  // a restarted node's numbers continue above its last ones).
  const uint64_t first_sequence = static_cast<uint64_t>(absl::ToUnixMicros(clock_.Now()));
  std::unique_ptr<BreakerClient> client = StartClient(ClientOptionsFor("bn-restart"));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(AwaitFleetPolicy(*client));

  // Failures of builder 5 in distinct blocks: each counts once, so breakerd's count says
  // whether any was lost or applied twice.
  constexpr uint64_t kPerPhase = 100;
  uint64_t next_block = 0;
  for (uint64_t i = 0; i < kPerPhase; ++i)
    EXPECT_TRUE(client->Report(kSlot, Missing(5, next_block++)).ok());
  // The node keeps reporting while breakerd shuts down ...
  std::thread reporter([&client, first_block = next_block] {
    for (uint64_t i = 0; i < kPerPhase; ++i)
      EXPECT_TRUE(client->Report(kSlot, Missing(5, first_block + i)).ok());
  });
  next_block += kPerPhase;
  StopServer();
  reporter.join();
  // ... and while it is away.
  EXPECT_TRUE(WaitFor([&] { return !client->stats().connected; }));
  for (uint64_t i = 0; i < kPerPhase; ++i)
    EXPECT_TRUE(client->Report(kSlot, Missing(5, next_block++)).ok());
  EXPECT_GT(client->stats().buffered, 0u);

  ASSERT_NO_FATAL_FAILURE(StartServer(port));
  EXPECT_TRUE(AwaitAllAcknowledged(*client));
  const ClientStats stats = client->stats();
  EXPECT_EQ(stats.reported, 3 * kPerPhase);
  EXPECT_EQ(stats.acknowledged, stats.reported);
  EXPECT_EQ(stats.buffered, 0u);
  EXPECT_EQ(stats.refused, 0u);
  EXPECT_GE(stats.reconnects, 1u);
  EXPECT_TRUE(stats.connected);

  EXPECT_EQ(GetNode("bn-restart").last_sequence(), first_sequence + 3 * kPerPhase - 1);
  EXPECT_EQ(GetBuilder(5).failed(), 3 * kPerPhase);
}

// A node restarts with its clock set back, and numbers its observations from a lower start:
// breakerd hands it its last sequence number at the hello, and the node's observations are
// applied, not taken as replays: those reported before it reached breakerd, and after.
TEST_F(ClientServiceTest, ARestartWithTheClockSetBackLosesNoObservation) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const int port = server_->port();
  std::unique_ptr<BreakerClient> before = StartClient(ClientOptionsFor("bn-clock"));
  ASSERT_NE(before, nullptr);
  ASSERT_TRUE(AwaitFleetPolicy(*before));
  // Failures of builder 5 in distinct blocks: breakerd's count says how many were applied.
  uint64_t next_block = 0;
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(before->Report(kSlot, Missing(5, next_block++)).ok());
  ASSERT_TRUE(AwaitAllAcknowledged(*before));
  const uint64_t last = GetNode("bn-clock").last_sequence();
  before->Stop();
  before.reset();

  // The node's clock is 20 s behind now; breakerd's is not. The node reports while breakerd
  // is away, then once it is back. (Within the two slots an observation may be ahead of the
  // clock: further behind, the library would refuse kSlot as too far ahead.)
  FakeClock behind(clock_.Now() - absl::Seconds(20));
  ASSERT_LT(static_cast<uint64_t>(absl::ToUnixMicros(behind.Now())), last);
  StopServer();
  ClientOptions options = ClientOptionsFor("bn-clock");
  options.clock = &behind;
  std::unique_ptr<BreakerClient> after = StartClient(options);
  ASSERT_NE(after, nullptr);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(after->Report(kSlot, Missing(5, next_block++)).ok());
  ASSERT_NO_FATAL_FAILURE(StartServer(port));
  EXPECT_TRUE(AwaitAllAcknowledged(*after));
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(after->Report(kSlot, Missing(5, next_block++)).ok());
  EXPECT_TRUE(AwaitAllAcknowledged(*after));

  EXPECT_EQ(GetBuilder(5).failed(), 20u) << "observations of the restarted node were lost";
  EXPECT_EQ(GetNode("bn-clock").last_sequence(), last + 10);
  EXPECT_EQ(after->stats().refused, 0u);
  EXPECT_EQ(after->stats().acknowledged, 10u);
}

// breakerd is replaced by one on a new state directory whose version count happens to reach
// the very version the node holds, with other decisions: the node must still get them.
TEST_F(ClientServiceTest, ANewStateDirectorysPolicyReplacesAnEqualVersion) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const int port = server_->port();
  ASSERT_THAT(BanBuilder(5), IsOk());
  std::unique_ptr<BreakerClient> client = StartClient(ClientOptionsFor("bn-moved"));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(AwaitFleetPolicy(*client));
  const uint64_t held = client->policy()->fleet_version;
  EXPECT_FALSE(client->IsAllowed(5, ""));

  StopServer();
  ASSERT_TRUE(WaitFor([&] { return !client->stats().connected; }));
  ASSERT_NO_FATAL_FAILURE(StartServer(port, "new-state"));
  ASSERT_THAT(BanBuilder(7), IsOk());
  ASSERT_EQ(GetPolicy().version(), held) << "the test needs the same version number";

  EXPECT_TRUE(WaitFor([&] { return client->IsAllowed(5, "") && !client->IsAllowed(7, ""); }))
      << "the node kept the old breakerd's decisions";
  EXPECT_EQ(client->policy()->source, PolicySource::kFleet);
}

TEST_F(ClientServiceTest, PastTheStalenessLimitTheLocalEngineAddsItsBans) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const int port = server_->port();
  constexpr absl::Duration kStalenessLimit = absl::Minutes(1);
  ClientOptions options = ClientOptionsFor("bn-stale");
  options.staleness_limit = kStalenessLimit;
  std::unique_ptr<BreakerClient> client = StartClient(options);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(AwaitFleetPolicy(*client));
  const uint64_t fleet_version = client->policy()->fleet_version;
  // A quiet stream, for longer than the limit: nothing changed, nothing was sent.
  AdvanceClock(2 * kStalenessLimit);
  EXPECT_EQ(client->policy()->source, PolicySource::kFleet);

  StopServer();
  ASSERT_TRUE(WaitFor([&] { return !client->stats().connected; }));
  // Three untrusted builders fail while breakerd is away: enough for TRUSTED_ONLY.
  const core::Slot now = core::SlotAt(clock_.Now(), Chain());
  for (core::BuilderIndex builder : {11, 12, 13})
    EXPECT_TRUE(client->Report(now, Missing(builder, builder)).ok());

  // Past the limit, counted from the disconnection (client/policy_in_force_test.cc checks the
  // counting itself, on a fake clock: from the disconnection, not from the last message, and
  // exactly at the limit).
  AdvanceClock(kStalenessLimit + absl::Seconds(1));
  ASSERT_TRUE(WaitFor([&] {
    const std::shared_ptr<const PolicySnapshot> snapshot = client->policy();
    return snapshot->source == PolicySource::kFleetAndLocal &&
           snapshot->policy.mode == core::Mode::kTrustedOnly;
  })) << PolicySourceName(client->policy()->source)
      << " " << core::ModeName(client->policy()->policy.mode);
  std::shared_ptr<const PolicySnapshot> stale = client->policy();
  EXPECT_EQ(stale->fleet_version, fleet_version);
  EXPECT_EQ(stale->policy.mode, core::Mode::kTrustedOnly);
  EXPECT_TRUE(absl::StartsWith(stale->policy.mode_reason, "local: ")) << stale->policy.mode_reason;
  for (core::BuilderIndex builder : {11, 12, 13}) EXPECT_FALSE(client->IsAllowed(builder, ""));
  EXPECT_FALSE(client->IsAllowed(99, ""));  // untrusted, over P2P
  EXPECT_TRUE(client->IsAllowed(core::kSelfBuild, ""));
  EXPECT_EQ(client->stats().source, PolicySource::kFleetAndLocal);
  EXPECT_TRUE(client->stats().fallback_active);

  // breakerd is back (on its state): the fleet policy takes over again, and the failures,
  // never acknowledged, reach it.
  ASSERT_NO_FATAL_FAILURE(StartServer(port));
  EXPECT_TRUE(WaitFor([&] { return client->policy()->source == PolicySource::kFleet; }));
  EXPECT_FALSE(client->stats().fallback_active);
  EXPECT_TRUE(AwaitAllAcknowledged(*client));
  for (core::BuilderIndex builder : {11, 12, 13}) EXPECT_EQ(GetBuilder(builder).failed(), 1u);
  EXPECT_TRUE(AwaitFleetPolicy(*client));
  EXPECT_EQ(client->policy()->policy.mode, core::Mode::kTrustedOnly);
  EXPECT_FALSE(absl::StartsWith(client->policy()->policy.mode_reason, "local: "));
}

// A node that saw a builder fail while breakerd was away must not allow it, not even for a
// moment, when breakerd comes back without knowing of that failure yet.
TEST_F(ClientServiceTest, AReconnectingNodeKeepsItsOwnBansUntilTheFleetPolicyHasThem) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const int port = server_->port();
  constexpr absl::Duration kStalenessLimit = absl::Minutes(1);
  ClientOptions options = ClientOptionsFor("bn-back");
  options.staleness_limit = kStalenessLimit;
  std::unique_ptr<BreakerClient> client = StartClient(options);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(AwaitFleetPolicy(*client));

  StopServer();
  ASSERT_TRUE(WaitFor([&] { return !client->stats().connected; }));
  constexpr core::BuilderIndex kFailed = 21;
  EXPECT_TRUE(client->Report(core::SlotAt(clock_.Now(), Chain()), Missing(kFailed, 1)).ok());
  AdvanceClock(2 * kStalenessLimit);
  ASSERT_TRUE(WaitFor([&] {
    return client->policy()->source == PolicySource::kFleetAndLocal &&
           !client->IsAllowed(kFailed, "");
  }));

  // Every policy put in force from now on.
  Mutex mu;
  int published = 0;
  std::vector<std::string> allowing;
  client->Subscribe([&](std::shared_ptr<const PolicySnapshot> snapshot) {
    MutexLock lock(&mu);
    ++published;
    if (snapshot->policy.IsAllowed(kFailed, "")) {
      allowing.push_back(
          absl::StrCat(PolicySourceName(snapshot->source), " version ", snapshot->fleet_version));
    }
  });
  ASSERT_NO_FATAL_FAILURE(StartServer(port));
  EXPECT_TRUE(AwaitAllAcknowledged(*client));
  EXPECT_TRUE(AwaitFleetPolicy(*client));
  EXPECT_EQ(client->policy()->source, PolicySource::kFleet);
  EXPECT_FALSE(client->IsAllowed(kFailed, ""));
  // Subscribers hear of a policy on the library's thread, after it is in force.
  EXPECT_TRUE(WaitFor([&] {
    MutexLock lock(&mu);
    return published > 0;
  }));
  MutexLock lock(&mu);
  EXPECT_THAT(allowing, ::testing::IsEmpty()) << "policies allowing builder " << kFailed;
}

TEST_F(ClientServiceTest, WithoutAnyServiceTheLocalEngineDecides) {
  ClientOptions options = ClientOptionsFor("bn-alone");
  options.addresses = {"127.0.0.1:1"};  // nothing listens there
  std::unique_ptr<BreakerClient> client = StartClient(options);
  ASSERT_NE(client, nullptr);
  // The local engine's defaults for mainnet: nothing banned, every builder allowed.
  std::shared_ptr<const PolicySnapshot> snapshot = client->policy();
  EXPECT_EQ(snapshot->source, PolicySource::kLocal);
  EXPECT_EQ(snapshot->fleet_version, 0u);
  EXPECT_EQ(snapshot->policy.mode, core::Mode::kAllBuilders);
  EXPECT_TRUE(client->IsAllowed(5, ""));
  EXPECT_TRUE(client->IsAllowed(5, "Relay.Example:18550"));
  EXPECT_TRUE(client->IsAllowed(core::kSelfBuild, ""));
  EXPECT_FALSE(client->IsAllowed(5, "ftp://relay.example"));  // nobody's relay

  // It keeps trying, and stays local.
  EXPECT_TRUE(WaitFor([&] { return client->stats().reconnects >= 2; }));
  const ClientStats stats = client->stats();
  EXPECT_FALSE(stats.connected);
  EXPECT_EQ(stats.source, PolicySource::kLocal);
  EXPECT_EQ(stats.fleet_policy_version, 0u);
  EXPECT_EQ(client->policy()->source, PolicySource::kLocal);
}

TEST_F(ClientServiceTest, WithoutAnyServiceTheNodesOwnFailuresBanLocally) {
  ClientOptions options = ClientOptionsFor("bn-alone");
  options.addresses = {"127.0.0.1:1"};
  core::Config config;
  config.chain = Chain();
  options.fallback_config = config;
  std::unique_ptr<BreakerClient> client = StartClient(options);
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->IsAllowed(5, ""));
  // A failure in the slot the clock just reached, reported before the library's own
  // evaluation has caught up with the clock.
  clock_.Advance(absl::Minutes(2));
  EXPECT_TRUE(client->Report(core::SlotAt(clock_.Now(), Chain()), Missing(5, 1)).ok());
  EXPECT_TRUE(WaitFor([&] { return !client->IsAllowed(5, ""); }));
  EXPECT_EQ(client->policy()->source, PolicySource::kLocal);
  EXPECT_EQ(client->policy()->fleet_version, 0u);
  EXPECT_TRUE(client->IsAllowed(6, ""));
}

TEST_F(ClientServiceTest, FullBufferDropsBidsBeforeFailures) {
  ClientOptions options = ClientOptionsFor("bn-full");
  options.addresses = {"127.0.0.1:1"};
  options.max_buffered_observations = 10;
  std::unique_ptr<BreakerClient> client = StartClient(options);
  ASSERT_NE(client, nullptr);
  for (uint64_t i = 0; i < 8; ++i) EXPECT_TRUE(client->Report(kSlot, Missing(100 + i, i)).ok());
  for (uint64_t i = 0; i < 20; ++i)
    EXPECT_TRUE(client->Report(kSlot, core::BidSeen{200 + i, "", ""}).ok());
  const ClientStats stats = client->stats();
  EXPECT_EQ(stats.reported, 28u);
  EXPECT_EQ(stats.buffered, 10u);
  EXPECT_EQ(stats.dropped_bids, 18u);
  EXPECT_EQ(stats.dropped_other, 0u);
  EXPECT_EQ(stats.dropped_failures, 0u);
  EXPECT_EQ(stats.acknowledged, 0u);
}

// ---------------------------------------------------------------------------------------------
// Never blocking

TEST_F(ClientServiceTest, ReportAndIsAllowedDoNotWaitForAStuckService) {
  SilentListener listener;
  ClientOptions options = ClientOptionsFor("bn-stuck");
  options.addresses = {absl::StrCat("127.0.0.1:", listener.port())};
  std::unique_ptr<BreakerClient> client = StartClient(options);
  ASSERT_NE(client, nullptr);
  // The client's stream is stuck in the handshake.
  ASSERT_TRUE(WaitFor([&] { return listener.accepted() >= 1; }));

  constexpr int kCalls = 10'000;
  int allowed = 0;
  {
    Watchdog watchdog("Report and IsAllowed against a stuck breakerd", absl::Seconds(30));
    for (int i = 0; i < kCalls; ++i) {
      EXPECT_TRUE(
          client->Report(kSlot, core::BidSeen{static_cast<core::BuilderIndex>(i), "", ""}).ok());
    }
    for (int i = 0; i < kCalls; ++i) {
      allowed += client->IsAllowed(static_cast<core::BuilderIndex>(i),
                                   i % 2 == 0 ? "" : "relay.example:18550");
    }
    watchdog.Done();
  }
  EXPECT_EQ(allowed, kCalls);
  const ClientStats stats = client->stats();
  EXPECT_FALSE(stats.connected);
  EXPECT_EQ(stats.reported, static_cast<uint64_t>(kCalls));
  EXPECT_EQ(stats.buffered, static_cast<uint64_t>(kCalls));
  EXPECT_EQ(stats.acknowledged, 0u);
  EXPECT_EQ(client->policy()->source, PolicySource::kLocal);

  // Stopping does not wait for the stuck stream either.
  Watchdog watchdog("Stop against a stuck breakerd", absl::Seconds(30));
  client->Stop();
  watchdog.Done();
}

}  // namespace
}  // namespace breaker
