#include "service/rpc/server.h"

#include <unistd.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_deadline.h"
#include "core/input_bounds.h"
#include "glog/logging.h"
#include "google/protobuf/util/time_util.h"
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

using ::google::protobuf::util::TimeUtil;

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
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " is \"", core::bounds::QuotePrefix(address),
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
    return absl::InvalidArgumentError(
        absl::StrCat("--max_message_bytes is ", options.max_receive_message_bytes,
                     "; accepted: ", kMinReceiveMessageBytes, "..", kMaxReceiveMessageBytes,
                     " (below, a full batch of observations would not fit)"));
  }
  if (options.max_concurrent_streams < kMinConcurrentStreams ||
      options.max_concurrent_streams > kMaxConcurrentStreams) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_concurrent_streams is ", options.max_concurrent_streams,
        "; accepted: ", kMinConcurrentStreams, "..", kMaxConcurrentStreams,
        " (a node's connection holds its stream and still needs calls for health and reports)"));
  }
  // Written so that NaN fails too.
  if (!(options.drain_period >= absl::ZeroDuration() && options.drain_period <= kMaxDrainPeriod)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--drain_seconds is ", absl::FormatDuration(options.drain_period),
                     "; accepted: 0..", absl::ToInt64Seconds(kMaxDrainPeriod), " seconds"));
  }
  if (!(options.hello_timeout >= kMinHelloTimeout && options.hello_timeout <= kMaxHelloTimeout)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--hello_timeout_seconds is ", absl::FormatDuration(options.hello_timeout),
                     "; accepted: ", absl::ToInt64Seconds(kMinHelloTimeout), "..",
                     absl::ToInt64Seconds(kMaxHelloTimeout), " seconds"));
  }
  if (!(options.write_timeout >= kMinWriteTimeout && options.write_timeout <= kMaxWriteTimeout)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--write_timeout_seconds is ", absl::FormatDuration(options.write_timeout),
                     "; accepted: ", absl::ToInt64Seconds(kMinWriteTimeout), "..",
                     absl::ToInt64Seconds(kMaxWriteTimeout), " seconds"));
  }
  if (!options.advertise_address.empty()) {
    if (options.store != "etcd") {
      return absl::InvalidArgumentError(
          "--advertise_address names a replica on etcd; pass --store=etcd with it, or drop it");
    }
    if (absl::Status advertised = CheckAddress("--advertise_address", options.advertise_address);
        !advertised.ok()) {
      return advertised;
    }
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
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(options.tls, options.listen_address, options.allow_insecure_listen);
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
  // listening; the gate holds their calls until the services have the fleet.
  server->gate_ = std::make_unique<RestoreGate>(*options.clock, kMaxRestoreHold);
  server->served_fleet_ = std::make_shared<ServedFleet>(server->gate_.get());
  server->authorizer_ = std::make_unique<Authorizer>(std::move(access), options.access_file);
  server->node_service_ =
      std::make_unique<NodeService>(server->served_fleet_, server->authorizer_.get(),
                                    options.hello_timeout, options.write_timeout);
  AdminService::ReplicationReader replication;
  if (options.store == "etcd") {
    replication = [server = server.get()] { return server->ReadReplication(); };
  }
  server->admin_service_ = std::make_unique<AdminService>(
      server->served_fleet_, server->authorizer_.get(),
      [server = server.get()] { return server->ReloadAccess(); }, std::move(replication),
      options.write_timeout);
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
  builder.RegisterService(server->node_service_.get());
  builder.RegisterService(server->admin_service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on '", options.listen_address,
                                               "': address in use or invalid; pass --listen ",
                                               "with a free host:port"));
  }
  SetServing(*server->server_, false);
  server->port_ = port;
  server->drain_period_ = options.drain_period;
  // Tools read the port from "(port N)": keep that part as it is.
  LOG(INFO) << "breakerd listening on " << options.listen_address << " (port " << port << "), "
            << (options.tls.cert_file.empty()        ? "plaintext"
                : options.tls.client_ca_file.empty() ? "TLS"
                                                     : "mutual TLS")
            << (options.access_file.empty() ? ", no access file" : ", access file ")
            << options.access_file << ", " << DescribeStore(Selection(options));
  if (server->metrics_ != nullptr) {
    LOG(INFO) << "metrics on " << options.metrics_listen << " (port " << server->metrics_->port()
              << "), /metrics";
  }
  if (options.store == "etcd") {
    if (server->metrics_ != nullptr) server->metrics_->ReportReplica(options.leadership_changes);
    server->gate_->Refuse(absl::UnavailableError(
        absl::StrCat("this breakerd is a standby for ", options.etcd.prefix,
                     " in etcd and is campaigning; no leader is known yet: retry")));
    server->replica_ = std::thread(
        [server = server.get(), options, config] { server->RunReplica(options, config); });
    return server;
  }
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenSqliteStore(options.state_dir);
  absl::Status restored = store.status();
  if (restored.ok())
    restored = server->Restore(options, std::move(config), *std::move(store), nullptr);
  if (!restored.ok()) {
    // The calls waiting learn that this start failed, not only that the server went away.
    server->gate_->Fail(absl::UnavailableError(
        "breakerd could not restore its state and is stopping; its log says why"));
    return restored;
  }
  server->Serve();
  return server;
}

