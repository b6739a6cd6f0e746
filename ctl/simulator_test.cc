#include "ctl/simulator.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "breaker/v1/breaker.pb.h"
#include "breaker/v1/scenario.pb.h"
#include "core/config.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/codec/config_file.h"
#include "proto/codec/text_file.h"
#include "tests/support/status_matchers.h"

namespace breaker::ctl {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;
using ::testing::StartsWith;

// How many UTF-8 characters `line` has before its byte `byte`.
int CharactersBefore(const std::string& line, size_t byte) {
  return static_cast<int>(std::count_if(line.begin(), line.begin() + byte, [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

constexpr char kScenarioDir[] = "examples/scenarios";

// Mainnet with the Gloas rules from genesis, as examples/scenarios/gloas.config.textproto.
core::Config GloasConfig() {
  absl::StatusOr<core::Config> config =
      codec::ParseConfigText("chain { network: \"mainnet\" gloas_fork_epoch: 0 }", "gloas");
  EXPECT_THAT(config, IsOk());
  return config.ok() ? *config : core::Config();
}

// Mainnet before the Gloas fork, with the default (mevboost) missed-slot rules.
core::Config PreGloasConfig() {
  absl::StatusOr<core::Config> config =
      codec::ParseConfigText("chain { network: \"mainnet\" }", "pre_gloas");
  EXPECT_THAT(config, IsOk());
  return config.ok() ? *config : core::Config();
}

// A pre-Gloas scenario's start: slots 320000-320005 reported without a block, one slot passing
// after each.
std::string SixMissedSlotsFrom320000() {
  std::string text = "start_slot: 320000\n";
  for (int i = 0; i < 6; ++i) {
    absl::StrAppend(&text, R"pb(step {
                                  observe {
                                    node: "bn-1"
                                    observation { blocks_seen {} }
                                  }
                                }
                                step { advance { slots: 1 } })pb");
  }
  return text;
}

v1::Scenario ParseScenario(const std::string& text) {
  v1::Scenario scenario;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &scenario)) << text;
  return scenario;
}

// Slot 320000 is the first slot of epoch 10000.
constexpr char kBuilderFailsThenBanLifts[] = R"pb(
  description: "builder 5 fails once"
  start_slot: 320000
  step {
    name: "builder 5 fails"
    observe {
      node: "bn-1"
      observation { payload_missing { builder_index: 5 block_root: "r1" attested_fraction: 0.9 } }
    }
  }
  step {
    name: "same block, another node"
    observe {
      node: "bn-2"
      observation { payload_missing { builder_index: 5 block_root: "r1" attested_fraction: 0.9 } }
    }
  }
  step {
    name: "next epoch"
    advance { epochs: 1 }
  }
  step {
    name: "check"
    expect { banned_builders {} }
  }
)pb";

std::vector<uint64_t> BannedBuilders(const v1::Policy& policy) {
  std::vector<uint64_t> builders;
  for (const v1::BuilderBan& ban : policy.banned_builders())
    builders.push_back(ban.builder_index());
  return builders;
}

std::vector<std::string> FailureMessages(const SimulationResult& result) {
  std::vector<std::string> messages;
  for (const ExpectationFailure& failure : result.failures) messages.push_back(failure.message);
  return messages;
}

// --- The timeline ---

TEST(SimulateTest, TimelineHasTheStartAndAnEntryPerNewVersion) {
  absl::StatusOr<SimulationResult> result =
      Simulate(GloasConfig(), ParseScenario(kBuilderFailsThenBanLifts));
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->description, "builder 5 fails once");
  EXPECT_THAT(result->failures, IsEmpty());
  // Step 2 counts the same root again and step 4 only checks: neither makes a version.
  ASSERT_THAT(result->timeline, SizeIs(3));

  const TimelineEntry& start = result->timeline[0];
  EXPECT_EQ(start.step, 0);
  EXPECT_EQ(start.step_name, "start");
  EXPECT_EQ(start.slot, 320000u);
  EXPECT_EQ(start.epoch, 10000u);
  EXPECT_EQ(start.policy.version(), 1u);
  EXPECT_EQ(start.policy.mode(), v1::MODE_ALL_BUILDERS);
  EXPECT_THAT(BannedBuilders(start.policy), IsEmpty());

  const TimelineEntry& banned = result->timeline[1];
  EXPECT_EQ(banned.step, 1);
  EXPECT_EQ(banned.step_name, "builder 5 fails");
  EXPECT_EQ(banned.slot, 320000u);
  EXPECT_EQ(banned.policy.version(), 2u);
  EXPECT_THAT(BannedBuilders(banned.policy), ElementsAre(5));
  EXPECT_EQ(banned.policy.banned_builders(0).ban().until_epoch(), 10001u);

  const TimelineEntry& lifted = result->timeline[2];
  EXPECT_EQ(lifted.step, 3);
  EXPECT_EQ(lifted.step_name, "next epoch");
  EXPECT_EQ(lifted.slot, 320032u);
  EXPECT_EQ(lifted.epoch, 10001u);
  EXPECT_EQ(lifted.policy.version(), 3u);
  EXPECT_THAT(BannedBuilders(lifted.policy), IsEmpty());
}

