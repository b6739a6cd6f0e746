#include "sidecar/builder/proxy.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/mutex.h"
#include "common/port_holder.h"
#include "glog/logging.h"
#include "sidecar/http/error_body.h"
#include "sidecar/http/headers.h"

namespace breaker::sidecar {
namespace {

// What went wrong with an upstream that gave no answer, for the log and the 502's message.
std::string UpstreamErrorText(const UpstreamAnswer& answer) {
  using Failure = UpstreamAnswer::Failure;
  switch (answer.failure) {
    case Failure::kConnect:
      return absl::StrCat("cannot connect (is the upstream URL right and the relay up?): ",
                          answer.error);
    case Failure::kTls:
      return absl::StrCat(
          "TLS failed (check the upstream's certificate, tls_ca_file and the "
          "client certificate): ",
          answer.error);
    case Failure::kSend:
      return absl::StrCat("the connection failed while the request was sent: ", answer.error);
    case Failure::kStopped:
      return "the sidecar is stopping";
    default:
      return absl::StrCat("the connection failed or closed before the whole answer came: ",
                          answer.error);
  }
}

// The methods of the builder API and of REST: others (CONNECT, TRACE, OPTIONS, ...) have no
// business at a relay and are answered 405.
bool IsForwardedMethod(absl::string_view method) {
  for (absl::string_view allowed : {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH"}) {
    if (method == allowed) return true;
  }
  return false;
}

// Connections served at once per port: each on its own thread, so that idle or slow ones
// (a slowloris) hold up no other; far more than a node and its mev-boost open.
constexpr size_t kMaxConnectionsPerPort = 1024;

}  // namespace

absl::Duration RequestBudget(absl::string_view timeout_ms, absl::string_view date_ms,
                             absl::Duration limit, absl::Time now) {
  int64_t timeout = 0;
  if (!absl::SimpleAtoi(timeout_ms, &timeout) || timeout <= 0) return limit;
  absl::Duration budget = std::min(limit, absl::Milliseconds(timeout));
  int64_t sent = 0;
  if (absl::SimpleAtoi(date_ms, &sent) && sent > 0) {
    // A date ahead of this clock spent nothing on its way.
    const absl::Duration spent = std::max(absl::ZeroDuration(), now - absl::FromUnixMillis(sent));
    budget = std::max(absl::ZeroDuration(), std::min(budget, absl::Milliseconds(timeout) - spent));
  }
  return budget;
}

// Closes each pool's connections once idle past the idle timeout, every second.
class Proxy::Maintenance {
 public:
  explicit Maintenance(const std::vector<std::unique_ptr<UpstreamPool>>& pools)
      : thread_([this, &pools] { Run(pools); }) {}

  ~Maintenance() {
    {
      MutexLock lock(&mu_);
      stopping_ = true;
    }
    wake_.SignalAll();
    thread_.join();
  }

 private:
  void Run(const std::vector<std::unique_ptr<UpstreamPool>>& pools) {
    MutexLock lock(&mu_);
    while (!stopping_) {
      for (const auto& pool : pools) pool->CloseIdle();
      wake_.WaitFor(&mu_, absl::Seconds(1));
    }
  }