Server::Server() = default;

absl::Status Server::Restore(const ServerOptions& options, ServiceConfig config,
                             std::unique_ptr<StateStore> store, EtcdStateStore* etcd) {
  Fleet::Options fleet_options;
  fleet_options.config = std::move(config.rules);
  fleet_options.limits = config.limits;
  fleet_options.config_path = options.config_path;
  fleet_options.store = std::move(store);
  fleet_options.clock = options.clock;
  fleet_options.run_ticker = options.run_ticker;
  fleet_options.metrics = metrics_.get();
  absl::StatusOr<std::unique_ptr<Fleet>> fleet = Fleet::Open(std::move(fleet_options));
  if (!fleet.ok()) return fleet.status();
  fleet_ = *std::move(fleet);
  etcd_ = etcd;
  if (metrics_ != nullptr) metrics_->SetFleet(fleet_.get());
  return absl::OkStatus();
}

void Server::Serve() {
  // Once: a server leads at most once (a replica that steps down is replaced by another).
  served_fleet_->Bind(fleet_.get());
  if (const int waiting = gate_->held(); waiting > 0) {
    LOG(INFO) << "state restored; answering the " << waiting << " calls that waited for it";
  }
  // After Bind: a call that sees the gate open sees the fleet (ServedFleet::Admit).
  gate_->Open();
  // Health follows the state store: NOT_SERVING while it fails (see Fleet, Storage faults), and
  // once etcd deposed it (a recovery must not turn health back on before the step-down).
  fleet_->WatchStorage([grpc_server = server_.get(), etcd = etcd_](bool writable) {
    SetServing(*grpc_server, writable && (etcd == nullptr || etcd->leadership().ok()));
  });
  LOG(INFO) << "breakerd serving network " << fleet_->network() << ", fleet id "
            << fleet_->fleet_id() << ", policy version " << fleet_->policy()->policy.version;
  MutexLock lock(&replica_mu_);
  role_ = Role::kLeading;
  replica_changed_.SignalAll();
}

