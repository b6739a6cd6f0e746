// baseline_server: the floor breakerd is measured against. See baseline_service.h.
//
//   baseline_server --listen=127.0.0.1:0 --messages=FILE [--version=V] [--max_concurrent_streams=N]
//
// Logs "baseline listening on HOST:PORT (port N)" once it serves; SIGTERM or SIGINT ends the
// streams with UNAVAILABLE and stops it, as they stop breakerd.

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "bench/baseline_service.h"
#include "bench/server_messages.h"
#include "common/mutex.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "service/rpc/server_settings.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:0", "Address to serve on, host:port (port 0: any).");
ABSL_FLAG(std::string, messages, "",
          "The configuration and policy messages of a breakerd run (written by fleet_load).");
ABSL_FLAG(uint64_t, version, 0, "The policy version to start at (0: the first in --messages).");
ABSL_FLAG(int, max_concurrent_streams, 100,
          "Calls one client connection may hold open at once (breakerd's flag of that name).");

namespace breaker::bench {
namespace {

// breakerd's gRPC server (service/rpc/server.cc) with nothing behind Connect: the same services
// around it and transport settings, so that only what is behind Connect differs.
std::unique_ptr<grpc::Server> StartServer(const std::string& address, grpc::Service* service,
                                          int* port) {
  // breakerd's gRPC server also serves health and reflection. Reflection is a synchronous
  // service: it brings the synchronous server's polling threads, which move the callback
  // streams' bytes too, so the baseline must have them as well to move its bytes alike.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  service::ApplyServerSettings(builder, service::kDefaultMaxReceiveMessageBytes,
                               absl::GetFlag(FLAGS_max_concurrent_streams));
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), port);
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

sigset_t BlockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

int Run() {
  // Before any thread starts, so that only sigwait sees the stop signals.
  sigset_t stop_signals = BlockStopSignals();
  absl::StatusOr<ServerMessages> messages = ReadServerMessages(absl::GetFlag(FLAGS_messages));
  if (!messages.ok()) {
    std::fprintf(stderr, "baseline cannot start: %s\n", messages.status().ToString().c_str());
    return 1;
  }
  BaselineService service(*std::move(messages), absl::GetFlag(FLAGS_version));
  const std::string address = absl::GetFlag(FLAGS_listen);
  int port = 0;
  std::unique_ptr<grpc::Server> server = StartServer(address, &service, &port);
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "baseline cannot listen on %s\n", address.c_str());
    return 1;
  }
  std::fprintf(stderr, "baseline listening on %s (port %d)\n", address.c_str(), port);
  int signal = 0;
  sigwait(&stop_signals, &signal);
  service.Shutdown();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return 0;
}

}  // namespace
}  // namespace breaker::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // As breakerd does (service/breakerd_main.cc), so that gRPC costs the same in both.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return breaker::bench::Run();
}
