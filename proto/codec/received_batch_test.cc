#include "proto/codec/received_batch.h"

#include <string>

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

TEST(ReceivedBatchTest, ParseKeepsTheBytesAsReceived) {
  // An unknown field, as a newer client might send: kept in the bytes, so the journal holds
  // exactly what arrived.
  const std::string bytes = Batch(3).SerializeAsString() + std::string("\xa0\x06\x01", 3);
  absl::StatusOr<ReceivedBatch> received = ReceivedBatch::Parse(bytes);
  ASSERT_TRUE(received.ok()) << received.status();
  EXPECT_EQ(received->bytes(), bytes);
  EXPECT_EQ(received->size(), 3);
  EXPECT_EQ(received->batch().observations(2).bid_seen().builder_index(), 3u);
  EXPECT_EQ(received->TakeBytes(), bytes);
  EXPECT_TRUE(received->bytes().empty());
  EXPECT_EQ(received->size(), 3);
}

TEST(ReceivedBatchTest, RefusesBytesThatDoNotParse) {
  EXPECT_THAT(ReceivedBatch::Parse(std::string("\x0a\x05\x08", 3)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ReceivedBatchTest, OfSerializesAParsedBatchOnce) {
  const v1::ObservationBatch batch = Batch(2);
  ReceivedBatch received = ReceivedBatch::Of(batch);
  EXPECT_EQ(received.bytes(), batch.SerializeAsString());
  EXPECT_EQ(received.batch().SerializeAsString(), batch.SerializeAsString());
}

TEST(ReceivedBatchTest, KeepFirstCutsTheBytesToo) {
  absl::StatusOr<ReceivedBatch> received = ReceivedBatch::Parse(Batch(5).SerializeAsString());
  ASSERT_TRUE(received.ok());
  received->KeepFirst(2);
  EXPECT_EQ(received->size(), 2);
  EXPECT_EQ(received->bytes(), Batch(2).SerializeAsString());
  received->KeepFirst(2);
  EXPECT_EQ(received->bytes(), Batch(2).SerializeAsString());
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
