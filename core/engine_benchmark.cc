// Benchmarks of the engine's hot paths: the observations the service receives from every node
// (bids through relays, payload failures), the policy look-up every node does per bid, and the
// policy recompute at every slot.
//
// Run with `bazel run --config=opt //core:engine_benchmark`; items/s is observations, look-ups
// or (for the recompute) tracked builders per second.

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "core/config.h"
#include "core/engine.h"
#include "core/observation.h"
#include "core/policy.h"
#include "core/types.h"

namespace breaker::core {
namespace {

constexpr Slot kStartSlot = 1000 * 32;
constexpr BuilderIndex kBuilders = 10'000;
constexpr int kRelays = 8;
constexpr int kIndicesPerRelay = 16;
// The amendment window, at its maximum: it bounds the roots under vote (64 per slot of the
// window), so it sets how many failures fit between two clock advances.
constexpr uint64_t kWindowSlots = 128;
constexpr size_t kFailuresPerBatch = 8000;

std::string RelayId(int relay) { return absl::StrCat("https://relay-", relay, ".example"); }

// A 48-byte public key of its own for each builder.
std::string PubkeyOf(BuilderIndex builder) {
  std::string key(48, '\0');
  for (size_t i = 0; i < sizeof(builder); ++i) {
    key[i] = static_cast<char>((builder >> (8 * i)) & 0xff);
  }
  return key;
}

BlockRoot RootOf(uint64_t id) {
  std::string bytes(sizeof(id), '\0');
  for (size_t i = 0; i < sizeof(id); ++i) bytes[i] = static_cast<char>((id >> (8 * i)) & 0xff);
  return BlockRootFromBytes(bytes);
}

// A Gloas fleet tracking up to 10,000 builders, with the fallback thresholds out of reach so
// that the mode never changes what is measured, and a few relays with known members.
Config BenchConfig() {
  Config config;
  config.chain.gloas_fork_epoch = 0;
  // Room for every one of the 10,000 builders, so that no record is evicted, and for the
  // relays: caps any higher would let a policy outgrow its bound, which the configuration
  // refuses.
  config.max_tracked_builders = kBuilders;
  config.max_relays = 2 * kRelays;
  config.critical_failed_builders = 1'000'000;
  config.critical_failed_untrusted_builders = 1'000'000;
  config.amendment_window_slots = kWindowSlots;
  config.trusted_builders = {1, 2, 3};
  for (int r = 0; r < kRelays; ++r) {
    RelayConfig relay;
    relay.identifier = RelayId(r);
    relay.trusted = r == 0;
    for (int i = 0; i < kIndicesPerRelay; ++i) {
      relay.indices.push_back(static_cast<BuilderIndex>(100 + r * kIndicesPerRelay + i));
    }
    config.relays.push_back(relay);
  }
  return config;
}

Engine NewEngine(const Config& config) { return Engine::Create(config, kStartSlot).value(); }

// Failures of builders drawn from the 10,000, each at its own root, at the current slot.
std::vector<Observation> FailureBatch(const Engine& engine, std::mt19937_64& rng,
                                      uint64_t& next_root, uint64_t& sequence) {
  std::uniform_int_distribution<BuilderIndex> builder(0, kBuilders - 1);
  std::vector<Observation> batch;
  batch.reserve(kFailuresPerBatch);
  for (size_t i = 0; i < kFailuresPerBatch; ++i) {
    batch.push_back(Observation{engine.current_slot(), "node-1", ++sequence,
                                PayloadMissing{builder(rng), RootOf(next_root++), 0.9}});
  }
  return batch;
}

// Moves the clock past the amendment window, so that the votes of the previous batch are
// pruned and the next batch fits.
void SkipWindow(Engine& engine) { engine.Advance(engine.current_slot() + kWindowSlots + 2); }

void BM_ObserveFailure(benchmark::State& state) {
  Engine engine = NewEngine(BenchConfig());
  std::mt19937_64 rng(1);
  uint64_t next_root = 1;
  uint64_t sequence = 0;
  std::vector<Observation> batch = FailureBatch(engine, rng, next_root, sequence);
  size_t next = 0;
  for (auto _ : state) {
    if (next == batch.size()) {
      // The clock and the next batch are bookkeeping, not the observation's cost (an advance
      // recomputes the policy over every tracked builder; BM_RefreshPolicy measures that).
      state.PauseTiming();
      SkipWindow(engine);
      batch = FailureBatch(engine, rng, next_root, sequence);
      next = 0;
      state.ResumeTiming();
    }
    absl::StatusOr<ObserveResult> outcome = engine.Observe(batch[next++]);
    if (!outcome.ok()) {
      state.SkipWithError(std::string(outcome.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(outcome);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["tracked"] = static_cast<double>(engine.builders().size());
}
BENCHMARK(BM_ObserveFailure);

void BM_ObserveBid(benchmark::State& state) {
  Engine engine = NewEngine(BenchConfig());
  std::mt19937_64 rng(2);
  // Some builders hold records, so that the public-key check finds one now and then.
  uint64_t next_root = 1;
  uint64_t sequence = 0;
  std::vector<Observation> failures = FailureBatch(engine, rng, next_root, sequence);
  for (size_t i = 0; i < 2000; ++i) {
    if (!engine.Observe(failures[i]).ok()) {
      state.SkipWithError("setup failure refused");
      return;
    }
  }
  engine.RefreshPolicy();

  // Most bids come from a relay's usual builders; one in twenty from any of the 10,000, which
  // makes the relay learn (and, at its cap, forget) an index.
  std::uniform_int_distribution<int> relay(0, kRelays - 1);
  std::uniform_int_distribution<int> member(0, kIndicesPerRelay - 1);
  std::uniform_int_distribution<BuilderIndex> any(0, kBuilders - 1);
  std::bernoulli_distribution stranger(0.05);
  std::vector<Observation> bids;
  for (int i = 0; i < 4096; ++i) {
    const int r = relay(rng);
    const BuilderIndex builder =
        stranger(rng) ? any(rng) : 100 + r * kIndicesPerRelay + member(rng);
    bids.push_back(Observation{engine.current_slot(), "node-2", 0,
                               BidSeen{builder, RelayId(r), PubkeyOf(builder)}});
  }
  uint64_t bid_sequence = 0;
  size_t next = 0;
  for (auto _ : state) {
    Observation& bid = bids[next++ & (bids.size() - 1)];
    bid.sequence = ++bid_sequence;
    absl::StatusOr<ObserveResult> outcome = engine.Observe(bid);
    if (!outcome.ok()) {
      state.SkipWithError(std::string(outcome.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(outcome);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ObserveBid);

void BM_IsAllowed(benchmark::State& state) {
  Config config = BenchConfig();
  Engine engine = NewEngine(config);
  // About 1000 bans: every other index of 0..1999, and two banned relays' members as
  // collateral (a member of relays 1 and 2 fails).
  for (BuilderIndex b = 0; b < 2000; b += 2) {
    if (!engine.BanBuilder(b, "benchmark", std::nullopt).ok()) {
      state.SkipWithError("BanBuilder failed");
      return;
    }
  }
  uint64_t sequence = 0;
  for (BuilderIndex b :
       {BuilderIndex{100 + kIndicesPerRelay}, BuilderIndex{100 + 2 * kIndicesPerRelay}}) {
    if (!engine
             .Observe(
                 {engine.current_slot(), "node-1", ++sequence, PayloadMissing{b, RootOf(b), 0.9}})
             .ok()) {
      state.SkipWithError("setup failure refused");
      return;
    }
  }
  engine.RefreshPolicy();
  const Policy& policy = engine.policy();

  // Queries of builders 0..3999 (about a quarter banned), half over P2P, half through a relay.
  struct Query {
    BuilderIndex builder;
    std::string relay;
  };
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<BuilderIndex> builder(0, 3999);
  std::uniform_int_distribution<int> relay(0, kRelays - 1);
  std::bernoulli_distribution p2p(0.5);
  std::vector<Query> queries;
  for (int i = 0; i < 4096; ++i) {
    queries.push_back({builder(rng), p2p(rng) ? "" : RelayId(relay(rng))});
  }
  size_t next = 0;
  int64_t allowed = 0;
  for (auto _ : state) {
    const Query& query = queries[next++ & (queries.size() - 1)];
    const bool ok = policy.IsAllowed(query.builder, query.relay);
    allowed += ok;
    benchmark::DoNotOptimize(ok);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["bans"] = static_cast<double>(policy.banned_builders.size());
  state.counters["allowed_share"] =
      state.iterations() == 0 ? 0 : static_cast<double>(allowed) / state.iterations();
}
BENCHMARK(BM_IsAllowed);

// An engine tracking `count` builders, each banned by its own failure at a distinct root.
Engine EngineWithBannedBuilders(BuilderIndex count) {
  Config config = BenchConfig();
  // The bans must outlast the clock advances that make room for the votes.
  config.blacklist_period_epochs = 1000;
  Engine engine = NewEngine(config);
  uint64_t sequence = 0;
  for (BuilderIndex b = 0; b < count; ++b) {
    if (b > 0 && b % kFailuresPerBatch == 0) SkipWindow(engine);
    // A refusal shows as a missing record, which the benchmark checks.
    (void)engine.Observe(
        {engine.current_slot(), "node-1", ++sequence, PayloadMissing{b, RootOf(b), 0.9}});
  }
  engine.RefreshPolicy();
  return engine;
}

// What the service does at every slot when nothing happened: recompute, compare, keep.
void BM_RefreshPolicy(benchmark::State& state) {
  const auto count = static_cast<BuilderIndex>(state.range(0));
  Engine engine = EngineWithBannedBuilders(count);
  if (engine.builders().size() != count || engine.policy().banned_builders.size() < count) {
    state.SkipWithError("setup did not ban every builder");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(engine.RefreshPolicy());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(count));
  state.counters["banned"] = static_cast<double>(engine.policy().banned_builders.size());
}
BENCHMARK(BM_RefreshPolicy)->Arg(1000)->Arg(10'000)->Unit(benchmark::kMicrosecond);

// A recompute that publishes: one operator ban toggles at every iteration, so the policy's
// decisions change each time and the new version (with its change reason) is built.
void BM_RefreshPolicyChanged(benchmark::State& state) {
  const auto count = static_cast<BuilderIndex>(state.range(0));
  Engine engine = EngineWithBannedBuilders(count);
  const BuilderIndex toggled = 2 * kBuilders + 1;
  bool banned = false;
  for (auto _ : state) {
    const absl::Status status = banned ? engine.UnbanBuilder(toggled)
                                       : engine.BanBuilder(toggled, "benchmark", std::nullopt);
    banned = !banned;
    if (!status.ok() || !engine.RefreshPolicy()) {
      state.SkipWithError("the toggled ban did not publish a new version");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(count));
}
BENCHMARK(BM_RefreshPolicyChanged)->Arg(1000)->Arg(10'000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace breaker::core
