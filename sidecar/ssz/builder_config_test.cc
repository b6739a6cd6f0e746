#include "sidecar/ssz/builder_config.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::sidecar::ssz {
namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::HasSubstr;
using Json = nlohmann::json;

// A vector of make_builder_config_vectors.mjs: the config in JSON and SSZ, and the roots
// @chainsafe/ssz computed.
struct Vector {
  Json json;
  std::string ssz;
  std::string root;
  std::vector<std::string> entry_roots;
};

std::string Unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 2; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

Vector ReadVector(const std::string& name) {
  std::ifstream in("sidecar/ssz/testdata/builder_config_" + name + ".json");
  std::stringstream text;
  text << in.rdbuf();
  const Json json = Json::parse(text.str());
  Vector vector;
  vector.json = json["json"];
  vector.ssz = Unhex(json["ssz"].get<std::string>());
  vector.root = json["root"].get<std::string>();
  for (const Json& root : json["entry_roots"]) vector.entry_roots.push_back(root);
  return vector;
}

std::string HexRoot(const Type& type, absl::string_view ssz) {
  absl::StatusOr<Root> root = HashTreeRoot(type, ssz);
  if (!root.ok()) return std::string(root.status().message());
  return Hex(absl::string_view(reinterpret_cast<const char*>(root->data()), root->size()));
}

class BuilderConfigVectorTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BuilderConfigVectorTest, JsonAndSszAgreeWithChainsafe) {
  const Vector vector = ReadVector(GetParam());
  absl::StatusOr<BuilderConfig> from_json = BuilderConfigFromJson(vector.json);
  ASSERT_THAT(from_json.status(), IsOk());
  EXPECT_EQ(Hex(BuilderConfigToSsz(*from_json)), Hex(vector.ssz));
  absl::StatusOr<BuilderConfig> from_ssz = BuilderConfigFromSsz(vector.ssz);
  ASSERT_THAT(from_ssz.status(), IsOk());
  EXPECT_EQ(BuilderConfigToJson(*from_ssz), vector.json);
  EXPECT_EQ(HexRoot(BuilderConfigType(), vector.ssz), vector.root);
  ASSERT_EQ(from_ssz->builders.size(), vector.entry_roots.size());
  for (size_t i = 0; i < vector.entry_roots.size(); ++i) {
    const std::string entry = BuilderEntryToSsz(from_ssz->builders[i]);
    EXPECT_EQ(HexRoot(BuilderEntryType(), entry), vector.entry_roots[i]) << i;
  }
}

TEST_P(BuilderConfigVectorTest, SplitGivesEachEntrysEncoding) {
  const Vector vector = ReadVector(GetParam());
  absl::StatusOr<BuilderConfigSszParts> parts = SplitBuilderConfigSsz(vector.ssz);
  ASSERT_THAT(parts.status(), IsOk());
  EXPECT_EQ(std::to_string(parts->min_bid), vector.json["min_bid"]);
  EXPECT_EQ(std::to_string(parts->builder_boost_factor), vector.json["builder_boost_factor"]);
  ASSERT_EQ(parts->builders.size(), vector.json["builders"].size());
  for (size_t i = 0; i < parts->builders.size(); ++i) {
    absl::StatusOr<BuilderEntry> entry = BuilderEntryFromSsz(parts->builders[i]);
    ASSERT_THAT(entry.status(), IsOk());
    EXPECT_EQ(BuilderEntryToJson(*entry), vector.json["builders"][i]);
  }
}

INSTANTIATE_TEST_SUITE_P(Vectors, BuilderConfigVectorTest,
                         ::testing::Values("empty", "any_builder", "three", "full"));

BuilderEntry SomeEntry() {
  BuilderEntry entry;
  entry.url = "https://relay.example";
  entry.auth.message.data = "https://relay.example";
  entry.auth.message.slot = 10;
  entry.auth.signature = std::string(96, '\x01');
  entry.builder_pubkeys = {std::string(48, '\x02')};
  entry.max_execution_payment = 3;
  entry.min_bid = 4;
  entry.builder_boost_factor = 100;
  return entry;
}

