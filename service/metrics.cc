#include "service/metrics.h"

#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "breaker/v1/breaker.pb.h"
#include "common/metrics_exposer.h"
#include "common/mutex.h"
#include "core/policy.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;

// "out_of_range" for OUT_OF_RANGE: Prometheus label values are conventionally lower case.
std::string CodeLabel(absl::StatusCode code) {
  return absl::AsciiStrToLower(absl::StatusCodeToString(code));
}

std::string ModeLabel(core::Mode mode) {
  switch (mode) {
    case core::Mode::kAllBuilders:
      return "all_builders";
    case core::Mode::kTrustedOnly:
      return "trusted_only";
    case core::Mode::kSelfBuild:
      return "self_build";
  }
  return "unknown";
}

// "own" rather than the engine's "failure": the ban is for the builder's own failures, as
// opposed to a collateral one.
std::string CauseLabel(core::BanKind kind) {
  switch (kind) {
    case core::BanKind::kFailure:
      return "own";
    case core::BanKind::kOperator:
      return "operator";
    case core::BanKind::kCollateral:
      return "collateral";
  }
  return "unknown";
}

prometheus::MetricFamily Gauge(std::string name, std::string help) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = prometheus::MetricType::Gauge;
  return family;
}

void AddSample(prometheus::MetricFamily& family, double value,
               std::vector<prometheus::ClientMetric::Label> labels = {}) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  metric.gauge.value = value;
  family.metric.push_back(std::move(metric));
}

