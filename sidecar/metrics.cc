#include "sidecar/metrics.h"

#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "common/metrics_exposer.h"
#include "core/policy.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace breaker::sidecar {
namespace {

using Label = prometheus::ClientMetric::Label;

prometheus::MetricFamily Family(std::string name, std::string help, prometheus::MetricType type) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

void AddGauge(prometheus::MetricFamily& family, double value, std::vector<Label> labels = {}) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  metric.gauge.value = value;
  family.metric.push_back(std::move(metric));
}

void AddCounter(prometheus::MetricFamily& family, double value, std::vector<Label> labels = {}) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  metric.counter.value = value;
  family.metric.push_back(std::move(metric));
}

// Upper bounds, in seconds: a relay is 1 to 500 ms away (a round trip or two for an answer),
// and a getHeader's deadline is about a second; a reveal may take a few.
const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* const buckets = new prometheus::Histogram::BucketBoundaries{
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 2, 4};
  return *buckets;
}

}  // namespace

UpstreamLatency::UpstreamLatency(std::vector<std::string> upstreams)
    : upstreams_(std::move(upstreams)) {
  for (size_t i = 0; i < upstreams_.size() * std::size(kRoutes); ++i) {
    histograms_.push_back(std::make_unique<prometheus::Histogram>(LatencyBuckets()));
  }
}

size_t UpstreamLatency::RouteIndex(Endpoint endpoint) {
  for (size_t i = 0; i < std::size(kRoutes); ++i) {
    if (kRoutes[i] == endpoint) return i;
  }
  return std::size(kRoutes) - 1;  // other
}

absl::string_view UpstreamLatency::RouteLabel(Endpoint endpoint) {
  switch (kRoutes[RouteIndex(endpoint)]) {
    case Endpoint::kStatus:
      return "status";
    case Endpoint::kGetHeader:
      return "header";
    case Endpoint::kSubmitBlindedBlock:
      return "blinded_blocks";
    case Endpoint::kRegisterValidators:
      return "register_validators";
    default:
      return "other";
  }
}

void UpstreamLatency::Observe(size_t index, Endpoint endpoint, absl::Duration answer_time) {
  histograms_.at(index * std::size(kRoutes) + RouteIndex(endpoint))
      ->Observe(absl::ToDoubleSeconds(answer_time));
}

prometheus::MetricFamily UpstreamLatency::Collect() const {
  auto family = Family("breaker_sidecar_upstream_request_seconds",
                       "How long an upstream took to answer a forwarded request (any status; "
                       "no answer counts as an upstream_error instead), by upstream and route: "
                       "status, header, blinded_blocks, register_validators, other (the Gloas "
                       "endpoints).",
                       prometheus::MetricType::Histogram);
  for (size_t i = 0; i < upstreams_.size(); ++i) {
    for (size_t r = 0; r < std::size(kRoutes); ++r) {
      prometheus::ClientMetric metric = histograms_[i * std::size(kRoutes) + r]->Collect();
      metric.label = {{"upstream", upstreams_[i]}, {"route", std::string(RouteLabel(kRoutes[r]))}};
      family.metric.push_back(std::move(metric));
    }
  }
  return family;
}

