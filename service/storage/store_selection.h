#ifndef SERVICE_STORAGE_STORE_SELECTION_H_
#define SERVICE_STORAGE_STORE_SELECTION_H_

// Which StateStore breakerd runs on, as its flags choose: SQLite in a state directory (the
// default), or etcd (--store=etcd and the --etcd_* flags).

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
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

// Opens the selected store. For etcd, counts the lease on `clock` and campaigns for as long as
// one lease TTL (a breakerd restarted on the same prefix waits for its predecessor's lease).
// Returns CheckStoreSelection's errors, INVALID_ARGUMENT when the state directory cannot be
// created, and the chosen store's errors (SqliteStateStore::Open, EtcdStateStore::Open).
absl::StatusOr<std::unique_ptr<StateStore>> OpenSelectedStore(const StoreSelection& selection,
                                                              const Clock* clock);

// "state in breakerd-state", "state in etcd 10.0.0.1:2379,... under /breaker/pool": for logs.
std::string DescribeStore(const StoreSelection& selection);

}  // namespace breaker::service

#endif  // SERVICE_STORAGE_STORE_SELECTION_H_
