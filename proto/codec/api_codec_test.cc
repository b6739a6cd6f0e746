#include "proto/codec/api_codec.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/codec/codec_test_util.h"
#include "tests/support/status_matchers.h"

namespace breaker::codec {
namespace {

namespace v1 = ::breaker::v1;

// --- Policy ----------------------------------------------------------------------------------

core::Policy FullPolicy() {
  core::Policy policy;
  policy.version = 42;
  policy.mode = core::Mode::kTrustedOnly;
  policy.mode_reason = "3 untrusted builders banned for their own failures (1, 2, 3)";
  policy.banned_builders[3] = core::Ban{core::BanKind::kFailure, 12, false, "1 failure"};
  policy.banned_builders[1] = core::Ban{core::BanKind::kOperator, 0, true, "blacklist"};
  policy.banned_builders[2] = core::Ban{core::BanKind::kCollateral, 40, false, "relay a"};
  // A merged ban may hold both an epoch and until_reset: both must survive.
  policy.banned_builders[7] = core::Ban{core::BanKind::kFailure, 15, true, "critical"};
  policy.banned_relays["https://b.example"] = core::Ban{core::BanKind::kFailure, 9, false, "x"};
  policy.banned_relays["http://a.example"] = core::Ban{core::BanKind::kOperator, 0, true, "y"};
  policy.trusted_builders = {100, 4, 57};
  policy.trusted_relays = {"https://z.example", "http://trusted.example"};
  policy.builder_pubkeys = {{3, std::string(48, 'c')}, {100, std::string(48, 'd')}};
  policy.missed_slots = core::MissedSlotState{
      true, true, true, "6 missed slots since the last present slot > 5", 6, 7, 2};
  policy.computed_at_slot = 321;
  policy.computed_at_epoch = 10;
  policy.reason = "builder 7 banned";
  return policy;
}

TEST(PolicyCodec, RoundTripKeepsEveryField) {
  const core::Policy policy = FullPolicy();
  const v1::Policy proto = PolicyToProto(policy);
  EXPECT_EQ(proto.mode(), v1::MODE_TRUSTED_ONLY);

  absl::StatusOr<core::Policy> decoded = PolicyFromProto(ThroughBytes(proto));
  ASSERT_THAT(decoded, IsOk());
  ExpectSamePolicy(*decoded, policy);
}

TEST(PolicyCodec, MapsEveryModeAndBanKind) {
  const std::pair<core::Mode, v1::Mode> modes[] = {
      {core::Mode::kAllBuilders, v1::MODE_ALL_BUILDERS},
      {core::Mode::kTrustedOnly, v1::MODE_TRUSTED_ONLY},
      {core::Mode::kSelfBuild, v1::MODE_SELF_BUILD},
  };
  for (const auto& [mode, proto_mode] : modes) {
    core::Policy policy;
    policy.mode = mode;
    const v1::Policy proto = PolicyToProto(policy);
    EXPECT_EQ(proto.mode(), proto_mode);
    absl::StatusOr<core::Policy> decoded = PolicyFromProto(proto);
    ASSERT_THAT(decoded, IsOk());
    EXPECT_EQ(decoded->mode, mode);
  }

  const std::pair<core::BanKind, v1::BanKind> kinds[] = {
      {core::BanKind::kFailure, v1::BAN_KIND_FAILURE},
      {core::BanKind::kOperator, v1::BAN_KIND_OPERATOR},
      {core::BanKind::kCollateral, v1::BAN_KIND_COLLATERAL},
  };
  for (const auto& [kind, proto_kind] : kinds) {
    core::Policy policy;
    policy.banned_builders[5].kind = kind;
    policy.banned_relays["http://r"].kind = kind;
    const v1::Policy proto = PolicyToProto(policy);
    EXPECT_EQ(proto.banned_builders(0).ban().kind(), proto_kind);
    EXPECT_EQ(proto.banned_relays(0).ban().kind(), proto_kind);
    absl::StatusOr<core::Policy> decoded = PolicyFromProto(proto);
    ASSERT_THAT(decoded, IsOk());
    EXPECT_EQ(decoded->banned_builders.at(5).kind, kind);
    EXPECT_EQ(decoded->banned_relays.at("http://r").kind, kind);
  }
}

TEST(PolicyCodec, ListsAreSorted) {
  core::Policy policy = FullPolicy();
  for (core::BuilderIndex b = 1000; b > 900; b -= 3) {
    policy.banned_builders[b] = core::Ban{core::BanKind::kFailure, b, false, "f"};
    policy.trusted_builders.insert(b * 7);
  }
  for (int i = 0; i < 30; ++i) {
    policy.banned_relays[absl::StrCat("http://r", 30 - i)] = core::Ban();
    policy.trusted_relays.insert(absl::StrCat("https://t", i * 13 % 30));
  }
  const v1::Policy proto = PolicyToProto(policy);

  std::vector<uint64_t> banned = Indices(proto.banned_builders());
  EXPECT_EQ(banned.size(), policy.banned_builders.size());
  EXPECT_TRUE(std::is_sorted(banned.begin(), banned.end()));
  std::vector<std::string> relays;
  for (const v1::RelayBan& ban : proto.banned_relays()) relays.push_back(ban.relay());
  EXPECT_EQ(relays.size(), policy.banned_relays.size());
  EXPECT_TRUE(std::is_sorted(relays.begin(), relays.end()));
  EXPECT_EQ(proto.trusted_builders_size(), static_cast<int>(policy.trusted_builders.size()));
  EXPECT_TRUE(std::is_sorted(proto.trusted_builders().begin(), proto.trusted_builders().end()));
  EXPECT_EQ(proto.trusted_relays_size(), static_cast<int>(policy.trusted_relays.size()));
  EXPECT_TRUE(std::is_sorted(proto.trusted_relays().begin(), proto.trusted_relays().end()));
}

TEST(PolicyCodec, RefusesUnspecifiedAndUnknownEnums) {
  v1::Policy proto = PolicyToProto(FullPolicy());

  v1::Policy no_mode = proto;
  no_mode.clear_mode();
  EXPECT_THAT(PolicyFromProto(no_mode), StatusIs(kInvalid, HasSubstr("MODE_UNSPECIFIED")));
  v1::Policy unknown_mode = proto;
  unknown_mode.set_mode(static_cast<v1::Mode>(42));
  EXPECT_THAT(PolicyFromProto(unknown_mode), StatusIs(kInvalid, HasSubstr("mode is 42")));

  v1::Policy no_kind = proto;
  no_kind.mutable_banned_builders(1)->mutable_ban()->clear_kind();
  EXPECT_THAT(PolicyFromProto(no_kind),
              StatusIs(kInvalid, HasSubstr("banned_builders[1].ban.kind is BAN_KIND_UNSPECIFIED")));
  v1::Policy no_ban = proto;
  no_ban.mutable_banned_builders(0)->clear_ban();
  EXPECT_THAT(PolicyFromProto(no_ban), StatusIs(kInvalid, HasSubstr("banned_builders[0]")));
  v1::Policy unknown_kind = proto;
  unknown_kind.mutable_banned_relays(0)->mutable_ban()->set_kind(static_cast<v1::BanKind>(9));
  EXPECT_THAT(PolicyFromProto(unknown_kind),
              StatusIs(kInvalid, HasSubstr("banned_relays[0].ban.kind is 9")));
}

TEST(PolicyCodec, RefusesKeysListedTwice) {
  const v1::Policy proto = PolicyToProto(FullPolicy());

  v1::Policy builder_twice = proto;
  *builder_twice.add_banned_builders() = proto.banned_builders(0);
  EXPECT_THAT(PolicyFromProto(builder_twice),
              StatusIs(kInvalid, HasSubstr("banned_builders holds builder 1 more than once")));
  v1::Policy relay_twice = proto;
  *relay_twice.add_banned_relays() = proto.banned_relays(1);
  EXPECT_THAT(PolicyFromProto(relay_twice), StatusIs(kInvalid, HasSubstr("banned_relays")));
  v1::Policy trusted_twice = proto;
  trusted_twice.add_trusted_builders(4);
  EXPECT_THAT(PolicyFromProto(trusted_twice), StatusIs(kInvalid, HasSubstr("trusted_builders")));
  v1::Policy trusted_relay_twice = proto;
  trusted_relay_twice.add_trusted_relays("https://z.example");
  EXPECT_THAT(PolicyFromProto(trusted_relay_twice),
              StatusIs(kInvalid, HasSubstr("trusted_relays")));
  v1::Policy key_twice = proto;
  *key_twice.add_builder_pubkeys() = proto.builder_pubkeys(0);
  EXPECT_THAT(PolicyFromProto(key_twice), StatusIs(kInvalid, HasSubstr("builder_pubkeys")));
}

TEST(PolicyCodec, RefusesABuilderKeyOfAnotherLength) {
  v1::Policy proto = PolicyToProto(FullPolicy());
  proto.mutable_builder_pubkeys(1)->set_pubkey("short");
  EXPECT_THAT(PolicyFromProto(proto),
              StatusIs(kInvalid, HasSubstr("builder_pubkeys[1].pubkey is 5 bytes")));
}

// --- Observations ----------------------------------------------------------------------------

TEST(ObservationCodec, BidSeen) {
  v1::Observation proto = Numbered(3, 320);
  proto.mutable_bid_seen()->set_builder_index(8);
  proto.mutable_bid_seen()->set_relay("Relay.Example:443");
  const std::string key = std::string("\x00\x8a\xff", 3) + std::string(45, '\x01');
  proto.mutable_bid_seen()->set_builder_pubkey(key);

  absl::StatusOr<core::Observation> observation = ObservationFromProto(proto, "bn-1");
  ASSERT_THAT(observation, IsOk());
  EXPECT_EQ(observation->sequence, 3u);
  EXPECT_EQ(observation->slot, 320u);
  EXPECT_EQ(observation->node, "bn-1");
  const auto* bid = std::get_if<core::BidSeen>(&observation->event);
  ASSERT_NE(bid, nullptr);
  EXPECT_EQ(bid->builder, 8u);
  // The relay is normalized by the engine, not here.
  EXPECT_EQ(bid->relay, "Relay.Example:443");
  EXPECT_EQ(bid->pubkey, key);
}

TEST(ObservationCodec, ConvertingIntoAnEarlierObservationGivesWhatAFreshOneDoes) {
  std::vector<v1::Observation> protos;
  v1::Observation relayed = Numbered(1, 320);
  relayed.mutable_bid_seen()->set_builder_index(8);
  relayed.mutable_bid_seen()->set_relay("https://a-long-relay-name.example:443");
  relayed.mutable_bid_seen()->set_builder_pubkey(std::string(48, 'k'));
  protos.push_back(relayed);
  v1::Observation p2p = Numbered(2, 321);
  p2p.mutable_bid_seen()->set_builder_index(9);
  protos.push_back(p2p);
  v1::Observation missing = Numbered(3, 322);
  missing.mutable_payload_missing()->set_builder_index(8);
  missing.mutable_payload_missing()->set_block_root(std::string(32, 'r'));
  protos.push_back(missing);
  protos.push_back(Numbered(4, 323));  // no event: refused
  v1::Observation short_relay = Numbered(5, 324);
  short_relay.mutable_bid_seen()->set_builder_index(10);
  short_relay.mutable_bid_seen()->set_relay("r:1");
  protos.push_back(short_relay);
  protos.push_back(relayed);

  core::Observation reused;
  for (const v1::Observation& proto : protos) {
    SCOPED_TRACE(proto.ShortDebugString());
    absl::StatusOr<core::Observation> fresh = ObservationFromProto(proto, "bn-1");
    const absl::Status status = ObservationFromProto(proto, "bn-1", reused);
    EXPECT_EQ(status, fresh.status());
    if (!fresh.ok()) continue;
    EXPECT_EQ(reused.node, fresh->node);
    EXPECT_EQ(ObservationToProto(reused).SerializeAsString(),
              ObservationToProto(*fresh).SerializeAsString());
  }
}

TEST(ObservationCodec, PubkeyIsFortyEightBytesOrNone) {
  v1::Observation proto = Numbered(3, 320);
  proto.mutable_bid_seen()->set_builder_index(8);
  EXPECT_THAT(ObservationFromProto(proto, "bn-1"), IsOk());
  for (size_t size : {1, 47, 49, 4096}) {
    proto.mutable_bid_seen()->set_builder_pubkey(std::string(size, 'k'));
    EXPECT_THAT(ObservationFromProto(proto, "bn-1"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat("bid_seen.builder_pubkey is ", size, " bytes"))));
  }
}

TEST(ObservationCodec, BlocksSeenListsAtMostSixtyFourRoots) {
  v1::Observation proto = Numbered(3, 320);
  for (int i = 0; i < 64; ++i) proto.mutable_blocks_seen()->add_block_roots(std::string(32, 'r'));
  EXPECT_THAT(ObservationFromProto(proto, "bn-1"), IsOk());
  proto.mutable_blocks_seen()->add_block_roots(std::string(32, 'r'));
  EXPECT_THAT(ObservationFromProto(proto, "bn-1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("blocks_seen.block_roots lists 65 entries")));
}

TEST(ObservationCodec, PayloadMissing) {
  v1::Observation proto = Numbered(4, 321);
  proto.mutable_payload_missing()->set_builder_index(5);
  proto.mutable_payload_missing()->set_block_root(RootBytes(1));
  proto.mutable_payload_missing()->set_attested_fraction(0.75);

  absl::StatusOr<core::Observation> observation = ObservationFromProto(proto, "bn-1");
  ASSERT_THAT(observation, IsOk());
  const auto* missing = std::get_if<core::PayloadMissing>(&observation->event);
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->builder, 5u);
  EXPECT_EQ(missing->root, Root(1));
  EXPECT_EQ(missing->attested_fraction, 0.75);
}

TEST(ObservationCodec, PayloadDelivered) {
  v1::Observation proto = Numbered(5, 322);
  proto.mutable_payload_delivered()->set_builder_index(6);
  proto.mutable_payload_delivered()->set_block_root(RootBytes(2));

  absl::StatusOr<core::Observation> observation = ObservationFromProto(proto, "bn-1");
  ASSERT_THAT(observation, IsOk());
  const auto* delivered = std::get_if<core::PayloadDelivered>(&observation->event);
  ASSERT_NE(delivered, nullptr);
  EXPECT_EQ(delivered->builder, 6u);
  EXPECT_EQ(delivered->root, Root(2));
}

TEST(ObservationCodec, BlocksSeen) {
  v1::Observation proto = Numbered(6, 323);
  proto.mutable_blocks_seen()->add_block_roots(RootBytes(3));
  proto.mutable_blocks_seen()->add_block_roots(RootBytes(4));

  absl::StatusOr<core::Observation> observation = ObservationFromProto(proto, "bn-1");
  ASSERT_THAT(observation, IsOk());
  const auto* seen = std::get_if<core::BlocksSeen>(&observation->event);
  ASSERT_NE(seen, nullptr);
  EXPECT_THAT(seen->roots, ElementsAre(Root(3), Root(4)));
}

TEST(ObservationCodec, EmptyBlocksSeenMeansNoBlock) {
  v1::Observation proto = Numbered(7, 323);
  proto.mutable_blocks_seen();

  absl::StatusOr<core::Observation> observation = ObservationFromProto(proto, "bn-1");
  ASSERT_THAT(observation, IsOk());
  const auto* seen = std::get_if<core::BlocksSeen>(&observation->event);
  ASSERT_NE(seen, nullptr);
  EXPECT_TRUE(seen->roots.empty());
}

TEST(ObservationCodec, Finalized) {
  v1::Observation proto = Numbered(8, 324);
  proto.mutable_finalized()->set_epoch(8);

  absl::StatusOr<core::Observation> observation = ObservationFromProto(proto, "bn-1");
  ASSERT_THAT(observation, IsOk());
  const auto* finalized = std::get_if<core::Finalized>(&observation->event);
  ASSERT_NE(finalized, nullptr);
  EXPECT_EQ(finalized->epoch, 8u);
}

TEST(ObservationCodec, BuilderExited) {
  v1::Observation proto = Numbered(9, 325);
  proto.mutable_builder_exited()->set_builder_index(11);

  absl::StatusOr<core::Observation> observation = ObservationFromProto(proto, "bn-1");
  ASSERT_THAT(observation, IsOk());
  const auto* exited = std::get_if<core::BuilderExited>(&observation->event);
  ASSERT_NE(exited, nullptr);
  EXPECT_EQ(exited->builder, 11u);
}

TEST(ObservationCodec, RelayRevealMissing) {
  v1::Observation proto = Numbered(10, 326);
  proto.mutable_relay_reveal_missing()->set_relay("https://relay.example");
  proto.mutable_relay_reveal_missing()->set_block_root(RootBytes(5));

  absl::StatusOr<core::Observation> observation = ObservationFromProto(proto, "bn-1");
  ASSERT_THAT(observation, IsOk());
  const auto* missing = std::get_if<core::RelayRevealMissing>(&observation->event);
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->relay, "https://relay.example");
  EXPECT_EQ(missing->root, Root(5));
}

TEST(ObservationCodec, ToProtoAndBackKeepsEveryEvent) {
  const core::Event events[] = {
      core::BidSeen{1, "http://r", std::string("k\0y", 3) + std::string(45, 'y')},
      core::PayloadMissing{2, Root(1), 0.9},
      core::PayloadDelivered{3, Root(2)},
      core::BlocksSeen{{Root(3), Root(4)}},
      core::Finalized{4},
      core::BuilderExited{5},
      core::RelayRevealMissing{"http://s", Root(6)},
  };
  uint64_t sequence = 0;
  for (const core::Event& event : events) {
    ++sequence;
    const core::Observation observation{100 + sequence, "bn-2", sequence, event};
    const v1::Observation proto = ObservationToProto(observation);
    EXPECT_EQ(proto.sequence(), sequence);
    EXPECT_EQ(proto.slot(), 100 + sequence);
    EXPECT_EQ(static_cast<size_t>(proto.event_case()), 10 + event.index());

    absl::StatusOr<core::Observation> decoded = ObservationFromProto(ThroughBytes(proto), "bn-2");
    ASSERT_THAT(decoded, IsOk());
    EXPECT_EQ(decoded->node, "bn-2");
    EXPECT_EQ(decoded->event.index(), event.index());
    // Each event converts back to the same proto, field for field.
    EXPECT_EQ(DeterministicBytes(ObservationToProto(*decoded)), DeterministicBytes(proto));
  }
}

TEST(ObservationCodec, RefusesAnObservationWithoutEvent) {
  EXPECT_THAT(ObservationFromProto(Numbered(12, 320), "bn-1"),
              StatusIs(kInvalid, HasSubstr("observation 12 has no event")));
}

TEST(ObservationCodec, RefusesBlockRootsThatAreNot32Bytes) {
  v1::Observation missing = Numbered(1, 320);
  missing.mutable_payload_missing()->set_block_root("short");
  EXPECT_THAT(ObservationFromProto(missing, "bn-1"),
              StatusIs(kInvalid, "payload_missing.block_root is 5 bytes; a block root is 32"));

  v1::Observation delivered = Numbered(2, 320);
  delivered.mutable_payload_delivered()->set_block_root(RootBytes(1) + "x");
  EXPECT_THAT(ObservationFromProto(delivered, "bn-1"),
              StatusIs(kInvalid, "payload_delivered.block_root is 33 bytes; a block root is 32"));

  v1::Observation reveal = Numbered(3, 320);
  reveal.mutable_relay_reveal_missing()->set_relay("http://r");
  EXPECT_THAT(ObservationFromProto(reveal, "bn-1"),
              StatusIs(kInvalid, "relay_reveal_missing.block_root is 0 bytes; a block root is 32"));

  v1::Observation seen = Numbered(4, 320);
  seen.mutable_blocks_seen()->add_block_roots(RootBytes(1));
  seen.mutable_blocks_seen()->add_block_roots(RootBytes(2).substr(1));
  EXPECT_THAT(ObservationFromProto(seen, "bn-1"),
              StatusIs(kInvalid, "blocks_seen.block_roots[1] is 31 bytes; a block root is 32"));
}

}  // namespace
}  // namespace breaker::codec
