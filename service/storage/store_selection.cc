#include "service/storage/store_selection.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "service/storage/sqlite_state_store.h"

namespace breaker::service {
namespace {

absl::Status EnsureDirectory(const std::string& path) {
  if (mkdir(path.c_str(), 0750) == 0 || errno == EEXIST) {
    struct stat info;
    if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("state directory '", path,
                                                   "' exists but is not a directory; pass ",
                                                   "--state_dir with a directory path"));
  }
  return absl::InvalidArgumentError(absl::StrCat("cannot create state directory '", path,
                                                 "': ", std::strerror(errno),
                                                 "; pass --state_dir with a writable path"));
}

bool AnyEtcdFlag(const StoreSelection& selection) {
  return !selection.etcd.endpoints.empty() || !selection.etcd.prefix.empty() ||
         !selection.etcd.tls.ca_file.empty() || !selection.etcd.tls.cert_file.empty() ||
         !selection.etcd.tls.key_file.empty();
}

// The store's options from its flags, TLS files read. MakeEtcdCredentials' errors.
absl::StatusOr<EtcdStateStore::Options> EtcdOptions(const EtcdSelection& etcd, const Clock* clock) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeEtcdCredentials(etcd.tls);
  if (!credentials.ok()) return credentials.status();
  EtcdStateStore::Options options;
  options.endpoints = absl::StrSplit(etcd.endpoints, ',', absl::SkipWhitespace());
  options.prefix = etcd.prefix;
  options.credentials = *std::move(credentials);
  options.lease_ttl = absl::Seconds(etcd.lease_ttl_seconds);
  // A fifth of the TTL, at least a second: clock drift and a keepalive's travel.
  options.lease_margin = std::max(absl::Seconds(1), options.lease_ttl / 5);
  if (options.lease_margin >= options.lease_ttl) options.lease_margin = options.lease_ttl / 2;
  options.max_request_bytes = etcd.max_request_bytes;
  options.clock = clock;
  return options;
}

}  // namespace

absl::Status CheckStoreSelection(const StoreSelection& selection) {
  if (selection.store == "sqlite") {
    if (AnyEtcdFlag(selection)) {
      return absl::InvalidArgumentError(
          "--etcd_* flags are given but --store is sqlite; pass --store=etcd to keep the state "
          "in etcd, or drop the --etcd_* flags");
    }
    return absl::OkStatus();
  }
  if (selection.store != "etcd") {
    return absl::InvalidArgumentError(
        absl::StrCat("--store is '", selection.store, "'; accepted: sqlite, etcd"));
  }
  if (selection.etcd.endpoints.empty()) {
    return absl::InvalidArgumentError(
        "--store=etcd needs --etcd_endpoints: the etcd members' client addresses, "
        "host:port,host:port,...");
  }
  if (selection.etcd.prefix.empty()) {
    return absl::InvalidArgumentError(
        "--store=etcd needs --etcd_prefix: where this fleet's keys go, e.g. /breaker/mypool");
  }
  absl::StatusOr<EtcdStateStore::Options> options = EtcdOptions(selection.etcd, &SystemClock());
  if (!options.ok()) return options.status();
  return EtcdStateStore::CheckOptions(*options);
}

absl::StatusOr<std::unique_ptr<StateStore>> OpenSqliteStore(const std::string& state_dir) {
  if (absl::Status made = EnsureDirectory(state_dir); !made.ok()) return made;
  absl::StatusOr<std::unique_ptr<SqliteStateStore>> store = SqliteStateStore::Open(state_dir);
  if (!store.ok()) return store.status();
  return std::unique_ptr<StateStore>(*std::move(store));
}

absl::StatusOr<std::unique_ptr<EtcdStateStore>> OpenEtcdStore(const StoreSelection& selection,
                                                              const Clock* clock,
                                                              EtcdReplicaHooks hooks) {
  if (absl::Status checked = CheckStoreSelection(selection); !checked.ok()) return checked;
  absl::StatusOr<EtcdStateStore::Options> options = EtcdOptions(selection.etcd, clock);
  if (!options.ok()) return options.status();
  options->name = std::move(hooks.name);
  options->campaign_timeout = hooks.campaign_timeout;
  options->on_follow = std::move(hooks.on_follow);
  options->cancelled = std::move(hooks.cancelled);
  options->on_deposed = std::move(hooks.on_deposed);
  options->on_answered = std::move(hooks.on_answered);
  return EtcdStateStore::Open(*std::move(options));
}

std::string DescribeStore(const StoreSelection& selection) {
  if (selection.store == "etcd") {
    return absl::StrCat("state in etcd ", selection.etcd.endpoints, " under ",
                        selection.etcd.prefix);
  }
  return absl::StrCat("state in ", selection.state_dir);
}

}  // namespace breaker::service
