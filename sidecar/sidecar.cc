#include "sidecar/sidecar.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "client/channel_security.h"
#include "common/clock.h"
#include "core/chain_time.h"
#include "proto/codec/config_file.h"

namespace breaker::sidecar {

absl::StatusOr<std::unique_ptr<Sidecar>> Sidecar::Start(const SidecarSettings& settings) {
  client::ClientOptions options;
  options.addresses = settings.breakerd_addresses;
  client::ChannelSecurityFiles files;
  files.tls_ca_file = settings.tls_ca_file;
  files.tls_cert_file = settings.tls_cert_file;
  files.tls_key_file = settings.tls_key_file;
  if (files.tls()) {
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
        client::MakeChannelCredentials(files);
    if (!credentials.ok()) return credentials.status();
    options.credentials = *std::move(credentials);
  }
  if (!settings.token_file.empty()) {
    absl::StatusOr<std::string> token = client::ReadTokenFile(settings.token_file);
    if (!token.ok()) return token.status();
    options.bearer_token = *std::move(token);
  }
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
  // The chain the library follows, as it picks it: the observer checks the node against it.
  core::ChainSpec chain;
  if (options.fallback_config.has_value()) {
    chain = options.fallback_config->chain;
  } else if (!settings.network.empty()) {
    absl::StatusOr<core::ChainSpec> known = core::ChainSpecForNetwork(settings.network);
    if (known.ok()) chain = *known;  // Otherwise the library refuses the network below.
  }

  std::unique_ptr<Sidecar> sidecar(new Sidecar());
  absl::StatusOr<std::unique_ptr<client::BreakerClient>> client =
      client::StartGrpcClient(std::move(options));
  if (!client.ok()) return client.status();
  sidecar->client_ = *std::move(client);

  // Before the watcher, which tells it the node's preset.
  std::vector<UpstreamIdentity> identities;
  for (const UpstreamSettings& upstream : settings.upstreams) {
    identities.push_back(UpstreamIdentity{upstream.relay_id, upstream.trusted});
  }
  sidecar->enforcer_ = std::make_unique<Enforcer>(*sidecar->client_, std::move(identities));

  if (!settings.beacon_node_url.empty()) {
    ProposalWarmerOptions warming;
    warming.base = settings.beacon_node_base;
    warming.path_prefix = settings.beacon_node_path_prefix;
    warming.chain = chain;
    warming.warm_budget =
        std::min(settings.upstream_timeout, absl::Seconds(chain.seconds_per_slot));
    sidecar->warmer_ =
        std::make_unique<ProposalWarmer>(std::move(warming), SystemClock(), *sidecar->client_);
    BeaconWatcherOptions watcher;
    watcher.base = settings.beacon_node_base;
    watcher.path_prefix = settings.beacon_node_path_prefix;
    watcher.observer.chain = chain;
    watcher.on_chain_reorg = [warmer = sidecar->warmer_.get()] { warmer->OnChainReorg(); };
    watcher.on_preset = [enforcer = sidecar->enforcer_.get()](const ssz::Preset& preset) {
      enforcer->SetPreset(preset);
    };
    absl::StatusOr<std::unique_ptr<BeaconWatcher>> started =
        BeaconWatcher::Start(std::move(watcher), SystemClock(), *sidecar->client_);
    if (!started.ok()) return started.status();
    sidecar->watcher_ = *std::move(started);
  }

  sidecar->proxy_ = std::make_unique<Proxy>(settings, *sidecar->enforcer_, SystemClock());
  if (ProposalWarmer* warmer = sidecar->warmer_.get(); warmer != nullptr) {
    sidecar->proxy_->set_registration_observer(
        [warmer](absl::string_view body, absl::string_view content_type) {
          warmer->OnRegistration(body, content_type);
        });
  }
  if (absl::Status started = sidecar->proxy_->Start(); !started.ok()) return started;
  if (sidecar->warmer_ != nullptr) {
    std::vector<WarmTarget> targets;
    for (size_t i = 0; i < settings.upstreams.size(); ++i) {
      targets.push_back(WarmTarget{sidecar->enforcer_->upstream(i), &sidecar->proxy_->pool(i),
                                   settings.upstreams[i].path_prefix + "/eth/v1/builder/status"});
    }
    sidecar->warmer_->SetTargets(std::move(targets));
    sidecar->warmer_->Start();
  }
  if (!settings.metrics_listen.empty()) {
    std::vector<const UpstreamPool*> pools;
    for (size_t i = 0; i < sidecar->proxy_->upstreams(); ++i) {
      pools.push_back(&sidecar->proxy_->pool(i));
    }
    absl::StatusOr<std::unique_ptr<Metrics>> metrics =
        Metrics::Start(settings.metrics_listen, *sidecar->enforcer_, *sidecar->client_,
                       sidecar->watcher_.get(), std::move(pools));
    if (!metrics.ok()) return metrics.status();
    sidecar->metrics_ = *std::move(metrics);
    if (sidecar->warmer_ != nullptr) sidecar->metrics_->AddProposalWarmer(*sidecar->warmer_);
    sidecar->metrics_->AddUpstreamLatency(sidecar->proxy_->latency());
  }
  return sidecar;
}

Sidecar::~Sidecar() { Stop(); }

void Sidecar::Stop() {
  if (warmer_ != nullptr) warmer_->Stop();
  if (proxy_ != nullptr) proxy_->Stop();
  if (watcher_ != nullptr) watcher_->Stop();
  if (client_ != nullptr) client_->Stop();
}

}  // namespace breaker::sidecar
