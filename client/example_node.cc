// example_node: plays a beacon node of the fleet. It connects to breakerd through the client
// library, reports a random stream of observations at the pace of the chain (or faster), and
// prints every policy it receives, one line each.

#include <algorithm>
#include <csignal>
#include <iostream>
#include <random>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "core/chain_time.h"
#include "glog/logging.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "breakerd addresses, comma-separated.");
ABSL_FLAG(std::string, node_id, "example-node", "This node's id in the fleet.");
ABSL_FLAG(std::string, network, "", "The node's network (empty: not checked).");
ABSL_FLAG(double, observations_per_second, 10, "Random observations reported per second.");
ABSL_FLAG(double, failure_fraction, 0.01,
          "Fraction of observations that are missing payloads (attested 0.9).");
ABSL_FLAG(uint64_t, builders, 100, "Builder indices drawn from 0..builders-1.");
ABSL_FLAG(double, duration_seconds, 0, "Stop after this long; 0 runs until SIGINT/SIGTERM.");

namespace {

volatile std::sig_atomic_t stop_requested = 0;

void RequestStop(int) { stop_requested = 1; }

std::string Describe(const breaker::client::PolicySnapshot& snapshot) {
  std::vector<breaker::core::BuilderIndex> banned;
  for (const auto& [builder, ban] : snapshot.policy.banned_builders) banned.push_back(builder);
  std::sort(banned.begin(), banned.end());
  return absl::StrCat("policy source=", breaker::client::PolicySourceName(snapshot.source),
                      " version=", snapshot.fleet_version,
                      " mode=", breaker::core::ModeName(snapshot.policy.mode), " banned=[",
                      absl::StrJoin(banned, ","), "] reason=\"", snapshot.policy.reason, "\"");
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "example_node: plays a beacon node of the fleet against breakerd.\n"
      "Usage: example_node [--target=HOST:PORT[,HOST:PORT]] [--node_id=ID] "
      "[--observations_per_second=N] [--duration_seconds=S]");
  absl::ParseCommandLine(argc, argv);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  std::signal(SIGINT, RequestStop);
  std::signal(SIGTERM, RequestStop);

  breaker::client::ClientOptions options;
  options.addresses = absl::StrSplit(absl::GetFlag(FLAGS_target), ',', absl::SkipEmpty());
  options.node_id = absl::GetFlag(FLAGS_node_id);
  options.network = absl::GetFlag(FLAGS_network);
  options.client_version = "example_node/1";
  auto client = breaker::client::StartGrpcClient(options);
  if (!client.ok()) {
    std::cerr << "example_node: " << client.status().message() << "\n";
    return 2;
  }
  (*client)->Subscribe([](std::shared_ptr<const breaker::client::PolicySnapshot> snapshot) {
    std::cout << Describe(*snapshot) << std::endl;
  });

  std::mt19937_64 random(std::random_device{}());
  std::uniform_int_distribution<uint64_t> builder(0, absl::GetFlag(FLAGS_builders) - 1);
  std::uniform_real_distribution<double> unit(0, 1);
  const breaker::core::ChainSpec chain =
      breaker::core::ChainSpecForNetwork(options.network.empty() ? "mainnet" : options.network)
          .value_or(breaker::core::ChainSpec());
  const double rate = absl::GetFlag(FLAGS_observations_per_second);
  const absl::Time deadline =
      absl::GetFlag(FLAGS_duration_seconds) > 0
          ? absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_duration_seconds))
          : absl::InfiniteFuture();
  uint32_t root = 0;
  while (!stop_requested && absl::Now() < deadline) {
    const breaker::core::Slot slot = breaker::core::SlotAt(absl::Now(), chain);
    const uint64_t b = builder(random);
    if (unit(random) < absl::GetFlag(FLAGS_failure_fraction)) {
      const std::string bytes = absl::StrCat(options.node_id, ++root);
      (*client)->Report(
          slot, breaker::core::PayloadMissing{b, breaker::core::BlockRootFromBytes(bytes), 0.9});
    } else {
      (*client)->Report(slot, breaker::core::BidSeen{b, "", ""});
    }
    if (rate > 0) absl::SleepFor(absl::Seconds(1 / rate));
  }
  const breaker::client::ClientStats stats = (*client)->stats();
  std::cout << "stats reported=" << stats.reported << " acknowledged=" << stats.acknowledged
            << " buffered=" << stats.buffered
            << " dropped=" << stats.dropped_bids + stats.dropped_other + stats.dropped_failures
            << " reconnects=" << stats.reconnects << std::endl;
  (*client)->Stop();
  return 0;
}
