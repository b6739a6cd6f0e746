#ifndef SERVICE_RPC_SERVED_FLEET_H_
#define SERVICE_RPC_SERVED_FLEET_H_

// The fleet breakerd's services answer from, which they learn late: gRPC takes its services
// before it starts, and breakerd starts its server before it restores the state the fleet
// holds (see RestoreGate). A call that passes the gate while it is still closed reaches a
// service with no fleet; the service ends it with the gate's refusal.

#include <atomic>

#include "absl/status/status.h"
#include "grpcpp/server_context.h"
#include "service/fleet.h"
#include "service/rpc/restore_gate.h"

namespace breaker::service {

// This class is thread-safe.
class ServedFleet {
 public:
  // Serves `fleet` from the start: services made over a fleet that exists already.
  // REQUIRES: `fleet` outlives every call.
  explicit ServedFleet(Fleet* fleet) : fleet_(fleet) {}
  // Serves the fleet Bind gives it once `gate` opens. REQUIRES: `gate` outlives this.
  explicit ServedFleet(const RestoreGate* gate) : gate_(gate) {}
  ServedFleet(const ServedFleet&) = delete;
  ServedFleet& operator=(const ServedFleet&) = delete;

  // REQUIRES: made with a gate; called once, before the gate opens; `fleet` outlives every
  // call.
  void Bind(Fleet* fleet) { fleet_.store(fleet, std::memory_order_release); }

  // For a call's prologue: OK when the fleet serves it; otherwise what the call is ended with,
  // the gate's status, naming the leader in `context`'s trailer when the gate does.
  absl::Status Admit(grpc::CallbackServerContext* context) const;

  // REQUIRES: Admit returned OK for the call being served, or for the one that opened the
  // stream being served.
  Fleet* fleet() const { return fleet_.load(std::memory_order_acquire); }

 private:
  const RestoreGate* const gate_ = nullptr;
  std::atomic<Fleet*> fleet_{nullptr};
};

// A streaming call ended before it streams anything: one its prologue refused.
template <typename Reactor>
class FinishedCall final : public Reactor {
 public:
  explicit FinishedCall(const grpc::Status& status) { this->Finish(status); }

 private:
  void OnDone() override { delete this; }
};

}  // namespace breaker::service

#endif  // SERVICE_RPC_SERVED_FLEET_H_
