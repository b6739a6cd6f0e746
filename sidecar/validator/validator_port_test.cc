#include "sidecar/validator/validator_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "client/fake_client.h"
#include "common/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "sidecar/ssz/builder_config.h"
#include "sidecar/ssz/test_blocks.h"
#include "tests/support/fake_beacon_node.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::sidecar::validator {
namespace {

using ::breaker::testing::FakeBeaconNode;
using ::breaker::testing::IsOk;
using ::breaker::testing::ProductionRequest;
using ::breaker::testing::ProductionScript;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Json = nlohmann::json;

constexpr uint64_t kMax = UINT64_MAX;
constexpr char kV4Path[] = "/eth/v4/validator/blocks/123?include_payload=true&randao_reveal=0x1";

core::ChainSpec Chain() {
  core::ChainSpec chain;
  chain.network = "test";
  chain.genesis_time_unix = 1700000000;
  chain.seconds_per_slot = 6;
  chain.slots_per_epoch = 8;
  chain.gloas_fork_epoch = 0;
  return chain;
}

std::string Key(char c) { return std::string(48, c); }

ssz::BuilderEntry Entry(std::string url, std::vector<std::string> keys = {}) {
  ssz::BuilderEntry entry;
  entry.auth.message.data = url;
  entry.url = std::move(url);
  entry.auth.message.slot = 123;
  entry.auth.signature = std::string(96, '\x07');
  entry.builder_pubkeys = std::move(keys);
  entry.builder_boost_factor = 100;
  return entry;
}

// A validator client's builders: a banned relay (also behind the sidecar's port 18550), a
// trusted one, a relay with a banned builder's and another builder's keys, one with the banned
// builder's key alone.
ssz::BuilderConfig ValidatorConfig() {
  ssz::BuilderConfig config;
  config.min_bid = 10;
  config.builder_boost_factor = 100;
  config.builders = {Entry("https://banned.example"), Entry("http://127.0.0.1:18550"),
                     Entry("https://trusted.example"),
                     Entry("https://relay.example", {Key('B'), Key('x')}),
                     Entry("https://other.example", {Key('B')})};
  return config;
}

// Banned: relay banned.example, builder 5 (key 'B'). Trusted: relay trusted.example.
core::Policy PolicyIn(core::Mode mode, uint64_t version) {
  core::Policy policy;
  policy.version = version;
  policy.mode = mode;
  policy.banned_relays["https://banned.example"] = core::Ban{};
  policy.banned_builders[5] = core::Ban{};
  policy.builder_pubkeys[5] = Key('B');
  policy.trusted_relays = {"https://trusted.example"};
  return policy;
}

std::vector<std::string> Urls(const ssz::BuilderConfig& config) {
  std::vector<std::string> urls;
  for (const ssz::BuilderEntry& entry : config.builders) urls.push_back(entry.url);
  return urls;
}

class ValidatorPortTest : public ::testing::Test {
 protected:
  ValidatorPortTest() : node_(Chain()) {}

  void SetUp() override { ASSERT_THAT(StartPort(node_.url()), IsOk()); }

  absl::Status StartPort(const std::string& beacon_node,
                         absl::Duration answer_timeout = absl::Seconds(10)) {
    ValidatorPortOptions options;
    options.beacon_node_url = beacon_node;
    options.beacon_node_base = beacon_node;
    options.own_ports["http://127.0.0.1:18550"] = {"https://banned.example", false};
    options.max_body_bytes = 4 << 20;
    options.answer_timeout = answer_timeout;
    options.preset = [this] {
      return minimal_preset_ ? ssz::Preset::kMinimal : ssz::Preset::kMainnet;
    };
    port_ = std::make_unique<ValidatorPort>(options, client_, SystemClock());
    return port_->Start();
  }

  httplib::Client Caller() {
    httplib::Client caller("127.0.0.1", port_->port());
    caller.set_read_timeout(std::chrono::seconds(20));
    return caller;
  }

