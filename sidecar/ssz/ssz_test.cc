#include "sidecar/ssz/ssz.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::sidecar::ssz {
namespace {

using ::breaker::testing::StatusIs;
using ::testing::HasSubstr;
using Json = nlohmann::json;

// The expected roots below were computed apart from this code, with Python's hashlib.
std::string HexOf(const Root& root) {
  return Hex(absl::string_view(reinterpret_cast<const char*>(root.data()), root.size()));
}

std::string HexOf(const absl::StatusOr<Root>& root) {
  return root.ok() ? HexOf(*root) : std::string(root.status().message());
}

std::string Bytes(std::initializer_list<int> values) {
  std::string out;
  for (int value : values) out.push_back(static_cast<char>(value));
  return out;
}

std::string Uint64Bytes(uint64_t value) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  return out;
}

absl::StatusOr<Root> RootOfJson(const Type& type, const std::string& text) {
  absl::StatusOr<std::string> ssz = EncodeJson(type, Json::parse(text), "x");
  if (!ssz.ok()) return ssz.status();
  return HashTreeRoot(type, *ssz, "x");
}

TEST(ZeroHashTest, KnownValues) {
  EXPECT_EQ(HexOf(ZeroHash(0)), "0x" + std::string(64, '0'));
  EXPECT_EQ(HexOf(ZeroHash(1)),
            "0xf5a5fd42d16a20302798ef6ed309979b43003d2320d9f0e8ea9831a92759fb4b");
  EXPECT_EQ(HexOf(ZeroHash(40)),
            "0x6bfe8d2bcc4237b74a5047058ef455339ecd7360cb63bfbb8ee5448e6430ba04");
  EXPECT_EQ(HexOf(ZeroHash(64)),
            "0xc885c236140249c9e1640e5e99fb972d81fbb31ea5e29fbdde063627f0d6bdc8");
}

TEST(MerkleizeTest, PadsWithZeroHashesToThePowerOfTwo) {
  Root one;
  one.fill(1);
  EXPECT_EQ(Merkleize({}, 0), ZeroHash(0));
  EXPECT_EQ(Merkleize({}, 5), ZeroHash(3));
  EXPECT_EQ(Merkleize({one}, 1), one);
  // Limit 3 pads to 4 leaves: ((one, 0), (0, 0)).
  EXPECT_EQ(Merkleize({one}, 3), Merkleize({Merkleize({one, ZeroHash(0)}, 2), ZeroHash(1)}, 2));
  // A limit of 2^40 chunks costs 40 hashes, not 2^40 leaves.
  EXPECT_EQ(Merkleize({}, uint64_t{1} << 40), ZeroHash(40));
}

TEST(HashTreeRootTest, BasicValues) {
  EXPECT_EQ(HexOf(HashTreeRoot(Uint64(), Uint64Bytes(0))), "0x" + std::string(64, '0'));
  EXPECT_EQ(HexOf(HashTreeRoot(Uint64(), Uint64Bytes(5))), "0x05" + std::string(62, '0'));
  EXPECT_EQ(HexOf(RootOfJson(Uint64(), "\"18446744073709551615\"")),
            "0x" + std::string(16, 'f') + std::string(48, '0'));
  EXPECT_EQ(HexOf(RootOfJson(Uint256(), "\"256\"")), "0x0001" + std::string(60, '0'));
}

TEST(HashTreeRootTest, EmptyListsMixInLengthZeroOverTheirLimitsZeroHash) {
  EXPECT_EQ(HexOf(HashTreeRoot(List(Uint64(), 2048), "")),
            "0x8d88050ac84001d0796fc9de86de5768a435c21150ee647c28e02118ef69cd8e");
  EXPECT_EQ(HexOf(HashTreeRoot(List(ByteList(uint64_t{1} << 30), uint64_t{1} << 20), "")),
            "0x7ffe241ea60187fdb0187bfa22de35d1f9bed7ab061d9401fd47e34a54fbede1");
}

TEST(HashTreeRootTest, ListsBitlistsAndContainers) {
  EXPECT_EQ(HexOf(RootOfJson(List(Uint64(), 2048), R"(["1","2","3"])")),
            "0x76b46f97eac10ce4a78012ef9524f82348592a615e621327034f7f816f01696d");
  std::string bytes;
  for (int i = 0; i < 33; ++i) bytes.push_back(static_cast<char>(i));
  EXPECT_EQ(HexOf(HashTreeRoot(ByteList(64), bytes)),
            "0x635625879e3d12286181b0fc1449cc79807f77b1aeacf4185e51f6eeba6ef080");
  // Bits 1, 0, 1 and the delimiter: 0b1101.
  EXPECT_EQ(HexOf(RootOfJson(Bitlist(8), "\"0x0d\"")),
            "0xcf8ca64c265b9b6234fb7573a200745204fd04fecf680f1157f27367ee8f4aa2");
  const Type pair = Container({{"a", Uint64()}, {"b", Uint64()}});
  EXPECT_EQ(HexOf(RootOfJson(pair, R"({"a":"1","b":"2"})")),
            "0xff55c97976a840b4ced964ed49e3794594ba3f675238b5fd25d282b60f70a194");
}

