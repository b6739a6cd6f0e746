#include "service/rpc/admin_service.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/mutex.h"
#include "glog/logging.h"
#include "proto/codec/request_checks.h"
#include "service/rpc/stream_finish.h"

namespace breaker::service {

namespace v1 = ::breaker::v1;

namespace {

grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context, const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

}  // namespace

absl::Status AdminService::Authorize(grpc::CallbackServerContext* context,
                                     Permission permission) const {
  // Before the caller is: without the fleet no one is answered, and a standby's refusal names
  // the leader to anyone.
  if (absl::Status admitted = served_->Admit(context); !admitted.ok()) return admitted;
  absl::StatusOr<Principal> caller = authorizer_->Authorize(*context, permission);
  if (caller.ok()) return absl::OkStatus();
  fleet()->metrics().Refused(RefusedInput::kAdmin, caller.status().code());
  LOG(WARNING) << "admin call from " << context->peer() << " refused: " << caller.status();
  return caller.status();
}

// A WatchPolicy call: the current policy, then each newer one. One write in flight; a slow
// reader gets the newest version next and skips those in between, and one that stops reading
// is ended at its write deadline (EndIfWriteOverdue).
class PolicyWatch : public grpc::ServerWriteReactor<v1::Policy>, public PolicyListener {
 public:
  // `credentials`: the caller's, authorized for Permission::kView.
  PolicyWatch(AdminService* service, Fleet* fleet, grpc::CallbackServerContext* context,
              Credentials credentials)
      : service_(service),
        fleet_(fleet),
        peer_(context->peer()),
        credentials_(std::move(credentials)),
        cancel_(context) {
    fleet_->Subscribe(this);
    OnPolicy(fleet_->policy());
  }

  void OnPolicy(std::shared_ptr<const PublishedPolicy> policy) override {
    MutexLock lock(&mu_);
    // The constructor's fleet_->policy() can arrive after a newer publication to this (just
    // subscribed) listener; never step back to it. (A new fleet id publishes a version again.)
    if (latest_ != nullptr && latest_->generation >= policy->generation) return;
    latest_ = std::move(policy);
    MaybeWriteLocked();
  }

  // Ends the call with PERMISSION_DENIED when the caller's credential no longer gives read
  // access under the access file in force. Returns whether it did.
  bool Reauthorize(const Authorizer& authorizer) {
    absl::StatusOr<Principal> caller = authorizer.Authorize(credentials_, Permission::kView);
    if (caller.ok()) return false;
    {
      MutexLock lock(&mu_);
      if (stream_.Ending()) return false;
    }
    const std::string message =
        absl::StrCat("breakerd's access file changed: ", caller.status().message());
    LOG(WARNING) << "policy watch ended: " << message;
    fleet_->metrics().Refused(RefusedInput::kAdmin, absl::StatusCode::kPermissionDenied);
    End(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, message));
    return true;
  }

  // Ends the call at once, counted, when the write in flight started `timeout` or more before
  // `now` (the fleet clock's monotonic reading): the caller stopped reading.
  void EndIfWriteOverdue(absl::Duration now, absl::Duration timeout) {
    const grpc::Status status(
        grpc::StatusCode::DEADLINE_EXCEEDED,
        absl::StrCat("breakerd's policy was not read within ", absl::FormatDuration(timeout),
                     ": the caller stopped reading its WatchPolicy call (a watch must read it "
                     "continuously); call again"));
    {
      MutexLock lock(&mu_);
      if (!stream_.AbandonOverdueWrite(now, timeout, status)) return;
    }
    LOG(WARNING) << "policy watch from " << peer_ << " ended: " << status.error_message();
    fleet_->metrics().WriteTimedOut(StreamRpc::kWatchPolicy);
    // Without the watch's lock: OnWriteDone(false), which finishes, may run meanwhile.
    cancel_.Cancel(status);
  }

  // Ends the call with `status` (shutting down), after the write in flight.
  void End(const grpc::Status& status) {
    MutexLock lock(&mu_);
    if (std::optional<grpc::Status> end = stream_.End(status)) Finish(*end);
  }

 private:
  void OnWriteDone(bool ok) override {
    MutexLock lock(&mu_);
    if (std::optional<grpc::Status> end = stream_.WriteDone(ok)) {
      Finish(*end);
      return;
    }
    MaybeWriteLocked();
  }

  void OnCancel() override {
    MutexLock lock(&mu_);
    // A write in flight ends with OnWriteDone(false), which finishes.
    if (std::optional<grpc::Status> end = stream_.End(grpc::Status::CANCELLED)) Finish(*end);
  }

  void OnDone() override {
    cancel_.Done();
    service_->Forget(this);
    fleet_->Unsubscribe(this);
    delete this;
  }

