#include "service/rpc/restore_gate.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/replica_trailer.h"

namespace breaker::service {
namespace {

using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::InterceptorBatchMethods;

// The services the gate holds: breakerd's own, which need the state. Health and reflection do
// not.
bool IsGated(absl::string_view method) {
  return absl::StartsWith(method, "/breaker.v1.Breaker/") ||
         absl::StartsWith(method, "/breaker.v1.Admin/");
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

RestoreGate::RestoreGate(const Clock& clock, absl::Duration max_hold)
    : clock_(clock), max_hold_(max_hold) {
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

absl::Status RestoreGate::Refusal(grpc::CallbackServerContext* context) const {
  MutexLock lock(&mu_);
  if (state_ == State::kClosed && !refusal_.ok() && !leader_.empty()) {
    context->AddTrailingMetadata(kLeaderTrailer, leader_);
  }
  return StatusLocked();
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
  held_.push_back(Held{clock_.Monotonic() + max_hold_, methods});
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
    const absl::Duration left = held_.front().until - clock_.Monotonic();
    if (left > absl::ZeroDuration()) {
      changed_.WaitFor(&mu_, std::min(left, kMaxWait));
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

}  // namespace breaker::service