// Upper bounds, in seconds. A policy reaches a healthy node within milliseconds; a node that
// has not acknowledged the previous version gets the next one only then, which can take
// seconds. Store writes are fsyncs: sub-millisecond on NVMe, tens of ms on network disks.
const prometheus::Histogram::BucketBoundaries& FanOutBuckets() {
  static const auto* const buckets = new prometheus::Histogram::BucketBoundaries{
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  return *buckets;
}

const prometheus::Histogram::BucketBoundaries& StoreBuckets() {
  static const auto* const buckets = new prometheus::Histogram::BucketBoundaries{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
  return *buckets;
}

}  // namespace

// The gauges that describe the fleet's state, read from it at each scrape.
class Metrics::StateCollector final : public prometheus::Collectable {
 public:
  void SetFleet(const Fleet* fleet) {
    // Waits for a scrape in progress, so that the fleet can go once this returns.
    MutexLock lock(&mu_);
    fleet_ = fleet;
  }

  std::vector<prometheus::MetricFamily> Collect() const override {
    MutexLock lock(&mu_);
    if (fleet_ == nullptr) return {};
    const std::shared_ptr<const PublishedPolicy> published = fleet_->policy();
    const core::Policy& policy = published->policy;
    // Per node, under one lock of the fleet's registry; fleets are tens to hundreds of nodes,
    // so a series per node id stays within what Prometheus handles comfortably.
    const std::vector<v1::Node> nodes = fleet_->AllNodes();

    std::vector<prometheus::MetricFamily> families;
    families.push_back(Gauge("breakerd_policy_version",
                             "Version of the fleet's current policy (Admin.GetPolicy's version)."));
    AddSample(families.back(), static_cast<double>(policy.version));

    families.push_back(Gauge("breakerd_storage_writable",
                             "1 while the state store takes writes; 0 while it fails (disk "
                             "full, state directory not writable) and breakerd refuses "
                             "observations and changes."));
    AddSample(families.back(), fleet_->storage_status().ok() ? 1 : 0);

    families.push_back(Gauge("breakerd_mode",
                             "The fleet's fallback mode: 1 for the mode in force, 0 for the "
                             "others."));
    for (core::Mode mode :
         {core::Mode::kAllBuilders, core::Mode::kTrustedOnly, core::Mode::kSelfBuild}) {
      AddSample(families.back(), policy.mode == mode ? 1 : 0, {{"mode", ModeLabel(mode)}});
    }

    const core::BanKind kinds[] = {core::BanKind::kFailure, core::BanKind::kOperator,
                                   core::BanKind::kCollateral};
    families.push_back(Gauge("breakerd_banned_builders",
                             "Builders the policy bans, by cause: own (its own failures; only "
                             "these count toward the fallback modes), operator, collateral (a "
                             "relay serving it is banned)."));
    for (core::BanKind kind : kinds) {
      size_t count = 0;
      for (const auto& [builder, ban] : policy.banned_builders) count += ban.kind == kind;
      AddSample(families.back(), static_cast<double>(count), {{"cause", CauseLabel(kind)}});
    }
    families.push_back(Gauge("breakerd_banned_relays", "Relays the policy bans, by cause."));
    for (core::BanKind kind : kinds) {
      size_t count = 0;
      for (const auto& [relay, ban] : policy.banned_relays) count += ban.kind == kind;
      AddSample(families.back(), static_cast<double>(count), {{"cause", CauseLabel(kind)}});
    }

    prometheus::MetricFamily connected_count =
        Gauge("breakerd_connected_nodes", "Nodes holding a Connect stream now.");
    prometheus::MetricFamily known_count =
        Gauge("breakerd_known_nodes", "Nodes breakerd has heard of since its state began.");
    prometheus::MetricFamily connected =
        Gauge("breakerd_node_connected", "1 when the node holds a Connect stream now, else 0.");
    prometheus::MetricFamily lag = Gauge(
        "breakerd_node_policy_lag",
        "Policy versions the node has not acknowledged yet (Admin.ListNodes' lag); a connected "
        "node whose lag does not go back to 0 is stuck.");
    size_t connected_nodes = 0;
    for (const v1::Node& node : nodes) {
      connected_nodes += node.connected();
      AddSample(connected, node.connected() ? 1 : 0, {{"node_id", node.node_id()}});
      AddSample(lag, static_cast<double>(node.lag()), {{"node_id", node.node_id()}});
    }
    AddSample(connected_count, static_cast<double>(connected_nodes));
    AddSample(known_count, static_cast<double>(nodes.size()));
    families.push_back(std::move(connected_count));
    families.push_back(std::move(known_count));
    families.push_back(std::move(connected));
    families.push_back(std::move(lag));
    return families;
  }

 private:
  mutable Mutex mu_;
  const Fleet* fleet_ ABSL_GUARDED_BY(mu_) = nullptr;
};

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      state_(std::make_shared<StateCollector>()),
      observations_family_(
          prometheus::BuildCounter()
              .Name("breakerd_observations_total")
              .Help("Node observations handled, by kind (the event's field in "
                    "breaker.v1.Observation) and outcome (applied, no_effect, duplicate: a "
                    "replay, refused).")
              .Register(*registry_)),
      refused_family_(prometheus::BuildCounter()
                          .Name("breakerd_refused_total")
                          .Help("Input refused, by gRPC status code and input: observation "
                                "(one of a batch), message (a Connect stream, ended), report (a "
                                "Report call).")
                          .Register(*registry_)),
      failures_family_(prometheus::BuildCounter()
                           .Name("breakerd_failures_recorded_total")
                           .Help("Failures recorded against a builder or relay: failure "
                                 "reports whose vote completed.")
                           .Register(*registry_)),
      store_write_family_(prometheus::BuildHistogram()
                              .Name("breakerd_store_write_seconds")
                              .Help("Durable writes of the state store, by operation: append "
                                    "(a group commit of journal entries), snapshot.")
                              .Register(*registry_)) {
  const google::protobuf::OneofDescriptor* events =
      v1::Observation::descriptor()->FindOneofByName("event");
  std::vector<std::string> kinds = {"none"};
  for (int i = 0; i < events->field_count(); ++i) kinds.push_back(events->field(i)->name());
  for (const std::string& kind : kinds) {
    for (ObservationOutcome outcome : kObservationOutcomes) {
      observations_[{kind, outcome}] =
          &observations_family_.Add({{"kind", kind}, {"outcome", std::string(Label(outcome))}});
    }
  }
  for (RefusedInput input : kRefusedInputs) {
    for (int code = 1; code <= static_cast<int>(absl::StatusCode::kUnauthenticated); ++code) {
      const auto status_code = static_cast<absl::StatusCode>(code);
      refused_[{input, status_code}] = &refused_family_.Add(
          {{"input", std::string(Label(input))}, {"code", CodeLabel(status_code)}});
    }
  }
  for (FailureTarget target : kFailureTargets) {
    failures_[target] = &failures_family_.Add({{"target", std::string(Label(target))}});
  }
  for (StoreOperation operation : kStoreOperations) {
    store_writes_[operation] =
        &store_write_family_.Add({{"operation", std::string(Label(operation))}}, StoreBuckets());
  }
  fan_out_ = &prometheus::BuildHistogram()
                  .Name("breakerd_policy_fanout_seconds")
                  .Help(
                      "From a policy version's publication to the end of its write on each "
                      "node stream subscribed at the time.")
                  .Register(*registry_)
                  .Add({}, FanOutBuckets());
  prometheus::Family<prometheus::Counter>& write_timeouts =
      prometheus::BuildCounter()
          .Name("breakerd_write_timeouts_total")
          .Help(
              "Streams ended because a message breakerd wrote to them was not read within "
              "--write_timeout_seconds: the peer stopped reading. By rpc: connect (a node's "
              "stream), watch_policy.")
          .Register(*registry_);
  for (StreamRpc rpc : kStreamRpcs) {
    write_timeouts_[rpc] = &write_timeouts.Add({{"rpc", std::string(Label(rpc))}});
  }
}

absl::StatusOr<std::unique_ptr<Metrics>> Metrics::Start(const std::string& listen_address) {
  std::unique_ptr<Metrics> metrics(new Metrics());
  absl::StatusOr<std::unique_ptr<common::MetricsServer>> exposer =
      common::StartMetricsExposer(listen_address, "--metrics_listen");
  if (!exposer.ok()) return exposer.status();
  metrics->exposer_ = *std::move(exposer);
  metrics->port_ = metrics->exposer_->GetListeningPorts().front();
  metrics->exposer_->RegisterCollectable(metrics->registry_);
  metrics->exposer_->RegisterCollectable(metrics->state_);
  return metrics;
}

Metrics::~Metrics() {
  // Stop serving before the registry and collectors go.
  exposer_.reset();
}

void Metrics::SetFleet(const Fleet* fleet) { state_->SetFleet(fleet); }

void Metrics::ReportReplica(std::shared_ptr<std::atomic<uint64_t>> leadership_changes) {
  etcd_reachable_ = &prometheus::BuildGauge()
                         .Name("breakerd_etcd_reachable")
                         .Help(
                             "1 when etcd answered this replica's last call to it (lease "
                             "grant or keepalive, campaign, read, write), even with a "
                             "refusal; 0 when no endpoint answered in time. Leader and "
                             "standby alike; absent on SQLite.")
                         .Register(*registry_)
                         .Add({});
  leader_ = &prometheus::BuildGauge()
                 .Name("breakerd_leader")
                 .Help(
                     "1 while this replica holds the leader key in etcd, 0 while it is a "
                     "standby (campaigning). Exactly one replica of a prefix should be at 1.")
                 .Register(*registry_)
                 .Add({});
  leadership_changes_ =
      &prometheus::BuildCounter()
           .Name("breakerd_leadership_changes_total")
           .Help(
               "Times this breakerd process took or lost the lead in etcd (a loss is "
               "counted once etcd deposed it, or a won lead could not restore its state).")
           .Register(*registry_)
           .Add({});
  leadership_changes_->Increment(static_cast<double>(leadership_changes->load()));
  leadership_tally_ = std::move(leadership_changes);
}

void Metrics::EtcdAnswered(bool answered) { etcd_reachable_->Set(answered ? 1 : 0); }

void Metrics::LeadershipChanged(bool leading) {
  // A lead lost twice (etcd deposed the store while the state it won was restored, which then
  // failed) is one change.
  if (leading_.exchange(leading) == leading) return;
  leader_->Set(leading ? 1 : 0);
  leadership_tally_->fetch_add(1);
  leadership_changes_->Increment();
}

void Metrics::ObservationHandled(absl::string_view kind, ObservationOutcome outcome) {
  auto it = observations_.find(std::make_pair(std::string(kind), outcome));
  if (it != observations_.end()) {
    it->second->Increment();
  } else {
    // A kind newer than the descriptor the series were made from.
    observations_family_
        .Add({{"kind", std::string(kind)}, {"outcome", std::string(Label(outcome))}})
        .Increment();
  }
}

void Metrics::Refused(RefusedInput input, absl::StatusCode code) {
  auto it = refused_.find(std::make_pair(input, code));
  if (it != refused_.end()) {
    it->second->Increment();
  } else {
    // Only OK and codes above UNAUTHENTICATED are not made up front.
    refused_family_.Add({{"input", std::string(Label(input))}, {"code", CodeLabel(code)}})
        .Increment();
  }
}

// Every target and operation has its series from the start.
void Metrics::FailureRecorded(FailureTarget target) { failures_.at(target)->Increment(); }

void Metrics::StoreWrite(StoreOperation operation, absl::Duration duration) {
  store_writes_.at(operation)->Observe(absl::ToDoubleSeconds(duration));
}

void Metrics::FanOut(absl::Duration latency) { fan_out_->Observe(absl::ToDoubleSeconds(latency)); }

void Metrics::WriteTimedOut(StreamRpc rpc) { write_timeouts_.at(rpc)->Increment(); }

}  // namespace breaker::service
