// What one durable Append costs on each store: SQLite (WAL, synced) in a temporary directory,
// and etcd with three local members (committed by a quorum, each member syncing its log).
//   bazel run --config=opt //service/storage:state_store_benchmark
// The etcd members run on the same machine, so the numbers are the floor of a real cluster's:
// there, add the network's round trips between members.

#include <stdlib.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "service/storage/etcd_state_store.h"
#include "service/storage/sqlite_state_store.h"
#include "tests/support/etcd_cluster.h"

namespace breaker::service {
namespace {

std::string TempDirectory(const char* name) {
  std::string pattern = absl::StrCat("/tmp/", name, "_XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) abort();
  return pattern;
}

StateStore& Sqlite() {
  static StateStore* const store = [] {
    auto opened = SqliteStateStore::Open(TempDirectory("sqlite_bench"));
    if (!opened.ok()) abort();
    return opened->release();
  }();
  return *store;
}

StateStore& Etcd() {
  static StateStore* const store = [] {
    breaker::testing::EtcdCluster::Options cluster_options;
    cluster_options.directory = TempDirectory("etcd_bench");
    auto cluster = breaker::testing::EtcdCluster::Start(cluster_options);
    if (!cluster.ok()) abort();
    EtcdStateStore::Options options;
    options.endpoints = (*cluster)->endpoints();
    options.prefix = "/bench";
    cluster->release();  // the members live as long as the process
    auto opened = EtcdStateStore::Open(options);
    if (!opened.ok()) abort();
    return opened->release();
  }();
  return *store;
}

// Appends batches of `range(0)` entries of `range(1)` bytes, one Append each iteration.
void Append(benchmark::State& state, StateStore& store) {
  const std::vector<std::string> batch(state.range(0), std::string(state.range(1), 'e'));
  for (auto _ : state) {
    if (!store.Append(batch).ok()) state.SkipWithError("append failed");
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_SqliteAppend(benchmark::State& state) { Append(state, Sqlite()); }
void BM_EtcdAppend(benchmark::State& state) { Append(state, Etcd()); }

// One entry of 1 KiB (a small group commit); 100 of 1 KiB (a busy one).
BENCHMARK(BM_SqliteAppend)->Args({1, 1024})->Args({100, 1024})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EtcdAppend)->Args({1, 1024})->Args({100, 1024})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace breaker::service
