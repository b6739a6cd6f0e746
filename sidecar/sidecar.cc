#include "sidecar/sidecar.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "client/channel_security.h"
#include "common/clock.h"
#include "core/relay_id.h"
#include "proto/codec/config_file.h"

namespace breaker::sidecar {

namespace {

// The client library's options: breakerd's addresses, TLS and token, the node, and the local
// fallback configuration.
absl::StatusOr<client::ClientOptions> ClientOptionsFrom(const SidecarSettings& settings) {
  client::ClientOptions options;
  options.addresses = settings.breakerd_addresses;
  absl::StatusOr<client::ChannelSecurity> security = client::SecurityFromFiles(
      {settings.tls_ca_file, settings.tls_cert_file, settings.tls_key_file}, settings.token_file);
  if (!security.ok()) return security.status();
  options.credentials = std::move(security->credentials);
  options.bearer_token = std::move(security->bearer_token);
  options.node_id = settings.node_id;
  options.network = settings.network;
  if (!settings.fallback_config_file.empty()) {
    absl::StatusOr<core::Config> fallback = codec::LoadConfigFile(settings.fallback_config_file);
    if (!fallback.ok()) return fallback.status();
    options.fallback_config = *std::move(fallback);
  }
  options.client_version = "breaker-sidecar/1";
  if (settings.staleness_limit > absl::ZeroDuration()) {
    options.staleness_limit = settings.staleness_limit;
  }
  return options;
}

// The urls a validator client's BuilderEntry may name the sidecar's upstream ports by, each
// normalized, with the upstream behind it.
absl::flat_hash_map<std::string, validator::OwnPortUpstream> OwnPorts(
    const SidecarSettings& settings, const Proxy& proxy) {
  std::vector<std::string> hosts = {settings.listen_host};
  if (settings.listen_host == "127.0.0.1" || settings.listen_host == "0.0.0.0") {
    hosts = {"127.0.0.1", "localhost"};
  }
  absl::flat_hash_map<std::string, validator::OwnPortUpstream> ports;
  for (size_t i = 0; i < settings.upstreams.size(); ++i) {
    for (const std::string& host : hosts) {
      const std::string bracketed = host.find(':') == std::string::npos ? host : "[" + host + "]";
      absl::StatusOr<std::string> url =
          core::NormalizeRelayId(absl::StrCat("http://", bracketed, ":", proxy.port(i)));
      if (!url.ok()) continue;
      ports[*url] = {settings.upstreams[i].relay_id, settings.upstreams[i].trusted};
    }
  }
  return ports;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Sidecar>> Sidecar::Start(const SidecarSettings& settings) {
  std::unique_ptr<Sidecar> sidecar(new Sidecar());
  for (absl::Status (Sidecar::*step)(const SidecarSettings&) :
       {&Sidecar::StartClient, &Sidecar::StartBeaconFace, &Sidecar::StartBuilderFace,
        &Sidecar::StartValidatorFace, &Sidecar::StartMetrics}) {
    if (absl::Status started = (sidecar.get()->*step)(settings); !started.ok()) return started;
  }
  return sidecar;
}

absl::Status Sidecar::StartClient(const SidecarSettings& settings) {
  absl::StatusOr<client::ClientOptions> options = ClientOptionsFrom(settings);
  if (!options.ok()) return options.status();
  absl::StatusOr<std::unique_ptr<client::BreakerClient>> client =
      client::StartGrpcClient(*std::move(options));
  if (!client.ok()) return client.status();
  client_ = *std::move(client);
  // Before the watcher, which tells it the node's preset.
  std::vector<UpstreamIdentity> identities;
  std::vector<std::string> relay_ids;
  for (const UpstreamSettings& upstream : settings.upstreams) {
    identities.push_back(UpstreamIdentity{upstream.relay_id, upstream.trusted});
    relay_ids.push_back(upstream.relay_id);
  }
  enforcer_ = std::make_unique<Enforcer>(*client_, std::move(identities));
  latency_ = std::make_unique<UpstreamLatency>(std::move(relay_ids));
  return absl::OkStatus();
}

absl::Status Sidecar::StartBeaconFace(const SidecarSettings& settings) {
  if (settings.beacon_node_url.empty()) return absl::OkStatus();
  // The chain the library follows: the observer checks the node against it.
  const core::ChainSpec chain = client_->chain();
  ProposalWarmerOptions warming;
  warming.base = settings.beacon_node_base;
  warming.path_prefix = settings.beacon_node_path_prefix;
  warming.chain = chain;
  warming.warm_budget = std::min(settings.upstream_timeout, absl::Seconds(chain.seconds_per_slot));
  warmer_ = std::make_unique<ProposalWarmer>(std::move(warming), SystemClock(), *client_);
  BeaconWatcherOptions watcher;
  watcher.base = settings.beacon_node_base;
  watcher.path_prefix = settings.beacon_node_path_prefix;
  watcher.observer.chain = chain;
  watcher.on_chain_reorg = [warmer = warmer_.get()] { warmer->OnChainReorg(); };
  watcher.on_preset = [enforcer = enforcer_.get()](const ssz::Preset& preset) {
    enforcer->SetPreset(preset);
  };
  absl::StatusOr<std::unique_ptr<BeaconWatcher>> started =
      BeaconWatcher::Start(std::move(watcher), SystemClock(), *client_);
  if (!started.ok()) return started.status();
  watcher_ = *std::move(started);
  return absl::OkStatus();
}

absl::Status Sidecar::StartBuilderFace(const SidecarSettings& settings) {
  proxy_ = std::make_unique<Proxy>(settings, *enforcer_, SystemClock());
  if (ProposalWarmer* warmer = warmer_.get(); warmer != nullptr) {
    proxy_->set_registration_observer(
        [warmer](absl::string_view body, absl::string_view content_type) {
          warmer->OnRegistration(body, content_type);
        });
  }
  proxy_->set_latency_observer(
      [latency = latency_.get()](size_t index, Endpoint endpoint, absl::Duration answer_time) {
        latency->Observe(index, endpoint, answer_time);
      });
  if (absl::Status started = proxy_->Start(); !started.ok()) return started;
  if (warmer_ != nullptr) {
    std::vector<WarmTarget> targets;
    for (size_t i = 0; i < settings.upstreams.size(); ++i) {
      targets.push_back(WarmTarget{enforcer_->upstream(i), &proxy_->pool(i),
                                   settings.upstreams[i].path_prefix + "/eth/v1/builder/status"});
    }
    warmer_->SetTargets(std::move(targets));
    warmer_->Start();
  }
  return absl::OkStatus();
}

absl::Status Sidecar::StartValidatorFace(const SidecarSettings& settings) {
  if (settings.validator_listen_host.empty()) return absl::OkStatus();
  validator::ValidatorPortOptions port;
  port.listen_host = settings.validator_listen_host;
  port.listen_port = settings.validator_listen_port;
  port.beacon_node_url = settings.beacon_node_url;
  port.beacon_node_base = settings.beacon_node_base;
  port.beacon_node_path_prefix = settings.beacon_node_path_prefix;
  port.own_ports = OwnPorts(settings, *proxy_);
  port.max_body_bytes = settings.max_body_bytes;
  // The preset the beacon watcher told the enforcer: a won block's SSZ is laid out by it.
  port.preset = [enforcer = enforcer_.get()] { return enforcer->preset(); };
  validator_port_ =
      std::make_unique<validator::ValidatorPort>(std::move(port), *client_, SystemClock());
  return validator_port_->Start();
}

absl::Status Sidecar::StartMetrics(const SidecarSettings& settings) {
  if (settings.metrics_listen.empty()) return absl::OkStatus();
  MetricsSources sources(*enforcer_, *client_);
  sources.watcher = watcher_.get();
  sources.warmer = warmer_.get();
  for (size_t i = 0; i < proxy_->upstreams(); ++i) sources.pools.push_back(&proxy_->pool(i));
  sources.latency = latency_.get();
  sources.validator_port = validator_port_.get();
  absl::StatusOr<std::unique_ptr<Metrics>> metrics =
      Metrics::Start(settings.metrics_listen, std::move(sources));
  if (!metrics.ok()) return metrics.status();
  metrics_ = *std::move(metrics);
  return absl::OkStatus();
}

Sidecar::~Sidecar() { Stop(); }

void Sidecar::Stop() {
  if (warmer_ != nullptr) warmer_->Stop();
  if (validator_port_ != nullptr) validator_port_->Stop();
  if (proxy_ != nullptr) proxy_->Stop();
  if (watcher_ != nullptr) watcher_->Stop();
  if (client_ != nullptr) client_->Stop();
}

}  // namespace breaker::sidecar
