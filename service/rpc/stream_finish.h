#ifndef SERVICE_RPC_STREAM_FINISH_H_
#define SERVICE_RPC_STREAM_FINISH_H_

// When a server stream of gRPC's callback API may write and when it may finish. Such a stream
// writes one message at a time, and must not call Finish while a write is in flight: an end
// decided meanwhile waits for the write, and OnWriteDone finishes. The node streams and the
// policy watches keep their writes this way.

#include <optional>

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

  // A write started. REQUIRES: CanWrite().
  void WriteStarted() { writing_ = true; }

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
  std::optional<grpc::Status> pending_;
};

}  // namespace breaker::service

#endif  // SERVICE_RPC_STREAM_FINISH_H_
