#include "proto/codec/snapshot_codec.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/codec/api_codec.h"
#include "proto/codec/codec_test_util.h"
#include "tests/support/status_matchers.h"

namespace breaker::codec {
namespace {

namespace v1 = ::breaker::v1;

// --- Engine snapshots ------------------------------------------------------------------------

// A builder's 48-byte public key, all `c`.
std::string Key(char c) { return std::string(48, c); }

constexpr core::Slot kSlot = 320;  // Epoch 10.

core::Config GloasConfig() {
  core::Config config;
  config.chain.gloas_fork_epoch = 0;
  config.min_reporting_nodes = 2;
  config.relays = {core::RelayConfig{"http://configured.example", false, {20, 21}}};
  return config;
}

class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<core::Engine> engine = core::Engine::Create(config_, 0);
    ASSERT_THAT(engine, IsOk());
    engine_.emplace(*std::move(engine));
    engine_->Advance(kSlot);
  }

  // Observes `proto` from `node` through the codec, numbering it as the node would.
  void Observe(const std::string& node, v1::Observation proto) {
    proto.set_sequence(++sequences_[node]);
    absl::StatusOr<core::Observation> observation = ObservationFromProto(proto, node);
    ASSERT_THAT(observation, IsOk());
    ASSERT_THAT(engine_->Observe(*observation), IsOk());
  }

  void Bid(core::BuilderIndex builder, const std::string& relay, core::Slot slot,
           const std::string& pubkey) {
    v1::Observation proto = Numbered(0, slot);
    proto.mutable_bid_seen()->set_builder_index(builder);
    proto.mutable_bid_seen()->set_relay(relay);
    // A key is 48 bytes: the name, padded.
    if (!pubkey.empty()) {
      proto.mutable_bid_seen()->set_builder_pubkey(pubkey + std::string(48 - pubkey.size(), '.'));
    }
    Observe("bn-1", proto);
  }

  void Fail(const std::string& node, core::BuilderIndex builder, core::Slot slot, uint8_t root) {
    v1::Observation proto = Numbered(0, slot);
    proto.mutable_payload_missing()->set_builder_index(builder);
    proto.mutable_payload_missing()->set_block_root(RootBytes(root));
    proto.mutable_payload_missing()->set_attested_fraction(0.9);
    Observe(node, proto);
  }

  // Drives the engine into a state where every part of EngineState is populated.
  void Populate() {
    Bid(1, "http://relay-a.example", kSlot, Key('1'));
    Bid(2, "http://relay-a.example", kSlot, Key('2'));
    Bid(3, "https://relay-b.example", kSlot, Key('3'));
    Bid(4, "", kSlot, "");
    // Builder 1 fails, reported by two nodes: counted, and relay-a's members are collateral.
    Fail("bn-1", 1, kSlot + 1, 1);
    Fail("bn-2", 1, kSlot + 1, 1);
    // Builder 3 fails, seen by one node only: a pending vote.
    Fail("bn-1", 3, kSlot + 2, 2);
    // Builder 2 delivers.
    v1::Observation delivered = Numbered(0, kSlot + 2);
    delivered.mutable_payload_delivered()->set_builder_index(2);
    delivered.mutable_payload_delivered()->set_block_root(RootBytes(3));
    Observe("bn-3", delivered);
    v1::Observation seen = Numbered(0, kSlot + 1);
    seen.mutable_blocks_seen()->add_block_roots(RootBytes(1));
    Observe("bn-2", seen);
    // A node without a block for kSlot: observed, not present.
    v1::Observation none = Numbered(0, kSlot);
    none.mutable_blocks_seen();
    Observe("bn-1", none);
    v1::Observation finalized = Numbered(0, kSlot + 2);
    finalized.mutable_finalized()->set_epoch(8);
    Observe("bn-2", finalized);
    engine_->Advance(kSlot + 2);

    ASSERT_THAT(engine_->BanBuilder(9, "withheld on a testnet", std::nullopt), IsOk());
    ASSERT_THAT(engine_->BanBuilder(10, "investigating", 20), IsOk());
    ASSERT_THAT(engine_->BanRelay("HTTP://Relay-C.example/", "stolen keys", std::nullopt), IsOk());
    ASSERT_THAT(engine_->BanRelay("https://relay-b.example", "investigating", 20), IsOk());
    ASSERT_THAT(engine_->SetRelayTrust("HTTPS://Relay-B.example", true), IsOk());
    ASSERT_THAT(engine_->SetRelayTrust("http://configured.example", false), IsOk());
    ASSERT_THAT(engine_->SetBuilderTrust(4, true), IsOk());
    ASSERT_THAT(engine_->SetBuilderTrust(5, false), IsOk());
    engine_->RefreshPolicy();
  }