  httplib::Client Direct() {
    httplib::Client direct("127.0.0.1", node_.port());
    return direct;
  }

  ProductionRequest LastProduction() {
    const std::vector<ProductionRequest> requests = node_.block_production().requests();
    EXPECT_FALSE(requests.empty());
    return requests.empty() ? ProductionRequest{} : requests.back();
  }

  // Asks produceBlockV4 of `config` in `encoding` through the port; returns the answer.
  httplib::Result ProduceV4(const ssz::BuilderConfig& config, bool ssz_body,
                            const std::string& accept = "application/json") {
    httplib::Client caller = Caller();
    httplib::Headers headers = {{"Accept", accept}, {"Eth-Consensus-Version", "gloas"}};
    return ssz_body ? caller.Post(kV4Path, headers, ssz::BuilderConfigToSsz(config),
                                  "application/octet-stream")
                    : caller.Post(kV4Path, headers, ssz::BuilderConfigToJson(config).dump(),
                                  "application/json");
  }

  // The node's answer to the same request it received, asked directly.
  httplib::Result DirectAnswer(const ProductionRequest& received, const std::string& accept) {
    httplib::Client direct = Direct();
    return direct.Post(received.target, {{"Accept", accept}}, received.body, received.content_type);
  }

  client::FakeClient client_;
  FakeBeaconNode node_;
  // The preset the port reads SSZ blocks with: mainnet's, or the minimal one.
  std::atomic<bool> minimal_preset_{false};
  std::unique_ptr<ValidatorPort> port_;
};

TEST_F(ValidatorPortTest, PassesOtherRoutesThroughUnchanged) {
  node_.OverridePath("/eth/v1/validator/duties/attester/3", 200, R"({"data":[{"slot":"24"}]})");
  httplib::Client caller = Caller();
  httplib::Result proxied = caller.Get("/eth/v1/validator/duties/attester/3?x=1");
  ASSERT_TRUE(proxied);
  httplib::Client direct = Direct();
  httplib::Result expected = direct.Get("/eth/v1/validator/duties/attester/3?x=1");
  ASSERT_TRUE(expected);
  EXPECT_EQ(proxied->status, expected->status);
  EXPECT_EQ(proxied->body, expected->body);
  EXPECT_EQ(proxied->get_header_value("Content-Type"), "application/json");
  // Keep-alive: the second request of the same caller goes over the same connection.
  httplib::Result again = caller.Get("/eth/v1/node/syncing");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(port_->counters().requests, 2u);
}

TEST_F(ValidatorPortTest, AllBuildersDropsRefusedEntriesAndKeysJsonAndSsz) {
  client_.SetPolicy(PolicyIn(core::Mode::kAllBuilders, 4), client::PolicySource::kFleet);
  for (bool ssz_body : {false, true}) {
    httplib::Result answer = ProduceV4(ValidatorConfig(), ssz_body);
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->status, 200);
    const ProductionRequest received = LastProduction();
    ASSERT_TRUE(received.config.has_value());
    EXPECT_THAT(Urls(*received.config),
                ElementsAre("https://trusted.example", "https://relay.example"));
    EXPECT_THAT(received.config->builders[1].builder_pubkeys, ElementsAre(Key('x')));
    EXPECT_EQ(received.config->min_bid, 10u);
    EXPECT_EQ(received.config->builder_boost_factor, 100u);
    // Path, query and headers as sent; the encoding as sent.
    EXPECT_EQ(received.target, kV4Path);
    EXPECT_EQ(received.consensus_version, "gloas");
    EXPECT_EQ(received.content_type, ssz_body ? "application/octet-stream" : "application/json");
    // The answer is the node's.
    httplib::Result expected = DirectAnswer(received, "application/json");
    ASSERT_TRUE(expected);
    EXPECT_EQ(answer->body, expected->body);
    for (const char* header : {"Eth-Consensus-Version", "Eth-Execution-Payload-Included",
                               "Eth-Execution-Payload-Value", "Eth-Consensus-Block-Value"}) {
      EXPECT_EQ(answer->get_header_value(header), expected->get_header_value(header)) << header;
    }
  }
  EXPECT_EQ(port_->counters().entries_refused, 6u);
}

