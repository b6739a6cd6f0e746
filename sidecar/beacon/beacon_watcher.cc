#include "sidecar/beacon/beacon_watcher.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "client/backoff.h"
#include "common/mutex.h"
#include "glog/logging.h"

namespace breaker::sidecar {
namespace {

// Gloas blocks waiting for their bid's look-up, at most: a flood of blocks is no reason to
// grow without end.
constexpr size_t kMaxBidLookups = 64;

absl::string_view FormText(TopicsForm form) {
  return form == TopicsForm::kRepeated ? "as repeated keys (?topics=a&topics=b)"
                                       : "joined by commas (?topics=a,b)";
}

TopicsForm OtherForm(TopicsForm form) {
  return form == TopicsForm::kRepeated ? TopicsForm::kComma : TopicsForm::kRepeated;
}

std::string EpochText(core::Epoch epoch) {
  return epoch == core::kFarFutureEpoch ? "never (far future)" : absl::StrCat(epoch);
}

}  // namespace

absl::Status CheckChain(const NodeChain& node, const core::ChainSpec& chain) {
  std::vector<std::string> differences;
  if (node.genesis_time_unix != chain.genesis_time_unix) {
    differences.push_back(absl::StrCat("genesis time ", node.genesis_time_unix,
                                       " (the sidecar's: ", chain.genesis_time_unix, ")"));
  }
  if (node.seconds_per_slot != chain.seconds_per_slot) {
    differences.push_back(absl::StrCat("SECONDS_PER_SLOT ", node.seconds_per_slot,
                                       " (the sidecar's: ", chain.seconds_per_slot, ")"));
  }
  if (node.slots_per_epoch != chain.slots_per_epoch) {
    differences.push_back(absl::StrCat("SLOTS_PER_EPOCH ", node.slots_per_epoch,
                                       " (the sidecar's: ", chain.slots_per_epoch, ")"));
  }
  if (node.gloas_fork_epoch.has_value() && *node.gloas_fork_epoch != chain.gloas_fork_epoch) {
    differences.push_back(absl::StrCat("GLOAS_FORK_EPOCH ", EpochText(*node.gloas_fork_epoch),
                                       " (the sidecar's: ", EpochText(chain.gloas_fork_epoch),
                                       ")"));
  }
  if (differences.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("the beacon node follows another chain than network '", chain.network,
                   "': ", absl::StrJoin(differences, ", "),
                   "; point beacon_node_url at a node of this network, or fix network / "
                   "fallback_config_file's chain"));
}

absl::StatusOr<std::unique_ptr<BeaconWatcher>> BeaconWatcher::Start(BeaconWatcherOptions options,
                                                                    const Clock& clock,
                                                                    client::BreakerClient& client) {
  std::unique_ptr<BeaconWatcher> watcher(new BeaconWatcher(std::move(options), clock, client));
  absl::StatusOr<NodeChain> chain = watcher->api_.GetChain();
  if (chain.ok()) {
    if (absl::Status checked = CheckChain(*chain, watcher->options_.observer.chain);
        !checked.ok()) {
      return checked;
    }
    if (watcher->options_.on_preset) watcher->options_.on_preset(chain->preset);
  } else {
    LOG(WARNING) << "cannot read the beacon node's chain yet (retrying): "
                 << chain.status().message();
  }
  watcher->stream_thread_ = std::thread([w = watcher.get()] { w->StreamLoop(); });
  watcher->tick_thread_ = std::thread([w = watcher.get()] { w->TickLoop(); });
  return watcher;
}

BeaconWatcher::BeaconWatcher(BeaconWatcherOptions options, const Clock& clock,
                             client::BreakerClient& client)
    : options_(std::move(options)),
      clock_(clock),
      api_(options_.base, options_.path_prefix, options_.limits, clock),
      observer_(options_.observer, clock, client) {}

BeaconWatcher::~BeaconWatcher() { Stop(); }

void BeaconWatcher::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  stopping_cv_.SignalAll();
  api_.Interrupt();
  if (stream_thread_.joinable()) stream_thread_.join();
  if (tick_thread_.joinable()) tick_thread_.join();
}

