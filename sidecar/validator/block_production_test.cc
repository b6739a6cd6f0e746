#include "sidecar/validator/block_production.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sidecar/ssz/builder_config.h"
#include "tests/support/status_matchers.h"

namespace breaker::sidecar::validator {
namespace {

using ::breaker::testing::IsOk;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Json = nlohmann::json;

constexpr uint64_t kMax = UINT64_MAX;

std::string Key(char c) { return std::string(48, c); }

ssz::BuilderEntry Entry(std::string url, std::vector<std::string> keys = {}) {
  ssz::BuilderEntry entry;
  entry.auth.message.data = url;
  entry.url = std::move(url);
  entry.auth.message.slot = 12;
  entry.auth.signature = std::string(96, '\x07');
  entry.builder_pubkeys = std::move(keys);
  entry.max_execution_payment = 5;
  entry.min_bid = 6;
  entry.builder_boost_factor = 100;
  return entry;
}

ssz::BuilderConfig Config(std::vector<ssz::BuilderEntry> entries) {
  ssz::BuilderConfig config;
  config.min_bid = 7;
  config.builder_boost_factor = 90;
  config.builders = std::move(entries);
  return config;
}

// A policy: relay "banned.example" banned, "trusted.example" trusted, builder keys 'B' banned
// and 'T' trusted; the sidecar's port 18550 serves the banned relay, 18551 a relay its
// configuration trusts.
RewriteRules Rules(core::Mode mode) {
  RewriteRules rules;
  rules.mode = mode;
  rules.banned_relays = {"https://banned.example"};
  rules.trusted_relays = {"https://trusted.example"};
  rules.banned_keys = {Key('B')};
  rules.trusted_keys = {Key('T')};
  rules.own_ports["http://127.0.0.1:18550"] = {"https://banned.example", false};
  rules.own_ports["http://127.0.0.1:18551"] = {"https://configured.example", true};
  return rules;
}

enum class Encoding { kJson, kSsz };

std::string Encode(const ssz::BuilderConfig& config, Encoding encoding) {
  return encoding == Encoding::kSsz ? ssz::BuilderConfigToSsz(config)
                                    : ssz::BuilderConfigToJson(config).dump();
}

std::string ContentType(Encoding encoding) {
  return encoding == Encoding::kSsz ? "application/octet-stream" : "application/json";
}

ssz::BuilderConfig Decode(const std::string& body, Encoding encoding) {
  absl::StatusOr<ssz::BuilderConfig> config = encoding == Encoding::kSsz
                                                  ? ssz::BuilderConfigFromSsz(body)
                                                  : ssz::BuilderConfigFromJson(Json::parse(body));
  EXPECT_THAT(config.status(), IsOk());
  return config.ok() ? *config : ssz::BuilderConfig{};
}

std::vector<std::string> Urls(const ssz::BuilderConfig& config) {
  std::vector<std::string> urls;
  for (const ssz::BuilderEntry& entry : config.builders) urls.push_back(entry.url);
  return urls;
}

class RewriteV4Test : public ::testing::TestWithParam<Encoding> {
 protected:
  V4Rewrite Rewrite(const ssz::BuilderConfig& config, core::Mode mode) {
    return RewriteProduceBlockV4(Encode(config, GetParam()), ContentType(GetParam()), Rules(mode));
  }
  ssz::BuilderConfig Forwarded(const V4Rewrite& rewrite) {
    return Decode(rewrite.body, GetParam());
  }
};

TEST_P(RewriteV4Test, AllBuildersDropsBannedRelaysInAnySpellingAndTheirOwnPort) {
  const ssz::BuilderConfig config =
      Config({Entry("https://relay.example"), Entry("HTTPS://Banned.Example:443/"),
              Entry("https://0xabc@banned.example"), Entry("http://127.0.0.1:18550"),
              Entry("http://127.0.0.1:18551")});
  const V4Rewrite rewrite = Rewrite(config, core::Mode::kAllBuilders);
  EXPECT_TRUE(rewrite.changed);
  EXPECT_EQ(rewrite.refused, 3u);
  const ssz::BuilderConfig forwarded = Forwarded(rewrite);
  EXPECT_THAT(Urls(forwarded), ElementsAre("https://relay.example", "http://127.0.0.1:18551"));
  // The top level and the kept entries as sent.
  EXPECT_EQ(forwarded.min_bid, 7u);
  EXPECT_EQ(forwarded.builder_boost_factor, 90u);
  EXPECT_EQ(ssz::BuilderEntryToSsz(forwarded.builders[0]),
            ssz::BuilderEntryToSsz(config.builders[0]));
}

TEST_P(RewriteV4Test, AllBuildersDropsBannedKeysAndAnEntryWhoseKeysWereAllBanned) {
  const ssz::BuilderConfig config = Config({
      Entry("https://a.example", {Key('x'), Key('B'), Key('y')}),
      Entry("https://b.example", {Key('B')}),
      Entry("https://c.example", {}),
  });
  const V4Rewrite rewrite = Rewrite(config, core::Mode::kAllBuilders);
  EXPECT_EQ(rewrite.keys_dropped, 1u);
  EXPECT_EQ(rewrite.refused, 1u);
  const ssz::BuilderConfig forwarded = Forwarded(rewrite);
  ASSERT_THAT(Urls(forwarded), ElementsAre("https://a.example", "https://c.example"));
  EXPECT_THAT(forwarded.builders[0].builder_pubkeys, ElementsAre(Key('x'), Key('y')));
  EXPECT_THAT(forwarded.builders[1].builder_pubkeys, IsEmpty());
}

TEST_P(RewriteV4Test, AllBuildersForwardsAnAllowedBodyByteForByte) {
  const std::string body = Encode(Config({Entry("https://a.example", {Key('x')})}), GetParam());
  const V4Rewrite rewrite =
      RewriteProduceBlockV4(body, ContentType(GetParam()), Rules(core::Mode::kAllBuilders));
  EXPECT_FALSE(rewrite.changed);
  EXPECT_EQ(rewrite.body, body);
}

TEST_P(RewriteV4Test, TrustedOnlyKeepsTrustedEntriesAndRanksP2pDown) {
  const ssz::BuilderConfig config = Config({
      Entry("https://relay.example"),                        // untrusted, any builder
      Entry("https://trusted.example/", {Key('x')}),         // trusted relay
      Entry("https://relay.example", {Key('T')}),            // trusted builder's key
      Entry("https://relay.example", {Key('T'), Key('x')}),  // narrowed to the trusted key
      Entry("https://relay.example", {Key('x')}),            // untrusted builder
      Entry("http://127.0.0.1:18551"),                       // a port the config trusts
      Entry("https://trusted.example", {Key('B')}),          // a banned builder, trusted relay
  });
  const V4Rewrite rewrite = Rewrite(config, core::Mode::kTrustedOnly);
  const ssz::BuilderConfig forwarded = Forwarded(rewrite);
  EXPECT_THAT(Urls(forwarded), ElementsAre("https://trusted.example/", "https://relay.example",
                                           "https://relay.example", "http://127.0.0.1:18551"));
  EXPECT_THAT(forwarded.builders[2].builder_pubkeys, ElementsAre(Key('T')));
  EXPECT_EQ(forwarded.min_bid, kMax);
  EXPECT_EQ(forwarded.builder_boost_factor, 0u);
  EXPECT_EQ(rewrite.refused, 3u);
}

TEST_P(RewriteV4Test, SelfBuildSendsNoBuilderAndRanksP2pDown) {
  const V4Rewrite rewrite = Rewrite(
      Config({Entry("https://trusted.example"), Entry("https://relay.example", {Key('T')})}),
      core::Mode::kSelfBuild);
  const ssz::BuilderConfig forwarded = Forwarded(rewrite);
  EXPECT_THAT(forwarded.builders, IsEmpty());
  EXPECT_EQ(forwarded.min_bid, kMax);
  EXPECT_EQ(forwarded.builder_boost_factor, 0u);
  EXPECT_EQ(rewrite.refused, 2u);
}

TEST_P(RewriteV4Test, AnEntryWhoseUrlCannotBeNormalizedIsDropped) {
  const V4Rewrite rewrite = Rewrite(
      Config({Entry("ftp://relay.example"), Entry("https://a.example")}), core::Mode::kAllBuilders);
  EXPECT_THAT(Urls(Forwarded(rewrite)), ElementsAre("https://a.example"));
}

TEST_P(RewriteV4Test, UnreadableTopLevelIsUntouchedInAllBuildersAndSelfBuildElsewhere) {
  const std::string body = GetParam() == Encoding::kSsz ? std::string("\x01\x02\x03", 3)
                                                        : std::string("{\"builders\": 3}");
  const V4Rewrite all =
      RewriteProduceBlockV4(body, ContentType(GetParam()), Rules(core::Mode::kAllBuilders));
  EXPECT_TRUE(all.unreadable);
  EXPECT_FALSE(all.changed);
  EXPECT_EQ(all.body, body);
  EXPECT_FALSE(all.error.empty());
  for (core::Mode mode : {core::Mode::kTrustedOnly, core::Mode::kSelfBuild}) {
    const V4Rewrite other = RewriteProduceBlockV4(body, ContentType(GetParam()), Rules(mode));
    EXPECT_TRUE(other.unreadable);
    EXPECT_TRUE(other.changed);
    const ssz::BuilderConfig forwarded = Forwarded(other);
    EXPECT_THAT(forwarded.builders, IsEmpty());
    EXPECT_EQ(forwarded.min_bid, kMax);
    EXPECT_EQ(forwarded.builder_boost_factor, 0u);
  }
}

TEST_P(RewriteV4Test, AnEmptyBodyIsUnreadable) {
  const V4Rewrite rewrite =
      RewriteProduceBlockV4("", ContentType(GetParam()), Rules(core::Mode::kTrustedOnly));
  EXPECT_TRUE(rewrite.unreadable);
  EXPECT_THAT(Forwarded(rewrite).builders, IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(Encodings, RewriteV4Test,
                         ::testing::Values(Encoding::kJson, Encoding::kSsz),
                         [](const ::testing::TestParamInfo<Encoding>& info) {
                           return info.param == Encoding::kSsz ? "Ssz" : "Json";
                         });

TEST(RewriteV4JsonTest, AMalformedEntryIsDroppedAndTheRestRead) {
  Json body = ssz::BuilderConfigToJson(
      Config({Entry("https://a.example"), Entry("https://banned.example")}));
  body["builders"].push_back(nullptr);
  body["builders"].push_back(Json{{"url", "https://missing-auth.example"}});
  Json over = ssz::BuilderEntryToJson(Entry("https://over.example"));
  over["min_bid"] = "18446744073709551616";
  body["builders"].push_back(over);
  const V4Rewrite rewrite =
      RewriteProduceBlockV4(body.dump(), "application/json", Rules(core::Mode::kAllBuilders));
  EXPECT_FALSE(rewrite.unreadable);
  EXPECT_EQ(rewrite.entries, 5u);
  EXPECT_EQ(rewrite.malformed, 3u);
  EXPECT_EQ(rewrite.refused, 1u);
  EXPECT_EQ(rewrite.kept, 1u);
  EXPECT_THAT(Urls(Decode(rewrite.body, Encoding::kJson)), ElementsAre("https://a.example"));
}

TEST(RewriteV4JsonTest, KeepsUnknownMembersAndTheKeysSpelling) {
  Json body = ssz::BuilderConfigToJson(Config({Entry("https://a.example", {Key('B'), Key('x')})}));
  body["builders"][0]["builder_pubkeys"][1] = "0x" + std::string(96, 'A');
  body["builders"][0]["extra"] = "kept";
  const V4Rewrite rewrite =
      RewriteProduceBlockV4(body.dump(), "application/json", Rules(core::Mode::kAllBuilders));
  const Json forwarded = Json::parse(rewrite.body);
  EXPECT_EQ(forwarded["builders"][0]["extra"], "kept");
  EXPECT_EQ(forwarded["builders"][0]["builder_pubkeys"],
            Json::array({"0x" + std::string(96, 'A')}));
}

TEST(RewriteV4JsonTest, CopiesKeptEntriesAsTheyCameAndWritesOnlyWhatChanges) {
  const std::string trusted =
      ssz::BuilderEntryToJson(Entry("https://trusted.example", {Key('T'), Key('x')})).dump(1);
  const std::string banned = ssz::BuilderEntryToJson(Entry("https://banned.example")).dump();
  // builders and min_bid named twice: every value is replaced, whichever one the node reads.
  const std::string body =
      "{\"builders\": [], \"min_bid\" : \"7\", \"min_bid\": 8,\n"
      "\"builder_boost_factor\": 90, \"builders\": [ " +
      trusted + " , " + banned + " ], \"x\": [1.50]}";
  const V4Rewrite rewrite =
      RewriteProduceBlockV4(body, "application/json", Rules(core::Mode::kTrustedOnly));
  EXPECT_EQ(rewrite.kept, 1u);
  EXPECT_EQ(rewrite.refused, 1u);
  const std::string kept = "[" + trusted + "]";
  EXPECT_EQ(rewrite.body, "{\"builders\": " + kept +
                              ", \"min_bid\" : \"18446744073709551615\", "
                              "\"min_bid\": \"18446744073709551615\",\n"
                              "\"builder_boost_factor\": \"0\", \"builders\": " +
                              kept + ", \"x\": [1.50]}");
}

TEST(RewriteV4JsonTest, AnEntryNamingItsUrlTwiceIsMalformed) {
  // The node could read either url; the sidecar judged one.
  std::string twice = ssz::BuilderEntryToJson(Entry("https://a.example")).dump();
  twice.insert(1, "\"url\":\"https://banned.example\",");
  const std::string body =
      R"({"min_bid":"1","builder_boost_factor":"2","builders":[)" + twice + "]}";
  const V4Rewrite rewrite =
      RewriteProduceBlockV4(body, "application/json", Rules(core::Mode::kAllBuilders));
  EXPECT_EQ(rewrite.malformed, 1u);
  EXPECT_THAT(Decode(rewrite.body, Encoding::kJson).builders, IsEmpty());
}

TEST(RewriteV4SszTest, AMalformedEntryIsDroppedAndTheRestRead) {
  ssz::BuilderEntry long_url = Entry(std::string(ssz::kMaxBuilderUrlBytes + 1, 'a'));
  const std::string body = ssz::BuilderConfigToSsz(
      Config({Entry("https://a.example"), long_url, Entry("https://b.example")}));
  const V4Rewrite rewrite =
      RewriteProduceBlockV4(body, "application/octet-stream", Rules(core::Mode::kAllBuilders));
  EXPECT_EQ(rewrite.malformed, 1u);
  EXPECT_THAT(Urls(Decode(rewrite.body, Encoding::kSsz)),
              ElementsAre("https://a.example", "https://b.example"));
}

TEST(RewriteV4SszTest, ATruncatedBodyLosesItsLastEntryOrItsTopLevel) {
  const std::string body = ssz::BuilderConfigToSsz(
      Config({Entry("https://a.example"), Entry("https://banned.example")}));
  // Cut in the last entry: that entry is malformed, the rest read.
  const V4Rewrite cut_entry =
      RewriteProduceBlockV4(body.substr(0, body.size() - 10), "application/octet-stream",
                            Rules(core::Mode::kAllBuilders));
  EXPECT_FALSE(cut_entry.unreadable);
  EXPECT_EQ(cut_entry.malformed, 1u);
  EXPECT_THAT(Urls(Decode(cut_entry.body, Encoding::kSsz)), ElementsAre("https://a.example"));
  // Cut in the top level's fixed part: replaced by the self-build config.
  const V4Rewrite cut_top = RewriteProduceBlockV4(
      body.substr(0, 12), "Application/Octet-Stream; charset=x", Rules(core::Mode::kSelfBuild));
  EXPECT_TRUE(cut_top.unreadable);
  EXPECT_THAT(Decode(cut_top.body, Encoding::kSsz).builders, IsEmpty());
}

TEST(RulesOfTest, MatchesBannedAndTrustedBuildersByTheKeysThePolicyCarries) {
  core::Policy policy;
  policy.mode = core::Mode::kTrustedOnly;
  policy.banned_builders[5] = core::Ban{};
  policy.banned_builders[6] = core::Ban{};  // no key known
  policy.trusted_builders = {7};
  policy.builder_pubkeys = {{5, Key('B')}, {7, Key('T')}, {8, Key('x')}};
  policy.banned_relays["https://banned.example"] = core::Ban{};
  policy.trusted_relays = {"https://trusted.example"};
  const RewriteRules rules = RulesOf(policy, {{"http://127.0.0.1:18550", {"https://r", true}}});
  EXPECT_EQ(rules.mode, core::Mode::kTrustedOnly);
  EXPECT_THAT(rules.banned_keys, ElementsAre(Key('B')));
  EXPECT_THAT(rules.trusted_keys, ElementsAre(Key('T')));
  EXPECT_THAT(rules.banned_relays, ElementsAre("https://banned.example"));
  EXPECT_THAT(rules.trusted_relays, ElementsAre("https://trusted.example"));
  EXPECT_TRUE(rules.own_ports.contains("http://127.0.0.1:18550"));
}

TEST(ClassifyBlockRouteTest, KnowsV3AndV4ByMethodAndPath) {
  EXPECT_EQ(ClassifyBlockRoute("GET", "/eth/v3/validator/blocks/12"), BlockRoute::kProduceBlockV3);
  EXPECT_EQ(ClassifyBlockRoute("POST", "/eth/v4/validator/blocks/12"), BlockRoute::kProduceBlockV4);
  EXPECT_EQ(ClassifyBlockRoute("GET", "/eth/v4/validator/blocks/12"), BlockRoute::kOther);
  EXPECT_EQ(ClassifyBlockRoute("GET", "/eth/v3/validator/blocks/"), BlockRoute::kOther);
  EXPECT_EQ(ClassifyBlockRoute("GET", "/eth/v3/validator/blocks/1/x"), BlockRoute::kOther);
  EXPECT_EQ(ClassifyBlockRoute("GET", "/eth/v1/node/health"), BlockRoute::kOther);
}

TEST(RewriteV3QueryTest, SelfBuildReplacesAnyBoostFactor) {
  EXPECT_EQ(RewriteProduceBlockV3Query("randao_reveal=0x1&builder_boost_factor=100&graffiti=g",
                                       core::Mode::kSelfBuild),
            "randao_reveal=0x1&builder_boost_factor=0&graffiti=g");
  EXPECT_EQ(RewriteProduceBlockV3Query("randao_reveal=0x1", core::Mode::kSelfBuild),
            "randao_reveal=0x1&builder_boost_factor=0");
  EXPECT_EQ(RewriteProduceBlockV3Query("builder_boost_factor=1&builder_boost_factor=2",
                                       core::Mode::kSelfBuild),
            "builder_boost_factor=0");
  EXPECT_EQ(RewriteProduceBlockV3Query("", core::Mode::kSelfBuild), "builder_boost_factor=0");
}

TEST(RewriteV3QueryTest, OtherModesLeaveTheQueryAsSent) {
  for (core::Mode mode : {core::Mode::kAllBuilders, core::Mode::kTrustedOnly}) {
    EXPECT_EQ(RewriteProduceBlockV3Query("randao_reveal=0x1&builder_boost_factor=100", mode),
              "randao_reveal=0x1&builder_boost_factor=100");
  }
}

BlockOutcome Outcome(BlockRoute route, bool include_payload,
                     std::map<std::string, std::string> headers) {
  return ReadBlockOutcome(route, include_payload, [&](absl::string_view name) {
    const auto it = headers.find(std::string(name));
    return it == headers.end() ? std::string() : it->second;
  });
}

TEST(ReadBlockOutcomeTest, TellsWhoWonFromTheHeaders) {
  const BlockOutcome builder = Outcome(BlockRoute::kProduceBlockV4, true,
                                       {{"Eth-Builder-Url", "https://a.example"},
                                        {"Eth-Execution-Payload-Included", "false"},
                                        {"Eth-Execution-Payload-Value", "123"},
                                        {"Eth-Consensus-Block-Value", "45"}});
  EXPECT_EQ(builder.source, PayloadSource::kBuilderApi);
  EXPECT_EQ(builder.builder_url, "https://a.example");
  EXPECT_EQ(builder.payload_value, "123");
  EXPECT_EQ(builder.consensus_value, "45");
  EXPECT_EQ(
      Outcome(BlockRoute::kProduceBlockV4, true, {{"Eth-Execution-Payload-Included", "false"}})
          .source,
      PayloadSource::kP2p);
  EXPECT_EQ(
      Outcome(BlockRoute::kProduceBlockV4, false, {{"Eth-Execution-Payload-Included", "false"}})
          .source,
      PayloadSource::kUnknown);
  EXPECT_EQ(
      Outcome(BlockRoute::kProduceBlockV4, false, {{"Eth-Execution-Payload-Included", "True"}})
          .source,
      PayloadSource::kLocal);
  EXPECT_EQ(Outcome(BlockRoute::kProduceBlockV3, false, {{"Eth-Execution-Payload-Blinded", "true"}})
                .source,
            PayloadSource::kBuilderApi);
  EXPECT_EQ(
      Outcome(BlockRoute::kProduceBlockV3, false, {{"Eth-Execution-Payload-Blinded", "false"}})
          .source,
      PayloadSource::kLocal);
  EXPECT_EQ(Outcome(BlockRoute::kProduceBlockV3, false, {}).source, PayloadSource::kUnknown);
}

}  // namespace
}  // namespace breaker::sidecar::validator
