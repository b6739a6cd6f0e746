#include "proto/codec/config_file.h"

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "breaker/v1/config.pb.h"
#include "core/chain_time.h"
#include "core/config.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::codec {
namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kExamplePath[] = "examples/breakerd.textproto";

// core::Config has no operator==: compares it field by field, naming the field that differs.
void ExpectConfigsEqual(const core::Config& actual, const core::Config& expected) {
  EXPECT_EQ(actual.chain.network, expected.chain.network);
  EXPECT_EQ(actual.chain.genesis_time_unix, expected.chain.genesis_time_unix);
  EXPECT_EQ(actual.chain.seconds_per_slot, expected.chain.seconds_per_slot);
  EXPECT_EQ(actual.chain.slots_per_epoch, expected.chain.slots_per_epoch);
  EXPECT_EQ(actual.chain.gloas_fork_epoch, expected.chain.gloas_fork_epoch);

  EXPECT_EQ(actual.allowed_failures, expected.allowed_failures);
  EXPECT_EQ(actual.critical_failures, expected.critical_failures);
  EXPECT_EQ(actual.blacklist_period_epochs, expected.blacklist_period_epochs);
  EXPECT_EQ(actual.critical_blacklist_period_epochs, expected.critical_blacklist_period_epochs);
  EXPECT_EQ(actual.backoff_period_epochs, expected.backoff_period_epochs);
  // Exact: a text round trip must not lose a bit of the threshold.
  EXPECT_EQ(actual.attestation_threshold, expected.attestation_threshold);

  EXPECT_EQ(actual.critical_failed_builders, expected.critical_failed_builders);
  EXPECT_EQ(actual.critical_failed_untrusted_builders, expected.critical_failed_untrusted_builders);

  EXPECT_EQ(actual.trusted_builders, expected.trusted_builders);
  EXPECT_EQ(actual.blacklisted_builders, expected.blacklisted_builders);
  EXPECT_EQ(actual.blacklisted_relays, expected.blacklisted_relays);
  ASSERT_EQ(actual.relays.size(), expected.relays.size());
  for (size_t i = 0; i < actual.relays.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("relays[", i, "]"));
    EXPECT_EQ(actual.relays[i].identifier, expected.relays[i].identifier);
    EXPECT_EQ(actual.relays[i].trusted, expected.relays[i].trusted);
    EXPECT_EQ(actual.relays[i].indices, expected.relays[i].indices);
  }

  EXPECT_EQ(actual.relay_blacklist_period_epochs, expected.relay_blacklist_period_epochs);
  EXPECT_EQ(actual.relay_association_ttl_epochs, expected.relay_association_ttl_epochs);
  EXPECT_EQ(actual.max_relays, expected.max_relays);
  EXPECT_EQ(actual.max_indices_per_relay, expected.max_indices_per_relay);
  EXPECT_EQ(actual.max_tracked_builders, expected.max_tracked_builders);

  EXPECT_EQ(actual.missed_slots.preset, expected.missed_slots.preset);
  EXPECT_EQ(actual.missed_slots.latched_rule, expected.missed_slots.latched_rule);
  EXPECT_EQ(actual.missed_slots.max_allowed_missing_slots,
            expected.missed_slots.max_allowed_missing_slots);
  EXPECT_EQ(actual.missed_slots.max_consecutive_missed_slots,
            expected.missed_slots.max_consecutive_missed_slots);
  EXPECT_EQ(actual.missed_slots.max_missed_slots_in_window,
            expected.missed_slots.max_missed_slots_in_window);
  EXPECT_EQ(actual.missed_slots.window_slots, expected.missed_slots.window_slots);
  EXPECT_EQ(actual.missed_slots.max_epochs_since_finalization,
            expected.missed_slots.max_epochs_since_finalization);

  EXPECT_EQ(actual.min_reporting_nodes, expected.min_reporting_nodes);
  EXPECT_EQ(actual.amendment_window_slots, expected.amendment_window_slots);
  EXPECT_EQ(actual.max_future_slots, expected.max_future_slots);
}

