// breakerd and breaker-sidecar as child processes, the sidecar's validator port in front of a
// fake beacon node: a validator client's produceBlockV4 reaches the node with every builder
// entry while the policy allows them, and without the entry naming the sidecar's own port for a
// relay once an operator bans that relay; other requests pass through; /metrics counts them.

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "sidecar/ssz/builder_config.h"
#include "tests/support/fake_beacon_node.h"
#include "tests/support/fleet_harness.h"
#include "tests/support/sidecar_process.h"
#include "tests/support/status_matchers.h"
#include "tests/support/subprocess.h"

namespace breaker::testing {
namespace {

namespace ssz = ::breaker::sidecar::ssz;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kRelay[] = "https://relay.example";

ssz::BuilderEntry Entry(std::string url) {
  ssz::BuilderEntry entry;
  entry.auth.message.data = url;
  entry.url = std::move(url);
  entry.auth.signature = std::string(96, '\x07');
  entry.builder_boost_factor = 100;
  return entry;
}

class SidecarValidatorTest : public FleetTest {
 protected:
  void TearDown() override {
    if (sidecar_ != nullptr) {
      sidecar_->Kill(SIGTERM);
      ExpectCleanExit(*sidecar_);
      sidecar_.reset();
    }
    FleetTest::TearDown();
  }

  void StartSidecar() {
    node_ = std::make_unique<FakeBeaconNode>(chain_);
    upstream_port_ = FreeLoopbackPort();
    validator_port_ = FreeLoopbackPort();
    metrics_port_ = FreeLoopbackPort();
    const std::string config_path = dir_ + "/sidecar.textproto";
    std::ofstream(config_path) << "beacon_node_url: \"" << node_->url() << "\"\n"
                               << "validator_listen: \"127.0.0.1:" << validator_port_ << "\"\n"
                               << "breakerd_addresses: \"127.0.0.1:" << port_ << "\"\n"
                               << "node_id: \"sidecar-1\"\n"
                               << "network: \"" << kNetwork << "\"\n"
                               << "metrics_listen: \"127.0.0.1:" << metrics_port_ << "\"\n"
                               << "fallback_config_file: \"" << config_path_ << "\"\n"
                               << "upstreams { listen_port: " << upstream_port_ << " url: \""
                               << kRelay << "\" }\n";
    absl::StatusOr<std::unique_ptr<Subprocess>> started =
        StartReadySidecar(config_path, "sidecar", Deadline());
    ASSERT_THAT(started, IsOk());
    sidecar_ = *std::move(started);
  }

  // The urls of the builder entries the node received with a produceBlockV4 sent through the
  // validator port; empty when the request failed.
  std::vector<std::string> ProduceThroughThePort(const ssz::BuilderConfig& config) {
    httplib::Client client("127.0.0.1", validator_port_);
    client.set_read_timeout(30);
    httplib::Result result =
        client.Post(absl::StrCat("/eth/v4/validator/blocks/", CurrentSlot() + 1,
                                 "?include_payload=true&randao_reveal=0x01"),
                    ssz::BuilderConfigToJson(config).dump(), "application/json");
    if (!result || result->status != 200) return {};
    const std::vector<ProductionRequest> requests = node_->block_production().requests();
    if (requests.empty() || !requests.back().config.has_value()) return {};
    std::vector<std::string> urls;
    for (const ssz::BuilderEntry& entry : requests.back().config->builders) {
      urls.push_back(entry.url);
    }
    return urls;
  }

  std::unique_ptr<FakeBeaconNode> node_;
  std::unique_ptr<Subprocess> sidecar_;
  int upstream_port_ = 0;
  int validator_port_ = 0;
  int metrics_port_ = 0;
};

TEST_F(SidecarValidatorTest, AnEntryNamingTheSidecarsPortGoesOnceItsRelayIsBanned) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain()));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  ASSERT_NO_FATAL_FAILURE(StartSidecar());

  ssz::BuilderConfig config;
  const std::string own_port = absl::StrCat("http://0xabcd@127.0.0.1:", upstream_port_);
  config.builders = {Entry(own_port), Entry("https://other.example")};
  EXPECT_THAT(ProduceThroughThePort(config), ElementsAre(own_port, "https://other.example"));

  // Any other request passes through.
  node_->OverridePath("/eth/v1/validator/duties/proposer/1", 200, R"({"data":[]})");
  httplib::Client client("127.0.0.1", validator_port_);
  httplib::Result duties = client.Get("/eth/v1/validator/duties/proposer/1");
  ASSERT_TRUE(duties);
  EXPECT_EQ(duties->body, R"({"data":[]})");

  v1::BanRelayRequest ban;
  ban.set_relay(kRelay);
  ban.set_reason("withheld payloads");
  ASSERT_THAT(Call(&v1::Admin::Stub::async::BanRelay, ban), IsOk());
  EXPECT_TRUE(PollUntil([&] {
    return ProduceThroughThePort(config) == std::vector<std::string>{"https://other.example"};
  }));

  httplib::Client metrics("127.0.0.1", metrics_port_);
  httplib::Result scraped = metrics.Get("/metrics");
  ASSERT_TRUE(scraped);
  EXPECT_THAT(scraped->body,
              HasSubstr("breaker_sidecar_builder_entries_dropped_total{cause=\"refused\"}"));
  EXPECT_THAT(scraped->body, HasSubstr("breaker_sidecar_blocks_produced_total{mode=\"all_builders\""
                                       ",source=\"local\"}"));
}

}  // namespace
}  // namespace breaker::testing