bool BeaconWatcher::Sleep(absl::Duration duration) {
  const absl::Duration deadline = clock_.Monotonic() + duration;
  MutexLock lock(&mu_);
  for (absl::Duration left = duration; !stopping_ && left > absl::ZeroDuration();
       left = deadline - clock_.Monotonic()) {
    stopping_cv_.WaitFor(&mu_, left);
  }
  return !stopping_;
}

void BeaconWatcher::UpdateWatching() {
  observer_.SetWatching(stream_open_ && (stream_fed_ || form_confirmed_) && synced_);
}

void BeaconWatcher::SetStreamOpen(bool open) {
  MutexLock lock(&mu_);
  stream_open_ = open;
  stream_fed_ = false;
  stream_opened_at_ = clock_.Now();
  UpdateWatching();
}

void BeaconWatcher::OnFirstEvent() {
  MutexLock lock(&mu_);
  stream_fed_ = true;
  if (!form_confirmed_) {
    form_confirmed_ = true;
    LOG(INFO) << "the beacon node's event stream delivers with its topics given " << FormText(form_)
              << ": that form is kept";
  }
  UpdateWatching();
}

void BeaconWatcher::SetSynced(bool synced) {
  MutexLock lock(&mu_);
  if (synced != synced_) {
    LOG(INFO) << (synced ? "the beacon node is synced: observing"
                         : "the beacon node is syncing (or optimistic): nothing is reported");
    if (synced) synced_since_ = clock_.Now();
  }
  synced_ = synced;
  UpdateWatching();
}

void BeaconWatcher::StreamLoop() {
  client::Backoff backoff(options_.initial_backoff, 2.0, options_.max_backoff, 0.2,
                          std::random_device()());
  // Refusals (4xx) in a row of the topics asked for, while no form is known to work: one in
  // each form means the node refuses the topics themselves.
  int refusals = 0;
  while (true) {
    absl::StatusOr<NodeChain> chain = api_.GetChain();
    absl::Status ready = chain.ok() ? CheckChain(*chain, options_.observer.chain) : chain.status();
    if (chain.ok() && !ready.ok()) {
      MutexLock lock(&mu_);
      ++chain_mismatches_;
    }
    if (ready.ok()) {
      if (options_.on_preset) options_.on_preset(chain->preset);
      absl::StatusOr<SyncStatus> sync = api_.GetSyncing();
      if (sync.ok()) SetSynced(!sync->is_syncing && !sync->is_optimistic);
      bool gloas = false;
      TopicsForm form = TopicsForm::kRepeated;
      {
        MutexLock lock(&mu_);
        node_schedules_gloas_ = chain->SchedulesGloas();
        spec_read_epoch_ = core::EpochOf(core::SlotAt(clock_.Now(), options_.observer.chain),
                                         options_.observer.chain);
        // A node without Gloas may fail on a topic it does not know rather than refuse it.
        gloas = node_schedules_gloas_ && !gloas_refused_;
        form = form_;
        end_reason_ = EndReason::kNone;
      }
      bool fed = false;
      const absl::Status ended = api_.StreamEvents(
          gloas ? GloasTopics() : PreGloasTopics(), form,
          [&] {
            backoff.Reset();
            refusals = 0;
            SetStreamOpen(true);
          },
          [&](const SseEvent& event) {
            if (!fed) {
              fed = true;
              OnFirstEvent();
            }
            OnEvent(event);
          });
      SetStreamOpen(false);
      if (absl::IsCancelled(ended)) return;
      EndReason reason = EndReason::kNone;
      {
        MutexLock lock(&mu_);
        reason = end_reason_;
        if (absl::IsAborted(ended) && reason == EndReason::kSilent) {
          form_ = OtherForm(form);
          LOG(WARNING) << "the beacon node's event stream sent no event for a slot with its "
                          "topics given "
                       << FormText(form) << "; trying them " << FormText(form_);
          continue;
        }
        if (absl::IsInvalidArgument(ended) && !form_confirmed_ && ++refusals < 2) {
          form_ = OtherForm(form);
          LOG(WARNING) << ended.message() << "; trying the topics " << FormText(form_);
          continue;
        }
        if (absl::IsInvalidArgument(ended) && gloas) {
          LOG(INFO) << "the beacon node does not offer the Gloas topics; observing the "
                       "pre-Gloas ones: "
                    << ended.message();
          gloas_refused_ = true;
          refusals = 0;
          continue;
        }
      }
      if (absl::IsAborted(ended)) continue;  // The node now schedules Gloas.
      ready = ended;
    }
    {
      MutexLock lock(&mu_);
      ++reconnects_;
    }
    const absl::Duration wait = backoff.Next();
    LOG(WARNING) << ready.message() << "; reconnecting in " << absl::FormatDuration(wait);
    if (!Sleep(wait)) return;
  }
}