TEST(EncodeJsonTest, VariableSizeFieldsGoAfterOffsets) {
  const Type type = Container({{"a", Uint64()}, {"b", ByteList(4)}, {"c", List(ByteList(2), 2)}});
  absl::StatusOr<std::string> ssz = EncodeJson(type, Json::parse(R"({
    "a": "1", "b": "0xaabb", "c": ["0x01", "0x"]})"));
  ASSERT_TRUE(ssz.ok()) << ssz.status();
  EXPECT_EQ(*ssz, Uint64Bytes(1) + Bytes({16, 0, 0, 0, 18, 0, 0, 0}) + Bytes({0xaa, 0xbb}) +
                      Bytes({8, 0, 0, 0, 9, 0, 0, 0, 1}));
  EXPECT_TRUE(HashTreeRoot(type, *ssz).ok());
}

TEST(EncodeJsonTest, RefusesMalformedValuesNamingTheField) {
  const Type attestation =
      Container({{"data", Container({{"slot", Uint64()}, {"root", ByteVector(32)}})},
                 {"bits", Bitlist(8)},
                 {"indices", List(Uint64(), 2)}});
  const Type block = Container({{"attestations", List(attestation, 4)}});
  const std::string good = R"({"data":{"slot":"1","root":"0x)" + std::string(64, 'a') +
                           R"("},"bits":"0x01","indices":[]})";
  auto with = [&](const std::string& third) {
    return Json::parse(R"({"attestations":[)" + good + "," + good + "," + good + "," + third +
                       "]}");
  };
  EXPECT_TRUE(EncodeJson(block, with(good)).ok());
  const struct {
    std::string attestation;
    std::string message;
  } kCases[] = {
      {R"({"data":{"slot":"18446744073709551616","root":"0x00"},"bits":"0x01","indices":[]})",
       "attestations[3].data.slot: \"18446744073709551616\" is over uint64"},
      {R"({"data":{"slot":"-1","root":"0x00"},"bits":"0x01","indices":[]})",
       "attestations[3].data.slot: expected a decimal string"},
      {R"({"data":{"slot":1,"root":"0x00"},"bits":"0x01","indices":[]})",
       "attestations[3].data.slot: expected a decimal string"},
      {R"({"data":{"slot":"1","root":"0x00"},"bits":"0x01","indices":[]})",
       "attestations[3].data.root: 2 hex digits, expected 64 (32 bytes)"},
      {R"({"data":{"slot":"1","root":"0x)" + std::string(62, 'a') +
           R"(zz"},"bits":"0x01","indices":[]})",
       "attestations[3].data.root: not hex"},
      {R"({"data":{"slot":"1","root":")" + std::string(64, 'a') +
           R"("},"bits":"0x01","indices":[]})",
       "attestations[3].data.root: expected a 0x-prefixed hex string"},
      {R"({"data":{"slot":"1"},"bits":"0x01","indices":[]})", "attestations[3].data.root: missing"},
      {R"({"data":{"slot":"1","root":"0x)" + std::string(64, 'a') +
           R"("},"bits":"0x01","indices":["1","2","3"]})",
       "attestations[3].indices: 3 elements, over the limit 2"},
      {R"({"data":{"slot":"1","root":"0x)" + std::string(64, 'a') +
           R"("},"bits":"0x010101","indices":[]})",
       "attestations[3].bits: 6 hex digits, expected at most 4"},
      {R"({"data":{"slot":"1","root":"0x)" + std::string(64, 'a') +
           R"("},"bits":"0x01","indices":[],"extra":"1"})",
       "attestations[3].extra: unknown field"},
  };
  for (const auto& c : kCases) {
    EXPECT_THAT(EncodeJson(block, with(c.attestation), "message"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("message." + c.message)))
        << c.attestation;
  }
  EXPECT_THAT(EncodeJson(block, Json::parse(R"({"attestations":[)" + good + "," + good + "," +
                                            good + "," + good + "," + good + "]}")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("attestations: 5 elements, over the limit 4")));
}

TEST(HashTreeRootTest, RefusesInvalidEncodingsNamingTheField) {
  EXPECT_THAT(HashTreeRoot(Bitlist(8), Bytes({0x01, 0x00}), "bits"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bits: a bitlist without")));
  EXPECT_THAT(HashTreeRoot(Bitlist(8), Bytes({0x00, 0x03}), "bits"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("9 bits, over the limit 8")));
  EXPECT_THAT(HashTreeRoot(Bitvector(4), Bytes({0x10}), "bits"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bits set past")));
  EXPECT_THAT(HashTreeRoot(Uint64(), "1234567"), StatusIs(absl::StatusCode::kInvalidArgument));
  const Type type = Container({{"a", Uint64()}, {"b", ByteList(4)}});
  // The offset of b must be the fixed part's size, 12.
  EXPECT_THAT(HashTreeRoot(type, Uint64Bytes(1) + Bytes({13, 0, 0, 0, 1, 2}), "m"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("m: offset 13")));
  EXPECT_THAT(HashTreeRoot(type, Uint64Bytes(1) + Bytes({12, 0, 0, 0, 1, 2, 3, 4, 5}), "m"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("m.b: 5 bytes, over")));
  // A list of variable-size elements whose first offset claims far more than there is.
  EXPECT_THAT(HashTreeRoot(List(ByteList(4), 1 << 20), Bytes({0, 0, 0, 0x7f}), "l"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("l: first offset")));
  EXPECT_THAT(HashTreeRoot(List(ByteList(4), 1), Bytes({8, 0, 0, 0, 8, 0, 0, 0}), "l"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("over the limit 1")));
}

}  // namespace
}  // namespace breaker::sidecar::ssz
