// breakerd, breaker-sidecar and a fake relay, each over real loopback HTTP or gRPC, breakerd
// and the sidecar as child processes: a header is forwarded while the policy allows its relay,
// and answered 204 without reaching the relay once an operator bans it; a Gloas bid reaches
// breakerd as a bid seen through its relay, and is answered 204 once its builder is banned; the
// sidecar's /metrics counts what happened.

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/support/fleet_harness.h"
#include "tests/support/sidecar_process.h"
#include "tests/support/status_matchers.h"
#include "tests/support/subprocess.h"

namespace breaker::testing {
namespace {

constexpr char kHeaderPath[] =
    "/eth/v1/builder/header/100/0x1111111111111111111111111111111111111111111111111111111111111111/"
    "0xaaaa";
constexpr char kHeaderBody[] =
    R"({"version":"deneb","data":{"message":{"header":{"block_hash":"0x22"},"value":"1"},)"
    R"("signature":"0x00"}})";
// A bid request for `slot` (breakerd takes observations of slots near its clock's only).
std::string BidPath(core::Slot slot) {
  return absl::StrCat("/eth/v1/builder/execution_payload_bid/", slot,
                      "/0x1111111111111111111111111111111111111111111111111111111111111111/"
                      "0x2222222222222222222222222222222222222222222222222222222222222222/0xaaaa");
}
constexpr core::BuilderIndex kBuilder = 5;
constexpr char kBidBody[] =
    R"({"version":"gloas","data":{"message":{"builder_index":"5","value":"1"},)"
    R"("signature":"0x00"}})";

// A port no one listens on now (the kernel's pick, released).
// A relay serving one header, counting what it is asked.
class FakeRelay {
 public:
  FakeRelay() {
    server_.Get("/eth/v1/builder/header/.*",
                [this](const httplib::Request& request, httplib::Response& response) {
                  ++headers_;
                  last_timeout_ = request.get_header_value("X-Timeout-Ms");
                  response.set_content(kHeaderBody, "application/json");
                });
    server_.Post("/eth/v1/builder/execution_payload_bid/.*",
                 [this](const httplib::Request&, httplib::Response& response) {
                   ++bids_;
                   response.set_header("Eth-Consensus-Version", "gloas");
                   response.set_content(kBidBody, "application/json");
                 });
    server_.Get("/eth/v1/builder/status",
                [this](const httplib::Request&, httplib::Response& response) {
                  ++statuses_;
                  response.status = 200;
                });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeRelay() {
    server_.stop();
    thread_.join();
  }

  int port() const { return port_; }
  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }
  int headers() const { return headers_; }
  int statuses() const { return statuses_; }
  int bids() const { return bids_; }
  std::string last_timeout() const { return last_timeout_; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> headers_{0};
  std::atomic<int> statuses_{0};
  std::atomic<int> bids_{0};
  std::string last_timeout_;
};

class SidecarE2eTest : public FleetTest {
 protected:
  void TearDown() override {
    if (sidecar_ != nullptr) {
      sidecar_->Kill(SIGTERM);
      ExpectCleanExit(*sidecar_);
      sidecar_.reset();
    }
    FleetTest::TearDown();
  }

  void StartSidecar(const std::string& relay_url) {
    sidecar_port_ = FreeLoopbackPort();
    metrics_port_ = FreeLoopbackPort();
    const std::string config_path = dir_ + "/sidecar.textproto";
    std::ofstream(config_path) << "breakerd_addresses: \"127.0.0.1:" << port_ << "\"\n"
                               << "node_id: \"sidecar-1\"\n"
                               << "network: \"" << kNetwork << "\"\n"
                               << "upstream_timeout_ms: 5000\n"
                               << "metrics_listen: \"127.0.0.1:" << metrics_port_ << "\"\n"
                               << "fallback_config_file: \"" << config_path_ << "\"\n"
                               << "upstreams { listen_port: " << sidecar_port_ << " url: \""
                               << relay_url << "\" }\n";
    absl::StatusOr<std::unique_ptr<Subprocess>> started =
        StartReadySidecar(config_path, "sidecar", Deadline());
    ASSERT_THAT(started, IsOk());
    sidecar_ = *std::move(started);
  }

  httplib::Result GetThroughSidecar(const std::string& path) {
    httplib::Client client("127.0.0.1", sidecar_port_);
    client.set_connection_timeout(10);
    client.set_read_timeout(30);
    return client.Get(path.c_str(), httplib::Headers{{"X-Timeout-Ms", "950"}});
  }

  httplib::Result PostThroughSidecar(const std::string& path) {
    httplib::Client client("127.0.0.1", sidecar_port_);
    client.set_connection_timeout(10);
    client.set_read_timeout(30);
    return client.Post(path.c_str(), httplib::Headers{{"X-Timeout-Ms", "950"}}, "",
                       "application/json");
  }

  // The value of `series` (name and labels as exposed) on the sidecar's /metrics; -1 when
  // absent or the scrape failed.
  double SidecarMetric(const std::string& series) {
    httplib::Client client("127.0.0.1", metrics_port_);
    client.set_read_timeout(10);
    httplib::Result result = client.Get("/metrics");
    if (!result || result->status != 200) return -1;
    const std::string prefix = series + " ";
    for (absl::string_view line : absl::StrSplit(result->body, '\n')) {
      double value = 0;
      if (absl::ConsumePrefix(&line, prefix) && absl::SimpleAtod(line, &value)) return value;
    }
    return -1;
  }