// Every field differs from its default, so a field that is dropped anywhere shows up.
constexpr char kEveryFieldText[] = R"pb(
  chain {
    network: "sepolia"
    genesis_time_unix: 1700000000
    seconds_per_slot: 6
    slots_per_epoch: 16
    gloas_fork_epoch: 1000
  }
  allowed_failures: 1
  critical_failures: 4
  blacklist_period_epochs: 2
  critical_blacklist_period_epochs: 10
  backoff_period_epochs: 6
  attestation_threshold: 0.75
  critical_failed_builders: 9
  critical_failed_untrusted_builders: 4
  trusted_builders: [ 10, 11 ]
  blacklisted_builders: [ 20 ]
  relays {
    identifier: "https://0xabc@relay-a.example.com"
    trusted: true
    builder_indices: [ 30, 31 ]
  }
  relays { identifier: "relay-b.example.com:18550" }
  blacklisted_relays: [ "Relay-C.example.com:18550", "https://relay-d.example.com/" ]
  relay_blacklist_period_epochs: 16
  relay_association_ttl_epochs: 128
  max_relays: 8
  max_indices_per_relay: 4
  max_tracked_builders: 1000
  missed_slots {
    preset: "prysm"
    latched_rule: true
    max_allowed_missing_slots: 7
    max_consecutive_missed_slots: 4
    max_missed_slots_in_window: 6
    window_slots: 16
    max_epochs_since_finalization: 2
  }
  min_reporting_nodes: 2
  amendment_window_slots: 96
  max_future_slots: 1
)pb";

core::Config ConfigWithEveryFieldSet() {
  absl::StatusOr<core::Config> config = ParseConfigText(kEveryFieldText, "every_field");
  EXPECT_THAT(config, IsOk());
  return config.ok() ? *config : core::Config();
}

core::Config DefaultConfig() {
  absl::StatusOr<core::Config> config = ConfigFromProto(breaker::v1::Config());
  EXPECT_THAT(config, IsOk());
  return config.ok() ? *config : core::Config();
}

void ExpectRoundTrip(const core::Config& config) {
  absl::StatusOr<core::Config> back = ConfigFromProto(ConfigToProto(config));
  ASSERT_THAT(back, IsOk());
  ExpectConfigsEqual(*back, config);
}

// Writes `contents` to a fresh file under the test's temporary directory; returns its path.
std::string WriteTempFile(const std::string& name, const std::string& contents) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream file(path, std::ios::trunc);
  file << contents;
  file.close();
  EXPECT_TRUE(file.good()) << path;
  return path;
}

// --- Defaults ---

TEST(ConfigFile, EmptyTextGivesTheCoreDefaults) {
  absl::StatusOr<core::Config> config = ParseConfigText("", "empty.textproto");
  ASSERT_THAT(config, IsOk());
  ExpectConfigsEqual(*config, core::Config());
}

TEST(ConfigFile, EmptyProtoGivesTheCoreDefaults) {
  absl::StatusOr<core::Config> config = ConfigFromProto(breaker::v1::Config());
  ASSERT_THAT(config, IsOk());
  ExpectConfigsEqual(*config, core::Config());
}

// --- Fields ---

TEST(ConfigFile, AppliesEveryPresentField) {
  absl::StatusOr<core::Config> config = ParseConfigText(kEveryFieldText, "every_field");
  ASSERT_THAT(config, IsOk());

  EXPECT_EQ(config->chain.network, "sepolia");
  EXPECT_EQ(config->chain.genesis_time_unix, 1700000000);
  EXPECT_EQ(config->chain.seconds_per_slot, 6u);
  EXPECT_EQ(config->chain.slots_per_epoch, 16u);
  EXPECT_EQ(config->chain.gloas_fork_epoch, 1000u);

  EXPECT_EQ(config->allowed_failures, 1u);
  EXPECT_EQ(config->critical_failures, 4u);
  EXPECT_EQ(config->blacklist_period_epochs, 2u);
  EXPECT_EQ(config->critical_blacklist_period_epochs, 10u);
  EXPECT_EQ(config->backoff_period_epochs, 6u);
  EXPECT_EQ(config->attestation_threshold, 0.75);
  EXPECT_EQ(config->critical_failed_builders, 9u);
  EXPECT_EQ(config->critical_failed_untrusted_builders, 4u);

  EXPECT_THAT(config->trusted_builders, ElementsAre(10u, 11u));
  EXPECT_THAT(config->blacklisted_builders, ElementsAre(20u));
  ASSERT_EQ(config->relays.size(), 2u);
  EXPECT_EQ(config->relays[0].identifier, "https://0xabc@relay-a.example.com");
  EXPECT_TRUE(config->relays[0].trusted);
  EXPECT_THAT(config->relays[0].indices, ElementsAre(30u, 31u));
  EXPECT_EQ(config->relays[1].identifier, "relay-b.example.com:18550");
  EXPECT_FALSE(config->relays[1].trusted);
  EXPECT_TRUE(config->relays[1].indices.empty());
  // As written: the engine normalizes them.
  EXPECT_THAT(config->blacklisted_relays,
              ElementsAre("Relay-C.example.com:18550", "https://relay-d.example.com/"));

  EXPECT_EQ(config->relay_blacklist_period_epochs, 16u);
  EXPECT_EQ(config->relay_association_ttl_epochs, 128u);
  EXPECT_EQ(config->max_relays, 8u);
  EXPECT_EQ(config->max_indices_per_relay, 4u);
  EXPECT_EQ(config->max_tracked_builders, 1000u);

  EXPECT_EQ(config->missed_slots.preset, "custom");
  EXPECT_TRUE(config->missed_slots.latched_rule);
  EXPECT_EQ(config->missed_slots.max_allowed_missing_slots, 7u);
  EXPECT_EQ(config->missed_slots.max_consecutive_missed_slots, 4u);
  EXPECT_EQ(config->missed_slots.max_missed_slots_in_window, 6u);
  EXPECT_EQ(config->missed_slots.window_slots, 16u);
  EXPECT_EQ(config->missed_slots.max_epochs_since_finalization, 2u);

  EXPECT_EQ(config->min_reporting_nodes, 2u);
  EXPECT_EQ(config->amendment_window_slots, 96u);
  EXPECT_EQ(config->max_future_slots, 1u);
}

