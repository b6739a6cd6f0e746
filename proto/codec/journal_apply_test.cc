#include "proto/codec/journal_apply.h"

#include <string>
#include <vector>

#include "core/config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/codec/api_codec.h"
#include "proto/codec/config_file.h"
#include "tests/support/status_matchers.h"

namespace breaker::codec {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr core::Slot kStart = 32 * 10;

state::v1::JournalEntry Missing(const std::string& node, uint64_t sequence, uint64_t builder,
                                char root) {
  state::v1::JournalEntry entry;
  state::v1::NodeObservations* batch = entry.mutable_observations();
  batch->set_node_id(node);
  v1::Observation* observation = batch->add_observations();
  observation->set_slot(kStart);
  observation->set_sequence(sequence);
  observation->mutable_payload_missing()->set_builder_index(builder);
  observation->mutable_payload_missing()->set_block_root(std::string(32, root));
  observation->mutable_payload_missing()->set_attested_fraction(0.9);
  return entry;
}

state::v1::JournalEntry AdvanceTo(core::Slot slot) {
  state::v1::JournalEntry entry;
  entry.set_advance_to_slot(slot);
  return entry;
}

class ApplyJournalEntryTest : public ::testing::Test {
 protected:
  core::Engine engine_ = core::Engine::Create(core::Config{}, kStart).value();
};

TEST_F(ApplyJournalEntryTest, ObservationsSayWhatEachDid) {
  state::v1::JournalEntry entry = Missing("n1", 1, 5, 'a');
  // A second observation the codec refuses: a block root of 3 bytes.
  v1::Observation* bad = entry.mutable_observations()->add_observations();
  *bad = entry.observations().observations(0);
  bad->set_sequence(2);
  bad->mutable_payload_missing()->set_block_root("abc");

  const AppliedEntry applied = ApplyJournalEntry(entry, engine_);
  EXPECT_THAT(applied.status, IsOk());
  ASSERT_THAT(applied.observations, SizeIs(2));
  EXPECT_THAT(applied.observations[0].status, IsOk());
  EXPECT_EQ(applied.observations[0].observed.outcome, core::ObserveOutcome::kApplied);
  EXPECT_EQ(applied.observations[0].observed.recorded, core::RecordedFailure::kBuilder);
  EXPECT_THAT(applied.observations[1].status, StatusIs(absl::StatusCode::kInvalidArgument));
  // The refused observation's number is used up all the same.
  EXPECT_EQ(engine_.node_sequences().at("n1"), 2u);
  EXPECT_TRUE(applied.policy_changed);
  EXPECT_EQ(engine_.policy().version, applied.previous_version + 1);
  EXPECT_TRUE(engine_.policy().banned_builders.contains(5));

  // The same entry again is a replay: nothing recorded, no new version.
  const AppliedEntry replayed = ApplyJournalEntry(Missing("n1", 1, 5, 'a'), engine_);
  ASSERT_THAT(replayed.observations, SizeIs(1));
  EXPECT_EQ(replayed.observations[0].observed.outcome, core::ObserveOutcome::kDuplicate);
  EXPECT_EQ(replayed.observations[0].observed.recorded, core::RecordedFailure::kNone);
  EXPECT_FALSE(replayed.policy_changed);
}

TEST(RefusedForContentTest, NamesWhatEveryEngineRefusesAndNothingElse) {
  v1::ObservationBatch batch;
  auto bid = [&batch](uint64_t sequence, const std::string& relay, const std::string& key) {
    v1::Observation* observation = batch.add_observations();
    observation->set_sequence(sequence);
    observation->set_slot(kStart);
    observation->mutable_bid_seen()->set_builder_index(7);
    observation->mutable_bid_seen()->set_relay(relay);
    observation->mutable_bid_seen()->set_builder_pubkey(key);
  };
  bid(1, "relay.example", std::string(48, 'k'));
  bid(2, "relay.example", std::string(49, 'k'));  // a key of 49 bytes
  bid(3, "relay example", "");                    // a relay that does not normalize
  bid(4, "relay.example", "");
  v1::Observation* future = batch.add_observations();  // refused for the state, not its content
  *future = batch.observations(0);
  future->set_sequence(5);
  future->set_slot(kStart + 1000);
  v1::Observation* self_build = batch.add_observations();
  *self_build = Missing("n1", 6, core::kSelfBuild, 'a').observations().observations(0);

  const ReceivedBatch received = ReceivedBatch::Of(batch);
  const std::vector<ContentRefusal> refused = RefusedForContent(received, "n1");
  ASSERT_THAT(refused, SizeIs(3));
  EXPECT_EQ(refused[0].index, 1);
  EXPECT_THAT(refused[0].status,
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bid_seen.builder_pubkey")));
  EXPECT_EQ(refused[1].sequence, 3u);
  EXPECT_EQ(refused[2].event, v1::Observation::kPayloadMissing);
  EXPECT_THAT(refused[2].status,
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("payload_missing.builder")));

  // Each of them is refused by an engine too, with the same words.
  core::Engine engine = core::Engine::Create(core::Config{}, kStart).value();
  state::v1::JournalEntry entry;
  entry.mutable_observations()->set_node_id("n1");
  *entry.mutable_observations()->mutable_observations() = batch.observations();
  const AppliedEntry applied = ApplyJournalEntry(entry, engine);
  for (const ContentRefusal& refusal : refused) {
    EXPECT_EQ(applied.observations[refusal.index].status, refusal.status);
  }
  EXPECT_THAT(applied.observations[4].status, StatusIs(absl::StatusCode::kOutOfRange));
}

TEST(RefusedForContentTest, ReadsBidsInPlaceAlike) {
  v1::ObservationBatch batch;
  for (uint64_t sequence : {1, 2}) {
    v1::Observation* observation = batch.add_observations();
    observation->set_sequence(sequence);
    observation->set_slot(kStart);
    observation->mutable_bid_seen()->set_builder_index(sequence == 2 ? core::kSelfBuild : 7);
    observation->mutable_bid_seen()->set_relay("relay.example");
  }
  const ReceivedBatch received = ReceivedBatch::Parse(batch.SerializeAsString()).value();
  ASSERT_TRUE(received.read_in_place());
  const std::vector<ContentRefusal> refused = RefusedForContent(received, "n1");
  ASSERT_THAT(refused, SizeIs(1));
  EXPECT_EQ(refused[0].sequence, 2u);
  EXPECT_EQ(refused[0].event, v1::Observation::kBidSeen);
  EXPECT_THAT(refused[0].status,
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bid_seen.builder")));
}

// `entry`'s observations moved into its batch bytes, as breakerd journals them.
state::v1::JournalEntry AsReceived(state::v1::JournalEntry entry) {
  v1::ObservationBatch batch;
  batch.mutable_observations()->Swap(entry.mutable_observations()->mutable_observations());
  entry.mutable_observations()->set_batch(batch.SerializeAsString());
  return entry;
}

TEST_F(ApplyJournalEntryTest, ABatchAsReceivedAppliesAfterTheEarlierForm) {
  state::v1::JournalEntry entry = AsReceived(Missing("n1", 2, 5, 'a'));
  // An entry with both forms applies the earlier form first.
  *entry.mutable_observations()->add_observations() =
      Missing("n1", 1, 6, 'b').observations().observations(0);
  const AppliedEntry applied = ApplyJournalEntry(entry, engine_);
  EXPECT_THAT(applied.status, IsOk());
  ASSERT_THAT(applied.observations, SizeIs(2));
  EXPECT_EQ(applied.observations[0].sequence, 1u);
  EXPECT_EQ(applied.observations[1].sequence, 2u);
  EXPECT_EQ(applied.observations[1].event, v1::Observation::kPayloadMissing);
  EXPECT_EQ(applied.observations[1].observed.outcome, core::ObserveOutcome::kApplied);
  EXPECT_EQ(engine_.node_sequences().at("n1"), 2u);
}

TEST_F(ApplyJournalEntryTest, ABatchReadByTheCallerStandsForTheBytes) {
  state::v1::JournalEntry entry = Missing("n1", 1, 5, 'a');
  v1::ObservationBatch batch;
  batch.mutable_observations()->Swap(entry.mutable_observations()->mutable_observations());
  entry.mutable_observations()->set_batch("not read");
  const ReceivedBatch received = ReceivedBatch::Of(batch);
  const AppliedEntry applied = ApplyJournalEntry(entry, engine_, &received);
  EXPECT_THAT(applied.status, IsOk());
  ASSERT_THAT(applied.observations, SizeIs(1));
  EXPECT_TRUE(engine_.policy().banned_builders.contains(5));
}

TEST_F(ApplyJournalEntryTest, BidsReadInPlaceApplyAsParsedOnes) {
  v1::ObservationBatch batch;
  auto add_bid = [&batch](uint64_t sequence, uint64_t builder, const std::string& relay,
                          const std::string& pubkey) {
    v1::Observation* observation = batch.add_observations();
    observation->set_sequence(sequence);
    observation->set_slot(kStart);
    observation->mutable_bid_seen()->set_builder_index(builder);
    observation->mutable_bid_seen()->set_relay(relay);
    observation->mutable_bid_seen()->set_builder_pubkey(pubkey);
  };
  add_bid(1, 4, "https://relay.example:443", std::string(48, 'k'));
  add_bid(2, 5, "", std::string(48, 'p'));
  add_bid(3, 6, "relay.example", std::string(47, 'k'));      // refused: not a key
  add_bid(2, 5, "", std::string(48, 'p'));                   // a replay
  add_bid(4, 4, "other.example:443", std::string(48, 'q'));  // index 4's key changed
  state::v1::JournalEntry entry;
  entry.mutable_observations()->set_node_id("n1");

  absl::StatusOr<ReceivedBatch> in_place = ReceivedBatch::Parse(batch.SerializeAsString());
  ASSERT_THAT(in_place, IsOk());
  ASSERT_TRUE(in_place->read_in_place());
  const ReceivedBatch parsed = ReceivedBatch::Of(batch);
  ASSERT_FALSE(parsed.read_in_place());
  core::Engine other = core::Engine::Create(core::Config{}, kStart).value();
  const AppliedEntry a = ApplyJournalEntry(entry, engine_, &*in_place);
  const AppliedEntry b = ApplyJournalEntry(entry, other, &parsed);

  ASSERT_THAT(a.observations, SizeIs(5));
  ASSERT_THAT(b.observations, SizeIs(5));
  for (size_t i = 0; i < a.observations.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(a.observations[i].status, b.observations[i].status);
    EXPECT_EQ(a.observations[i].sequence, b.observations[i].sequence);
    EXPECT_EQ(a.observations[i].event, v1::Observation::kBidSeen);
    EXPECT_EQ(b.observations[i].event, v1::Observation::kBidSeen);
    EXPECT_EQ(a.observations[i].observed.outcome, b.observations[i].observed.outcome);
  }
  EXPECT_THAT(a.observations[2].status,
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bid_seen.builder_pubkey")));
  EXPECT_EQ(a.observations[3].observed.outcome, core::ObserveOutcome::kDuplicate);
  EXPECT_EQ(PolicyToProto(engine_.policy()).SerializeAsString(),
            PolicyToProto(other.policy()).SerializeAsString());
  EXPECT_EQ(engine_.node_sequences(), other.node_sequences());
}

TEST_F(ApplyJournalEntryTest, ABatchThatDoesNotParseAppliesNothing) {
  state::v1::JournalEntry entry = Missing("n1", 1, 5, 'a');
  entry.mutable_observations()->set_batch(std::string("\x0a\x05\x08", 3));
  const AppliedEntry applied = ApplyJournalEntry(entry, engine_);
  EXPECT_THAT(applied.status, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("n1")));
  EXPECT_THAT(applied.observations, SizeIs(0));
  EXPECT_FALSE(engine_.node_sequences().contains("n1"));
}

TEST_F(ApplyJournalEntryTest, AdvanceRefreshesThePolicy) {
  ASSERT_TRUE(ApplyJournalEntry(Missing("n1", 1, 5, 'a'), engine_).policy_changed);
  const core::Epoch lifted = engine_.policy().banned_builders.at(5).until_epoch;
  const AppliedEntry early = ApplyJournalEntry(AdvanceTo(kStart + 1), engine_);
  EXPECT_FALSE(early.policy_changed);
  const AppliedEntry late = ApplyJournalEntry(AdvanceTo(lifted * 32), engine_);
  EXPECT_THAT(late.status, IsOk());
  EXPECT_TRUE(late.policy_changed);
  EXPECT_FALSE(engine_.policy().banned_builders.contains(5));
  EXPECT_EQ(engine_.current_slot(), lifted * 32);
}

TEST_F(ApplyJournalEntryTest, AdminActionsAndTheirRefusals) {
  state::v1::JournalEntry ban;
  ban.mutable_admin()->mutable_ban()->set_builder_index(7);
  ban.mutable_admin()->mutable_ban()->set_reason("manual");
  const AppliedEntry banned = ApplyJournalEntry(ban, engine_);
  EXPECT_THAT(banned.status, IsOk());
  EXPECT_TRUE(banned.policy_changed);
  EXPECT_TRUE(engine_.policy().banned_builders.contains(7));

  state::v1::JournalEntry unban;
  unban.mutable_admin()->mutable_unban()->set_builder_index(8);
  const AppliedEntry refused = ApplyJournalEntry(unban, engine_);
  EXPECT_THAT(refused.status, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_FALSE(refused.policy_changed);
}

TEST_F(ApplyJournalEntryTest, ReconfigureSaysWhetherTheConfigurationChanged) {
  state::v1::JournalEntry same;
  *same.mutable_reconfigure() = ConfigToProto(engine_.config());
  const AppliedEntry unchanged = ApplyJournalEntry(same, engine_);
  EXPECT_THAT(unchanged.status, IsOk());
  EXPECT_FALSE(unchanged.config_changed);

  core::Config trusting = engine_.config();
  trusting.trusted_builders = {5};
  state::v1::JournalEntry other;
  *other.mutable_reconfigure() = ConfigToProto(trusting);
  const AppliedEntry changed = ApplyJournalEntry(other, engine_);
  EXPECT_THAT(changed.status, IsOk());
  EXPECT_TRUE(changed.config_changed);
  EXPECT_THAT(engine_.config().trusted_builders, ::testing::ElementsAre(5));

  state::v1::JournalEntry invalid = other;
  invalid.mutable_reconfigure()->set_attestation_threshold(2);
  const AppliedEntry refused = ApplyJournalEntry(invalid, engine_);
  EXPECT_THAT(refused.status, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_FALSE(refused.config_changed);
  EXPECT_THAT(engine_.config().trusted_builders, ::testing::ElementsAre(5));
}

TEST_F(ApplyJournalEntryTest, FleetIdRenewalIsOnlyChecked) {
  state::v1::JournalEntry renewal;
  renewal.mutable_renew_fleet_id()->set_node_id("n1");
  EXPECT_THAT(ApplyJournalEntry(renewal, engine_).status,
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("without a fleet id")));
  renewal.mutable_renew_fleet_id()->set_fleet_id("f");
  const AppliedEntry applied = ApplyJournalEntry(renewal, engine_);
  EXPECT_THAT(applied.status, IsOk());
  EXPECT_FALSE(applied.policy_changed);
}

TEST_F(ApplyJournalEntryTest, AnEntryWithoutAChangeDoesNothing) {
  const AppliedEntry applied = ApplyJournalEntry(state::v1::JournalEntry(), engine_);
  EXPECT_THAT(applied.status, IsOk());
  EXPECT_TRUE(applied.observations.empty());
  EXPECT_FALSE(applied.policy_changed);
}

}  // namespace
}  // namespace breaker::codec
