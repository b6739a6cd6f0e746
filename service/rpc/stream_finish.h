#ifndef SERVICE_RPC_STREAM_FINISH_H_
#define SERVICE_RPC_STREAM_FINISH_H_

// When a server stream of gRPC's callback API may write and when it may finish. Such a stream
// writes one message at a time, and must not call Finish while a write is in flight: an end
// decided meanwhile waits for the write, and OnWriteDone finishes. The node streams and the
// policy watches keep their writes this way.
//
// A write waits for the peer to read: one that stopped reading would hold it, and the stream,
// forever. So each write's start is kept, and a write overdue is abandoned: the call is
// cancelled (CallCancel), the write fails, and OnWriteDone finishes.

#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "grpc/grpc.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/status.h"

namespace breaker::service {

// Not thread-safe: the reactor keeps it under its own mutex.
class StreamFinish {
 public:
  // Whether a write may start: none in flight, and the stream neither ended nor ending.
  bool CanWrite() const { return !finished_ && !writing_ && !pending_.has_value(); }
  // Whether the stream ended, or an end waits for the write in flight: read no more.
  bool Ending() const { return finished_ || pending_.has_value(); }
  bool Writing() const { return writing_; }

  // A write started at `now` (a monotonic clock reading). REQUIRES: CanWrite().
  void WriteStarted(absl::Duration now) {
    writing_ = true;
    write_started_ = now;
  }

  // Whether the write in flight started `timeout` or more before `now`, and was not abandoned
  // yet: then it is abandoned, the stream is to end with `status` (unless an end was asked for
  // already), and the caller cancels the call, which fails the write. Returns true once: no
  // write starts after it.
  bool AbandonOverdueWrite(absl::Duration now, absl::Duration timeout, const grpc::Status& status) {
    if (!writing_ || abandoned_ || now - write_started_ < timeout) return false;
    abandoned_ = true;
    // Should the write complete before the cancellation lands, the stream ends with `status`.
    if (!finished_ && !pending_.has_value()) pending_ = status;
    return true;
  }

  // The write in flight ended (`ok`: it was sent). Returns the status to Finish with now: the
  // end that waited for it, or OK when the write failed (the call is broken; the status goes
  // nowhere). nullopt: the stream goes on.
  std::optional<grpc::Status> WriteDone(bool ok) {
    writing_ = false;
    if (!ok) return Finished(grpc::Status::OK);
    if (pending_.has_value()) return Finished(*pending_);
    return std::nullopt;
  }

  // The stream is to end with `status`. Returns it when Finish may be called now; nullopt
  // when it ended already, or when a write is in flight (WriteDone returns the first end
  // asked for).
  std::optional<grpc::Status> End(const grpc::Status& status) {
    if (finished_) return std::nullopt;
    if (writing_) {
      if (!pending_.has_value()) pending_ = status;
      return std::nullopt;
    }
    return Finished(status);
  }

 private:
  // By value: `status` may be the pending end, which this clears.
  grpc::Status Finished(grpc::Status status) {
    finished_ = true;
    pending_.reset();
    return status;
  }

  bool finished_ = false;
  bool writing_ = false;
  bool abandoned_ = false;
  absl::Duration write_started_;
  std::optional<grpc::Status> pending_;
};

// Cancels a server call from outside its reactions, with a status of breakerd's choosing, at
// once: unlike Finish, whatever is in flight, a write the peer does not read included, fails
// (OnWriteDone(false)), and OnDone follows. Thread-safe.
//
// The reactor's own mutex is never held while cancelling: gRPC may run the call's reactions
// on other threads meanwhile, and they take it. Only this object's mutex is, so that the
// context, which goes away after OnDone, is alive for the cancellation; gRPC runs no reaction
// of a streaming call on the stack of the thread that cancels it (they are not inlineable),
// so OnDone cannot wait for it there.
class CallCancel {
 public:
  // REQUIRES: `context` is alive until Done().
  explicit CallCancel(grpc::CallbackServerContext* context) : context_(context) {}

  // The client receives `status`. Does nothing once Done() ran.
  void Cancel(const grpc::Status& status) {
    const std::string message = status.error_message();
    MutexLock lock(&mu_);
    if (context_ == nullptr) return;
    grpc_call_cancel_with_status(context_->c_call(),
                                 static_cast<grpc_status_code>(status.error_code()),
                                 message.c_str(), nullptr);
  }

  // The reactor's OnDone calls this first: the call and its context are about to go.
  void Done() {
    MutexLock lock(&mu_);
    context_ = nullptr;
  }

 private:
  Mutex mu_;
  grpc::CallbackServerContext* context_ ABSL_GUARDED_BY(mu_);
};

}  // namespace breaker::service

#endif  // SERVICE_RPC_STREAM_FINISH_H_
