#include "service/rpc/restoring_server.h"

#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/server_builder.h"

namespace breaker::service {
namespace {

class UnavailableService : public grpc::CallbackGenericService {
 public:
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    class Refusal : public grpc::ServerGenericBidiReactor {
     public:
      Refusal() {
        Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            "breakerd is restoring its state; retry in a moment"));
      }
      void OnDone() override { delete this; }
    };
    return new Refusal;
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<RestoringServer>> RestoringServer::Start(
    const std::string& address, const std::shared_ptr<grpc::ServerCredentials>& credentials) {
  std::unique_ptr<RestoringServer> restoring(new RestoringServer());
  restoring->unavailable_ = std::make_unique<UnavailableService>();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  // As breakerd's own server: a second process must not share the port.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(address, credentials, &restoring->port_);
  builder.RegisterCallbackGenericService(restoring->unavailable_.get());
  restoring->server_ = builder.BuildAndStart();
  if (restoring->server_ == nullptr || restoring->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on '", address,
                                               "': address in use or invalid; pass --listen ",
                                               "with a free host:port"));
  }
  grpc::HealthCheckServiceInterface* health = restoring->server_->GetHealthCheckService();
  for (const char* service : {"", "breaker.v1.Breaker", "breaker.v1.Admin"}) {
    health->SetServingStatus(service, false);
  }
  return restoring;
}

RestoringServer::~RestoringServer() {
  if (server_ == nullptr) return;  // it never started
  // Calls here end at once (each is refused as it comes), so no grace period is needed.
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
}

std::string WithPort(const std::string& address, int port) {
  if (absl::StartsWith(address, "unix:")) return address;
  const size_t colon = address.rfind(':');
  // "[v6]:port" and "host:port" both end in ":port"; a bare "[v6]" has no port to replace.
  if (colon == std::string::npos || absl::EndsWith(address, "]")) return address;
  return absl::StrCat(address.substr(0, colon + 1), port);
}

}  // namespace breaker::service
