#ifndef SIDECAR_HTTP_CONNECTION_THREADS_H_
#define SIDECAR_HTTP_CONNECTION_THREADS_H_

// The threads that serve an HTTP port's connections (cpp-httplib's TaskQueue): one thread per
// open connection, up to a bound, made as connections come and kept for the next ones.
//
// cpp-httplib's own pool has a fixed few threads (8 here), and a connection holds its thread
// for as long as it stays open: reading a request, or waiting for the next one on a kept-alive
// connection. A few idle or slow connections (a slowloris, or a client that keeps many
// connections open) then left every later request waiting for a thread. With a thread per
// connection, one that is idle or slow holds up nothing but itself; past `max_threads`
// connections, new ones wait for a thread as before.

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "httplib.h"

namespace breaker::sidecar::http {

// This class is thread-safe.
class ConnectionThreads : public httplib::TaskQueue {
 public:
  // REQUIRES: max_threads > 0.
  explicit ConnectionThreads(size_t max_threads);
  ~ConnectionThreads() override;

  ConnectionThreads(const ConnectionThreads&) = delete;
  ConnectionThreads& operator=(const ConnectionThreads&) = delete;

  // Runs `connection` on an idle thread, or a new one when none is idle and fewer than
  // max_threads exist; otherwise when a thread is free.
  void enqueue(std::function<void()> connection) override;
  // Runs what was enqueued, then joins every thread. Idempotent.
  void shutdown() override;

  // Threads made so far (at most max_threads).
  size_t threads() const;

 private:
  void Work();

  const size_t max_threads_;
  mutable Mutex mu_;
  CondVar work_;
  std::deque<std::function<void()>> connections_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  size_t idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
};

// Makes `server` serve each connection on a thread of its own, at most `max_threads` at once.
void ServeEachConnectionOnItsOwnThread(httplib::Server& server, size_t max_threads);

// Binds `server` to `host`:`port` (0: a port of the kernel's choice) as a port of the sidecar's
// own, and returns the port bound, or -1 when it cannot be bound:
//   - SO_REUSEADDR (a restart may take a port whose old connections linger), never
//     SO_REUSEPORT, which cpp-httplib sets by default and which lets two processes share a
//     port, splitting its requests between them;
//   - a listen backlog of SOMAXCONN, not the library's 5 (fixed in Debian's build): past it the
//     kernel drops a new connection's SYN, and its connect waits a second for the resend;
//   - each connection served on its own thread (ServeEachConnectionOnItsOwnThread), at most
//     `max_connections` at once.
// REQUIRES: called once, before `server` listens.
int BindOwnPort(httplib::Server& server, const std::string& host, int port, size_t max_connections);

}  // namespace breaker::sidecar::http

#endif  // SIDECAR_HTTP_CONNECTION_THREADS_H_
