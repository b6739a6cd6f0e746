#include "common/grpc_deadline.h"

#include <unistd.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "gtest/gtest.h"

namespace breaker {
namespace {

constexpr absl::Duration kShort = absl::Milliseconds(300);
// Far longer than any deadline here takes, even on a loaded machine.
constexpr absl::Duration kBound = absl::Seconds(30);

// An address nothing listens on, where a call that waits for its channel to be ready waits
// for good.
std::string Nowhere() { return absl::StrCat("unix-abstract:grpc_deadline_test.", getpid()); }

// A generic unary call on `channel` with `deadline`, which notifies `done` with its status.
struct Call {
  Call(const std::shared_ptr<grpc::Channel>& channel, gpr_timespec deadline) : stub(channel) {
    const grpc::Slice bytes("request");
    request = grpc::ByteBuffer(&bytes, 1);
    context.set_deadline(deadline);
    context.set_wait_for_ready(true);
    stub.UnaryCall(&context, "/test.Test/Never", grpc::StubOptions(), &request, &response,
                   [this](grpc::Status answer) {
                     status = answer;
                     done.Notify();
                   });
  }

  grpc::GenericStub stub;
  grpc::ClientContext context;
  grpc::ByteBuffer request;
  grpc::ByteBuffer response;
  grpc::Status status;
  absl::Notification done;
};

TEST(GrpcDeadlineTest, ACallEndsWhenItsRelativeDeadlinePasses) {
  const absl::Time start = absl::Now();
  Call call(grpc::CreateChannel(Nowhere(), grpc::InsecureChannelCredentials()),
            GrpcDeadlineIn(kShort));
  ASSERT_TRUE(call.done.WaitForNotificationWithTimeout(kBound));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(call.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
      << call.status.error_message();
  EXPECT_GE(took, kShort - absl::Milliseconds(5));  // gRPC rounds to milliseconds
}

TEST(GrpcDeadlineTest, ACallWhoseTimeoutHasPassedEndsAtOnce) {
  for (const absl::Duration timeout : {absl::ZeroDuration(), -absl::Seconds(1)}) {
    Call call(grpc::CreateChannel(Nowhere(), grpc::InsecureChannelCredentials()),
              GrpcDeadlineIn(timeout));
    ASSERT_TRUE(call.done.WaitForNotificationWithTimeout(kBound));
    EXPECT_EQ(call.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  }
}

TEST(GrpcDeadlineTest, AnInfiniteTimeoutIsNoDeadline) {
  const gpr_timespec never = GrpcDeadlineIn(absl::InfiniteDuration());
  EXPECT_EQ(gpr_time_cmp(never, gpr_inf_future(GPR_TIMESPAN)), 0);
  const gpr_timespec long_one = GrpcDeadlineIn(absl::Hours(1));
  EXPECT_EQ(long_one.clock_type, GPR_TIMESPAN);
  EXPECT_EQ(long_one.tv_sec, 3600);
  EXPECT_EQ(long_one.tv_nsec, 0);
}

TEST(GrpcDeadlineTest, ServerShutdownCancelsCallsStillOpenAtItsDeadline) {
  grpc::AsyncGenericService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterAsyncGenericService(&service);
  std::unique_ptr<grpc::ServerCompletionQueue> queue = builder.AddCompletionQueue();
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  grpc::GenericServerContext server_context;
  grpc::GenericServerAsyncReaderWriter stream(&server_context);
  int arrived_tag = 0;
  service.RequestCall(&server_context, &stream, queue.get(), queue.get(), &arrived_tag);

  Call call(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()),
      GrpcDeadlineIn(kBound));
  void* tag = nullptr;
  bool ok = false;
  ASSERT_TRUE(queue->Next(&tag, &ok));
  ASSERT_EQ(tag, &arrived_tag);
  ASSERT_TRUE(ok);

  // The call arrived and is never answered: the server waits out the grace period, then
  // cancels it.
  const absl::Time start = absl::Now();
  server->Shutdown(GrpcDeadlineIn(kShort));
  const absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, kShort - absl::Milliseconds(5));
  EXPECT_LT(took, kBound);
  ASSERT_TRUE(call.done.WaitForNotificationWithTimeout(kBound));
  EXPECT_NE(call.status.error_code(), grpc::StatusCode::OK);
  queue->Shutdown();
  while (queue->Next(&tag, &ok)) {
  }
}

}  // namespace
}  // namespace breaker