TEST_F(ValidatorPortTest, TrustedOnlyKeepsTrustedEntriesAndRanksP2pDown) {
  client_.SetPolicy(PolicyIn(core::Mode::kTrustedOnly, 5), client::PolicySource::kFleet);
  node_.block_production().Script([] {
    ProductionScript s;
    s.p2p_bid = true;
    return s;
  }());
  for (bool ssz_body : {false, true}) {
    httplib::Result answer = ProduceV4(ValidatorConfig(), ssz_body);
    ASSERT_TRUE(answer);
    const ProductionRequest received = LastProduction();
    ASSERT_TRUE(received.config.has_value());
    EXPECT_THAT(Urls(*received.config), ElementsAre("https://trusted.example"));
    EXPECT_EQ(received.config->min_bid, kMax);
    EXPECT_EQ(received.config->builder_boost_factor, 0u);
    // The P2P bid no longer wins on the fake: its node built the block.
    EXPECT_EQ(answer->get_header_value("Eth-Execution-Payload-Included"), "true");
  }
  EXPECT_EQ(
      port_->counters().blocks_by_mode_and_source[1][static_cast<size_t>(PayloadSource::kLocal)],
      2u);
}

TEST_F(ValidatorPortTest, SelfBuildAsksForNoBuilder) {
  client_.SetPolicy(PolicyIn(core::Mode::kSelfBuild, 6), client::PolicySource::kFleet);
  for (bool ssz_body : {false, true}) {
    ASSERT_TRUE(ProduceV4(ValidatorConfig(), ssz_body));
    const ProductionRequest received = LastProduction();
    ASSERT_TRUE(received.config.has_value());
    EXPECT_THAT(received.config->builders, IsEmpty());
    EXPECT_EQ(received.config->min_bid, kMax);
    EXPECT_EQ(received.config->builder_boost_factor, 0u);
  }
}

TEST_F(ValidatorPortTest, ProduceBlockV3BoostFactorIsZeroInSelfBuildOnly) {
  node_.block_production().Script([] {
    ProductionScript s;
    s.builder_url = "https://relay.example";
    return s;
  }());
  httplib::Client caller = Caller();
  ASSERT_TRUE(caller.Get("/eth/v3/validator/blocks/9?randao_reveal=0x1&builder_boost_factor=100"));
  EXPECT_EQ(LastProduction().builder_boost_factor, "100");
  client_.SetPolicy(PolicyIn(core::Mode::kSelfBuild, 7), client::PolicySource::kFleet);
  httplib::Result answer =
      caller.Get("/eth/v3/validator/blocks/9?randao_reveal=0x1&builder_boost_factor=100");
  ASSERT_TRUE(answer);
  EXPECT_EQ(LastProduction().builder_boost_factor, "0");
  EXPECT_EQ(LastProduction().target,
            "/eth/v3/validator/blocks/9?randao_reveal=0x1&builder_boost_factor=0");
  EXPECT_EQ(answer->get_header_value("Eth-Execution-Payload-Blinded"), "false");
  // A client that sends none (Prysm, Teku) gets one.
  ASSERT_TRUE(caller.Get("/eth/v3/validator/blocks/9?randao_reveal=0x1"));
  EXPECT_EQ(LastProduction().builder_boost_factor, "0");
}

