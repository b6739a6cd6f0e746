// breakerd: the fleet's shared builder circuit breaker. See README.md and docs/.

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "glog/logging.h"
#include "service/rpc/run_breakerd.h"
#include "service/storage/etcd_state_store.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "Address to serve gRPC on, HOST:PORT (the port is required; 0 picks a free one).");
ABSL_FLAG(std::string, state_dir, "breakerd-state",
          "Directory holding the persistent breaker state (breakerd.db); created when missing. "
          "One breakerd per directory, one directory per chain.");
ABSL_FLAG(std::string, store, "sqlite",
          "Where the state is kept: sqlite (a database in --state_dir) or etcd (an etcd "
          "cluster, --etcd_endpoints, under --etcd_prefix).");
ABSL_FLAG(std::string, etcd_endpoints, "",
          "With --store=etcd: the etcd members' client addresses, HOST:PORT,HOST:PORT,...");
ABSL_FLAG(std::string, etcd_prefix, "",
          "With --store=etcd: the key prefix of this fleet's state, e.g. /breaker/mypool. One "
          "breakerd leads a prefix at a time; the others on it are standbys.");
ABSL_FLAG(std::string, advertise_address, "",
          "With --store=etcd: where nodes and operators reach this replica, HOST:PORT, as "
          "standbys name the leader to them. Empty: the --listen address.");
ABSL_FLAG(int, etcd_lease_ttl, 5,
          "With --store=etcd: seconds of the leadership lease (2..3600). A breakerd that cannot "
          "renew it for this long, less a margin, stops writing; one killed frees the prefix "
          "after it.");
ABSL_FLAG(int64_t, etcd_max_request_bytes,
          breaker::service::EtcdStateStore::kDefaultMaxRequestBytes,
          "With --store=etcd: the largest request etcd accepts, its --max-request-bytes (etcd's "
          "default, 1.5 MiB). A group of changes larger than this is refused.");
ABSL_FLAG(std::string, etcd_ca, "",
          "With --store=etcd: CA certificates (PEM) of etcd's server certificate: TLS to etcd. "
          "Empty: plaintext.");
ABSL_FLAG(std::string, etcd_cert, "",
          "With --store=etcd: breakerd's client certificate (PEM) for etcd's "
          "--client-cert-auth, with --etcd_key.");
ABSL_FLAG(std::string, etcd_key, "", "The private key (PEM, unencrypted) of --etcd_cert.");
ABSL_FLAG(std::string, config, "",
          "Configuration file: a text-format breaker.v1.Config (see "
          "examples/breakerd.textproto). Empty: the defaults for mainnet. Re-read by the "
          "Admin.ReloadConfig rpc.");

ABSL_FLAG(std::string, tls_cert, "",
          "breakerd's TLS certificate chain (PEM). With --tls_key: serve TLS. Empty: plaintext, "
          "which only a loopback --listen accepts unless --allow_insecure_listen.");
ABSL_FLAG(std::string, tls_key, "", "The private key (PEM, unencrypted) of --tls_cert.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "CA certificates (PEM) that client certificates must chain to: mutual TLS, every "
          "client presents a certificate. Empty: clients are not asked for one.");
ABSL_FLAG(bool, allow_insecure_listen, false,
          "Serve plaintext on a non-loopback --listen address (a network you trust).");
ABSL_FLAG(std::string, access_file, "",
          "Who may call what: a text-format breaker.v1.AccessPolicy (see "
          "examples/access.textproto) mapping client certificates and bearer-token digests to "
          "the roles node, viewer and admin. Empty: every caller is an admin. Re-read at "
          "SIGHUP and by the Admin.ReloadAccess rpc.");

ABSL_FLAG(std::string, metrics_listen, "",
          "Address to serve Prometheus metrics on (HTTP, path /metrics), host:port. Port 0 "
          "picks a free port. Empty: no metrics.");

ABSL_FLAG(int, max_message_bytes, breaker::service::kDefaultMaxReceiveMessageBytes,
          "Largest message a client may send, in bytes; a larger one ends its call with "
          "RESOURCE_EXHAUSTED. 65536..67108864; a full batch of 1000 observations takes about "
          "100 KB.");
ABSL_FLAG(int, max_concurrent_streams, 100,
          "Calls one client connection may hold open at once (4..100000); beyond it, the "
          "client's next call waits for one to end.");
// Seconds, not an absl::Duration flag: that one's reads compile to a fence ThreadSanitizer
// builds refuse.
ABSL_FLAG(double, drain_seconds, 0,
          "At SIGTERM/SIGINT, how many seconds health reports NOT_SERVING before node streams "
          "end, so that load balancers move away first. 0..600.");

