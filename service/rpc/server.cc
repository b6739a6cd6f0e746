#include "service/rpc/server.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/input_bounds.h"
#include "glog/logging.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "service/metrics.h"
#include "service/rpc/malformed_request.h"
#include "service/rpc/server_settings.h"
#include "service/service_limits.h"
#include "service/storage/store_selection.h"

namespace breaker::service {
namespace {

constexpr char kNodeServiceName[] = "breaker.v1.Breaker";
constexpr char kAdminServiceName[] = "breaker.v1.Admin";

void SetServing(grpc::Server& server, bool serving) {
  grpc::HealthCheckServiceInterface* health = server.GetHealthCheckService();
  health->SetServingStatus(serving);
  health->SetServingStatus(kNodeServiceName, serving);
  health->SetServingStatus(kAdminServiceName, serving);
}

// OK when `address` ("host:port", "[v6]:port") names its port: gRPC would take a bare host to
// mean port 443, which no one who typed it meant.
absl::Status CheckAddress(absl::string_view flag, absl::string_view address) {
  const size_t colon = address.rfind(':');
  const size_t bracket = address.rfind(']');
  const absl::string_view port =
      colon == absl::string_view::npos || (bracket != absl::string_view::npos && colon < bracket)
          ? absl::string_view()
          : address.substr(colon + 1);
  int number = 0;
  if (colon == 0 || port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(port, &number) || number > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " is \"", core::bounds::QuotePrefix(address),
        "\"; accepted: HOST:PORT with a port in 0..65535 (0 picks a free one), e.g. "
        "127.0.0.1:50051 or [::1]:50051"));
  }
  return absl::OkStatus();
}

StoreSelection Selection(const ServerOptions& options) {
  StoreSelection selection;
  selection.store = options.store;
  selection.state_dir = options.state_dir;
  selection.etcd = options.etcd;
  return selection;
}

}  // namespace

absl::Status CheckServerOptions(const ServerOptions& options) {
  if (absl::Status listen = CheckAddress("--listen", options.listen_address); !listen.ok()) {
    return listen;
  }
  if (!options.metrics_listen.empty()) {
    if (absl::Status metrics = CheckAddress("--metrics_listen", options.metrics_listen);
        !metrics.ok()) {
      return metrics;
    }
  }
  if (options.max_receive_message_bytes < kMinReceiveMessageBytes ||
      options.max_receive_message_bytes > kMaxReceiveMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_message_bytes is ", options.max_receive_message_bytes, "; accepted: ",
        kMinReceiveMessageBytes, "..", kMaxReceiveMessageBytes,
        " (below, a full batch of observations would not fit)"));
  }
  if (options.max_concurrent_streams < kMinConcurrentStreams ||
      options.max_concurrent_streams > kMaxConcurrentStreams) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_concurrent_streams is ", options.max_concurrent_streams, "; accepted: ",
        kMinConcurrentStreams, "..", kMaxConcurrentStreams,
        " (a node's connection holds its stream and still needs calls for health and reports)"));
  }
  // Written so that NaN fails too.
  if (!(options.drain_period >= absl::ZeroDuration() && options.drain_period <= kMaxDrainPeriod)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--drain_seconds is ", absl::FormatDuration(options.drain_period),
                     "; accepted: 0..", absl::ToInt64Seconds(kMaxDrainPeriod), " seconds"));
  }
  return CheckStoreSelection(Selection(options));
}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options) {
  if (absl::Status checked = CheckServerOptions(options); !checked.ok()) return checked;
  ServiceConfig config;
  if (!options.config_path.empty()) {
    absl::StatusOr<ServiceConfig> loaded = LoadServiceConfig(options.config_path);
    if (!loaded.ok()) return loaded.status();
    config = *std::move(loaded);
  }
  // Security settings are checked before anything is locked or loaded.
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = MakeServerCredentials(
      options.tls, options.listen_address, options.allow_insecure_listen);
  if (!credentials.ok()) return credentials.status();
  std::optional<AccessPolicy> access;
  if (!options.access_file.empty()) {
    absl::StatusOr<AccessPolicy> loaded = AccessPolicy::Load(options.access_file);
    if (!loaded.ok()) return loaded.status();
    access = *std::move(loaded);
  } else if (!IsLoopbackAddress(options.listen_address)) {
    LOG(WARNING) << "no --access_file: every caller that reaches " << options.listen_address
                 << " may act as an admin";
  }
  std::unique_ptr<Server> server(new Server());
  // Bound first: a bad --metrics_listen stops the start before the state is locked or loaded.
  if (!options.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<Metrics>> metrics = Metrics::Start(options.metrics_listen);
    if (!metrics.ok()) return metrics.status();
    server->metrics_ = *std::move(metrics);
  }
  // Bound before the state is restored, so that nodes reconnecting meanwhile find breakerd
  // listening; the gate holds their calls until the services below exist.
  server->gate_ = std::make_unique<RestoreGate>(kMaxRestoreHold);
  server->gated_node_service_ = std::make_unique<GatedNodeService>(server->gate_.get());
  server->gated_admin_service_ = std::make_unique<GatedAdminService>(server->gate_.get());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  ApplyServerSettings(builder, options.max_receive_message_bytes, options.max_concurrent_streams);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(server->gate_->InterceptorFactory());
  interceptors.push_back(MakeMalformedRequestInterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  int port = 0;
  builder.AddListeningPort(options.listen_address, *credentials, &port);
  builder.RegisterService(server->gated_node_service_.get());
  builder.RegisterService(server->gated_admin_service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on '", options.listen_address,
                                               "': address in use or invalid; pass --listen ",
                                               "with a free host:port"));
  }
  SetServing(*server->server_, false);
  if (absl::Status restored = server->Restore(options, std::move(config), std::move(access));
      !restored.ok()) {
    // The calls waiting learn that this start failed, not only that the server went away.
    server->gate_->Fail(absl::UnavailableError(
        "breakerd could not restore its state and is stopping; its log says why"));
    return restored;
  }
  server->gated_node_service_->Serve(server->node_service_.get());
  server->gated_admin_service_->Serve(server->admin_service_.get());
  if (const int waiting = server->gate_->held(); waiting > 0) {
    LOG(INFO) << "state restored; answering the " << waiting << " calls that waited for it";
  }
  server->gate_->Open();
  server->port_ = port;
  server->drain_period_ = options.drain_period;
  // Health follows the state store: NOT_SERVING while it fails (see Fleet, Storage faults).
  server->fleet_->WatchStorage(
      [grpc_server = server->server_.get()](bool writable) { SetServing(*grpc_server, writable); });
  // Tools read the port from "(port N)": keep that part as it is.
  LOG(INFO) << "breakerd listening on " << options.listen_address << " (port " << port << "), "
            << (options.tls.cert_file.empty()          ? "plaintext"
                : options.tls.client_ca_file.empty() ? "TLS"
                                                     : "mutual TLS")
            << (options.access_file.empty() ? ", no access file" : ", access file ")
            << options.access_file << ", network " << server->fleet_->network() << ", "
            << DescribeStore(Selection(options))
            << ", policy version " << server->fleet_->policy()->policy.version;
  if (server->metrics_ != nullptr) {
    LOG(INFO) << "metrics on " << options.metrics_listen << " (port " << server->metrics_->port()
              << "), /metrics";
  }
  return server;
}

