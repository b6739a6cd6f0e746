// What the validator port adds to the validator client's requests, against going direct to the
// beacon node (a fake one, tests/support/fake_beacon_node.h) on loopback, each pair interleaved
// so that both see the same load of a shared machine; the callers keep their connections open.
//
//   BM_SmallGet: a duties call (a small JSON answer).
//   BM_EventDelay: one event, read on a stream opened directly and on one through the port; the
//     added delay is the second's arrival less the first's.
//   BM_LargeSszAnswer: produceBlockV4 answered with 10 MiB of SSZ.
//   BM_RewriteV4: the rewrite of a 64-entry produceBlockV4 body (four keys each, one of them
//     banned) in JSON and in SSZ: what the port adds to a block request beside its forwarding.
//
// Percentiles are reported as counters (microseconds). Run with
// `bazel run --config=opt //sidecar/validator:validator_port_benchmark`.

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "client/fake_client.h"
#include "common/mutex.h"
#include "httplib.h"
#include "sidecar/ssz/builder_config.h"
#include "sidecar/validator/block_production.h"
#include "sidecar/validator/validator_port.h"
#include "tests/support/fake_beacon_node.h"
#include "tests/support/latency_report.h"

namespace breaker::sidecar::validator {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kDutiesPath[] = "/eth/v1/validator/duties/proposer/3";
constexpr char kV4Path[] = "/eth/v4/validator/blocks/24?include_payload=true&randao_reveal=0x1";

double Micros(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::micro>(end - start).count();
}

core::ChainSpec Chain() {
  core::ChainSpec chain;
  chain.network = "bench";
  chain.genesis_time_unix = 1700000000;
  chain.seconds_per_slot = 12;
  chain.slots_per_epoch = 32;
  return chain;
}

// A fake beacon node and the validator port in front of it.
struct Bench {
  Bench() : node(Chain()) {
    ValidatorPortOptions options;
    options.beacon_node_url = node.url();
    options.beacon_node_base = node.url();
    port = std::make_unique<ValidatorPort>(options, client, SystemClock());
    started = port->Start().ok();
  }
  ~Bench() { port->Stop(); }

  client::FakeClient client;
  testing::FakeBeaconNode node;
  std::unique_ptr<ValidatorPort> port;
  bool started = false;
};

httplib::Client KeptAlive(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);
  client.set_read_timeout(std::chrono::seconds(30));
  return client;
}

void BM_SmallGet(benchmark::State& state) {
  Bench bench;
  if (!bench.started) return state.SkipWithError("the port did not start");
  bench.node.OverridePath(
      kDutiesPath, 200,
      R"({"dependent_root":"0x00","execution_optimistic":false,"data":[{"pubkey":"0x01",)"
      R"("validator_index":"1","slot":"96"}]})");
  httplib::Client direct = KeptAlive(bench.node.port());
  httplib::Client port = KeptAlive(bench.port->port());
  auto timed = [](httplib::Client& client) {
    const Clock::time_point start = Clock::now();
    httplib::Result result = client.Get(kDutiesPath);
    return result && result->status == 200 ? Micros(start, Clock::now()) : -1;
  };
  for (int i = 0; i < 100; ++i) {
    timed(direct);
    timed(port);
  }
  std::vector<double> direct_us, port_us;
  for (auto _ : state) {
    const double a = timed(direct);
    const double b = timed(port);
    if (a < 0 || b < 0) return state.SkipWithError("a request failed");
    direct_us.push_back(a);
    port_us.push_back(b);
    state.SetIterationTime((a + b) / 1e6);
  }
  testing::ReportAdded(state, direct_us, "port", port_us);
}
BENCHMARK(BM_SmallGet)->UseManualTime()->Iterations(5000)->Repetitions(3);

// An event stream reader: when each numbered event arrived.
class Reader {
 public:
  explicit Reader(int port) : client_("127.0.0.1", port) {
    client_.set_read_timeout(std::chrono::seconds(60));
    thread_ = std::thread([this] {
      client_.Get("/eth/v1/events?topics=head", [this](const char* data, size_t size) {
        const Clock::time_point now = Clock::now();
        MutexLock lock(&mu_);
        buffer_.append(data, size);
        size_t at;
        // Each event's data is {"n":"<number>"}; one frame ends with a blank line.
        while ((at = buffer_.find("\n\n")) != std::string::npos) {
          ++frames_;
          arrivals_.push_back(now);
          buffer_.erase(0, at + 2);
        }
        changed_.SignalAll();
        return !stopping_;
      });
    });
  }
  ~Reader() {
    {
      MutexLock lock(&mu_);
      stopping_ = true;
    }
    client_.stop();
    thread_.join();
  }
  // The arrival of frame `n` (0-based), waiting for it.
  std::optional<Clock::time_point> Arrival(size_t n) {
    MutexLock lock(&mu_);
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (arrivals_.size() <= n) {
      if (changed_.WaitUntil(&mu_, deadline)) return std::nullopt;
    }
    return arrivals_[n];
  }