  Mutex mu_;
  CondVar wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

Proxy::Proxy(const SidecarSettings& settings, Enforcer& enforcer, const Clock& clock)
    : settings_(settings), enforcer_(enforcer), clock_(clock) {}

Proxy::~Proxy() { Stop(); }

absl::Status Proxy::Start() {
  for (size_t i = 0; i < settings_.upstreams.size(); ++i) {
    const UpstreamSettings& upstream = settings_.upstreams[i];
    UpstreamPoolOptions options;
    options.scheme_host_port = upstream.scheme_host_port;
    options.name = upstream.relay_id;
    options.tls_ca_file = upstream.tls_ca_file;
    options.tls_cert_file = upstream.tls_cert_file;
    options.tls_key_file = upstream.tls_key_file;
    options.max_idle_connections = settings_.upstream_max_idle_connections;
    options.idle_timeout = settings_.upstream_idle_timeout;
    options.max_body_bytes = settings_.max_body_bytes;
    absl::StatusOr<std::unique_ptr<UpstreamPool>> pool =
        UpstreamPool::Create(std::move(options), clock_);
    if (!pool.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("upstreams[", i, "] (", upstream.relay_id, "): ", pool.status().message()));
    }
    pools_.push_back(*std::move(pool));
  }
  for (size_t i = 0; i < settings_.upstreams.size(); ++i) {
    http::ServerOptions options;
    options.host = settings_.listen_host;
    options.port = settings_.upstreams[i].listen_port;
    options.max_connections = kMaxConnectionsPerPort;
    options.max_body_bytes = settings_.max_body_bytes;
    // A caller that stalls mid-request, or a connection idle between requests, is closed after
    // this long.
    options.timeout = absl::Seconds(5);
    absl::StatusOr<std::unique_ptr<http::Server>> server = http::Server::Start(
        options, [this, i](const http::Request& request, http::Response& response) {
          Handle(i, request, response);
        });
    if (!server.ok()) {
      servers_.clear();
      ports_.clear();
      return absl::UnavailableError(absl::StrCat(
          "cannot listen on ", settings_.listen_host, ":", options.port, " (upstreams[", i, "], ",
          settings_.upstreams[i].relay_id, "): the port is taken", PortHolderSuffix(options.port),
          " or the address is not this host's; stop the other process or pick another "
          "listen_port (",
          server.status().message(), ")"));
    }
    ports_.push_back((*server)->port());
    servers_.push_back(*std::move(server));
  }
  maintenance_ = std::make_unique<Maintenance>(pools_);
  return absl::OkStatus();
}

void Proxy::Stop(absl::Duration grace) {
  // New connections are refused from here on; requests on connections already open are still
  // answered.
  for (auto& server : servers_) server->StopAccepting();
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    const absl::Duration deadline = clock_.Monotonic() + grace;
    for (absl::Duration left = grace; in_flight_ > 0 && left > absl::ZeroDuration();
         left = deadline - clock_.Monotonic()) {
      answered_.WaitFor(&mu_, left);
    }
  }
  // What is still in flight ends its upstream exchange now, and is answered 503.
  for (const auto& pool : pools_) pool->Abort();
  {
    MutexLock lock(&mu_);
    while (in_flight_ > 0) answered_.Wait(&mu_);
  }
  // Each server lets the answers leave, then closes its connections.
  servers_.clear();
  maintenance_ = nullptr;
}

void Proxy::Handle(size_t index, const http::Request& request, http::Response& response) {
  {
    MutexLock lock(&mu_);
    ++in_flight_;
  }
  Forward(index, request, response);
  MutexLock lock(&mu_);
  if (--in_flight_ == 0) answered_.SignalAll();
}

void Proxy::Forward(size_t index, const http::Request& request, http::Response& response) {
  const UpstreamSettings& upstream = settings_.upstreams[index];
  if (!IsForwardedMethod(request.method)) {
    response.status = 405;
    response.headers.emplace_back("Allow", "GET, HEAD, POST, PUT, DELETE, PATCH");
    response.headers.emplace_back("Content-Type", "application/json");
    response.body = http::ErrorBody(
        405, absl::StrCat("method ", request.method, " is not forwarded to an upstream"));
    return;
  }
  const Route route = ClassifyRoute(request.method, request.path);

  if (std::optional<std::string> reason = enforcer_.Refuse(index, route)) {
    LOG(INFO) << "refused " << EndpointName(route.endpoint) << " slot " << route.slot << " via "
              << upstream.relay_id << ": " << *reason;
    response.status = 204;
    return;
  }

  // The budget is the caller's, in wall-clock time (Date-Milliseconds); the latency is measured
  // on the monotonic clock.
  const absl::Time start = clock_.Now();
  const absl::Duration started = clock_.Monotonic();
  // A late header or bid is no use to the proposer any more; any other request (a signed
  // block's reveal above all) is still worth its whole timeout.
  const bool auction =
      route.endpoint == Endpoint::kGetHeader || route.endpoint == Endpoint::kGetExecutionPayloadBid;
  const absl::Duration budget = RequestBudget(
      request.header("X-Timeout-Ms"), auction ? request.header("Date-Milliseconds") : std::string(),
      settings_.upstream_timeout, start);
  UpstreamRequest out;
  out.method = request.method;
  out.target = upstream.path_prefix + request.target;
  for (const auto& [name, value] : request.headers) {
    if (!http::IsHopByHop(name)) out.headers.emplace_back(name, value);
  }
  out.body = request.body;
  // A reveal sent twice could be taken for two: the node retries it if it must.
  out.never_resend = route.endpoint == Endpoint::kSubmitBlindedBlock;

  UpstreamAnswer answer;
  if (budget > absl::ZeroDuration()) {
    answer = pools_[index]->Send(out, budget);
    if (answer.ok() && latency_observer_) {
      latency_observer_(index, route.endpoint, clock_.Monotonic() - started);
    }
  } else {
    answer.failure = UpstreamAnswer::Failure::kTimeout;
  }
  const bool failed = !answer.ok() || answer.status >= 500;

  if (route.endpoint == Endpoint::kSubmitBlindedBlock) {
    if (enforcer_.OnBlindedBlockAnswered(index, request.body, request.header("Content-Type"),
                                         failed)) {
      LOG(WARNING) << "relay " << upstream.relay_id
                   << " did not reveal a payload it signed for: reported";
    }
  }
  if (!answer.ok()) {
    using Failure = UpstreamAnswer::Failure;
    enforcer_.OnForwarded(index, /*failed=*/true);
    const std::string what =
        answer.failure == Failure::kTooLarge ? absl::StrCat("answer larger than max_body_bytes (",
                                                            settings_.max_body_bytes, " bytes)")
        : budget <= absl::ZeroDuration()
            ? std::string("the request came after its deadline (Date-Milliseconds + X-Timeout-Ms)")
        : answer.failure == Failure::kTimeout
            ? absl::StrCat("no answer within the request's ", absl::ToInt64Milliseconds(budget),
                           " ms")
            : UpstreamErrorText(answer);
    LOG(WARNING) << EndpointName(route.endpoint) << " via " << upstream.relay_id << ": " << what;
    response.status = answer.failure == Failure::kTimeout   ? 504
                      : answer.failure == Failure::kStopped ? 503
                                                            : 502;
    response.headers.emplace_back("Content-Type", "application/json");
    response.body = http::ErrorBody(response.status, absl::StrCat("upstream: ", what));
    return;
  }
  std::string body = std::move(answer.body);
  if (route.endpoint == Endpoint::kRegisterValidators && registration_observer_ != nullptr &&
      answer.status < 300) {
    registration_observer_(request.body, request.header("Content-Type"));
  }
  std::string content_type = "application/octet-stream";
  for (const auto& [name, value] : answer.headers) {
    if (absl::EqualsIgnoreCase(name, "Content-Type")) content_type = value;
  }
  if (route.endpoint == Endpoint::kGetHeader &&
      !enforcer_.OnHeaderAnswered(index, route.slot, answer.status, body, content_type)) {
    LOG(WARNING) << "get_header via " << upstream.relay_id << ": a 200 answer of " << body.size()
                 << " bytes that is not JSON; passed back for the node to judge";
  }
  if (route.endpoint == Endpoint::kGetExecutionPayloadBid) {
    if (std::optional<std::string> reason =
            enforcer_.OnBidAnswered(index, route.slot, answer.status, body, content_type)) {
      LOG(INFO) << "refused a bid for slot " << route.slot << " via " << upstream.relay_id << ": "
                << *reason;
      response.status = 204;
      return;
    }
  }
  enforcer_.OnForwarded(index, /*failed=*/answer.status >= 500);
  response.status = answer.status;
  for (const auto& [name, value] : answer.headers) {
    if (!absl::EqualsIgnoreCase(name, "Content-Type") && !http::IsHopByHop(name)) {
      response.headers.emplace_back(name, value);
    }
  }
  if (!body.empty()) {
    response.headers.emplace_back("Content-Type", content_type);
    response.body = std::move(body);
  }
}

}  // namespace breaker::sidecar
