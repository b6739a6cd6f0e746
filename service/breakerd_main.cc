// breakerd: the fleet's shared builder circuit breaker. See README.md.

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "glog/logging.h"
#include "service/server.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "Address to serve gRPC on, host:port. Port 0 picks a free port.");
ABSL_FLAG(std::string, state_dir, "breakerd-state",
          "Directory holding the persistent breaker state (breakerd.db); created when missing. "
          "One breakerd per directory, one directory per chain.");
ABSL_FLAG(std::string, config, "",
          "Configuration file: a text-format breaker.v1.Config (see "
          "examples/breakerd.textproto). Empty: the defaults for mainnet. Re-read by the "
          "Admin.ReloadConfig rpc.");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "breakerd: the staking pool's shared builder circuit breaker.\n"
      "Usage: breakerd [--listen=HOST:PORT] [--state_dir=DIR] [--config=FILE]");
  absl::ParseCommandLine(argc, argv);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);

  // Under `bazel run`, resolve relative paths (--state_dir) against the directory the
  // command was typed in, not Bazel's runfiles tree.
  if (const char* dir = std::getenv("BUILD_WORKING_DIRECTORY"); dir != nullptr) {
    PCHECK(chdir(dir) == 0) << "cannot enter " << dir;
  }

  // Block the stop signals before any thread starts, so that only sigwait below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  breaker::service::ServerOptions options;
  options.listen_address = absl::GetFlag(FLAGS_listen);
  options.state_dir = absl::GetFlag(FLAGS_state_dir);
  options.config_path = absl::GetFlag(FLAGS_config);
  auto server = breaker::service::Server::Start(options);
  if (!server.ok()) {
    LOG(ERROR) << "breakerd cannot start: " << server.status();
    return 1;
  }

  int signal = 0;
  sigwait(&stop_signals, &signal);
  LOG(INFO) << "signal " << signal << " received, shutting down";
  (*server)->Shutdown();
  return 0;
}