class Metrics::Collector final : public prometheus::Collectable {
 public:
  Collector(const Enforcer& enforcer, const client::BreakerClient& client,
            const BeaconWatcher* watcher, std::vector<const UpstreamPool*> pools)
      : enforcer_(enforcer), client_(client), watcher_(watcher), pools_(std::move(pools)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    using prometheus::MetricType;
    auto refusals = Family("breaker_sidecar_refused_total",
                           "Requests answered 204 by the policy, by upstream and reason: "
                           "self_build (mode SELF_BUILD), relay_banned (the upstream's relay is "
                           "banned), not_trusted (mode TRUSTED_ONLY and the upstream is not "
                           "trusted), builder_banned (a Gloas bid's builder is banned), "
                           "unreadable_bid (a Gloas bid whose builder cannot be read).",
                           MetricType::Counter);
    auto requests = Family("breaker_sidecar_requests_total",
                           "Builder API requests by upstream and outcome: forwarded (the "
                           "upstream's answer passed back), refused (204 by the policy), "
                           "upstream_error (no answer, a timeout, an answer too large, or 5xx).",
                           MetricType::Counter);
    auto headers =
        Family("breaker_sidecar_headers_seen_total",
               "Pre-Gloas headers (getHeader 200) passed back, by upstream.", MetricType::Counter);
    auto bids = Family("breaker_sidecar_bids_seen_total",
                       "Gloas bids whose builder index was read, each reported to breakerd as "
                       "a bid seen, by upstream.",
                       MetricType::Counter);
    auto malformed = Family("breaker_sidecar_malformed_answers_total",
                            "200 answers to a header or bid request that could not be read, by "
                            "upstream.",
                            MetricType::Counter);
    auto reveals = Family("breaker_sidecar_reveal_failures_total",
                          "Payloads an upstream signed a header for and failed to reveal, each "
                          "reported to breakerd, by upstream.",
                          MetricType::Counter);
    auto unreadable = Family("breaker_sidecar_unreadable_blocks_total",
                             "Failed reveals whose block root could not be computed, so not "
                             "reported to breakerd (each logged with the reason), by upstream.",
                             MetricType::Counter);
    for (size_t i = 0; i < enforcer_.upstream_count(); ++i) {
      const std::string& upstream = enforcer_.upstream(i).relay_id;
      const Enforcer::Counters counts = enforcer_.counters(i);
      AddCounter(requests, static_cast<double>(counts.forwarded),
                 {{"upstream", upstream}, {"outcome", "forwarded"}});
      AddCounter(requests, static_cast<double>(counts.refused),
                 {{"upstream", upstream}, {"outcome", "refused"}});
      AddCounter(requests, static_cast<double>(counts.upstream_errors),
                 {{"upstream", upstream}, {"outcome", "upstream_error"}});
      for (RefusalCause cause : kRefusalCauses) {
        AddCounter(refusals,
                   static_cast<double>(counts.refused_by_cause[static_cast<size_t>(cause)]),
                   {{"upstream", upstream}, {"reason", std::string(RefusalCauseLabel(cause))}});
      }
      AddCounter(headers, static_cast<double>(counts.headers_seen), {{"upstream", upstream}});
      AddCounter(bids, static_cast<double>(counts.bids_seen), {{"upstream", upstream}});
      AddCounter(malformed, static_cast<double>(counts.malformed_answers),
                 {{"upstream", upstream}});
      AddCounter(reveals, static_cast<double>(counts.reveal_failures), {{"upstream", upstream}});
      AddCounter(unreadable, static_cast<double>(counts.unreadable_blocks),
                 {{"upstream", upstream}});
    }

    const std::shared_ptr<const client::PolicySnapshot> snapshot = client_.policy();
    const client::ClientStats stats = client_.stats();
    auto version = Family("breaker_sidecar_policy_version",
                          "Version of the fleet policy in force; 0 before any reached the "
                          "sidecar.",
                          MetricType::Gauge);
    AddGauge(version, static_cast<double>(snapshot->fleet_version));
    auto source = Family("breaker_sidecar_policy_source",
                         "Where the policy in force comes from: 1 for the source in force "
                         "(fleet; fleet+local: breakerd unreachable past the staleness limit or "
                         "not caught up; local: no fleet policy yet), 0 for the others.",
                         MetricType::Gauge);
    for (client::PolicySource each :
         {client::PolicySource::kFleet, client::PolicySource::kFleetAndLocal,
          client::PolicySource::kLocal}) {
      AddGauge(source, snapshot->source == each ? 1 : 0,
               {{"source", std::string(client::PolicySourceName(each))}});
    }
    auto mode =
        Family("breaker_sidecar_mode",
               "The mode of the policy in force: 1 for it, 0 for the others.", MetricType::Gauge);
    for (core::Mode each :
         {core::Mode::kAllBuilders, core::Mode::kTrustedOnly, core::Mode::kSelfBuild}) {
      AddGauge(mode, snapshot->policy.mode == each ? 1 : 0,
               {{"mode", absl::AsciiStrToLower(core::ModeName(each))}});
    }
    auto connected =
        Family("breaker_sidecar_breakerd_connected",
               "1 while the client library holds a stream to breakerd.", MetricType::Gauge);
    AddGauge(connected, stats.connected ? 1 : 0);
    auto reconnects =
        Family("breaker_sidecar_breakerd_reconnects_total",
               "Reconnections of the client library to breakerd.", MetricType::Counter);
    AddCounter(reconnects, static_cast<double>(stats.reconnects));
    auto buffered =
        Family("breaker_sidecar_observations_buffered",
               "Observations waiting for breakerd's acknowledgement.", MetricType::Gauge);
    AddGauge(buffered, static_cast<double>(stats.buffered));
    auto dropped = Family("breaker_sidecar_observations_dropped_total",
                          "Observations dropped because the buffer was full.", MetricType::Counter);
    AddCounter(dropped, static_cast<double>(stats.dropped_bids + stats.dropped_other +
                                            stats.dropped_failures));

    std::vector<prometheus::MetricFamily> families;
    for (auto* family : {&requests, &refusals, &headers, &bids, &malformed, &reveals, &version,
                         &source, &mode, &connected, &reconnects, &buffered, &dropped}) {
      families.push_back(std::move(*family));
    }
    if (watcher_ != nullptr) AddBeaconNode(watcher_->stats(), families);
    AddPools(families);
    return families;
  }