TEST(ConfigFile, PresentFieldEqualToItsDefaultIsAccepted) {
  // proto3 `optional`: an explicit zero is a value, not an absence.
  absl::StatusOr<core::Config> config =
      ParseConfigText("critical_failures: 2 max_future_slots: 0", "zero");
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->max_future_slots, 0u);
}

// --- Chain ---

TEST(ConfigFile, HoodiNetworkPicksHoodiGenesis) {
  absl::StatusOr<core::Config> config =
      ParseConfigText(R"pb(chain { network: "hoodi" })pb", "hoodi");
  ASSERT_THAT(config, IsOk());
  absl::StatusOr<core::ChainSpec> hoodi = core::ChainSpecForNetwork("hoodi");
  ASSERT_THAT(hoodi, IsOk());
  EXPECT_EQ(config->chain, *hoodi);
  EXPECT_NE(config->chain.genesis_time_unix, core::ChainSpec().genesis_time_unix);
}

TEST(ConfigFile, KnownNetworkFieldsCanBeOverridden) {
  absl::StatusOr<core::Config> config =
      ParseConfigText(R"pb(chain { network: "hoodi" gloas_fork_epoch: 5000 })pb", "hoodi");
  ASSERT_THAT(config, IsOk());
  absl::StatusOr<core::ChainSpec> hoodi = core::ChainSpecForNetwork("hoodi");
  ASSERT_THAT(hoodi, IsOk());
  EXPECT_EQ(config->chain.genesis_time_unix, hoodi->genesis_time_unix);
  EXPECT_EQ(config->chain.gloas_fork_epoch, 5000u);
}

TEST(ConfigFile, CustomNetworkWithoutGenesisIsRefused) {
  EXPECT_THAT(ParseConfigText(R"pb(chain { network: "devnet-7" seconds_per_slot: 6 })pb", "dev"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("chain.genesis_time_unix is required for custom network "
                                 "'devnet-7'")));
}

TEST(ConfigFile, CustomNetworkWithGenesisStartsFromTheCoreDefaults) {
  absl::StatusOr<core::Config> config =
      ParseConfigText(R"pb(chain { network: "devnet-7" genesis_time_unix: 1750000000 })pb", "dev");
  ASSERT_THAT(config, IsOk());
  core::ChainSpec expected;
  expected.network = "devnet-7";
  expected.genesis_time_unix = 1750000000;
  EXPECT_EQ(config->chain, expected);
}

TEST(ConfigFile, EmptyNetworkIsRefusedNamingTheField) {
  EXPECT_THAT(ParseConfigText(R"pb(chain { network: "" })pb", "empty"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("chain.network")));
}

TEST(ConfigFile, ANetworkNameFollowsTheIdentifierRule) {
  EXPECT_THAT(ParseConfigText(R"pb(chain { network: "dev\000net" genesis_time_unix: 1 })pb", "nul"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("chain.network \"dev\\x00net\" has byte 0x00 at offset 3")));
  EXPECT_THAT(ParseConfigText(R"pb(chain { network: "devnet " genesis_time_unix: 1 })pb", "space"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("chain.network \"devnet \" ends with a space")));
}

