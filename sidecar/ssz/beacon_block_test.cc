#include "sidecar/ssz/beacon_block.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/ssz/test_blocks.h"
#include "tests/support/status_matchers.h"

namespace breaker::sidecar::ssz {
namespace {

using ::breaker::testing::StatusIs;
using ::testing::HasSubstr;
using Json = nlohmann::json;

// testdata/make_vectors.mjs wrote these with @chainsafe/ssz and @lodestar/types.
constexpr const char* kVectors[] = {
    "bellatrix_0",
    "bellatrix_1",
    "capella_0",
    "capella_1",
    "deneb_0",
    "deneb_1",
    "electra_0",
    "electra_1",
    "fulu_0",
    "fulu_1",
    "capella_full_0",
    "capella_full_1",
    "capella_minimal_0",
    "capella_minimal_1",
    "deneb_minimal_0",
    "deneb_minimal_1",
    "electra_minimal_0",
    "electra_minimal_1",
    "fulu_minimal_0",
    "fulu_minimal_1",
};

std::string HexOf(const absl::StatusOr<BlockRoot>& root) {
  if (!root.ok()) return std::string(root.status().message());
  return Hex(absl::string_view(reinterpret_cast<const char*>(root->root.data()), 32));
}

Json BlockOf(const std::string& name) { return Json::parse(ReadTestVector(name).json); }

TEST(BeaconBlockTest, RootsOfEveryForkAgreeWithChainSafeSsz) {
  for (const char* name : kVectors) {
    SCOPED_TRACE(name);
    const TestVector vector = ReadTestVector(name);
    const std::string expected = Hex(vector.root);
    const Fork fork = *ForkFromName(vector.fork);
    const BlockKind kind = vector.full ? BlockKind::kFull : BlockKind::kBlinded;
    const Preset& preset = vector.minimal ? Preset::kMinimal : Preset::kMainnet;
    const Json block = Json::parse(vector.json);

    // JSON: the fork named, inferred from the body, named by the {"version", "data"} wrapping.
    EXPECT_EQ(HexOf(SignedBlockRootFromJson(block, kind, fork, preset)), expected);
    const absl::StatusOr<BlockRoot> inferred =
        SignedBlockRootFromJson(block, kind, std::nullopt, preset);
    EXPECT_EQ(HexOf(inferred), expected);
    if (inferred.ok()) {
      EXPECT_EQ(inferred->fork, fork == Fork::kFulu ? Fork::kElectra : fork);
    }
    const Json wrapped = {{"version", vector.fork}, {"data", block}, {"finalized", false}};
    EXPECT_EQ(HexOf(SignedBlockRootFromJson(wrapped, kind, std::nullopt, preset)), expected);

    // SSZ: the same root, the fork named or inferred; and the JSON encodes to those bytes.
    const std::string& ssz = vector.ssz;
    EXPECT_EQ(HexOf(SignedBlockRootFromSsz(ssz, kind, fork, preset)), expected);
    EXPECT_EQ(HexOf(SignedBlockRootFromSsz(ssz, kind, std::nullopt, preset)), expected);
    const absl::StatusOr<const Type*> type = BeaconBlockType(fork, kind, preset);
    ASSERT_TRUE(type.ok());
    const absl::StatusOr<std::string> encoded = EncodeJson(**type, block["message"]);
    ASSERT_TRUE(encoded.ok()) << encoded.status();
    EXPECT_EQ(Hex(*encoded), Hex(ssz.substr(100)));
  }
}

TEST(BeaconBlockTest, ForkFromName) {
  EXPECT_EQ(ForkFromName("Deneb"), Fork::kDeneb);
  EXPECT_EQ(ForkFromName("fulu"), Fork::kFulu);
  EXPECT_FALSE(ForkFromName("gloas").has_value());
  EXPECT_FALSE(ForkFromName("altair").has_value());
}

TEST(BeaconBlockTest, RefusesBlocksOfAnotherForkOrOutOfRangeNamingTheField) {
  const Json electra = BlockOf("electra_0");
  const Json capella = BlockOf("capella_0");
  auto json_error = [](const Json& block, std::optional<Fork> fork) {
    return SignedBlockRootFromJson(block, BlockKind::kBlinded, fork, Preset::kMainnet).status();
  };
  EXPECT_THAT(json_error(electra, Fork::kDeneb),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("message.body.attestations[0].committee_bits: unknown field")));
  EXPECT_THAT(json_error({{"version", "deneb"}, {"data", electra}}, Fork::kElectra),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("version: \"deneb\", but the block is named electra")));
  EXPECT_THAT(json_error({{"version", "gloas"}, {"data", electra}}, std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("version: names no fork")));

