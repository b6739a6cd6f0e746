#include "sidecar/validator/validator_port.h"

#include <deque>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/relay_id.h"
#include "glog/logging.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "sidecar/http/connection_threads.h"
#include "sidecar/http/error_body.h"
#include "sidecar/http/headers.h"
#include "sidecar/ssz/builder_messages.h"

namespace breaker::sidecar::validator {
namespace {

// Answer bytes held for a caller that reads slower than the node sends.
constexpr size_t kMaxQueuedBytes = 1 << 20;
// The event stream is quiet for as long as the chain is: its reads wait this long.
constexpr absl::Duration kEventStreamReadTimeout = absl::Hours(1);

size_t ModeIndex(core::Mode mode) { return static_cast<size_t>(mode); }

// The slot of /eth/v{3,4}/validator/blocks/{slot}; 0 when it is no number.
core::Slot SlotOfPath(absl::string_view path) {
  core::Slot slot = 0;
  const size_t last = path.rfind('/');
  if (last == absl::string_view::npos || !absl::SimpleAtoi(path.substr(last + 1), &slot)) return 0;
  return slot;
}

bool IncludePayload(const httplib::Request& request) {
  return absl::EqualsIgnoreCase(request.get_param_value("include_payload"), "true");
}

// The builder index of a produced block's bid in a JSON answer:
// data.body.signed_execution_payload_bid.message.builder_index (optionally without the
// {"version", "data"} envelope, or inside a BlockContents' "block").
std::optional<core::BuilderIndex> WinningBuilderOfJson(absl::string_view body) {
  const nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return std::nullopt;
  const nlohmann::json* block = json.contains("data") ? &json["data"] : &json;
  if (block->is_object() && block->contains("block")) block = &(*block)["block"];
  const nlohmann::json::json_pointer pointer(
      "/body/signed_execution_payload_bid/message/builder_index");
  if (!block->is_object() || !block->contains(pointer)) return std::nullopt;
  const nlohmann::json& index = (*block)[pointer];
  core::BuilderIndex builder = 0;
  if (index.is_number_unsigned()) return index.get<core::BuilderIndex>();
  if (index.is_string() && absl::SimpleAtoi(index.get<std::string>(), &builder)) return builder;
  return std::nullopt;
}

// The builder index of a produced block's bid, in the answer's encoding: an SSZ answer is the
// Gloas BeaconBlock a builder-API win comes as (no payload included), laid out by `preset`.
absl::StatusOr<core::BuilderIndex> WinningBuilder(absl::string_view body,
                                                  absl::string_view content_type,
                                                  const ssz::Preset& preset) {
  if (absl::StrContains(absl::AsciiStrToLower(content_type), "octet-stream")) {
    return ssz::BlockBidBuilderIndexFromSsz(body, preset);
  }
  const std::optional<core::BuilderIndex> builder = WinningBuilderOfJson(body);
  if (!builder.has_value()) {
    return absl::InvalidArgumentError(
        "the JSON answer has no data.body.signed_execution_payload_bid.message.builder_index");
  }
  return *builder;
}

}  // namespace

// One request's exchange with the beacon node, on a thread of its own, so that the answer's
// body can stream to the caller while it arrives. It takes a kept-alive connection when there
// is one (not for an event stream, which holds its own), and gives it back once the answer has
// been read whole.
class ValidatorPort::Exchange {
 public:
  Exchange(const ValidatorPortOptions& options, NodeConnections& connections,
           httplib::Request request, bool event_stream)
      : connections_(connections), event_stream_(event_stream), request_(std::move(request)) {
    if (!event_stream) connection_ = connections.TakeIdle();
    reused_ = connection_ != nullptr && connection_->is_socket_open();
    if (connection_ == nullptr) connection_ = connections.Open();
    read_timeout_ = event_stream ? kEventStreamReadTimeout : options.answer_timeout;
    write_timeout_ = options.answer_timeout;
    request_.response_handler = [this](const httplib::Response& response) {
      MutexLock lock(&mu_);
      status_ = response.status;
      headers_ = response.headers;
      head_ = true;
      changed_.SignalAll();
      return !cancelled_;
    };
    request_.content_receiver = [this](const char* data, size_t size, uint64_t, uint64_t) {
      MutexLock lock(&mu_);
      while (queued_ >= kMaxQueuedBytes && !cancelled_) changed_.Wait(&mu_);
      if (cancelled_) return false;
      chunks_.emplace_back(data, size);
      queued_ += size;
      changed_.SignalAll();
      return true;
    };
    thread_ = std::thread([this] { Run(); });
  }

