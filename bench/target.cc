#include "bench/target.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sqlite3.h"

namespace breaker::bench {
namespace {

constexpr absl::Duration kStartTimeout = absl::Seconds(60);
// breakerd's default --max_concurrent_streams, kept unless the harness needs more.
constexpr int kDefaultMaxConcurrentStreams = 100;

// An empty SQLite database with `page_size`, where breakerd keeps its state ("breakerd.db").
// The page size of a database is fixed once its first table exists.
absl::Status CreateDatabase(const std::string& state_dir, int page_size) {
  std::filesystem::create_directories(state_dir);
  const std::string path = state_dir + "/breakerd.db";
  sqlite3* db = nullptr;
  int code =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  const std::string sql = absl::StrCat("PRAGMA page_size = ", page_size, "; VACUUM;");
  if (code == SQLITE_OK) code = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  const std::string message = sqlite3_errmsg(db);
  sqlite3_close(db);
  if (code != SQLITE_OK) {
    return absl::InternalError(absl::StrCat("cannot create ", path, ": ", message));
  }
  return absl::OkStatus();
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
