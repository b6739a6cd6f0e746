// What the sidecar adds to a getHeader, and what it saves at a proposal.
//
// The relay is a QuietRelay (tests/support/quiet_relay.h), which adds no wait of its own.
//
// BM_GetHeaderDirectAndThroughTheSidecar: the same request to a fake relay on loopback, once
// directly and once through the sidecar's proxy, interleaved, so that both see the same load of
// a shared machine. The caller keeps one connection open (as mev-boost's HTTP client does), and
// so does the sidecar's pool towards the relay.
//
// BM_GetHeaderOverTheNetwork: the relay as a network has it: TLS 1.3 behind a delay line
// (tests/support/tcp_proxy.h) of kOneWayDelay each way. Interleaved in each iteration:
//   1. direct, a new connection per request: mev-boost once its idle connection has expired;
//   2. direct, kept alive: mev-boost at its best;
//   3. through the sidecar, its pool warm;
//   4. through the sidecar at a proposal it warmed for: every pooled connection closed (idle
//      past the timeout), then the warm-up of one slot before (UpstreamPool::Warm), then the
//      getHeader, on a new connection to the sidecar.
//
// BM_WarmGetHeaderOverTheNetwork: paths 2 and 3 alone, a thousand times, for their tail.
//
// The network benchmarks also time the floor of any local hop on the host (`local_hop`): the
// same request from the same client to a QuietRelay on loopback, which answers at once. It pays
// what every hop pays, the two thread wake-ups and two loopback traversals, so that what the
// sidecar adds beyond it is the sidecar's own work.
//
// Each iteration's latencies are kept; the benchmarks report percentiles as counters
// (microseconds). Run with `bazel run --config=opt //sidecar/builder:proxy_benchmark`.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "client/fake_client.h"
#include "common/fake_clock.h"
#include "httplib.h"
#include "sidecar/builder/enforcer.h"
#include "sidecar/builder/proxy.h"
#include "sidecar/config.h"
#include "tests/support/latency_report.h"
#include "tests/support/quiet_relay.h"
#include "tests/support/tcp_proxy.h"

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
    "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    "aaaa";

// One getHeader over `client`'s open connection; its wall time in microseconds, or a negative
// value when it did not come back 200.
template <typename Client>
double TimedGet(Client& client) {
  const auto start = std::chrono::steady_clock::now();
  httplib::Result result = client.Get(kPath, httplib::Headers{{"X-Timeout-Ms", "950"}});
  const auto end = std::chrono::steady_clock::now();
  if (!result || result->status != 200) return -1;
  return std::chrono::duration<double, std::micro>(end - start).count();
}

// A getHeader over `direct`, then over `local_hop` when given, then over `sidecar` in each
// iteration, so that all see the same load of a shared machine; reports what the sidecar adds,
// and the local hop's percentiles.
template <typename Direct, typename Sidecar>
void TimeInterleaved(benchmark::State& state, Direct& direct, Sidecar& sidecar,
                     httplib::Client* local_hop = nullptr) {
  std::vector<double> direct_us, hop_us, sidecar_us;
  for (auto _ : state) {
    const double a = TimedGet(direct);
    const double h = local_hop != nullptr ? TimedGet(*local_hop) : 0;
    const double b = TimedGet(sidecar);
    if (a < 0 || h < 0 || b < 0) {
      state.SkipWithError("a getHeader failed");
      break;
    }
    direct_us.push_back(a);
    if (local_hop != nullptr) hop_us.push_back(h);
    sidecar_us.push_back(b);
    state.SetIterationTime((a + h + b) / 1e6);
  }
  testing::ReportAdded(state, direct_us, "sidecar", sidecar_us);
  testing::ReportPercentiles(state, "local_hop", hop_us);
}