TEST_F(ValidatorPortTest, AnUnreadableBodyIsUntouchedInAllBuildersAndSelfBuildElsewhere) {
  httplib::Client caller = Caller();
  httplib::Result all = caller.Post(kV4Path, "{not json", "application/json");
  ASSERT_TRUE(all);
  EXPECT_EQ(all->status, 400);  // the node's own answer
  EXPECT_EQ(LastProduction().body, "{not json");
  client_.SetPolicy(PolicyIn(core::Mode::kTrustedOnly, 8), client::PolicySource::kFleet);
  httplib::Result trusted = caller.Post(kV4Path, "{not json", "application/json");
  ASSERT_TRUE(trusted);
  EXPECT_EQ(trusted->status, 200);
  ASSERT_TRUE(LastProduction().config.has_value());
  EXPECT_THAT(LastProduction().config->builders, IsEmpty());
  EXPECT_EQ(LastProduction().config->builder_boost_factor, 0u);
  EXPECT_EQ(port_->counters().unreadable_by_mode[0], 1u);
  EXPECT_EQ(port_->counters().unreadable_by_mode[1], 1u);
}

TEST_F(ValidatorPortTest, AnOversizedBodyIsRefusedBeforeTheNode) {
  httplib::Client caller = Caller();
  httplib::Result answer =
      caller.Post(kV4Path, std::string((4 << 20) + 1, ' '), "application/json");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 413);
  EXPECT_THAT(node_.block_production().requests(), IsEmpty());
}

TEST_F(ValidatorPortTest, MultiMebibyteSszAnswersPassIntact) {
  node_.block_production().Script([] {
    ProductionScript s;
    s.ssz_answer_bytes = 10 << 20;
    return s;
  }());
  httplib::Result answer = ProduceV4(ValidatorConfig(), true, "application/octet-stream");
  ASSERT_TRUE(answer);
  httplib::Result expected = DirectAnswer(LastProduction(), "application/octet-stream");
  ASSERT_TRUE(expected);
  EXPECT_EQ(answer->body.size(), size_t{10 << 20});
  EXPECT_TRUE(answer->body == expected->body);
  EXPECT_EQ(answer->get_header_value("Content-Type"), "application/octet-stream");
}

TEST_F(ValidatorPortTest, ABuilderApiWinIsReportedAsABidSeen) {
  node_.block_production().Script([] {
    ProductionScript s;
    s.builder_url = "https://relay.example";
    s.builder = 42;
    return s;
  }());
  httplib::Result answer = ProduceV4(ValidatorConfig(), false);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->get_header_value("Eth-Builder-Url"), "https://relay.example");
  ASSERT_TRUE(::breaker::testing::WaitFor([&] { return port_->counters().bids_reported == 1; }));
  const std::vector<client::FakeClient::Reported> reports = client_.reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].slot, 123u);
  const auto* bid = std::get_if<core::BidSeen>(&reports[0].event);
  ASSERT_NE(bid, nullptr);
  EXPECT_EQ(bid->builder, 42u);
  EXPECT_EQ(bid->relay, "https://relay.example");
}

TEST_F(ValidatorPortTest, ABuilderApiWinInSszIsReportedByTheNodesPreset) {
  const ssz::GloasTestBlock block = ssz::ReadGloasTestBlock(/*minimal=*/true);
  node_.block_production().Script([&] {
    ProductionScript s;
    s.builder_url = "https://relay.example";
    s.ssz_answer = block.ssz;
    return s;
  }());
  // Read with mainnet's layout, the minimal preset's block is no block: counted, not reported.
  httplib::Result answer = ProduceV4(ValidatorConfig(), false, "application/octet-stream");
  ASSERT_TRUE(answer);
  EXPECT_TRUE(answer->body == block.ssz);
  ASSERT_TRUE(::breaker::testing::WaitFor([&] { return port_->counters().bids_unreported == 1; }));
  EXPECT_TRUE(client_.reports().empty());
  minimal_preset_ = true;
  answer = ProduceV4(ValidatorConfig(), false, "application/octet-stream");
  ASSERT_TRUE(answer);
  ASSERT_TRUE(::breaker::testing::WaitFor([&] { return port_->counters().bids_reported == 1; }));
  const std::vector<client::FakeClient::Reported> reports = client_.reports();
  ASSERT_EQ(reports.size(), 1u);
  const auto* bid = std::get_if<core::BidSeen>(&reports[0].event);
  ASSERT_NE(bid, nullptr);
  EXPECT_EQ(bid->builder, block.builder_index);
  EXPECT_EQ(bid->relay, "https://relay.example");
}

