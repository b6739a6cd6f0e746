#ifndef SERVICE_STORAGE_STORE_SELECTION_H_
#define SERVICE_STORAGE_STORE_SELECTION_H_

// Which StateStore breakerd runs on, as its flags choose: SQLite in a state directory (the
// default), or etcd (--store=etcd and the --etcd_* flags).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "service/storage/etcd_state_store.h"
#include "service/storage/state_store.h"

namespace breaker::service {

// The etcd store's flags: --etcd_endpoints (host:port,host:port,...), --etcd_prefix,
// --etcd_lease_ttl (seconds), --etcd_max_request_bytes (etcd's --max-request-bytes), and TLS
// to etcd's client port (--etcd_ca, --etcd_cert, --etcd_key).
struct EtcdSelection {
  std::string endpoints;
  std::string prefix;
  int lease_ttl_seconds = 5;
  int64_t max_request_bytes = EtcdStateStore::kDefaultMaxRequestBytes;
  EtcdTlsFiles tls;
};

struct StoreSelection {
  // --store: "sqlite" or "etcd".
  std::string store = "sqlite";
  // --state_dir, for SQLite: the directory of breakerd.db; created when missing.
  std::string state_dir = "breakerd-state";
  EtcdSelection etcd;
};

// INVALID_ARGUMENT naming the flag: an unknown --store, --etcd_* flags given with
// --store=sqlite, or --store=etcd without --etcd_endpoints or --etcd_prefix.
absl::Status CheckStoreSelection(const StoreSelection& selection);

// Opens SQLite's store in `state_dir`, creating the directory when missing.
// INVALID_ARGUMENT when it cannot be created; SqliteStateStore::Open's errors.
absl::StatusOr<std::unique_ptr<StateStore>> OpenSqliteStore(const std::string& state_dir);

// What breakerd, a replica on etcd, tells its store and hears from it (see
// EtcdStateStore::Options).
struct EtcdReplicaHooks {
  // The leader key's value while this replica leads: where nodes and operators reach it
  // (--advertise_address).
  std::string name;
  // How long Open campaigns; infinite: until it leads, as a standby meanwhile.
  absl::Duration campaign_timeout = absl::InfiniteDuration();
  std::function<void(absl::string_view leader)> on_follow;
  std::function<bool()> cancelled;
  std::function<void(const absl::Status&)> on_deposed;
  std::function<void(bool answered)> on_answered;
};

// Opens the etcd store that `etcd` selects (CheckStoreSelection first), counting its lease on
// `clock`, and campaigns as `hooks` say. Returns EtcdStateStore::Open's errors.
absl::StatusOr<std::unique_ptr<EtcdStateStore>> OpenEtcdStore(const StoreSelection& selection,
                                                              const Clock* clock,
                                                              EtcdReplicaHooks hooks);

// "state in breakerd-state", "state in etcd 10.0.0.1:2379,... under /breaker/pool": for logs.
std::string DescribeStore(const StoreSelection& selection);

}  // namespace breaker::service

#endif  // SERVICE_STORAGE_STORE_SELECTION_H_
