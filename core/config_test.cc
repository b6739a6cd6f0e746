#include "core/config.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/input_bounds.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::core {
namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Asserts that `config` is rejected with a message naming `field`.
void ExpectRejected(const Config& config, absl::string_view field) {
  EXPECT_THAT(ValidateConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(std::string(field))));
}

RelayConfig Relay(std::string identifier, std::vector<BuilderIndex> indices = {},
                  bool trusted = false) {
  RelayConfig relay;
  relay.identifier = std::move(identifier);
  relay.indices = std::move(indices);
  relay.trusted = trusted;
  return relay;
}

// --- Defaults ---

TEST(Config, DefaultsAreThoseOfTheReferenceSemantics) {
  const Config config;
  EXPECT_EQ(config.chain, ChainSpec());
  EXPECT_EQ(config.chain.network, "mainnet");
  EXPECT_EQ(config.chain.seconds_per_slot, 12u);
  EXPECT_EQ(config.chain.slots_per_epoch, 32u);
  EXPECT_EQ(config.allowed_failures, 0u);
  EXPECT_EQ(config.critical_failures, 2u);
  EXPECT_EQ(config.blacklist_period_epochs, 1u);
  EXPECT_EQ(config.critical_blacklist_period_epochs, 0u);
  EXPECT_EQ(config.backoff_period_epochs, 5u);
  EXPECT_DOUBLE_EQ(config.attestation_threshold, 0.60);
  EXPECT_EQ(config.critical_failed_builders, 7u);
  EXPECT_EQ(config.critical_failed_untrusted_builders, 3u);
  EXPECT_TRUE(config.trusted_builders.empty());
  EXPECT_TRUE(config.blacklisted_builders.empty());
  EXPECT_TRUE(config.relays.empty());
  EXPECT_TRUE(config.blacklisted_relays.empty());
  EXPECT_EQ(config.relay_blacklist_period_epochs, 32u);
  EXPECT_EQ(config.relay_association_ttl_epochs, 64u);
  EXPECT_EQ(config.min_reporting_nodes, 1u);
}

TEST(Config, DefaultMissedSlotRulesAreTheSeedRule) {
  const Config config;
  EXPECT_EQ(config.missed_slots.preset, "mevboost");
  EXPECT_TRUE(config.missed_slots.latched_rule);
  EXPECT_EQ(config.missed_slots.max_allowed_missing_slots, 5u);
  EXPECT_EQ(config.missed_slots.max_consecutive_missed_slots, 0u);
  EXPECT_EQ(config.missed_slots.max_missed_slots_in_window, 0u);
  EXPECT_EQ(config.missed_slots.window_slots, 32u);
  EXPECT_EQ(config.missed_slots.max_epochs_since_finalization, 0u);
}

TEST(ValidateConfig, DefaultIsValid) { EXPECT_THAT(ValidateConfig(Config()), IsOk()); }

TEST(ValidateConfig, ConfigWithListsAndRelaysIsValid) {
  Config config;
  config.trusted_builders = {1, 2};
  config.blacklisted_builders = {3};
  config.relays = {Relay("relay-a.example.com:18550", {4, 5}, /*trusted=*/true),
                   Relay("https://relay-b.example.com", {6})};
  config.critical_blacklist_period_epochs = 256;
  EXPECT_THAT(ValidateConfig(config), IsOk());
}

TEST(ValidateConfig, EveryPresetIsValid) {
  for (absl::string_view name : {"mevboost", "prysm", "lighthouse", "teku", "off"}) {
    Config config;
    absl::StatusOr<MissedSlotRules> rules = MissedSlotRulesForPreset(name);
    ASSERT_THAT(rules, IsOk()) << name;
    config.missed_slots = *rules;
    EXPECT_THAT(ValidateConfig(config), IsOk()) << name;
  }
}

TEST(ValidateConfig, KnownNetworksAreValid) {
  for (absl::string_view name : {"mainnet", "sepolia", "hoodi"}) {
    Config config;
    config.chain = *ChainSpecForNetwork(name);
    EXPECT_THAT(ValidateConfig(config), IsOk()) << name;
  }
}

// --- One test per rule ---

TEST(ValidateConfig, ChecksChainSpec) {
  Config config;
  config.chain.seconds_per_slot = 0;
  ExpectRejected(config, "chain.seconds_per_slot");
  config = Config();
  config.chain.slots_per_epoch = 0;
  ExpectRejected(config, "chain.slots_per_epoch");
  config = Config();
  config.chain.network = "";
  ExpectRejected(config, "chain.network");
}

