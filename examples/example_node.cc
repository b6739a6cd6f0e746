// example_node: plays a beacon node of the fleet. It connects to breakerd through the client
// library and prints every policy it applies, one line each:
//
//   policy source=fleet version=3 mode=ALL_BUILDERS banned=[5] reason="..."
//
// By default it reports a random stream of observations at the pace of the chain (or faster).
// With --script it reports the observations read from stdin instead, one text-format
// breaker.v1.Observation per line, for people trying scenarios by hand and for tests that
// drive a fleet of processes:
//
//   payload_missing { builder_index: 5 block_root: "r1" attested_fraction: 0.9 }
//   slot: 1234 blocks_seen {}
//
// and prints a line whenever breakerd's acknowledgements of them move:
//
//   observations reported=2 acknowledged=2 refused=0
//
// stdout is flushed at every line: whoever reads it through a pipe sees each line at once.

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.pb.h"
#include "client/channel_security.h"
#include "client/client.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "core/chain_time.h"
#include "core/config.h"
#include "core/observation.h"
#include "glog/logging.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "proto/codec/api_codec.h"
#include "proto/codec/config_file.h"
#include "proto/codec/scenario_codec.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "breakerd addresses, comma-separated.");
ABSL_FLAG(std::string, node_id, "example-node", "This node's id in the fleet.");
ABSL_FLAG(std::string, tls_ca, "",
          "CA certificates (PEM) breakerd's certificate must chain to. Any --tls_* flag turns "
          "TLS on; empty with TLS on: the system's roots.");
ABSL_FLAG(std::string, tls_cert, "", "This node's certificate (PEM), for mutual TLS.");
ABSL_FLAG(std::string, tls_key, "", "The private key (PEM) of --tls_cert.");
ABSL_FLAG(std::string, token_file, "",
          "A file holding this node's bearer token, sent with every call. Empty: none.");
ABSL_FLAG(std::string, network, "",
          "The node's network (empty: --config's network, or not checked without --config).");
ABSL_FLAG(std::string, config, "",
          "breakerd's configuration file (text-format breaker.v1.Config). Its chain is the "
          "node's slot clock and network, and it is the local engine's configuration until "
          "breakerd sends its own. Empty: the defaults of --network (mainnet if none).");
ABSL_FLAG(bool, script, false,
          "Report the observations read from stdin instead of random ones. Each line that is "
          "not empty and does not start with # is a text-format breaker.v1.Observation: slot 0 "
          "(or none) is the current slot, a block root shorter than 32 bytes is a label "
          "(zero-padded), the sequence number is the library's. A malformed line is reported "
          "on stderr and skipped. At the end of the input the node keeps running until "
          "SIGINT/SIGTERM or --duration_seconds.");
ABSL_FLAG(double, observations_per_second, 10, "Random observations reported per second.");
ABSL_FLAG(double, failure_fraction, 0.01,
          "Fraction of random observations that are missing payloads (attested 0.9).");
ABSL_FLAG(uint64_t, builders, 100, "Random builder indices are drawn from 0..builders-1.");
ABSL_FLAG(double, duration_seconds, 0, "Stop after this long; 0 runs until SIGINT/SIGTERM.");
ABSL_FLAG(double, staleness_limit_seconds, 0,
          "breakerd unreachable for longer than this: also apply the local engine's policy. "
          "0: two epochs of the chain.");
ABSL_FLAG(int64_t, initial_backoff_ms, 1000, "First wait before reconnecting to breakerd.");
ABSL_FLAG(int64_t, max_backoff_ms, 30000, "Longest wait before reconnecting to breakerd.");