  void MaybeWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!stream_.CanWrite() || latest_ == nullptr || latest_->generation == sent_) {
      return;
    }
    sent_ = latest_->generation;
    current_ = latest_;
    stream_.WriteStarted(fleet_->clock().Monotonic());
    StartWrite(&current_->proto);
  }

  AdminService* const service_;
  Fleet* const fleet_;
  const std::string peer_;
  const Credentials credentials_;
  // Ends the call at once, a write in flight included (EndIfWriteOverdue).
  CallCancel cancel_;
  Mutex mu_;
  StreamFinish stream_ ABSL_GUARDED_BY(mu_);
  // The generation (PublishedPolicy) of the publication sent last.
  uint64_t sent_ ABSL_GUARDED_BY(mu_) = 0;
  std::shared_ptr<const PublishedPolicy> latest_ ABSL_GUARDED_BY(mu_);
  // Keeps the message being written alive until OnWriteDone.
  std::shared_ptr<const PublishedPolicy> current_ ABSL_GUARDED_BY(mu_);
};

// A call waiting for the fleet: answered once, by the fleet or by AdminService::Shutdown,
// whichever comes first; the other finds it answered and leaves the call (and its response,
// which may be gone with it) alone.
class AdminService::PendingCall {
 public:
  explicit PendingCall(grpc::ServerUnaryReactor* reactor) : reactor_(reactor) {}

  // Unless answered already: runs `answer`, which fills the response, and finishes the call
  // with the status it returns.
  void Answer(const std::function<grpc::Status()>& answer) {
    MutexLock lock(&mu_);
    if (answered_) return;
    answered_ = true;
    reactor_->Finish(answer());
  }

 private:
  grpc::ServerUnaryReactor* const reactor_;
  Mutex mu_;
  bool answered_ ABSL_GUARDED_BY(mu_) = false;
};

std::shared_ptr<AdminService::PendingCall> AdminService::Track(grpc::ServerUnaryReactor* reactor) {
  MutexLock lock(&mu_);
  if (!pending_ended_.ok()) {
    reactor->Finish(ToGrpcStatus(pending_ended_));
    return nullptr;
  }
  auto call = std::make_shared<PendingCall>(reactor);
  pending_.insert(call.get());
  return call;
}

void AdminService::Forget(PendingCall* call) {
  MutexLock lock(&mu_);
  pending_.erase(call);
}