 private:
  // The connections to each upstream (sidecar/builder/upstream_pool.h), labelled as the requests
  // are.
  void AddPools(std::vector<prometheus::MetricFamily>& families) const {
    using prometheus::MetricType;
    auto hits = Family("breaker_sidecar_upstream_connection_reuses_total",
                       "Requests to an upstream that found a kept-alive connection open.",
                       MetricType::Counter);
    auto misses = Family("breaker_sidecar_upstream_connections_opened_total",
                         "Requests to an upstream that had to open a connection (TCP, and TLS "
                         "for https).",
                         MetricType::Counter);
    auto handshakes =
        Family("breaker_sidecar_upstream_tls_handshakes_total",
               "TLS handshakes with an upstream, full or resumed.", MetricType::Counter);
    auto tls_failures = Family("breaker_sidecar_upstream_tls_failures_total",
                               "Exchanges with an upstream that failed its TLS handshake or "
                               "certificate verification (the log names OpenSSL's reason).",
                               MetricType::Counter);
    auto warmed = Family("breaker_sidecar_upstream_warmed_total",
                         "Connections to an upstream opened or checked ahead of one of the "
                         "node's proposals.",
                         MetricType::Counter);
    auto warmed_used =
        Family("breaker_sidecar_upstream_warmed_used_total",
               "Requests that used a connection warmed for a proposal.", MetricType::Counter);
    auto idle =
        Family("breaker_sidecar_upstream_idle_connections",
               "Kept-alive connections to an upstream now idle in the pool.", MetricType::Gauge);
    for (const UpstreamPool* pool : pools_) {
      const UpstreamPoolStats stats = pool->stats();
      const std::vector<Label> labels = {{"upstream", pool->name()}};
      AddCounter(hits, static_cast<double>(stats.hits), labels);
      AddCounter(misses, static_cast<double>(stats.misses), labels);
      AddCounter(handshakes, static_cast<double>(stats.tls_handshakes), labels);
      AddCounter(tls_failures, static_cast<double>(stats.tls_failures), labels);
      AddCounter(warmed, static_cast<double>(stats.warmed), labels);
      AddCounter(warmed_used, static_cast<double>(stats.warmed_used), labels);
      AddGauge(idle, static_cast<double>(stats.idle_connections), labels);
    }
    for (auto* family :
         {&hits, &misses, &handshakes, &tls_failures, &warmed, &warmed_used, &idle}) {
      families.push_back(std::move(*family));
    }
  }