  std::unique_ptr<Subprocess> sidecar_;
  int sidecar_port_ = 0;
  int metrics_port_ = 0;
};

TEST_F(SidecarE2eTest, AHeaderIsForwardedThenRefusedOnceItsRelayIsBanned) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain()));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  FakeRelay relay;
  ASSERT_GT(relay.port(), 0);
  ASSERT_NO_FATAL_FAILURE(StartSidecar(relay.url()));

  // Allowed: forwarded, byte for byte, with the request's timeout header.
  httplib::Result forwarded = GetThroughSidecar(kHeaderPath);
  ASSERT_TRUE(forwarded) << httplib::to_string(forwarded.error());
  EXPECT_EQ(forwarded->status, 200);
  EXPECT_EQ(forwarded->body, kHeaderBody);
  EXPECT_EQ(relay.headers(), 1);
  EXPECT_EQ(relay.last_timeout(), "950");

  // The operator bans the relay, spelled another way.
  v1::BanRelayRequest ban;
  ban.set_relay(absl::StrCat("HTTP://127.0.0.1:", relay.port(), "/"));
  ban.set_reason("withheld payloads");
  ASSERT_THAT(Call(&v1::Admin::Stub::async::BanRelay, ban), IsOk());

  // The sidecar answers 204 once the policy reaches it.
  ASSERT_TRUE(PollUntil([&] {
    httplib::Result result = GetThroughSidecar(kHeaderPath);
    return result && result->status == 204;
  }));
  const int seen = relay.headers();
  httplib::Result refused = GetThroughSidecar(kHeaderPath);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 204);
  EXPECT_TRUE(refused->body.empty());
  EXPECT_EQ(relay.headers(), seen) << "a refused header reached the relay";

  // Everything else is still forwarded.
  httplib::Result status = GetThroughSidecar("/eth/v1/builder/status");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->status, 200);
  EXPECT_EQ(relay.statuses(), 1);
}

TEST_F(SidecarE2eTest, AGloasBidIsReportedThenRefusedOnceItsBuilderIsBannedAndCounted) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain()));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  FakeRelay relay;
  ASSERT_GT(relay.port(), 0);
  ASSERT_NO_FATAL_FAILURE(StartSidecar(relay.url()));

  // Allowed: forwarded byte for byte, and the bid reaches breakerd, which learns that the
  // relay serves the builder.
  httplib::Result forwarded = PostThroughSidecar(BidPath(CurrentSlot()));
  ASSERT_TRUE(forwarded) << httplib::to_string(forwarded.error());
  EXPECT_EQ(forwarded->status, 200);
  EXPECT_EQ(forwarded->body, kBidBody);
  EXPECT_EQ(forwarded->get_header_value("Eth-Consensus-Version"), "gloas");
  EXPECT_TRUE(PollUntil([&] {
    absl::StatusOr<v1::ListRelaysResponse> relays = ListRelays();
    if (!relays.ok()) return false;
    for (const v1::Relay& listed : relays->relays()) {
      if (listed.relay() == relay.url() && listed.builder_indices_size() == 1 &&
          listed.builder_indices(0) == kBuilder) {
        return true;
      }
    }
    return false;
  })) << "breakerd never saw the bid of builder 5 through the relay";

  v1::BanBuilderRequest ban;
  ban.set_builder_index(kBuilder);
  ban.set_reason("withheld payloads");
  ASSERT_THAT(Call(&v1::Admin::Stub::async::BanBuilder, ban), IsOk());

  // The relay is still asked (a pre-Gloas header could not tell the builder; a bid does), and
  // its bid is answered 204.
  ASSERT_TRUE(PollUntil([&] {
    httplib::Result result = PostThroughSidecar(BidPath(CurrentSlot()));
    return result && result->status == 204;
  }));
  const int bids = relay.bids();
  httplib::Result refused = PostThroughSidecar(BidPath(CurrentSlot()));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 204);
  EXPECT_TRUE(refused->body.empty());
  EXPECT_EQ(relay.bids(), bids + 1);

  // The metrics say what happened, and which policy is in force. Every bid request reached
  // the relay (the relay itself is not banned), and ended forwarded or refused.
  const std::string upstream = absl::StrCat("{upstream=\"", relay.url(), "\"");
  const double forwarded_count = SidecarMetric(
      absl::StrCat("breaker_sidecar_requests_total", upstream, ",outcome=\"forwarded\"}"));
  const double refused_count = SidecarMetric(
      absl::StrCat("breaker_sidecar_requests_total", upstream, ",outcome=\"refused\"}"));
  EXPECT_GE(forwarded_count, 1);
  EXPECT_GE(refused_count, 2);
  EXPECT_EQ(forwarded_count + refused_count, relay.bids());
  EXPECT_EQ(SidecarMetric(absl::StrCat("breaker_sidecar_requests_total", upstream,
                                       ",outcome=\"upstream_error\"}")),
            0);
  EXPECT_EQ(SidecarMetric(absl::StrCat("breaker_sidecar_bids_seen_total", upstream, "}")),
            relay.bids());
  absl::StatusOr<v1::Policy> policy = GetPolicy();
  ASSERT_THAT(policy, IsOk());
  EXPECT_TRUE(PollUntil([&] {
    return SidecarMetric("breaker_sidecar_policy_version") == policy->version();
  })) << "breakerd's policy is version "
      << policy->version();
  EXPECT_EQ(SidecarMetric("breaker_sidecar_policy_source{source=\"fleet\"}"), 1);
  EXPECT_EQ(SidecarMetric("breaker_sidecar_breakerd_connected"), 1);
}

}  // namespace
}  // namespace breaker::testing
