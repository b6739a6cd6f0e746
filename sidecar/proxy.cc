#include "sidecar/proxy.h"

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
#include "glog/logging.h"
#include "httplib.h"

namespace breaker::sidecar {
namespace {

// Headers of one hop, never carried over; the library sets its own Host and Content-Length.
bool HopByHop(const std::string& name) {
  static const char* const kNames[] = {
      "connection", "keep-alive",     "proxy-authenticate", "proxy-authorization",
      "te",         "trailer",        "transfer-encoding",  "upgrade",
      "host",       "content-length", "accept-encoding",    "content-encoding",
      // What cpp-httplib adds to a request it received.
      "remote_addr", "remote_port", "local_addr", "local_port"};
  const std::string lower = absl::AsciiStrToLower(name);
  for (const char* hop : kNames) {
    if (lower == hop) return true;
  }
  return false;
}

void SetTimeouts(httplib::Client& client, absl::Duration budget) {
  const int64_t us = std::max<int64_t>(1000, absl::ToInt64Microseconds(budget));
  const time_t sec = static_cast<time_t>(us / 1000000);
  const time_t usec = static_cast<time_t>(us % 1000000);
  client.set_connection_timeout(sec, usec);
  client.set_read_timeout(sec, usec);
  client.set_write_timeout(sec, usec);
}

// What went wrong with an upstream that gave no answer, for the log and the 502's message.
std::string UpstreamErrorText(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection:
      return "cannot connect (is the upstream URL right and the relay up?)";
    case httplib::Error::Read:
      return "the connection failed or closed before the whole answer came";
    case httplib::Error::Write:
      return "the connection failed while the request was sent";
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLLoadingCerts:
    case httplib::Error::SSLServerVerification:
      return absl::StrCat("TLS failed (", httplib::to_string(error), ")");
    default:
      return absl::StrCat("no answer (", httplib::to_string(error), ")");
  }
}

// The JSON error body of builder-specs (code, message).
std::string ErrorBody(int status, absl::string_view message) {
  return absl::StrCat("{\"code\":", status, ",\"message\":\"", message, "\"}");
}

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

// Stops the upstream clients whose deadline passed. httplib's own timeouts bound each socket
// operation, not the whole exchange: an upstream trickling its headers or body a byte at a
// time would keep the request past its deadline without this.
//
// This class is thread-safe.
class Proxy::Deadlines {
 public:
  Deadlines() : thread_([this] { Run(); }) {}

  ~Deadlines() {
    {
      MutexLock lock(&mu_);
      stopping_ = true;
    }
    wake_.SignalAll();
    thread_.join();
  }

  // Until Disarm(id), stops `client` once `deadline` passes, and again every few milliseconds
  // after (a stop while the client still connects has no socket to shut down yet).
  // REQUIRES: `client` lives until Disarm(id) returns.
  uint64_t Arm(absl::Time deadline, httplib::Client* client) {
    uint64_t id;
    bool sooner;
    {
      MutexLock lock(&mu_);
      id = ++last_id_;
      armed_[id] = Armed{deadline, client};
      sooner = deadline < next_wake_;
    }
    // Only a deadline sooner than the thread's next wake needs it awake: the common case (every
    // request with the same timeout) costs no thread switch.
    if (sooner) wake_.SignalAll();
    return id;
  }

  // Once this returns, the client is not touched any more.
  void Disarm(uint64_t id) {
    MutexLock lock(&mu_);
    armed_.erase(id);
  }

 private:
  struct Armed {
    absl::Time deadline;
    httplib::Client* client = nullptr;
  };
  static constexpr absl::Duration kRetry = absl::Milliseconds(5);

  void Run() {
    MutexLock lock(&mu_);
    while (!stopping_) {
      const absl::Time now = absl::Now();
      absl::Time next = absl::InfiniteFuture();
      for (auto& [id, armed] : armed_) {
        if (armed.deadline <= now) {
          armed.client->stop();
          armed.deadline = now + kRetry;
        }
        next = std::min(next, armed.deadline);
      }
      next_wake_ = next;
      wake_.WaitUntil(&mu_, next);
    }
  }

