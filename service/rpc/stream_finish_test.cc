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
  stream.WriteStarted(absl::ZeroDuration());
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
  stream.WriteStarted(absl::ZeroDuration());
  std::optional<grpc::Status> end = stream.WriteDone(/*ok=*/false);
  ASSERT_TRUE(end.has_value());
  EXPECT_TRUE(end->ok());
  EXPECT_FALSE(stream.CanWrite());
}

TEST(StreamFinishTest, ASentWriteLetsTheNextOneStart) {
  StreamFinish stream;
  stream.WriteStarted(absl::ZeroDuration());
  EXPECT_TRUE(stream.Writing());
  EXPECT_FALSE(stream.WriteDone(/*ok=*/true).has_value());
  EXPECT_FALSE(stream.Writing());
  EXPECT_TRUE(stream.CanWrite());
  EXPECT_FALSE(stream.Ending());
}

TEST(StreamFinishTest, AWriteOverdueIsAbandonedOnceAndTheStreamEnds) {
  const grpc::Status stalled(grpc::StatusCode::DEADLINE_EXCEEDED, "not read");
  StreamFinish stream;
  stream.WriteStarted(absl::Seconds(100));
  EXPECT_FALSE(stream.AbandonOverdueWrite(absl::Seconds(129), absl::Seconds(30), stalled));
  EXPECT_FALSE(stream.Ending());
  EXPECT_TRUE(stream.AbandonOverdueWrite(absl::Seconds(130), absl::Seconds(30), stalled));
  EXPECT_FALSE(stream.AbandonOverdueWrite(absl::Seconds(200), absl::Seconds(30), stalled));
  EXPECT_TRUE(stream.Ending());
  EXPECT_FALSE(stream.CanWrite());
  // Had the write ended well before the cancellation, the stream would end with that status.
  std::optional<grpc::Status> end = stream.WriteDone(/*ok=*/true);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
}

TEST(StreamFinishTest, AnEndAskedForBeforeTheWriteIsOverdueIsKept) {
  StreamFinish stream;
  stream.WriteStarted(absl::ZeroDuration());
  EXPECT_FALSE(stream.End(kShutdown).has_value());
  EXPECT_TRUE(stream.AbandonOverdueWrite(absl::Seconds(30), absl::Seconds(30),
                                         grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "")));
  std::optional<grpc::Status> end = stream.WriteDone(/*ok=*/true);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST(StreamFinishTest, NoWriteInFlightIsNeverOverdue) {
  StreamFinish stream;
  EXPECT_FALSE(stream.AbandonOverdueWrite(absl::Hours(1), absl::Seconds(30), kShutdown));
  stream.WriteStarted(absl::ZeroDuration());
  EXPECT_FALSE(stream.WriteDone(/*ok=*/true).has_value());
  EXPECT_FALSE(stream.AbandonOverdueWrite(absl::Hours(1), absl::Seconds(30), kShutdown));
  EXPECT_TRUE(stream.CanWrite());
}

}  // namespace
}  // namespace breaker::service
