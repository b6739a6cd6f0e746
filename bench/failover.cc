#include "bench/failover.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "bench/node_fleet.h"
#include "bench/process.h"
#include "bench/target.h"
#include "bench/workload.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "tests/support/subprocess.h"

namespace breaker::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr absl::Duration kServeTimeout = absl::Seconds(60);
constexpr absl::Duration kConvergeTimeout = absl::Seconds(120);
// The nodes' backoff reaches 30 s (x1.6 from 1 s) after a handful of refused attempts.
constexpr absl::Duration kAllHoldTimeout = absl::Seconds(120);
constexpr absl::Duration kAdminTimeout = absl::Seconds(10);
// Far from the fan-out test's builders, and under breakerd's 256 operator bans in all.
constexpr uint64_t kFirstFailoverBuilder = 2 * kFirstFanOutBuilder;
constexpr int kMostTrials = 200;

double SecondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// What a standby logs once it has taken the lease, and once it serves (service/rpc, storage).
std::string LeadingLine(const std::string& prefix) {
  return absl::StrCat("leading ", prefix, " in etcd");
}
constexpr char kServingLine[] = "breakerd serving network";
constexpr char kStandbyLine[] = "standby for ";

// A change that only the leader can make: a ban through its Admin service. Returns the version
// of the policy it published.
absl::StatusOr<uint64_t> BanThrough(const std::string& address, uint64_t builder) {
  auto admin =
      breaker::v1::Admin::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kAdminTimeout));
  breaker::v1::BanBuilderRequest request;
  request.set_builder_index(builder);
  request.set_reason("fleet_load failover trial");
  breaker::v1::Policy policy;
  const grpc::Status status = admin->BanBuilder(&context, request, &policy);
  if (!status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("BanBuilder on the new leader at ", address, ": ", status.error_message()));
  }
  return policy.version();
}

class Replicas {
 public:
  explicit Replicas(const FailoverOptions& options) {
    const char* names[] = {"a", "b"};
    for (int i = 0; i < 2; ++i) {
      TargetOptions target;
      target.kind = TargetKind::kBreakerd;
      target.binary = options.breakerd;
      target.config_path = options.config_path;
      target.port = testing::FreeLoopbackPort();
      target.store = Store::kEtcd;
      target.etcd_endpoints = options.etcd_endpoints;
      target.etcd_prefix = options.etcd_prefix;
      target.etcd_lease_ttl_seconds = options.lease_ttl_seconds;
      target.log_path = absl::StrCat(options.log_path_prefix, "-", names[i], ".log");
      replicas_[i] = std::make_unique<Target>(target);
    }
  }

  Target& operator[](int i) { return *replicas_[i]; }

  // Starts `i` and waits until it logs `line`.
  absl::Status StartAndWait(int i, absl::string_view line) {
    LogFollower log(replicas_[i]->log_path());
    if (absl::Status started = replicas_[i]->Start(); !started.ok()) return started;
    return log.WaitFor(line, kServeTimeout).status();
  }

 private:
  std::array<std::unique_ptr<Target>, 2> replicas_;
};

struct TrialTimes {
  Clock::time_point killed, leading, serving, published, all_hold;
};

void Record(const TrialTimes& t, std::array<std::vector<double>, 5>& samples) {
  samples[0].push_back(SecondsBetween(t.killed, t.all_hold));
  samples[1].push_back(SecondsBetween(t.killed, t.leading));
  samples[2].push_back(SecondsBetween(t.leading, t.serving));
  samples[3].push_back(SecondsBetween(t.serving, t.published));
  samples[4].push_back(SecondsBetween(t.published, t.all_hold));
}

}  // namespace

