#include "sidecar/proxy.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
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

// How long the upstream may take: the configured limit, or less when the request's own
// X-Timeout-Ms (mev-boost's) asks for less.
absl::Duration Budget(const httplib::Request& request, absl::Duration limit) {
  int64_t ms = 0;
  if (absl::SimpleAtoi(request.get_header_value("X-Timeout-Ms"), &ms) && ms > 0) {
    return std::min(limit, absl::Milliseconds(ms));
  }
  return limit;
}

void SetTimeouts(httplib::Client& client, absl::Duration budget) {
  const int64_t us = std::max<int64_t>(1000, absl::ToInt64Microseconds(budget));
  const time_t sec = static_cast<time_t>(us / 1000000);
  const time_t usec = static_cast<time_t>(us % 1000000);
  client.set_connection_timeout(sec, usec);
  client.set_read_timeout(sec, usec);
  client.set_write_timeout(sec, usec);
}

}  // namespace

Proxy::Proxy(const SidecarSettings& settings, Enforcer& enforcer)
    : settings_(settings), enforcer_(enforcer) {}

Proxy::~Proxy() { Stop(); }

absl::Status Proxy::Start() {
  for (size_t i = 0; i < settings_.upstreams.size(); ++i) {
    auto server = std::make_unique<httplib::Server>();
    server->set_payload_max_length(settings_.max_body_bytes);
    server->set_read_timeout(5, 0);
    server->set_write_timeout(5, 0);
    server->set_keep_alive_max_count(1000);
    auto handler = [this, i](const httplib::Request& request, httplib::Response& response) {
      Handle(i, &request, &response);
    };
    server->Get(".*", handler);
    server->Post(".*", handler);
    server->Put(".*", handler);
    server->Delete(".*", handler);
    server->Patch(".*", handler);
    const uint16_t port = settings_.upstreams[i].listen_port;
    if (!server->bind_to_port(settings_.listen_host, port)) {
      servers_.clear();
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", settings_.listen_host, ":", port, " (upstreams[", i,
                       "], ", settings_.upstreams[i].relay_id, ")"));
    }
    servers_.push_back(std::move(server));
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

  const absl::Duration budget = Budget(request, settings_.upstream_timeout);
  const absl::Time deadline = absl::Now() + budget;
  httplib::Client client(upstream.scheme_host_port);
  SetTimeouts(client, budget);
  client.set_keep_alive(false);

  httplib::Request out;
  out.method = request.method;
  out.path = upstream.path_prefix + request.target;
  for (const auto& [name, value] : request.headers) {
    if (!HopByHop(name)) out.headers.emplace(name, value);
  }
  out.body = request.body;
  std::string body;
  bool too_large = false;
  bool too_late = false;
  const size_t max_body = settings_.max_body_bytes;
  out.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
    if (body.size() + length > max_body) {
      too_large = true;
      return false;
    }
    if (absl::Now() > deadline) {
      too_late = true;
      return false;
    }
    body.append(data, length);
    return true;
  };

  httplib::Response answer;
  httplib::Error error = httplib::Error::Success;
  const bool sent = client.send(out, answer, error);
  const bool failed = !sent || too_large || too_late || answer.status >= 500;

  if (route.endpoint == Endpoint::kSubmitBlindedBlock) {
    if (enforcer_.OnBlindedBlockAnswered(index, request.body,
                                         request.get_header_value("Content-Type"), failed)) {
      LOG(WARNING) << "relay " << upstream.relay_id
                   << " did not reveal a payload it signed for: reported";
    }
  }
  if (!sent || too_large || too_late) {
    const std::string what = too_large  ? absl::StrCat("answer larger than ", max_body, " bytes")
                             : too_late ? std::string("timed out")
                                        : httplib::to_string(error);
    LOG(WARNING) << EndpointName(route.endpoint) << " via " << upstream.relay_id << ": " << what;
    response.status = too_late || error == httplib::Error::Read ? 504 : 502;
    response.set_content(absl::StrCat("{\"code\":", response.status,
                                      ",\"message\":\"upstream: ", what, "\"}"),
                         "application/json");
    return;
  }
  if (route.endpoint == Endpoint::kGetHeader) {
    enforcer_.OnHeaderAnswered(index, route.slot, answer.status, body);
  }
  response.status = answer.status;
  std::string content_type = "application/octet-stream";
  for (const auto& [name, value] : answer.headers) {
    if (absl::EqualsIgnoreCase(name, "Content-Type")) {
      content_type = value;
    } else if (!HopByHop(name)) {
      response.headers.emplace(name, value);
    }
  }
  if (!body.empty()) response.set_content(std::move(body), content_type.c_str());
}

}  // namespace breaker::sidecar