TEST(SimulateTest, UnnamedStepsAreNumberedFromOne) {
  absl::StatusOr<SimulationResult> result =
      Simulate(GloasConfig(), ParseScenario(R"pb(
                 start_slot: 320000
                 step { advance { slots: 1 } }
                 step {
                   observe {
                     node: "bn-1"
                     observation {
                       payload_missing { builder_index: 5 block_root: "r1" attested_fraction: 0.9 }
                     }
                   }
                   expect { mode: MODE_SELF_BUILD }
                 }
               )pb"));
  ASSERT_THAT(result, IsOk());
  ASSERT_THAT(result->timeline, SizeIs(2));
  EXPECT_EQ(result->timeline[1].step, 2);
  EXPECT_EQ(result->timeline[1].step_name, "step 2");
  ASSERT_THAT(result->failures, SizeIs(1));
  EXPECT_EQ(result->failures[0].step, 2);
  EXPECT_EQ(result->failures[0].step_name, "step 2");
}

// Builder 5 fails at the current slot (slot 0) after the advance ("%s"): the version that bans
// it is made where the advance reached.
constexpr char kAdvanceThenFail[] = R"pb(
  start_slot: 320005
  step { advance { %s } }
  step {
    observe {
      node: "bn-1"
      observation { payload_missing { builder_index: 5 block_root: "r1" attested_fraction: 0.9 } }
    }
  }
)pb";

TEST(SimulateTest, AdvanceVariantsReachTheirSlot) {
  struct Case {
    const char* advance;
    uint64_t slot;
  };
  for (const Case& c : {Case{"slots: 27", 320032}, Case{"epochs: 1", 320037},
                        Case{"slot: 320040", 320040}, Case{"epoch: 10001", 320032}}) {
    SCOPED_TRACE(c.advance);
    std::string text = kAdvanceThenFail;
    text.replace(text.find("%s"), 2, c.advance);
    absl::StatusOr<SimulationResult> result = Simulate(GloasConfig(), ParseScenario(text));
    ASSERT_THAT(result, IsOk());
    ASSERT_THAT(result->timeline, SizeIs(2));
    EXPECT_EQ(result->timeline[1].step, 2);
    EXPECT_EQ(result->timeline[1].slot, c.slot);
    EXPECT_EQ(result->timeline[1].epoch, 10001u);
    EXPECT_EQ(result->timeline[1].policy.computed_at_slot(), c.slot);
  }
}

TEST(SimulateTest, AnAdvanceIsPlayedSlotBySlotAsBreakerdsClockMovesIt) {
  // Pre-Gloas: slots 320000-320005 are missed. The sixth is judged at 320007, where the latched
  // rule trips; at 320008 slot 320006 (no report: unknown) is the latest judged and the run is
  // over. breakerd, whose clock ticks at every slot, trips at 320007: so must a jump past it.
  std::string text = SixMissedSlotsFrom320000();
  absl::StrAppend(&text, R"pb(
    step {
      name: "two slots later"
      advance { slots: 2 }
      expect { mode: MODE_SELF_BUILD missed_slots_tripped: true }
    }
  )pb");
  absl::StatusOr<SimulationResult> result = Simulate(PreGloasConfig(), ParseScenario(text));
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(FailureMessages(*result), IsEmpty());
  ASSERT_THAT(result->timeline, SizeIs(2));
  EXPECT_EQ(result->timeline[1].step, 13);
  EXPECT_EQ(result->timeline[1].step_name, "two slots later");
  EXPECT_EQ(result->timeline[1].slot, 320007u);
}