void BM_GetHeaderDirectAndThroughTheSidecar(benchmark::State& state) {
  absl::StatusOr<std::unique_ptr<testing::QuietRelay>> relay =
      testing::QuietRelay::Start(HeaderBody(), std::nullopt);
  if (!relay.ok()) {
    state.SkipWithError(std::string(relay.status().message()).c_str());
    return;
  }
  const int relay_port = (*relay)->port();

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
    TimeInterleaved(state, direct, sidecar);
  }
  proxy.Stop();
}

BENCHMARK(BM_GetHeaderDirectAndThroughTheSidecar)
    ->UseManualTime()
    ->Iterations(20000)
    ->Repetitions(3);

constexpr absl::Duration kOneWayDelay = absl::Milliseconds(20);
constexpr char kTls[] = "tests/support/testdata/tls/";

// A client of the TLS relay at localhost:`port`, verifying it against the tests' CA.
std::unique_ptr<httplib::SSLClient> RelayClient(int port, bool keep_alive) {
  auto client = std::make_unique<httplib::SSLClient>("localhost", port);
  client->set_ca_cert_path(absl::StrCat(kTls, "ca.pem").c_str());
  client->enable_server_certificate_verification(true);
  client->set_keep_alive(keep_alive);
  client->set_tcp_nodelay(true);
  return client;
}

// The fake relay behind TLS 1.3 and the delay line, and a sidecar in front of it with its pool.
class RelayOverTheNetwork {
 public:
  RelayOverTheNetwork()
      // Idleness is this clock's: advanced past the idle timeout to expire the pool at will.
      : clock_(absl::Now()) {
    absl::StatusOr<std::unique_ptr<testing::QuietRelay>> relay = testing::QuietRelay::Start(
        HeaderBody(),
        testing::QuietRelayTls{absl::StrCat(kTls, "server.pem"), absl::StrCat(kTls, "server.key")});
    absl::StatusOr<std::unique_ptr<testing::QuietRelay>> local_hop =
        testing::QuietRelay::Start(HeaderBody(), std::nullopt);
    if (!relay.ok() || !local_hop.ok()) return;
    relay_ = *std::move(relay);
    local_hop_ = *std::move(local_hop);
    absl::StatusOr<std::unique_ptr<testing::TcpProxy>> line =
        testing::TcpProxy::Start(relay_->port(), kOneWayDelay);
    if (!line.ok()) return;
    line_ = *std::move(line);
    const std::string url = absl::StrCat("https://localhost:", line_->port());
    UpstreamSettings upstream;
    upstream.url = url;
    upstream.relay_id = url;
    upstream.scheme_host_port = url;
    upstream.tls_ca_file = absl::StrCat(kTls, "ca.pem");
    settings_.upstreams.push_back(upstream);
    enforcer_ = std::make_unique<Enforcer>(breaker_, std::vector<UpstreamIdentity>{{url, false}});
    proxy_ = std::make_unique<Proxy>(settings_, *enforcer_, clock_);
    started_ = proxy_->Start().ok();
  }

  ~RelayOverTheNetwork() {
    if (proxy_ != nullptr) proxy_->Stop();
    line_ = nullptr;
  }

  int far_port() const { return line_->port(); }
  int sidecar_port() const { return proxy_->port(0); }
  Proxy& proxy() { return *proxy_; }

  // A client of the relay and one of the sidecar, each keeping its connection open, warmed;
  // nullopt, the benchmark skipped with the reason, when the delay line or the proxy did not
  // start.
  struct Clients {
    std::unique_ptr<httplib::SSLClient> relay;
    std::unique_ptr<httplib::Client> sidecar;
    std::unique_ptr<httplib::Client> local_hop;
  };
  std::optional<Clients> WarmClients(benchmark::State& state) const {
    if (!started_) {
      state.SkipWithError("the relays, the delay line or the proxy did not start");
      return std::nullopt;
    }
    Clients clients{RelayClient(far_port(), /*keep_alive=*/true),
                    std::make_unique<httplib::Client>("127.0.0.1", sidecar_port()),
                    std::make_unique<httplib::Client>("127.0.0.1", local_hop_->port())};
    for (httplib::Client* local : {clients.sidecar.get(), clients.local_hop.get()}) {
      local->set_keep_alive(true);
      local->set_tcp_nodelay(true);
    }
    for (int i = 0; i < 3; ++i) {
      TimedGet(*clients.relay);
      TimedGet(*clients.sidecar);
      TimedGet(*clients.local_hop);
    }
    return clients;
  }

