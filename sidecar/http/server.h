#ifndef SIDECAR_HTTP_SERVER_H_
#define SIDECAR_HTTP_SERVER_H_

// An HTTP/1.1 server for one of the sidecar's own ports, on libmicrohttpd: each open connection
// is served on a thread of its own (so that an idle or slow one holds up nothing else), up to a
// bound. The handler sees a whole request and returns a whole answer.
//
// Why libmicrohttpd rather than cpp-httplib's server, on the builder API's ports, where every
// microsecond is the proposer's: between two requests on a kept-alive connection cpp-httplib
// 0.11 polls in 10 ms slices with a 1 ms sleep between them (a request that comes during the
// sleep waits for its end), it writes an answer's head and body in two sends (the caller wakes
// twice), and at a stop an idle kept-alive connection holds its thread until its keep-alive
// timeout. libmicrohttpd waits on the socket alone, sends head and body in one call, and ends
// idle connections at once when stopped; its request parser is fuzzed upstream.
//
// The port is the sidecar's alone (BindOwnSocket): never SO_REUSEPORT, a backlog of SOMAXCONN.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/mutex.h"

struct MHD_Daemon;

namespace breaker::sidecar::http {

struct Request {
  std::string method;
  // The request target as sent: the path, percent-encoded as it came, and the query.
  std::string target;
  // The path percent-decoded and without the query: what routes are matched on.
  std::string path;
  // Every header line as received, in order.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // The first value of header `name` (any letter case), or "" when there is none.
  std::string header(absl::string_view name) const;
};

struct Response {
  int status = 200;
  // Sent as given, but for names or values a header line cannot carry (the server sets
  // Content-Length, Date and Connection itself).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// Answers one request. Called on the connection's thread; it may block (the thread is the
// connection's alone) and must be thread-safe.
using Handler = std::function<void(const Request& request, Response& response)>;

struct ServerOptions {
  // Where to listen: a host name or address of this host, and a port (0: one the kernel picks).
  std::string host;
  int port = 0;
  // Connections served at once; past it a new connection is closed at once.
  size_t max_connections = 1024;
  // A request whose body is larger is answered 413 before its body is read (by its
  // Content-Length) or as soon as it grows past (chunked), and its connection closed.
  size_t max_body_bytes = 0;
  // A connection with nothing received or sent for this long is closed: a caller that stalls
  // mid-request, or a kept-alive connection idle between requests. Whole seconds, at least one.
  absl::Duration timeout = absl::Seconds(5);
};

class Server {
 public:
  // Binds options.host:options.port and serves it. Returns UNAVAILABLE when the port cannot
  // be bound (taken, or the address is not this host's) and INTERNAL when the server cannot
  // start; nothing is served then.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options,
                                                       Handler handler);

  // Stop().
  ~Server();

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The port bound.
  int port() const { return port_; }

  // Closes the port: new connections are refused, requests on open connections are still
  // served. Idempotent.
  void StopAccepting();

  // StopAccepting(), then waits (for at most the options' timeout) until every request whose
  // handler ran has its answer sent, then closes every connection, idle ones included, and
  // returns once no thread of the server is left. Idempotent.
  void Stop();

 private:
  // libmicrohttpd's callbacks (server.cc), which keep its types out of this header.
  friend struct ServerCallbacks;

  Server(const ServerOptions& options, Handler handler, int port);

  const ServerOptions options_;
  const Handler handler_;
  const int port_;
  MHD_Daemon* daemon_ = nullptr;

  Mutex mu_;
  CondVar answered_;
  // Requests whose handler ran and whose answer is not yet sent (or abandoned).
  int answering_ ABSL_GUARDED_BY(mu_) = 0;
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

// A socket bound to `host`:`port` (0: a port of the kernel's choice) and listening, as a port
// of the sidecar's own: SO_REUSEADDR (a restart may take a port whose old connections linger)
// but never SO_REUSEPORT (which would let two processes share the port and split its requests
// between them), and a listen backlog of SOMAXCONN (past the backlog the kernel drops a new
// connection's SYN, and its connect waits a second for the resend). Returns the socket and the
// port bound, or UNAVAILABLE naming why.
absl::StatusOr<std::pair<int, int>> BindOwnSocket(const std::string& host, int port);

}  // namespace breaker::sidecar::http

#endif  // SIDECAR_HTTP_SERVER_H_