TEST(SimulateTest, EveryVersionOnTheWayOfAnAdvanceIsInTheTimeline) {
  // Builder 5's ban lifts at epoch 10001 and the operator's ban of builder 8 at 10002: one
  // advance of three epochs makes two versions, at the two epoch boundaries.
  absl::StatusOr<SimulationResult> result =
      Simulate(GloasConfig(), ParseScenario(R"pb(
                 start_slot: 320000
                 step {
                   observe {
                     node: "bn-1"
                     observation {
                       payload_missing { builder_index: 5 block_root: "r1" attested_fraction: 0.9 }
                     }
                   }
                 }
                 step { admin { ban { builder_index: 8 reason: "test" until_epoch: 10002 } } }
                 step {
                   name: "long wait"
                   advance { epochs: 3 }
                   expect { banned_builders {} }
                 }
               )pb"));
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(FailureMessages(*result), IsEmpty());
  std::vector<std::pair<int, uint64_t>> steps_and_slots;
  for (const TimelineEntry& entry : result->timeline) {
    steps_and_slots.emplace_back(entry.step, entry.slot);
  }
  EXPECT_THAT(steps_and_slots, ElementsAre(std::make_pair(0, 320000), std::make_pair(1, 320000),
                                           std::make_pair(2, 320000), std::make_pair(3, 320032),
                                           std::make_pair(3, 320064)));
  EXPECT_EQ(result->timeline[3].step_name, "long wait");
  EXPECT_THAT(BannedBuilders(result->timeline[3].policy), ElementsAre(8));
  EXPECT_THAT(BannedBuilders(result->timeline[4].policy), IsEmpty());
}

TEST(SimulateTest, AdminActionsApplyAsTheAdminServiceDoes) {
  absl::StatusOr<SimulationResult> result =
      Simulate(GloasConfig(), ParseScenario(R"pb(
                 start_slot: 320000
                 step {
                   name: "operator ban"
                   admin { ban { builder_index: 8 reason: "withheld twice" } }
                   expect { banned_builders { builder_indices: 8 } }
                 }
                 step {
                   name: "unban"
                   admin { unban { builder_index: 8 } }
                   expect { banned_builders {} }
                 }
               )pb"));
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(result->failures, IsEmpty());
  ASSERT_THAT(result->timeline, SizeIs(3));
  ASSERT_EQ(result->timeline[1].policy.banned_builders_size(), 1);
  EXPECT_EQ(result->timeline[1].policy.banned_builders(0).ban().kind(), v1::BAN_KIND_OPERATOR);
}

TEST(SimulateTest, RelayBansApplyAsTheAdminServiceDoes) {
  absl::StatusOr<SimulationResult> result = Simulate(
      GloasConfig(), ParseScenario(R"pb(
        start_slot: 320000
        step {
          name: "builder 8 bids through relay.example:18550"
          observe {
            node: "bn-1"
            observation { bid_seen { builder_index: 8 relay: "relay.example:18550" } }
          }
        }
        step {
          name: "the operator bans the relay"
          admin { ban_relay { relay: "HTTP://Relay.Example:18550/" reason: "leaked bids" } }
          expect {
            banned_builders { builder_indices: 8 }
            banned_relays { relays: "relay.example:18550" }
          }
        }
        step {
          name: "another relay is not banned by the operator"
          admin { unban_relay { relay: "https://other.example" } }
          expect { error_contains: "not banned by the operator" }
        }
        step {
          name: "unban the relay"
          admin { unban_relay { relay: "http://relay.example:18550" } }
          expect {
            banned_builders {}
            banned_relays {}
          }
        }
      )pb"));
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(result->failures, IsEmpty());
  ASSERT_THAT(result->timeline, SizeIs(3));
  ASSERT_EQ(result->timeline[1].policy.banned_builders_size(), 1);
  EXPECT_EQ(result->timeline[1].policy.banned_builders(0).ban().kind(), v1::BAN_KIND_OPERATOR);
  EXPECT_EQ(result->timeline[1].policy.banned_relays(0).ban().kind(), v1::BAN_KIND_OPERATOR);
}

// --- Sequence numbers and scenario conveniences ---

TEST(SimulateTest, SequenceZeroIsTheNodesNextAndAReplayIsIgnored) {
  absl::StatusOr<SimulationResult> result =
      Simulate(GloasConfig(), ParseScenario(R"pb(
                 start_slot: 320000
                 step {
                   name: "sequence 1"
                   observe {
                     node: "bn-1"
                     observation {
                       payload_missing { builder_index: 5 block_root: "r1" attested_fraction: 0.9 }
                     }
                   }
                 }
                 step {
                   name: "sequence 2"
                   observe {
                     node: "bn-1"
                     observation {
                       payload_missing { builder_index: 6 block_root: "r2" attested_fraction: 0.9 }
                     }
                   }
                   expect { banned_builders { builder_indices: [ 5, 6 ] } }
                 }
                 step {
                   name: "a replay of sequence 2"
                   observe {
                     node: "bn-1"
                     observation {
                       sequence: 2
                       payload_missing { builder_index: 7 block_root: "r3" attested_fraction: 0.9 }
                     }
                   }
                   expect { banned_builders { builder_indices: [ 5, 6 ] } }
                 }
                 step {
                   name: "another node starts at 1"
                   observe {
                     node: "bn-2"
                     observation {
                       payload_missing { builder_index: 7 block_root: "r3" attested_fraction: 0.9 }
                     }
                   }
                   expect { banned_builders { builder_indices: [ 5, 6, 7 ] } }
                 }
                 step {
                   name: "explicit numbers may skip"
                   observe {
                     node: "bn-1"
                     observation {
                       sequence: 10
                       payload_missing { builder_index: 8 block_root: "r4" attested_fraction: 0.9 }
                     }
                   }
                 }
                 step {
                   name: "sequence 0 after 10 is 11, not a replay"
                   observe {
                     node: "bn-1"
                     observation {
                       payload_missing { builder_index: 9 block_root: "r5" attested_fraction: 0.9 }
                     }
                   }
                   expect { banned_builders { builder_indices: [ 5, 6, 7, 8, 9 ] } }
                 }
               )pb"));
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(FailureMessages(*result), IsEmpty());
}

TEST(SimulateTest, ARefusedObservationUsesUpItsNumber) {
  // A root longer than 32 bytes is refused by the codec, as breakerd refuses it; its number is
  // handled all the same, so a resend under it is a replay and sequence 0 goes on after it.
  absl::StatusOr<SimulationResult> result =
      Simulate(GloasConfig(), ParseScenario(R"pb(
                 start_slot: 320000
                 step {
                   name: "refused, as sequence 1"
                   observe {
                     node: "bn-1"
                     observation {
                       payload_missing {
                         builder_index: 5
                         block_root: "0123456789012345678901234567890123456789"
                         attested_fraction: 0.9
                       }
                     }
                   }
                   expect { error_contains: "payload_missing.block_root" }
                 }
                 step {
                   name: "sequence 1 again: a replay"
                   observe {
                     node: "bn-1"
                     observation {
                       sequence: 1
                       payload_missing { builder_index: 5 block_root: "r1" attested_fraction: 0.9 }
                     }
                   }
                   expect { banned_builders {} }
                 }
                 step {
                   name: "sequence 0: the next, 2"
                   observe {
                     node: "bn-1"
                     observation {
                       payload_missing { builder_index: 5 block_root: "r1" attested_fraction: 0.9 }
                     }
                   }
                   expect { banned_builders { builder_indices: 5 } }
                 }
               )pb"));
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(FailureMessages(*result), IsEmpty());
}

TEST(SimulateTest, SlotZeroIsTheCurrentSlotAndShortRootsAreLabels) {
  // Two nodes must report a failure; both name block "r1", which is one root. Slot 0 is the
  // current slot: slot 0 itself would be far outside the amendment window by then.
  core::Config config = GloasConfig();
  config.min_reporting_nodes = 2;
  absl::StatusOr<SimulationResult> result =
      Simulate(config, ParseScenario(R"pb(
                 start_slot: 320000
                 step { advance { slots: 100 } }
                 step {
                   observe {
                     node: "bn-1"
                     observation {
                       payload_missing { builder_index: 5 block_root: "r1" attested_fraction: 0.9 }
                     }
                   }
                   expect { banned_builders {} }
                 }
                 step {
                   observe {
                     node: "bn-2"
                     observation {
                       payload_missing { builder_index: 5 block_root: "r1" attested_fraction: 0.9 }
                     }
                   }
                   expect { banned_builders { builder_indices: 5 } }
                 }
               )pb"));
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(FailureMessages(*result), IsEmpty());
  ASSERT_THAT(result->timeline, SizeIs(2));
  EXPECT_EQ(result->timeline[1].slot, 320100u);
}

// --- Expectations ---

TEST(SimulateTest, ExpectationsThatHoldAreNoFailures) {
  absl::StatusOr<SimulationResult> result = Simulate(
      GloasConfig(), ParseScenario(R"pb(
        start_slot: 320000
        step {
          observe {
            node: "bn-1"
            observation { bid_seen { builder_index: 1 relay: "http://0xabc@relay.example:18550" } }
          }
        }
        step {
          observe {
            node: "bn-1"
            observation { bid_seen { builder_index: 2 relay: "relay.example:18550" } }
          }
        }
        step {
          observe {
            node: "bn-1"
            observation {
              payload_missing { builder_index: 1 block_root: "r1" attested_fraction: 0.9 }
            }
          }
          expect {
            mode: MODE_ALL_BUILDERS
            banned_builders { builder_indices: [ 2, 1, 2 ] }
            banned_relays { relays: "Relay.Example:18550/" }
            missed_slots_tripped: false
          }
        }
      )pb"));
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(FailureMessages(*result), IsEmpty());
}

TEST(SimulateTest, FailedExpectationsNameTheStepWhatWasExpectedAndWhatWasFound) {
  absl::StatusOr<SimulationResult> result =
      Simulate(GloasConfig(), ParseScenario(R"pb(
                 start_slot: 320000
                 step {
                   name: "builder 5 fails"
                   observe {
                     node: "bn-1"
                     observation {
                       payload_missing { builder_index: 5 block_root: "r1" attested_fraction: 0.9 }
                     }
                   }
                   expect {
                     mode: MODE_TRUSTED_ONLY
                     banned_builders { builder_indices: [ 5, 6 ] }
                     banned_relays { relays: "relay.example:18550" }
                   }
                 }
                 step {
                   name: "all builders again?"
                   expect { banned_builders {} }
                 }
               )pb"));
  ASSERT_THAT(result, IsOk());
  ASSERT_THAT(result->failures, SizeIs(4));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(result->failures[i].step, 1);
    EXPECT_EQ(result->failures[i].step_name, "builder 5 fails");
  }
  EXPECT_EQ(result->failures[0].message, "mode: expected MODE_TRUSTED_ONLY, got MODE_ALL_BUILDERS");
  EXPECT_EQ(result->failures[1].message,
            "banned builders: expected {5, 6}, got {5} (not banned: {6})");
  EXPECT_EQ(result->failures[2].message,
            "banned relays: expected {http://relay.example:18550}, got {} (not banned: "
            "{http://relay.example:18550})");
  EXPECT_EQ(result->failures[3].step, 2);
  EXPECT_EQ(result->failures[3].step_name, "all builders again?");
  EXPECT_EQ(result->failures[3].message,
            "banned builders: expected {}, got {5} (unexpectedly banned: {5})");

  const std::string table = FormatTimeline(*result);
  EXPECT_THAT(table, HasSubstr("FAILED step 1 (builder 5 fails): mode: expected "
                               "MODE_TRUSTED_ONLY, got MODE_ALL_BUILDERS\n"));
  EXPECT_THAT(table, HasSubstr("FAILED step 2 (all builders again?): banned builders: "));
}

TEST(SimulateTest, MissedSlotsTrippedIsChecked) {
  // Pre-Gloas: six missed slots from 320000, the sixth judged at 320007.
  std::string text = SixMissedSlotsFrom320000();
  absl::StrAppend(&text, R"pb(
    step {
      name: "judged"
      advance { slots: 1 }
      expect { missed_slots_tripped: false }
    }
  )pb");
  absl::StatusOr<SimulationResult> result = Simulate(PreGloasConfig(), ParseScenario(text));
  ASSERT_THAT(result, IsOk());
  ASSERT_THAT(result->failures, SizeIs(1));
  EXPECT_EQ(result->failures[0].step, 13);
  EXPECT_THAT(result->failures[0].message,
              AllOf(StartsWith("missed_slots_tripped: expected false, got true ("),
                    HasSubstr("6 missed slots since the last present slot > 5")));
  EXPECT_EQ(result->timeline.back().policy.mode(), v1::MODE_SELF_BUILD);
}

// --- Refused actions ---

constexpr char kTooFarAhead[] = R"pb(
  start_slot: 320000
  step {
    name: "from the future"
    observe {
      node: "bn-1"
      observation {
        slot: 320010
        payload_missing { builder_index: 5 block_root: "r1" attested_fraction: 0.9 }
      }
    }
    expect { banned_builders {} %s }
  }
)pb";

v1::Scenario TooFarAhead(absl::string_view expect_extra) {
  std::string text = kTooFarAhead;
  text.replace(text.find("%s"), 2, std::string(expect_extra));
  return ParseScenario(text);
}

TEST(SimulateTest, ErrorContainsHoldsWhenTheActionIsRefusedSo) {
  absl::StatusOr<SimulationResult> result =
      Simulate(GloasConfig(), TooFarAhead("error_contains: \"slots ahead of the current slot\""));
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(FailureMessages(*result), IsEmpty());
  EXPECT_THAT(result->timeline, SizeIs(1));
}

TEST(SimulateTest, ErrorContainsFailsOnAnotherError) {
  absl::StatusOr<SimulationResult> result =
      Simulate(GloasConfig(), TooFarAhead("error_contains: \"self-build\""));
  ASSERT_THAT(result, IsOk());
  ASSERT_THAT(result->failures, SizeIs(1));
  EXPECT_EQ(result->failures[0].step_name, "from the future");
  EXPECT_THAT(result->failures[0].message,
              AllOf(StartsWith("error_contains: expected an error containing \"self-build\", got "
                               "OUT_OF_RANGE: "),
                    HasSubstr("slots ahead")));
}

TEST(SimulateTest, ARefusedActionWithoutErrorContainsIsAFailure) {
  absl::StatusOr<SimulationResult> result = Simulate(GloasConfig(), TooFarAhead(""));
  ASSERT_THAT(result, IsOk());
  ASSERT_THAT(result->failures, SizeIs(1));
  EXPECT_EQ(result->failures[0].step, 1);
  EXPECT_THAT(result->failures[0].message,
              StartsWith("the action was refused: OUT_OF_RANGE: observation slot 320010"));
}

TEST(SimulateTest, ARefusedActionWithoutAnyExpectationIsAFailure) {
  absl::StatusOr<SimulationResult> result = Simulate(GloasConfig(), ParseScenario(R"pb(
                                                       step {
                                                         name: "unban nobody"
                                                         admin { unban { builder_index: 3 } }
                                                       }
                                                     )pb"));
  ASSERT_THAT(result, IsOk());
  ASSERT_THAT(result->failures, SizeIs(1));
  EXPECT_EQ(result->failures[0].step_name, "unban nobody");
  EXPECT_EQ(result->failures[0].message,
            "the action was refused: NOT_FOUND: builder 3 is not banned");
}

TEST(SimulateTest, ErrorContainsFailsWhenTheActionSucceeds) {
  absl::StatusOr<SimulationResult> result =
      Simulate(GloasConfig(), ParseScenario(R"pb(
                 step {
                   name: "ban"
                   admin { ban { builder_index: 3 reason: "test" } }
                   expect { error_contains: "not banned" }
                 }
               )pb"));
  ASSERT_THAT(result, IsOk());
  ASSERT_THAT(result->failures, SizeIs(1));
  EXPECT_EQ(result->failures[0].message,
            "error_contains: expected the action to be refused with \"not banned\", but it "
            "succeeded");
}

// --- Scenarios that cannot be played ---

struct InvalidCase {
  const char* what;
  const char* step;
  const char* error;
};

class InvalidScenarioTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidScenarioTest, IsRefusedNamingTheStep) {
  // Step 1 is valid; step 2 is the case's.
  const std::string text = absl::StrCat(R"pb(
                                          start_slot: 320040
                                          step {
                                            name: "fine"
                                            advance { slots: 1 }
                                          }
                                          step { name: "the step")pb",
                                        GetParam().step, "}");
  EXPECT_THAT(Simulate(GloasConfig(), ParseScenario(text)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith("step 2 (the step): "), HasSubstr(GetParam().error))));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, InvalidScenarioTest,
    ::testing::Values(
        InvalidCase{"NoNode", R"pb(observe { observation { finalized { epoch: 1 } } })pb",
                    "observe needs a node"},
        InvalidCase{"NoObservation", R"pb(observe { node: "bn-1" })pb",
                    "observe needs an observation with an event"},
        InvalidCase{"NoEvent", R"pb(observe {
                                      node: "bn-1"
                                      observation { slot: 5 }
                                    })pb",
                    "observe needs an observation with an event"},
        InvalidCase{"NothingToDo", "", "neither an action nor an expectation"},
        InvalidCase{"EmptyAdvance", "advance {}", "advance needs one of"},
        InvalidCase{"EmptyAdmin", "admin {}", "admin needs an action"},
        InvalidCase{"SlotBackwards", "advance { slot: 320000 }",
                    "advance to slot 320000 goes back: the current slot is 320041"},
        InvalidCase{"EpochBackwards", "advance { epoch: 10001 }",
                    "advance to epoch 10001 (slot 320032) goes back: the current slot is 320041"},
        InvalidCase{"PastTheLastSlot", "advance { slots: 18446744073709551615 }",
                    "advance by 18446744073709551615 slots goes past the last slot"},
        InvalidCase{"EpochPastTheLastSlot", "advance { epoch: 18446744073709551615 }",
                    "goes past the last slot"},
        InvalidCase{"TooLong", "advance { epochs: 40000 }",
                    "advance by 40000 epochs is 1280000 slots long; one step advances at most "
                    "1048576 slots"},
        InvalidCase{"ErrorWithoutAction", R"pb(expect { error_contains: "x" })pb",
                    "error_contains needs an action"},
        InvalidCase{"BadExpectedRelay", R"pb(expect { banned_relays { relays: "ftp://x" } })pb",
                    "expect.banned_relays: "}),
    [](const ::testing::TestParamInfo<InvalidCase>& info) { return info.param.what; });

TEST(SimulateTest, AnInvalidConfigurationIsRefused) {
  core::Config config = GloasConfig();
  config.critical_failures = 0;
  EXPECT_THAT(Simulate(config, v1::Scenario()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("critical_failures")));
}

TEST(SimulateTest, AnAdvanceToTheCurrentSlotIsNoStepBack) {
  absl::StatusOr<SimulationResult> result = Simulate(GloasConfig(), ParseScenario(R"pb(
                                                       start_slot: 320032
                                                       step { advance { slot: 320032 } }
                                                       step { advance { epoch: 10001 } }
                                                       step { advance { slots: 0 } }
                                                     )pb"));
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(result->failures, IsEmpty());
}

// --- Output ---

TEST(FormatTimelineTest, IsAnAlignedTableWithTheDescriptionFirst) {
  absl::StatusOr<SimulationResult> result =
      Simulate(GloasConfig(), ParseScenario(R"pb(
                 description: "two builders through one relay"
                 start_slot: 320000
                 step {
                   observe {
                     node: "bn-1"
                     observation { bid_seen { builder_index: 1 relay: "relay.example:18550" } }
                   }
                 }
                 step {
                   observe {
                     node: "bn-1"
                     observation { bid_seen { builder_index: 12 relay: "relay.example:18550" } }
                   }
                 }
                 step {
                   name: "builder 1 fails"
                   observe {
                     node: "bn-1"
                     observation {
                       payload_missing { builder_index: 1 block_root: "r1" attested_fraction: 0.9 }
                     }
                   }
                 }
               )pb"));
  ASSERT_THAT(result, IsOk());
  const std::string table = FormatTimeline(*result);
  const std::vector<std::string> lines = absl::StrSplit(table, '\n', absl::SkipEmpty());
  ASSERT_THAT(lines, SizeIs(4));
  EXPECT_EQ(lines[0], "two builders through one relay");
  const std::string& header = lines[1];
  EXPECT_THAT(header, StartsWith("step  name "));
  const std::string& start = lines[2];
  const std::string& ban = lines[3];
  EXPECT_THAT(start, StartsWith("0     start "));
  EXPECT_THAT(ban, StartsWith("3     builder 1 fails "));
  // Each value starts under its column's title.
  for (const auto& [column, start_value, ban_value] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"slot", "320000", "320000"},
           {"epoch", "10000", "10000"},
           {"version", "1", "2"},
           {"mode", "ALL_BUILDERS", "ALL_BUILDERS"},
           {"banned builders", "-", "1,12"},
           {"banned relays", "-", "http://relay.example:18550"},
           {"reason", "mode ALL_BUILDERS", "banned builders"}}) {
    SCOPED_TRACE(column);
    const size_t at = header.find(column);
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(start.compare(at, start_value.size(), start_value), 0) << start;
    EXPECT_EQ(ban.compare(at, ban_value.size(), ban_value), 0) << ban;
  }
}

TEST(FormatTimelineTest, KeepsEachRowOnOneLineWithControlBytesEscaped) {
  SimulationResult result;
  result.description = "clears\x1b[2J the screen";
  result.timeline.emplace_back();
  result.timeline.back().step_name = "two\nlines";
  result.failures.push_back(ExpectationFailure{1, "a\tb", "x\ny"});
  const std::string table = FormatTimeline(result);
  EXPECT_THAT(table, Not(HasSubstr("\x1b")));
  EXPECT_THAT(table, HasSubstr("clears\\x1b[2J the screen\n"));
  EXPECT_THAT(table, HasSubstr("two\\nlines"));
  EXPECT_THAT(table, HasSubstr("FAILED step 1 (a\\tb): x\\ny\n"));
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 4) << table;
}

TEST(FormatTimelineTest, AlignsColumnsOnTheTextShown) {
  SimulationResult result;
  for (const std::string name : {"\xc3\x9c"
                                 "berpr\xc3\xbc"
                                 "fung",
                                 "esc\x1b", "plain"}) {
    result.timeline.emplace_back();
    result.timeline.back().step_name = name;
    result.timeline.back().policy.set_version(7);
  }
  const std::vector<std::string> lines =
      absl::StrSplit(FormatTimeline(result), '\n', absl::SkipEmpty());
  ASSERT_THAT(lines, SizeIs(4));
  // The slot column starts at the same character (not byte) on every line.
  auto slot_column = [](const std::string& line) {
    const size_t at = line.find("  0  ");
    return at == std::string::npos ? -1 : CharactersBefore(line, at);
  };
  const int expected = slot_column(lines[1]);
  ASSERT_GT(expected, 0) << lines[1];
  for (size_t i = 2; i < lines.size(); ++i) EXPECT_EQ(slot_column(lines[i]), expected) << lines[i];
}

// The JSON output, parsed back as a script would, against the schema it follows.
v1::SimulationReport ParseJson(const std::string& json) {
  v1::SimulationReport parsed;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
  return parsed;
}

TEST(TimelineToJsonTest, ParsesBackWithEveryField) {
  absl::StatusOr<SimulationResult> result =
      Simulate(GloasConfig(), ParseScenario(R"pb(
                 description: "quotes \" backslash \\ newline \n tab \t unicode é"
                 start_slot: 320000
                 step {
                   name: "builder \"5\" fails"
                   observe {
                     node: "bn-1"
                     observation {
                       payload_missing { builder_index: 5 block_root: "r1" attested_fraction: 0.9 }
                     }
                   }
                   expect { mode: MODE_SELF_BUILD }
                 }
               )pb"));
  ASSERT_THAT(result, IsOk());
  const std::string json = TimelineToJson(*result);
  const v1::SimulationReport parsed = ParseJson(json);
  EXPECT_EQ(parsed.description(), "quotes \" backslash \\ newline \n tab \t unicode é");

  ASSERT_EQ(parsed.timeline_size(), 2);
  const v1::SimulationReport::Entry& start = parsed.timeline(0);
  EXPECT_EQ(start.step(), 0);
  EXPECT_EQ(start.step_name(), "start");
  EXPECT_EQ(start.slot(), 320000u);
  EXPECT_EQ(start.epoch(), 10000u);
  const v1::SimulationReport::Entry& entry = parsed.timeline(1);
  EXPECT_EQ(entry.step(), 1);
  EXPECT_EQ(entry.step_name(), "builder \"5\" fails");
  EXPECT_EQ(entry.policy().version(), 2u);
  EXPECT_EQ(entry.policy().mode(), v1::MODE_ALL_BUILDERS);
  EXPECT_THAT(BannedBuilders(entry.policy()), ElementsAre(5));
  // 64-bit numbers are strings, as proto JSON has them; defaults are printed too.
  EXPECT_THAT(json, HasSubstr("\"slot\":\"320000\""));
  EXPECT_THAT(json, HasSubstr("\"trustedBuilders\":[]"));

  ASSERT_EQ(parsed.failures_size(), 1);
  EXPECT_EQ(parsed.failures(0).step(), 1);
  EXPECT_EQ(parsed.failures(0).step_name(), "builder \"5\" fails");
  EXPECT_EQ(parsed.failures(0).message(), "mode: expected MODE_SELF_BUILD, got MODE_ALL_BUILDERS");
}

TEST(TimelineToJsonTest, AnEmptyResultIsStillAnObject) {
  const std::string json = TimelineToJson(SimulationResult());
  EXPECT_EQ(json, "{\"description\":\"\",\"timeline\":[],\"failures\":[]}\n");
}

TEST(TimelineToJsonTest, TextThatIsNotUtf8KeepsItsPlace) {
  // The text format lets any bytes into a name; each invalid one becomes U+FFFD.
  SimulationResult result;
  result.description = "caf\xe9 \xe2\x82\xac";  // Latin-1 "café", then a valid euro sign.
  result.failures.push_back(
      ExpectationFailure{1, std::string("bad \xff\xc0\xaf \xed\xa0\x80 \xf0\x9f\x98"), "m"});
  const v1::SimulationReport parsed = ParseJson(TimelineToJson(result));
  EXPECT_EQ(parsed.description(), "caf\uFFFD \u20AC");
  ASSERT_EQ(parsed.failures_size(), 1);
  // An invalid byte, an overlong '/', a surrogate, a truncated sequence.
  EXPECT_EQ(parsed.failures(0).step_name(),
            "bad \uFFFD\uFFFD\uFFFD \uFFFD\uFFFD\uFFFD \uFFFD\uFFFD\uFFFD");
}

TEST(TimelineToJsonTest, IsTheSameForTheSameResult) {
  absl::StatusOr<SimulationResult> result =
      Simulate(GloasConfig(), ParseScenario(kBuilderFailsThenBanLifts));
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(TimelineToJson(*result), TimelineToJson(*result));
}

// --- Scenario files ---

std::string WriteTempFile(const std::string& name, const std::string& contents) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream file(path, std::ios::trunc);
  file << contents;
  return path;
}

TEST(LoadScenarioFileTest, LoadsAFile) {
  const std::string path = WriteTempFile("good.scenario.textproto", kBuilderFailsThenBanLifts);
  absl::StatusOr<v1::Scenario> scenario = LoadScenarioFile(path);
  ASSERT_THAT(scenario, IsOk());
  EXPECT_EQ(scenario->start_slot(), 320000u);
  EXPECT_EQ(scenario->step_size(), 4);
}

TEST(LoadScenarioFileTest, AMissingFileIsNotFound) {
  const std::string path = ::testing::TempDir() + "/no-such.scenario.textproto";
  EXPECT_THAT(LoadScenarioFile(path),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr(absl::StrCat("scenario file '", path, "' does not exist"))));
}

TEST(LoadScenarioFileTest, ASyntaxErrorGivesLineAndColumn) {
  const std::string path =
      WriteTempFile("bad.scenario.textproto", "start_slot: 1\nstep {\n  nmae: \"typo\"\n}\n");
  EXPECT_THAT(LoadScenarioFile(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                               AllOf(StartsWith(path + ":3:"), HasSubstr("nmae"))));
}

// Every `--config=...` in the scenario file's comments: the commands its header says to run.
std::vector<std::string> ConfigsNamedIn(const std::string& text) {
  std::vector<std::string> configs;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "#")) continue;
    for (absl::string_view word : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      if (absl::ConsumePrefix(&word, "--config=")) configs.emplace_back(word);
    }
  }
  return configs;
}

