#include "bench/target.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "service/storage/sqlite_state_store.h"

namespace breaker::bench {
namespace {

constexpr absl::Duration kStartTimeout = absl::Seconds(60);
// breakerd's default --max_concurrent_streams, kept unless the harness needs more.
constexpr int kDefaultMaxConcurrentStreams = 100;

// Creates breakerd's empty state in `state_dir` with `page_size`, through the store breakerd
// opens: the page size of a database is fixed once its first table exists. The store (and its
// directory lock) is closed again before breakerd starts.
absl::Status CreateDatabase(const std::string& state_dir, int page_size) {
  std::filesystem::create_directories(state_dir);
  return service::SqliteStateStore::Open(state_dir, page_size).status();
}

}  // namespace

const char* TargetName(TargetKind kind) {
  return kind == TargetKind::kBreakerd ? "breakerd" : "baseline";
}

const char* StoreName(Store store) { return store == Store::kSqlite ? "sqlite" : "etcd"; }

absl::Status Target::Start() {
  if (options_.kind == TargetKind::kBreakerd && options_.store == Store::kSqlite &&
      options_.sqlite_page_size > 0) {
    absl::Status created = CreateDatabase(options_.state_dir, options_.sqlite_page_size);
    if (!created.ok()) return created;
  }
  return Launch(port_, 0);
}

absl::StatusOr<RestartTimes> Target::Restart(uint64_t version, bool crash) {
  RestartTimes times;
  times.stop_sent = std::chrono::steady_clock::now();
  if (crash) {
    process_.Kill();
  } else if (absl::Status status = process_.Stop(); !status.ok()) {
    return status;
  }
  if (absl::Status status = Launch(port_, version); !status.ok()) return status;
  times.ready = std::chrono::steady_clock::now();
  return times;
}

std::string Target::address() const { return absl::StrCat("127.0.0.1:", port_); }

absl::Status Target::Launch(int port, uint64_t version) {
  std::vector<std::string> argv = {
      options_.binary, absl::StrCat("--listen=127.0.0.1:", port),
      absl::StrCat("--max_concurrent_streams=",
                   std::max(kDefaultMaxConcurrentStreams, options_.streams_per_connection))};
  if (options_.kind == TargetKind::kBreakerd) {
    argv.push_back(absl::StrCat("--config=", options_.config_path));
    if (options_.store == Store::kSqlite) {
      argv.push_back(absl::StrCat("--state_dir=", options_.state_dir));
    } else {
      argv.push_back("--store=etcd");
      argv.push_back(
          absl::StrCat("--etcd_endpoints=", absl::StrJoin(options_.etcd_endpoints, ",")));
      argv.push_back(absl::StrCat("--etcd_prefix=", options_.etcd_prefix));
      argv.push_back(absl::StrCat("--etcd_lease_ttl=", options_.etcd_lease_ttl_seconds));
      if (port != 0) argv.push_back(absl::StrCat("--advertise_address=127.0.0.1:", port));
    }
  } else {
    argv.push_back(absl::StrCat("--messages=", options_.messages_path));
    argv.push_back(absl::StrCat("--version=", version));
  }
  absl::StatusOr<int> bound = process_.Start(argv, options_.log_path, kStartTimeout);
  if (!bound.ok()) return bound.status();
  port_ = *bound;
  return absl::OkStatus();
}

}  // namespace breaker::bench