  // What the observer of the beacon node saw and reported, and how its reads went.
  static void AddBeaconNode(const BeaconWatcherStats& stats,
                            std::vector<prometheus::MetricFamily>& families) {
    auto reconnects = Family("breaker_sidecar_beacon_stream_reconnects_total",
                             "Event streams from the beacon node reopened after one ended",
                             prometheus::MetricType::Counter);
    AddCounter(reconnects, static_cast<double>(stats.reconnects));
    auto syncing = Family("breaker_sidecar_beacon_node_syncing",
                          "1 while the beacon node syncs (or is optimistic): nothing is reported",
                          prometheus::MetricType::Gauge);
    AddGauge(syncing, stats.syncing ? 1 : 0);
    auto bad = Family("breaker_sidecar_beacon_bad_answers_total",
                      "Beacon API answers refused: malformed, too large or too slow",
                      prometheus::MetricType::Counter);
    AddCounter(bad, static_cast<double>(stats.api.bad_answers));
    auto dropped = Family("breaker_sidecar_beacon_events_dropped_total",
                          "Events of the beacon node's stream dropped: malformed, over-long or "
                          "beyond the rate bound",
                          prometheus::MetricType::Counter);
    AddCounter(dropped, static_cast<double>(stats.api.dropped_events));
    auto observed = Family("breaker_sidecar_observed_total",
                           "Blocks, empty slots and backfilled slots the observer reported",
                           prometheus::MetricType::Counter);
    AddCounter(observed, static_cast<double>(stats.observer.blocks), {{"kind", "block"}});
    AddCounter(observed, static_cast<double>(stats.observer.empty_slots), {{"kind", "empty_slot"}});
    AddCounter(observed, static_cast<double>(stats.observer.backfilled_slots),
               {{"kind", "backfilled_slot"}});
    auto mismatches = Family("breaker_sidecar_beacon_chain_mismatches_total",
                             "Reconnections that found the beacon node on another chain",
                             prometheus::MetricType::Counter);
    AddCounter(mismatches, static_cast<double>(stats.chain_mismatches));
    auto form = Family("breaker_sidecar_beacon_topics_form",
                       "The form of the event stream's topics query in use: 1 for it (repeated: "
                       "?topics=a&topics=b; comma: ?topics=a,b), 0 for the other",
                       prometheus::MetricType::Gauge);
    for (TopicsForm each : {TopicsForm::kRepeated, TopicsForm::kComma}) {
      AddGauge(form, stats.topics_form == each ? 1 : 0,
               {{"form", std::string(TopicsFormName(each))}});
    }
    for (auto* family : {&reconnects, &syncing, &bad, &dropped, &observed, &mismatches, &form}) {
      families.push_back(std::move(*family));
    }
  }

  const Enforcer& enforcer_;
  const client::BreakerClient& client_;
  const BeaconWatcher* const watcher_;
  const std::vector<const UpstreamPool*> pools_;
};

