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
// Every hold is bounded: a call waits at most `max_hold`, after which it goes on to a gated
// service that ends it with UNAVAILABLE ("still restoring"), and the client retries; Fail()
// (the restore failed) lets every held call on, to be ended with the failure; a client that
// cancels, or whose deadline passes, ends its call as usual.
//
// A standby (breakerd on etcd while another replica leads) has no state to restore yet: it
// makes the closed gate refuse instead of hold (Refuse), so that a node learns at once where
// the leader is and tries its next address; once it leads, it holds calls again (HoldCalls)
// while it restores.

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "common/mutex.h"
#include "grpcpp/support/server_interceptor.h"
#include "service/rpc/admin_service.h"
#include "service/rpc/node_service.h"

namespace breaker::service {

// This class is thread-safe.
class RestoreGate {
 public:
  // Closed. REQUIRES: max_hold > 0.
  explicit RestoreGate(absl::Duration max_hold);
  RestoreGate(const RestoreGate&) = delete;
  RestoreGate& operator=(const RestoreGate&) = delete;
  // Fails the gate if it is still closed (UNAVAILABLE, breakerd is stopping), so that no call
  // stays held. REQUIRES: the server holding the gate's interceptor has not shut down yet
  // (a held call keeps grpc::Server::Shutdown waiting), or the gate is open or failed.
  ~RestoreGate();

  // Install with ServerBuilder::experimental().SetInterceptorCreators.
  // REQUIRES: the gate outlives the server.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> InterceptorFactory();

  // Lets every held call and every later one through to its service. REQUIRES: the gated
  // services serve (GatedNodeService::Serve, GatedAdminService::Serve). Idempotent; after
  // Fail, does nothing.
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
  // none). Sets the trailer on `context` and returns the status. For the gated services.
  grpc::Status Refusal(grpc::CallbackServerContext* context) const;

 private:
  class Interceptor;
  class InterceptorFactoryImpl;
  enum class State { kClosed, kOpen, kFailed };
  struct Held {
    std::chrono::steady_clock::time_point until;
    grpc::experimental::InterceptorBatchMethods* methods;
  };

  // Holds the call whose first batch `methods` is; false when the gate is not closed (the
  // call goes on at once).
  bool Hold(grpc::experimental::InterceptorBatchMethods* methods);
  // Lets every call whose hold ran out go on, until the gate is no longer closed.
  void ExpireLoop();
  absl::Status StatusLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the closed state with `state` and lets every held call go on.
  void Release(State state, const absl::Status& status);