TEST(ValidateConfig, CriticalFailuresMustExceedAllowedFailures) {
  Config config;
  config.allowed_failures = 2;
  config.critical_failures = 2;
  EXPECT_THAT(ValidateConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("critical_failures is 2"), HasSubstr("allowed_failures (2)"),
                             HasSubstr("first ban would already be critical"))));
  config.critical_failures = 3;
  EXPECT_THAT(ValidateConfig(config), IsOk());
}

TEST(ValidateConfig, CriticalFailuresZeroIsRejected) {
  Config config;
  config.critical_failures = 0;
  ExpectRejected(config, "critical_failures is 0");
}

TEST(ValidateConfig, BlacklistPeriodAtLeastOneEpoch) {
  Config config;
  config.blacklist_period_epochs = 0;
  EXPECT_THAT(ValidateConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("blacklist_period_epochs is 0"), HasSubstr("1..1048576"))));
}

TEST(ValidateConfig, PeriodsAreBoundedSoThatNoEpochPlusAPeriodWraps) {
  for (uint64_t Config::*field :
       {&Config::blacklist_period_epochs, &Config::critical_blacklist_period_epochs,
        &Config::backoff_period_epochs, &Config::relay_blacklist_period_epochs,
        &Config::relay_association_ttl_epochs}) {
    Config config;
    config.*field = uint64_t{1} << 20;
    EXPECT_THAT(ValidateConfig(config), IsOk());
    config.*field = (uint64_t{1} << 20) + 1;
    EXPECT_THAT(ValidateConfig(config),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is 1048577")));
    config.*field = std::numeric_limits<uint64_t>::max();
    EXPECT_THAT(ValidateConfig(config),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1048576 epochs")));
  }
  Config config;
  config.missed_slots.max_epochs_since_finalization = std::numeric_limits<uint64_t>::max();
  ExpectRejected(config, "missed_slots.max_epochs_since_finalization is 18446744073709551615");
}

TEST(ValidateConfig, MissedSlotCountsCanTrip) {
  Config config;
  config.missed_slots.max_allowed_missing_slots = 256;
  ExpectRejected(config, "missed_slots.max_allowed_missing_slots is 256");
  config = Config();
  config.missed_slots.max_consecutive_missed_slots = 1000;
  ExpectRejected(config, "missed_slots.max_consecutive_missed_slots is 1000");
  config = Config();
  config.missed_slots.max_missed_slots_in_window = 33;
  ExpectRejected(config, "missed_slots.max_missed_slots_in_window is 33");
}

TEST(ValidateConfig, ListedBuildersAreBounded) {
  Config config;
  for (BuilderIndex i = 0; i < 1024; ++i) config.trusted_builders.push_back(i);
  EXPECT_THAT(ValidateConfig(config), IsOk());
  config.trusted_builders.push_back(5000);
  ExpectRejected(config, "trusted_builders lists 1025 entries; accepted: at most 1024");
  config = Config();
  config.blacklisted_builders.assign(2000, 7);
  ExpectRejected(config, "blacklisted_builders lists 2000 entries");
}

TEST(WorstCasePolicyBytes, DefaultsFitWellBelowWhatClientsAccept) {
  const size_t worst = WorstCasePolicyBytes(Config());
  EXPECT_LE(worst, bounds::kMaxSentMessageBytes);
  EXPECT_LE(2 * worst, bounds::kClientReceiveBytes);
}

TEST(WorstCasePolicyBytes, CapsWhoseWorstCaseIsTooLargeAreRefused) {
  Config config;
  config.max_relays = 1024;
  ExpectRejected(config, "let a policy reach");
  config.max_indices_per_relay = 1;
  config.max_tracked_builders = 16;
  EXPECT_THAT(ValidateConfig(config), IsOk());
}

TEST(ValidateConfig, CriticalBlacklistPeriodZeroMeansUntilReset) {
  Config config;
  config.critical_blacklist_period_epochs = 0;
  EXPECT_THAT(ValidateConfig(config), IsOk());
}

TEST(ValidateConfig, BackoffPeriodAtLeastOneEpoch) {
  Config config;
  config.backoff_period_epochs = 0;
  ExpectRejected(config, "backoff_period_epochs is 0");
}

TEST(ValidateConfig, AttestationThresholdInUnitIntervalOpenAtOne) {
  Config config;
  config.attestation_threshold = 0.0;
  EXPECT_THAT(ValidateConfig(config), IsOk());
  config.attestation_threshold = 0.999;
  EXPECT_THAT(ValidateConfig(config), IsOk());
  for (double bad :
       {1.0, 1.5, -0.01, std::numeric_limits<double>::quiet_NaN(),
        std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    config.attestation_threshold = bad;
    EXPECT_THAT(ValidateConfig(config),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("attestation_threshold"), HasSubstr("[0, 1)"))))
        << bad;
  }
}

TEST(ValidateConfig, CriticalFailedBuildersAtLeastOne) {
  Config config;
  config.critical_failed_builders = 0;
  ExpectRejected(config, "critical_failed_builders is 0");
}

TEST(ValidateConfig, CriticalFailedUntrustedBuildersAtLeastOne) {
  Config config;
  config.critical_failed_untrusted_builders = 0;
  ExpectRejected(config, "critical_failed_untrusted_builders is 0");
}

TEST(ValidateConfig, SelfBuildNotTrusted) {
  Config config;
  config.trusted_builders = {1, kSelfBuild};
  EXPECT_THAT(ValidateConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("trusted_builders[1]"), HasSubstr("18446744073709551615"),
                             HasSubstr("self-build"))));
}