  Mutex mu_;
  CondVar wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t last_id_ ABSL_GUARDED_BY(mu_) = 0;
  // When the thread wakes next, unless notified.
  absl::Time next_wake_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  std::map<uint64_t, Armed> armed_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

Proxy::Proxy(const SidecarSettings& settings, Enforcer& enforcer)
    : settings_(settings), enforcer_(enforcer), deadlines_(std::make_unique<Deadlines>()) {}

Proxy::~Proxy() { Stop(); }

absl::Status Proxy::Start() {
  for (size_t i = 0; i < settings_.upstreams.size(); ++i) {
    auto server = std::make_unique<httplib::Server>();
    server->set_payload_max_length(settings_.max_body_bytes);
    server->set_read_timeout(5, 0);
    server->set_write_timeout(5, 0);
    server->set_keep_alive_max_count(1000);
    // The library writes an answer's head and body apart; with Nagle's algorithm the body then
    // waits for the peer's delayed acknowledgement, about 40 ms on Linux.
    server->set_tcp_nodelay(true);
    auto handler = [this, i](const httplib::Request& request, httplib::Response& response) {
      Handle(i, &request, &response);
    };
    server->Get(".*", handler);
    server->Post(".*", handler);
    server->Put(".*", handler);
    server->Delete(".*", handler);
    server->Patch(".*", handler);
    const uint16_t port = settings_.upstreams[i].listen_port;
    const int bound = port == 0 ? server->bind_to_any_port(settings_.listen_host)
                      : server->bind_to_port(settings_.listen_host, port) ? port
                                                                          : -1;
    if (bound <= 0) {
      servers_.clear();
      ports_.clear();
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", settings_.listen_host, ":", port, " (upstreams[", i,
                       "], ", settings_.upstreams[i].relay_id, ")"));
    }
    servers_.push_back(std::move(server));
    ports_.push_back(bound);
  }
  for (auto& server : servers_) {
    httplib::Server* raw = server.get();
    threads_.emplace_back([raw] { raw->listen_after_bind(); });
  }
  return absl::OkStatus();
}

void Proxy::Stop() {
  for (auto& server : servers_) server->stop();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
  servers_.clear();
}

void Proxy::Handle(size_t index, const void* request_ptr, void* response_ptr) {
  const auto& request = *static_cast<const httplib::Request*>(request_ptr);
  auto& response = *static_cast<httplib::Response*>(response_ptr);
  const UpstreamSettings& upstream = settings_.upstreams[index];
  const Route route = ClassifyRoute(request.method, request.path);

  if (std::optional<std::string> reason = enforcer_.Refuse(index, route)) {
    LOG(INFO) << "refused " << EndpointName(route.endpoint) << " slot " << route.slot << " via "
              << upstream.relay_id << ": " << *reason;
    response.status = 204;
    return;
  }

  const absl::Time start = absl::Now();
  // A late header or bid is no use to the proposer any more; any other request (a signed
  // block's reveal above all) is still worth its whole timeout.
  const bool auction = route.endpoint == Endpoint::kGetHeader ||
                       route.endpoint == Endpoint::kGetExecutionPayloadBid;
  const absl::Duration budget = RequestBudget(
      request.get_header_value("X-Timeout-Ms"),
      auction ? request.get_header_value("Date-Milliseconds") : std::string(),
      settings_.upstream_timeout, start);
  const absl::Time deadline = start + budget;
  httplib::Client client(upstream.scheme_host_port);
  SetTimeouts(client, budget);
  client.set_keep_alive(false);
  client.set_tcp_nodelay(true);

  httplib::Request out;
  out.method = request.method;
  out.path = upstream.path_prefix + request.target;
  for (const auto& [name, value] : request.headers) {
    if (!HopByHop(name)) out.headers.emplace(name, value);
  }
  out.body = request.body;
  std::string body;
  bool too_large = false;
  const size_t max_body = settings_.max_body_bytes;
  out.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
    if (body.size() + length > max_body) {
      too_large = true;
      return false;
    }
    body.append(data, length);
    return true;
  };

  httplib::Response answer;
  httplib::Error error = httplib::Error::Success;
  bool sent = false;
  if (budget > absl::ZeroDuration()) {
    const uint64_t armed = deadlines_->Arm(deadline, &client);
    sent = client.send(out, answer, error);
    deadlines_->Disarm(armed);
  }
  const bool too_late = !sent && !too_large && absl::Now() >= deadline;
  const bool failed = !sent || too_large || answer.status >= 500;

  if (route.endpoint == Endpoint::kSubmitBlindedBlock) {
    if (enforcer_.OnBlindedBlockAnswered(index, request.body,
                                         request.get_header_value("Content-Type"), failed)) {
      LOG(WARNING) << "relay " << upstream.relay_id
                   << " did not reveal a payload it signed for: reported";
    }
  }
  if (!sent || too_large) {
    enforcer_.OnForwarded(index, /*failed=*/true);
    const std::string what =
        too_large  ? absl::StrCat("answer larger than max_body_bytes (", max_body, " bytes)")
        : budget <= absl::ZeroDuration()
            ? std::string("the request came after its deadline (Date-Milliseconds + X-Timeout-Ms)")
        : too_late ? absl::StrCat("no answer within the request's ",
                                  absl::ToInt64Milliseconds(budget), " ms")
                   : UpstreamErrorText(error);
    LOG(WARNING) << EndpointName(route.endpoint) << " via " << upstream.relay_id << ": " << what;
    response.status = too_late ? 504 : 502;
    response.set_content(ErrorBody(response.status, absl::StrCat("upstream: ", what)),
                         "application/json");
    return;
  }
  std::string content_type = "application/octet-stream";
  for (const auto& [name, value] : answer.headers) {
    if (absl::EqualsIgnoreCase(name, "Content-Type")) content_type = value;
  }
  if (route.endpoint == Endpoint::kGetHeader &&
      !enforcer_.OnHeaderAnswered(index, route.slot, answer.status, body, content_type)) {
    LOG(WARNING) << "get_header via " << upstream.relay_id << ": a 200 answer of "
                 << body.size() << " bytes that is not JSON; passed back for the node to judge";
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
    if (!absl::EqualsIgnoreCase(name, "Content-Type") && !HopByHop(name)) {
      response.headers.emplace(name, value);
    }
  }
  if (!body.empty()) response.set_content(std::move(body), content_type.c_str());
}

}  // namespace breaker::sidecar