  core::Config config_ = GloasConfig();
  std::optional<core::Engine> engine_;
  absl::flat_hash_map<std::string, uint64_t> sequences_;
};

TEST_F(SnapshotTest, PopulatedEngineHasEveryPart) {
  Populate();
  const core::EngineState state = engine_->Export();
  // Guards the round-trip test below against testing an empty state.
  EXPECT_TRUE(state.policy.banned_builders.contains(1));
  EXPECT_TRUE(state.policy.banned_builders.contains(2));  // Collateral of relay-a.
  EXPECT_TRUE(state.policy.banned_builders.contains(9));
  EXPECT_TRUE(state.policy.banned_relays.contains("http://relay-a.example"));
  EXPECT_TRUE(state.policy.trusted_relays.contains("https://relay-b.example"));
  EXPECT_TRUE(state.builders.contains(1));
  // Builder 2's record is gone (delivered), its key stays.
  EXPECT_EQ(state.builder_keys.size(), 3u);
  EXPECT_EQ(state.builder_keys.at(2).pubkey, Key('2'));
  EXPECT_EQ(state.relays.at("http://relay-a.example").learned.size(), 2u);
  EXPECT_GE(state.votes.size(), 2u);
  EXPECT_EQ(state.node_sequences.size(), 3u);
  EXPECT_EQ(state.operator_bans.size(), 2u);
  EXPECT_EQ(state.operator_relay_bans.size(), 2u);
  // Builder 3 is a member of relay-b, which the operator banned.
  EXPECT_EQ(state.policy.banned_builders.at(3).kind, core::BanKind::kOperator);
  EXPECT_EQ(state.builder_trust_overrides.size(), 2u);
  EXPECT_EQ(state.relay_trust_overrides.size(), 2u);
  EXPECT_FALSE(state.missed_slots.present_slots.empty());
  EXPECT_GT(state.missed_slots.observed_slots.size(), state.missed_slots.present_slots.size());
  EXPECT_TRUE(state.missed_slots.has_finalized);
}

TEST_F(SnapshotTest, ImportOfDecodedSnapshotBehavesTheSame) {
  Populate();
  const core::EngineState state = engine_->Export();
  const state::v1::EngineSnapshot snapshot = SnapshotToProto(state);
  EXPECT_FALSE(snapshot.has_config());
  EXPECT_EQ(snapshot.journal_sequence(), 0u);

  absl::StatusOr<core::EngineState> decoded = SnapshotFromProto(ThroughBytes(snapshot));
  ASSERT_THAT(decoded, IsOk());
  absl::StatusOr<core::Engine> copy = core::Engine::Import(config_, *std::move(decoded));
  ASSERT_THAT(copy, IsOk());

  EXPECT_EQ(copy->policy().version, engine_->policy().version);
  EXPECT_TRUE(copy->policy().SameDecisions(engine_->policy()));
  ExpectSamePolicy(copy->policy(), engine_->policy());
  EXPECT_FALSE(copy->RefreshPolicy());
  EXPECT_EQ(DeterministicBytes(SnapshotToProto(copy->Export())), DeterministicBytes(snapshot));

  // The same next steps give the same policies: builder 3's second report counts in both.
  for (core::Engine* engine : {&*engine_, &*copy}) {
    core::Observation second{kSlot + 2, "bn-2", sequences_["bn-2"] + 1,
                             core::PayloadMissing{3, Root(2), 0.9}};
    ASSERT_THAT(engine->Observe(second), IsOk());
    engine->Advance(kSlot + 3);
  }
  EXPECT_TRUE(copy->policy().banned_builders.contains(3));
  EXPECT_EQ(copy->policy().version, engine_->policy().version);
  EXPECT_TRUE(copy->policy().SameDecisions(engine_->policy()));
  EXPECT_EQ(DeterministicBytes(SnapshotToProto(copy->Export())),
            DeterministicBytes(SnapshotToProto(engine_->Export())));
}

