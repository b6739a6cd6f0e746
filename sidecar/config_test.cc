#include "sidecar/config.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::sidecar {
namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kMinimal[] = R"(
  breakerd_addresses: "127.0.0.1:50051"
  node_id: "bn-1"
  upstreams { listen_port: 18601 url: "http://0xabcd@Relay.Example.COM:80/base/" trusted: true }
)";

TEST(SidecarConfigTest, TheExampleLoads) {
  absl::StatusOr<SidecarSettings> settings = LoadSidecarConfig("examples/sidecar.textproto");
  ASSERT_THAT(settings, IsOk());
  EXPECT_EQ(settings->node_id, "node-1");
  ASSERT_EQ(settings->upstreams.size(), 2u);
  EXPECT_EQ(settings->upstreams[0].listen_port, 18601);
  EXPECT_EQ(settings->upstreams[0].relay_id, "https://boost-relay.flashbots.net");
  EXPECT_TRUE(settings->upstreams[0].trusted);
  EXPECT_FALSE(settings->upstreams[1].trusted);
}

TEST(SidecarConfigTest, DefaultsAndTheUpstreamsSplitUrl) {
  absl::StatusOr<SidecarSettings> settings = ParseSidecarConfig(kMinimal, "s.textproto");
  ASSERT_THAT(settings, IsOk());
  EXPECT_EQ(settings->listen_host, "127.0.0.1");
  EXPECT_EQ(settings->upstream_timeout, absl::Seconds(10));
  EXPECT_EQ(settings->max_body_bytes, 16u << 20);
  const UpstreamSettings& upstream = settings->upstreams.at(0);
  EXPECT_EQ(upstream.relay_id, "http://relay.example.com/base");
  EXPECT_EQ(upstream.scheme_host_port, "http://Relay.Example.COM:80");
  EXPECT_EQ(upstream.path_prefix, "/base");
}

TEST(SidecarConfigTest, TheBeaconNodeUrlIsSplitAndTheStalenessLimitRead) {
  absl::StatusOr<SidecarSettings> settings = ParseSidecarConfig(
      std::string(kMinimal) +
          "beacon_node_url: \"http://user@127.0.0.1:5052/api/\" staleness_limit_seconds: 30\n",
      "s.textproto");
  ASSERT_THAT(settings, IsOk());
  EXPECT_EQ(settings->beacon_node_base, "http://127.0.0.1:5052");
  EXPECT_EQ(settings->beacon_node_path_prefix, "/api");
  EXPECT_EQ(settings->staleness_limit, absl::Seconds(30));
  absl::StatusOr<SidecarSettings> defaults = ParseSidecarConfig(kMinimal, "s.textproto");
  ASSERT_THAT(defaults, IsOk());
  EXPECT_TRUE(defaults->beacon_node_base.empty());
  EXPECT_EQ(defaults->staleness_limit, absl::ZeroDuration());
}

TEST(SidecarConfigTest, TheValidatorPortIsReadOnlyWithABeaconNode) {
  absl::StatusOr<SidecarSettings> settings = ParseSidecarConfig(
      std::string(kMinimal) +
          "beacon_node_url: \"http://127.0.0.1:5052\" validator_listen: \"[::1]:5062\"\n",
      "s.textproto");
  ASSERT_THAT(settings, IsOk());
  EXPECT_EQ(settings->validator_listen_host, "::1");
  EXPECT_EQ(settings->validator_listen_port, 5062);
  absl::StatusOr<SidecarSettings> defaults = ParseSidecarConfig(kMinimal, "s.textproto");
  ASSERT_THAT(defaults, IsOk());
  EXPECT_TRUE(defaults->validator_listen_host.empty());
}

TEST(SidecarConfigTest, ErrorsNameTheField) {
  const std::string base = R"(breakerd_addresses: "a:1" node_id: "n" )";
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {R"(node_id: "n" upstreams { listen_port: 1 url: "http://r" })",
       "breakerd_addresses: required"},
      {R"(breakerd_addresses: "a:1" upstreams { listen_port: 1 url: "http://r" })",
       "node_id: required"},
      {base, "upstreams: at least one is required"},
      {base + R"(upstreams { url: "http://r" })", "upstreams[0].listen_port: 0 is not in 1..65535"},
      {base + R"(upstreams { listen_port: 70000 url: "http://r" })",
       "upstreams[0].listen_port: 70000"},
      {base + R"(upstreams { listen_port: 1 url: "http://r" } )" +
           R"(upstreams { listen_port: 1 url: "http://s" })",
       "upstreams[1].listen_port: 1 is already another upstream's"},
      {base + R"(upstreams { listen_port: 1 })", "upstreams[0].url: required"},
      {base + R"(upstreams { listen_port: 1 url: "ftp://r" })", "upstreams[0].url:"},
      {base + R"(upstreams { listen_port: 1 url: "http://r?x=1" })", "upstreams[0].url:"},
      {base + R"(upstream_timeout_ms: 60001 upstreams { listen_port: 1 url: "http://r" })",
       "upstream_timeout_ms: 60001 is not in 1..60000"},
      {base + R"(max_body_bytes: 10 upstreams { listen_port: 1 url: "http://r" })",
       "max_body_bytes: 10 is not in 1024..67108864"},
      {base + R"(tls_cert_file: "c" upstreams { listen_port: 1 url: "http://r" })",
       "tls_key_file:"},
      {base + R"(beacon_node_url: "127.0.0.1:5052" upstreams { listen_port: 1 url: "http://r" })",
       "beacon_node_url: '127.0.0.1:5052' is not an http:// or https:// URL"},
      {base + R"(staleness_limit_seconds: 86401 upstreams { listen_port: 1 url: "http://r" })",
       "staleness_limit_seconds: 86401 is not in 1..86400"},
      {base +
           R"(validator_listen: "127.0.0.1" beacon_node_url: "http://b" upstreams { listen_port: 1 url: "http://r" })",
       "validator_listen: \"127.0.0.1\" is not host:port"},
      {base +
           R"(validator_listen: "127.0.0.1:70000" beacon_node_url: "http://b" upstreams { listen_port: 1 url: "http://r" })",
       "validator_listen: \"127.0.0.1:70000\" is not host:port"},
      {base + R"(validator_listen: "127.0.0.1:5062" upstreams { listen_port: 1 url: "http://r" })",
       "validator_listen: needs beacon_node_url"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseSidecarConfig(c.text, "s.textproto"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.text;
  }
}

TEST(SidecarConfigTest, SyntaxErrorsHaveLineAndColumnAndUnknownFieldsAreNamed) {
  EXPECT_THAT(ParseSidecarConfig("node_id: \"n\"\nbogus: 1\n", "s.textproto"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("s.textproto:2:")));
  EXPECT_THAT(ParseSidecarConfig("bogus: 1\n", "s.textproto"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bogus")));
}

TEST(SidecarConfigTest, AMissingFileIsNotFound) {
  EXPECT_THAT(LoadSidecarConfig("no/such/file.textproto"), StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace breaker::sidecar
