// The warmer against the fake beacon node and real upstream pools towards relays on loopback,
// driven round by round with the fake clock.

#include "sidecar/builder/proposal_warmer.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/fake_client.h"
#include "common/fake_clock.h"
#include "core/chain_time.h"
#include "core/policy.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "sidecar/ssz/test_blocks.h"
#include "tests/support/fake_beacon_node.h"
#include "tests/support/test_util.h"

namespace breaker::sidecar {
namespace {

using testing::FakeBeaconNode;
using testing::WaitFor;

constexpr char kStatus[] = "/eth/v1/builder/status";
constexpr char kValidators[] = "/eth/v1/beacon/states/head/validators";

std::string Key(int n) { return absl::StrFormat("0x%096x", n); }

std::string JsonRegistration(const std::string& pubkey) {
  return absl::StrCat(R"({"message":{"fee_recipient":"0x)", std::string(40, 'f'),
                      R"(","gas_limit":"30000000","timestamp":"1700000000","pubkey":")", pubkey,
                      R"("},"signature":"0x)", std::string(192, 'e'), R"("})");
}

std::string SszRegistration(const std::string& pubkey) { return ssz::RegistrationSsz(pubkey); }

std::string DutiesPath(core::Epoch epoch) {
  return absl::StrCat("/eth/v1/validator/duties/proposer/", epoch);
}

core::ChainSpec TestChain() {
  core::ChainSpec chain;
  chain.network = "test";
  chain.genesis_time_unix = 1700000000;
  chain.seconds_per_slot = 12;
  chain.slots_per_epoch = 8;
  return chain;
}

// A relay on loopback that counts the status requests it answers.
class CountingRelay {
 public:
  CountingRelay() {
    server_.Get(kStatus, [this](const httplib::Request&, httplib::Response& response) {
      ++statuses_;
      response.status = 200;
    });
    server_.Get("/eth/v1/builder/header/.*",
                [](const httplib::Request&, httplib::Response& r) { r.status = 204; });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // A stop() before the server runs would be lost, and the destructor's join would hang.
    while (port_ > 0 && !server_.is_running()) std::this_thread::yield();
  }
  ~CountingRelay() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }
  int statuses() const { return statuses_; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> statuses_{0};
};

class ProposalWarmerTest : public ::testing::Test {
 protected:
  static constexpr core::Epoch kEpoch = 10;

  ProposalWarmerTest()
      : chain_(TestChain()),
        node_(chain_),
        clock_(core::StartOf(core::FirstSlotOf(kEpoch, chain_), chain_)) {
    for (int i = 0; i < 2; ++i) {
      relays_.push_back(std::make_unique<CountingRelay>());
      UpstreamPoolOptions options;
      options.scheme_host_port = relays_.back()->url();
      options.name = relays_.back()->url();
      absl::StatusOr<std::unique_ptr<UpstreamPool>> pool = UpstreamPool::Create(options, clock_);
      EXPECT_TRUE(pool.ok()) << pool.status();
      pools_.push_back(*std::move(pool));
    }
  }

  std::unique_ptr<ProposalWarmer> MakeWarmer(size_t max_keys = 10000) {
    ProposalWarmerOptions options;
    options.base = node_.url();
    options.chain = chain_;
    options.max_keys = max_keys;
    auto warmer = std::make_unique<ProposalWarmer>(options, clock_, client_);
    std::vector<WarmTarget> targets;
    for (size_t i = 0; i < pools_.size(); ++i) {
      targets.push_back(
          WarmTarget{UpstreamIdentity{relays_[i]->url(), false}, pools_[i].get(), kStatus});
    }
    warmer->SetTargets(std::move(targets));
    return warmer;
  }

  // Slot `slot` of the test's epoch, or of one after it.
  absl::Time At(core::Slot slot, absl::Duration into = absl::ZeroDuration()) {
    return core::StartOf(slot, chain_) + into;
  }

  // The node's validator `n` (index 100 + n) proposes at `slot`.
  FakeBeaconNode::ProposerDuty Duty(int n, core::Slot slot) {
    return FakeBeaconNode::ProposerDuty{slot, Key(n), static_cast<uint64_t>(100 + n)};
  }

  void BanRelay(size_t relay) {
    core::Policy policy;
    policy.version = 1;
    policy.banned_relays[relays_[relay]->url()] =
        core::Ban{core::BanKind::kOperator, 0, true, "operator: test"};
    client_.SetPolicy(std::move(policy), client::PolicySource::kFleet);
  }

