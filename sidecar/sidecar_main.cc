// breaker-sidecar: takes an unmodified beacon node into the fleet's breaker by observing it
// over its Beacon API and enforcing the fleet's policy at the builder API, one local port per
// relay (docs/sidecar.md).

#include <csignal>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "glog/logging.h"
#include "sidecar/config.h"
#include "sidecar/sidecar.h"

ABSL_FLAG(std::string, config, "",
          "the sidecar's configuration, a text-format breaker.v1.SidecarConfig "
          "(proto/breaker/v1/sidecar.proto; example: examples/sidecar.textproto). Required.");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "breaker-sidecar --config=FILE\n\n"
      "Serves the builder API of each configured upstream (relay or builder) on a local port\n"
      "of its own, for mev-boost or the beacon node to use in place of the relay's URL.\n"
      "Header and Gloas bid requests are answered 204 No Content, without contacting the\n"
      "upstream, while breakerd's policy refuses that upstream (banned relay, SELF_BUILD, or\n"
      "TRUSTED_ONLY and the upstream untrusted); a Gloas bid of a banned builder is answered\n"
      "204 too; everything else is forwarded unchanged, within the request's X-Timeout-Ms.\n"
      "Bids seen and failed reveals of headers the upstream signed are reported to breakerd.\n"
      "Each upstream is reached over a pool of kept-alive HTTP/1.1 connections, TLS verified\n"
      "against the system's trust store or the upstream's tls_ca_file.\n\n"
      "With beacon_node_url set, it also observes the beacon node over its Beacon API: at start\n"
      "it refuses a node whose genesis, slot or epoch length, or Gloas fork epoch differs from\n"
      "the chain of `network` (or of fallback_config_file); then it reports the node's blocks\n"
      "(canonical or not), the slots it judged empty, its finality and Gloas bids and payloads\n"
      "to breakerd, nothing while the node syncs (docs/sidecar-observer.md); and it warms the\n"
      "connections to the allowed upstreams one slot before each proposal of the validators\n"
      "registered through it.\n\n"
      "Prometheus metrics at /metrics on metrics_listen, when set. Stops at SIGTERM or SIGINT.\n"
      "Prints 'sidecar ready' on stdout once every port listens.");
  absl::FlagsUsageConfig usage;
  // --help lists this file's flags (absl matches files named after the program otherwise).
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "sidecar_main.cc");
  };
  absl::SetFlagsUsageConfig(usage);
  absl::ParseCommandLine(argc, argv);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);

  const std::string path = absl::GetFlag(FLAGS_config);
  if (path.empty()) {
    std::cerr << "breaker-sidecar: --config is required (see --help)\n";
    return 2;
  }
  absl::StatusOr<breaker::sidecar::SidecarSettings> settings =
      breaker::sidecar::LoadSidecarConfig(path);
  if (!settings.ok()) {
    std::cerr << "breaker-sidecar: " << settings.status().message() << "\n";
    return 2;
  }

  // A node or relay closing its connection while the sidecar writes to it is that
  // connection's error, not the process's end.
  signal(SIGPIPE, SIG_IGN);
  // Blocked before any thread starts, so that only sigwait below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  absl::StatusOr<std::unique_ptr<breaker::sidecar::Sidecar>> sidecar =
      breaker::sidecar::Sidecar::Start(*settings);
  if (!sidecar.ok()) {
    std::cerr << "breaker-sidecar: " << sidecar.status().message() << "\n";
    return 1;
  }
  std::cout << "sidecar ready" << std::endl;
  int signal = 0;
  sigwait(&stop_signals, &signal);
  LOG(INFO) << "stopping at signal " << signal;
  (*sidecar)->Stop();
  return 0;
}
