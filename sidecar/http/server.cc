#include "sidecar/http/server.h"

#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "absl/memory/memory.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "glog/logging.h"
#include "sidecar/http/error_body.h"

namespace breaker::sidecar::http {
namespace {

// What the server keeps of one request, from its request line to its end.
struct Call {
  Request request;
  bool headers_read = false;
  // The handler ran: the answer is the caller's to receive.
  bool answered = false;
};

MHD_Result AddHeader(void* headers, MHD_ValueKind, const char* name, size_t name_size,
                     const char* value, size_t value_size) {
  static_cast<std::vector<std::pair<std::string, std::string>>*>(headers)->emplace_back(
      std::string(name, name_size),
      value == nullptr ? std::string() : std::string(value, value_size));
  return MHD_YES;
}

// Queues `response`, its body handed over without a copy.
MHD_Result Queue(MHD_Connection* connection, Response response) {
  auto* body = new std::string(std::move(response.body));
  MHD_Response* out = MHD_create_response_from_buffer_with_free_callback_cls(
      body->size(), body->data(), [](void* owned) { delete static_cast<std::string*>(owned); },
      body);
  if (out == nullptr) {
    delete body;
    return MHD_NO;
  }
  for (const auto& [name, value] : response.headers) {
    // Refused: a name or value with a line break, or one the library sets itself.
    if (MHD_add_response_header(out, name.c_str(), value.c_str()) == MHD_NO) {
      LOG_EVERY_N(WARNING, 100) << "an answer's header " << name << " cannot be sent; left out";
    }
  }
  const MHD_Result queued =
      MHD_queue_response(connection, static_cast<unsigned int>(response.status), out);
  MHD_destroy_response(out);
  return queued;
}

MHD_Result TooLarge(MHD_Connection* connection, size_t limit) {
  Response response;
  response.status = 413;
  response.headers.emplace_back("Content-Type", "application/json");
  response.body = ErrorBody(
      413, absl::StrCat("the request body is larger than max_body_bytes (", limit, " bytes)"));
  return Queue(connection, std::move(response));
}

}  // namespace

std::string Request::header(absl::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (absl::EqualsIgnoreCase(key, name)) return value;
  }
  return std::string();
}

struct ServerCallbacks {
  // Called once per request, with its target as sent, before the library decodes it.
  static void* OnRequestLine(void*, const char* uri, MHD_Connection*) {
    auto* call = new Call;
    call->request.target = uri;
    return call;
  }

  static MHD_Result OnRequest(void* self, MHD_Connection* connection, const char* url,
                              const char* method, const char*, const char* upload_data,
                              size_t* upload_data_size, void** context) {
    Server& server = *static_cast<Server*>(self);
    Call& call = *static_cast<Call*>(*context);
    Request& request = call.request;
    const size_t limit = server.options_.max_body_bytes;
    if (!call.headers_read) {
      call.headers_read = true;
      request.method = method;
      request.path = url;
      MHD_get_connection_values_n(connection, MHD_HEADER_KIND, &AddHeader, &request.headers);
      uint64_t length = 0;
      if (absl::SimpleAtoi(request.header("Content-Length"), &length) && length > limit) {
        return TooLarge(connection, limit);
      }
      return MHD_YES;
    }
    if (*upload_data_size > 0) {
      // Only a chunked body can grow past its Content-Length check; the library cannot answer
      // in the middle of a body, so the connection is closed.
      if (request.body.size() + *upload_data_size > limit) {
        LOG_EVERY_N(WARNING, 100) << request.method << " " << request.path
                                  << ": a chunked request body past max_body_bytes (" << limit
                                  << " bytes); the connection is closed";
        return MHD_NO;
      }
      request.body.append(upload_data, *upload_data_size);
      *upload_data_size = 0;
      return MHD_YES;
    }
    return Answer(server, connection, call);
  }

  // Runs the handler on the whole request and queues its answer.
  static MHD_Result Answer(Server& server, MHD_Connection* connection, Call& call) {
    {
      MutexLock lock(&server.mu_);
      ++server.answering_;
    }
    call.answered = true;
    Response response;
    server.handler_(call.request, response);
    return Queue(connection, std::move(response));
  }

  static void OnCompleted(void* self, MHD_Connection*, void** context, MHD_RequestTerminationCode) {
    auto* call = static_cast<Call*>(*context);
    *context = nullptr;
    if (call == nullptr) return;
    if (call->answered) {
      Server& server = *static_cast<Server*>(self);
      MutexLock lock(&server.mu_);
      if (--server.answering_ == 0) server.answered_.SignalAll();
    }
    delete call;
  }