  const core::ChainSpec chain_;
  FakeBeaconNode node_;
  breaker::testing::FakeClock clock_;
  client::FakeClient client_;
  std::vector<std::unique_ptr<CountingRelay>> relays_;
  std::vector<std::unique_ptr<UpstreamPool>> pools_;
};

TEST_F(ProposalWarmerTest, LearnsKeysFromJsonAndSszRegistrations) {
  std::unique_ptr<ProposalWarmer> warmer = MakeWarmer();
  // Two keys and an entry without a valid pubkey; the same key twice in upper case.
  warmer->OnRegistration(
      absl::StrCat("[", JsonRegistration(Key(1)), ",", JsonRegistration("0x1234"), ",",
                   JsonRegistration(absl::StrCat("0X", std::string(96, 'A'))), ",",
                   JsonRegistration(Key(2)), "]"),
      "application/json");
  warmer->OnRegistration(SszRegistration(Key(3)) + SszRegistration(Key(1)),
                         "application/octet-stream");
  // Not a list of 180-byte registrations; not an array.
  warmer->OnRegistration(SszRegistration(Key(4)) + "x", "application/octet-stream");
  warmer->OnRegistration(R"({"message":{}})", "application/json");
  EXPECT_EQ(warmer->stats().keys_known, 0u) << "read on the warmer's round, not the request's";
  warmer->Tick();
  const ProposalWarmerStats stats = warmer->stats();
  EXPECT_EQ(stats.keys_known, 4u);  // 1, 2, 3 and 0xaaaa...
  EXPECT_EQ(stats.invalid_registrations, 3u);
  EXPECT_EQ(stats.keys_indexed, 0u);
}

TEST_F(ProposalWarmerTest, ReadsABodySentThroughEveryUpstreamOnce) {
  std::unique_ptr<ProposalWarmer> warmer = MakeWarmer();
  const std::string body =
      absl::StrCat("[", JsonRegistration(Key(1)), ",", JsonRegistration("0x12"), "]");
  warmer->OnRegistration(body, "application/json");
  warmer->OnRegistration(body, "application/json");
  warmer->Tick();
  warmer->OnRegistration(body, "application/json");
  warmer->Tick();
  EXPECT_EQ(warmer->stats().invalid_registrations, 1u);
  warmer->OnRegistration(absl::StrCat("[", JsonRegistration("0x12"), "]"), "application/json");
  warmer->Tick();
  EXPECT_EQ(warmer->stats().invalid_registrations, 2u);
  EXPECT_EQ(warmer->stats().keys_known, 1u);
}

TEST_F(ProposalWarmerTest, KeepsTheMostRecentlyRegisteredKeysAtMost) {
  std::unique_ptr<ProposalWarmer> warmer = MakeWarmer(/*max_keys=*/2);
  node_.AddValidator(Key(1), 101);
  node_.AddValidator(Key(2), 102);
  node_.AddValidator(Key(3), 103);
  warmer->OnRegistration(
      absl::StrCat("[", JsonRegistration(Key(1)), ",", JsonRegistration(Key(2)), ",",
                   JsonRegistration(Key(1)), ",", JsonRegistration(Key(3)), "]"),
      "application/json");
  node_.SetProposerDuties(kEpoch, {Duty(1, 82), Duty(2, 83), Duty(3, 84)});
  warmer->Tick();
  EXPECT_EQ(warmer->stats().keys_known, 2u);
  // Key 2 was the least recently registered: dropped, its proposal not the node's any more.
  EXPECT_EQ(warmer->stats().proposals_scheduled, 2u);
}

TEST_F(ProposalWarmerTest, AsksForUnknownKeysOnceAnEpoch) {
  std::unique_ptr<ProposalWarmer> warmer = MakeWarmer();
  node_.AddValidator(Key(1), 101);
  warmer->OnRegistration(
      absl::StrCat("[", JsonRegistration(Key(1)), ",", JsonRegistration(Key(2)), "]"),
      "application/json");
  warmer->Tick();
  // Two keys, one found: the ids as repeated keys, then comma-joined, in case the node reads
  // only that form.
  EXPECT_EQ(node_.requests(kValidators), 2);
  EXPECT_EQ(warmer->stats().keys_indexed, 1u);
  clock_.Advance(absl::Seconds(30));
  warmer->Tick();
  EXPECT_EQ(node_.requests(kValidators), 2) << "key 2 was asked about in this epoch already";

  // Deposited since: found at the next epoch, in one read of one key.
  node_.AddValidator(Key(2), 102);
  clock_.Set(At(core::FirstSlotOf(kEpoch + 1, chain_)));
  warmer->Tick();
  EXPECT_EQ(node_.requests(kValidators), 3);
  EXPECT_EQ(warmer->stats().keys_indexed, 2u);
  clock_.Set(At(core::FirstSlotOf(kEpoch + 2, chain_)));
  warmer->Tick();
  EXPECT_EQ(node_.requests(kValidators), 3) << "every key has its index";
}

