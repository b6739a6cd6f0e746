#ifndef SIDECAR_BEACON_WATCHER_H_
#define SIDECAR_BEACON_WATCHER_H_

// The observer's plumbing: watches the beacon node over its Beacon API and feeds the
// Observer (sidecar/observer.h), which decides what is reported. docs/sidecar-observer.md
// tells the whole story.
//
// Two threads. The stream thread checks the node's chain against the sidecar's and opens the
// event stream (the Gloas topics, or the pre-Gloas ones from a node that refuses those), and
// reopens it with client::Backoff when it ends. The tick thread, a few times a slot, judges
// the slots that ended, re-reads the node's sync status every slot, backfills the gaps, and
// measures overdue payloads from fork choice.

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "core/chain_time.h"
#include "sidecar/beacon_api.h"
#include "sidecar/observer.h"

namespace breaker::sidecar {

struct BeaconWatcherOptions {
  // The beacon node's Beacon API, split as SidecarSettings keeps it.
  std::string base;
  std::string path_prefix;
  BeaconApiLimits limits;
  ObserverOptions observer;
  // Reconnection backoff of the event stream.
  absl::Duration initial_backoff = absl::Milliseconds(200);
  absl::Duration max_backoff = absl::Seconds(10);
  // How often the tick thread runs, in real time.
  absl::Duration tick_interval = absl::Milliseconds(250);
};

// Returns OK when `node` follows `chain`, otherwise FAILED_PRECONDITION naming each setting that
// differs with both values. A node's spec without GLOAS_FORK_EPOCH is not checked for it.
absl::Status CheckChain(const NodeChain& node, const core::ChainSpec& chain);

struct BeaconWatcherStats {
  ObserverStats observer;
  BeaconApiStats api;
  // Chain mismatches found at a reconnection (a node restarted on another chain).
  uint64_t chain_mismatches = 0;
  uint64_t reconnects = 0;
  bool syncing = false;
};

// This class is thread-safe.
class BeaconWatcher {
 public:
  // Reads the node's chain once: FAILED_PRECONDITION (CheckChain's) when it follows another
  // chain than options.observer.chain. A node that cannot be reached (or answers garbage) is
  // no error: the watcher keeps trying, and checks the chain before every stream it opens.
  // Then starts the threads.
  // REQUIRES: `clock` and `client` outlive the watcher.
  static absl::StatusOr<std::unique_ptr<BeaconWatcher>> Start(BeaconWatcherOptions options,
                                                               const Clock& clock,
                                                               client::BreakerClient& client);
  ~BeaconWatcher();

  // Stops and joins the threads. Idempotent.
  void Stop();

  BeaconWatcherStats stats() const;

 private:
  BeaconWatcher(BeaconWatcherOptions options, const Clock& clock,
                client::BreakerClient& client);

  void StreamLoop();
  void TickLoop();
  void OnEvent(const SseEvent& event);
  // Updates the observer: watching while the stream is open and the node synced.
  void SetStreamOpen(bool open);
  void SetSynced(bool synced);
  void Backfill();
  void MeasureOverdue(const std::vector<OverduePayload>& overdue);
  // Waits `duration` or until Stop; returns false once stopping.
  bool Sleep(absl::Duration duration);

  const BeaconWatcherOptions options_;
  BeaconApi api_;
  Observer observer_;

  mutable Mutex mu_;
  CondVar stopping_cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stream_open_ ABSL_GUARDED_BY(mu_) = false;
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t chain_mismatches_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t reconnects_ ABSL_GUARDED_BY(mu_) = 0;
  // Gloas blocks whose bid's builder the tick thread looks up; bounded.
  std::vector<std::pair<core::Slot, core::BlockRoot>> bid_lookups_ ABSL_GUARDED_BY(mu_);

  std::thread stream_thread_;
  std::thread tick_thread_;
};

}  // namespace breaker::sidecar

#endif  // SIDECAR_BEACON_WATCHER_H_