 private:
  httplib::Client client_;
  std::thread thread_;
  Mutex mu_;
  CondVar changed_;
  std::string buffer_ ABSL_GUARDED_BY(mu_);
  std::vector<Clock::time_point> arrivals_ ABSL_GUARDED_BY(mu_);
  size_t frames_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

void BM_EventDelay(benchmark::State& state) {
  Bench bench;
  if (!bench.started) return state.SkipWithError("the port did not start");
  Reader direct(bench.node.port());
  Reader port(bench.port->port());
  while (bench.node.streams_open() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::vector<double> added_us;
  size_t n = 0;
  for (auto _ : state) {
    bench.node.Emit("head", absl::StrCat(R"({"n":")", n, R"("})"));
    const std::optional<Clock::time_point> a = direct.Arrival(n);
    const std::optional<Clock::time_point> b = port.Arrival(n);
    if (!a.has_value() || !b.has_value()) return state.SkipWithError("an event did not arrive");
    added_us.push_back(Micros(*a, *b));
    state.SetIterationTime(std::max(1.0, Micros(*a, *b)) / 1e6);
    ++n;
  }
  if (added_us.empty()) return;
  state.counters["added_p50_us"] = testing::Percentile(added_us, 0.5);
  state.counters["added_p99_us"] = testing::Percentile(added_us, 0.99);
}
BENCHMARK(BM_EventDelay)->UseManualTime()->Iterations(2000)->Repetitions(3);

void BM_LargeSszAnswer(benchmark::State& state) {
  Bench bench;
  if (!bench.started) return state.SkipWithError("the port did not start");
  testing::ProductionScript script;
  script.ssz_answer_bytes = 10 << 20;
  bench.node.block_production().Script(script);
  const std::string body = ssz::BuilderConfigToSsz(ssz::BuilderConfig{});
  httplib::Client direct = KeptAlive(bench.node.port());
  httplib::Client port = KeptAlive(bench.port->port());
  auto timed = [&body](httplib::Client& client) {
    const Clock::time_point start = Clock::now();
    httplib::Result result = client.Post(kV4Path, {{"Accept", "application/octet-stream"}}, body,
                                         "application/octet-stream");
    const bool ok = result && result->status == 200 && result->body.size() == (10u << 20);
    return ok ? Micros(start, Clock::now()) : -1;
  };
  std::vector<double> direct_us, port_us;
  for (auto _ : state) {
    const double a = timed(direct);
    const double b = timed(port);
    if (a < 0 || b < 0) return state.SkipWithError("a request failed");
    direct_us.push_back(a);
    port_us.push_back(b);
    state.SetIterationTime((a + b) / 1e6);
  }
  testing::ReportAdded(state, direct_us, "port", port_us);
}
BENCHMARK(BM_LargeSszAnswer)->UseManualTime()->Iterations(50)->Repetitions(3);

// 64 entries of four keys, each with one banned key, auth data of 64 bytes.
ssz::BuilderConfig FullConfig() {
  ssz::BuilderConfig config;
  for (int i = 0; i < 64; ++i) {
    ssz::BuilderEntry entry;
    entry.url = absl::StrCat("https://relay-", i, ".example");
    entry.auth.message.data = std::string(64, 'd');
    entry.auth.message.slot = 24;
    entry.auth.signature = std::string(96, 's');
    for (char key : {'B', 'a', 'b', 'c'}) {
      entry.builder_pubkeys.push_back(std::string(47, static_cast<char>(i)) + key);
    }
    config.builders.push_back(std::move(entry));
  }
  return config;
}

void BM_RewriteV4(benchmark::State& state) {
  const bool is_ssz = state.range(0) == 1;
  const ssz::BuilderConfig config = FullConfig();
  const std::string body =
      is_ssz ? ssz::BuilderConfigToSsz(config) : ssz::BuilderConfigToJson(config).dump();
  RewriteRules rules;
  rules.mode = core::Mode::kAllBuilders;
  for (int i = 0; i < 64; ++i)
    rules.banned_keys.insert(std::string(47, static_cast<char>(i)) + 'B');
  rules.banned_relays = {"https://relay-7.example"};
  const char* content_type = is_ssz ? "application/octet-stream" : "application/json";
  std::vector<double> us;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    const V4Rewrite rewrite = RewriteProduceBlockV4(body, content_type, rules);
    const double elapsed = Micros(start, Clock::now());
    if (rewrite.kept != 63 || rewrite.keys_dropped != 63) {
      return state.SkipWithError("the rewrite is not the expected one");
    }
    us.push_back(elapsed);
    state.SetIterationTime(elapsed / 1e6);
  }
  state.counters["body_bytes"] = static_cast<double>(body.size());
  state.counters["p50_us"] = testing::Percentile(us, 0.5);
  state.counters["p99_us"] = testing::Percentile(us, 0.99);
}
BENCHMARK(BM_RewriteV4)->Arg(0)->Arg(1)->UseManualTime()->Iterations(2000)->Repetitions(3);

}  // namespace
}  // namespace breaker::sidecar::validator