// The proposal warmer's keys, proposals and warm-ups (sidecar/builder/proposal_warmer.h).
class Metrics::WarmerCollector final : public prometheus::Collectable {
 public:
  explicit WarmerCollector(const ProposalWarmer& warmer) : warmer_(warmer) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    using prometheus::MetricType;
    const ProposalWarmerStats stats = warmer_.stats();
    auto keys = Family("breaker_sidecar_validator_keys",
                       "Validator public keys learned from the registrations the node sent.",
                       MetricType::Gauge);
    AddGauge(keys, static_cast<double>(stats.keys_known));
    auto indexed = Family("breaker_sidecar_validator_keys_indexed",
                          "Of those, the keys the beacon node knows a validator index for.",
                          MetricType::Gauge);
    AddGauge(indexed, static_cast<double>(stats.keys_indexed));
    auto invalid = Family("breaker_sidecar_validator_registrations_invalid_total",
                          "Registration entries (or bodies) that were no "
                          "SignedValidatorRegistrationV1, ignored.",
                          MetricType::Counter);
    AddCounter(invalid, static_cast<double>(stats.invalid_registrations));
    auto scheduled =
        Family("breaker_sidecar_proposals_scheduled_total",
               "Proposal slots of the node's validators found in the duties.", MetricType::Counter);
    AddCounter(scheduled, static_cast<double>(stats.proposals_scheduled));
    auto warmups = Family("breaker_sidecar_proposal_warmups_total",
                          "Warm-ups of an upstream's connection one slot before a proposal: "
                          "warmed (a checked connection left open), failed, refused (not "
                          "contacted: the policy refuses the upstream).",
                          MetricType::Counter);
    for (const ProposalWarmerStats::Upstream& upstream : stats.upstreams) {
      AddCounter(warmups, static_cast<double>(upstream.warmed),
                 {{"upstream", upstream.relay_id}, {"outcome", "warmed"}});
      AddCounter(warmups, static_cast<double>(upstream.failed),
                 {{"upstream", upstream.relay_id}, {"outcome", "failed"}});
      AddCounter(warmups, static_cast<double>(upstream.refused),
                 {{"upstream", upstream.relay_id}, {"outcome", "refused"}});
    }
    std::vector<prometheus::MetricFamily> families;
    for (auto* family : {&keys, &indexed, &invalid, &scheduled, &warmups}) {
      families.push_back(std::move(*family));
    }
    return families;
  }

 private:
  const ProposalWarmer& warmer_;
};

// The upstreams' answer times, measured by the proxy.
class Metrics::LatencyCollector final : public prometheus::Collectable {
 public:
  explicit LatencyCollector(const UpstreamLatency& latency) : latency_(latency) {}

  std::vector<prometheus::MetricFamily> Collect() const override { return {latency_.Collect()}; }

 private:
  const UpstreamLatency& latency_;
};

