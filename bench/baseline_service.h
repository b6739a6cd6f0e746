#ifndef BENCH_BASELINE_SERVICE_H_
#define BENCH_BASELINE_SERVICE_H_

// The baseline: breaker.v1.Breaker's Connect with nothing behind it. It speaks the same
// protocol as breakerd with messages of the same sizes (taken from a breakerd run) and the
// same write discipline (one write in flight, a policy only once the previous one is
// acknowledged, acknowledgements merged), so that the harness drives both identically; but it
// acknowledges every batch as soon as it has parsed it, and a decisive failure makes it send the
// next snapshot to every stream at once: no validation, engine, journal or disk.

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "bench/server_messages.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "common/mutex.h"
#include "grpcpp/support/slice.h"

namespace breaker::bench {

class BaselineStream;

// One snapshot as every stream sends it: serialized once.
struct Snapshot {
  uint64_t version = 0;
  std::string fleet_id;
  grpc::Slice message;
};

// This class is thread-safe.
class BaselineService final
    : public breaker::v1::Breaker::WithCallbackMethod_Report<
          breaker::v1::Breaker::WithRawCallbackMethod_Connect<breaker::v1::Breaker::Service>> {
 public:
  // Starts at the policy of `messages` whose version is `start_version` (the first one when
  // none is), so that nodes holding it after a restart are not sent it again.
  BaselineService(ServerMessages messages, uint64_t start_version);
  ~BaselineService() override;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Connect(
      grpc::CallbackServerContext* context) override;

  // Ends every stream with UNAVAILABLE, as breakerd does, and refuses new ones.
  void Shutdown();

 private:
  friend class BaselineStream;

  const grpc::Slice& config_message() const { return config_message_; }
  std::shared_ptr<const Snapshot> current() const;
  // Asks the fan-out thread for the next snapshot.
  void RequestFanOut();
  // The fan-out thread: like breakerd's writer thread, it sends each new snapshot to every
  // stream from outside gRPC's callbacks. (Sent from the callback that read the failure, the
  // writes of 5,000 streams were delivered later and later, trial after trial, up to seconds.)
  void FanOutLoop();
  // Moves to the next snapshot and sends it to every stream.
  void FanOut();
  // False when shutting down.
  bool Register(const std::shared_ptr<BaselineStream>& stream);
  void Closed(const BaselineStream* stream);

  const grpc::Slice config_message_;
  // The remaining policies of the breakerd run, in order; past them, the last one with its
  // version counted up.
  const std::vector<std::string> policies_;

  mutable Mutex mu_;
  size_t next_policy_ ABSL_GUARDED_BY(mu_) = 0;
  std::shared_ptr<const Snapshot> current_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<const BaselineStream*, std::weak_ptr<BaselineStream>> streams_
      ABSL_GUARDED_BY(mu_);

  Mutex fan_out_mu_;
  CondVar fan_out_requested_;
  int pending_fan_outs_ ABSL_GUARDED_BY(fan_out_mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(fan_out_mu_) = false;
  std::thread fan_out_thread_;
};

}  // namespace breaker::bench

#endif  // BENCH_BASELINE_SERVICE_H_