TEST_F(SnapshotTest, KeepsOperatorBanEndsAndTrackerPresence) {
  Populate();
  const state::v1::EngineSnapshot snapshot = SnapshotToProto(engine_->Export());
  ASSERT_EQ(snapshot.operator_bans_size(), 2);
  EXPECT_FALSE(snapshot.operator_bans(0).has_until_epoch());
  EXPECT_TRUE(snapshot.operator_bans(1).has_until_epoch());
  EXPECT_EQ(snapshot.operator_bans(1).until_epoch(), 20u);

  absl::StatusOr<core::EngineState> decoded = SnapshotFromProto(snapshot);
  ASSERT_THAT(decoded, IsOk());
  EXPECT_EQ(decoded->operator_bans.at(9).until_epoch, std::nullopt);
  EXPECT_EQ(decoded->operator_bans.at(10).until_epoch, std::optional<core::Epoch>(20));
  ASSERT_EQ(snapshot.operator_relay_bans_size(), 2);
  EXPECT_EQ(snapshot.operator_relay_bans(0).relay(), "http://relay-c.example");
  EXPECT_FALSE(snapshot.operator_relay_bans(0).has_until_epoch());
  EXPECT_EQ(snapshot.operator_relay_bans(1).relay(), "https://relay-b.example");
  EXPECT_EQ(snapshot.operator_relay_bans(1).until_epoch(), 20u);
  EXPECT_EQ(decoded->operator_relay_bans.at("http://relay-c.example").reason, "stolen keys");
  EXPECT_EQ(decoded->operator_relay_bans.at("https://relay-b.example").until_epoch,
            std::optional<core::Epoch>(20));
  EXPECT_THAT(decoded->missed_slots.present_slots, ElementsAre(kSlot + 1));
  EXPECT_THAT(decoded->missed_slots.observed_slots, ElementsAre(kSlot, kSlot + 1));
  EXPECT_EQ(decoded->missed_slots.finalized_epoch, 8u);

  state::v1::EngineSnapshot without = snapshot;
  without.mutable_missed_slots()->clear_observed_slots();
  without.mutable_missed_slots()->clear_finalized_epoch();
  decoded = SnapshotFromProto(without);
  ASSERT_THAT(decoded, IsOk());
  EXPECT_THAT(decoded->missed_slots.present_slots, ElementsAre(kSlot + 1));
  EXPECT_TRUE(decoded->missed_slots.observed_slots.empty());
  EXPECT_FALSE(decoded->missed_slots.has_finalized);
}

TEST_F(SnapshotTest, ListsAreSorted) {
  Populate();
  const state::v1::EngineSnapshot snapshot = SnapshotToProto(engine_->Export());

  std::vector<uint64_t> builders = Indices(snapshot.builders());
  EXPECT_TRUE(std::is_sorted(builders.begin(), builders.end()));
  std::vector<std::string> relays;
  for (const auto& relay : snapshot.relays()) {
    relays.push_back(relay.relay());
    std::vector<uint64_t> members = Indices(relay.learned_members());
    EXPECT_TRUE(std::is_sorted(members.begin(), members.end()));
  }
  EXPECT_TRUE(std::is_sorted(relays.begin(), relays.end()));
  std::vector<std::string> roots;
  for (const auto& vote : snapshot.votes()) roots.push_back(vote.block_root());
  // std::string compares its chars as unsigned: bytewise, like the codec.
  EXPECT_TRUE(std::is_sorted(roots.begin(), roots.end()));
  std::vector<std::string> nodes;
  for (const auto& node : snapshot.node_sequences()) nodes.push_back(node.node_id());
  EXPECT_THAT(nodes, ElementsAre("bn-1", "bn-2", "bn-3"));
  EXPECT_THAT(Indices(snapshot.operator_bans()), ElementsAre(9, 10));
  EXPECT_THAT(Indices(snapshot.builder_trust_overrides()), ElementsAre(4, 5));
  EXPECT_THAT(Indices(snapshot.builder_keys()), ElementsAre(1, 2, 3));
  ASSERT_EQ(snapshot.relay_trust_overrides_size(), 2);
  EXPECT_EQ(snapshot.relay_trust_overrides(0).relay(), "http://configured.example");
  EXPECT_EQ(snapshot.relay_trust_overrides(1).relay(), "https://relay-b.example");
}

