// The client library's stream against a fake breakerd (a gRPC service of the test's own, on a
// loopback port): how it numbers its observations around the hello's NodeState, and without
// one, as an older breakerd answers.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "client/client.h"
#include "common/fake_clock.h"
#include "common/mutex.h"
#include "common/replica_trailer.h"
#include "core/chain_time.h"
#include "core/input_bounds.h"
#include "core/observation.h"
#include "gmock/gmock.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::client {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::testing::FakeClock;
using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::breaker::testing::WaitFor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A breakerd of the test's own: it reads the hello, waits until the test lets it answer, then
// sends a NodeState (unless it plays a breakerd older than that message) and a configuration,
// and records the sequence numbers of every observation it reads.
class FakeBreaker final : public v1::Breaker::Service {
 public:
  // `last_sequence`: what its NodeState says; nullopt: it sends none.
  explicit FakeBreaker(std::optional<uint64_t> last_sequence) : last_sequence_(last_sequence) {}

  grpc::Status Connect(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::ServerMessage, v1::NodeMessage>* stream) override {
    v1::NodeMessage message;
    if (!stream->Read(&message) || !message.has_hello()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "hello first");
    }
    {
      MutexLock lock(&mu_);
      ++hellos_;
      changed_.SignalAll();
      while (!answering_ && !context->IsCancelled()) {
        changed_.WaitFor(&mu_, absl::Milliseconds(10));
      }
    }
    if (last_sequence_.has_value()) {
      v1::ServerMessage state;
      state.mutable_node_state()->set_last_sequence(*last_sequence_);
      if (!stream->Write(state)) return grpc::Status::OK;
    }
    v1::ServerMessage config;
    config.mutable_config();  // the defaults
    if (!stream->Write(config)) return grpc::Status::OK;
    while (stream->Read(&message)) {
      MutexLock lock(&mu_);
      for (const v1::Observation& observation : message.observations().observations()) {
        sequences_.push_back(observation.sequence());
      }
    }
    return grpc::Status::OK;
  }

  // Lets every hello, now and later, be answered.
  void Answer() {
    MutexLock lock(&mu_);
    answering_ = true;
    changed_.SignalAll();
  }

  int hellos() const {
    MutexLock lock(&mu_);
    return hellos_;
  }

  std::vector<uint64_t> sequences() const {
    MutexLock lock(&mu_);
    return sequences_;
  }

 private:
  const std::optional<uint64_t> last_sequence_;
  mutable Mutex mu_;
  CondVar changed_;
  bool answering_ = false;
  int hellos_ = 0;
  std::vector<uint64_t> sequences_;
};

// A standby replica: refuses every stream with UNAVAILABLE, naming the leader in the trailer.
class FakeStandby final : public v1::Breaker::Service {
 public:
  grpc::Status Connect(grpc::ServerContext* context,
                       grpc::ServerReaderWriter<v1::ServerMessage, v1::NodeMessage>*) override {
    context->AddTrailingMetadata(kLeaderTrailer, "leader.example:50051");
    MutexLock lock(&mu_);
    ++refusals_;
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "a standby; the leader is elsewhere");
  }

  int refusals() const {
    MutexLock lock(&mu_);
    return refusals_;
  }

 private:
  mutable Mutex mu_;
  int refusals_ = 0;
};

TEST(ReplicaTest, WhileAStandbyNamesALeaderTheClientComesBackAtTheFirstBackoffStep) {
  FakeStandby standby;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&standby);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  ClientOptions options;
  // The standby, and the leader that went away.
  options.addresses = {absl::StrCat("127.0.0.1:", port),
                       absl::StrCat("127.0.0.1:", ::breaker::testing::ClosedPort())};
  options.node_id = "bn-1";
  // Growing, the backoff would wait 20 ms, then 20 s, then hours: a fifth round comes only if
  // each round's wait is the first step.
  options.initial_backoff = absl::Milliseconds(20);
  options.backoff_multiplier = 1000;
  options.max_backoff = absl::Hours(10);
  options.clock = &clock;
  absl::StatusOr<std::unique_ptr<BreakerClient>> client = StartGrpcClient(std::move(options));
  ASSERT_THAT(client, IsOk());
  EXPECT_TRUE(WaitFor([&] { return standby.refusals() >= 5; }, absl::Seconds(60)));
  (*client)->Stop();
  server->Shutdown();
}