TEST_F(ValidatorPortTest, ThePolicyInForceAtArrivalDecides) {
  client_.SetPolicy(PolicyIn(core::Mode::kAllBuilders, 9), client::PolicySource::kFleet);
  node_.block_production().Script([] {
    ProductionScript s;
    s.delay = absl::Milliseconds(300);
    return s;
  }());
  std::thread request([&] { ASSERT_TRUE(ProduceV4(ValidatorConfig(), false)); });
  ASSERT_TRUE(::breaker::testing::WaitFor([&] { return port_->counters().requests == 1; }));
  client_.SetPolicy(PolicyIn(core::Mode::kSelfBuild, 10), client::PolicySource::kFleet);
  request.join();
  ASSERT_TRUE(LastProduction().config.has_value());
  EXPECT_EQ(LastProduction().config->builders.size(), 2u);
  // Counted under the mode it was served in.
  EXPECT_EQ(
      port_->counters().blocks_by_mode_and_source[0][static_cast<size_t>(PayloadSource::kLocal)],
      1u);
}

TEST_F(ValidatorPortTest, EventsStreamThroughAsTheyCome) {
  httplib::Client caller = Caller();
  Mutex mu;
  std::string received;
  std::thread stream([&] {
    caller.Get("/eth/v1/events?topics=head", [&](const char* data, size_t size) {
      MutexLock lock(&mu);
      received.append(data, size);
      return received.find("\"slot\":\"77\"") == std::string::npos;
    });
  });
  ASSERT_TRUE(::breaker::testing::WaitFor([&] { return node_.streams_open() == 1; }));
  node_.Emit("head", R"({"slot":"77"})");
  // The event arrives while the stream stays open: nothing waits for its end.
  EXPECT_TRUE(::breaker::testing::WaitFor([&] {
    MutexLock lock(&mu);
    return received.find("\"slot\":\"77\"") != std::string::npos;
  }));
  stream.join();
}

TEST(ValidatorPortDownTest, ABeaconNodeThatIsDownIsAnswered503AtOnce) {
  // A port nothing listens on: bound, then closed.
  int closed_port = 0;
  {
    const int sock = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof(address);
    ASSERT_EQ(bind(sock, reinterpret_cast<sockaddr*>(&address), size), 0);
    ASSERT_EQ(getsockname(sock, reinterpret_cast<sockaddr*>(&address), &size), 0);
    closed_port = ntohs(address.sin_port);
    close(sock);
  }
  const std::string url = absl::StrCat("http://127.0.0.1:", closed_port);
  client::FakeClient client;
  ValidatorPortOptions options;
  options.beacon_node_url = url;
  options.beacon_node_base = url;
  ValidatorPort port(options, client, SystemClock());
  ASSERT_THAT(port.Start(), IsOk());
  httplib::Client caller("127.0.0.1", port.port());
  const absl::Time start = absl::Now();
  httplib::Result answer = caller.Get("/eth/v1/node/syncing");
  ASSERT_TRUE(answer);
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(900));
  EXPECT_EQ(answer->status, 503);
  EXPECT_THAT(answer->body, HasSubstr(url));
  EXPECT_EQ(port.counters().beacon_node_unreachable, 1u);
}

