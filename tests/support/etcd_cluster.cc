#include "tests/support/etcd_cluster.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace breaker::testing {
namespace {

constexpr char kEtcdBinary[] = "/usr/bin/etcd";

std::string Url(int port) { return absl::StrCat("http://127.0.0.1:", port); }

}  // namespace

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::Start(Options options) {
  if (access(kEtcdBinary, X_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat(kEtcdBinary, " is missing: install etcd-server ", "(tools/setup.sh does)"));
  }
  mkdir(options.directory.c_str(), 0700);
  std::unique_ptr<EtcdCluster> cluster(new EtcdCluster(std::move(options)));
  std::vector<std::string> peers;
  for (int i = 0; i < cluster->options_.members; ++i) {
    Member member;
    member.name = absl::StrCat("m", i);
    member.data_directory = absl::StrCat(cluster->options_.directory, "/", member.name);
    member.client_port = FreeLoopbackPort();
    member.peer_port = FreeLoopbackPort();
    peers.push_back(absl::StrCat(member.name, "=", Url(member.peer_port)));
    cluster->members_.push_back(std::move(member));
  }
  cluster->initial_cluster_ = absl::StrJoin(peers, ",");
  for (int i = 0; i < cluster->size(); ++i) {
    if (absl::Status launched = cluster->Launch(i); !launched.ok()) return launched;
  }
  const absl::Time deadline = absl::Now() + cluster->options_.start_timeout;
  for (int i = 0; i < cluster->size(); ++i) {
    if (!cluster->WaitHealthy(i, deadline)) {
      return absl::UnavailableError(absl::StrCat(
          "etcd member ", i, " at ", cluster->endpoint(i), " not healthy within ",
          absl::FormatDuration(cluster->options_.start_timeout), "; see its log above"));
    }
  }
  return cluster;
}

EtcdCluster::~EtcdCluster() {
  for (Member& member : members_) {
    if (member.process != nullptr) member.process->Kill(SIGCONT);  // a stopped one, too
    member.process.reset();                                        // SIGKILL and reap
  }
}

absl::Status EtcdCluster::Launch(int index) {
  Member& member = members_[index];
  Subprocess::Options process;
  process.binary = kEtcdBinary;
  process.name = absl::StrCat("etcd-", member.name);
  process.args = {
      "--name=" + member.name,
      "--data-dir=" + member.data_directory,
      "--listen-client-urls=" + Url(member.client_port),
      "--advertise-client-urls=" + Url(member.client_port),
      "--listen-peer-urls=" + Url(member.peer_port),
      "--initial-advertise-peer-urls=" + Url(member.peer_port),
      "--initial-cluster=" + initial_cluster_,
      "--initial-cluster-state=new",
      "--initial-cluster-token=" + options_.directory,
      // Fast elections on loopback, so that tests of member faults stay short.
      "--heartbeat-interval=50",
      "--election-timeout=500",
      "--logger=zap",
      "--log-level=warn",
  };
  if (options_.max_request_bytes > 0) {
    process.args.push_back(absl::StrCat("--max-request-bytes=", options_.max_request_bytes));
  }
  absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(std::move(process));
  if (!started.ok()) return started.status();
  member.process = *std::move(started);
  return absl::OkStatus();
}

std::string EtcdCluster::endpoint(int member) const {
  return absl::StrCat("127.0.0.1:", members_[member].client_port);
}

std::vector<std::string> EtcdCluster::endpoints() const {
  std::vector<std::string> all;
  for (int i = 0; i < size(); ++i) all.push_back(endpoint(i));
  return all;
}

void EtcdCluster::Kill(int member) {
  if (members_[member].process == nullptr) return;
  members_[member].process->Kill(SIGKILL);
  members_[member].process->Wait();
  members_[member].process.reset();
}

void EtcdCluster::Stop(int member) {
  if (members_[member].process != nullptr) members_[member].process->Kill(SIGSTOP);
}

void EtcdCluster::Continue(int member) {
  if (members_[member].process != nullptr) members_[member].process->Kill(SIGCONT);
}

absl::Status EtcdCluster::Restart(int member) {
  Kill(member);
  if (absl::Status launched = Launch(member); !launched.ok()) return launched;
  if (!WaitHealthy(member, absl::Now() + options_.start_timeout)) {
    return absl::UnavailableError(absl::StrCat("restarted etcd member ", member, " at ",
                                               endpoint(member), " not healthy within ",
                                               absl::FormatDuration(options_.start_timeout)));
  }
  return absl::OkStatus();
}

bool EtcdCluster::WaitHealthy(int member, absl::Time deadline) const {
  auto channel = grpc::CreateChannel(endpoint(member), grpc::InsecureChannelCredentials());
  auto maintenance = etcdserverpb::Maintenance::NewStub(channel);
  while (absl::Now() < deadline) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(std::min(deadline, absl::Now() + absl::Seconds(1))));
    context.set_wait_for_ready(true);
    etcdserverpb::StatusResponse response;
    const grpc::Status status =
        maintenance->Status(&context, etcdserverpb::StatusRequest(), &response);
    if (status.ok() && response.leader() != 0) return true;
    // A member without a leader answers at once; give the election a moment.
    if (status.ok()) absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

}  // namespace breaker::testing