grpc::ServerUnaryReactor* AdminService::GetPolicy(grpc::CallbackServerContext* context,
                                                  const v1::GetPolicyRequest*,
                                                  v1::Policy* response) {
  if (absl::Status allowed = Authorize(context, Permission::kView); !allowed.ok()) {
    return Answer(context, ToGrpcStatus(allowed));
  }
  *response = fleet()->policy()->proto;
  return Answer(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::ListBuilders(grpc::CallbackServerContext* context,
                                                     const v1::ListBuildersRequest* request,
                                                     v1::ListBuildersResponse* response) {
  if (absl::Status allowed = Authorize(context, Permission::kView); !allowed.ok()) {
    return Answer(context, ToGrpcStatus(allowed));
  }
  absl::StatusOr<v1::ListBuildersResponse> page = fleet()->ListBuilders(*request);
  if (!page.ok()) return Answer(context, ToGrpcStatus(page.status()));
  *response = *std::move(page);
  return Answer(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::GetBuilder(grpc::CallbackServerContext* context,
                                                   const v1::GetBuilderRequest* request,
                                                   v1::Builder* response) {
  if (absl::Status allowed = Authorize(context, Permission::kView); !allowed.ok()) {
    return Answer(context, ToGrpcStatus(allowed));
  }
  absl::StatusOr<v1::Builder> builder = fleet()->GetBuilder(request->builder_index());
  if (!builder.ok()) return Answer(context, ToGrpcStatus(builder.status()));
  *response = *std::move(builder);
  return Answer(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::ListRelays(grpc::CallbackServerContext* context,
                                                   const v1::ListRelaysRequest*,
                                                   v1::ListRelaysResponse* response) {
  if (absl::Status allowed = Authorize(context, Permission::kView); !allowed.ok()) {
    return Answer(context, ToGrpcStatus(allowed));
  }
  *response = fleet()->ListRelays();
  return Answer(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::ListNodes(grpc::CallbackServerContext* context,
                                                  const v1::ListNodesRequest* request,
                                                  v1::ListNodesResponse* response) {
  if (absl::Status allowed = Authorize(context, Permission::kView); !allowed.ok()) {
    return Answer(context, ToGrpcStatus(allowed));
  }
  absl::StatusOr<v1::ListNodesResponse> page = fleet()->ListNodes(*request);
  if (!page.ok()) return Answer(context, ToGrpcStatus(page.status()));
  *response = *std::move(page);
  if (replication_) {
    // The nodes are worth answering without it: an operator asks while etcd struggles.
    absl::StatusOr<v1::Replication> replication = replication_();
    if (replication.ok()) {
      *response->mutable_replication() = *std::move(replication);
    } else {
      LOG(WARNING) << "ListNodes answered without the replicas: " << replication.status();
    }
  }
  return Answer(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::Steer(grpc::CallbackServerContext* context,
                                              state::v1::AdminAction action, v1::Policy* response) {
  if (absl::Status allowed = Authorize(context, Permission::kOperate); !allowed.ok()) {
    return Answer(context, ToGrpcStatus(allowed));
  }
  if (absl::Status bounded = codec::CheckAdminAction(action); !bounded.ok()) {
    fleet()->metrics().Refused(RefusedInput::kAdmin, bounded.code());
    return Answer(context, ToGrpcStatus(bounded));
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  LOG(INFO) << "operator action from " << context->peer() << ": " << action.ShortDebugString();
  std::shared_ptr<PendingCall> call = Track(reactor);
  if (call == nullptr) return reactor;
  fleet()->SubmitAdmin(
      std::move(action),
      [this, call, response](absl::StatusOr<std::shared_ptr<const PublishedPolicy>> policy) {
        if (!policy.ok()) LOG(WARNING) << "operator action refused: " << policy.status();
        call->Answer([&] {
          if (!policy.ok()) return ToGrpcStatus(policy.status());
          *response = (*policy)->proto;
          return grpc::Status::OK;
        });
        Forget(call.get());
      });
  return reactor;
}

grpc::ServerUnaryReactor* AdminService::BanBuilder(grpc::CallbackServerContext* context,
                                                   const v1::BanBuilderRequest* request,
                                                   v1::Policy* response) {
  state::v1::AdminAction action;
  *action.mutable_ban() = *request;
  return Steer(context, std::move(action), response);
}

grpc::ServerUnaryReactor* AdminService::UnbanBuilder(grpc::CallbackServerContext* context,
                                                     const v1::UnbanBuilderRequest* request,
                                                     v1::Policy* response) {
  state::v1::AdminAction action;
  *action.mutable_unban() = *request;
  return Steer(context, std::move(action), response);
}

grpc::ServerUnaryReactor* AdminService::BanRelay(grpc::CallbackServerContext* context,
                                                 const v1::BanRelayRequest* request,
                                                 v1::Policy* response) {
  state::v1::AdminAction action;
  *action.mutable_ban_relay() = *request;
  return Steer(context, std::move(action), response);
}

grpc::ServerUnaryReactor* AdminService::UnbanRelay(grpc::CallbackServerContext* context,
                                                   const v1::UnbanRelayRequest* request,
                                                   v1::Policy* response) {
  state::v1::AdminAction action;
  *action.mutable_unban_relay() = *request;
  return Steer(context, std::move(action), response);
}

grpc::ServerUnaryReactor* AdminService::SetBuilderTrust(grpc::CallbackServerContext* context,
                                                        const v1::SetBuilderTrustRequest* request,
                                                        v1::Policy* response) {
  state::v1::AdminAction action;
  *action.mutable_builder_trust() = *request;
  return Steer(context, std::move(action), response);
}

grpc::ServerUnaryReactor* AdminService::SetRelayTrust(grpc::CallbackServerContext* context,
                                                      const v1::SetRelayTrustRequest* request,
                                                      v1::Policy* response) {
  state::v1::AdminAction action;
  *action.mutable_relay_trust() = *request;
  return Steer(context, std::move(action), response);
}

grpc::ServerUnaryReactor* AdminService::Reset(grpc::CallbackServerContext* context,
                                              const v1::ResetRequest* request,
                                              v1::Policy* response) {
  state::v1::AdminAction action;
  *action.mutable_reset() = *request;
  return Steer(context, std::move(action), response);
}

grpc::ServerUnaryReactor* AdminService::ResetNode(grpc::CallbackServerContext* context,
                                                  const v1::ResetNodeRequest* request,
                                                  v1::Policy* response) {
  state::v1::AdminAction action;
  *action.mutable_reset_node() = *request;
  return Steer(context, std::move(action), response);
}

grpc::ServerUnaryReactor* AdminService::GetConfig(grpc::CallbackServerContext* context,
                                                  const v1::GetConfigRequest*,
                                                  v1::Config* response) {
  if (absl::Status allowed = Authorize(context, Permission::kView); !allowed.ok()) {
    return Answer(context, ToGrpcStatus(allowed));
  }
  *response = fleet()->EffectiveConfig();
  return Answer(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::ReloadConfig(grpc::CallbackServerContext* context,
                                                     const v1::ReloadConfigRequest*,
                                                     v1::Config* response) {
  if (absl::Status allowed = Authorize(context, Permission::kOperate); !allowed.ok()) {
    return Answer(context, ToGrpcStatus(allowed));
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  LOG(INFO) << "configuration reload requested by " << context->peer();
  std::shared_ptr<PendingCall> call = Track(reactor);
  if (call == nullptr) return reactor;
  fleet()->ReloadConfig([this, call, response](absl::StatusOr<v1::Config> config) {
    call->Answer([&] {
      if (!config.ok()) return ToGrpcStatus(config.status());
      *response = *std::move(config);
      return grpc::Status::OK;
    });
    Forget(call.get());
  });
  return reactor;
}

grpc::ServerWriteReactor<v1::Policy>* AdminService::WatchPolicy(
    grpc::CallbackServerContext* context, const v1::WatchPolicyRequest*) {
  if (absl::Status allowed = Authorize(context, Permission::kView); !allowed.ok()) {
    return new FinishedCall<grpc::ServerWriteReactor<v1::Policy>>(ToGrpcStatus(allowed));
  }
  auto* watch = new PolicyWatch(this, fleet(), context,
                                Authorizer::CredentialsOf(*context).value_or(Credentials{}));
  MutexLock lock(&mu_);
  if (!shutdown_.ok()) {
    watch->End(ToGrpcStatus(shutdown_));
  } else {
    watches_.insert(watch);
  }
  return watch;
}

grpc::ServerUnaryReactor* AdminService::ReloadAccess(grpc::CallbackServerContext* context,
                                                     const v1::ReloadAccessRequest*,
                                                     v1::ReloadAccessResponse* response) {
  if (absl::Status allowed = Authorize(context, Permission::kOperate); !allowed.ok()) {
    return Answer(context, ToGrpcStatus(allowed));
  }
  LOG(INFO) << "access file reload requested by " << context->peer();
  absl::StatusOr<v1::ReloadAccessResponse> reloaded =
      reload_access_ != nullptr
          ? reload_access_()
          : absl::FailedPreconditionError("this server cannot reload its access file");
  if (!reloaded.ok()) return Answer(context, ToGrpcStatus(reloaded.status()));
  *response = *std::move(reloaded);
  return Answer(context, grpc::Status::OK);
}

size_t AdminService::Reauthorize() {
  // Under mu_: a watch is deleted only after Forget, which waits for it.
  MutexLock lock(&mu_);
  size_t ended = 0;
  for (PolicyWatch* watch : watches_) ended += watch->Reauthorize(*authorizer_) ? 1 : 0;
  return ended;
}

AdminService::AdminService(std::shared_ptr<const ServedFleet> served, const Authorizer* authorizer,
                           AccessReloader reload_access, ReplicationReader replication,
                           absl::Duration write_timeout)
    : served_(std::move(served)),
      authorizer_(authorizer),
      reload_access_(std::move(reload_access)),
      replication_(std::move(replication)),
      write_timeout_(write_timeout),
      deadline_checks_([this] { CheckDeadlines(); }) {}

AdminService::~AdminService() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  stop_checks_.SignalAll();
  deadline_checks_.join();
}

void AdminService::CheckDeadlines() {
  MutexLock lock(&mu_);
  while (true) {
    if (!stopping_) stop_checks_.WaitFor(&mu_, kDeadlineCheckPeriod);
    if (stopping_) return;
    // A watch is only opened once the fleet is served.
    if (watches_.empty()) continue;
    const absl::Duration now = fleet()->clock().Monotonic();
    // Under mu_: a watch is deleted only after Forget, which waits for it. Cancelling runs none
    // of the call's reactions (OnDone, which forgets it) on this thread.
    for (PolicyWatch* watch : watches_) watch->EndIfWriteOverdue(now, write_timeout_);
  }
}

void AdminService::Forget(PolicyWatch* watch) {
  MutexLock lock(&mu_);
  watches_.erase(watch);
}

void AdminService::Shutdown(const absl::Status& why, Pending pending) {
  // Under mu_: a watch, and a pending call, is deleted only after Forget, which waits for it.
  MutexLock lock(&mu_);
  shutdown_ = why;
  for (PolicyWatch* watch : watches_) watch->End(ToGrpcStatus(why));
  if (pending == Pending::kLetFinish) return;
  pending_ended_ = why;
  for (PendingCall* call : pending_) call->Answer([&] { return ToGrpcStatus(why); });
}

}  // namespace breaker::service
