#include "proto/codec/received_batch.h"

#include <string>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::codec {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::testing::StatusIs;
using ::testing::Optional;

v1::ObservationBatch Batch(int count) {
  v1::ObservationBatch batch;
  for (int i = 1; i <= count; ++i) {
    v1::Observation* observation = batch.add_observations();
    observation->set_slot(100);
    observation->set_sequence(i);
    observation->mutable_bid_seen()->set_builder_index(i);
    observation->mutable_bid_seen()->set_relay("relay.example");
  }
  return batch;
}

std::string Field(int number, int wire_type, const std::string& payload) {
  std::string bytes(1, static_cast<char>(number << 3 | wire_type));
  if (wire_type == 2) bytes += static_cast<char>(payload.size());
  return bytes + payload;
}
// A batch of one observation whose fields are `observation`, written by hand.
std::string OneObservation(const std::string& observation) { return Field(1, 2, observation); }
const std::string kBid = Field(1, 0, "\x07") + Field(2, 2, "r.example") + Field(3, 2, "");

TEST(ReceivedBatchTest, ABatchOfBidsIsReadInPlace) {
  v1::ObservationBatch batch = Batch(3);
  batch.mutable_observations(1)->mutable_bid_seen()->set_builder_pubkey(std::string(48, 'k'));
  batch.mutable_observations(2)->mutable_bid_seen()->clear_relay();
  const std::string bytes = batch.SerializeAsString();
  absl::StatusOr<ReceivedBatch> received = ReceivedBatch::Parse(bytes);
  ASSERT_TRUE(received.ok()) << received.status();
  EXPECT_TRUE(received->read_in_place());
  EXPECT_EQ(received->bytes(), bytes);
  ASSERT_EQ(received->size(), 3);
  EXPECT_EQ(received->sequence(2), 3u);
  const ReceivedBatch::Bid second = received->bid(1);
  EXPECT_EQ(second.sequence, 2u);
  EXPECT_EQ(second.slot, 100u);
  EXPECT_EQ(second.builder_index, 2u);
  EXPECT_EQ(second.relay, "relay.example");
  EXPECT_EQ(second.pubkey, std::string(48, 'k'));
  EXPECT_EQ(received->bid(2).relay, "");
  EXPECT_EQ(received->ToProto().SerializeAsString(), bytes);
}

TEST(ReceivedBatchTest, AnEmptyBatchIsReadInPlace) {
  absl::StatusOr<ReceivedBatch> received = ReceivedBatch::Parse("");
  ASSERT_TRUE(received.ok());
  EXPECT_TRUE(received->read_in_place());
  EXPECT_EQ(received->size(), 0);
}

TEST(ReceivedBatchTest, ABatchReadInPlaceSurvivesAMove) {
  // Small enough for the string's own buffer, which moves with it.
  const std::string bytes = OneObservation(Field(10, 2, Field(2, 2, "r")));
  ASSERT_LT(bytes.size(), 15u);
  absl::StatusOr<ReceivedBatch> received = ReceivedBatch::Parse(bytes);
  ASSERT_TRUE(received.ok());
  ASSERT_TRUE(received->read_in_place());
  ReceivedBatch moved = *std::move(received);
  EXPECT_EQ(moved.bid(0).relay, "r");
}

// Each of these protobuf parses (or refuses) by its own rules: left to it, with its result.
TEST(ReceivedBatchTest, EveryOtherBatchIsParsedByProtobuf) {
  v1::ObservationBatch other_event = Batch(2);
  other_event.mutable_observations(1)->mutable_finalized()->set_epoch(3);
  const std::string cases[] = {
      // Another event.
      other_event.SerializeAsString(),
      // No event: refused by name when applied.
      OneObservation(Field(1, 0, "\x01")),
      // An unknown field, in the batch, in an observation, in a bid.
      Batch(3).SerializeAsString() + std::string("\xa0\x06\x01", 3),
      OneObservation(Field(10, 2, kBid) + Field(7, 0, "\x01")),
      OneObservation(Field(10, 2, kBid + Field(9, 0, "\x01"))),
      // A field twice: the last number wins, bids merge.
      OneObservation(Field(1, 0, "\x01") + Field(1, 0, "\x02") + Field(10, 2, kBid)),
      OneObservation(Field(10, 2, kBid) + Field(10, 2, Field(3, 2, std::string(48, 'k')))),
      OneObservation(Field(10, 2, kBid + Field(2, 2, "second"))),
      // A known field in another wire type.
      OneObservation(Field(2, 2, "x") + Field(10, 2, kBid)),
      // A relay in UTF-8 beyond ASCII.
      OneObservation(Field(10, 2, Field(2, 2, "r\xc3\xa9lais"))),
      // A varint of ten bytes with bits beyond 64.
      OneObservation(Field(1, 0, std::string(9, '\xff') + "\x7f") + Field(10, 2, kBid)),
  };
  for (const std::string& bytes : cases) {
    SCOPED_TRACE(absl::CEscape(bytes));
    absl::StatusOr<ReceivedBatch> received = ReceivedBatch::Parse(bytes);
    v1::ObservationBatch expected;
    if (!expected.ParseFromString(bytes)) {
      EXPECT_THAT(received.status(), StatusIs(absl::StatusCode::kInvalidArgument));
      continue;
    }
    ASSERT_TRUE(received.ok()) << received.status();
    EXPECT_FALSE(received->read_in_place());
    EXPECT_EQ(received->bytes(), bytes);
    EXPECT_EQ(received->parsed().SerializeAsString(), expected.SerializeAsString());
    EXPECT_EQ(received->sequence(0), expected.observations(0).sequence());
  }
}