  // Whether the exchange went over a connection an earlier one had opened.
  bool reused() const { return reused_; }

  ~Exchange() {
    Cancel();
    thread_.join();
    MutexLock lock(&mu_);
    // Read whole, on a connection that stays open: the next request may take it.
    if (done_ && error_.empty() && !stopped_ && !event_stream_) {
      connections_.GiveBack(std::move(connection_));
    }
  }

  // Waits for the answer's head, for at most `timeout`. False: none came (error() says why;
  // empty when the time ran out). Before the head, only the head, the end or a cancel signal.
  bool WaitForHead(absl::Duration timeout) {
    MutexLock lock(&mu_);
    while (!head_ && !done_ && !cancelled_) {
      if (changed_.WaitFor(&mu_, timeout)) break;
    }
    return head_;
  }

  int status() const {
    MutexLock lock(&mu_);
    return status_;
  }
  httplib::Headers headers() const {
    MutexLock lock(&mu_);
    return headers_;
  }
  std::string error() const {
    MutexLock lock(&mu_);
    return error_;
  }
  // Whether the connection itself failed (refused, unreachable, or not accepted in time), as
  // opposed to a node that took the request and sent no answer.
  bool unreachable() const {
    MutexLock lock(&mu_);
    return unreachable_;
  }

  // The next part of the body: everything arrived since the last call, in one piece, so that
  // a large answer is written in large writes. False at its end; *failed when it ended early.
  bool Next(std::string* chunk, bool* failed) {
    MutexLock lock(&mu_);
    while (chunks_.empty() && !done_) changed_.Wait(&mu_);
    if (chunks_.empty()) {
      *failed = !error_.empty();
      return false;
    }
    chunk->clear();
    chunk->reserve(queued_);
    for (const std::string& part : chunks_) chunk->append(part);
    chunks_.clear();
    queued_ = 0;
    changed_.SignalAll();
    return true;
  }

  // Ends the exchange: a connection still in use is shut, whatever it was waiting for.
  void Cancel() {
    MutexLock lock(&mu_);
    cancelled_ = true;
    changed_.SignalAll();
    if (!done_) {
      stopped_ = true;
      connection_->stop();
    }
  }

 private:
  void Run() {
    httplib::Response response;
    httplib::Error error = httplib::Error::Success;
    const bool ok = Send(response, error);
    MutexLock lock(&mu_);
    if (!ok) {
      error_ = httplib::to_string(error);
      unreachable_ = error == httplib::Error::Connection ||
                     error == httplib::Error::SSLConnection ||
                     error == httplib::Error::BindIPAddress;
    }
    done_ = true;
    changed_.SignalAll();
  }

  // Sends the request on the connection (which opens a new socket in place of one the node
  // closed while it was idle).
  bool Send(httplib::Response& response, httplib::Error& error) {
    httplib::Client* connection;
    {
      MutexLock lock(&mu_);
      connection = connection_.get();
    }
    connection->set_read_timeout(absl::ToChronoMicroseconds(read_timeout_));
    connection->set_write_timeout(absl::ToChronoMicroseconds(write_timeout_));
    return connection->send(request_, response, error);
  }

