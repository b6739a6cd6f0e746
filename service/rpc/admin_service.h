#ifndef SERVICE_RPC_ADMIN_SERVICE_H_
#define SERVICE_RPC_ADMIN_SERVICE_H_

// breaker.v1.Admin: the operators' inspection and steering API.

#include <cstddef>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "common/mutex.h"
#include "service/fleet.h"
#include "service/rpc/authorizer.h"
#include "service/rpc/served_fleet.h"

namespace breaker::service {

class PolicyWatch;

// This class is thread-safe.
class AdminService final : public breaker::v1::Admin::CallbackService {
 public:
  // What ReloadAccess does once the caller is authorized (breakerd's Server::ReloadAccess).
  using AccessReloader = std::function<absl::StatusOr<breaker::v1::ReloadAccessResponse>()>;
  // Who leads and which replicas stand by (breakerd on etcd), for every page of ListNodes.
  using ReplicationReader = std::function<absl::StatusOr<breaker::v1::Replication>()>;

  // Every call is authorized first: the reads need Permission::kView, the changes
  // Permission::kOperate. `reload_access` answers ReloadAccess; null: FAILED_PRECONDITION.
  // `replication` fills ListNodesResponse.replication; null: left out (SQLite). A WatchPolicy
  // call whose caller has not read a policy breakerd wrote to it within `write_timeout`, by
  // the fleet's clock, is ended with DEADLINE_EXCEEDED at once, and counted
  // (breakerd_write_timeouts_total).
  // REQUIRES: `fleet` and `authorizer` outlive the service and every call.
  AdminService(Fleet* fleet, const Authorizer* authorizer, AccessReloader reload_access = nullptr,
               ReplicationReader replication = nullptr,
               absl::Duration write_timeout = kDefaultWriteTimeout)
      : AdminService(std::make_shared<const ServedFleet>(fleet), authorizer,
                     std::move(reload_access), std::move(replication), write_timeout) {}
  // As above, over the fleet `served` is given once the gate opens: until then every call ends
  // with ServedFleet::Admit's refusal, whoever makes it. REQUIRES: `authorizer`, and the fleet
  // given, outlive the service and every call.
  AdminService(std::shared_ptr<const ServedFleet> served, const Authorizer* authorizer,
               AccessReloader reload_access = nullptr, ReplicationReader replication = nullptr,
               absl::Duration write_timeout = kDefaultWriteTimeout);
  ~AdminService() override;

  static constexpr absl::Duration kDefaultWriteTimeout = absl::Seconds(30);
  // How often, in real time, the watches are checked for their write deadline.
  static constexpr absl::Duration kDeadlineCheckPeriod = absl::Seconds(1);

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

  // What Shutdown does with the operator actions and configuration reloads waiting for the
  // fleet (their write under way).
  enum class Pending {
    kLetFinish,  // answered by the fleet, within the server's grace period (a clean stop)
    kEnd,        // ended with `why` at once, new ones refused with it too (a replica stepping
                 // down: its store takes no more writes, and the server goes away)
  };

  // Ends every WatchPolicy call with `why` (UNAVAILABLE) and refuses new ones, so that the
  // server's shutdown does not wait its grace period for dashboards; and the calls waiting
  // for the fleet as `pending` says. After kEnd nothing is left for the server's shutdown to
  // cancel (CANCELLED, saying nothing): every call ended says why.
  void Shutdown(const absl::Status& why = absl::UnavailableError("breakerd is shutting down"),
                Pending pending = Pending::kLetFinish);

  // Checks the credential of every WatchPolicy call against the access file in force (after a
  // reload) and ends, with PERMISSION_DENIED, each one that lost Permission::kView. Returns
  // how many it ended.
  size_t Reauthorize();

 private:
  friend class PolicyWatch;
  class PendingCall;

  // A watch is done (its OnDone).
  void Forget(PolicyWatch* watch);
  // Ends the watches past their write deadline, every kDeadlineCheckPeriod until stopped.
  void CheckDeadlines();

  // A call about to wait for the fleet, answered once by PendingCall::Answer or by Shutdown;
  // null, and the call answered, after Shutdown(kEnd).
  std::shared_ptr<PendingCall> Track(grpc::ServerUnaryReactor* reactor);
  // A tracked call was answered by the fleet.
  void Forget(PendingCall* call);

  // Runs an operator action through the fleet's journal and answers with the new policy. The
  // action is checked first (codec::CheckAdminAction): one past a bound is refused before
  // anything of it is logged or journaled.
  grpc::ServerUnaryReactor* Steer(grpc::CallbackServerContext* context,
                                  breaker::state::v1::AdminAction action,
                                  breaker::v1::Policy* response);

  // OK when the fleet serves the call and its caller holds `permission`; counts and logs a
  // caller refused.
  absl::Status Authorize(grpc::CallbackServerContext* context, Permission permission) const;
  // REQUIRES: Authorize returned OK for the call.
  Fleet* fleet() const { return served_->fleet(); }

  const std::shared_ptr<const ServedFleet> served_;
  const Authorizer* const authorizer_;
  const AccessReloader reload_access_;
  const ReplicationReader replication_;
  const absl::Duration write_timeout_;
  Mutex mu_;
  CondVar stop_checks_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Not OK once Shutdown ran: what every watch is ended with.
  absl::Status shutdown_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<PolicyWatch*> watches_ ABSL_GUARDED_BY(mu_);
  // Not OK once Shutdown(kEnd) ran: what every call waiting for the fleet is ended with.
  absl::Status pending_ended_ ABSL_GUARDED_BY(mu_);
  // The calls waiting for the fleet; each is owned by the fleet's callback, which forgets it
  // before it goes.
  absl::flat_hash_set<PendingCall*> pending_ ABSL_GUARDED_BY(mu_);
  // Runs CheckDeadlines. Last: it starts once the rest is built.
  std::thread deadline_checks_;
};

}  // namespace breaker::service

#endif  // SERVICE_RPC_ADMIN_SERVICE_H_