  // Every pooled connection idle past the timeout, and closed: the hours between proposals.
  void ExpireThePool() {
    clock_.Advance(settings_.upstream_idle_timeout + absl::Seconds(1));
    proxy_->pool(0).CloseIdle();
  }

 private:
  std::unique_ptr<testing::QuietRelay> relay_;
  std::unique_ptr<testing::QuietRelay> local_hop_;
  std::unique_ptr<testing::TcpProxy> line_;
  SidecarSettings settings_;
  client::FakeClient breaker_;
  testing::FakeClock clock_;
  std::unique_ptr<Enforcer> enforcer_;
  std::unique_ptr<Proxy> proxy_;
  bool started_ = false;
};

void BM_GetHeaderOverTheNetwork(benchmark::State& state) {
  RelayOverTheNetwork network;
  std::optional<RelayOverTheNetwork::Clients> clients = network.WarmClients(state);
  if (!clients.has_value()) return;
  httplib::SSLClient& kept = *clients->relay;
  httplib::Client& sidecar = *clients->sidecar;
  std::vector<double> direct_new, direct_kept, hop_floor, sidecar_warm, sidecar_proposal;
  for (auto _ : state) {
    auto fresh = RelayClient(network.far_port(), /*keep_alive=*/false);
    const double a = TimedGet(*fresh);
    const double b = TimedGet(kept);
    // Its thread has waited as long as the sidecar's since its last request.
    const double h = TimedGet(*clients->local_hop);
    const double c = TimedGet(sidecar);
    network.ExpireThePool();
    const bool warmed =
        network.proxy().pool(0).Warm("/eth/v1/builder/status", absl::Seconds(5)).ok();
    httplib::Client proposer("127.0.0.1", network.sidecar_port());
    proposer.set_tcp_nodelay(true);
    const double d = TimedGet(proposer);
    if (a < 0 || b < 0 || h < 0 || c < 0 || d < 0 || !warmed) {
      state.SkipWithError("a getHeader failed");
      break;
    }
    direct_new.push_back(a);
    direct_kept.push_back(b);
    hop_floor.push_back(h);
    sidecar_warm.push_back(c);
    sidecar_proposal.push_back(d);
    state.SetIterationTime((a + b + h + c + d) / 1e6);
  }
  testing::ReportPercentiles(state, "1_direct_new", direct_new);
  testing::ReportPercentiles(state, "2_direct_kept", direct_kept);
  testing::ReportPercentiles(state, "3_local_hop", hop_floor);
  testing::ReportPercentiles(state, "3_sidecar_warm", sidecar_warm);
  testing::ReportPercentiles(state, "4_sidecar_proposal", sidecar_proposal);
  state.counters["warmed_used"] = static_cast<double>(network.proxy().pool(0).stats().warmed_used);
}

// The warm path alone, for its tail: direct kept alive and through the sidecar with its pool
// warm, interleaved, enough times that a p99 is the tenth slowest of a thousand rather than the
// second of 150; with the local hop's floor between them.
void BM_WarmGetHeaderOverTheNetwork(benchmark::State& state) {
  RelayOverTheNetwork network;
  std::optional<RelayOverTheNetwork::Clients> clients = network.WarmClients(state);
  if (!clients.has_value()) return;
  TimeInterleaved(state, *clients->relay, *clients->sidecar, clients->local_hop.get());
}

BENCHMARK(BM_GetHeaderOverTheNetwork)->UseManualTime()->Iterations(150)->Repetitions(2);
BENCHMARK(BM_WarmGetHeaderOverTheNetwork)->UseManualTime()->Iterations(1000)->Repetitions(3);

}  // namespace
}  // namespace breaker::sidecar
