// The sidecar's /metrics over real HTTP: what the enforcer counted and the policy in force.

#include "sidecar/metrics.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/fake_client.h"
#include "core/policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "sidecar/beacon/beacon_watcher.h"
#include "sidecar/builder/enforcer.h"
#include "tests/support/fake_beacon_node.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::sidecar {
namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::breaker::testing::WaitFor;
using ::testing::HasSubstr;

constexpr char kRelay[] = "http://relay.example";

std::string Scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(10);
  httplib::Result result = client.Get("/metrics");
  if (!result || result->status != 200) {
    ADD_FAILURE() << "scrape failed";
    return "";
  }
  return result->body;
}

MetricsSources WithWatcher(const Enforcer& enforcer, const client::BreakerClient& client,
                           const BeaconWatcher* watcher) {
  MetricsSources sources(enforcer, client);
  sources.watcher = watcher;
  return sources;
}

TEST(MetricsTest, ServesTheEnforcersCountsAndThePolicyInForce) {
  client::FakeClient client;
  Enforcer enforcer(client, {{kRelay, false}});
  absl::StatusOr<std::unique_ptr<Metrics>> metrics =
      Metrics::Start("127.0.0.1:0", MetricsSources(enforcer, client));
  ASSERT_THAT(metrics, IsOk());

  core::Policy policy;
  policy.version = 7;
  policy.mode = core::Mode::kSelfBuild;
  client.SetPolicy(policy, client::PolicySource::kFleet);
  EXPECT_TRUE(enforcer.Refuse(0, Route{Endpoint::kGetHeader, 5}).has_value());
  enforcer.OnForwarded(0, /*failed=*/false);
  enforcer.OnForwarded(0, /*failed=*/true);
  enforcer.OnForwarded(0, /*failed=*/true);
  EXPECT_TRUE(enforcer.OnBidAnswered(0, 5, 200, "garbage", "application/json").has_value());

  const std::string text = Scrape((*metrics)->port());
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_requests_total{upstream=\"http://"
                              "relay.example\",outcome=\"refused\"} 2"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_requests_total{upstream=\"http://"
                              "relay.example\",outcome=\"forwarded\"} 1"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_requests_total{upstream=\"http://relay.example\","
                              "outcome=\"upstream_error\"} 2"));
  EXPECT_THAT(
      text,
      HasSubstr("breaker_sidecar_malformed_answers_total{upstream=\"http://relay.example\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("breaker_sidecar_bids_seen_total{upstream=\"http://relay.example\"} 0"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_policy_version 7"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_policy_source{source=\"fleet\"} 1"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_policy_source{source=\"local\"} 0"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_mode{mode=\"self_build\"} 1"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_mode{mode=\"all_builders\"} 0"));
}

TEST(MetricsTest, WithoutABeaconNodeServesNoObserverMetrics) {
  client::FakeClient client;
  Enforcer enforcer(client, {{kRelay, false}});
  absl::StatusOr<std::unique_ptr<Metrics>> metrics =
      Metrics::Start("127.0.0.1:0", MetricsSources(enforcer, client));
  ASSERT_THAT(metrics, IsOk());
  EXPECT_THAT(Scrape((*metrics)->port()),
              ::testing::Not(HasSubstr("breaker_sidecar_beacon_stream_reconnects_total")));
}

TEST(MetricsTest, ServesWhatTheObserverOfTheBeaconNodeSaw) {
  core::ChainSpec chain;
  chain.network = "test";
  chain.genesis_time_unix = absl::ToUnixSeconds(absl::Now()) - 1000;
  chain.seconds_per_slot = 1;
  chain.slots_per_epoch = 8;
  testing::FakeBeaconNode node(chain);
  client::FakeClient client;
  BeaconWatcherOptions options;
  options.base = node.url();
  options.observer.chain = chain;
  options.tick_interval = absl::Milliseconds(20);
  absl::StatusOr<std::unique_ptr<BeaconWatcher>> watcher =
      BeaconWatcher::Start(options, SystemClock(), client);
  ASSERT_THAT(watcher, IsOk());
  Enforcer enforcer(client, {{kRelay, false}});
  absl::StatusOr<std::unique_ptr<Metrics>> metrics =
      Metrics::Start("127.0.0.1:0", WithWatcher(enforcer, client, watcher->get()));
  ASSERT_THAT(metrics, IsOk());
  // Syncing until the watcher has read the node's sync status: each scrape reads it anew.
  std::string text;
  EXPECT_TRUE(WaitFor([&] {
    text = Scrape((*metrics)->port());
    return absl::StrContains(text, "breaker_sidecar_beacon_node_syncing 0");
  }));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_beacon_node_syncing 0"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_beacon_stream_reconnects_total 0"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_beacon_bad_answers_total 0"));
  // Slots without a block are judged (and backfilled) as they end: how many by now depends on
  // timing, so only the series is asserted.
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_observed_total{kind=\"empty_slot\"} "));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_observed_total{kind=\"block\"} 0"));
}

TEST(MetricsTest, ServesTheFormOfTheTopicsQueryInUse) {
  core::ChainSpec chain;
  chain.network = "test";
  chain.genesis_time_unix = absl::ToUnixSeconds(absl::Now()) - 1000;
  chain.seconds_per_slot = 1;
  chain.slots_per_epoch = 8;
  testing::FakeBeaconNode node(chain);
  // Refuses the sidecar's first form: the comma-joined one is in use from then on.
  node.SetTopicsQuery(testing::TopicsQuery::kCommaOnly, /*refuse_other=*/true);
  client::FakeClient client;
  BeaconWatcherOptions options;
  options.base = node.url();
  options.observer.chain = chain;
  options.tick_interval = absl::Milliseconds(20);
  absl::StatusOr<std::unique_ptr<BeaconWatcher>> watcher =
      BeaconWatcher::Start(options, SystemClock(), client);
  ASSERT_THAT(watcher, IsOk());
  Enforcer enforcer(client, {{kRelay, false}});
  absl::StatusOr<std::unique_ptr<Metrics>> metrics =
      Metrics::Start("127.0.0.1:0", WithWatcher(enforcer, client, watcher->get()));
  ASSERT_THAT(metrics, IsOk());
  std::string text;
  EXPECT_TRUE(WaitFor([&] {
    text = Scrape((*metrics)->port());
    return absl::StrContains(text, "breaker_sidecar_beacon_topics_form{form=\"comma\"} 1");
  }));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_beacon_topics_form{form=\"comma\"} 1"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_beacon_topics_form{form=\"repeated\"} 0"));
}

TEST(MetricsTest, CountsTheRefusalsByReason) {
  client::FakeClient client;
  Enforcer enforcer(client, {{kRelay, false}});
  absl::StatusOr<std::unique_ptr<Metrics>> metrics =
      Metrics::Start("127.0.0.1:0", MetricsSources(enforcer, client));
  ASSERT_THAT(metrics, IsOk());
  const auto refused = [&](const std::string& reason) {
    return "breaker_sidecar_refused_total{upstream=\"http://relay.example\",reason=\"" + reason +
           "\"}";
  };
  // Every reason has its series from the first scrape, so that rate() works at once.
  std::string text = Scrape((*metrics)->port());
  for (const char* reason :
       {"self_build", "relay_banned", "not_trusted", "builder_banned", "unreadable_bid"}) {
    EXPECT_THAT(text, HasSubstr(refused(reason) + " 0")) << text;
  }

  core::Policy policy;
  policy.mode = core::Mode::kSelfBuild;
  client.SetPolicy(policy, client::PolicySource::kFleet);
  EXPECT_TRUE(enforcer.Refuse(0, Route{Endpoint::kGetHeader, 5}).has_value());
  EXPECT_TRUE(enforcer.Refuse(0, Route{Endpoint::kGetExecutionPayloadBid, 5}).has_value());
  policy.mode = core::Mode::kTrustedOnly;
  client.SetPolicy(policy, client::PolicySource::kFleet);
  EXPECT_TRUE(enforcer.Refuse(0, Route{Endpoint::kGetHeader, 6}).has_value());
  policy.mode = core::Mode::kAllBuilders;
  policy.banned_builders[42] = core::Ban{};
  client.SetPolicy(policy, client::PolicySource::kFleet);
  const std::string bid =
      "{\"version\":\"gloas\",\"data\":{\"message\":{\"slot\":\"7\",\"builder_index\":\"42\","
      "\"value\":\"1\"},\"signature\":\"0x00\"}}";
  EXPECT_TRUE(enforcer.OnBidAnswered(0, 7, 200, bid, "application/json").has_value());
  EXPECT_TRUE(enforcer.OnBidAnswered(0, 7, 200, "garbage", "application/json").has_value());
  policy.banned_relays[kRelay] = core::Ban{};
  client.SetPolicy(policy, client::PolicySource::kFleet);
  EXPECT_TRUE(enforcer.Refuse(0, Route{Endpoint::kGetHeader, 8}).has_value());
  // A status request is never refused.
  EXPECT_FALSE(enforcer.Refuse(0, Route{Endpoint::kStatus, 0}).has_value());

  text = Scrape((*metrics)->port());
  EXPECT_THAT(text, HasSubstr(refused("self_build") + " 2")) << text;
  EXPECT_THAT(text, HasSubstr(refused("not_trusted") + " 1")) << text;
  EXPECT_THAT(text, HasSubstr(refused("builder_banned") + " 1")) << text;
  EXPECT_THAT(text, HasSubstr(refused("unreadable_bid") + " 1")) << text;
  EXPECT_THAT(text, HasSubstr(refused("relay_banned") + " 1")) << text;
  // The reasons add up to the refused outcome.
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_requests_total{upstream=\"http://"
                              "relay.example\",outcome=\"refused\"} 6"));
}

TEST(MetricsTest, ServesTheUpstreamsAnswerTimesByRoute) {
  client::FakeClient client;
  Enforcer enforcer(client, {{kRelay, false}, {"http://other.example", false}});
  UpstreamLatency latency({kRelay, "http://other.example"});
  MetricsSources sources(enforcer, client);
  sources.latency = &latency;
  absl::StatusOr<std::unique_ptr<Metrics>> metrics = Metrics::Start("127.0.0.1:0", sources);
  ASSERT_THAT(metrics, IsOk());

  latency.Observe(0, Endpoint::kGetHeader, absl::Milliseconds(30));
  latency.Observe(0, Endpoint::kGetHeader, absl::Milliseconds(400));
  latency.Observe(1, Endpoint::kSubmitBlindedBlock, absl::Milliseconds(1500));
  latency.Observe(1, Endpoint::kGetExecutionPayloadBid, absl::Milliseconds(2));

  const std::string text = Scrape((*metrics)->port());
  EXPECT_THAT(text, HasSubstr("# TYPE breaker_sidecar_upstream_request_seconds histogram"));
  const std::string header =
      "breaker_sidecar_upstream_request_seconds_bucket{upstream=\"http://relay.example\","
      "route=\"header\",le=\"";
  EXPECT_THAT(text, HasSubstr(header + "0.025\"} 0")) << text;
  EXPECT_THAT(text, HasSubstr(header + "0.05\"} 1")) << text;
  EXPECT_THAT(text, HasSubstr(header + "0.3\"} 1")) << text;
  EXPECT_THAT(text, HasSubstr(header + "0.5\"} 2")) << text;
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_upstream_request_seconds_sum{upstream=\"http://"
                              "relay.example\",route=\"header\"} 0.43"))
      << text;
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_upstream_request_seconds_count{upstream=\"http://"
                              "other.example\",route=\"blinded_blocks\"} 1"))
      << text;
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_upstream_request_seconds_count{upstream=\"http://"
                              "other.example\",route=\"other\"} 1"))
      << text;
  // Every route of every upstream is there from the start.
  for (const char* route : {"status", "header", "blinded_blocks", "register_validators"}) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat("breaker_sidecar_upstream_request_seconds_count{"
                                             "upstream=\"http://other.example\",route=\"",
                                             route, "\"}")))
        << route;
  }
}