TEST(BuilderEntryFromJsonTest, NamesWhatIsWrong) {
  const Json good = BuilderEntryToJson(SomeEntry());
  EXPECT_THAT(BuilderEntryFromJson(good, "builders[0]").status(), IsOk());
  const std::pair<const char*, Json> cases[] = {
      {"builders[0].auth: missing",
       [&] {
         Json j = good;
         j.erase("auth");
         return j;
       }()},
      {"builders[0].url: expected a string",
       [&] {
         Json j = good;
         j["url"] = 1;
         return j;
       }()},
      {"builders[0].builder_pubkeys[0]: 94 hex digits",
       [&] {
         Json j = good;
         j["builder_pubkeys"][0] = "0x" + std::string(94, 'a');
         return j;
       }()},
      {"builders[0].min_bid: \"18446744073709551616\" is over uint64",
       [&] {
         Json j = good;
         j["min_bid"] = "18446744073709551616";
         return j;
       }()},
      {"builders[0].auth.signature: 190 hex digits",
       [&] {
         Json j = good;
         j["auth"]["signature"] = "0x" + std::string(190, '0');
         return j;
       }()},
      {"builders[0].auth.message.slot: expected a decimal string",
       [&] {
         Json j = good;
         j["auth"]["message"]["slot"] = "-1";
         return j;
       }()},
      {"builders[0]: expected an object", Json()},
  };
  for (const auto& [message, json] : cases) {
    EXPECT_THAT(BuilderEntryFromJson(json, "builders[0]").status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)))
        << json.dump();
  }
}

TEST(BuilderEntryFromJsonTest, ReadsNumbersAsJsonNumbersToo) {
  Json json = BuilderEntryToJson(SomeEntry());
  json["builder_boost_factor"] = 250;
  absl::StatusOr<BuilderEntry> entry = BuilderEntryFromJson(json);
  ASSERT_THAT(entry.status(), IsOk());
  EXPECT_EQ(entry->builder_boost_factor, 250u);
}

TEST(BuilderEntryFromSszTest, RefusesLayoutsAndListsOverTheirLimits) {
  const std::string good = BuilderEntryToSsz(SomeEntry());
  ASSERT_THAT(BuilderEntryFromSsz(good).status(), IsOk());
  EXPECT_THAT(BuilderEntryFromSsz(good.substr(0, 20), "e").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("e: 20 bytes")));
  BuilderEntry long_url = SomeEntry();
  long_url.url = std::string(kMaxBuilderUrlBytes + 1, 'a');
  EXPECT_THAT(BuilderEntryFromSsz(BuilderEntryToSsz(long_url), "e").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("e.url: 2049 bytes")));
  BuilderEntry many_keys = SomeEntry();
  many_keys.builder_pubkeys.assign(kMaxBuilderPubkeys + 1, std::string(48, '\x03'));
  EXPECT_THAT(BuilderEntryFromSsz(BuilderEntryToSsz(many_keys), "e").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("e.builder_pubkeys")));
  // A key cut short.
  std::string cut = good;
  cut.pop_back();
  EXPECT_FALSE(BuilderEntryFromSsz(cut).ok());
}

TEST(SplitBuilderConfigSszTest, RefusesOffsetsOutOfPlace) {
  BuilderConfig config;
  config.builders = {SomeEntry(), SomeEntry()};
  const std::string good = BuilderConfigToSsz(config);
  ASSERT_THAT(SplitBuilderConfigSsz(good).status(), IsOk());
  EXPECT_FALSE(SplitBuilderConfigSsz(good.substr(0, 19)).ok());
  std::string bad_first = good;
  bad_first[20] = 3;  // the list's first offset, not a multiple of 4
  EXPECT_THAT(SplitBuilderConfigSsz(bad_first).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("first offset 3")));
  std::string backwards = good;
  backwards[24] = 1;  // the second entry's offset, before the first's
  backwards[25] = 0;
  EXPECT_THAT(SplitBuilderConfigSsz(backwards).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("builders[0]")));
}

TEST(SplitBuilderConfigSszTest, RefusesMoreEntriesThanTheLimit) {
  BuilderConfig config;
  config.builders.assign(kMaxBuilderEntries + 1, SomeEntry());
  EXPECT_THAT(SplitBuilderConfigSsz(BuilderConfigToSsz(config)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("65 entries")));
  EXPECT_THAT(BuilderConfigFromJson(BuilderConfigToJson(config)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("65 entries")));
}

}  // namespace
}  // namespace breaker::sidecar::ssz