TEST_F(ProposalWarmerTest, ReadsTheDutiesOfThisEpochAndTheNext) {
  std::unique_ptr<ProposalWarmer> warmer = MakeWarmer();
  node_.AddValidator(Key(1), 101);
  // Another validator's duty, with the same index but another key, is not the node's.
  node_.SetProposerDuties(
      kEpoch, {Duty(1, 83), Duty(7, 84), FakeBeaconNode::ProposerDuty{85, Key(9), 101}});
  node_.SetProposerDuties(kEpoch + 1, {Duty(1, 90)});
  warmer->Tick();
  EXPECT_EQ(node_.requests(DutiesPath(kEpoch)), 0) << "no key yet: nothing to read";
  warmer->OnRegistration(absl::StrCat("[", JsonRegistration(Key(1)), "]"), "application/json");
  warmer->Tick();
  EXPECT_EQ(node_.requests(DutiesPath(kEpoch)), 1);
  EXPECT_EQ(node_.requests(DutiesPath(kEpoch + 1)), 1);
  EXPECT_EQ(warmer->stats().proposals_scheduled, 2u);
  // Nothing new within the epoch: not read again.
  clock_.Advance(absl::Seconds(12));
  warmer->Tick();
  EXPECT_EQ(node_.requests(DutiesPath(kEpoch)), 1);
  EXPECT_EQ(warmer->stats().proposals_scheduled, 2u);
}

TEST_F(ProposalWarmerTest, WarmsTheAllowedUpstreamsOneSlotBeforeTheProposal) {
  std::unique_ptr<ProposalWarmer> warmer = MakeWarmer();
  BanRelay(1);
  node_.AddValidator(Key(1), 101);
  node_.SetProposerDuties(kEpoch, {Duty(1, 84)});
  warmer->OnRegistration(absl::StrCat("[", JsonRegistration(Key(1)), "]"), "application/json");
  // At slot 80: the warm-up is due at the start of slot 83.
  EXPECT_EQ(warmer->Tick(), At(83) - At(80));
  clock_.Set(At(82, absl::Seconds(11)));
  EXPECT_EQ(warmer->Tick(), absl::Seconds(1));
  EXPECT_EQ(relays_[0]->statuses(), 0);

  clock_.Set(At(83));
  warmer->Tick();
  EXPECT_EQ(relays_[0]->statuses(), 1);
  EXPECT_EQ(relays_[1]->statuses(), 0) << "the banned relay is never contacted";
  ProposalWarmerStats stats = warmer->stats();
  ASSERT_EQ(stats.upstreams.size(), 2u);
  EXPECT_EQ(stats.upstreams[0].warmed, 1u);
  EXPECT_EQ(stats.upstreams[0].failed, 0u);
  EXPECT_EQ(stats.upstreams[1].refused, 1u);
  EXPECT_EQ(stats.upstreams[1].warmed, 0u);
  EXPECT_EQ(pools_[0]->stats().warmed, 1u);
  EXPECT_EQ(pools_[1]->stats().warmed, 0u);

  // Once per proposal.
  clock_.Set(At(83, absl::Seconds(6)));
  warmer->Tick();
  EXPECT_EQ(relays_[0]->statuses(), 1);

  // The getHeader at the proposal takes the warmed connection.
  UpstreamRequest header;
  header.method = "GET";
  header.target = absl::StrCat("/eth/v1/builder/header/84/0x", std::string(64, '0'), "/", Key(1));
  clock_.Set(At(84));
  const UpstreamAnswer answer = pools_[0]->Send(header, absl::Seconds(5));
  ASSERT_TRUE(answer.ok()) << answer.error;
  EXPECT_TRUE(answer.warmed_connection);
  EXPECT_EQ(pools_[0]->stats().warmed_used, 1u);
}

