#include "service/server.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace breaker::service {
namespace {

absl::Status EnsureDirectory(const std::string& path) {
  if (mkdir(path.c_str(), 0750) == 0 || errno == EEXIST) {
    struct stat info;
    if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("state directory '", path, "' exists but is not a directory; pass ",
                     "--state_dir with a directory path"));
  }
  return absl::InvalidArgumentError(absl::StrCat("cannot create state directory '", path,
                                                 "': ", std::strerror(errno),
                                                 "; pass --state_dir with a writable path"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options) {
  if (absl::Status status = EnsureDirectory(options.state_dir); !status.ok()) return status;

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default: a second breakerd on the same port would then start
  // "successfully" and split the fleet's streams between two states.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int port = 0;
  builder.AddListeningPort(options.listen_address, grpc::InsecureServerCredentials(), &port);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on '", options.listen_address,
                                               "': address in use or invalid; pass --listen ",
                                               "with a free host:port"));
  }
  LOG(INFO) << "breakerd listening on " << options.listen_address << " (port " << port
            << "), state in " << options.state_dir;
  return std::unique_ptr<Server>(new Server(std::move(server), port));
}

Server::Server(std::unique_ptr<grpc::Server> server, int port)
    : server_(std::move(server)), port_(port) {}

Server::~Server() { Shutdown(); }

void Server::Shutdown() { server_->Shutdown(); }

}  // namespace breaker::service
