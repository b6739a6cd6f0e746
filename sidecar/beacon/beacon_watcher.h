#ifndef SIDECAR_BEACON_BEACON_WATCHER_H_
#define SIDECAR_BEACON_BEACON_WATCHER_H_

// The observer's plumbing: watches the beacon node over its Beacon API and feeds the
// Observer (observer.h), which decides what is reported. docs/sidecar-observer.md
// tells the whole story.
//
// Two threads. The stream thread checks the node's chain against the sidecar's and opens the
// event stream, and reopens it with client::Backoff when it ends. It asks for the Gloas topics
// only of a node whose spec schedules Gloas (and falls back to the pre-Gloas ones when the
// node refuses those). It gives the topics as repeated `topics` keys first; a node that
// refuses that form (4xx) or sends no event on it for a whole slot while synced is asked in
// the comma-joined form, and so on until a form delivers an event: that form is kept for the
// process's life. The tick thread, a few times a slot, judges the slots that ended, re-reads
// the node's sync status every slot, backfills the gaps, measures overdue payloads from fork
// choice, ends a silent stream of a form not yet known to work, and while the node does not
// schedule Gloas re-reads its spec once an epoch (reopening the stream once it does).
//
// A stream is trusted for live judgments once it delivered an event, or at once when its form
// is known to work: until then the slots are gaps, judged by the backfill (the node's REST
// answers), so that a stream the node accepted but never feeds judges no slot empty.

#include <cstdint>
#include <functional>
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
#include "sidecar/beacon/beacon_api.h"
#include "sidecar/beacon/observer.h"

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
  // Called, on the stream thread, for every chain_reorg event; it must not block. Optional.
  std::function<void()> on_chain_reorg;
  // Called with the node's preset whenever its spec was read and its chain matched (at Start,
  // on Start's thread, then before each event stream opens, on the stream thread); it must not
  // block. Optional.
  std::function<void(const ssz::Preset&)> on_preset;
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
  // The form of the event stream's topics in use, and whether it delivered an event yet.
  TopicsForm topics_form = TopicsForm::kRepeated;
  bool topics_form_confirmed = false;
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
  BeaconWatcher(BeaconWatcherOptions options, const Clock& clock, client::BreakerClient& client);

  // Why the tick thread ended the stream in progress.
  enum class EndReason { kNone, kSilent, kGloasScheduled };

  void StreamLoop();
  void TickLoop();
  void OnEvent(const SseEvent& event);
  // The stream's first event: its form works.
  void OnFirstEvent();
  // Updates the observer: watching while the stream is trusted and the node synced.
  void SetStreamOpen(bool open);
  void SetSynced(bool synced);
  void UpdateWatching() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends a stream of an unconfirmed form that sent no event for a whole slot of a synced node.
  void EndSilentStream();
  // Once an epoch while the node does not schedule Gloas: re-reads its spec, and ends the
  // stream when it now does (the stream thread reopens it with the Gloas topics).
  void RereadSpec();
  void Backfill();
  void MeasureOverdue(const std::vector<OverduePayload>& overdue);
  // Waits `duration` or until Stop; returns false once stopping.
  bool Sleep(absl::Duration duration);

  const BeaconWatcherOptions options_;
  const Clock& clock_;
  BeaconApi api_;
  Observer observer_;

  mutable Mutex mu_;
  CondVar stopping_cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stream_open_ ABSL_GUARDED_BY(mu_) = false;
  // The open stream delivered an event.
  bool stream_fed_ ABSL_GUARDED_BY(mu_) = false;
  // When the stream opened, and since when the node is synced (the silence is measured from
  // the later).
  absl::Time stream_opened_at_ ABSL_GUARDED_BY(mu_);
  absl::Time synced_since_ ABSL_GUARDED_BY(mu_);
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
  TopicsForm form_ ABSL_GUARDED_BY(mu_) = TopicsForm::kRepeated;
  // form_ delivered an event: kept for the process's life.
  bool form_confirmed_ ABSL_GUARDED_BY(mu_) = false;
  // The node refused the Gloas topics in either form.
  bool gloas_refused_ ABSL_GUARDED_BY(mu_) = false;
  // The latest read of the node's spec scheduled Gloas; the epoch of that read.
  bool node_schedules_gloas_ ABSL_GUARDED_BY(mu_) = false;
  core::Epoch spec_read_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  EndReason end_reason_ ABSL_GUARDED_BY(mu_) = EndReason::kNone;
  uint64_t chain_mismatches_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t reconnects_ ABSL_GUARDED_BY(mu_) = 0;
  // Gloas blocks whose bid's builder the tick thread looks up; bounded.
  std::vector<std::pair<core::Slot, core::BlockRoot>> bid_lookups_ ABSL_GUARDED_BY(mu_);

  std::thread stream_thread_;
  std::thread tick_thread_;
};

}  // namespace breaker::sidecar

#endif  // SIDECAR_BEACON_BEACON_WATCHER_H_