// A beacon node that answers {} to every request, on connections it keeps alive, or closes
// after one answer as one does with a kept-alive connection idle past its timeout.
class RawNode {
 public:
  explicit RawNode(bool close_after_answer) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof(address);
    bind(listener_, reinterpret_cast<sockaddr*>(&address), size);
    getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size);
    port_ = ntohs(address.sin_port);
    listen(listener_, 16);
    thread_ = std::thread([this, close_after_answer] {
      int connection;
      // Each connection on a thread of its own: the port may open a second one while its first
      // is still on its way back to the pool.
      while ((connection = accept(listener_, nullptr, nullptr)) >= 0) {
        ++connections_;
        MutexLock lock(&mu_);
        serving_.emplace_back(
            [connection, close_after_answer] { Serve(connection, close_after_answer); });
      }
    });
  }
  ~RawNode() {
    shutdown(listener_, SHUT_RDWR);
    close(listener_);
    thread_.join();
    MutexLock lock(&mu_);
    for (std::thread& serving : serving_) serving.join();
  }
  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }
  int connections() const { return connections_; }

 private:
  // Answers every request on `connection` until the port closes it (or after one answer).
  static void Serve(int connection, bool close_after_answer) {
    std::string received;
    char buffer[4096];
    ssize_t got;
    while ((got = read(connection, buffer, sizeof(buffer))) > 0) {
      received.append(buffer, got);
      size_t end;
      while ((end = received.find("\r\n\r\n")) != std::string::npos) {
        received.erase(0, end + 4);
        const std::string answer =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            "Content-Length: 2\r\n\r\n{}";
        if (write(connection, answer.data(), answer.size()) < 0) break;
      }
      if (close_after_answer) break;
    }
    close(connection);
  }

  int listener_ = -1;
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::thread thread_;
  Mutex mu_;
  std::vector<std::thread> serving_ ABSL_GUARDED_BY(mu_);
};

// Requests through a port in front of `node` until one goes on a kept connection, then three
// more; every one is answered 200. Returns the port's request count.
uint64_t RequestUntilAConnectionIsKept(RawNode& node) {
  client::FakeClient client;
  ValidatorPortOptions options;
  options.beacon_node_url = node.url();
  options.beacon_node_base = node.url();
  ValidatorPort port(options, client, SystemClock());
  EXPECT_THAT(port.Start(), IsOk());
  httplib::Client caller("127.0.0.1", port.port());
  const auto ask = [&] {
    httplib::Result answer = caller.Get("/eth/v1/node/syncing");
    EXPECT_TRUE(answer && answer->status == 200) << (answer ? answer->body : "no answer");
  };
  EXPECT_TRUE(::breaker::testing::WaitFor([&] {
    ask();
    return port.counters().node_connections_reused > 0;
  }));
  for (int i = 0; i < 3; ++i) ask();
  EXPECT_EQ(port.counters().beacon_node_unreachable, 0u);
  return port.counters().requests;
}

TEST(ValidatorPortKeepAliveTest, KeepsItsConnectionToTheNodeAliveBetweenRequests) {
  RawNode node(/*close_after_answer=*/false);
  const uint64_t requests = RequestUntilAConnectionIsKept(node);
  EXPECT_LT(node.connections(), static_cast<int>(requests));
}

TEST(ValidatorPortKeepAliveTest, AKeptConnectionTheNodeClosedIsReplaced) {
  RawNode node(/*close_after_answer=*/true);
  const uint64_t requests = RequestUntilAConnectionIsKept(node);
  // Every request came on a connection of its own: a kept one was found closed.
  EXPECT_EQ(node.connections(), static_cast<int>(requests));
}

TEST(ValidatorPortSlowTest, ABeaconNodeThatDoesNotAnswerIsAnswered504) {
  FakeBeaconNode node(Chain());
  node.block_production().Script([] {
    ProductionScript s;
    s.delay = absl::Seconds(2);
    return s;
  }());
  client::FakeClient client;
  ValidatorPortOptions options;
  options.beacon_node_url = node.url();
  options.beacon_node_base = node.url();
  options.answer_timeout = absl::Milliseconds(200);
  ValidatorPort port(options, client, SystemClock());
  ASSERT_THAT(port.Start(), IsOk());
  httplib::Client caller("127.0.0.1", port.port());
  httplib::Result answer = caller.Post(kV4Path, "{}", "application/json");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 504);
  EXPECT_THAT(answer->body, HasSubstr("sent no answer"));
}

}  // namespace
}  // namespace breaker::sidecar::validator
