#ifndef TESTS_SUPPORT_ETCD_CLUSTER_H_
#define TESTS_SUPPORT_ETCD_CLUSTER_H_

// An etcd cluster of real etcd processes (Debian's /usr/bin/etcd) on loopback, for tests: each
// member keeps its data in a directory of its own under the test's directory, listens on free
// loopback ports, and dies with the test. Members can be killed, paused (SIGSTOP), resumed and
// restarted over their data, to test what a store does when etcd fails.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/support/subprocess.h"

namespace breaker::testing {

// Not thread-safe: one test thread drives it (the thread that started it, which the members'
// PR_SET_PDEATHSIG ties them to).
class EtcdCluster {
 public:
  struct Options {
    // 1 or 3 (any odd number works; tests use these).
    int members = 3;
    // Where the members' data directories go (created when missing).
    std::string directory;
    // etcd's --max-request-bytes; 0: etcd's default (1.5 MiB).
    int64_t max_request_bytes = 0;
    // How long Start and Restart wait for health.
    absl::Duration start_timeout = absl::Seconds(30);
  };

  // Starts the members and waits until every one answers with a leader elected.
  // Returns NOT_FOUND when /usr/bin/etcd is missing (install etcd-server), UNAVAILABLE when the
  // cluster does not become healthy in time.
  static absl::StatusOr<std::unique_ptr<EtcdCluster>> Start(Options options);

  // Kills every member (SIGKILL).
  ~EtcdCluster();

  int size() const { return static_cast<int>(members_.size()); }
  // "127.0.0.1:PORT", the client address of `member`.
  std::string endpoint(int member) const;
  // Every member's client address.
  std::vector<std::string> endpoints() const;

  // SIGKILL, and reaps it. Its data stays for Restart.
  void Kill(int member);
  // SIGSTOP / SIGCONT: a member that holds its connections but answers nothing.
  void Stop(int member);
  void Continue(int member);
  // Starts a killed member again over its data directory and waits until it answers with a
  // leader elected (which needs a quorum of members running). UNAVAILABLE at `timeout`.
  absl::Status Restart(int member);

  // Waits until `member` answers etcd's Status rpc and knows a leader; false at `deadline`.
  bool WaitHealthy(int member, absl::Time deadline) const;

 private:
  struct Member {
    std::string name;
    std::string data_directory;
    int client_port = 0;
    int peer_port = 0;
    std::unique_ptr<Subprocess> process;  // null while killed
  };

  explicit EtcdCluster(Options options) : options_(std::move(options)) {}
  absl::Status Launch(int member);

  const Options options_;
  std::string initial_cluster_;
  std::vector<Member> members_;
};

}  // namespace breaker::testing

#endif  // TESTS_SUPPORT_ETCD_CLUSTER_H_
