#ifndef CTL_POLICY_WATCH_H_
#define CTL_POLICY_WATCH_H_

// One Admin.WatchPolicy call, read from the caller's thread. Through gRPC's callback API (see
// unary_call.h for why not the blocking one): the reactor queues what arrives on gRPC's
// threads, and Next() hands it over.

#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "common/mutex.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/client_callback.h"

namespace breaker::ctl {

class PolicyWatch : public grpc::ClientReadReactor<breaker::v1::Policy> {
 public:
  // Starts the call. REQUIRES: `stub` outlives this object.
  explicit PolicyWatch(breaker::v1::Admin::Stub& stub);

  // Cancels the call if it still runs, and waits until gRPC is done with it.
  ~PolicyWatch() override;

  PolicyWatch(const PolicyWatch&) = delete;
  PolicyWatch& operator=(const PolicyWatch&) = delete;

  // The next policy received, in order. Waits until one arrives, the call ends (its error; an
  // end without error is UNAVAILABLE, since breakerd ends a watch only when it stops), or
  // `timeout` passes (DEADLINE_EXCEEDED; the call goes on).
  absl::StatusOr<breaker::v1::Policy> Next(absl::Duration timeout = absl::InfiniteDuration());

 private:
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

  grpc::ClientContext context_;
  const breaker::v1::WatchPolicyRequest request_;
  // Filled by gRPC between StartRead and OnReadDone; only the reactor touches it.
  breaker::v1::Policy incoming_;

  Mutex mu_;
  // Signalled when received_ or done_ change.
  CondVar changed_;
  std::deque<breaker::v1::Policy> received_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace breaker::ctl

#endif  // CTL_POLICY_WATCH_H_