class NodeStateTest : public ::testing::Test {
 protected:
  NodeStateTest()
      : clock_(absl::FromUnixSeconds(1'700'000'000)),
        first_sequence_(static_cast<uint64_t>(absl::ToUnixMicros(clock_.Now()))) {}

  void TearDown() override {
    if (client_ != nullptr) client_->Stop();
    if (server_ != nullptr) server_->Shutdown();
  }

  // Serves `breaker` on a loopback port and starts a client of `unanswered` addresses, then
  // of it.
  void Start(FakeBreaker& breaker, std::vector<std::string> unanswered = {},
             absl::Duration backoff = absl::Milliseconds(10)) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&breaker);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    ClientOptions options;
    options.addresses = std::move(unanswered);
    options.addresses.push_back(absl::StrCat("127.0.0.1:", port));
    options.node_id = "bn-1";
    options.initial_backoff = backoff;
    options.max_backoff = std::max(backoff, absl::Milliseconds(100));
    options.evaluation_interval = absl::Milliseconds(10);
    options.clock = &clock_;
    absl::StatusOr<std::unique_ptr<BreakerClient>> client = StartGrpcClient(std::move(options));
    ASSERT_THAT(client, IsOk());
    client_ = *std::move(client);
  }

  // The fake breakerd, owned here: it must outlive the server that runs its calls, which
  // TearDown shuts down after the test's own locals are gone.
  FakeBreaker& NewBreaker(std::optional<uint64_t> last_sequence) {
    breaker_ = std::make_unique<FakeBreaker>(last_sequence);
    return *breaker_;
  }

  void Report(core::BuilderIndex builder) {
    const core::Slot slot =
        core::SlotAt(clock_.Now(), core::ChainSpecForNetwork("mainnet").value());
    EXPECT_TRUE(client_->Report(slot, core::BidSeen{builder, "", ""}).ok());
  }

  FakeClock clock_;
  // The client numbers its observations from its clock's Unix microseconds at start.
  const uint64_t first_sequence_;
  std::unique_ptr<FakeBreaker> breaker_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<BreakerClient> client_;
};

// The node restarted with its clock set back: breakerd has handled numbers above where it
// starts. What it reports before the NodeState arrives waits for it, and goes renumbered.
TEST_F(NodeStateTest, AnAddressThatDoesNotAnswerSendsTheClientToTheNextAtOnce) {
  // The first address refuses connections (a replica down); the backoff is longer than any
  // test: the client gets to the second only if it does not wait between addresses.
  FakeBreaker& breaker = NewBreaker(/*last_sequence=*/std::nullopt);
  breaker.Answer();
  Start(breaker, {absl::StrCat("127.0.0.1:", ::breaker::testing::ClosedPort())}, absl::Hours(1));
  EXPECT_TRUE(WaitFor([&] { return breaker.hellos() == 1; }, absl::Seconds(60)));
}

TEST_F(NodeStateTest, ObservationsNotSentAreRenumberedAboveBreakerdsLast) {
  const uint64_t last = first_sequence_ + 1000;
  FakeBreaker& breaker = NewBreaker(last);
  ASSERT_NO_FATAL_FAILURE(Start(breaker));
  ASSERT_TRUE(WaitFor([&] { return breaker.hellos() == 1; }));
  for (core::BuilderIndex builder = 1; builder <= 3; ++builder) Report(builder);
  breaker.Answer();
  ASSERT_TRUE(WaitFor([&] { return breaker.sequences().size() == 3; }))
      << breaker.sequences().size();
  Report(4);
  ASSERT_TRUE(WaitFor([&] { return breaker.sequences().size() == 4; }));
  EXPECT_THAT(breaker.sequences(), ElementsAre(last + 1, last + 2, last + 3, last + 4));
}