TEST_F(ProposalWarmerTest, DoesNotWarmOnceTheProposalSlotBegan) {
  std::unique_ptr<ProposalWarmer> warmer = MakeWarmer();
  node_.AddValidator(Key(1), 101);
  node_.SetProposerDuties(kEpoch, {Duty(1, 81)});
  warmer->OnRegistration(absl::StrCat("[", JsonRegistration(Key(1)), "]"), "application/json");
  clock_.Set(At(81, absl::Seconds(1)));
  warmer->Tick();
  warmer->Tick();
  EXPECT_EQ(warmer->stats().proposals_scheduled, 1u);
  EXPECT_EQ(relays_[0]->statuses(), 0);
}

TEST_F(ProposalWarmerTest, WarmsNoUpstreamInSelfBuild) {
  std::unique_ptr<ProposalWarmer> warmer = MakeWarmer();
  core::Policy policy;
  policy.version = 2;
  policy.mode = core::Mode::kSelfBuild;
  client_.SetPolicy(std::move(policy), client::PolicySource::kFleet);
  node_.AddValidator(Key(1), 101);
  node_.SetProposerDuties(kEpoch, {Duty(1, 81)});
  warmer->OnRegistration(absl::StrCat("[", JsonRegistration(Key(1)), "]"), "application/json");
  warmer->Tick();
  warmer->Tick();  // The proposal was found after the round's warm-up step: due at once.
  EXPECT_EQ(relays_[0]->statuses() + relays_[1]->statuses(), 0);
  EXPECT_EQ(warmer->stats().upstreams[0].refused, 1u);
  EXPECT_EQ(warmer->stats().upstreams[1].refused, 1u);
}

TEST_F(ProposalWarmerTest, ReadsTheDutiesAgainOnAReorgAndAtTheNextEpoch) {
  std::unique_ptr<ProposalWarmer> warmer = MakeWarmer();
  node_.AddValidator(Key(1), 101);
  node_.SetProposerDuties(kEpoch, {Duty(1, 85)});
  warmer->OnRegistration(absl::StrCat("[", JsonRegistration(Key(1)), "]"), "application/json");
  warmer->Tick();
  EXPECT_EQ(node_.requests(DutiesPath(kEpoch)), 1);

  // The reorg moved the proposal from slot 85 to 86.
  node_.SetProposerDuties(kEpoch, {Duty(1, 86)});
  warmer->OnChainReorg();
  warmer->Tick();
  EXPECT_EQ(node_.requests(DutiesPath(kEpoch)), 2);
  EXPECT_EQ(node_.requests(DutiesPath(kEpoch + 1)), 2);
  EXPECT_EQ(warmer->stats().proposals_scheduled, 2u);
  clock_.Set(At(84));
  warmer->Tick();
  EXPECT_EQ(relays_[0]->statuses(), 0) << "slot 85 is no proposal any more";
  clock_.Set(At(85));
  warmer->Tick();
  EXPECT_EQ(relays_[0]->statuses(), 1);

  clock_.Set(At(core::FirstSlotOf(kEpoch + 1, chain_)));
  warmer->Tick();
  EXPECT_EQ(node_.requests(DutiesPath(kEpoch + 1)), 3);
  EXPECT_EQ(node_.requests(DutiesPath(kEpoch + 2)), 1);
}

TEST_F(ProposalWarmerTest, ReadsAgainASlotAfterAMalformedAnswer) {
  std::unique_ptr<ProposalWarmer> warmer = MakeWarmer();
  node_.AddValidator(Key(1), 101);
  node_.OverridePath(DutiesPath(kEpoch), 200,
                     R"({"data":[{"pubkey":"0x12","validator_index":"1","slot":"81"}]})");
  warmer->OnRegistration(absl::StrCat("[", JsonRegistration(Key(1)), "]"), "application/json");
  warmer->Tick();
  EXPECT_EQ(node_.requests(DutiesPath(kEpoch)), 1);
  clock_.Advance(absl::Seconds(6));
  warmer->Tick();
  EXPECT_EQ(node_.requests(DutiesPath(kEpoch)), 1) << "retried a slot later, not at once";

  node_.ClearOverride(DutiesPath(kEpoch));
  node_.SetProposerDuties(kEpoch, {Duty(1, 84)});
  clock_.Advance(absl::Seconds(6));
  warmer->Tick();
  EXPECT_EQ(node_.requests(DutiesPath(kEpoch)), 2);
  EXPECT_EQ(warmer->stats().proposals_scheduled, 1u);
}

// Counts the warnings logged that contain `text`.
class WarningCounter : public google::LogSink {
 public:
  explicit WarningCounter(std::string text) : text_(std::move(text)) { google::AddLogSink(this); }
  ~WarningCounter() override { google::RemoveLogSink(this); }

