// What the sidecar adds to a getHeader: the same request to a fake relay on loopback, once
// directly and once through the sidecar's proxy, interleaved, so that both see the same load of
// a shared machine. Each iteration's two latencies are kept; the benchmark reports their
// percentiles as counters (microseconds), and the added latency at each.
//
// Run with `bazel run --config=opt //sidecar:proxy_benchmark`. The caller keeps one connection
// open (as mev-boost's HTTP client does); the sidecar opens one to the relay per request.

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "client/fake_client.h"
#include "httplib.h"
#include "sidecar/config.h"
#include "sidecar/enforcer.h"
#include "sidecar/proxy.h"

namespace breaker::sidecar {
namespace {

// A Deneb-sized answer: the header, its blob commitments and the signature, about 2 KB.
std::string HeaderBody() {
  std::string commitments;
  for (int i = 0; i < 6; ++i) {
    absl::StrAppend(&commitments, i == 0 ? "" : ",", "\"0x", std::string(96, 'c'), "\"");
  }
  return absl::StrCat(
      R"({"version":"deneb","data":{"message":{"header":{"parent_hash":"0x)", std::string(64, 'a'),
      R"(","block_hash":"0x)", std::string(64, 'b'), R"(","transactions_root":"0x)",
      std::string(64, 'd'), R"(","gas_limit":"30000000","timestamp":"1700000000"},)",
      R"("blob_kzg_commitments":[)", commitments, R"(],"value":"123456789","pubkey":"0x)",
      std::string(96, 'e'), R"("},"signature":"0x)", std::string(192, 'f'), R"("}})");
}

constexpr char kPath[] =
    "/eth/v1/builder/header/100/0x1111111111111111111111111111111111111111111111111111111111111111/"
    "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

double Percentile(std::vector<double> values, double fraction) {
  std::sort(values.begin(), values.end());
  const size_t rank = std::min(values.size() - 1, static_cast<size_t>(fraction * values.size()));
  return values[rank];
}

// One getHeader over `client`'s open connection; its wall time in microseconds, or a negative
// value when it did not come back 200.
double TimedGet(httplib::Client& client) {
  const auto start = std::chrono::steady_clock::now();
  httplib::Result result = client.Get(kPath, httplib::Headers{{"X-Timeout-Ms", "950"}});
  const auto end = std::chrono::steady_clock::now();
  if (!result || result->status != 200) return -1;
  return std::chrono::duration<double, std::micro>(end - start).count();
}

void BM_GetHeaderDirectAndThroughTheSidecar(benchmark::State& state) {
  const std::string body = HeaderBody();
  httplib::Server relay;
  // As relays' HTTP servers (Go's among them) do.
  relay.set_tcp_nodelay(true);
  relay.Get(".*", [&body](const httplib::Request&, httplib::Response& response) {
    response.set_content(body, "application/json");
  });
  const int relay_port = relay.bind_to_any_port("127.0.0.1");
  std::thread relay_thread([&relay] { relay.listen_after_bind(); });

  const std::string url = absl::StrCat("http://127.0.0.1:", relay_port);
  SidecarSettings settings;
  UpstreamSettings upstream;
  upstream.url = url;
  upstream.relay_id = url;
  upstream.scheme_host_port = url;
  settings.upstreams.push_back(upstream);
  client::FakeClient breaker;
  Enforcer enforcer(breaker, {{url, false}});
  Proxy proxy(settings, enforcer, SystemClock());
  if (!proxy.Start().ok()) {
    state.SkipWithError("the proxy did not start");
  } else {
    httplib::Client direct("127.0.0.1", relay_port);
    httplib::Client sidecar("127.0.0.1", proxy.port(0));
    direct.set_keep_alive(true);
    sidecar.set_keep_alive(true);
    direct.set_tcp_nodelay(true);
    sidecar.set_tcp_nodelay(true);
    // Warm both paths (connections, the relay's threads).
    for (int i = 0; i < 100; ++i) {
      TimedGet(direct);
      TimedGet(sidecar);
    }
    std::vector<double> direct_us, sidecar_us;
    for (auto _ : state) {
      const double a = TimedGet(direct);
      const double b = TimedGet(sidecar);
      if (a < 0 || b < 0) {
        state.SkipWithError("a getHeader failed");
        break;
      }
      direct_us.push_back(a);
      sidecar_us.push_back(b);
      state.SetIterationTime((a + b) / 1e6);
    }
    if (!direct_us.empty()) {
      for (double fraction : {0.5, 0.99}) {
        const std::string p = fraction == 0.5 ? "p50" : "p99";
        const double d = Percentile(direct_us, fraction);
        const double s = Percentile(sidecar_us, fraction);
        state.counters["direct_" + p + "_us"] = d;
        state.counters["sidecar_" + p + "_us"] = s;
        state.counters["added_" + p + "_us"] = s - d;
      }
    }
  }
  proxy.Stop();
  relay.stop();
  relay_thread.join();
}

BENCHMARK(BM_GetHeaderDirectAndThroughTheSidecar)->UseManualTime()->Iterations(20000)->Repetitions(3);

}  // namespace
}  // namespace breaker::sidecar
