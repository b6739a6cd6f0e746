#include "service/rpc/restore_gate.h"

#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/replica_trailer.h"
#include "grpcpp/server_context.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;
using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::InterceptorBatchMethods;

// The services the gate holds: breakerd's own, which need the state. Health and reflection do
// not.
bool IsGated(absl::string_view method) {
  return absl::StartsWith(method, "/breaker.v1.Breaker/") ||
         absl::StartsWith(method, "/breaker.v1.Admin/");
}

template <typename Reactor>
class Refused : public Reactor {
 public:
  explicit Refused(const grpc::Status& status) { this->Finish(status); }
  void OnDone() override { delete this; }
};

grpc::ServerUnaryReactor* RefuseUnary(grpc::CallbackServerContext* context,
                                      const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

}  // namespace

// One call's: holds its first batch (the client's initial metadata, and a unary call's
// request) while the gate is closed; lets every other batch through.
class RestoreGate::Interceptor : public grpc::experimental::Interceptor {
 public:
  explicit Interceptor(RestoreGate* gate) : gate_(gate) {}

  void Intercept(InterceptorBatchMethods* methods) override {
    if (first_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      first_ = false;
      // Held: the gate calls Proceed when it opens, fails, or the hold runs out.
      if (gate_->Hold(methods)) return;
    }
    methods->Proceed();
  }

 private:
  RestoreGate* const gate_;
  bool first_ = true;
};

class RestoreGate::InterceptorFactoryImpl
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit InterceptorFactoryImpl(RestoreGate* gate) : gate_(gate) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    // Once the gate has opened or failed, it holds nothing: no interceptor for the call.
    if (!gate_->closed_.load(std::memory_order_acquire)) return nullptr;
    return IsGated(info->method()) ? new Interceptor(gate_) : nullptr;
  }

 private:
  RestoreGate* const gate_;
};

RestoreGate::RestoreGate(absl::Duration max_hold) : max_hold_(max_hold) {
  expirer_ = std::thread([this] { ExpireLoop(); });
}