  using google::LogSink::send;
  void send(google::LogSeverity severity, const char*, const char*, int,
            const google::LogMessageTime&, const char* message, size_t message_len) override {
    if (severity == google::GLOG_WARNING &&
        absl::StrContains(absl::string_view(message, message_len), text_)) {
      ++count_;
    }
  }
  int count() const { return count_; }

 private:
  const std::string text_;
  std::atomic<int> count_{0};
};

TEST_F(ProposalWarmerTest, ANextEpochAnsweredWithThisOnesSlotsIsLoggedOnceAndItsFirstSlotWarmed) {
  // As Lodestar 1.5.1 answers: the duties of epoch 11 asked for, those of epoch 10 given.
  std::unique_ptr<ProposalWarmer> warmer = MakeWarmer();
  node_.AddValidator(Key(1), 101);
  node_.SetProposerDuties(kEpoch, {Duty(1, 84)});
  node_.OverridePath(DutiesPath(kEpoch + 1), 200,
                     absl::StrCat(R"({"data":[{"pubkey":")", Key(1),
                                  R"(","validator_index":"101","slot":"84"}]})"));
  warmer->OnRegistration(absl::StrCat("[", JsonRegistration(Key(1)), "]"), "application/json");
  WarningCounter warnings("cannot read the proposer duties of epoch 11");
  for (core::Slot slot = 80; slot < 87; ++slot) {
    clock_.Set(At(slot));
    warmer->Tick();
  }
  EXPECT_EQ(warnings.count(), 1) << "once an epoch, not once a slot";
  EXPECT_EQ(warmer->stats().duty_read_failures, 7u);
  EXPECT_EQ(node_.requests(DutiesPath(kEpoch)), 1) << "this epoch's duties stand";
  EXPECT_EQ(node_.requests(DutiesPath(kEpoch + 1)), 7);
  EXPECT_EQ(relays_[0]->statuses(), 1) << "the proposal at slot 84, warmed at 83";

  // The last slot of the epoch: the first of the next may be the node's to propose.
  EXPECT_EQ(warmer->stats().unknown_duty_warmups, 0u);
  clock_.Set(At(87));
  warmer->Tick();
  EXPECT_EQ(relays_[0]->statuses(), 2);
  EXPECT_EQ(relays_[1]->statuses(), 2);
  EXPECT_EQ(warmer->stats().unknown_duty_warmups, 1u);
  clock_.Set(At(87, absl::Seconds(6)));
  warmer->Tick();
  EXPECT_EQ(relays_[0]->statuses(), 2) << "once";

  // Once that epoch begins, its duties are read as this epoch's.
  node_.ClearOverride(DutiesPath(kEpoch + 1));
  node_.SetProposerDuties(kEpoch + 1, {Duty(1, 90)});
  clock_.Set(At(88));
  warmer->Tick();
  EXPECT_EQ(node_.requests(DutiesPath(kEpoch + 1)), 9);
  EXPECT_EQ(warmer->stats().proposals_scheduled, 2u);
}

TEST_F(ProposalWarmerTest, AKnownNextEpochWithoutTheNodesProposalsWarmsNothingAtItsStart) {
  std::unique_ptr<ProposalWarmer> warmer = MakeWarmer();
  node_.AddValidator(Key(1), 101);
  node_.SetProposerDuties(kEpoch, {Duty(1, 84)});
  warmer->OnRegistration(absl::StrCat("[", JsonRegistration(Key(1)), "]"), "application/json");
  warmer->Tick();
  clock_.Set(At(87));
  warmer->Tick();
  EXPECT_EQ(relays_[0]->statuses(), 0);
  EXPECT_EQ(warmer->stats().unknown_duty_warmups, 0u);
}

TEST_F(ProposalWarmerTest, ARegistrationWakesTheThreadAndStopEndsItsWaitAtOnce) {
  ProposalWarmerOptions options;
  options.base = node_.url();
  options.chain = chain_;
  options.tick_interval = absl::Hours(1);
  ProposalWarmer warmer(options, clock_, client_);
  warmer.SetTargets({});
  warmer.Start();
  warmer.OnRegistration(absl::StrCat("[", JsonRegistration(Key(1)), "]"), "application/json");
  WaitFor([&] { return node_.requests(kValidators) > 0; }, absl::Seconds(20));
  EXPECT_EQ(node_.requests(kValidators), 1) << "the registration did not wake the warmer";
  const auto stopping = std::chrono::steady_clock::now();
  warmer.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, std::chrono::seconds(5));
}

}  // namespace
}  // namespace breaker::sidecar