  NodeConnections& connections_;
  const bool event_stream_;
  bool reused_ = false;
  absl::Duration read_timeout_;
  absl::Duration write_timeout_;
  httplib::Request request_;
  mutable Mutex mu_;
  // Used by Run() and, to stop it, by Cancel(); given back by the destructor.
  std::unique_ptr<httplib::Client> connection_ ABSL_GUARDED_BY(mu_);
  // Cancel() shut the connection while it was in use.
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  CondVar changed_;
  bool head_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool unreachable_ ABSL_GUARDED_BY(mu_) = false;
  int status_ ABSL_GUARDED_BY(mu_) = 0;
  httplib::Headers headers_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> chunks_ ABSL_GUARDED_BY(mu_);
  size_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  std::string error_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

ValidatorPort::ValidatorPort(ValidatorPortOptions options, client::BreakerClient& client,
                             const Clock& clock)
    : options_(std::move(options)),
      client_(client),
      connections_(options_.beacon_node_base, options_.connect_timeout,
                   options_.max_idle_node_connections, options_.node_idle_timeout, clock) {}

ValidatorPort::~ValidatorPort() { Stop(); }

absl::Status ValidatorPort::Start() {
  server_ = std::make_unique<httplib::Server>();
  server_->set_payload_max_length(options_.max_body_bytes);
  const int64_t caller = absl::ToInt64Seconds(options_.caller_timeout);
  server_->set_read_timeout(caller, 0);
  server_->set_write_timeout(caller, 0);
  server_->set_keep_alive_max_count(1000);
  server_->set_keep_alive_timeout(caller);
  server_->set_tcp_nodelay(true);
  auto handler = [this](const httplib::Request& request, httplib::Response& response) {
    Handle(&request, &response);
  };
  server_->Get(".*", handler);
  server_->Post(".*", handler);
  server_->Put(".*", handler);
  server_->Delete(".*", handler);
  server_->Patch(".*", handler);
  server_->Options(".*", handler);
  port_ = http::BindOwnPort(*server_, options_.listen_host, options_.listen_port,
                            options_.max_connections);
  if (port_ <= 0) {
    server_ = nullptr;
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", options_.listen_host, ":", options_.listen_port,
        " (validator_listen): the port is taken or the address is not this host's; stop the "
        "other process or pick another validator_listen"));
  }
  httplib::Server* raw = server_.get();
  thread_ = std::thread([raw] { raw->listen_after_bind(); });
  // stop() does nothing to a loop that has not started: wait for it, boundedly.
  for (int waited_ms = 0; !server_->is_running() && waited_ms < 1000; ++waited_ms) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  return absl::OkStatus();
}

void ValidatorPort::Stop() {
  if (server_ == nullptr) return;
  server_->stop();
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    for (Exchange* exchange : in_flight_) exchange->Cancel();
  }
  if (thread_.joinable()) thread_.join();
  server_ = nullptr;
}

ValidatorPortCounters ValidatorPort::counters() const {
  MutexLock lock(&mu_);
  return counters_;
}

