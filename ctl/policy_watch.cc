#include "ctl/policy_watch.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/mutex.h"
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
  MutexLock lock(&mu_);
  // gRPC calls nothing of this reactor after OnDone, which sets done_ as its last act.
  while (!done_) changed_.Wait(&mu_);
}

absl::StatusOr<v1::Policy> PolicyWatch::Next(absl::Duration timeout) {
  MutexLock lock(&mu_);
  if (!changed_.Await(&mu_, timeout, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !received_.empty() || done_;
      })) {
    return absl::DeadlineExceededError(
        absl::StrCat("no policy arrived within ", absl::FormatDuration(timeout)));
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
    MutexLock lock(&mu_);
    received_.push_back(incoming_);
  }
  changed_.SignalAll();
  StartRead(&incoming_);
}

void PolicyWatch::OnDone(const grpc::Status& status) {
  MutexLock lock(&mu_);
  done_ = true;
  end_status_ = DescribedStatus(status);
  // Under the lock: the destructor may free this object as soon as the lock is released.
  changed_.SignalAll();
}

}  // namespace breaker::ctl