// Builds a state whose maps hold `n` entries each, inserted in ascending or descending order.
core::EngineState StateWithEntries(int n, bool descending) {
  core::EngineState state;
  state.current_slot = 1000;
  state.policy.mode = core::Mode::kAllBuilders;
  if (descending) state.builders.reserve(4 * n);  // Another capacity: another iteration order.
  for (int j = 0; j < n; ++j) {
    const int i = descending ? n - 1 - j : j;
    core::BuilderRecord& builder = state.builders[i];
    state.builder_keys[i] = core::BuilderKey{std::string(48, static_cast<char>('a' + i % 26)),
                                             static_cast<core::Epoch>(20 + i)};
    builder.failures = core::FailureRecord{
        static_cast<uint32_t>(i),   10u + i, i % 2 == 1, 7, static_cast<core::Epoch>(i),
        absl::StrCat("failure ", i)};
    core::RelayRecord& relay = state.relays[absl::StrCat("http://r", i)];
    relay.learned[i] = i;
    relay.learned[i + 100] = i + 1;
    relay.failures.failed = 1;
    relay.failures.last_failure = "reveal";
    relay.last_seen_epoch = 11;
    core::RootVote& vote = state.votes[Root(static_cast<uint8_t>(i))];
    vote.slot = i;
    vote.builder = i % 3 == 0 ? core::kSelfBuild : i;
    vote.relay = i % 3 == 0 ? "http://r0" : "";
    vote.reporters = {"n2", "n1"};
    vote.applied = i % 2 == 0;
    vote.delivered = i % 5 == 0;
    state.node_sequences[absl::StrCat("n", i)] = i + 1;
    state.operator_bans[i].reason = "r";
    if (i % 2 == 0) state.operator_bans[i].until_epoch = 30 + i;
    state.operator_relay_bans[absl::StrCat("http://o", i)].reason = "o";
    if (i % 3 == 0) state.operator_relay_bans[absl::StrCat("http://o", i)].until_epoch = 40 + i;
    state.builder_trust_overrides[i] = i % 2 == 0;
    state.relay_trust_overrides[absl::StrCat("http://t", i)] = true;
    state.policy.banned_builders[i].reason = "b";
    state.policy.trusted_relays.insert(absl::StrCat("http://t", i));
  }
  state.missed_slots.start_slot = 900;
  state.missed_slots.present_slots = {901, 905, 990};
  state.missed_slots.observed_slots = {900, 901, 902, 905, 990};
  state.missed_slots.has_finalized = true;
  state.missed_slots.finalized_epoch = 28;
  state.missed_slots.latched = true;
  state.missed_slots.latched_rule = "latched rule";
  return state;
}

TEST(SnapshotCodec, DecodingLosesNothing) {
  const state::v1::EngineSnapshot snapshot = SnapshotToProto(StateWithEntries(12, false));
  absl::StatusOr<core::EngineState> decoded = SnapshotFromProto(ThroughBytes(snapshot));
  ASSERT_THAT(decoded, IsOk());
  EXPECT_EQ(DeterministicBytes(SnapshotToProto(*decoded)), DeterministicBytes(snapshot));
  EXPECT_THAT(decoded->votes.at(Root(4)).reporters, ElementsAre("n2", "n1"));
  EXPECT_EQ(decoded->builders.at(3).failures,
            (core::FailureRecord{3, 13, true, 7, 3, "failure 3"}));
  EXPECT_THAT(decoded->missed_slots.present_slots, ElementsAre(901, 905, 990));
  EXPECT_THAT(decoded->missed_slots.observed_slots, ElementsAre(900, 901, 902, 905, 990));
  EXPECT_EQ(decoded->missed_slots.latched_rule, "latched rule");
}

TEST(SnapshotCodec, EqualStatesGiveEqualBytes) {
  const std::string ascending = DeterministicBytes(SnapshotToProto(StateWithEntries(40, false)));
  const std::string descending = DeterministicBytes(SnapshotToProto(StateWithEntries(40, true)));
  EXPECT_EQ(ascending, descending);
}