  Json slot_too_big = electra;
  slot_too_big["message"]["body"]["attestations"][0]["data"]["slot"] = "18446744073709551616";
  EXPECT_THAT(json_error({{"version", "electra"}, {"data", slot_too_big}}, std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("data.message.body.attestations[0].data.slot: "
                                 "\"18446744073709551616\" is over uint64")));
  Json two_slashings = electra;
  auto& slashings = two_slashings["message"]["body"]["attester_slashings"];
  slashings.push_back(slashings[0]);
  EXPECT_THAT(json_error(two_slashings, std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("message.body.attester_slashings: 2 elements, over the limit 1")));
  Json short_root = capella;
  short_root["message"]["parent_root"] = "0x1234";
  EXPECT_THAT(json_error(short_root, std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("message.parent_root: 4 hex digits, expected 64 (32 bytes)")));
  // Capella's body without bls_to_execution_changes is Bellatrix's, but its payload header is
  // still Capella's.
  Json no_changes = capella;
  no_changes["message"]["body"].erase("bls_to_execution_changes");
  EXPECT_THAT(
      json_error(no_changes, std::nullopt),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("message.body.execution_payload_header.withdrawals_root: unknown field")));
  Json extra = capella;
  extra["message"]["body"]["surprise"] = "0x";
  EXPECT_THAT(json_error(extra, std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("message.body: its fields are those of no fork's")));
  EXPECT_THAT(json_error(Json::parse(R"({"message":{"slot":"1"}})"), std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("message.body: missing")));
  // Mainnet's committee bits (64) are not the minimal preset's (4).
  EXPECT_THAT(
      SignedBlockRootFromJson(electra, BlockKind::kBlinded, Fork::kElectra, Preset::kMinimal),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("committee_bits")));
}

TEST(BeaconBlockTest, AMinimalBlockIsReadWithTheMinimalPresetOnly) {
  const TestVector vector = ReadTestVector("deneb_minimal_0");
  // The sync aggregate's bits (4 bytes, not 64) make its fixed part no mainnet fork's.
  EXPECT_THAT(
      SignedBlockRootFromSsz(vector.ssz, BlockKind::kBlinded, std::nullopt, Preset::kMainnet),
      StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(HexOf(SignedBlockRootFromSsz(vector.ssz, BlockKind::kBlinded, std::nullopt,
                                         Preset::kMinimal)),
            Hex(vector.root));
}

TEST(BeaconBlockTest, AnotherPresetsLimitsGiveItsOwnTypes) {
  // The minimal preset as a node of an earlier spec lists it (16 blob commitments): another
  // list limit, so another root for the same commitments.
  Preset earlier = Preset::kMinimal;
  earlier.max_blob_commitments_per_block = 16;
  const TestVector vector = ReadTestVector("deneb_minimal_0");
  const absl::StatusOr<BlockRoot> root =
      SignedBlockRootFromSsz(vector.ssz, BlockKind::kBlinded, Fork::kDeneb, earlier);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_NE(HexOf(root), Hex(vector.root));
  EXPECT_EQ(HexOf(SignedBlockRootFromJson(Json::parse(vector.json), BlockKind::kBlinded,
                                          Fork::kDeneb, earlier)),
            HexOf(root));
}

TEST(BeaconBlockTest, RefusesAPresetWithALimitOfZeroOrBeyondTheBound) {
  Preset zero = Preset::kMainnet;
  zero.sync_committee_size = 0;
  EXPECT_THAT(BeaconBlockType(Fork::kDeneb, BlockKind::kBlinded, zero).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("limit of 0")));
  Preset huge = Preset::kMainnet;
  huge.max_committees_per_slot = kMaxPresetLimit + 1;
  EXPECT_THAT(BeaconBlockType(Fork::kDeneb, BlockKind::kBlinded, huge).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(BeaconBlockTest, RefusesTruncatedOrMisplacedSsz) {
  const std::string ssz = ReadTestVector("deneb_0").ssz;
  auto ssz_error = [](const std::string& bytes, std::optional<Fork> fork) {
    return SignedBlockRootFromSsz(bytes, BlockKind::kBlinded, fork, Preset::kMainnet).status();
  };
  EXPECT_THAT(ssz_error(ssz.substr(0, ssz.size() - 1), Fork::kDeneb),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("message.body")));
  EXPECT_THAT(ssz_error(ssz.substr(0, 150), std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("message")));
  EXPECT_THAT(ssz_error("", std::nullopt), StatusIs(absl::StatusCode::kInvalidArgument));
  // Read as another fork, the body's offsets are out of place.
  EXPECT_THAT(ssz_error(ssz, Fork::kCapella),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("message.body: offset")));
}

}  // namespace
}  // namespace breaker::sidecar::ssz
