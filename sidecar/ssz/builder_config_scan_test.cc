#include "sidecar/ssz/builder_config_scan.h"

#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sidecar/ssz/builder_config.h"
#include "tests/support/status_matchers.h"

namespace breaker::sidecar::ssz {
namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

BuilderEntry SomeEntry() {
  BuilderEntry entry;
  entry.url = "https://relay.example";
  entry.auth.message.data = "data";
  entry.auth.message.slot = 12;
  entry.auth.signature = std::string(kBlsSignatureBytes, 's');
  entry.builder_pubkeys = {std::string(kBlsPubkeyBytes, 'a'), std::string(kBlsPubkeyBytes, 'b')};
  entry.max_execution_payment = 1;
  entry.min_bid = 2;
  entry.builder_boost_factor = 3;
  return entry;
}

std::string Body(const std::string& builders) {
  return R"({"min_bid":"1","builder_boost_factor":"2","builders":[)" + builders + "]}";
}

// The scan's verdict on one entry written as `entry`.
bool ScanWellFormed(const std::string& entry) {
  absl::StatusOr<ScannedBuilderConfig> config = ScanBuilderConfigJson(Body(entry));
  EXPECT_THAT(config.status(), IsOk()) << entry;
  return config.ok() && config->builders.size() == 1 && config->builders[0].well_formed;
}

TEST(ScanBuilderConfigJsonTest, JudgesEntriesAsBuilderEntryFromJson) {
  const Json good = BuilderEntryToJson(SomeEntry());
  using Change = std::function<void(Json&)>;
  const std::vector<Change> changes = {
      [](Json&) {},
      [](Json& j) { j.erase("url"); },
      [](Json& j) { j.erase("auth"); },
      [](Json& j) { j.erase("builder_pubkeys"); },
      [](Json& j) { j.erase("max_execution_payment"); },
      [](Json& j) { j.erase("min_bid"); },
      [](Json& j) { j.erase("builder_boost_factor"); },
      [](Json& j) { j["auth"].erase("message"); },
      [](Json& j) { j["auth"].erase("signature"); },
      [](Json& j) { j["auth"]["message"].erase("data"); },
      [](Json& j) { j["auth"]["message"].erase("slot"); },
      [](Json& j) { j["url"] = 1; },
      [](Json& j) { j["url"] = std::string(kMaxBuilderUrlBytes, 'u'); },
      [](Json& j) { j["url"] = std::string(kMaxBuilderUrlBytes + 1, 'u'); },
      [](Json& j) { j["url"] = "\xc3\xa9"; },
      [](Json& j) { j["auth"] = Json::array(); },
      [](Json& j) { j["auth"]["message"] = "m"; },
      [](Json& j) { j["auth"]["message"]["data"] = "0x"; },
      [](Json& j) { j["auth"]["message"]["data"] = "0x" + std::string(8192, 'a'); },
      [](Json& j) { j["auth"]["message"]["data"] = "0x" + std::string(8194, 'a'); },
      [](Json& j) { j["auth"]["message"]["data"] = "0xabc"; },
      [](Json& j) { j["auth"]["message"]["data"] = "0Xab"; },
      [](Json& j) { j["auth"]["message"]["data"] = "0xzz"; },
      [](Json& j) { j["auth"]["message"]["data"] = "ab"; },
      [](Json& j) { j["auth"]["message"]["slot"] = 5; },
      [](Json& j) { j["auth"]["message"]["slot"] = -5; },
      [](Json& j) { j["auth"]["message"]["slot"] = 5.0; },
      [](Json& j) { j["auth"]["message"]["slot"] = "-1"; },
      [](Json& j) { j["auth"]["message"]["slot"] = ""; },
      [](Json& j) { j["auth"]["message"]["slot"] = true; },
      [](Json& j) { j["auth"]["signature"] = "0x" + std::string(190, '0'); },
      [](Json& j) { j["builder_pubkeys"] = Json::array(); },
      [](Json& j) { j["builder_pubkeys"] = "0x"; },
      [](Json& j) { j["builder_pubkeys"][1] = "0x" + std::string(94, 'a'); },
      [](Json& j) { j["builder_pubkeys"][1] = nullptr; },
      [](Json& j) {
        j["builder_pubkeys"] = Json::array();
        for (int i = 0; i < 64; ++i) j["builder_pubkeys"].push_back("0x" + std::string(96, 'c'));
      },
      [](Json& j) {
        j["builder_pubkeys"] = Json::array();
        for (int i = 0; i < 65; ++i) j["builder_pubkeys"].push_back("0x" + std::string(96, 'c'));
      },
      [](Json& j) { j["min_bid"] = "18446744073709551615"; },
      [](Json& j) { j["min_bid"] = "18446744073709551616"; },
      [](Json& j) { j["min_bid"] = 18446744073709551615u; },
      [](Json& j) { j["min_bid"] = 1e30; },
      [](Json& j) { j["min_bid"] = "007"; },
      [](Json& j) { j["max_execution_payment"] = Json::object(); },
      [](Json& j) {
        j["extra"] = {{"deep", {1, 2, {{"x", nullptr}}}}};
      },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    Json entry = good;
    changes[i](entry);
    EXPECT_EQ(ScanWellFormed(entry.dump()), BuilderEntryFromJson(entry).ok()) << "change " << i;
  }
  // Not an object; numbers as written by hand.
  EXPECT_FALSE(ScanWellFormed("null"));
  std::string spelled = good.dump();
  spelled.replace(spelled.find("\"2\""), 3, "-0");
  EXPECT_EQ(ScanWellFormed(spelled), BuilderEntryFromJson(Json::parse(spelled)).ok());
  spelled.replace(spelled.find("-0"), 2, "2.0");
  EXPECT_FALSE(ScanWellFormed(spelled));
}

TEST(ScanBuilderConfigJsonTest, DecodesTheUrlAndKeysAndSpansTheirBytes) {
  const std::string key_a = "\"0x" + std::string(96, 'a') + "\"";
  const std::string key_b = "\"0X" + std::string(96, 'B') + "\"";
  const std::string entry =
      R"({ "url" : "https:\/\/r\u0065lay.example", "builder_pubkeys" : [ )" + key_a + " , " +
      key_b + R"( ], "auth": {"signature": "0x)" + std::string(192, '5') +
      R"(", "message": {"slot": 1, "data": "0x00"}}, "max_execution_payment":)"
      R"( "0", "min_bid": "0", "builder_boost_factor": "0" })";
  const std::string body = Body(" " + entry + " ");
  absl::StatusOr<ScannedBuilderConfig> config = ScanBuilderConfigJson(body);
  ASSERT_THAT(config.status(), IsOk());
  ASSERT_EQ(config->builders.size(), 1u);
  const ScannedBuilderEntry& scanned = config->builders[0];
  ASSERT_TRUE(scanned.well_formed);
  EXPECT_EQ(scanned.url, "https://relay.example");
  EXPECT_THAT(scanned.builder_pubkeys,
              ElementsAre(std::string(48, '\xaa'), std::string(48, '\xbb')));
  const auto bytes = [&](JsonSpan span) { return body.substr(span.begin, span.end - span.begin); };
  EXPECT_EQ(bytes(scanned.bytes), entry);
  EXPECT_EQ(bytes(scanned.keys_array), "[ " + key_a + " , " + key_b + " ]");
  ASSERT_EQ(scanned.key_bytes.size(), 2u);
  EXPECT_EQ(bytes(scanned.key_bytes[1]), key_b);
  ASSERT_EQ(config->min_bid_values.size(), 1u);
  EXPECT_EQ(bytes(config->min_bid_values[0]), "\"1\"");
  EXPECT_EQ(bytes(config->builder_boost_factor_values[0]), "\"2\"");
  EXPECT_EQ(bytes(config->builders_values[0]), "[ " + entry + " ]");
}