void BeaconWatcher::OnEvent(const SseEvent& event) {
  absl::StatusOr<BeaconEvent> decoded = DecodeEvent(event);
  if (!decoded.ok()) {
    if (!absl::IsNotFound(decoded.status())) {
      LOG(WARNING) << "the beacon node sent a malformed event, ignored: "
                   << decoded.status().message();
    }
    return;
  }
  using Kind = BeaconEvent::Kind;
  const core::ChainSpec& chain = options_.observer.chain;
  switch (decoded->kind) {
    case Kind::kBlock:
      observer_.OnBlock(decoded->slot, decoded->root);
      if (core::IsGloas(core::EpochOf(decoded->slot, chain), chain)) {
        MutexLock lock(&mu_);
        if (bid_lookups_.size() < kMaxBidLookups) {
          bid_lookups_.emplace_back(decoded->slot, decoded->root);
        }
      }
      break;
    case Kind::kHead:
      observer_.OnBlock(decoded->slot, decoded->root);
      if (decoded->payload_full) observer_.OnPayloadAvailable(decoded->slot, decoded->root);
      break;
    case Kind::kReorg:
      // The old head was reported when it was imported; it stays reported.
      observer_.OnBlock(decoded->slot, decoded->root);
      if (options_.on_chain_reorg) options_.on_chain_reorg();
      break;
    case Kind::kFinalized:
      observer_.OnFinalized(decoded->epoch);
      break;
    case Kind::kBid:
      observer_.OnBid(decoded->slot, decoded->builder);
      break;
    case Kind::kPayload:
      observer_.OnPayload(decoded->slot, decoded->root, decoded->builder);
      break;
    case Kind::kPayloadAvailable:
      observer_.OnPayloadAvailable(decoded->slot, decoded->root);
      break;
  }
}

void BeaconWatcher::TickLoop() {
  absl::Duration next_sync_check = -absl::InfiniteDuration();
  bool finality_read = false;
  const absl::Duration slot = absl::Seconds(options_.observer.chain.seconds_per_slot);
  while (Sleep(options_.tick_interval)) {
    if (clock_.Monotonic() >= next_sync_check) {
      next_sync_check = clock_.Monotonic() + slot;
      absl::StatusOr<SyncStatus> sync = api_.GetSyncing();
      if (sync.ok()) {
        SetSynced(!sync->is_syncing && !sync->is_optimistic);
      } else {
        LOG(WARNING) << "cannot read the beacon node's sync status: " << sync.status().message();
      }
    }
    std::vector<std::pair<core::Slot, core::BlockRoot>> lookups;
    {
      MutexLock lock(&mu_);
      lookups.swap(bid_lookups_);
    }
    for (const auto& [block_slot, root] : lookups) {
      absl::StatusOr<core::BuilderIndex> builder = api_.GetBlockBidBuilder(root);
      if (builder.ok()) {
        observer_.OnBlockBid(block_slot, root, *builder);
      } else {
        LOG(WARNING) << "cannot read the bid of block " << root.ShortHex() << ": "
                     << builder.status().message();
      }
    }
    MeasureOverdue(observer_.Tick());
    EndSilentStream();
    RereadSpec();
    if (observer_.watching()) {
      // The finalized epoch as of now, once per stream: its events come only when it moves.
      if (!finality_read) {
        absl::StatusOr<core::Epoch> finalized = api_.GetFinalizedEpoch();
        if (finalized.ok()) observer_.OnFinalized(*finalized);
        finality_read = true;
      }
    } else {
      finality_read = false;
    }
    bool backfill = false;
    {
      // The node's REST answers judge the gaps even while its stream is not trusted yet.
      MutexLock lock(&mu_);
      backfill = stream_open_ && synced_;
    }
    if (backfill) Backfill();
  }
}