Server::Server() = default;

absl::Status Server::Restore(const ServerOptions& options, ServiceConfig config,
                             std::optional<AccessPolicy> access) {
  absl::StatusOr<std::unique_ptr<StateStore>> store =
      OpenSelectedStore(Selection(options), options.clock);
  if (!store.ok()) return store.status();
  Fleet::Options fleet_options;
  fleet_options.config = std::move(config.rules);
  fleet_options.limits = config.limits;
  fleet_options.config_path = options.config_path;
  fleet_options.store = *std::move(store);
  fleet_options.clock = options.clock;
  fleet_options.run_ticker = options.run_ticker;
  fleet_options.metrics = metrics_.get();
  absl::StatusOr<std::unique_ptr<Fleet>> fleet = Fleet::Open(std::move(fleet_options));
  if (!fleet.ok()) return fleet.status();
  fleet_ = *std::move(fleet);
  if (metrics_ != nullptr) metrics_->SetFleet(fleet_.get());
  authorizer_ = std::make_unique<Authorizer>(std::move(access), options.access_file);
  node_service_ = std::make_unique<NodeService>(fleet_.get(), authorizer_.get());
  admin_service_ = std::make_unique<AdminService>(fleet_.get(), authorizer_.get(),
                                                  [this] { return ReloadAccess(); });
  return absl::OkStatus();
}

absl::StatusOr<breaker::v1::ReloadAccessResponse> Server::ReloadAccess() {
  absl::StatusOr<size_t> principals = authorizer_->Reload();
  if (!principals.ok()) {
    LOG(WARNING) << "access file reload refused, access unchanged: " << principals.status();
    return principals.status();
  }
  // Every call from now on is checked against the new file; the streams open already are
  // checked here.
  breaker::v1::ReloadAccessResponse response;
  response.set_principals(static_cast<uint32_t>(*principals));
  response.set_streams_ended(
      static_cast<uint32_t>(node_service_->Reauthorize() + admin_service_->Reauthorize()));
  LOG(INFO) << "access file " << authorizer_->access_file()
            << " reloaded: " << response.principals() << " principals; " << response.streams_ended()
            << " streams ended, their credential no longer allowed";
  return response;
}

Server::~Server() { Shutdown(); }

int Server::metrics_port() const { return metrics_ == nullptr ? 0 : metrics_->port(); }

void Server::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (server_ != nullptr) {
    // A start that failed has a server but no fleet, and its gate has let every call go.
    if (fleet_ != nullptr) {
      fleet_->WatchStorage(nullptr);  // a store recovering now must not turn health back on
      SetServing(*server_, false);
      if (drain_period_ > absl::ZeroDuration()) {
        LOG(INFO) << "health is NOT_SERVING; draining for " << drain_period_;
        absl::SleepFor(drain_period_);
      }
      node_service_->Shutdown();
      admin_service_->Shutdown();
    }
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }
  if (fleet_ != nullptr) {
    if (metrics_ != nullptr) metrics_->SetFleet(nullptr);  // scrapes stop reading the fleet
    fleet_.reset();  // applies what was submitted and writes a final snapshot
    LOG(INFO) << "breakerd stopped";
  }
  // After the fleet, which reports to it until it is gone.
  metrics_.reset();
}

}  // namespace breaker::service