void ValidatorPort::Handle(const void* request_ptr, void* response_ptr) {
  const auto& request = *static_cast<const httplib::Request*>(request_ptr);
  auto& response = *static_cast<httplib::Response*>(response_ptr);
  const BlockRoute route = ClassifyBlockRoute(request.method, request.path);
  // The policy in force when the request arrived decides, whatever comes while it is served.
  const std::shared_ptr<const client::PolicySnapshot> snapshot = client_.policy();
  const core::Mode mode = snapshot->policy.mode;

  httplib::Request out;
  out.method = request.method;
  out.path = options_.beacon_node_path_prefix + request.target;
  for (const auto& [name, value] : request.headers) {
    if (!http::IsHopByHop(name)) out.headers.emplace(name, value);
  }
  out.body = request.body;
  bool changed = false;
  if (route == BlockRoute::kProduceBlockV3) {
    const size_t question = request.target.find('?');
    const std::string query =
        question == std::string::npos ? "" : request.target.substr(question + 1);
    const std::string rewritten = RewriteProduceBlockV3Query(query, mode);
    changed = rewritten != query;
    out.path = absl::StrCat(options_.beacon_node_path_prefix, request.path, "?", rewritten);
  } else if (route == BlockRoute::kProduceBlockV4) {
    const V4Rewrite rewrite =
        RewriteProduceBlockV4(request.body, request.get_header_value("Content-Type"),
                              RulesOf(snapshot->policy, options_.own_ports));
    changed = rewrite.changed;
    if (rewrite.changed) out.body = rewrite.body;
    {
      MutexLock lock(&mu_);
      counters_.entries_malformed += rewrite.malformed;
      counters_.entries_refused += rewrite.refused;
      counters_.keys_dropped += rewrite.keys_dropped;
      if (rewrite.unreadable) ++counters_.unreadable_by_mode[ModeIndex(mode)];
    }
    if (rewrite.unreadable) {
      LOG(WARNING) << "produceBlockV4 " << request.path << ": the body cannot be read ("
                   << rewrite.error << "); "
                   << (rewrite.changed ? "replaced by the self-build config"
                                       : "forwarded untouched")
                   << " under policy version " << snapshot->policy.version << " ("
                   << core::ModeName(mode) << ")";
    } else {
      LOG(INFO) << "produceBlockV4 " << request.path << " under policy version "
                << snapshot->policy.version << " (" << core::ModeName(mode) << "): " << rewrite.kept
                << " of " << rewrite.entries << " builder entries kept, " << rewrite.refused
                << " refused, " << rewrite.malformed << " malformed, " << rewrite.keys_dropped
                << " keys dropped";
    }
  }
  if (route == BlockRoute::kProduceBlockV3 && changed) {
    LOG(INFO) << "produceBlockV3 " << request.path << " under policy version "
              << snapshot->policy.version << " (" << core::ModeName(mode)
              << "): builder_boost_factor=0";
  }

  const bool event_stream = request.path == "/eth/v1/events";
  std::shared_ptr<Exchange> exchange;
  {
    // In flight from here, so that Stop() ends it; none starts once Stop() has begun.
    MutexLock lock(&mu_);
    ++counters_.requests;
    if (changed) ++counters_.rewritten_by_mode[ModeIndex(mode)];
    if (!stopping_) {
      exchange = std::make_shared<Exchange>(options_, connections_, std::move(out), event_stream);
      in_flight_.insert(exchange.get());
      if (exchange->reused()) ++counters_.node_connections_reused;
    }
  }
  if (exchange == nullptr) {
    response.status = 503;
    response.set_content(http::ErrorBody(503, "breaker-sidecar is stopping"), "application/json");
    return;
  }
  auto release = [this, exchange](bool) {
    exchange->Cancel();
    MutexLock lock(&mu_);
    in_flight_.erase(exchange.get());
  };
  if (!exchange->WaitForHead(options_.connect_timeout + options_.answer_timeout)) {
    const std::string error = exchange->error();
    const bool unreachable = exchange->unreachable();
    release(false);
    response.status = unreachable ? 503 : 504;
    const std::string message =
        unreachable
            ? absl::StrCat("the beacon node at ", options_.beacon_node_url, " cannot be reached (",
                           error, "); use the next beacon node")
            : absl::StrCat("the beacon node at ", options_.beacon_node_url, " sent no answer in ",
                           absl::FormatDuration(options_.answer_timeout));
    LOG(WARNING) << request.method << " " << request.path << ": " << message;
    response.set_content(http::ErrorBody(response.status, message), "application/json");
    MutexLock lock(&mu_);
    ++counters_.beacon_node_unreachable;
    return;
  }

  response.status = exchange->status();
  const httplib::Headers headers = exchange->headers();
  std::string content_type;
  std::optional<size_t> length;
  for (const auto& [name, value] : headers) {
    if (absl::EqualsIgnoreCase(name, "Content-Type")) content_type = value;
    size_t parsed = 0;
    if (absl::EqualsIgnoreCase(name, "Content-Length") && absl::SimpleAtoi(value, &parsed)) {
      length = parsed;
    }
    if (!http::IsHopByHop(name) && !absl::EqualsIgnoreCase(name, "Content-Type")) {
      response.headers.emplace(name, value);
    }
  }

  const bool produced = route != BlockRoute::kOther && response.status == 200;
  bool report_win = false;
  std::string winner_url;
  if (produced) {
    const BlockOutcome outcome =
        ReadBlockOutcome(route, IncludePayload(request), [&](absl::string_view name) {
          for (const auto& [key, value] : headers) {
            if (absl::EqualsIgnoreCase(key, name)) return value;
          }
          return std::string();
        });
    LOG(INFO) << "block of " << request.path << " under policy version " << snapshot->policy.version
              << " (" << core::ModeName(mode) << ") from " << PayloadSourceName(outcome.source)
              << (outcome.builder_url.empty() ? "" : absl::StrCat(" ", outcome.builder_url))
              << ", payload value " << outcome.payload_value << " Wei, consensus value "
              << outcome.consensus_value << " Wei";
    MutexLock lock(&mu_);
    ++counters_.blocks_by_mode_and_source[ModeIndex(mode)][static_cast<size_t>(outcome.source)];
    report_win =
        route == BlockRoute::kProduceBlockV4 && outcome.source == PayloadSource::kBuilderApi;
    winner_url = outcome.builder_url;
  }

  if (response.status == 204 || response.status == 304 || (length.has_value() && *length == 0)) {
    if (!content_type.empty()) response.set_header("Content-Type", content_type);
    release(true);
    return;
  }
  // A builder-API win of produceBlockV4 is reported once its body has passed: the bid in the
  // block names the builder.
  auto body = std::make_shared<std::string>();
  const core::Slot slot = SlotOfPath(request.path);
  // Streams what has come; false when the body ended early or the caller went.
  auto stream = [this, exchange, report_win, body](httplib::DataSink& sink, bool* wrote) {
    std::string chunk;
    bool failed = false;
    while (exchange->Next(&chunk, &failed)) {
      if (report_win && body->size() + chunk.size() <= options_.max_body_bytes) *body += chunk;
      if (!sink.write(chunk.data(), chunk.size())) return false;
      *wrote = true;
    }
    return !failed;
  };
  auto report = [this, report_win, body, slot, content_type, winner_url] {
    if (report_win) ReportWin(*body, content_type, winner_url, slot);
  };
  if (length.has_value()) {
    response.set_content_provider(
        *length, content_type.c_str(),
        [stream, report](size_t, size_t, httplib::DataSink& sink) {
          bool wrote = false;
          // Called again only when the body was shorter than its Content-Length.
          if (!stream(sink, &wrote) || !wrote) return false;
          report();
          return true;
        },
        release);
  } else {
    response.set_chunked_content_provider(
        content_type.c_str(),
        [stream, report](size_t, httplib::DataSink& sink) {
          bool wrote = false;
          if (!stream(sink, &wrote)) return false;
          report();
          sink.done();
          return true;
        },
        release);
  }
}