void BeaconWatcher::EndSilentStream() {
  MutexLock lock(&mu_);
  if (!stream_open_ || stream_fed_ || form_confirmed_ || !synced_ ||
      end_reason_ != EndReason::kNone) {
    return;
  }
  // Silent through a whole slot (after genesis: before it no node has events to send).
  const absl::Time since = std::max(stream_opened_at_, synced_since_);
  const core::Slot slot = core::SlotAt(since, options_.observer.chain);
  if (clock_.Now() < core::StartOf(slot + 2, options_.observer.chain)) return;
  end_reason_ = EndReason::kSilent;
  // The stream thread cannot open another stream meanwhile: it needs mu_ to see this one end.
  api_.EndStream();
}

void BeaconWatcher::RereadSpec() {
  const core::ChainSpec& chain = options_.observer.chain;
  {
    MutexLock lock(&mu_);
    const core::Epoch epoch = core::EpochOf(core::SlotAt(clock_.Now(), chain), chain);
    if (!stream_open_ || node_schedules_gloas_ || epoch <= spec_read_epoch_) return;
    spec_read_epoch_ = epoch;
  }
  absl::StatusOr<NodeChain> node = api_.GetChain();
  if (!node.ok()) {
    LOG(WARNING) << "cannot re-read the beacon node's spec (again next epoch): "
                 << node.status().message();
    return;
  }
  if (!node->SchedulesGloas()) return;
  MutexLock lock(&mu_);
  if (!stream_open_ || end_reason_ != EndReason::kNone) return;
  LOG(INFO) << "the beacon node now schedules Gloas at epoch " << *node->gloas_fork_epoch
            << ": reopening its event stream with the Gloas topics";
  end_reason_ = EndReason::kGloasScheduled;
  api_.EndStream();
}

void BeaconWatcher::Backfill() {
  const std::vector<core::Slot> gaps = observer_.SlotsToBackfill();
  if (gaps.empty()) return;
  // Fork choice holds the non-canonical blocks too; a node without it still has headers.
  absl::StatusOr<std::vector<ForkChoiceNode>> fork_choice = api_.GetForkChoice();
  for (core::Slot slot : gaps) {
    absl::StatusOr<std::vector<core::BlockRoot>> roots = api_.GetHeaders(slot);
    if (!roots.ok()) {
      LOG(WARNING) << "cannot backfill slot " << slot << ": " << roots.status().message();
      return;  // The next tick tries again.
    }
    if (fork_choice.ok()) {
      for (const ForkChoiceNode& node : *fork_choice) {
        if (node.slot == slot) roots->push_back(node.root);
      }
    }
    observer_.OnBackfill(slot, *roots);
  }
}

void BeaconWatcher::MeasureOverdue(const std::vector<OverduePayload>& overdue) {
  if (overdue.empty()) return;
  absl::StatusOr<std::vector<ForkChoiceNode>> fork_choice = api_.GetForkChoice();
  uint64_t total = 0;
  if (fork_choice.ok()) {
    for (const ForkChoiceNode& node : *fork_choice) total = std::max(total, node.weight);
  } else {
    LOG(WARNING) << "cannot read fork choice for the attested weight of overdue payloads "
                    "(reported as attested by 0): "
                 << fork_choice.status().message();
  }
  // The tree's root holds every latest vote: a slot's committee is 1/SLOTS_PER_EPOCH of it.
  const double committee =
      static_cast<double>(total) / static_cast<double>(options_.observer.chain.slots_per_epoch);
  for (const OverduePayload& payload : overdue) {
    double fraction = 0;
    if (fork_choice.ok() && committee > 0) {
      // The block's own votes: by now its weight holds its descendants' votes too, and a child
      // attested in the next slot would lift any block over the threshold.
      fraction = static_cast<double>(OwnWeight(*fork_choice, payload.root)) / committee;
    }
    observer_.PayloadOverdue(payload, fraction);
  }
}

BeaconWatcherStats BeaconWatcher::stats() const {
  BeaconWatcherStats stats;
  stats.observer = observer_.stats();
  stats.api = api_.stats();
  MutexLock lock(&mu_);
  stats.chain_mismatches = chain_mismatches_;
  stats.reconnects = reconnects_;
  stats.syncing = !synced_;
  stats.topics_form = form_;
  stats.topics_form_confirmed = form_confirmed_;
  return stats;
}

}  // namespace breaker::sidecar