std::vector<std::string> FilesEndingWith(absl::string_view suffix) {
  std::vector<std::string> paths;
  for (const auto& file : std::filesystem::directory_iterator(kScenarioDir)) {
    const std::string path = absl::StrCat(kScenarioDir, "/", file.path().filename().string());
    if (absl::EndsWith(path, suffix)) paths.push_back(path);
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

TEST(ShippedScenariosTest, EachHoldsUnderEveryConfigurationItsHeaderNames) {
  const std::vector<std::string> scenarios = FilesEndingWith(".scenario.textproto");
  // One per seed scenario of the reference semantics, the mixed fleet, and one per client
  // preset.
  EXPECT_GE(scenarios.size(), 9u);
  std::set<std::string> used_configs;
  for (const std::string& path : scenarios) {
    SCOPED_TRACE(path);
    absl::StatusOr<std::string> text = codec::ReadTextFile(path, "scenario file");
    ASSERT_THAT(text, IsOk());
    EXPECT_THAT(*text, HasSubstr(absl::StrCat("--scenario=", path)))
        << "the header's command runs another file";
    EXPECT_THAT(*text, HasSubstr("bazel run //ctl:breakerctl -- simulate"));
    const std::vector<std::string> configs = ConfigsNamedIn(*text);
    ASSERT_THAT(configs, ::testing::Not(IsEmpty())) << "the header names no --config";

    absl::StatusOr<v1::Scenario> scenario = LoadScenarioFile(path);
    ASSERT_THAT(scenario, IsOk());
    EXPECT_FALSE(scenario->description().empty());
    for (const std::string& config_path : configs) {
      SCOPED_TRACE(config_path);
      used_configs.insert(config_path);
      absl::StatusOr<core::Config> config = codec::LoadConfigFile(config_path);
      ASSERT_THAT(config, IsOk());
      absl::StatusOr<SimulationResult> result = Simulate(*config, *scenario);
      ASSERT_THAT(result, IsOk());
      EXPECT_THAT(result->failures, IsEmpty()) << FormatTimeline(*result);
    }
  }
  // A configuration no scenario runs under is dead weight, or a scenario lost its command.
  for (const std::string& path : FilesEndingWith(".config.textproto")) {
    EXPECT_EQ(used_configs.count(path), 1u) << path << " is not used by any scenario";
  }
}

TEST(ShippedScenariosTest, AClientBugInGloasChangesNothing) {
  // Seed 2 says more than its expectations can: not a single new policy version.
  absl::StatusOr<core::Config> config =
      codec::LoadConfigFile("examples/scenarios/gloas.config.textproto");
  ASSERT_THAT(config, IsOk());
  absl::StatusOr<v1::Scenario> scenario =
      LoadScenarioFile("examples/scenarios/02_client_bug.scenario.textproto");
  ASSERT_THAT(scenario, IsOk());
  absl::StatusOr<SimulationResult> result = Simulate(*config, *scenario);
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(result->timeline, SizeIs(1)) << FormatTimeline(*result);
}

}  // namespace
}  // namespace breaker::ctl