TEST(ValidateConfig, SelfBuildNotBlacklisted) {
  Config config;
  config.blacklisted_builders = {kSelfBuild};
  ExpectRejected(config, "blacklisted_builders[0]");
}

TEST(ValidateConfig, SelfBuildNotARelayIndex) {
  Config config;
  config.relays = {Relay("relay-a:1"), Relay("relay-b:1", {7, 8, kSelfBuild})};
  ExpectRejected(config, "relays[1].indices[2]");
}

TEST(ValidateConfig, IndexNotBothTrustedAndBlacklisted) {
  Config config;
  config.trusted_builders = {4, 9};
  config.blacklisted_builders = {1, 9};
  EXPECT_THAT(ValidateConfig(config), StatusIs(absl::StatusCode::kInvalidArgument,
                                               AllOf(HasSubstr("blacklisted_builders[1] is 9"),
                                                     HasSubstr("trusted_builders[1]"))));
}

TEST(ValidateConfig, IndexOfTrustedRelayNotBlacklisted) {
  Config config;
  config.relays = {Relay("relay-a:1", {4, 5}, /*trusted=*/true)};
  config.blacklisted_builders = {5};
  ExpectRejected(config, "relays[0].indices[1] (a trusted relay)");
}

TEST(ValidateConfig, IndexOfUntrustedRelayMayBeBlacklisted) {
  Config config;
  config.relays = {Relay("relay-a:1", {4, 5})};
  config.blacklisted_builders = {5};
  EXPECT_THAT(ValidateConfig(config), IsOk());
}

TEST(ValidateConfig, RelayIdentifierMustNormalize) {
  Config config;
  config.relays = {Relay("relay-a:1"), Relay("relay-b:2"), Relay("ftp://relay-c")};
  EXPECT_THAT(ValidateConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("relays[2].identifier"), HasSubstr("\"ftp://relay-c\""),
                             HasSubstr("scheme"))));
}

TEST(ValidateConfig, EmptyRelayIdentifierIsRejected) {
  Config config;
  config.relays = {Relay("")};
  ExpectRejected(config, "relays[0].identifier");
}

TEST(ValidateConfig, RelaysMustBeDistinctEndpoints) {
  Config config;
  config.relays = {Relay("relay.example.com"), Relay("other:1"),
                   Relay("HTTP://key@Relay.Example.com:80/")};
  EXPECT_THAT(ValidateConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("relays[2].identifier"), HasSubstr("relays[0].identifier"),
                             HasSubstr("http://relay.example.com"))));
}

TEST(ValidateConfig, BlacklistedRelaysMustNormalize) {
  Config config;
  config.blacklisted_relays = {"relay-a:1", "ftp://relay-c"};
  EXPECT_THAT(ValidateConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("blacklisted_relays[1]: "), HasSubstr("scheme"))));
  config.blacklisted_relays = {""};
  ExpectRejected(config, "blacklisted_relays[0]");
  config.blacklisted_relays = {"https://" + std::string(520, 'r')};
  ExpectRejected(config, "blacklisted_relays[0]");
}

