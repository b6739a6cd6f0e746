#include "ctl/policy_watch.h"

#include <utility>

#include "ctl/unary_call.h"

namespace breaker::ctl {

namespace v1 = ::breaker::v1;

PolicyWatch::PolicyWatch(v1::Admin::Stub& stub) {
  stub.async()->WatchPolicy(&context_, &request_, this);
  StartRead(&incoming_);
  StartCall();
}

PolicyWatch::~PolicyWatch() {
  context_.TryCancel();
  std::unique_lock<std::mutex> lock(mu_);
  // gRPC calls nothing of this reactor after OnDone, which sets done_ as its last act.
  changed_.wait(lock, [this] { return done_; });
}

absl::StatusOr<v1::Policy> PolicyWatch::Next(absl::Time deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [this] { return !received_.empty() || done_; };
  if (deadline == absl::InfiniteFuture()) {
    // Not wait_until: the far end of the chrono range overflows in the conversion to the
    // clock the condition variable waits on.
    changed_.wait(lock, ready);
  } else if (!changed_.wait_until(lock, absl::ToChronoTime(deadline), ready)) {
    return absl::DeadlineExceededError("no policy arrived before the deadline");
  }
  if (!received_.empty()) {
    v1::Policy policy = std::move(received_.front());
    received_.pop_front();
    return policy;
  }
  if (!end_status_.ok()) return end_status_;
  return absl::UnavailableError("breakerd ended the watch");
}

void PolicyWatch::OnReadDone(bool ok) {
  // Not ok: the stream is over, and OnDone says how.
  if (!ok) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    received_.push_back(incoming_);
  }
  changed_.notify_all();
  StartRead(&incoming_);
}

void PolicyWatch::OnDone(const grpc::Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  done_ = true;
  end_status_ = FromGrpcStatus(status);
  // Under the lock: the destructor may free this object as soon as the lock is released.
  changed_.notify_all();
}

}  // namespace breaker::ctl
