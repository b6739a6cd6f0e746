#include "sidecar/builder/proposal_warmer.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "sidecar/builder/messages.h"
#include "sidecar/config.h"

namespace breaker::sidecar {

ProposalWarmer::ProposalWarmer(ProposalWarmerOptions options, const Clock& clock,
                               const client::BreakerClient& client)
    : options_(std::move(options)),
      clock_(clock),
      client_(client),
      api_(options_.base, options_.path_prefix, options_.limits, clock) {}

ProposalWarmer::~ProposalWarmer() { Stop(); }

void ProposalWarmer::OnRegistration(absl::string_view body, absl::string_view content_type) {
  {
    MutexLock lock(&mu_);
    if (pending_bytes_ + body.size() > options_.max_pending_bytes) {
      if (stats_.registrations_dropped++ % 100 == 0) {
        LOG(WARNING) << "validator registrations arrive faster than they are read: one of "
                     << body.size() << " bytes dropped (" << stats_.registrations_dropped
                     << " so far)";
      }
      return;
    }
    pending_bytes_ += body.size();
    pending_.push_back(Pending{std::string(body), IsSsz(content_type)});
    wake_ = true;
  }
  wake_cv_.SignalAll();
}

void ProposalWarmer::OnChainReorg() {
  {
    MutexLock lock(&mu_);
    duties_stale_ = true;
    wake_ = true;
  }
  wake_cv_.SignalAll();
}

void ProposalWarmer::SetTargets(std::vector<WarmTarget> targets) {
  targets_ = std::move(targets);
  MutexLock lock(&mu_);
  stats_.upstreams.clear();
  for (const WarmTarget& target : targets_) {
    stats_.upstreams.push_back(ProposalWarmerStats::Upstream{target.identity.relay_id});
  }
}

void ProposalWarmer::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ProposalWarmer::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void ProposalWarmer::Loop() {
  while (true) {
    const absl::Duration next = Tick();
    // The clock may be a test's, which waits do not follow: at most tick_interval of real
    // time goes by before the clock is read again (a wait, not a reading of the time).
    const absl::Duration wait = std::min(next, options_.tick_interval);
    MutexLock lock(&mu_);
    for (bool timed_out = false; !stopping_ && !wake_ && !timed_out;) {
      timed_out = wake_cv_.WaitFor(&mu_, wait);
    }
    if (stopping_) return;
    wake_ = false;
  }
}

absl::Duration ProposalWarmer::Tick() {
  const core::ChainSpec& chain = options_.chain;
  const absl::Time now = clock_.Now();
  const core::Slot slot = core::SlotAt(now, chain);
  const core::Epoch epoch = core::EpochOf(slot, chain);
  // First what is due now; the beacon node's reads may take a while.
  WarmDue(now, slot);
  LearnPending();
  if (now >= beacon_retry_at_ && !(ResolveIndices(epoch) && ReadDuties(epoch))) {
    beacon_retry_at_ = now + absl::Seconds(chain.seconds_per_slot);
  }

  absl::Time next = core::StartOf(core::FirstSlotOf(epoch + 1, chain), chain);
  MutexLock lock(&mu_);
  // The first proposal after the current slot is the next to warm for, unless it was.
  auto ahead = proposals_.upper_bound(slot);
  if (ahead != proposals_.end() && warmed_slots_.count(ahead->first) == 0) {
    next = std::min(next, core::StartOf(ahead->first - 1, chain));
  }
  const core::Slot last = core::FirstSlotOf(epoch + 1, chain) - 1;
  if (slot < last && NextEpochDutiesUnknown(last))
    next = std::min(next, core::StartOf(last, chain));
  return std::max(absl::ZeroDuration(), next - now);
}

void ProposalWarmer::WarmDue(absl::Time now, core::Slot slot) {
  core::Slot proposal = 0;
  std::string proposer;
  {
    MutexLock lock(&mu_);
    proposals_.erase(proposals_.begin(), proposals_.lower_bound(slot));
    warmed_slots_.erase(warmed_slots_.begin(), warmed_slots_.lower_bound(slot));
    // A proposal in the current slot is not warmed for: its getHeader is already under way.
    auto ahead = proposals_.upper_bound(slot);
    if (ahead != proposals_.end() && ahead->first == slot + 1) {
      if (!warmed_slots_.insert(ahead->first).second) return;
      proposal = ahead->first;
      proposer = absl::StrCat("validator ", ahead->second.substr(0, 14), "... proposes");
    } else if (NextEpochDutiesUnknown(slot) && warmed_slots_.insert(slot + 1).second) {
      // The duties of the next epoch may come only once it begins, too late for its first
      // slot: warm as if one of the node's validators proposed there.
      ++stats_.unknown_duty_warmups;
      proposal = slot + 1;
      proposer = "the beacon node has not given the proposer duties of the epoch that begins";
    } else {
      return;
    }
  }
  LOG(INFO) << proposer << " at slot " << proposal << ": warming the connections to "
            << targets_.size() << " upstream(s) at " << absl::FormatTime(now);
  // In parallel: one slow upstream must not leave the others cold.
  std::vector<std::thread> warming;
  warming.reserve(targets_.size());
  for (size_t i = 0; i < targets_.size(); ++i) warming.emplace_back([this, i] { Warm(i); });
  for (std::thread& thread : warming) thread.join();
}

void ProposalWarmer::Warm(size_t target) {
  const WarmTarget& upstream = targets_[target];
  // As the enforcer decides for a header: what it would refuse is never contacted.
  if (RefusalReason(client_.policy()->policy, upstream.identity).has_value()) {
    MutexLock lock(&mu_);
    ++stats_.upstreams[target].refused;
    return;
  }
  const absl::Status warmed = upstream.pool->Warm(upstream.status_path, options_.warm_budget);
  if (!warmed.ok()) {
    LOG(WARNING) << "cannot warm the connection to " << upstream.identity.relay_id
                 << " before the proposal: " << warmed.message();
  }
  MutexLock lock(&mu_);
  ++(warmed.ok() ? stats_.upstreams[target].warmed : stats_.upstreams[target].failed);
}

void ProposalWarmer::LearnPending() {
  std::deque<Pending> pending;
  {
    MutexLock lock(&mu_);
    pending.swap(pending_);
    pending_bytes_ = 0;
  }
  for (const Pending& body : pending) {
    // mev-boost sends the node's registrations to every relay: one body through each port.
    const size_t hash = std::hash<std::string>()(body.body);
    if (std::find(recent_bodies_.begin(), recent_bodies_.end(), hash) != recent_bodies_.end()) {
      continue;
    }
    recent_bodies_.push_back(hash);
    if (recent_bodies_.size() > kMaxUpstreams) recent_bodies_.pop_front();
    Registrations read = ReadRegistrations(body.body, body.ssz);
    MutexLock lock(&mu_);
    stats_.invalid_registrations += read.invalid;
    for (std::string& key : read.pubkeys) AddKey(std::move(key));
  }
}

void ProposalWarmer::AddKey(std::string pubkey) {
  auto [it, added] = keys_.try_emplace(pubkey);
  if (!added) {
    // Registered again: the most recent now.
    order_.splice(order_.end(), order_, it->second.order);
    return;
  }
  it->second.order = order_.insert(order_.end(), std::move(pubkey));
  if (keys_.size() > options_.max_keys) {
    keys_.erase(order_.front());
    order_.pop_front();
  }
}

bool ProposalWarmer::ResolveIndices(core::Epoch epoch) {
  std::vector<std::string> unknown;
  {
    MutexLock lock(&mu_);
    for (const auto& [pubkey, key] : keys_) {
      if (!key.index.has_value() && key.asked_at != epoch) unknown.push_back(pubkey);
    }
  }
  bool learned = false;
  for (size_t at = 0; at < unknown.size(); at += kMaxValidatorIdsPerRead) {
    const std::vector<std::string> batch(
        unknown.begin() + at,
        unknown.begin() + std::min(unknown.size(), at + kMaxValidatorIdsPerRead));
    absl::StatusOr<std::vector<ValidatorKeyIndex>> indices = api_.GetValidatorIndices(batch);
    if (!indices.ok()) {
      LOG(WARNING) << "cannot read the indices of the node's validators (retrying in a slot): "
                   << indices.status().message();
      return false;
    }
    MutexLock lock(&mu_);
    if (stopping_) return true;
    for (const std::string& pubkey : batch) {
      if (auto it = keys_.find(pubkey); it != keys_.end()) it->second.asked_at = epoch;
    }
    for (const ValidatorKeyIndex& found : *indices) {
      auto it = keys_.find(found.pubkey);
      if (it == keys_.end() || it->second.index.has_value()) continue;
      it->second.index = found.index;
      learned = true;
    }
  }
  if (learned) {
    MutexLock lock(&mu_);
    duties_stale_ = true;
    const size_t indexed = static_cast<size_t>(std::count_if(
        keys_.begin(), keys_.end(), [](const auto& key) { return key.second.index.has_value(); }));
    LOG(INFO) << indexed << " of the " << keys_.size()
              << " validator keys registered through the sidecar have an index";
  }
  return true;
}

bool ProposalWarmer::NextEpochDutiesUnknown(core::Slot slot) const {
  const core::ChainSpec& chain = options_.chain;
  const core::Epoch next = core::EpochOf(slot + 1, chain);
  return core::FirstSlotOf(next, chain) == slot + 1 && duties_epoch_.has_value() &&
         duties_read_.count(next) == 0;
}

bool ProposalWarmer::ReadDuties(core::Epoch epoch) {
  const core::ChainSpec& chain = options_.chain;
  {
    MutexLock lock(&mu_);
    const bool indexed = std::any_of(keys_.begin(), keys_.end(),
                                     [](const auto& key) { return key.second.index.has_value(); });
    if (!indexed) return true;
    // Every epoch's duties are read again when it begins, and after a reorg or new keys.
    if (duties_stale_ || duties_epoch_ != epoch) duties_read_.clear();
    duties_stale_ = false;
  }
  duties_epoch_ = epoch;
  duties_failure_logged_.erase(duties_failure_logged_.begin(),
                               duties_failure_logged_.lower_bound(epoch));
  bool complete = true;
  for (core::Epoch read : {epoch, epoch + 1}) {
    if (duties_read_.count(read) != 0) continue;
    absl::StatusOr<std::vector<ProposerDuty>> duties =
        api_.GetProposerDuties(read, chain.slots_per_epoch);
    if (!duties.ok()) {
      complete = false;
      {
        MutexLock lock(&mu_);
        ++stats_.duty_read_failures;
      }
      if (duties_failure_logged_.insert(read).second) {
        LOG(WARNING) << "cannot read the proposer duties of epoch " << read
                     << " (retrying every slot; further failures for this epoch are counted, "
                        "not logged): "
                     << duties.status().message();
      }
      continue;  // What was read of the other epoch stands.
    }
    duties_read_.insert(read);
    MutexLock lock(&mu_);
    const core::Slot first = core::FirstSlotOf(read, chain);
    const core::Slot end = core::FirstSlotOf(read + 1, chain);
    std::map<core::Slot, std::string> before(proposals_.lower_bound(first),
                                             proposals_.lower_bound(end));
    proposals_.erase(proposals_.lower_bound(first), proposals_.lower_bound(end));
    for (const ProposerDuty& duty : *duties) {
      auto key = keys_.find(duty.pubkey);
      if (key == keys_.end() || key->second.index != duty.validator_index) continue;
      proposals_[duty.slot] = duty.pubkey;
      if (before.count(duty.slot) == 0 && warmed_slots_.count(duty.slot) == 0) {
        ++stats_.proposals_scheduled;
        LOG(INFO) << "validator " << duty.pubkey.substr(0, 14) << "... (index "
                  << duty.validator_index << ") proposes at slot " << duty.slot;
      }
    }
  }
  return complete;
}

ProposalWarmerStats ProposalWarmer::stats() const {
  MutexLock lock(&mu_);
  ProposalWarmerStats stats = stats_;
  stats.keys_known = keys_.size();
  stats.keys_indexed = static_cast<uint64_t>(std::count_if(
      keys_.begin(), keys_.end(), [](const auto& key) { return key.second.index.has_value(); }));
  return stats;
}

}  // namespace breaker::sidecar