  static void Log(void*, const char* format, va_list arguments) {
    char line[512];
    std::vsnprintf(line, sizeof(line), format, arguments);
    absl::string_view text(line);
    absl::ConsumeSuffix(&text, "\n");
    LOG_EVERY_N(WARNING, 100) << "HTTP server: " << text;
  }
};

absl::StatusOr<std::pair<int, int>> BindOwnSocket(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int resolved = ::getaddrinfo(host.empty() ? nullptr : host.c_str(),
                                     std::to_string(port).c_str(), &hints, &found);
  if (resolved != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve ", host, ": ", ::gai_strerror(resolved)));
  }
  std::string error = "no address";
  int bound = -1;
  for (addrinfo* address = found; address != nullptr && bound < 0; address = address->ai_next) {
    const int fd =
        ::socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC, address->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd, address->ai_addr, address->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      error = std::strerror(errno);
      ::close(fd);
      continue;
    }
    bound = fd;
  }
  ::freeaddrinfo(found);
  if (bound < 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", host, ":", port, ": ", error));
  }
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  ::getsockname(bound, reinterpret_cast<sockaddr*>(&local), &length);
  const int bound_port = local.ss_family == AF_INET6
                             ? ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port)
                             : ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port);
  return std::make_pair(bound, bound_port);
}

Server::Server(const ServerOptions& options, Handler handler, int port)
    : options_(options), handler_(std::move(handler)), port_(port) {}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options,
                                                      Handler handler) {
  absl::StatusOr<std::pair<int, int>> socket = BindOwnSocket(options.host, options.port);
  if (!socket.ok()) return socket.status();
  const auto [fd, port] = *socket;
  auto server = absl::WrapUnique(new Server(options, std::move(handler), port));
  const auto timeout_seconds =
      static_cast<unsigned int>(std::max<int64_t>(1, absl::ToInt64Seconds(options.timeout)));
  // A thread per connection, waiting with poll() (select() cannot see descriptors past 1024)
  // on its socket and on the channel a stop wakes it by.
  server->daemon_ = MHD_start_daemon(
      MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
          MHD_USE_ERROR_LOG,
      0, nullptr, nullptr, &ServerCallbacks::OnRequest, server.get(),
      // First, so that the library's every message (those about the options too) reaches the log.
      MHD_OPTION_EXTERNAL_LOGGER, &ServerCallbacks::Log, server.get(), MHD_OPTION_LISTEN_SOCKET,
      static_cast<MHD_socket>(fd), MHD_OPTION_CONNECTION_LIMIT,
      static_cast<unsigned int>(options.max_connections), MHD_OPTION_CONNECTION_TIMEOUT,
      timeout_seconds, MHD_OPTION_URI_LOG_CALLBACK, &ServerCallbacks::OnRequestLine, server.get(),
      MHD_OPTION_NOTIFY_COMPLETED, &ServerCallbacks::OnCompleted, server.get(),
      // Refuses what HTTP/1.1 forbids (a space in the target, a header line without a colon)
      // rather than guessing.
      MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_END);
  if (server->daemon_ == nullptr) {
    ::close(fd);
    return absl::InternalError(absl::StrCat("cannot start the HTTP server on ", options.host, ":",
                                            port, " (see the log above)"));
  }
  return server;
}

Server::~Server() { Stop(); }

void Server::StopAccepting() {
  {
    MutexLock lock(&mu_);
    // A server whose library failed to start has nothing to stop.
    if (!accepting_ || daemon_ == nullptr) return;
    accepting_ = false;
  }
  const MHD_socket listening = MHD_quiesce_daemon(daemon_);
  if (listening != MHD_INVALID_SOCKET) {
    // The polling thread may still hold the socket in a poll() it has not woken from yet;
    // shutting it down ends its listening now, whoever holds it.
    ::shutdown(listening, SHUT_RDWR);
    ::close(listening);
  }
}

void Server::Stop() {
  StopAccepting();
  {
    MutexLock lock(&mu_);
    if (stopped_ || daemon_ == nullptr) return;
    stopped_ = true;
    // An answer handed to the library is the caller's: it leaves before the connections close,
    // unless the caller stopped reading.
    answered_.Await(&mu_, options_.timeout,
                    [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return answering_ == 0; });
  }
  MHD_stop_daemon(daemon_);
}

}  // namespace breaker::sidecar::http
