#include "sidecar/http/connection_threads.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace breaker::sidecar::http {
namespace {

// A socket connected to 127.0.0.1:`port` that sends `bytes` and then nothing.
int Connect(int port, const std::string& bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  if (!bytes.empty()) {
    EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  return fd;
}

class ServerOnConnectionThreads {
 public:
  explicit ServerOnConnectionThreads(bool own_threads) {
    if (own_threads) {
      port_ = BindOwnPort(server_, "127.0.0.1", 0, 256);
    } else {
      port_ = server_.bind_to_any_port("127.0.0.1");
    }
    // A silent connection is given all this long: longer than the client below waits.
    server_.set_read_timeout(60, 0);
    server_.set_keep_alive_timeout(60);
    server_.Get("/", [](const httplib::Request&, httplib::Response& response) {
      response.set_content("ok", "text/plain");
    });
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~ServerOnConnectionThreads() {
    for (int fd : idle_) close(fd);
    server_.stop();
    thread_.join();
  }

  // Opens `n` connections: half idle, half with half a request.
  void HoldConnections(int n) {
    for (int i = 0; i < n; ++i) {
      idle_.push_back(Connect(port_, i % 2 == 1 ? "GET / HTTP/1.1\r\n" : ""));
    }
  }

  // Whether a GET on a new connection is answered within `seconds`.
  bool Answers(int seconds) {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(seconds, 0);
    client.set_read_timeout(seconds, 0);
    const httplib::Result result = client.Get("/");
    return result && result->status == 200 && result->body == "ok";
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::vector<int> idle_;
};

TEST(ConnectionThreadsTest, IdleAndHalfSentConnectionsHoldUpNoOtherRequest) {
  ServerOnConnectionThreads server(/*own_threads=*/true);
  server.HoldConnections(200);
  EXPECT_TRUE(server.Answers(/*seconds=*/10));  // generous: only a stalled server misses it
}

// What the test above guards against: cpp-httplib's own pool of a few threads, each held by one
// silent connection, leaves a new request unanswered.
TEST(ConnectionThreadsTest, TheLibrarysOwnPoolIsHeldUpByAFewIdleConnections) {
  ServerOnConnectionThreads server(/*own_threads=*/false);
  server.HoldConnections(2 * CPPHTTPLIB_THREAD_POOL_COUNT);
  EXPECT_FALSE(server.Answers(/*seconds=*/2));  // the silent connections hold theirs for 60 s
}

TEST(BindOwnPortTest, ASecondServerCannotShareThePort) {
  httplib::Server first;
  const int port = BindOwnPort(first, "127.0.0.1", 0, 4);
  ASSERT_GT(port, 0);
  httplib::Server second;
  EXPECT_EQ(BindOwnPort(second, "127.0.0.1", port, 4), -1);
}

TEST(ConnectionThreadsTest, MakesThreadsAsNeededUpToTheBoundAndRunsEverythingEnqueued) {
  std::atomic<int> ran{0};
  std::atomic<bool> release{false};
  {
    ConnectionThreads threads(3);
    for (int i = 0; i < 5; ++i) {
      threads.enqueue([&] {
        while (!release.load()) std::this_thread::yield();
        ++ran;
      });
    }
    EXPECT_EQ(threads.threads(), 3u);
    release = true;
    threads.shutdown();
    EXPECT_EQ(ran.load(), 5);
  }
}

TEST(ConnectionThreadsTest, AnIdleThreadIsReusedRatherThanANewOneMade) {
  ConnectionThreads threads(8);
  std::atomic<int> ran{0};
  for (int i = 0; i < 4; ++i) {
    threads.enqueue([&] { ++ran; });
    while (ran.load() != i + 1) std::this_thread::yield();
  }
  EXPECT_EQ(threads.threads(), 1u);
}

}  // namespace
}  // namespace breaker::sidecar::http
