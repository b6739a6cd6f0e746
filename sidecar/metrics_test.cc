// The sidecar's /metrics over real HTTP: what the enforcer counted and the policy in force.

#include "sidecar/metrics.h"

#include <memory>
#include <string>
#include <vector>

#include "client/fake_client.h"
#include "core/policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "sidecar/enforcer.h"
#include "tests/status_matchers.h"

namespace breaker::sidecar {
namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
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

TEST(MetricsTest, ServesTheEnforcersCountsAndThePolicyInForce) {
  client::FakeClient client;
  Enforcer enforcer(client, {{kRelay, false}});
  absl::StatusOr<std::unique_ptr<Metrics>> metrics =
      Metrics::Start("127.0.0.1:0", enforcer, client);
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
  EXPECT_THAT(text, HasSubstr(
      "breaker_sidecar_requests_total{upstream=\"http://relay.example\",outcome=\"refused\"} 2"));
  EXPECT_THAT(text, HasSubstr(
      "breaker_sidecar_requests_total{upstream=\"http://relay.example\",outcome=\"forwarded\"} 1"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_requests_total{upstream=\"http://relay.example\","
                              "outcome=\"upstream_error\"} 2"));
  EXPECT_THAT(text, HasSubstr(
      "breaker_sidecar_malformed_answers_total{upstream=\"http://relay.example\"} 1"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_bids_seen_total{upstream=\"http://relay.example\"} 0"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_policy_version 7"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_policy_source{source=\"fleet\"} 1"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_policy_source{source=\"local\"} 0"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_mode{mode=\"self_build\"} 1"));
  EXPECT_THAT(text, HasSubstr("breaker_sidecar_mode{mode=\"all_builders\"} 0"));
}

TEST(MetricsTest, ABadAddressNamesTheSetting) {
  client::FakeClient client;
  Enforcer enforcer(client, {{kRelay, false}});
  EXPECT_THAT(Metrics::Start("18550", enforcer, client),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("metrics_listen '18550'")));
}

}  // namespace
}  // namespace breaker::sidecar