// The validator port: block production by mode and source, and what it rewrote.
class Metrics::ValidatorPortCollector final : public prometheus::Collectable {
 public:
  explicit ValidatorPortCollector(const validator::ValidatorPort& port) : port_(port) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    using prometheus::MetricType;
    const validator::ValidatorPortCounters counters = port_.counters();
    static constexpr core::Mode kModes[] = {core::Mode::kAllBuilders, core::Mode::kTrustedOnly,
                                            core::Mode::kSelfBuild};
    static constexpr validator::PayloadSource kSources[] = {
        validator::PayloadSource::kBuilderApi, validator::PayloadSource::kP2p,
        validator::PayloadSource::kLocal, validator::PayloadSource::kUnknown};
    auto requests =
        Family("breaker_sidecar_validator_requests_total",
               "Requests of the validator client on the validator port.", MetricType::Counter);
    AddCounter(requests, static_cast<double>(counters.requests));
    auto unreachable = Family("breaker_sidecar_validator_beacon_node_unreachable_total",
                              "Requests the validator port answered 503 or 504: the beacon node "
                              "was down or sent no answer in time.",
                              MetricType::Counter);
    AddCounter(unreachable, static_cast<double>(counters.beacon_node_unreachable));
    auto rewritten = Family("breaker_sidecar_block_production_rewritten_total",
                            "produceBlockV4 bodies and produceBlockV3 queries the policy changed, "
                            "by the mode in force when the request arrived.",
                            MetricType::Counter);
    auto unreadable = Family("breaker_sidecar_block_production_unreadable_total",
                             "produceBlockV4 bodies whose top level could not be read: forwarded "
                             "untouched in ALL_BUILDERS, replaced by the self-build config "
                             "otherwise.",
                             MetricType::Counter);
    auto blocks = Family("breaker_sidecar_blocks_produced_total",
                         "Blocks the beacon node produced through the validator port, by mode "
                         "and the payload's source (builder_api, p2p, local, unknown).",
                         MetricType::Counter);
    for (core::Mode mode : kModes) {
      const size_t m = static_cast<size_t>(mode);
      const std::string name = absl::AsciiStrToLower(core::ModeName(mode));
      AddCounter(rewritten, static_cast<double>(counters.rewritten_by_mode[m]), {{"mode", name}});
      AddCounter(unreadable, static_cast<double>(counters.unreadable_by_mode[m]), {{"mode", name}});
      for (validator::PayloadSource source : kSources) {
        AddCounter(
            blocks,
            static_cast<double>(counters.blocks_by_mode_and_source[m][static_cast<size_t>(source)]),
            {{"mode", name}, {"source", std::string(validator::PayloadSourceName(source))}});
      }
    }
    auto entries = Family("breaker_sidecar_builder_entries_dropped_total",
                          "produceBlockV4 builder entries dropped: malformed (the node would "
                          "ignore them too) or refused by the policy.",
                          MetricType::Counter);
    AddCounter(entries, static_cast<double>(counters.entries_malformed), {{"cause", "malformed"}});
    AddCounter(entries, static_cast<double>(counters.entries_refused), {{"cause", "refused"}});
    auto keys = Family("breaker_sidecar_builder_keys_dropped_total",
                       "Banned builders' keys dropped from the builder_pubkeys of entries kept.",
                       MetricType::Counter);
    AddCounter(keys, static_cast<double>(counters.keys_dropped));
    auto bids = Family("breaker_sidecar_validator_bids_total",
                       "Builder-API bids that won a produceBlockV4 through an entry other than "
                       "the sidecar's own ports: reported to breakerd, or unreported (the "
                       "builder could not be read from the answer, or the client library "
                       "refused the observation).",
                       MetricType::Counter);
    AddCounter(bids, static_cast<double>(counters.bids_reported), {{"outcome", "reported"}});
    AddCounter(bids, static_cast<double>(counters.bids_unreported), {{"outcome", "unreported"}});
    std::vector<prometheus::MetricFamily> families;
    for (auto* family :
         {&requests, &unreachable, &rewritten, &unreadable, &blocks, &entries, &keys, &bids}) {
      families.push_back(std::move(*family));
    }
    return families;
  }

 private:
  const validator::ValidatorPort& port_;
};

absl::StatusOr<std::unique_ptr<Metrics>> Metrics::Start(const std::string& listen_address,
                                                        MetricsSources sources) {
  absl::StatusOr<std::unique_ptr<prometheus::Exposer>> exposer =
      common::StartMetricsExposer(listen_address, "metrics_listen");
  if (!exposer.ok()) return exposer.status();
  std::unique_ptr<Metrics> metrics(new Metrics());
  metrics->exposer_ = *std::move(exposer);
  metrics->port_ = metrics->exposer_->GetListeningPorts().front();
  metrics->collector_ = std::make_shared<Collector>(*sources.enforcer, *sources.client,
                                                    sources.watcher, std::move(sources.pools));
  metrics->exposer_->RegisterCollectable(metrics->collector_);
  if (sources.warmer != nullptr) {
    metrics->warmer_collector_ = std::make_shared<WarmerCollector>(*sources.warmer);
    metrics->exposer_->RegisterCollectable(metrics->warmer_collector_);
  }
  if (sources.latency != nullptr) {
    metrics->latency_collector_ = std::make_shared<LatencyCollector>(*sources.latency);
    metrics->exposer_->RegisterCollectable(metrics->latency_collector_);
  }
  if (sources.validator_port != nullptr) {
    metrics->validator_port_collector_ =
        std::make_shared<ValidatorPortCollector>(*sources.validator_port);
    metrics->exposer_->RegisterCollectable(metrics->validator_port_collector_);
  }
  return metrics;
}

Metrics::~Metrics() {
  // Stop serving before the collector goes.
  exposer_.reset();
}

}  // namespace breaker::sidecar