TEST(ReceivedBatchTest, RefusesBytesThatDoNotParse) {
  const std::string cases[] = {
      std::string("\x0a\x05\x08", 3),                      // cut short
      OneObservation(Field(10, 2, Field(2, 2, "\xc3("))),  // a relay that is not UTF-8
      std::string("\x0a\x02\x08\x80", 4),                  // a varint cut short
  };
  for (const std::string& bytes : cases) {
    SCOPED_TRACE(absl::CEscape(bytes));
    EXPECT_THAT(ReceivedBatch::Parse(bytes).status(), StatusIs(absl::StatusCode::kInvalidArgument));
  }
}

TEST(ReceivedBatchTest, OfSerializesAParsedBatchOnce) {
  const v1::ObservationBatch batch = Batch(2);
  ReceivedBatch received = ReceivedBatch::Of(batch);
  EXPECT_EQ(received.bytes(), batch.SerializeAsString());
  EXPECT_EQ(received.parsed().SerializeAsString(), batch.SerializeAsString());
}

TEST(ReceivedBatchTest, KeepFirstCutsTheBytesToo) {
  v1::ObservationBatch parsed_by_protobuf = Batch(5);
  parsed_by_protobuf.mutable_observations(4)->mutable_finalized()->set_epoch(1);
  for (const std::string& bytes :
       {Batch(5).SerializeAsString(), parsed_by_protobuf.SerializeAsString()}) {
    absl::StatusOr<ReceivedBatch> received = ReceivedBatch::Parse(bytes);
    ASSERT_TRUE(received.ok());
    received->KeepFirst(2);
    EXPECT_EQ(received->size(), 2);
    EXPECT_EQ(received->bytes(), Batch(2).SerializeAsString());
    EXPECT_EQ(received->ToProto().SerializeAsString(), Batch(2).SerializeAsString());
    received->KeepFirst(2);
    EXPECT_EQ(received->bytes(), Batch(2).SerializeAsString());
    received->KeepFirst(0);
    EXPECT_EQ(received->size(), 0);
    EXPECT_EQ(received->bytes(), "");
  }
}

TEST(ReceivedBatchTest, KeepCutsAnyObservationsAndTheirBytes) {
  // Observations 1, 3 and 5 of Batch(5), with keys of their own so that offsets matter.
  v1::ObservationBatch bids = Batch(5);
  for (int i = 0; i < 5; ++i) {
    bids.mutable_observations(i)->mutable_bid_seen()->set_builder_pubkey(
        std::string(48, static_cast<char>('a' + i)));
  }
  v1::ObservationBatch odd;
  for (int i : {0, 2, 4}) *odd.add_observations() = bids.observations(i);
  v1::ObservationBatch parsed_by_protobuf = bids;
  parsed_by_protobuf.mutable_observations(3)->mutable_finalized()->set_epoch(1);
  v1::ObservationBatch odd_parsed;
  for (int i : {0, 2, 4}) *odd_parsed.add_observations() = parsed_by_protobuf.observations(i);

  for (const auto& [whole, kept] :
       {std::pair(bids, odd), std::pair(parsed_by_protobuf, odd_parsed)}) {
    absl::StatusOr<ReceivedBatch> received = ReceivedBatch::Parse(whole.SerializeAsString());
    ASSERT_TRUE(received.ok());
    received->Keep([](int i) { return i % 2 == 0; });
    EXPECT_EQ(received->size(), 3);
    EXPECT_EQ(received->bytes(), kept.SerializeAsString());
    EXPECT_EQ(received->ToProto().SerializeAsString(), kept.SerializeAsString());
    EXPECT_EQ(received->sequence(2), 5u);
    if (received->read_in_place()) {
      EXPECT_EQ(received->bid(1).pubkey, std::string(48, 'c'));
      EXPECT_EQ(received->bid(2).relay, "relay.example");
    }
    received->Keep([](int) { return false; });
    EXPECT_EQ(received->size(), 0);
    EXPECT_EQ(received->bytes(), "");
  }
}

TEST(LoneObservationsFieldTest, FindsTheBatchOfABatchMessage) {
  v1::NodeMessage message;
  *message.mutable_observations() = Batch(4);
  const std::string bytes = message.SerializeAsString();
  EXPECT_THAT(LoneObservationsField(bytes), Optional(Batch(4).SerializeAsString()));

  v1::NodeMessage empty_batch;
  empty_batch.mutable_observations();
  EXPECT_THAT(LoneObservationsField(empty_batch.SerializeAsString()), Optional(std::string()));
}

TEST(LoneObservationsFieldTest, LeavesEveryOtherMessageToAWholeParse) {
  v1::NodeMessage hello;
  hello.mutable_hello()->set_node_id("n1");
  EXPECT_EQ(LoneObservationsField(hello.SerializeAsString()), std::nullopt);
  EXPECT_EQ(LoneObservationsField(""), std::nullopt);

  v1::NodeMessage message;
  *message.mutable_observations() = Batch(1);
  const std::string bytes = message.SerializeAsString();
  // Cut short, or followed by more fields (a second batch merges into the first): not alone.
  EXPECT_EQ(LoneObservationsField(bytes.substr(0, bytes.size() - 1)), std::nullopt);
  EXPECT_EQ(LoneObservationsField(bytes + bytes), std::nullopt);
  // A length beyond the message.
  EXPECT_EQ(LoneObservationsField(std::string("\x12\x7f\x08", 3)), std::nullopt);
}

}  // namespace
}  // namespace breaker::codec
