// Warm at the proposal, end to end: breakerd and breaker-sidecar as child processes, the sidecar
// beside a fake beacon node whose duties give the node's validator a proposal, in front of a
// fake relay reached through a TCP proxy that counts the connections the relay accepts. The
// node's registration goes through the sidecar; one slot before the proposal the relay sees
// the warming GET /eth/v1/builder/status, and the getHeader at the proposal rides on that
// connection.

#include <atomic>
#include <csignal>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/chain_time.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/support/fake_beacon_node.h"
#include "tests/support/fleet_harness.h"
#include "tests/support/sidecar_process.h"
#include "tests/support/status_matchers.h"
#include "tests/support/subprocess.h"
#include "tests/support/tcp_proxy.h"

namespace breaker::testing {
namespace {

constexpr char kHeaderBody[] =
    R"({"version":"deneb","data":{"message":{"header":{"block_hash":"0x22"},"value":"1"},)"
    R"("signature":"0x00"}})";
constexpr uint64_t kValidatorIndex = 7;

// A relay answering registrations, status and headers, counting each.
class FakeRelay {
 public:
  FakeRelay() {
    server_.Post("/eth/v1/builder/validators",
                 [this](const httplib::Request&, httplib::Response& response) {
                   ++registrations_;
                   response.status = 200;
                 });
    server_.Get("/eth/v1/builder/status", [this](const httplib::Request&, httplib::Response& r) {
      ++statuses_;
      r.status = 200;
    });
    server_.Get("/eth/v1/builder/header/.*", [this](const httplib::Request&, httplib::Response& r) {
      ++headers_;
      r.set_content(kHeaderBody, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // A stop() before the server runs would be lost, and the destructor's join would hang.
    while (port_ > 0 && !server_.is_running()) std::this_thread::yield();
  }
  ~FakeRelay() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  int registrations() const { return registrations_; }
  int statuses() const { return statuses_; }
  int headers() const { return headers_; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> registrations_{0};
  std::atomic<int> statuses_{0};
  std::atomic<int> headers_{0};
};

class ProposalWarmerE2eTest : public FleetTest {
 protected:
  void TearDown() override {
    if (sidecar_ != nullptr) {
      sidecar_->Kill(SIGTERM);
      ExpectCleanExit(*sidecar_);
      sidecar_.reset();
    }
    FleetTest::TearDown();
  }

  // The sum of the samples of `name` on the sidecar's /metrics whose labels hold `label`; -1
  // when there is none.
  double Metric(const std::string& name, const std::string& label) {
    httplib::Client client("127.0.0.1", metrics_port_);
    client.set_read_timeout(10);
    httplib::Result result = client.Get("/metrics");
    if (!result || result->status != 200) return -1;
    double sum = -1;
    for (absl::string_view line : absl::StrSplit(result->body, '\n')) {
      if (!absl::StartsWith(line, name + "{") && !absl::StartsWith(line, name + " ")) continue;
      if (!absl::StrContains(line, label)) continue;
      double value = 0;
      if (!absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &value)) continue;
      sum = (sum < 0 ? 0 : sum) + value;
    }
    return sum;
  }

  std::unique_ptr<Subprocess> sidecar_;
  int metrics_port_ = 0;
};

TEST_F(ProposalWarmerE2eTest, TheGetHeaderAtTheProposalRidesOnTheConnectionWarmedASlotBefore) {
  ASSERT_NO_FATAL_FAILURE(Configure(FastChain(/*gloas=*/false)));
  // Blocks at every slot, from before breakerd starts: no missed slot trips the breaker.
  FakeBeaconNode node(chain_);
  node.SetProducing(true);
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  FakeRelay relay;
  absl::StatusOr<std::unique_ptr<TcpProxy>> proxy = TcpProxy::Start(relay.port());
  ASSERT_THAT(proxy, IsOk());

  const int port = FreeLoopbackPort();
  metrics_port_ = FreeLoopbackPort();
  const std::string config_path = dir_ + "/sidecar.textproto";
  // Idle connections last 3 s: longer than a slot, far shorter than the wait for the proposal.
  std::ofstream(config_path) << "beacon_node_url: \"" << node.url() << "\"\n"
                             << "breakerd_addresses: \"127.0.0.1:" << port_ << "\"\n"
                             << "node_id: \"sidecar-1\"\n"
                             << "network: \"" << kNetwork << "\"\n"
                             << "fallback_config_file: \"" << config_path_ << "\"\n"
                             << "metrics_listen: \"127.0.0.1:" << metrics_port_ << "\"\n"
                             << "upstream_idle_timeout_seconds: 3\n"
                             << "upstreams { listen_port: " << port
                             << " url: \"http://127.0.0.1:" << (*proxy)->port() << "\" }\n";
  absl::StatusOr<std::unique_ptr<Subprocess>> started =
      StartReadySidecar(config_path, "sidecar", Deadline());
  ASSERT_THAT(started, IsOk());
  sidecar_ = *std::move(started);

  // The node's validator proposes 7 slots from now (14 s): long after the registration's
  // connection went idle past 3 s.
  const std::string pubkey = absl::StrFormat("0x%096x", 0xabcdef);
  const core::Slot proposal = CurrentSlot() + 7;
  node.AddValidator(pubkey, kValidatorIndex);
  for (core::Epoch epoch : {CurrentEpoch(), CurrentEpoch() + 1}) {
    std::vector<FakeBeaconNode::ProposerDuty> duties;
    if (core::EpochOf(proposal, chain_) == epoch) {
      duties.push_back(FakeBeaconNode::ProposerDuty{proposal, pubkey, kValidatorIndex});
    }
    node.SetProposerDuties(epoch, std::move(duties));
  }
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(30);
  httplib::Result registered =
      client.Post("/eth/v1/builder/validators",
                  absl::StrCat(R"([{"message":{"fee_recipient":"0x)", std::string(40, 'f'),
                               R"(","gas_limit":"30000000","timestamp":"1","pubkey":")", pubkey,
                               R"("},"signature":"0x)", std::string(192, 'e'), R"("}])"),
                  "application/json");
  ASSERT_TRUE(registered);
  EXPECT_EQ(registered->status, 200);
  EXPECT_EQ(relay.registrations(), 1);
  ASSERT_TRUE(PollUntil([&] { return Metric("breaker_sidecar_validator_keys_indexed", "") == 1; }))
      << "the sidecar never learned the validator's index";

