#include "tests/support/replica_harness.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "tests/support/status_matchers.h"

namespace breaker::testing {

using Stream = Subprocess::Stream;

std::string ReplicaFleetTest::Replica::address() const { return absl::StrCat("127.0.0.1:", port); }

void ReplicaFleetTest::SetUp() {
  EtcdCluster::Options options;
  options.members = 3;
  options.directory = dir_ + "/etcd";
  absl::StatusOr<std::unique_ptr<EtcdCluster>> cluster = EtcdCluster::Start(options);
  ASSERT_THAT(cluster, IsOk());
  etcd_ = *std::move(cluster);
}

void ReplicaFleetTest::TearDown() {
  FleetTest::TearDown();
  for (Replica& replica : replicas_) {
    if (replica.process == nullptr) continue;
    if (replica.paused) replica.process->Kill(SIGCONT);
    replica.process->Kill(SIGTERM);
  }
  for (Replica& replica : replicas_) {
    if (replica.process != nullptr) ExpectCleanExit(*replica.process);
    replica.process.reset();
  }
  etcd_.reset();
  // The members' data (each preallocates a 64 MiB log) would stay until the whole test binary
  // ends: the next test's members need the disk.
  std::error_code ignored;
  std::filesystem::remove_all(dir_ + "/etcd", ignored);
}

void ReplicaFleetTest::AddReplicas(int count) {
  for (int i = 0; i < count; ++i) {
    Replica replica;
    replica.name = absl::StrCat("breakerd-", replicas_.size() + 1);
    replica.port = FreeLoopbackPort();
    replicas_.push_back(std::move(replica));
  }
}

void ReplicaFleetTest::StartReplica(size_t i) {
  Replica& replica = replicas_.at(i);
  ASSERT_EQ(replica.process, nullptr) << replica.name << " runs already";
  ASSERT_NE(etcd_, nullptr) << "etcd did not start";
  std::vector<std::string> flags = {
      absl::StrCat("--listen=", replica.address()),
      absl::StrCat("--advertise_address=", replica.address()),
      "--store=etcd",
      absl::StrCat("--etcd_endpoints=", absl::StrJoin(etcd_->endpoints(), ",")),
      absl::StrCat("--etcd_prefix=", prefix_),
      absl::StrCat("--etcd_lease_ttl=", lease_ttl_seconds_)};
  flags.insert(flags.end(), replica.extra_flags.begin(), replica.extra_flags.end());
  replica.process = LaunchBreakerd(replica.name, flags);
  ASSERT_NE(replica.process, nullptr);
  replica.paused = false;
}

namespace {

std::optional<size_t> AwaitLine(const Subprocess& process, absl::string_view text, size_t from) {
  return process.WaitForLine(
      Stream::kStderr, [&](absl::string_view line) { return absl::StrContains(line, text); },
      Deadline(), from);
}

}  // namespace

std::optional<size_t> ReplicaFleetTest::AwaitLeadingLine(size_t i, size_t from) {
  const Replica& replica = replicas_.at(i);
  if (replica.process == nullptr) return std::nullopt;
  return AwaitLine(*replica.process, absl::StrCat("leading ", prefix_, " in etcd"), from);
}

std::optional<size_t> ReplicaFleetTest::AwaitStandbyLine(size_t i, size_t from) {
  const Replica& replica = replicas_.at(i);
  if (replica.process == nullptr) return std::nullopt;
  return AwaitLine(*replica.process, absl::StrCat("standby for ", prefix_), from);
}

std::optional<size_t> ReplicaFleetTest::Leader() {
  std::vector<size_t> serving;
  for (size_t i = 0; i < replicas_.size(); ++i) {
    // A paused replica would hold the health check until its deadline.
    if (replicas_[i].process == nullptr || replicas_[i].paused) continue;
    if (CheckHealth(replicas_[i].port) == "SERVING") serving.push_back(i);
  }
  EXPECT_LE(serving.size(), 1u) << "more than one replica serves: " << absl::StrJoin(serving, ", ");
  if (serving.size() != 1) return std::nullopt;
  return serving.front();
}

std::optional<size_t> ReplicaFleetTest::AwaitLeader(std::optional<size_t> except) {
  std::optional<size_t> leader;
  const bool led = PollUntil([&] {
    leader = Leader();
    return leader.has_value() && leader != except;
  });
  EXPECT_TRUE(led) << "no replica" << (except.has_value() ? " but the old leader" : "")
                   << " leads (their logs are above)";
  if (!led) return std::nullopt;
  TalkTo(*leader);
  return leader;
}

int ReplicaFleetTest::StopReplica(size_t i, int signal) {
  Replica& replica = replicas_.at(i);
  if (replica.paused && signal != SIGKILL) replica.process->Kill(SIGCONT);
  replica.process->Kill(signal);
  const std::optional<int> status = replica.process->WaitUntilExit(Deadline());
  EXPECT_TRUE(status.has_value()) << replica.name << " did not exit on signal " << signal;
  replica.process.reset();
  replica.paused = false;
  return status.value_or(-1);
}

void ReplicaFleetTest::PauseReplica(size_t i) {
  replicas_.at(i).process->Kill(SIGSTOP);
  replicas_[i].paused = true;
}

void ReplicaFleetTest::ResumeReplica(size_t i) {
  replicas_.at(i).process->Kill(SIGCONT);
  replicas_[i].paused = false;
}

std::vector<std::string> ReplicaFleetTest::ReplicaLog(size_t i, size_t from) const {
  std::vector<std::string> lines = replicas_.at(i).process->Lines(Stream::kStderr);
  lines.erase(lines.begin(), lines.begin() + std::min(from, lines.size()));
  return lines;
}

size_t ReplicaFleetTest::ReplicaLogMark(size_t i) const {
  return replicas_.at(i).process->LineCount(Stream::kStderr);
}

std::string ReplicaFleetTest::NodeTargets() const {
  std::vector<std::string> addresses;
  for (const Replica& replica : replicas_) addresses.push_back(replica.address());
  return absl::StrJoin(addresses, ",");
}

// --- etcd ---

absl::StatusOr<std::vector<mvccpb::KeyValue>> ReplicaFleetTest::EtcdRange(
    absl::string_view suffix) {
  const std::string key = absl::StrCat(prefix_, suffix);
  std::string range_end = key;
  ++range_end.back();  // every key that starts with `key`
  etcdserverpb::RangeRequest request;
  request.set_key(key);
  request.set_range_end(range_end);
  absl::Status error = absl::UnavailableError("no etcd member");
  for (const std::string& endpoint : etcd_->endpoints()) {
    auto kv = etcdserverpb::KV::NewStub(
        grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    etcdserverpb::RangeResponse response;
    const grpc::Status status = kv->Range(&context, request, &response);
    if (!status.ok()) {
      error =
          absl::UnavailableError(absl::StrCat("etcd at ", endpoint, ": ", status.error_message()));
      continue;
    }
    return std::vector<mvccpb::KeyValue>(response.kvs().begin(), response.kvs().end());
  }
  return error;
}

absl::StatusOr<std::optional<mvccpb::KeyValue>> ReplicaFleetTest::LeaderKey() {
  absl::StatusOr<std::vector<mvccpb::KeyValue>> keys = EtcdRange("/leader");
  if (!keys.ok()) return keys.status();
  for (const mvccpb::KeyValue& kv : *keys) {
    if (kv.key() == prefix_ + "/leader") return kv;
  }
  return std::nullopt;
}

}  // namespace breaker::testing
