// What one durable Append costs on each store: SQLite (WAL, synced) in a temporary directory,
// and etcd with three local members (committed by a quorum, each member syncing its log). And
// the durable-write bound of breakerd's ingestion on this machine: how many observations per
// second SQLite appends and syncs in the journal writer's group commits, whatever the CPU does.
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

// A group commit of the journal writer under ingestion: `range(0)` entries of one
// 500-observation batch each (the client library's max_batch), at the size the fleet_load
// harness's batches serialize to, about 90 bytes per observation. The journal is folded every
// 16 MiB of entries, as breakerd folds it. items/s is observations.
void BM_SqliteGroupCommit(benchmark::State& state) {
  constexpr int kObservationsPerEntry = 500;
  constexpr int kBytesPerObservation = 90;
  auto store = SqliteStateStore::Open(TempDirectory("sqlite_group_commit"));
  if (!store.ok()) {
    state.SkipWithError("cannot open the store");
    return;
  }
  const int entries = static_cast<int>(state.range(0));
  const std::vector<std::string> group(
      entries, std::string(kObservationsPerEntry * kBytesPerObservation, 'o'));
  uint64_t unfolded = 0;
  for (auto _ : state) {
    absl::StatusOr<uint64_t> last = (*store)->Append(group);
    if (!last.ok()) {
      state.SkipWithError("append failed");
      return;
    }
    unfolded += group.size() * group[0].size();
    if (unfolded >= (16u << 20)) {
      state.PauseTiming();
      if (!(*store)->WriteSnapshot("", *last).ok()) abort();
      unfolded = 0;
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations() * entries * kObservationsPerEntry);
}
// 64 entries: the harness's 64 senders, each with one batch in flight.
BENCHMARK(BM_SqliteGroupCommit)
    ->Arg(1)
    ->Arg(8)
    ->Arg(64)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// One entry of 1 KiB (a small group commit); 100 of 1 KiB (a busy one).
BENCHMARK(BM_SqliteAppend)
    ->Args({1, 1024})
    ->Args({100, 1024})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EtcdAppend)
    ->Args({1, 1024})
    ->Args({100, 1024})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace breaker::service