RestoreGate::~RestoreGate() {
  Release(State::kFailed,
          absl::UnavailableError("breakerd is stopping before it restored its state; retry"));
  expirer_.join();
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
RestoreGate::InterceptorFactory() {
  return std::make_unique<InterceptorFactoryImpl>(this);
}

void RestoreGate::Open() { Release(State::kOpen, absl::OkStatus()); }

void RestoreGate::Fail(const absl::Status& status) { Release(State::kFailed, status); }

void RestoreGate::Refuse(const absl::Status& status, std::string leader) {
  std::deque<Held> released;
  {
    MutexLock lock(&mu_);
    if (state_ != State::kClosed) return;
    refusal_ = status;
    leader_ = std::move(leader);
    released.swap(held_);
  }
  for (const Held& held : released) held.methods->Proceed();
}

void RestoreGate::HoldCalls() {
  MutexLock lock(&mu_);
  refusal_ = absl::OkStatus();
  leader_.clear();
}

grpc::Status RestoreGate::Refusal(grpc::CallbackServerContext* context) const {
  MutexLock lock(&mu_);
  if (state_ == State::kClosed && !refusal_.ok() && !leader_.empty()) {
    context->AddTrailingMetadata(kLeaderTrailer, leader_);
  }
  return ToGrpcStatus(StatusLocked());
}

absl::Status RestoreGate::status() const {
  MutexLock lock(&mu_);
  return StatusLocked();
}

absl::Status RestoreGate::StatusLocked() const {
  switch (state_) {
    case State::kOpen:
      return absl::OkStatus();
    case State::kFailed:
      return failure_;
    case State::kClosed:
      break;
  }
  if (!refusal_.ok()) return refusal_;
  return absl::UnavailableError(absl::StrCat("breakerd is still restoring its state after ",
                                             absl::FormatDuration(max_hold_),
                                             "; retry in a moment"));
}

int RestoreGate::held() const {
  MutexLock lock(&mu_);
  return static_cast<int>(held_.size());
}

bool RestoreGate::Hold(InterceptorBatchMethods* methods) {
  MutexLock lock(&mu_);
  if (state_ != State::kClosed || !refusal_.ok()) return false;
  held_.push_back(
      Held{std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(max_hold_), methods});
  changed_.SignalAll();
  return true;
}

void RestoreGate::ExpireLoop() {
  MutexLock lock(&mu_);
  while (state_ == State::kClosed) {
    if (held_.empty()) {
      changed_.Wait(&mu_);
      continue;
    }
    const std::chrono::steady_clock::time_point until = held_.front().until;
    if (std::chrono::steady_clock::now() < until) {
      changed_.WaitUntil(&mu_, until);
      continue;
    }
    InterceptorBatchMethods* methods = held_.front().methods;
    held_.pop_front();
    // Proceed runs the call's handler, which reads status(): never under the lock.
    mu_.Unlock();
    methods->Proceed();
    mu_.Lock();
  }
}

void RestoreGate::Release(State state, const absl::Status& status) {
  std::deque<Held> released;
  {
    MutexLock lock(&mu_);
    if (state_ != State::kClosed) return;
    state_ = state;
    failure_ = status;
    closed_.store(false, std::memory_order_release);
    open_.store(state == State::kOpen, std::memory_order_release);
    released.swap(held_);
    changed_.SignalAll();
  }
  for (const Held& held : released) held.methods->Proceed();
}

// --- The gated services ------------------------------------------------------------------

NodeService* GatedNodeService::Serving() const {
  // The gate opens after Serve: a call that sees it open sees the service.
  return gate_->open() ? service_.load(std::memory_order_acquire) : nullptr;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* GatedNodeService::Connect(
    grpc::CallbackServerContext* context) {
  if (NodeService* service = Serving(); service != nullptr) return service->Connect(context);
  return new Refused<grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>>(
      gate_->Refusal(context));
}

grpc::ServerUnaryReactor* GatedNodeService::Report(grpc::CallbackServerContext* context,
                                                   const v1::ReportRequest* request,
                                                   v1::ReportResponse* response) {
  if (NodeService* service = Serving(); service != nullptr) {
    return service->Report(context, request, response);
  }
  return RefuseUnary(context, gate_->Refusal(context));
}

AdminService* GatedAdminService::Serving() const {
  return gate_->open() ? service_.load(std::memory_order_acquire) : nullptr;
}

template <typename Request, typename Response>
grpc::ServerUnaryReactor* GatedAdminService::Unary(
    grpc::ServerUnaryReactor* (AdminService::*method)(grpc::CallbackServerContext*, const Request*,
                                                      Response*),
    grpc::CallbackServerContext* context, const Request* request, Response* response) {
  if (AdminService* service = Serving(); service != nullptr) {
    return (service->*method)(context, request, response);
  }
  return RefuseUnary(context, gate_->Refusal(context));
}

grpc::ServerUnaryReactor* GatedAdminService::GetPolicy(grpc::CallbackServerContext* context,
                                                       const v1::GetPolicyRequest* request,
                                                       v1::Policy* response) {
  return Unary(&AdminService::GetPolicy, context, request, response);
}
grpc::ServerUnaryReactor* GatedAdminService::ListBuilders(grpc::CallbackServerContext* context,
                                                          const v1::ListBuildersRequest* request,
                                                          v1::ListBuildersResponse* response) {
  return Unary(&AdminService::ListBuilders, context, request, response);
}
grpc::ServerUnaryReactor* GatedAdminService::GetBuilder(grpc::CallbackServerContext* context,
                                                        const v1::GetBuilderRequest* request,
                                                        v1::Builder* response) {
  return Unary(&AdminService::GetBuilder, context, request, response);
}
grpc::ServerUnaryReactor* GatedAdminService::ListRelays(grpc::CallbackServerContext* context,
                                                        const v1::ListRelaysRequest* request,
                                                        v1::ListRelaysResponse* response) {
  return Unary(&AdminService::ListRelays, context, request, response);
}
grpc::ServerUnaryReactor* GatedAdminService::ListNodes(grpc::CallbackServerContext* context,
                                                       const v1::ListNodesRequest* request,
                                                       v1::ListNodesResponse* response) {
  return Unary(&AdminService::ListNodes, context, request, response);
}
grpc::ServerUnaryReactor* GatedAdminService::BanBuilder(grpc::CallbackServerContext* context,
                                                        const v1::BanBuilderRequest* request,
                                                        v1::Policy* response) {
  return Unary(&AdminService::BanBuilder, context, request, response);
}
grpc::ServerUnaryReactor* GatedAdminService::UnbanBuilder(grpc::CallbackServerContext* context,
                                                          const v1::UnbanBuilderRequest* request,
                                                          v1::Policy* response) {
  return Unary(&AdminService::UnbanBuilder, context, request, response);
}
grpc::ServerUnaryReactor* GatedAdminService::BanRelay(grpc::CallbackServerContext* context,
                                                      const v1::BanRelayRequest* request,
                                                      v1::Policy* response) {
  return Unary(&AdminService::BanRelay, context, request, response);
}
grpc::ServerUnaryReactor* GatedAdminService::UnbanRelay(grpc::CallbackServerContext* context,
                                                        const v1::UnbanRelayRequest* request,
                                                        v1::Policy* response) {
  return Unary(&AdminService::UnbanRelay, context, request, response);
}
grpc::ServerUnaryReactor* GatedAdminService::SetBuilderTrust(
    grpc::CallbackServerContext* context, const v1::SetBuilderTrustRequest* request,
    v1::Policy* response) {
  return Unary(&AdminService::SetBuilderTrust, context, request, response);
}
grpc::ServerUnaryReactor* GatedAdminService::SetRelayTrust(grpc::CallbackServerContext* context,
                                                           const v1::SetRelayTrustRequest* request,
                                                           v1::Policy* response) {
  return Unary(&AdminService::SetRelayTrust, context, request, response);
}
grpc::ServerUnaryReactor* GatedAdminService::Reset(grpc::CallbackServerContext* context,
                                                   const v1::ResetRequest* request,
                                                   v1::Policy* response) {
  return Unary(&AdminService::Reset, context, request, response);
}
grpc::ServerUnaryReactor* GatedAdminService::ResetNode(grpc::CallbackServerContext* context,
                                                       const v1::ResetNodeRequest* request,
                                                       v1::Policy* response) {
  return Unary(&AdminService::ResetNode, context, request, response);
}
grpc::ServerUnaryReactor* GatedAdminService::GetConfig(grpc::CallbackServerContext* context,
                                                       const v1::GetConfigRequest* request,
                                                       v1::Config* response) {
  return Unary(&AdminService::GetConfig, context, request, response);
}
grpc::ServerUnaryReactor* GatedAdminService::ReloadConfig(grpc::CallbackServerContext* context,
                                                          const v1::ReloadConfigRequest* request,
                                                          v1::Config* response) {
  return Unary(&AdminService::ReloadConfig, context, request, response);
}
grpc::ServerUnaryReactor* GatedAdminService::ReloadAccess(grpc::CallbackServerContext* context,
                                                          const v1::ReloadAccessRequest* request,
                                                          v1::ReloadAccessResponse* response) {
  return Unary(&AdminService::ReloadAccess, context, request, response);
}

grpc::ServerWriteReactor<v1::Policy>* GatedAdminService::WatchPolicy(
    grpc::CallbackServerContext* context, const v1::WatchPolicyRequest* request) {
  if (AdminService* service = Serving(); service != nullptr) {
    return service->WatchPolicy(context, request);
  }
  return new Refused<grpc::ServerWriteReactor<v1::Policy>>(gate_->Refusal(context));
}

}  // namespace breaker::service