// --- Missed-slot rules ---

TEST(ConfigFile, PresetAloneGivesThePresetsRules) {
  absl::StatusOr<core::Config> config =
      ParseConfigText(R"pb(missed_slots { preset: "lighthouse" })pb", "preset");
  ASSERT_THAT(config, IsOk());
  absl::StatusOr<core::MissedSlotRules> lighthouse = core::MissedSlotRulesForPreset("lighthouse");
  ASSERT_THAT(lighthouse, IsOk());
  EXPECT_EQ(config->missed_slots, *lighthouse);
}

TEST(ConfigFile, PresetThenOverrideIsCustom) {
  absl::StatusOr<core::Config> config = ParseConfigText(
      R"pb(missed_slots { preset: "lighthouse" max_missed_slots_in_window: 10 })pb", "override");
  ASSERT_THAT(config, IsOk());
  absl::StatusOr<core::MissedSlotRules> expected = core::MissedSlotRulesForPreset("lighthouse");
  ASSERT_THAT(expected, IsOk());
  expected->preset = "custom";
  expected->max_missed_slots_in_window = 10;
  EXPECT_EQ(config->missed_slots, *expected);
}

TEST(ConfigFile, OverrideRestatingThePresetKeepsItsName) {
  absl::StatusOr<core::Config> config = ParseConfigText(
      R"pb(missed_slots { preset: "lighthouse" max_consecutive_missed_slots: 3 })pb", "same");
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->missed_slots.preset, "lighthouse");
}

TEST(ConfigFile, OverrideWithoutPresetStartsFromMevboost) {
  absl::StatusOr<core::Config> config =
      ParseConfigText("missed_slots { max_allowed_missing_slots: 8 }", "mevboost");
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->missed_slots.preset, "custom");
  EXPECT_TRUE(config->missed_slots.latched_rule);
  EXPECT_EQ(config->missed_slots.max_allowed_missing_slots, 8u);
}

TEST(ConfigFile, CustomPresetStartsWithEveryRuleOff) {
  absl::StatusOr<core::Config> config = ParseConfigText(
      R"pb(missed_slots { preset: "custom" max_consecutive_missed_slots: 4 })pb", "custom");
  ASSERT_THAT(config, IsOk());
  absl::StatusOr<core::MissedSlotRules> expected = core::MissedSlotRulesForPreset("off");
  ASSERT_THAT(expected, IsOk());
  expected->preset = "custom";
  expected->max_consecutive_missed_slots = 4;
  EXPECT_EQ(config->missed_slots, *expected);
}

TEST(ConfigFile, UnknownPresetIsRefusedNamingTheField) {
  EXPECT_THAT(ParseConfigText(R"pb(missed_slots { preset: "nimbus" })pb", "preset"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("missed_slots.preset"), HasSubstr("nimbus"))));
}

// --- Errors ---

TEST(ConfigFile, BadSyntaxGivesLineAndColumn) {
  EXPECT_THAT(ParseConfigText("allowed_failures: 0\ncritical_failures: \"two\"\n", "bad.txt"),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("bad.txt:2:20: ")));
}

TEST(ConfigFile, UnknownFieldIsNamed) {
  EXPECT_THAT(
      ParseConfigText("allowed_failures: 0\n  alowed_failures: 1\n", "typo.txt"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(StartsWith("typo.txt:2:"), HasSubstr("no field named \"alowed_failures\""))));
}

TEST(ConfigFile, UnknownNestedFieldIsNamed) {
  EXPECT_THAT(ParseConfigText("chain { genesis: 1 }", "nested.txt"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith("nested.txt:1:"), HasSubstr("\"genesis\""))));
}

TEST(ConfigFile, FieldGivenTwiceIsRefused) {
  EXPECT_THAT(ParseConfigText("max_relays: 8\nmax_relays: 9\n", "twice.txt"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith("twice.txt:2:"), HasSubstr("max_relays"))));
}

TEST(ConfigFile, InvalidValueIsRefusedNamingTheField) {
  EXPECT_THAT(ParseConfigText("critical_failures: 0", "invalid.txt"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("critical_failures")));
  EXPECT_THAT(ParseConfigText("missed_slots { window_slots: 0 }", "invalid.txt"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("missed_slots.window_slots")));
}

// --- Files ---

TEST(ConfigFile, MissingFileIsNotFound) {
  const std::string path = ::testing::TempDir() + "/no-such-breakerd.textproto";
  EXPECT_THAT(LoadConfigFile(path),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr(absl::StrCat("config file '", path, "' does not exist")),
                             HasSubstr("--config"))));
}