TEST(MetricsTest, ServesTheValidatorPortsBlockProductionByModeAndSource) {
  client::FakeClient client;
  core::Policy policy;
  policy.version = 3;
  policy.mode = core::Mode::kSelfBuild;
  client.SetPolicy(policy, client::PolicySource::kFleet);
  core::ChainSpec chain;
  chain.network = "test";
  chain.genesis_time_unix = 1700000000;
  chain.seconds_per_slot = 6;
  chain.slots_per_epoch = 8;
  testing::FakeBeaconNode node(chain);
  validator::ValidatorPortOptions options;
  options.beacon_node_url = node.url();
  options.beacon_node_base = node.url();
  validator::ValidatorPort port(options, client, SystemClock());
  ASSERT_THAT(port.Start(), IsOk());
  Enforcer enforcer(client, {{kRelay, false}});
  MetricsSources sources(enforcer, client);
  sources.validator_port = &port;
  absl::StatusOr<std::unique_ptr<Metrics>> metrics = Metrics::Start("127.0.0.1:0", sources);
  ASSERT_THAT(metrics, IsOk());

  httplib::Client caller("127.0.0.1", port.port());
  httplib::Result answer = caller.Post(
      "/eth/v4/validator/blocks/5?include_payload=true",
      R"({"min_bid":"0","builder_boost_factor":"100","builders":[]})", "application/json");
  ASSERT_TRUE(answer);
  ASSERT_EQ(answer->status, 200);

  const std::string text = Scrape((*metrics)->port());
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_validator_requests_total 1"));
  EXPECT_THAT(text,
              HasSubstr("breaker_sidecar_block_production_rewritten_total{mode=\"self_build\"} 1"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_blocks_produced_total{mode=\"self_build\","
                              "source=\"local\"} 1"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_blocks_produced_total{mode=\"all_builders\","
                              "source=\"p2p\"} 0"));
  EXPECT_THAT(text,
              HasSubstr("breaker_sidecar_builder_entries_dropped_total{cause=\"refused\"} 0"));
}

TEST(MetricsTest, ABadAddressNamesTheSetting) {
  client::FakeClient client;
  Enforcer enforcer(client, {{kRelay, false}});
  EXPECT_THAT(Metrics::Start("18550", MetricsSources(enforcer, client)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("metrics_listen '18550'")));
}

}  // namespace
}  // namespace breaker::sidecar