void Server::RunReplica(const ServerOptions& options, const ServiceConfig& config) {
  const std::string& prefix = options.etcd.prefix;
  absl::Duration retry = kFirstCampaignRetry;
  absl::StatusOr<std::unique_ptr<EtcdStateStore>> store;
  while (true) {
    EtcdReplicaHooks hooks;
    hooks.name =
        options.advertise_address.empty() ? options.listen_address : options.advertise_address;
    hooks.on_follow = [this, &prefix](absl::string_view value) {
      // What etcd holds is another process's word: escaped and bounded like any input.
      const std::string leader = core::bounds::ForLog(value);
      LOG(INFO) << "standby for " << prefix << ": the leader is at " << leader;
      gate_->Refuse(
          absl::UnavailableError(absl::StrCat(
              "this breakerd is a standby for ", prefix, " in etcd; the leader is at ", leader,
              ": connect there (a client given every replica's address tries "
              "the next)")),
          leader);
    };
    hooks.cancelled = [this] {
      MutexLock lock(&replica_mu_);
      return stopping_;
    };
    hooks.on_deposed = [this](const absl::Status& why) {
      // At once, from the thread that learned it (the lease's keepalive, or a write etcd
      // refused): not once the step-down gets to it, and never by asking etcd.
      SetServing(*server_, false);
      ReportLeading(false);
      MutexLock lock(&replica_mu_);
      deposed_ = why;
      replica_changed_.SignalAll();
    };
    if (metrics_ != nullptr) {
      hooks.on_answered = [metrics = metrics_.get()](bool answered) {
        metrics->EtcdAnswered(answered);
      };
    }
    store = OpenEtcdStore(Selection(options), options.clock, std::move(hooks));
    if (store.ok() || absl::IsCancelled(store.status())) break;
    {
      // A store that lost its lease while it campaigned never led, and is gone (its keepalive
      // with it): its deposition is this failure, which must not end the next lead at once.
      MutexLock lock(&replica_mu_);
      deposed_ = absl::OkStatus();
    }
    // What waiting cures: etcd out of reach, or no quorum. Anything else (what is stored is
    // not a state breakerd wrote) an operator must see to.
    if (!absl::IsUnavailable(store.status())) {
      LOG(ERROR) << "breakerd cannot campaign for " << prefix << ": " << store.status();
      gate_->Fail(absl::UnavailableError(
          "breakerd cannot campaign in etcd and is stopping; its log says why"));
      StoppedLeading(options, store.status());
      return;
    }
    LOG(WARNING) << "standby for " << prefix << " cannot campaign: " << store.status()
                 << "; trying again in " << retry;
    gate_->Refuse(absl::UnavailableError(
        absl::StrCat("this breakerd is a standby for ", prefix,
                     " and cannot campaign in etcd: ", store.status().message())));
    if (WaitForShutdown(retry)) return;
    retry = std::min(retry * 2, kMaxCampaignRetry);
  }
  if (!store.ok()) return;  // shutting down
  EtcdStateStore* etcd = store->get();
  ReportLeading(true);
  // It leads: calls wait for the state again, as at any restore.
  gate_->HoldCalls();
  if (absl::Status restored = Restore(options, config, *std::move(store), etcd); !restored.ok()) {
    // The store went with the fleet that could not open, and its lease with it.
    ReportLeading(false);
    LOG(ERROR) << "breakerd leads " << prefix << " but cannot restore its state: " << restored;
    gate_->Fail(absl::UnavailableError(
        "breakerd could not restore its state and steps down; its log says why"));
    StoppedLeading(options, restored);
    return;
  }
  Serve();
  absl::Status why;
  {
    MutexLock lock(&replica_mu_);
    while (!stopping_ && deposed_.ok()) replica_changed_.Wait(&replica_mu_);
    if (stopping_) return;
    why = deposed_;
  }
  StepDown(options, why);
}

void Server::StepDown(const ServerOptions& options, const absl::Status& why) {
  fleet_->WatchStorage(nullptr);  // a retry must not turn health back on
  SetServing(*server_, false);
  const absl::Status ended =
      absl::UnavailableError(absl::StrCat("this breakerd no longer leads ", options.etcd.prefix,
                                          "; reconnect to the new leader (", why.message(), ")"));
  node_service_->Shutdown(ended);
  // An operator's change waiting for the store is told the same, not left to be cancelled
  // when the server goes.
  admin_service_->Shutdown(ended, AdminService::Pending::kEnd);
  LOG(WARNING) << "stepped down from leading " << options.etcd.prefix << " because "
               << why.message() << ": streams ended, health NOT_SERVING; breakerd campaigns again";
  StoppedLeading(options, why);
}