namespace {

namespace core = ::breaker::core;
namespace v1 = ::breaker::v1;
using ::breaker::Mutex;
using ::breaker::MutexLock;
using ::breaker::client::BreakerClient;
using ::breaker::client::ClientOptions;
using ::breaker::client::PolicySnapshot;

// How often the script reader wakes without input, to notice a stop request or new
// acknowledgements.
constexpr absl::Duration kIdlePoll = absl::Milliseconds(100);

// SIGINT and SIGTERM run the handler on whichever thread the kernel picks, often one of the
// client library's, while the main thread reads the flag: a volatile sig_atomic_t is safe only
// for a handler on the reading thread, a lock-free atomic for any thread.
std::atomic<bool> stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");

void RequestStop(int) { stop_requested.store(true); }

// Policy lines come from the library's thread, progress lines from the main one: one line at
// a time, each flushed, so that a reader of the pipe never sees half of one.
void PrintLine(const std::string& line) {
  static Mutex mu;
  MutexLock lock(&mu);
  std::cout << line << std::endl;
}

std::string Describe(const PolicySnapshot& snapshot) {
  std::vector<core::BuilderIndex> banned;
  for (const auto& [builder, ban] : snapshot.policy.banned_builders) banned.push_back(builder);
  std::sort(banned.begin(), banned.end());
  return absl::StrCat("policy source=", breaker::client::PolicySourceName(snapshot.source),
                      " version=", snapshot.fleet_version,
                      " mode=", core::ModeName(snapshot.policy.mode), " banned=[",
                      absl::StrJoin(banned, ","), "] reason=\"", snapshot.policy.reason, "\"");
}

// The node's chain and client options, from the flags. The node reads time on the client's
// clock (options.clock), so that its slots are the library's.
struct NodeSetup {
  core::ChainSpec chain;
  ClientOptions options;
};

absl::StatusOr<NodeSetup> SetupFromFlags() {
  NodeSetup setup;
  ClientOptions& options = setup.options;
  options.addresses = absl::StrSplit(absl::GetFlag(FLAGS_target), ',', absl::SkipEmpty());
  options.node_id = absl::GetFlag(FLAGS_node_id);
  options.network = absl::GetFlag(FLAGS_network);
  options.client_version = "example_node/1";
  absl::StatusOr<breaker::client::ChannelSecurity> security = breaker::client::SecurityFromFiles(
      {absl::GetFlag(FLAGS_tls_ca), absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key)},
      absl::GetFlag(FLAGS_token_file));
  if (!security.ok()) return security.status();
  options.credentials = std::move(security->credentials);
  options.bearer_token = std::move(security->bearer_token);
  options.initial_backoff = absl::Milliseconds(absl::GetFlag(FLAGS_initial_backoff_ms));
  options.max_backoff = absl::Milliseconds(absl::GetFlag(FLAGS_max_backoff_ms));
  if (absl::GetFlag(FLAGS_staleness_limit_seconds) > 0) {
    options.staleness_limit = absl::Seconds(absl::GetFlag(FLAGS_staleness_limit_seconds));
  }
  if (const std::string path = absl::GetFlag(FLAGS_config); !path.empty()) {
    // breakerd's own file: a custom chain (its genesis and slot length) exists only there, and
    // the node's slots must be breakerd's.
    absl::StatusOr<core::Config> config = breaker::codec::LoadConfigFile(path);
    if (!config.ok()) return config.status();
    setup.chain = config->chain;
    if (options.network.empty()) options.network = config->chain.network;
    options.fallback_config = *std::move(config);
    return setup;
  }
  absl::StatusOr<core::ChainSpec> chain =
      core::ChainSpecForNetwork(options.network.empty() ? "mainnet" : options.network);
  if (!chain.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--network=", options.network, " has no built-in chain; pass --config with its chain"));
  }
  setup.chain = *std::move(chain);
  return setup;
}

// --- Random observations -----------------------------------------------------------------

void ReportRandomly(BreakerClient& client, const NodeSetup& setup, absl::Time deadline) {
  std::mt19937_64 random(std::random_device{}());
  std::uniform_int_distribution<uint64_t> builder(0, absl::GetFlag(FLAGS_builders) - 1);
  std::uniform_real_distribution<double> unit(0, 1);
  const double rate = absl::GetFlag(FLAGS_observations_per_second);
  uint32_t root = 0;
  const breaker::Clock& clock = *setup.options.clock;
  while (!stop_requested && clock.Now() < deadline) {
    const core::Slot slot = core::SlotAt(clock.Now(), setup.chain);
    const uint64_t b = builder(random);
    if (unit(random) < absl::GetFlag(FLAGS_failure_fraction)) {
      const std::string bytes = absl::StrCat(setup.options.node_id, ++root);
      // The clock's own slot and well-formed observations: never refused.
      client.Report(slot, core::PayloadMissing{b, core::BlockRootFromBytes(bytes), 0.9})
          .IgnoreError();
    } else {
      client.Report(slot, core::BidSeen{b, "", ""}).IgnoreError();
    }
    if (rate > 0) absl::SleepFor(absl::Seconds(1 / rate));
  }
}

// --- Scripted observations ---------------------------------------------------------------

// Keeps the parser's first error, placed on the script's line: the parser sees one line at a
// time and would call each one line 1.
class LineErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  explicit LineErrorCollector(int line_number) : line_number_(line_number) {}

  void AddError(int /*line*/, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (error_.empty()) {
      error_ = absl::StrCat("stdin:", line_number_, ":", column + 1, ": ", message);
    }
  }

  const std::string& error() const { return error_; }

 private:
  const int line_number_;
  std::string error_;
};

// Reports one line of the script; says on stderr why a line is skipped.
void ReportScriptLine(BreakerClient& client, const NodeSetup& setup, absl::string_view line,
                      int line_number) {
  const std::string source = absl::StrCat("stdin:", line_number);
  v1::Observation scripted;
  LineErrorCollector errors(line_number);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(line), &scripted)) {
    std::cerr << "example_node: "
              << (errors.error().empty() ? absl::StrCat(source, ": not an observation")
                                         : errors.error())
              << "; line skipped" << std::endl;
    return;
  }
  const v1::Observation expanded = breaker::codec::ExpandScriptedObservation(
      std::move(scripted), core::SlotAt(setup.options.clock->Now(), setup.chain));
  absl::StatusOr<core::Observation> observation =
      breaker::codec::ObservationFromProto(expanded, setup.options.node_id);
  if (!observation.ok()) {
    std::cerr << "example_node: " << source << ": " << observation.status().message()
              << "; line skipped" << std::endl;
    return;
  }
  if (absl::Status reported = client.Report(observation->slot, std::move(observation->event));
      !reported.ok()) {
    std::cerr << "example_node: " << source << ": " << reported.message() << "; line skipped"
              << std::endl;
  }
}