absl::StatusOr<FailoverResult> RunFailover(const FailoverOptions& options) {
  if (options.trials > kMostTrials) {
    return absl::InvalidArgumentError(absl::StrCat("at most ", kMostTrials,
                                                   " failover trials (each bans a builder, and ",
                                                   "breakerd holds 256 operator bans)"));
  }
  Replicas replicas(options);
  if (absl::Status status = replicas.StartAndWait(0, kServingLine); !status.ok()) return status;
  if (absl::Status status = replicas.StartAndWait(1, kStandbyLine); !status.ok()) return status;
  FleetOptions fleet_options;
  fleet_options.addresses = {replicas[0].address(), replicas[1].address()};
  fleet_options.nodes = options.nodes;
  NodeFleet fleet(fleet_options);
  fleet.ConnectAll();

  std::array<std::vector<double>, 5> samples;
  std::vector<double> per_node;
  int leader = 0;
  for (int trial = 0; trial < options.trials; ++trial) {
    if (absl::Status status = fleet.WaitConverged(kConvergeTimeout).status(); !status.ok()) {
      return status;
    }
    const int standby = 1 - leader;
    LogFollower standby_log(replicas[standby].log_path());
    TrialTimes times;
    times.killed = Clock::now();
    // SIGTERM's stop waits for the exit: on its own thread, while the standby takes over.
    std::thread stopping;
    if (options.sigterm) {
      stopping = std::thread([&replicas, leader] { (void)replicas[leader].Stop(); });
    } else {
      replicas[leader].Kill();
    }
    // Joined on every way out of the trial, the errors' too.
    struct Joined {
      std::thread& thread;
      ~Joined() {
        if (thread.joinable()) thread.join();
      }
    } joined{stopping};
    absl::StatusOr<Clock::time_point> leading = standby_log.WaitFor(
        LeadingLine(options.etcd_prefix), absl::Seconds(options.lease_ttl_seconds) + kServeTimeout);
    if (!leading.ok()) return leading.status();
    times.leading = *leading;
    absl::StatusOr<Clock::time_point> serving = standby_log.WaitFor(kServingLine, kServeTimeout);
    if (!serving.ok()) return serving.status();
    times.serving = *serving;
    absl::StatusOr<uint64_t> version = BanThrough(
        replicas[standby].address(), kFirstFailoverBuilder + static_cast<uint64_t>(trial));
    if (!version.ok()) return version.status();
    times.published = Clock::now();
    absl::StatusOr<std::vector<Clock::time_point>> held =
        fleet.WaitAllHold(*version, kAllHoldTimeout);
    if (!held.ok()) return held.status();
    times.all_hold = *std::max_element(held->begin(), held->end());
    for (Clock::time_point at : *held) per_node.push_back(SecondsBetween(times.killed, at));
    Record(times, samples);
    if (stopping.joinable()) stopping.join();
    std::fprintf(stderr,
                 "[failover, %d nodes, %s] trial %d: all hold version %llu %.2f s after the stop "
                 "(leading %.2f, serving %.2f, published %.2f)\n",
                 options.nodes, options.sigterm ? "SIGTERM" : "SIGKILL", trial + 1, static_cast<unsigned long long>(*version),
                 samples[0].back(), samples[1].back(), SecondsBetween(times.killed, times.serving),
                 SecondsBetween(times.killed, times.published));
    // The killed replica comes back as the next standby.
    if (absl::Status status = replicas.StartAndWait(leader, kStandbyLine); !status.ok()) {
      return status;
    }
    leader = standby;
  }
  fleet.Disconnect();
  // The standby first: stopping the leader first would hand the prefix over once more.
  if (absl::Status status = replicas[1 - leader].Stop(); !status.ok()) return status;
  if (absl::Status status = replicas[leader].Stop(); !status.ok()) return status;

  FailoverResult result;
  result.nodes = options.nodes;
  result.trials = options.trials;
  result.lease_ttl_seconds = options.lease_ttl_seconds;
  result.sigterm = options.sigterm;
  result.total = Summarize(samples[0]);
  result.per_node = Summarize(per_node);
  result.leadership = Summarize(samples[1]);
  result.restore = Summarize(samples[2]);
  result.publish = Summarize(samples[3]);
  result.reconnect = Summarize(samples[4]);
  return result;
}

}  // namespace breaker::bench