TEST(ScanBuilderConfigJsonTest, AnEntryNamingItsUrlOrKeysTwiceIsMalformed) {
  Json entry = BuilderEntryToJson(SomeEntry());
  std::string twice_url = entry.dump();
  twice_url.insert(1, R"("url":"https://other.example",)");
  EXPECT_FALSE(ScanWellFormed(twice_url));
  std::string twice_keys = entry.dump();
  twice_keys.insert(1, R"("builder_pubkeys":[],)");
  EXPECT_FALSE(ScanWellFormed(twice_keys));
  // Any other member named twice counts by its last value, as in a document.
  std::string twice_bid = entry.dump();
  twice_bid.insert(1, R"("min_bid":null,)");
  EXPECT_TRUE(ScanWellFormed(twice_bid));
}

TEST(ScanBuilderConfigJsonTest, ReadsTheTopLevelAsBuilderConfigFromJson) {
  const std::pair<std::string, std::string> cases[] = {
      {"{\"builders\": 3", "the body is not JSON"},
      {"[]", "the body is not a JSON object"},
      {R"({"builder_boost_factor":"2","builders":[]})", "min_bid: missing"},
      {R"({"min_bid":"x","builder_boost_factor":"2","builders":[]})", "min_bid: expected"},
      {R"({"min_bid":"1","builder_boost_factor":-1,"builders":[]})", "builder_boost_factor"},
      {R"({"min_bid":"1","builder_boost_factor":"2","builders":{}})", "builders: missing"},
      {R"({"min_bid":"1","builder_boost_factor":"2"})", "builders: missing"},
      {R"({"min_bid":"1","builder_boost_factor":"2","builders":[],"builders":3})",
       "builders: missing"},
      {Body("1,"), "the body is not JSON"},
  };
  for (const auto& [body, message] : cases) {
    EXPECT_THAT(ScanBuilderConfigJson(body).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)))
        << body;
  }
  std::string over;
  for (int i = 0; i < 65; ++i) over += i == 0 ? "1" : ",1";
  EXPECT_THAT(ScanBuilderConfigJson(Body(over)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("builders: 65 entries, over the limit 64")));
}

TEST(ScanBuilderConfigJsonTest, ANameGivenTwiceCountsByItsLastValueAndSpansEvery) {
  const std::string body = R"({"builders":7,"min_bid":"x","min_bid":"1",)"
                           R"("builder_boost_factor":"2","builders":[null]})";
  absl::StatusOr<ScannedBuilderConfig> config = ScanBuilderConfigJson(body);
  ASSERT_THAT(config.status(), IsOk());
  EXPECT_EQ(config->builders_values.size(), 2u);
  EXPECT_EQ(config->min_bid_values.size(), 2u);
  ASSERT_EQ(config->builders.size(), 1u);
  EXPECT_FALSE(config->builders[0].well_formed);
}

}  // namespace
}  // namespace breaker::sidecar::ssz