  // The warming request, in the slot before the proposal, on a connection of its own.
  const int64_t before_warming = (*proxy)->forwarded();
  ASSERT_TRUE(PollUntil([&] { return relay.statuses() > 0; }));
  const absl::Time warmed_at = absl::Now();
  EXPECT_GE(warmed_at, core::StartOf(proposal - 1, chain_));
  EXPECT_LT(warmed_at, core::StartOf(proposal, chain_));
  EXPECT_EQ(relay.statuses(), 1);
  const int64_t after_warming = (*proxy)->forwarded();
  EXPECT_EQ(after_warming, before_warming + 1) << "the registration's connection had expired";

  // The getHeader at the proposal: no new connection to the relay.
  ASSERT_TRUE(PollUntil([&] { return CurrentSlot() >= proposal; }));
  httplib::Result header = client.Get(
      absl::StrCat("/eth/v1/builder/header/", proposal, "/0x", std::string(64, '1'), "/", pubkey)
          .c_str());
  ASSERT_TRUE(header);
  EXPECT_EQ(header->status, 200);
  EXPECT_EQ(relay.headers(), 1);
  EXPECT_EQ((*proxy)->forwarded(), after_warming);

  // The pool's count of requests that took a warmed connection.
  EXPECT_EQ(Metric("breaker_sidecar_upstream_warmed_used_total", ""), 1);
  EXPECT_EQ(Metric("breaker_sidecar_proposal_warmups_total", "outcome=\"warmed\""), 1);
  EXPECT_EQ(Metric("breaker_sidecar_proposals_scheduled_total", ""), 1);
}

}  // namespace
}  // namespace breaker::testing