TEST(ValidateConfig, BlacklistedRelaysAreDistinctEndpoints) {
  Config config;
  config.blacklisted_relays = {"relay.example.com", "other:1", "HTTP://key@Relay.Example.com:80/"};
  EXPECT_THAT(ValidateConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("blacklisted_relays[2]"), HasSubstr("blacklisted_relays[0]"),
                             HasSubstr("http://relay.example.com"))));
}

TEST(ValidateConfig, AtMostTheBoundOfBlacklistedRelays) {
  Config config;
  for (size_t i = 0; i < bounds::kMaxListedRelays; ++i)
    config.blacklisted_relays.push_back(absl::StrCat("relay-", i, ":1"));
  EXPECT_THAT(ValidateConfig(config), IsOk());
  config.blacklisted_relays.push_back("relay-256:1");
  ExpectRejected(config, absl::StrCat("blacklisted_relays lists ", bounds::kMaxListedRelays + 1,
                                      " entries; accepted: at most ", bounds::kMaxListedRelays));
}

TEST(ValidateConfig, TrustedRelayNotBlacklisted) {
  Config config;
  config.relays = {Relay("relay-a.example.com:18550"),
                   Relay("https://relay-b.example.com", {}, true)};
  config.blacklisted_relays = {"relay-a.example.com:18550", "HTTPS://Relay-B.example.com/"};
  EXPECT_THAT(ValidateConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("blacklisted_relays[1]"), HasSubstr("relays[1]"),
                             HasSubstr("https://relay-b.example.com"))));
  // An untrusted configured relay may be listed: its configured indices are banned with it.
  config.relays[1].trusted = false;
  EXPECT_THAT(ValidateConfig(config), IsOk());
}

TEST(ValidateConfig, RelayBlacklistPeriodAtLeastOneEpoch) {
  Config config;
  config.relay_blacklist_period_epochs = 0;
  ExpectRejected(config, "relay_blacklist_period_epochs is 0");
}

TEST(ValidateConfig, RelayAssociationTtlAtLeastOneEpoch) {
  Config config;
  config.relay_association_ttl_epochs = 0;
  ExpectRejected(config, "relay_association_ttl_epochs is 0");
}

TEST(ValidateConfig, MaxRelaysInRange) {
  Config config;
  config.max_relays = 0;
  EXPECT_THAT(ValidateConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("max_relays is 0"), HasSubstr("1..1024"))));
  config.max_relays = 1025;
  ExpectRejected(config, "max_relays is 1025");
  // So many relays fit the policy's bound only with few members each.
  config.max_relays = 1024;
  config.max_indices_per_relay = 1;
  config.max_tracked_builders = 16;
  EXPECT_THAT(ValidateConfig(config), IsOk());
  config.max_relays = 1;
  EXPECT_THAT(ValidateConfig(config), IsOk());
}

TEST(ValidateConfig, MaxIndicesPerRelayInRange) {
  Config config;
  config.max_indices_per_relay = 0;
  ExpectRejected(config, "max_indices_per_relay is 0");
  config.max_indices_per_relay = 1025;
  ExpectRejected(config, "max_indices_per_relay is 1025");
  config.max_indices_per_relay = 1024;
  config.max_relays = 2;
  EXPECT_THAT(ValidateConfig(config), IsOk());
}

TEST(ValidateConfig, MaxTrackedBuildersInRange) {
  Config config;
  config.max_tracked_builders = 15;
  EXPECT_THAT(ValidateConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("max_tracked_builders is 15"), HasSubstr("16..16384"))));
  config.max_tracked_builders = 16385;
  ExpectRejected(config, "max_tracked_builders is 16385");
  config.max_tracked_builders = 16;
  EXPECT_THAT(ValidateConfig(config), IsOk());
  config.max_tracked_builders = 8192;
  EXPECT_THAT(ValidateConfig(config), IsOk());
  // In range, but its policy would not fit beside the other caps' defaults.
  config.max_tracked_builders = 16384;
  ExpectRejected(config, "let a policy reach");
}

TEST(ValidateConfig, ConfiguredRelaysFitMaxRelays) {
  Config config;
  config.max_relays = 2;
  config.relays = {Relay("a:1"), Relay("b:1")};
  EXPECT_THAT(ValidateConfig(config), IsOk());
  config.relays.push_back(Relay("c:1"));
  ExpectRejected(config, "max_relays (2)");
}

