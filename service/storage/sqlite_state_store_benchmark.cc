// The durable-write bound of breakerd's ingestion on this machine: how many observations per
// second the SQLite store can append and sync, whatever the CPU does. One Append is one group
// commit of the journal writer: `entries` journal entries of one 500-observation batch each.
//
// Run with `bazel run --config=opt //service/storage:sqlite_state_store_benchmark`, optionally
// with `-- --benchmark_min_time=5`. The state directory is a new one under $TEST_TMPDIR (or
// /tmp), so run it on the disk breakerd's state directory is on. items/s is observations.

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "service/storage/sqlite_state_store.h"

namespace breaker::service {
namespace {

// A journal entry of one batch from the client library (max_batch 500), at the size the
// fleet_load harness's batches serialize to: about 90 bytes per observation.
constexpr int kObservationsPerEntry = 500;
constexpr int kBytesPerObservation = 90;

std::string NewStateDirectory() {
  const char* root = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(root != nullptr ? root : "/tmp", "/store-bench-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) std::abort();
  return pattern;
}

void BM_AppendGroup(benchmark::State& state) {
  const int entries = static_cast<int>(state.range(0));
  auto store = SqliteStateStore::Open(NewStateDirectory());
  if (!store.ok()) {
    state.SkipWithError(std::string(store.status().message()).c_str());
    return;
  }
  const std::vector<std::string> group(
      entries, std::string(kObservationsPerEntry * kBytesPerObservation, 'x'));
  uint64_t appended = 0;
  for (auto _ : state) {
    absl::StatusOr<uint64_t> last = (*store)->Append(group);
    if (!last.ok()) {
      state.SkipWithError(std::string(last.status().message()).c_str());
      return;
    }
    appended += entries;
    // Folded as the journal writer folds it (every 16 MiB of entries), so that the journal
    // does not grow past what breakerd keeps.
    if (appended * kObservationsPerEntry * kBytesPerObservation >= (16u << 20)) {
      state.PauseTiming();
      if (!(*store)->WriteSnapshot("", *last).ok()) std::abort();
      appended = 0;
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations() * entries * kObservationsPerEntry);
  state.SetBytesProcessed(state.iterations() * entries * kObservationsPerEntry *
                          kBytesPerObservation);
}
BENCHMARK(BM_AppendGroup)->Arg(1)->Arg(8)->Arg(64)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace breaker::service