TEST(SnapshotCodec, RefusesMalformedSnapshots) {
  const state::v1::EngineSnapshot snapshot = SnapshotToProto(StateWithEntries(3, false));
  ASSERT_THAT(SnapshotFromProto(snapshot), IsOk());

  state::v1::EngineSnapshot no_policy = snapshot;
  no_policy.clear_policy();
  EXPECT_THAT(SnapshotFromProto(no_policy),
              StatusIs(kInvalid, HasSubstr("policy: mode is MODE_UNSPECIFIED")));

  state::v1::EngineSnapshot short_root = snapshot;
  short_root.mutable_votes(2)->set_block_root("abc");
  EXPECT_THAT(SnapshotFromProto(short_root),
              StatusIs(kInvalid, "votes[2].block_root is 3 bytes; a block root is 32"));

  state::v1::EngineSnapshot builder_twice = snapshot;
  *builder_twice.add_builders() = snapshot.builders(1);
  EXPECT_THAT(SnapshotFromProto(builder_twice),
              StatusIs(kInvalid, HasSubstr("builders holds builder 1 more than once")));

  state::v1::EngineSnapshot key_twice = snapshot;
  *key_twice.add_builder_keys() = snapshot.builder_keys(1);
  EXPECT_THAT(SnapshotFromProto(key_twice),
              StatusIs(kInvalid, HasSubstr("builder_keys holds builder 1 more than once")));

  state::v1::EngineSnapshot relay_twice = snapshot;
  *relay_twice.add_relays() = snapshot.relays(0);
  EXPECT_THAT(SnapshotFromProto(relay_twice), StatusIs(kInvalid, HasSubstr("relays holds")));

  state::v1::EngineSnapshot member_twice = snapshot;
  *member_twice.mutable_relays(0)->add_learned_members() = snapshot.relays(0).learned_members(0);
  EXPECT_THAT(SnapshotFromProto(member_twice), StatusIs(kInvalid, HasSubstr("learned_members")));

  state::v1::EngineSnapshot vote_twice = snapshot;
  *vote_twice.add_votes() = snapshot.votes(0);
  EXPECT_THAT(SnapshotFromProto(vote_twice), StatusIs(kInvalid, HasSubstr("votes holds")));

  state::v1::EngineSnapshot node_twice = snapshot;
  *node_twice.add_node_sequences() = snapshot.node_sequences(2);
  EXPECT_THAT(SnapshotFromProto(node_twice), StatusIs(kInvalid, HasSubstr("node_sequences")));

  state::v1::EngineSnapshot ban_twice = snapshot;
  *ban_twice.add_operator_bans() = snapshot.operator_bans(0);
  EXPECT_THAT(SnapshotFromProto(ban_twice), StatusIs(kInvalid, HasSubstr("operator_bans")));

  state::v1::EngineSnapshot relay_ban_twice = snapshot;
  *relay_ban_twice.add_operator_relay_bans() = snapshot.operator_relay_bans(1);
  EXPECT_THAT(SnapshotFromProto(relay_ban_twice),
              StatusIs(kInvalid, HasSubstr("operator_relay_bans holds relay 'http://o1'")));

  state::v1::EngineSnapshot trust_twice = snapshot;
  *trust_twice.add_builder_trust_overrides() = snapshot.builder_trust_overrides(0);
  EXPECT_THAT(SnapshotFromProto(trust_twice),
              StatusIs(kInvalid, HasSubstr("builder_trust_overrides")));

  state::v1::EngineSnapshot relay_trust_twice = snapshot;
  *relay_trust_twice.add_relay_trust_overrides() = snapshot.relay_trust_overrides(0);
  EXPECT_THAT(SnapshotFromProto(relay_trust_twice),
              StatusIs(kInvalid, HasSubstr("relay_trust_overrides")));
}

TEST(SnapshotCodec, ReadsTheKeysOfOlderSnapshotsFromTheirRecords) {
  state::v1::EngineSnapshot snapshot = SnapshotToProto(StateWithEntries(3, false));
  snapshot.clear_builder_keys();
  // As written before builder_keys: the key in the record, any length the engine took then.
  snapshot.mutable_builders(0)->set_pubkey(std::string(48, 'k'));
  snapshot.mutable_builders(1)->set_pubkey("pk-1");
  absl::StatusOr<core::EngineState> decoded = SnapshotFromProto(snapshot);
  ASSERT_THAT(decoded, IsOk());
  ASSERT_EQ(decoded->builder_keys.size(), 1u);
  EXPECT_EQ(decoded->builder_keys.at(0), (core::BuilderKey{std::string(48, 'k'), 0}));
  // Never written again.
  EXPECT_EQ(SnapshotToProto(*decoded).builders(0).pubkey(), "");

  // A key of the new list wins over the record's.
  snapshot = SnapshotToProto(StateWithEntries(3, false));
  snapshot.mutable_builders(0)->set_pubkey(std::string(48, 'k'));
  decoded = SnapshotFromProto(snapshot);
  ASSERT_THAT(decoded, IsOk());
  EXPECT_EQ(decoded->builder_keys.at(0).pubkey, std::string(48, 'a'));
}

}  // namespace
}  // namespace breaker::codec
