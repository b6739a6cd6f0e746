// How long breakerd's restore takes after a long history, as after SIGKILLs: --kills child
// processes in turn open the fleet on one state directory (SQLite, in a temporary directory),
// as a restart does, journal their share of --observations bids (batches of 1000, through the
// fleet as the node service submits them) and die without their final snapshot; then this
// process opens the fleet once more. Each opening is timed.
//   bazel run --config=opt //service:restart_benchmark -- --observations=1000000
// What a restart replays is the journal since the last snapshot: the time measured grows with
// that, never with the history before it.

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "core/chain_time.h"
#include "glog/logging.h"
#include "proto/codec/received_batch.h"
#include "service/fleet.h"
#include "service/storage/store_selection.h"

ABSL_FLAG(int, observations, 1'000'000, "Observations to journal before the restart.");
ABSL_FLAG(int, nodes, 16, "Nodes sending them, each its own batches in turn.");
ABSL_FLAG(int, kills, 10, "Restarts along the way, each after its share of the observations.");

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;

constexpr int kBatch = 1000;

core::ChainSpec FleetChain() {
  core::ChainSpec chain = core::ChainSpecForNetwork("mainnet").value();
  chain.gloas_fork_epoch = 0;
  return chain;
}

Fleet::Options FleetOptions(const std::string& state_dir) {
  Fleet::Options options;
  options.config.chain = FleetChain();
  // No rate limit in the way: the history is what is measured.
  options.limits.node_observation_rate = 1'000'000;
  options.limits.node_observation_burst = 1'000'000'000;
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenSqliteStore(state_dir);
  CHECK(store.ok()) << store.status();
  options.store = *std::move(store);
  options.clock = &SystemClock();
  options.run_ticker = false;
  return options;
}

// Opens the fleet on `state_dir`, as a restart does, and says how long that took.
std::unique_ptr<Fleet> OpenTimed(const std::string& state_dir, const std::string& after) {
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<Fleet>> fleet = Fleet::Open(FleetOptions(state_dir));
  const absl::Duration took = absl::Now() - start;
  CHECK(fleet.ok()) << fleet.status();
  std::printf("restart after %s: %.3f s\n", after.c_str(), absl::ToDoubleSeconds(took));
  std::fflush(stdout);
  return *std::move(fleet);
}

// Restarts on `state_dir`, journals `observations` more (numbered on from `first_round`'s),
// then ends the process without the final snapshot.
[[noreturn]] void RestartAndFill(const std::string& state_dir, const std::string& after,
                                 int observations, int nodes, int first_round) {
  std::unique_ptr<Fleet> fleet = OpenTimed(state_dir, after);
  const core::Slot slot = core::SlotAt(absl::Now(), FleetChain());
  Mutex mu;
  CondVar answered;
  int in_flight = 0;
  for (int sent = 0, round = first_round; sent < observations; ++round) {
    for (int node = 0; node < nodes && sent < observations; ++node, sent += kBatch) {
      v1::ObservationBatch batch;
      for (int i = 0; i < kBatch; ++i) {
        v1::Observation* observation = batch.add_observations();
        observation->set_sequence(static_cast<uint64_t>(round) * kBatch + i + 1);
        observation->set_slot(slot);
        observation->mutable_bid_seen()->set_builder_index((sent + i) % 4096);
        observation->mutable_bid_seen()->set_relay("https://relay.example");
        observation->mutable_bid_seen()->set_builder_pubkey(std::string(48, 'k'));
      }
      {
        MutexLock lock(&mu);
        while (in_flight >= 2 * nodes) answered.Wait(&mu);
        ++in_flight;
      }
      fleet->SubmitObservations(absl::StrCat("bench-", node),
                                *codec::ReceivedBatch::Parse(batch.SerializeAsString()),
                                [&](absl::StatusOr<v1::ObservationAck> ack) {
                                  CHECK(ack.ok()) << ack.status();
                                  CHECK_EQ(ack->refused_size(), 0) << ack->refused(0).message();
                                  MutexLock lock(&mu);
                                  --in_flight;
                                  answered.SignalAll();
                                });
    }
  }
  fleet->Sync();
  std::fflush(nullptr);
  _exit(0);  // as a SIGKILL: no final snapshot
}

int Run() {
  std::string dir = "/tmp/restart_benchmark_XXXXXX";
  CHECK(mkdtemp(dir.data()) != nullptr);
  const int observations = absl::GetFlag(FLAGS_observations);
  const int nodes = absl::GetFlag(FLAGS_nodes);
  const int kills = absl::GetFlag(FLAGS_kills);
  const int per_kill = observations / kills;
  const int rounds_per_kill = (per_kill / kBatch + nodes - 1) / nodes;
  for (int kill = 0; kill < kills; ++kill) {
    const pid_t child = fork();
    CHECK_GE(child, 0);
    if (child == 0) {
      RestartAndFill(dir,
                     absl::StrCat(kill * per_kill, " journaled observations (kill ", kill, ")"),
                     per_kill, nodes, kill * rounds_per_kill);
    }
    int status = 0;
    CHECK_EQ(waitpid(child, &status, 0), child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the fill failed";
  }
  OpenTimed(dir, absl::StrCat(kills * per_kill, " journaled observations"));
  CHECK_EQ(system(absl::StrCat("rm -rf ", dir).c_str()), 0);
  return 0;
}

}  // namespace
}  // namespace breaker::service

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  return breaker::service::Run();
}
