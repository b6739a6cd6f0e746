#ifndef CLIENT_FAKE_CLIENT_H_
#define CLIENT_FAKE_CLIENT_H_

// A BreakerClient for tests of the code that uses one: no network, no engine. The test sets the
// policy in force and reads back what was reported.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/client.h"
#include "common/mutex.h"
#include "core/observation.h"
#include "core/policy.h"
#include "core/relay_id.h"
#include "core/types.h"

namespace breaker::client {

// This class is thread-safe. It starts with an empty local policy (everything allowed,
// PolicySource::kLocal, fleet version 0).
class FakeClient : public BreakerClient {
 public:
  // One Report call.
  struct Reported {
    core::Slot slot = 0;
    core::Event event;
  };

  FakeClient() : snapshot_(std::make_shared<const PolicySnapshot>()) {}
  ~FakeClient() override { Stop(); }

  FakeClient(const FakeClient&) = delete;
  FakeClient& operator=(const FakeClient&) = delete;

  // Puts `policy` in force from `source` (its fleet version is policy.version, or 0 for
  // kLocal), then calls every subscriber with it on a thread of its own, joined before
  // returning: callbacks never run on the caller's thread, yet have all run when this returns.
  // REQUIRES: not called from a subscriber's callback.
  void SetPolicy(core::Policy policy, PolicySource source) {
    PolicySnapshot snapshot;
    snapshot.fleet_version = source == PolicySource::kLocal ? 0 : policy.version;
    snapshot.policy = std::move(policy);
    snapshot.source = source;
    SetSnapshot(std::move(snapshot));
  }

  // As SetPolicy, with every field of the snapshot chosen by the test.
  void SetSnapshot(PolicySnapshot snapshot) {
    auto published = std::make_shared<const PolicySnapshot>(std::move(snapshot));
    MutexLock notifying(&notify_mu_);
    std::vector<int> ids;
    {
      MutexLock lock(&mu_);
      snapshot_ = published;
      for (const auto& entry : subscribers_) ids.push_back(entry.first);
    }
    std::thread notifier([this, &ids, &published] {
      {
        MutexLock lock(&mu_);
        notifier_id_ = std::this_thread::get_id();
      }
      for (int id : ids) {
        PolicyCallback callback;
        {
          // Skips a subscriber that unsubscribed meanwhile (e.g. from an earlier callback).
          MutexLock lock(&mu_);
          auto it = subscribers_.find(id);
          if (it == subscribers_.end()) continue;
          callback = it->second;
        }
        callback(published);
      }
      MutexLock lock(&mu_);
      notifier_id_ = std::thread::id();
    });
    notifier.join();
  }

  // Returns every Report call so far, in order.
  std::vector<Reported> reports() const {
    MutexLock lock(&mu_);
    return reports_;
  }

  // Sets what stats() says of the connection.
  void set_connected(bool connected) {
    MutexLock lock(&mu_);
    connected_ = connected;
  }

  // Returns whether Stop was called.
  bool stopped() const {
    MutexLock lock(&mu_);
    return stopped_;
  }

  // Returns how many subscriptions are active.
  size_t subscriber_count() const {
    MutexLock lock(&mu_);
    return subscribers_.size();
  }

  // BreakerClient. Reports are recorded even after Stop, so that a test sees them all.
  absl::Status Report(core::Slot slot, core::Event event) override {
    MutexLock lock(&mu_);
    reports_.push_back(Reported{slot, std::move(event)});
    return absl::OkStatus();
  }

  std::shared_ptr<const PolicySnapshot> policy() const override {
    MutexLock lock(&mu_);
    return snapshot_;
  }

  // Normalizes `relay` as the library does: a relay that does not normalize is nobody's, and
  // its bids are refused.
  bool IsAllowed(core::BuilderIndex builder, absl::string_view relay) const override {
    const std::shared_ptr<const PolicySnapshot> snapshot = policy();
    if (relay.empty()) return snapshot->policy.IsAllowed(builder, "");
    absl::StatusOr<std::string> normalized = core::NormalizeRelayId(relay);
    if (!normalized.ok()) return false;
    return snapshot->policy.IsAllowed(builder, *normalized);
  }

  int Subscribe(PolicyCallback callback) override {
    MutexLock lock(&mu_);
    const int id = next_id_++;
    subscribers_.emplace(id, std::move(callback));
    return id;
  }

  // Waits for a SetPolicy in progress to finish calling back, unless called from a callback.
  void Unsubscribe(int id) override {
    {
      MutexLock lock(&mu_);
      if (notifier_id_ == std::this_thread::get_id()) {
        subscribers_.erase(id);
        return;
      }
    }
    MutexLock notifying(&notify_mu_);
    MutexLock lock(&mu_);
    subscribers_.erase(id);
  }

  // Counts from the reports: nothing is ever acknowledged, dropped or refused.
  ClientStats stats() const override {
    MutexLock lock(&mu_);
    ClientStats stats;
    stats.connected = connected_;
    stats.address = "fake";
    stats.reported = reports_.size();
    stats.buffered = reports_.size();
    stats.fleet_policy_version = snapshot_->fleet_version;
    stats.source = snapshot_->source;
    stats.fallback_active = snapshot_->source != PolicySource::kFleet;
    return stats;
  }

  void Stop() override {
    MutexLock lock(&mu_);
    stopped_ = true;
  }

  core::ChainSpec chain() const override {
    MutexLock lock(&mu_);
    return chain_;
  }
  void SetChain(core::ChainSpec chain) {
    MutexLock lock(&mu_);
    chain_ = std::move(chain);
  }

 private:
  // Held by SetSnapshot while its thread calls back; never taken while holding mu_.
  Mutex notify_mu_;
  mutable Mutex mu_;
  std::shared_ptr<const PolicySnapshot> snapshot_;  // Guarded by mu_.
  std::vector<Reported> reports_;                   // Guarded by mu_.
  std::map<int, PolicyCallback> subscribers_;       // Guarded by mu_.
  int next_id_ = 1;                                 // Guarded by mu_.
  std::thread::id notifier_id_;                     // Guarded by mu_.
  bool connected_ = false;                          // Guarded by mu_.
  bool stopped_ = false;                            // Guarded by mu_.
  core::ChainSpec chain_;                           // Guarded by mu_.
};

}  // namespace breaker::client

#endif  // CLIENT_FAKE_CLIENT_H_