ABSL_FLAG(double, hello_timeout_seconds, 10,
          "How many seconds a Connect stream may stay open without saying hello; then it ends "
          "with DEADLINE_EXCEEDED, counted in breakerd_refused_total. 1..600.");

ABSL_FLAG(double, write_timeout_seconds, 30,
          "How many seconds a message breakerd writes to a stream (Connect, WatchPolicy) may wait "
          "for its peer to read it; then the stream ends at once with DEADLINE_EXCEEDED, counted "
          "in breakerd_write_timeouts_total. 1..600.");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "breakerd: the staking pool's shared builder circuit breaker.\n"
      "Usage: breakerd [--listen=HOST:PORT] [--state_dir=DIR] [--config=FILE]\n"
      "                [--store=etcd --etcd_endpoints=HOST:PORT,... --etcd_prefix=/KEY\n"
      "                 [--advertise_address=HOST:PORT]]\n"
      "                [--tls_cert=PEM --tls_key=PEM [--tls_client_ca=PEM]] "
      "[--access_file=FILE]\n"
      "                [--metrics_listen=HOST:PORT]");
  absl::ParseCommandLine(argc, argv);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  // Debian's Abseil is built with deadlock detection on, and gRPC's locks are absl::Mutex: the
  // graph bookkeeping took about 8% of breakerd's instructions under load (BENCHMARKS.md).
  // breakerd's own locks (common/mutex.h) are std::mutex underneath, which it never covered.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  // Under `bazel run`, resolve relative paths (--state_dir) against the directory the
  // command was typed in, not Bazel's runfiles tree.
  if (const char* dir = std::getenv("BUILD_WORKING_DIRECTORY"); dir != nullptr) {
    PCHECK(chdir(dir) == 0) << "cannot enter " << dir;
  }

  // A write beyond the file size limit (RLIMIT_FSIZE) fails with EFBIG, which the state store
  // reports and survives like a full disk, instead of killing the process.
  signal(SIGXFSZ, SIG_IGN);

  // Block the stop signals, and SIGHUP (reload the access file), before any thread starts, so
  // that only RunBreakerd's sigwait sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  breaker::service::ServerOptions options;
  options.listen_address = absl::GetFlag(FLAGS_listen);
  options.state_dir = absl::GetFlag(FLAGS_state_dir);
  options.store = absl::GetFlag(FLAGS_store);
  options.advertise_address = absl::GetFlag(FLAGS_advertise_address);
  options.etcd.endpoints = absl::GetFlag(FLAGS_etcd_endpoints);
  options.etcd.prefix = absl::GetFlag(FLAGS_etcd_prefix);
  options.etcd.lease_ttl_seconds = absl::GetFlag(FLAGS_etcd_lease_ttl);
  options.etcd.max_request_bytes = absl::GetFlag(FLAGS_etcd_max_request_bytes);
  options.etcd.tls.ca_file = absl::GetFlag(FLAGS_etcd_ca);
  options.etcd.tls.cert_file = absl::GetFlag(FLAGS_etcd_cert);
  options.etcd.tls.key_file = absl::GetFlag(FLAGS_etcd_key);
  options.config_path = absl::GetFlag(FLAGS_config);
  options.tls.cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls.key_file = absl::GetFlag(FLAGS_tls_key);
  options.tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  options.allow_insecure_listen = absl::GetFlag(FLAGS_allow_insecure_listen);
  options.access_file = absl::GetFlag(FLAGS_access_file);
  options.max_receive_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  options.max_concurrent_streams = absl::GetFlag(FLAGS_max_concurrent_streams);
  // NaN has no duration: taken as infinite, which CheckServerOptions refuses with the others.
  const double drain_seconds = absl::GetFlag(FLAGS_drain_seconds);
  options.drain_period =
      std::isnan(drain_seconds) ? absl::InfiniteDuration() : absl::Seconds(drain_seconds);
  const double hello_seconds = absl::GetFlag(FLAGS_hello_timeout_seconds);
  options.hello_timeout =
      std::isnan(hello_seconds) ? absl::InfiniteDuration() : absl::Seconds(hello_seconds);
  const double write_seconds = absl::GetFlag(FLAGS_write_timeout_seconds);
  options.write_timeout =
      std::isnan(write_seconds) ? absl::InfiniteDuration() : absl::Seconds(write_seconds);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  return breaker::service::RunBreakerd(std::move(options), stop_signals);
}