TEST(ValidateConfig, ConfiguredIndicesFitMaxIndicesPerRelay) {
  Config config;
  config.max_indices_per_relay = 2;
  config.relays = {Relay("a:1", {1, 2}), Relay("b:1", {3, 4, 5})};
  EXPECT_THAT(ValidateConfig(config), StatusIs(absl::StatusCode::kInvalidArgument,
                                               AllOf(HasSubstr("relays[1].indices"),
                                                     HasSubstr("max_indices_per_relay (2)"))));
}

TEST(ValidateConfig, MissedSlotWindowInRange) {
  Config config;
  config.missed_slots.window_slots = 0;
  EXPECT_THAT(ValidateConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("missed_slots.window_slots is 0"), HasSubstr("1..64"))));
  config.missed_slots.window_slots = 65;
  ExpectRejected(config, "missed_slots.window_slots is 65");
  config.missed_slots.window_slots = 64;
  EXPECT_THAT(ValidateConfig(config), IsOk());
  config.missed_slots.window_slots = 1;
  EXPECT_THAT(ValidateConfig(config), IsOk());
}

TEST(ValidateConfig, LatchedRuleNeedsPositiveMaxAllowedMissingSlots) {
  Config config;
  config.missed_slots.max_allowed_missing_slots = 0;
  EXPECT_THAT(ValidateConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("missed_slots.max_allowed_missing_slots is 0"),
                             HasSubstr("latched_rule"))));
  config.missed_slots.latched_rule = false;
  EXPECT_THAT(ValidateConfig(config), IsOk());
}

TEST(ValidateConfig, MinReportingNodesAtLeastOne) {
  Config config;
  config.min_reporting_nodes = 0;
  ExpectRejected(config, "min_reporting_nodes is 0");
}

TEST(ValidateConfig, AmendmentWindowInRange) {
  Config config;
  config.amendment_window_slots = 1;
  EXPECT_THAT(ValidateConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("amendment_window_slots is 1"), HasSubstr("2..128"))));
  config.amendment_window_slots = 129;
  ExpectRejected(config, "amendment_window_slots is 129");
  config.amendment_window_slots = 2;
  EXPECT_THAT(ValidateConfig(config), IsOk());
  config.amendment_window_slots = 128;
  EXPECT_THAT(ValidateConfig(config), IsOk());
}

TEST(ValidateConfig, MaxFutureSlotsAtMostEight) {
  Config config;
  config.max_future_slots = 9;
  EXPECT_THAT(ValidateConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("max_future_slots is 9"), HasSubstr("0..8"))));
  config.max_future_slots = 8;
  EXPECT_THAT(ValidateConfig(config), IsOk());
  config.max_future_slots = 0;
  EXPECT_THAT(ValidateConfig(config), IsOk());
}

TEST(ValidateConfig, ReportsTheFirstProblem) {
  Config config;
  config.chain.slots_per_epoch = 0;
  config.backoff_period_epochs = 0;
  config.max_future_slots = 100;
  ExpectRejected(config, "chain.slots_per_epoch");
  config.chain.slots_per_epoch = 32;
  ExpectRejected(config, "backoff_period_epochs");
  config.backoff_period_epochs = 5;
  ExpectRejected(config, "max_future_slots");
}

// --- Presets ---

TEST(MissedSlotRulesForPreset, Mevboost) {
  absl::StatusOr<MissedSlotRules> rules = MissedSlotRulesForPreset("mevboost");
  ASSERT_THAT(rules, IsOk());
  EXPECT_EQ(rules->preset, "mevboost");
  EXPECT_TRUE(rules->latched_rule);
  EXPECT_EQ(rules->max_allowed_missing_slots, 5u);
  EXPECT_EQ(rules->max_consecutive_missed_slots, 0u);
  EXPECT_EQ(rules->max_missed_slots_in_window, 0u);
  EXPECT_EQ(rules->window_slots, 32u);
  EXPECT_EQ(rules->max_epochs_since_finalization, 0u);
}

TEST(MissedSlotRulesForPreset, MevboostIsTheDefault) {
  absl::StatusOr<MissedSlotRules> rules = MissedSlotRulesForPreset("mevboost");
  ASSERT_THAT(rules, IsOk());
  EXPECT_EQ(*rules, MissedSlotRules());
}

// Each client's own check in the engine's "exceeds" form over the slots before the proposal
// slot p; core/missed_slots_test.cc checks the slots at which each trips and recovers.