void Server::HandOver() {
  const absl::Status why = absl::UnavailableError(
      "this breakerd is stopping and hands its lead over; reconnect to the new leader");
  node_service_->Shutdown(why);
  admin_service_->Shutdown(why, AdminService::Pending::kEnd);
  fleet_->Sync();
  // The store refuses writes once resigned: the new leader replays the journal instead.
  fleet_->SkipFinalSnapshot();
  etcd_->Resign();
}

void Server::StoppedLeading(const ServerOptions& options, const absl::Status& why) {
  {
    MutexLock lock(&replica_mu_);
    role_ = Role::kSteppedDown;
    replica_changed_.SignalAll();
  }
  if (options.on_stepped_down) options.on_stepped_down(why);
}

void Server::ReportLeading(bool leading) {
  if (metrics_ != nullptr) metrics_->LeadershipChanged(leading);
}

bool Server::WaitForShutdown(absl::Duration timeout) {
  MutexLock lock(&replica_mu_);
  return replica_changed_.Await(
      &replica_mu_, timeout,
      [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(replica_mu_) { return stopping_; });
}

bool Server::WaitUntilLeading(absl::Duration timeout) {
  MutexLock lock(&replica_mu_);
  replica_changed_.Await(&replica_mu_, timeout,
                         [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(replica_mu_) {
                           return role_ != Role::kStandby || stopping_;
                         });
  return role_ == Role::kLeading && !stopping_ && deposed_.ok();
}

absl::StatusOr<breaker::v1::Replication> Server::ReadReplication() const {
  absl::StatusOr<EtcdStateStore::Replicas> replicas = etcd_->ReadReplicas();
  if (!replicas.ok()) return replicas.status();
  // Escaped and bounded: the names are what other processes wrote in etcd, and a proto string
  // must be UTF-8.
  breaker::v1::Replication replication;
  replication.set_leader(core::bounds::ForLog(replicas->leader));
  *replication.mutable_leader_since() =
      TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(etcd_->leading_since()));
  for (const std::string& name : replicas->names) {
    replication.add_replicas(core::bounds::ForLog(name));
  }
  return replication;
}

absl::StatusOr<breaker::v1::ReloadAccessResponse> Server::ReloadAccess() {
  absl::StatusOr<size_t> principals = authorizer_->Reload();
  if (!principals.ok()) {
    LOG(WARNING) << "access file reload refused, access unchanged: " << principals.status();
    return principals.status();
  }
  // Every call from now on is checked against the new file; the streams open already are
  // checked here (a standby, and a server still restoring, have none).
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
  bool stepped_down = false;
  {
    MutexLock lock(&replica_mu_);
    stopping_ = true;
    stepped_down = role_ == Role::kSteppedDown;
    replica_changed_.SignalAll();
  }
  // Stops campaigning, or waits for the restore under way; the members are its no more.
  if (replica_.joinable()) replica_.join();
  if (server_ != nullptr) {
    // A start that failed, and a standby, have a server but no fleet; their gate lets every
    // call go.
    if (fleet_ != nullptr) {
      fleet_->WatchStorage(nullptr);  // a store recovering now must not turn health back on
      SetServing(*server_, false);
      if (etcd_ != nullptr && !stepped_down) HandOver();
      // One that stepped down has no one left to drain away from it, but calls that reached it
      // meanwhile to refuse (its services refuse them since the step-down).
      if (stepped_down) {
        absl::SleepFor(kStepDownRefusalPeriod);
      } else if (drain_period_ > absl::ZeroDuration()) {
        LOG(INFO) << "health is NOT_SERVING; draining for " << drain_period_;
        absl::SleepFor(drain_period_);
      }
      node_service_->Shutdown();
      admin_service_->Shutdown();
    }
    server_->Shutdown(GrpcDeadlineIn(absl::Seconds(5)));
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