// What breakerd would refuse for its shape is refused at the call, in breakerd's words, queues
// nothing, and is kept as the last refusal; the window is the client's clock's.
TEST_F(NodeStateTest, ReportRefusesWhatBreakerdWouldRefuse) {
  FakeBreaker& breaker = NewBreaker(/*last_sequence=*/std::nullopt);
  ASSERT_NO_FATAL_FAILURE(Start(breaker));
  const core::Slot now = core::SlotAt(clock_.Now(), core::ChainSpecForNetwork("mainnet").value());
  EXPECT_THAT(
      client_->Report(now - 65, core::BlocksSeen{}),
      StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("older than the amendment window")));
  EXPECT_THAT(client_->Report(now + 3, core::BlocksSeen{}),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("max_future_slots = 2")));
  EXPECT_THAT(client_->Report(now, core::BidSeen{1, "ftp://x", ""}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("relay identifier \"ftp://x\" has unknown scheme")));
  EXPECT_THAT(client_->Report(now, core::BidSeen{1, "", std::string(47, 'k')}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bid_seen.builder_pubkey is 47 bytes")));
  EXPECT_THAT(client_->stats().last_refusal, HasSubstr("bid_seen.builder_pubkey"));
  EXPECT_EQ(client_->stats().reported, 0u);
  // The edges of the window are inside it.
  EXPECT_THAT(client_->Report(now - 64, core::BlocksSeen{}), IsOk());
  EXPECT_THAT(client_->Report(now + 2, core::BlocksSeen{}), IsOk());
  EXPECT_EQ(client_->stats().reported, 2u);
}

TEST_F(NodeStateTest, NumbersAboveBreakerdsLastStay) {
  FakeBreaker& breaker = NewBreaker(first_sequence_ - 1);
  ASSERT_NO_FATAL_FAILURE(Start(breaker));
  ASSERT_TRUE(WaitFor([&] { return breaker.hellos() == 1; }));
  Report(1);
  Report(2);
  breaker.Answer();
  ASSERT_TRUE(WaitFor([&] { return breaker.sequences().size() == 2; }));
  EXPECT_THAT(breaker.sequences(), ElementsAre(first_sequence_, first_sequence_ + 1));
}

// breakerd has handled the node's last number: it would refuse every observation. The client
// says so in its stats and keeps them, unsent, under their own numbers (not renumbered past
// the last), for after the operator's reset.
TEST_F(NodeStateTest, AtTheLastSequenceNumberObservationsAreHeldBack) {
  FakeBreaker& breaker = NewBreaker(core::bounds::kMaxSequence);
  ASSERT_NO_FATAL_FAILURE(Start(breaker));
  ASSERT_TRUE(WaitFor([&] { return breaker.hellos() == 1; }));
  Report(1);
  EXPECT_FALSE(client_->stats().sequence_exhausted);
  breaker.Answer();
  ASSERT_TRUE(WaitFor([&] { return client_->stats().sequence_exhausted; }));
  Report(2);
  ASSERT_TRUE(WaitFor([&] { return client_->stats().connected; }));
  EXPECT_THAT(breaker.sequences(), ElementsAre());
  EXPECT_EQ(client_->stats().buffered, 2u);
}

// A breakerd older than NodeState answers the hello with the configuration: the client sends
// on as before, under its own numbers.
TEST_F(NodeStateTest, WithoutANodeStateTheClientSendsUnderItsOwnNumbers) {
  FakeBreaker& breaker = NewBreaker(std::nullopt);
  ASSERT_NO_FATAL_FAILURE(Start(breaker));
  ASSERT_TRUE(WaitFor([&] { return breaker.hellos() == 1; }));
  Report(1);
  Report(2);
  breaker.Answer();
  ASSERT_TRUE(WaitFor([&] { return breaker.sequences().size() == 2; }));
  Report(3);
  ASSERT_TRUE(WaitFor([&] { return breaker.sequences().size() == 3; }));
  EXPECT_THAT(breaker.sequences(),
              ElementsAre(first_sequence_, first_sequence_ + 1, first_sequence_ + 2));
}

// The chain the library says it follows is the one it chose: the fallback configuration's over
// its network's built-in one, else the network's.
TEST(ChainTest, TheFallbackConfigurationsChainElseTheNetworks) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  ClientOptions options;
  options.addresses = {absl::StrCat("127.0.0.1:", ::breaker::testing::ClosedPort())};
  options.node_id = "bn-1";
  options.network = "hoodi";
  options.clock = &clock;
  absl::StatusOr<std::unique_ptr<BreakerClient>> hoodi = StartGrpcClient(options);
  ASSERT_THAT(hoodi, IsOk());
  absl::StatusOr<core::ChainSpec> known = core::ChainSpecForNetwork("hoodi");
  ASSERT_THAT(known, IsOk());
  EXPECT_EQ((*hoodi)->chain(), *known);
  (*hoodi)->Stop();

  core::Config fallback;
  fallback.chain.network = "devnet";
  fallback.chain.genesis_time_unix = 1'699'999'000;
  fallback.chain.seconds_per_slot = 2;
  fallback.chain.slots_per_epoch = 8;
  options.network = "devnet";
  options.fallback_config = fallback;
  absl::StatusOr<std::unique_ptr<BreakerClient>> devnet = StartGrpcClient(options);
  ASSERT_THAT(devnet, IsOk());
  EXPECT_EQ((*devnet)->chain(), fallback.chain);
  (*devnet)->Stop();
}

}  // namespace
}  // namespace breaker::client