  const absl::Duration max_hold_;
  mutable Mutex mu_;
  CondVar changed_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kClosed;
  // state_ == kOpen, read without the lock; set after the services serve.
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

// breaker.v1.Breaker behind the gate: once it is open, NodeService answers; before (a hold
// that ran out) or after a failure, every call ends with RestoreGate::status().
// This class is thread-safe.
class GatedNodeService final
    : public breaker::v1::Breaker::WithCallbackMethod_Report<
          breaker::v1::Breaker::WithRawCallbackMethod_Connect<breaker::v1::Breaker::Service>> {
 public:
  // REQUIRES: `gate` outlives the service.
  explicit GatedNodeService(const RestoreGate* gate) : gate_(gate) {}

  // REQUIRES: called once, before the gate opens; `service` outlives every call.
  void Serve(NodeService* service) { service_.store(service, std::memory_order_release); }

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Connect(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* Report(grpc::CallbackServerContext* context,
                                   const breaker::v1::ReportRequest* request,
                                   breaker::v1::ReportResponse* response) override;

 private:
  // The service once the gate is open; null otherwise.
  NodeService* Serving() const;

  const RestoreGate* const gate_;
  std::atomic<NodeService*> service_{nullptr};
};

// breaker.v1.Admin behind the gate, as GatedNodeService. This class is thread-safe.
class GatedAdminService final : public breaker::v1::Admin::CallbackService {
 public:
  // REQUIRES: `gate` outlives the service.
  explicit GatedAdminService(const RestoreGate* gate) : gate_(gate) {}

  // REQUIRES: called once, before the gate opens; `service` outlives every call.
  void Serve(AdminService* service) { service_.store(service, std::memory_order_release); }

  grpc::ServerUnaryReactor* GetPolicy(grpc::CallbackServerContext* context,
                                      const breaker::v1::GetPolicyRequest* request,
                                      breaker::v1::Policy* response) override;
  grpc::ServerUnaryReactor* ListBuilders(grpc::CallbackServerContext* context,
                                         const breaker::v1::ListBuildersRequest* request,
                                         breaker::v1::ListBuildersResponse* response) override;
  grpc::ServerUnaryReactor* GetBuilder(grpc::CallbackServerContext* context,
                                       const breaker::v1::GetBuilderRequest* request,
                                       breaker::v1::Builder* response) override;
  grpc::ServerUnaryReactor* ListRelays(grpc::CallbackServerContext* context,
                                       const breaker::v1::ListRelaysRequest* request,
                                       breaker::v1::ListRelaysResponse* response) override;
  grpc::ServerUnaryReactor* ListNodes(grpc::CallbackServerContext* context,
                                      const breaker::v1::ListNodesRequest* request,
                                      breaker::v1::ListNodesResponse* response) override;
  grpc::ServerUnaryReactor* BanBuilder(grpc::CallbackServerContext* context,
                                       const breaker::v1::BanBuilderRequest* request,
                                       breaker::v1::Policy* response) override;
  grpc::ServerUnaryReactor* UnbanBuilder(grpc::CallbackServerContext* context,
                                         const breaker::v1::UnbanBuilderRequest* request,
                                         breaker::v1::Policy* response) override;
  grpc::ServerUnaryReactor* BanRelay(grpc::CallbackServerContext* context,
                                     const breaker::v1::BanRelayRequest* request,
                                     breaker::v1::Policy* response) override;
  grpc::ServerUnaryReactor* UnbanRelay(grpc::CallbackServerContext* context,
                                       const breaker::v1::UnbanRelayRequest* request,
                                       breaker::v1::Policy* response) override;
  grpc::ServerUnaryReactor* SetBuilderTrust(grpc::CallbackServerContext* context,
                                            const breaker::v1::SetBuilderTrustRequest* request,
                                            breaker::v1::Policy* response) override;
  grpc::ServerUnaryReactor* SetRelayTrust(grpc::CallbackServerContext* context,
                                          const breaker::v1::SetRelayTrustRequest* request,
                                          breaker::v1::Policy* response) override;
  grpc::ServerUnaryReactor* Reset(grpc::CallbackServerContext* context,
                                  const breaker::v1::ResetRequest* request,
                                  breaker::v1::Policy* response) override;
  grpc::ServerUnaryReactor* ResetNode(grpc::CallbackServerContext* context,
                                      const breaker::v1::ResetNodeRequest* request,
                                      breaker::v1::Policy* response) override;
  grpc::ServerUnaryReactor* GetConfig(grpc::CallbackServerContext* context,
                                      const breaker::v1::GetConfigRequest* request,
                                      breaker::v1::Config* response) override;
  grpc::ServerUnaryReactor* ReloadConfig(grpc::CallbackServerContext* context,
                                         const breaker::v1::ReloadConfigRequest* request,
                                         breaker::v1::Config* response) override;
  grpc::ServerUnaryReactor* ReloadAccess(grpc::CallbackServerContext* context,
                                         const breaker::v1::ReloadAccessRequest* request,
                                         breaker::v1::ReloadAccessResponse* response) override;
  grpc::ServerWriteReactor<breaker::v1::Policy>* WatchPolicy(
      grpc::CallbackServerContext* context,
      const breaker::v1::WatchPolicyRequest* request) override;

 private:
  // The service once the gate is open; null otherwise.
  AdminService* Serving() const;
  // `method` of the service once the gate is open; otherwise ends the call with the gate's
  // status.
  template <typename Request, typename Response>
  grpc::ServerUnaryReactor* Unary(grpc::ServerUnaryReactor* (AdminService::*method)(
                                      grpc::CallbackServerContext*, const Request*, Response*),
                                  grpc::CallbackServerContext* context, const Request* request,
                                  Response* response);

  const RestoreGate* const gate_;
  std::atomic<AdminService*> service_{nullptr};
};

}  // namespace breaker::service

#endif  // SERVICE_RPC_RESTORE_GATE_H_