TEST(ConfigFile, UnreadableFileIsFailedPrecondition) {
  // A directory opens but cannot be read.
  EXPECT_THAT(LoadConfigFile(::testing::TempDir()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("directory")));
}

TEST(ConfigFile, LoadsAFileAndNamesItInErrors) {
  const std::string good = WriteTempFile("good.textproto", "max_future_slots: 3\n");
  absl::StatusOr<core::Config> config = LoadConfigFile(good);
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->max_future_slots, 3u);

  const std::string bad = WriteTempFile("bad.textproto", "\nmax_future_slots 3 3\n");
  EXPECT_THAT(LoadConfigFile(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith(bad + ":2:")));
}

TEST(ConfigFile, ExampleFileEqualsTheDefaults) {
  absl::StatusOr<core::Config> config = LoadConfigFile(kExamplePath);
  ASSERT_THAT(config, IsOk());
  ExpectConfigsEqual(*config, DefaultConfig());
}

// Walks the schema so that a field added to config.proto must be documented in the example.
void ExpectEveryFieldMentioned(const google::protobuf::Descriptor& message,
                               const std::string& text) {
  for (int i = 0; i < message.field_count(); ++i) {
    const google::protobuf::FieldDescriptor& field = *message.field(i);
    if (field.message_type() != nullptr) {
      EXPECT_THAT(text, HasSubstr(field.name() + " {")) << message.full_name();
      ExpectEveryFieldMentioned(*field.message_type(), text);
    } else {
      EXPECT_THAT(text, HasSubstr(field.name() + ":")) << message.full_name();
    }
  }
}

TEST(ConfigFile, ExampleFileMentionsEveryField) {
  std::ifstream file(kExamplePath);
  ASSERT_TRUE(file.good());
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ExpectEveryFieldMentioned(*breaker::v1::Config::descriptor(), text);
}

// --- Back to the file format ---

TEST(ConfigFile, ConfigToProtoSetsEveryFieldButTheServiceLimits) {
  const breaker::v1::Config proto = ConfigToProto(core::Config());
  // breakerd's, written by service::ServiceConfigToProto.
  const std::set<std::string> service_limits = {
      "breaker.v1.Config.max_connected_nodes", "breaker.v1.Config.node_observation_rate",
      "breaker.v1.Config.node_observation_burst", "breaker.v1.Config.max_known_nodes"};
  EXPECT_TRUE(proto.has_chain());
  EXPECT_TRUE(proto.has_missed_slots());
  for (const google::protobuf::Message* message : std::vector<const google::protobuf::Message*>{
           &proto, &proto.chain(), &proto.missed_slots()}) {
    const google::protobuf::Descriptor& descriptor = *message->GetDescriptor();
    for (int i = 0; i < descriptor.field_count(); ++i) {
      const google::protobuf::FieldDescriptor& field = *descriptor.field(i);
      if (field.is_repeated()) continue;
      EXPECT_EQ(message->GetReflection()->HasField(*message, &field),
                service_limits.count(field.full_name()) == 0)
          << field.full_name();
    }
  }
  EXPECT_EQ(proto.missed_slots().preset(), "mevboost");
}

TEST(ConfigFile, RoundTripsTheDefaults) { ExpectRoundTrip(DefaultConfig()); }

TEST(ConfigFile, RoundTripsEveryFieldSet) { ExpectRoundTrip(ConfigWithEveryFieldSet()); }

TEST(ConfigFile, RoundTripsAPresetAndACustomNetwork) {
  absl::StatusOr<core::Config> config = ParseConfigText(
      R"pb(chain { network: "devnet-7" genesis_time_unix: 5 }
           missed_slots { preset: "lighthouse" })pb",
      "devnet");
  ASSERT_THAT(config, IsOk());
  ExpectRoundTrip(*config);
  EXPECT_EQ(ConfigToProto(*config).missed_slots().preset(), "lighthouse");
}

TEST(ConfigFile, ConfigToTextParsesBack) {
  const core::Config config = ConfigWithEveryFieldSet();
  const std::string text = ConfigToText(config);
  EXPECT_THAT(text, HasSubstr("network: \"sepolia\""));
  absl::StatusOr<core::Config> back = ParseConfigText(text, "printed");
  ASSERT_THAT(back, IsOk());
  ExpectConfigsEqual(*back, config);
}

}  // namespace
}  // namespace breaker::codec
