#include "sidecar/http/connection_threads.h"

#include <sys/socket.h>

#include <utility>

#include "glog/logging.h"

namespace breaker::sidecar::http {

ConnectionThreads::ConnectionThreads(size_t max_threads) : max_threads_(max_threads) {
  CHECK_GT(max_threads, 0u);
}

ConnectionThreads::~ConnectionThreads() { shutdown(); }

void ConnectionThreads::enqueue(std::function<void()> connection) {
  MutexLock lock(&mu_);
  connections_.push_back(std::move(connection));
  // Idle threads already woken have not taken theirs yet: one more thread is needed when the
  // connections waiting outnumber the idle threads.
  if (connections_.size() > idle_ && threads_.size() < max_threads_) {
    threads_.emplace_back([this] { Work(); });
  } else {
    work_.Signal();
  }
}

void ConnectionThreads::shutdown() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(&mu_);
    shutting_down_ = true;
    threads.swap(threads_);
  }
  work_.SignalAll();
  for (std::thread& thread : threads) thread.join();
}

size_t ConnectionThreads::threads() const {
  MutexLock lock(&mu_);
  return threads_.size();
}

void ConnectionThreads::Work() {
  mu_.Lock();
  while (true) {
    ++idle_;
    while (connections_.empty() && !shutting_down_) work_.Wait(&mu_);
    --idle_;
    if (connections_.empty()) break;  // Shutting down, and nothing left to serve.
    std::function<void()> connection = std::move(connections_.front());
    connections_.pop_front();
    mu_.Unlock();
    connection();
    mu_.Lock();
  }
  mu_.Unlock();
}

void ServeEachConnectionOnItsOwnThread(httplib::Server& server, size_t max_threads) {
  server.new_task_queue = [max_threads] { return new ConnectionThreads(max_threads); };
}

namespace {

void ReuseAddressOnly(socket_t sock) {
  int yes = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

}  // namespace

int BindOwnPort(httplib::Server& server, const std::string& host, int port,
                size_t max_connections) {
  ServeEachConnectionOnItsOwnThread(server, max_connections);
  // The options callback sees each socket tried; the last is the one bound.
  socket_t bound_socket = INVALID_SOCKET;
  server.set_socket_options([&bound_socket](socket_t sock) {
    ReuseAddressOnly(sock);
    bound_socket = sock;
  });
  const int bound = port == 0                         ? server.bind_to_any_port(host)
                    : server.bind_to_port(host, port) ? port
                                                      : -1;
  // The library keeps the callback; it must not keep a reference to this frame.
  server.set_socket_options(ReuseAddressOnly);
  // Linux takes a second listen() on a listening socket as its new backlog.
  if (bound > 0 && ::listen(bound_socket, SOMAXCONN) != 0) {
    PLOG(WARNING) << "cannot raise the listen backlog of " << host << ":" << bound;
  }
  return bound;
}

}  // namespace breaker::sidecar::http