void ValidatorPort::ReportWin(const std::string& body, const std::string& content_type,
                              const std::string& builder_url, core::Slot slot) {
  absl::StatusOr<std::string> relay = core::NormalizeRelayId(builder_url);
  // The sidecar's own builder-API port saw the bid and reported it.
  if (relay.ok() && options_.own_ports.contains(*relay)) return;
  const absl::StatusOr<core::BuilderIndex> builder =
      WinningBuilder(body, content_type, options_.preset());
  if (!relay.ok() || !builder.ok()) {
    LOG(WARNING) << "the builder-API bid that won slot " << slot << " through " << builder_url
                 << " cannot be reported: "
                 << (relay.ok() ? absl::StrCat("its builder index is not read from the answer: ",
                                               builder.status().message())
                                : relay.status().message());
    MutexLock lock(&mu_);
    ++counters_.bids_unreported;
    return;
  }
  if (absl::Status reported = client_.Report(slot, core::BidSeen{*builder, *relay, ""});
      !reported.ok()) {
    LOG(WARNING) << "the builder-API bid that won slot " << slot << " through " << builder_url
                 << " is refused by the client library: " << reported.message();
    MutexLock lock(&mu_);
    ++counters_.bids_unreported;
    return;
  }
  MutexLock lock(&mu_);
  ++counters_.bids_reported;
}

}  // namespace breaker::sidecar::validator