TEST(MissedSlotRulesForPreset, Prysm) {
  absl::StatusOr<MissedSlotRules> rules = MissedSlotRulesForPreset("prysm");
  ASSERT_THAT(rules, IsOk());
  EXPECT_EQ(rules->preset, "prysm");
  EXPECT_FALSE(rules->latched_rule);
  // p - highest block slot >= 3: p-2 and p-1 empty, more than 1 consecutive.
  EXPECT_EQ(rules->max_consecutive_missed_slots, 1u);
  // At least 5 of [p-32, p-1] without a block: more than 4.
  EXPECT_EQ(rules->max_missed_slots_in_window, 4u);
  EXPECT_EQ(rules->window_slots, 32u);
  EXPECT_EQ(rules->max_epochs_since_finalization, 0u);
}

TEST(MissedSlotRulesForPreset, Lighthouse) {
  absl::StatusOr<MissedSlotRules> rules = MissedSlotRulesForPreset("lighthouse");
  ASSERT_THAT(rules, IsOk());
  EXPECT_EQ(rules->preset, "lighthouse");
  EXPECT_FALSE(rules->latched_rule);
  EXPECT_EQ(rules->max_consecutive_missed_slots, 3u);
  EXPECT_EQ(rules->max_missed_slots_in_window, 8u);
  EXPECT_EQ(rules->window_slots, 32u);
  EXPECT_EQ(rules->max_epochs_since_finalization, 3u);
}

TEST(MissedSlotRulesForPreset, Teku) {
  absl::StatusOr<MissedSlotRules> rules = MissedSlotRulesForPreset("teku");
  ASSERT_THAT(rules, IsOk());
  EXPECT_EQ(rules->preset, "teku");
  EXPECT_FALSE(rules->latched_rule);
  EXPECT_EQ(rules->max_consecutive_missed_slots, 3u);
  // Fewer than 27 distinct block roots in [p-32, p-1]: more than 5 empty slots in [p-31, p-1].
  EXPECT_EQ(rules->max_missed_slots_in_window, 5u);
  EXPECT_EQ(rules->window_slots, 31u);
  EXPECT_EQ(rules->max_epochs_since_finalization, 0u);
}

TEST(MissedSlotRulesForPreset, OffTurnsEveryRuleOff) {
  absl::StatusOr<MissedSlotRules> rules = MissedSlotRulesForPreset("off");
  ASSERT_THAT(rules, IsOk());
  EXPECT_EQ(rules->preset, "off");
  EXPECT_FALSE(rules->latched_rule);
  EXPECT_EQ(rules->max_consecutive_missed_slots, 0u);
  EXPECT_EQ(rules->max_missed_slots_in_window, 0u);
  EXPECT_EQ(rules->max_epochs_since_finalization, 0u);
}

TEST(MissedSlotRulesForPreset, UnknownNameListsKnownPresets) {
  EXPECT_THAT(MissedSlotRulesForPreset("nimbus"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"nimbus\""), HasSubstr("mevboost"), HasSubstr("prysm"),
                             HasSubstr("lighthouse"), HasSubstr("teku"), HasSubstr("off"))));
  EXPECT_THAT(MissedSlotRulesForPreset(""), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(MissedSlotRulesForPreset("custom"), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(MissedSlotRules, EqualityComparesEveryField) {
  const MissedSlotRules base;
  EXPECT_TRUE(base == MissedSlotRules());
  MissedSlotRules other = base;
  other.preset = "custom";
  EXPECT_FALSE(base == other);
  other = base;
  other.latched_rule = false;
  EXPECT_FALSE(base == other);
  other = base;
  other.max_allowed_missing_slots = 6;
  EXPECT_FALSE(base == other);
  other = base;
  other.max_consecutive_missed_slots = 1;
  EXPECT_FALSE(base == other);
  other = base;
  other.max_missed_slots_in_window = 1;
  EXPECT_FALSE(base == other);
  other = base;
  other.window_slots = 8;
  EXPECT_FALSE(base == other);
  other = base;
  other.max_epochs_since_finalization = 1;
  EXPECT_FALSE(base == other);
}

TEST(MissedSlotRules, PresetsDiffer) {
  EXPECT_FALSE(*MissedSlotRulesForPreset("prysm") == *MissedSlotRulesForPreset("teku"));
}

}  // namespace
}  // namespace breaker::core
