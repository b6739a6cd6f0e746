#ifndef SERVICE_RPC_RESTORE_GATE_H_
#define SERVICE_RPC_RESTORE_GATE_H_

// What holds breakerd's calls while it restores its state. breakerd binds its address first
// and restores after, so that a node reconnecting during a restart finds the server listening;
// the gate keeps each call to breakerd's own services (breaker.v1.Breaker, breaker.v1.Admin)
// waiting before its handler runs, instead of refusing it, which would cost the node a backoff
// (1 s, then 1.6 s, ...). Health and reflection pass at once: health says NOT_SERVING meanwhile.
// Once the state is restored, Open() lets every held call on to its service as if it had just
// arrived, and a node's hello is answered then.
//
// Every hold is bounded: a call waits at most `max_hold` (by the injected clock's
// Monotonic()), after which it goes on to its service, which has no fleet yet and ends it with
// UNAVAILABLE ("still restoring"; see ServedFleet), and the client retries; Fail() (the restore
// failed) lets every held call on, to be ended with the failure; a client that cancels, or
// whose deadline passes, ends its call as usual.
//
// A standby (breakerd on etcd while another replica leads) has no state to restore yet: it
// makes the closed gate refuse instead of hold (Refuse), so that a node learns at once where
// the leader is and tries its next address; once it leads, it holds calls again (HoldCalls)
// while it restores.

#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_interceptor.h"

namespace breaker::service {

// This class is thread-safe.
class RestoreGate {
 public:
  // Closed. REQUIRES: max_hold > 0; `clock` outlives the gate.
  RestoreGate(const Clock& clock, absl::Duration max_hold);
  RestoreGate(const RestoreGate&) = delete;
  RestoreGate& operator=(const RestoreGate&) = delete;
  // Fails the gate if it is still closed (UNAVAILABLE, breakerd is stopping), so that no call
  // stays held. REQUIRES: the server holding the gate's interceptor has not shut down yet
  // (a held call keeps grpc::Server::Shutdown waiting), or the gate is open or failed.
  ~RestoreGate();

  // Install with ServerBuilder::experimental().SetInterceptorCreators.
  // REQUIRES: the gate outlives the server.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> InterceptorFactory();

  // Lets every held call and every later one through to its service. REQUIRES: the services
  // have their fleet (ServedFleet::Bind). Idempotent; after Fail, does nothing.
  void Open();
  // Lets every held call and every later one through, to be ended with `status` (not OK).
  // After Open or Fail, does nothing.
  void Fail(const absl::Status& status);

  // While closed: lets every held call and every later one through at once, to be ended with
  // `status` (not OK), until HoldCalls. Replaces an earlier refusal. `leader`, when not empty,
  // is the leader's address, sent with each refusal as the trailing metadata kLeaderTrailer.
  void Refuse(const absl::Status& status, std::string leader = "");
  // While closed: holds the calls that arrive from now on again, ending Refuse.
  void HoldCalls();

  // Whether Open was called (and Fail before it was not).
  bool open() const { return open_.load(std::memory_order_acquire); }
  // What a call that passed the gate gets: OK once open; the failure after Fail; while closed,
  // the refusal, or UNAVAILABLE ("still restoring") when its hold ran out.
  absl::Status status() const;

  // Calls held now (tests, logs).
  int held() const;

  // What a call that passed the closed gate is ended with, and the leader it names (empty:
  // none). Sets the trailer on `context` and returns the status. For ServedFleet.
  absl::Status Refusal(grpc::CallbackServerContext* context) const;

 private:
  class Interceptor;
  class InterceptorFactoryImpl;
  enum class State { kClosed, kOpen, kFailed };
  struct Held {
    absl::Duration until;  // on clock_.Monotonic()
    grpc::experimental::InterceptorBatchMethods* methods;
  };

  // The longest the expirer waits before it reads the clock again: a test's clock moves
  // without telling it.
  static constexpr absl::Duration kMaxWait = absl::Milliseconds(100);

  // Holds the call whose first batch `methods` is; false when the gate is not closed (the
  // call goes on at once).
  bool Hold(grpc::experimental::InterceptorBatchMethods* methods);
  // Lets every call whose hold ran out go on, until the gate is no longer closed.
  void ExpireLoop();
  absl::Status StatusLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the closed state with `state` and lets every held call go on.
  void Release(State state, const absl::Status& status);

  const Clock& clock_;
  const absl::Duration max_hold_;
  mutable Mutex mu_;
  CondVar changed_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kClosed;
  // state_ == kOpen, read without the lock; set after the services have their fleet.
  std::atomic<bool> open_{false};
  // state_ == kClosed, read without the lock: once it is not, calls need no interceptor.
  std::atomic<bool> closed_{true};
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  // While closed: not OK when calls are refused with it rather than held, and the leader named.
  absl::Status refusal_ ABSL_GUARDED_BY(mu_);
  std::string leader_ ABSL_GUARDED_BY(mu_);
  // In arrival order, which is also the order of their `until`.
  std::deque<Held> held_ ABSL_GUARDED_BY(mu_);
  std::thread expirer_;
};

}  // namespace breaker::service

#endif  // SERVICE_RPC_RESTORE_GATE_H_