// Prints the observation counters when breakerd's acknowledgements moved since the last call:
// a person sees that the script reached breakerd, a test knows when its lines were handled.
class AckProgress {
 public:
  void PrintIfMoved(const BreakerClient& client) {
    const breaker::client::ClientStats stats = client.stats();
    if (stats.acknowledged == acknowledged_ && stats.refused == refused_) return;
    acknowledged_ = stats.acknowledged;
    refused_ = stats.refused;
    PrintLine(absl::StrCat("observations reported=", stats.reported,
                           " acknowledged=", stats.acknowledged, " refused=", stats.refused));
  }

 private:
  uint64_t acknowledged_ = 0;
  uint64_t refused_ = 0;
};

// Calls `on_line` with every line of `fd` (without its newline) until the end of the input, a
// read error, a stop request or `deadline` of `clock`; calls `on_idle` at least every kIdlePoll.
// Returns true at the end of the input. Polls instead of blocking in read(), which SIGINT would
// not interrupt.
bool ReadLines(int fd, const breaker::Clock& clock, absl::Time deadline,
               absl::FunctionRef<void(absl::string_view)> on_line,
               absl::FunctionRef<void()> on_idle) {
  std::string pending;
  char buffer[4096];
  while (!stop_requested && clock.Now() < deadline) {
    pollfd input{fd, POLLIN, 0};
    const int ready = poll(&input, 1, static_cast<int>(absl::ToInt64Milliseconds(kIdlePoll)));
    if (ready < 0 && errno != EINTR) return false;
    if (ready > 0) {
      const ssize_t n = read(fd, buffer, sizeof(buffer));
      if (n < 0 && errno != EINTR && errno != EAGAIN) return false;
      if (n == 0) {
        if (!pending.empty()) on_line(pending);  // a last line without its newline
        return true;
      }
      if (n > 0) pending.append(buffer, static_cast<size_t>(n));
      size_t newline;
      while ((newline = pending.find('\n')) != std::string::npos) {
        on_line(absl::string_view(pending).substr(0, newline));
        pending.erase(0, newline + 1);
      }
    }
    on_idle();
  }
  return false;
}

void ReportScript(BreakerClient& client, const NodeSetup& setup, absl::Time deadline) {
  AckProgress progress;
  int line_number = 0;
  const bool at_end = ReadLines(
      STDIN_FILENO, *setup.options.clock, deadline,
      [&](absl::string_view raw) {
        ++line_number;
        const absl::string_view line = absl::StripAsciiWhitespace(raw);
        if (line.empty() || absl::StartsWith(line, "#")) return;
        // The raw line, so that an error's column is the one the author sees.
        ReportScriptLine(client, setup, raw, line_number);
      },
      [&] { progress.PrintIfMoved(client); });
  if (!at_end) return;
  // The script is over, the node is not: it keeps its stream and prints what changes.
  while (!stop_requested && setup.options.clock->Now() < deadline) {
    progress.PrintIfMoved(client);
    absl::SleepFor(kIdlePoll);
  }
}

void PrintStats(const BreakerClient& client) {
  const breaker::client::ClientStats stats = client.stats();
  PrintLine(absl::StrCat("stats reported=", stats.reported, " acknowledged=", stats.acknowledged,
                         " buffered=", stats.buffered, " dropped=",
                         stats.dropped_bids + stats.dropped_other + stats.dropped_failures,
                         " reconnects=", stats.reconnects));
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "example_node: plays a beacon node of the fleet against breakerd.\n"
      "Usage: example_node [--target=HOST:PORT[,HOST:PORT]] [--node_id=ID] [--config=FILE] "
      "[--script < observations] [--observations_per_second=N] [--duration_seconds=S]");
  absl::ParseCommandLine(argc, argv);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  std::signal(SIGINT, RequestStop);
  std::signal(SIGTERM, RequestStop);

  absl::StatusOr<NodeSetup> setup = SetupFromFlags();
  if (!setup.ok()) {
    std::cerr << "example_node: " << setup.status().message() << std::endl;
    return 2;
  }
  setup->options.clock = &breaker::SystemClock();
  auto client = breaker::client::StartGrpcClient(setup->options);
  if (!client.ok()) {
    std::cerr << "example_node: " << client.status().message() << std::endl;
    return 2;
  }
  (*client)->Subscribe(
      [](std::shared_ptr<const PolicySnapshot> snapshot) { PrintLine(Describe(*snapshot)); });

  const absl::Time deadline =
      absl::GetFlag(FLAGS_duration_seconds) > 0
          ? setup->options.clock->Now() + absl::Seconds(absl::GetFlag(FLAGS_duration_seconds))
          : absl::InfiniteFuture();
  if (absl::GetFlag(FLAGS_script)) {
    ReportScript(**client, *setup, deadline);
  } else {
    ReportRandomly(**client, *setup, deadline);
  }
  PrintStats(**client);
  (*client)->Stop();
  return 0;
}
