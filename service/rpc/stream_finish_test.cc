#include "service/rpc/stream_finish.h"

#include "gtest/gtest.h"

namespace breaker::service {
namespace {

const grpc::Status kShutdown(grpc::StatusCode::UNAVAILABLE, "breakerd is stopping");
const grpc::Status kRefused(grpc::StatusCode::INVALID_ARGUMENT, "bad message");

TEST(StreamFinishTest, EndsAtOnceWithNoWriteInFlight) {
  StreamFinish stream;
  EXPECT_TRUE(stream.CanWrite());
  std::optional<grpc::Status> end = stream.End(kShutdown);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(stream.Ending());
  EXPECT_FALSE(stream.CanWrite());
  EXPECT_FALSE(stream.End(kRefused).has_value());  // once only
}

TEST(StreamFinishTest, AnEndDuringAWriteWaitsForItAndTheFirstEndWins) {
  StreamFinish stream;
  stream.WriteStarted();
  EXPECT_FALSE(stream.CanWrite());
  EXPECT_FALSE(stream.End(kRefused).has_value());
  EXPECT_FALSE(stream.End(kShutdown).has_value());
  EXPECT_TRUE(stream.Ending());
  std::optional<grpc::Status> end = stream.WriteDone(/*ok=*/true);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(end->error_message(), "bad message");
  EXPECT_FALSE(stream.End(kShutdown).has_value());
}

TEST(StreamFinishTest, AFailedWriteEndsTheStream) {
  StreamFinish stream;
  stream.WriteStarted();
  std::optional<grpc::Status> end = stream.WriteDone(/*ok=*/false);
  ASSERT_TRUE(end.has_value());
  EXPECT_TRUE(end->ok());
  EXPECT_FALSE(stream.CanWrite());
}

TEST(StreamFinishTest, ASentWriteLetsTheNextOneStart) {
  StreamFinish stream;
  stream.WriteStarted();
  EXPECT_TRUE(stream.Writing());
  EXPECT_FALSE(stream.WriteDone(/*ok=*/true).has_value());
  EXPECT_FALSE(stream.Writing());
  EXPECT_TRUE(stream.CanWrite());
  EXPECT_FALSE(stream.Ending());
}

}  // namespace
}  // namespace breaker::service
