// The upstream pool against real servers on loopback: plain HTTP, TLS behind the tests' own CA
// (tools/make_test_certs.sh), mutual TLS, and a raw server that closes connections where a
// test wants it. Connections are counted where the server accepts them.

#include "sidecar/builder/upstream_pool.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/fake_clock.h"
#include "common/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/support/status_matchers.h"
#include "tests/support/tcp_proxy.h"
#include "tests/support/test_util.h"

namespace breaker::sidecar {
namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::WaitFor;
using ::testing::HasSubstr;

constexpr char kTls[] = "tests/support/testdata/tls/";
constexpr absl::Duration kBudget = absl::Seconds(10);

std::string Tls(absl::string_view file) { return absl::StrCat(kTls, file); }

// Every path but those under /x/, which tests serve themselves.
constexpr char kGeneric[] = R"(^(?!/x/).*)";

// An httplib server (plain, TLS, or mutual TLS) on a loopback port, behind a TcpProxy that counts
// the connections it accepts.
class TestServer {
 public:
  static std::unique_ptr<TestServer> Plain() {
    return std::unique_ptr<TestServer>(new TestServer(std::make_unique<httplib::Server>()));
  }
  // `certificate`: the server's, "server" (for localhost and 127.0.0.1) or another of the
  // fixtures.
  static std::unique_ptr<TestServer> WithTls(bool require_client_certificate,
                                             absl::string_view certificate = "server") {
    const std::string pem = Tls(absl::StrCat(certificate, ".pem"));
    const std::string key = Tls(absl::StrCat(certificate, ".key"));
    auto server =
        require_client_certificate
            ? std::make_unique<httplib::SSLServer>(pem.c_str(), key.c_str(), Tls("ca.pem").c_str())
            : std::make_unique<httplib::SSLServer>(pem.c_str(), key.c_str());
    return std::unique_ptr<TestServer>(new TestServer(std::move(server)));
  }

  ~TestServer() {
    server_->stop();
    thread_.join();
  }

  // Connections accepted so far.
  int64_t connections() const { return proxy_->forwarded(); }
  int requests() const { return requests_.load(); }
  httplib::Server& server() { return *server_; }
  // "127.0.0.1:PORT" of the counting proxy; "localhost" is in the test certificate too.
  std::string address(absl::string_view host = "127.0.0.1") const {
    return absl::StrCat(host, ":", proxy_->port());
  }

 private:
  explicit TestServer(std::unique_ptr<httplib::Server> server) : server_(std::move(server)) {
    server_->set_keep_alive_timeout(30);
    server_->set_keep_alive_max_count(1000);
    server_->set_tcp_nodelay(true);
    server_->Get(kGeneric, [this](const httplib::Request& request, httplib::Response& response) {
      ++requests_;
      response.set_content(absl::StrCat("answer to ", request.path), "text/plain");
    });
    server_->Post(kGeneric, [this](const httplib::Request& request, httplib::Response& response) {
      ++requests_;
      response.set_content(request.body, "application/json");
    });
    const int port = server_->bind_to_any_port("127.0.0.1");
    EXPECT_GT(port, 0);
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    absl::StatusOr<std::unique_ptr<testing::TcpProxy>> proxy = testing::TcpProxy::Start(port);
    EXPECT_THAT(proxy.status(), IsOk());
    proxy_ = *std::move(proxy);
  }

  std::unique_ptr<httplib::Server> server_;
  std::unique_ptr<testing::TcpProxy> proxy_;
  std::thread thread_;
  std::atomic<int> requests_{0};
};

// A raw HTTP/1.1 server: it reads each request whole, then answers "200 ok" and keeps the
// connection, except for the requests `drop` names (counted from 1 over all connections),
// after which it closes the connection without a word.
class DroppingServer {
 public:
  explicit DroppingServer(std::vector<int> drop) : drop_(std::move(drop)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(listen(listen_fd_, 8), 0);
    socklen_t length = sizeof(address);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~DroppingServer() {
    shutdown(listen_fd_, SHUT_RDWR);
    close(listen_fd_);
    thread_.join();
  }

  int port() const { return port_; }
  int requests() const { return requests_.load(); }
  int connections() const { return connections_.load(); }

 private:
  void Run() {
    while (true) {
      const int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      ++connections_;
      Serve(fd);
      close(fd);
    }
  }

  // One connection, until the peer closes it or a request is dropped.
  void Serve(int fd) {
    std::string buffer;
    char chunk[4096];
    while (true) {
      size_t head_end;
      while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0) return;
        buffer.append(chunk, static_cast<size_t>(n));
      }
      size_t body_length = 0;
      const size_t at = buffer.find("Content-Length: ");
      if (at != std::string::npos && at < head_end) {
        const size_t end = buffer.find("\r\n", at);
        EXPECT_TRUE(absl::SimpleAtoi(buffer.substr(at + 16, end - at - 16), &body_length));
      }
      while (buffer.size() < head_end + 4 + body_length) {
        const ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0) return;
        buffer.append(chunk, static_cast<size_t>(n));
      }
      buffer.erase(0, head_end + 4 + body_length);
      const int number = ++requests_;
      if (std::find(drop_.begin(), drop_.end(), number) != drop_.end()) return;
      const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
      if (send(fd, answer.data(), answer.size(), MSG_NOSIGNAL) < 0) return;
    }
  }

  const std::vector<int> drop_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

class UpstreamPoolTest : public ::testing::Test {
 protected:
  std::unique_ptr<UpstreamPool> MakePool(UpstreamPoolOptions options) {
    absl::StatusOr<std::unique_ptr<UpstreamPool>> pool =
        UpstreamPool::Create(std::move(options), clock_);
    EXPECT_THAT(pool.status(), IsOk());
    return pool.ok() ? *std::move(pool) : nullptr;
  }
  static UpstreamPoolOptions Options(std::string scheme_host_port) {
    UpstreamPoolOptions options;
    options.scheme_host_port = std::move(scheme_host_port);
    options.name = options.scheme_host_port;
    return options;
  }
  static UpstreamRequest Get(std::string target) {
    UpstreamRequest request;
    request.method = "GET";
    request.target = std::move(target);
    return request;
  }

  testing::FakeClock clock_{absl::FromUnixSeconds(1700000000)};
};

TEST_F(UpstreamPoolTest, ReusesOneConnectionForRequestsInTurn) {
  auto server = TestServer::Plain();
  auto pool = MakePool(Options(absl::StrCat("http://", server->address())));
  for (int i = 0; i < 10; ++i) {
    const UpstreamAnswer answer =
        pool->Send(Get(absl::StrCat("/eth/v1/builder/status?i=", i)), kBudget);
    ASSERT_TRUE(answer.ok()) << answer.error;
    EXPECT_EQ(answer.status, 200);
    EXPECT_EQ(answer.body, absl::StrCat("answer to /eth/v1/builder/status"));
    EXPECT_EQ(answer.reused_connection, i > 0);
  }
  EXPECT_EQ(server->connections(), 1);
  const UpstreamPoolStats stats = pool->stats();
  EXPECT_EQ(stats.hits, 9u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.idle_connections, 1u);
}

TEST_F(UpstreamPoolTest, KeepsAtMostMaxIdleConnections) {
  auto server = TestServer::Plain();
  UpstreamPoolOptions options = Options(absl::StrCat("http://", server->address()));
  options.max_idle_connections = 2;
  auto pool = MakePool(std::move(options));
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] { EXPECT_TRUE(pool->Send(Get("/"), kBudget).ok()); });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_LE(pool->stats().idle_connections, 2u);
}

TEST_F(UpstreamPoolTest, ForwardsTheBodyAndHeadersAsGiven) {
  auto server = TestServer::Plain();
  std::string content_type;
  std::string accept;
  server->server().Post("/x/echo",
                        [&](const httplib::Request& request, httplib::Response& response) {
                          content_type = request.get_header_value("Content-Type");
                          accept = request.get_header_value("Accept");
                          response.set_content(request.body, "application/json");
                        });
  auto pool = MakePool(Options(absl::StrCat("http://", server->address())));
  UpstreamRequest request;
  request.method = "POST";
  request.target = "/x/echo";
  request.body = std::string(200000, 'x');  // Larger than one write, and than Expect's limit.
  request.headers = {{"Content-Type", "application/json"}, {"Eth-Consensus-Version", "deneb"}};
  const UpstreamAnswer answer = pool->Send(request, kBudget);
  ASSERT_TRUE(answer.ok()) << answer.error;
  EXPECT_EQ(answer.body, request.body);
  EXPECT_EQ(content_type, "application/json");
  // None of libcurl's own: the node sent no Accept.
  EXPECT_EQ(accept, "");
}

TEST_F(UpstreamPoolTest, RefusesAnAnswerOverMaxBodyBytes) {
  auto server = TestServer::Plain();
  UpstreamPoolOptions options = Options(absl::StrCat("http://", server->address()));
  options.max_body_bytes = 8;
  auto pool = MakePool(std::move(options));
  const UpstreamAnswer answer = pool->Send(Get("/long/enough"), kBudget);
  EXPECT_EQ(answer.failure, UpstreamAnswer::Failure::kTooLarge);
}

TEST_F(UpstreamPoolTest, TlsWithTheUpstreamsOwnCaReusesOneHandshake) {
  auto server = TestServer::WithTls(/*require_client_certificate=*/false);
  UpstreamPoolOptions options = Options(absl::StrCat("https://", server->address("localhost")));
  options.tls_ca_file = Tls("ca.pem");
  auto pool = MakePool(std::move(options));
  for (int i = 0; i < 5; ++i) {
    const UpstreamAnswer answer = pool->Send(Get("/eth/v1/builder/status"), kBudget);
    ASSERT_TRUE(answer.ok()) << answer.error;
    EXPECT_EQ(answer.status, 200);
  }
  EXPECT_EQ(server->connections(), 1);
  EXPECT_EQ(pool->stats().tls_handshakes, 1u);
  EXPECT_EQ(pool->stats().tls_failures, 0u);
}

TEST_F(UpstreamPoolTest, AnUnknownCaIsATlsFailureNamingTheReason) {
  auto server = TestServer::WithTls(/*require_client_certificate=*/false);
  // The system's trust store does not know the tests' CA.
  auto pool = MakePool(Options(absl::StrCat("https://", server->address("localhost"))));
  const UpstreamAnswer answer = pool->Send(Get("/"), kBudget);
  EXPECT_EQ(answer.failure, UpstreamAnswer::Failure::kTls);
  EXPECT_THAT(answer.error, HasSubstr("certificate"));
  EXPECT_EQ(pool->stats().tls_failures, 1u);
  EXPECT_EQ(server->requests(), 0);
}

TEST_F(UpstreamPoolTest, AHostNameTheCertificateDoesNotNameIsRefused) {
  // A certificate of the tests' CA, for node-a.pool.test only.
  auto server = TestServer::WithTls(/*require_client_certificate=*/false, "node_a");
  UpstreamPoolOptions options = Options(absl::StrCat("https://", server->address("localhost")));
  options.tls_ca_file = Tls("ca.pem");
  auto pool = MakePool(std::move(options));
  const UpstreamAnswer answer = pool->Send(Get("/"), kBudget);
  EXPECT_EQ(answer.failure, UpstreamAnswer::Failure::kTls) << answer.error;
  EXPECT_THAT(answer.error, HasSubstr("localhost"));
  EXPECT_EQ(server->requests(), 0);
}

TEST_F(UpstreamPoolTest, MutualTlsSendsTheClientCertificate) {
  auto server = TestServer::WithTls(/*require_client_certificate=*/true);
  UpstreamPoolOptions without = Options(absl::StrCat("https://", server->address("localhost")));
  without.tls_ca_file = Tls("ca.pem");
  UpstreamPoolOptions with = without;
  with.tls_cert_file = Tls("node_a.pem");
  with.tls_key_file = Tls("node_a.key");

  auto anonymous = MakePool(std::move(without));
  EXPECT_FALSE(anonymous->Send(Get("/"), kBudget).ok());
  auto pool = MakePool(std::move(with));
  const UpstreamAnswer answer = pool->Send(Get("/"), kBudget);
  ASSERT_TRUE(answer.ok()) << answer.error;
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(server->requests(), 1);
}

TEST_F(UpstreamPoolTest, ATlsFileThatCannotBeReadIsRefusedAtCreation) {
  UpstreamPoolOptions options = Options("https://localhost:1");
  options.tls_ca_file = "no/such/ca.pem";
  const absl::StatusOr<std::unique_ptr<UpstreamPool>> pool =
      UpstreamPool::Create(std::move(options), clock_);
  EXPECT_TRUE(absl::IsInvalidArgument(pool.status()));
  EXPECT_THAT(pool.status().message(), HasSubstr("no/such/ca.pem"));
}

TEST_F(UpstreamPoolTest, ClosesConnectionsIdlePastTheIdleTimeout) {
  auto server = TestServer::Plain();
  UpstreamPoolOptions options = Options(absl::StrCat("http://", server->address()));
  options.idle_timeout = absl::Seconds(30);
  auto pool = MakePool(std::move(options));
  ASSERT_TRUE(pool->Send(Get("/"), kBudget).ok());
  clock_.Advance(absl::Seconds(29));
  pool->CloseIdle();
  EXPECT_EQ(pool->stats().idle_connections, 1u);
  clock_.Advance(absl::Seconds(2));
  pool->CloseIdle();
  EXPECT_EQ(pool->stats().idle_connections, 0u);
  ASSERT_TRUE(pool->Send(Get("/"), kBudget).ok());
  EXPECT_EQ(server->connections(), 2);
}

TEST_F(UpstreamPoolTest, AConnectionIdleForTheTimeoutIsNeverReusedWhateverTheSweep) {
  auto server = TestServer::Plain();
  UpstreamPoolOptions options = Options(absl::StrCat("http://", server->address()));
  options.idle_timeout = absl::Seconds(3);
  auto pool = MakePool(std::move(options));
  ASSERT_TRUE(pool->Send(Get("/"), kBudget).ok());
  clock_.Advance(absl::Milliseconds(2999));
  UpstreamAnswer answer = pool->Send(Get("/"), kBudget);
  ASSERT_TRUE(answer.ok()) << answer.error;
  EXPECT_TRUE(answer.reused_connection);
  // No sweep ran: the request itself sees the connection's age.
  clock_.Advance(absl::Seconds(3));
  answer = pool->Send(Get("/"), kBudget);
  ASSERT_TRUE(answer.ok()) << answer.error;
  EXPECT_FALSE(answer.reused_connection);
  EXPECT_EQ(server->connections(), 2);
}

TEST_F(UpstreamPoolTest, AConnectionClosedWhileIdleIsReplacedBeforeUse) {
  DroppingServer server(/*drop=*/{});
  auto proxy = testing::TcpProxy::Start(server.port());
  ASSERT_THAT(proxy.status(), IsOk());
  auto pool = MakePool(Options(absl::StrCat("http://127.0.0.1:", (*proxy)->port())));
  ASSERT_TRUE(pool->Send(Get("/"), kBudget).ok());
  (*proxy)->Cut();  // The idle connection ends, as a relay's idle timeout would end it.
  (*proxy)->Restore();
  UpstreamRequest reveal;
  reveal.method = "POST";
  reveal.target = "/eth/v1/builder/blinded_blocks";
  reveal.body = "{}";
  reveal.never_resend = true;
  const UpstreamAnswer answer = pool->Send(reveal, kBudget);
  ASSERT_TRUE(answer.ok()) << answer.error;
  EXPECT_FALSE(answer.reused_connection);
  EXPECT_EQ(server.requests(), 2);
}

TEST_F(UpstreamPoolTest, AGetLostOnAReusedConnectionIsSentOnceMore) {
  // The second request is read, and its connection closed without an answer.
  DroppingServer server(/*drop=*/{2});
  auto pool = MakePool(Options(absl::StrCat("http://127.0.0.1:", server.port())));
  ASSERT_TRUE(pool->Send(Get("/"), kBudget).ok());
  const UpstreamAnswer answer = pool->Send(Get("/"), kBudget);
  ASSERT_TRUE(answer.ok()) << answer.error;
  EXPECT_EQ(server.requests(), 3);
  EXPECT_EQ(server.connections(), 2);
}

TEST_F(UpstreamPoolTest, ARevealLostOnAReusedConnectionIsNeverSentAgain) {
  DroppingServer server(/*drop=*/{2});
  auto pool = MakePool(Options(absl::StrCat("http://127.0.0.1:", server.port())));
  ASSERT_TRUE(pool->Send(Get("/"), kBudget).ok());
  UpstreamRequest reveal;
  reveal.method = "POST";
  reveal.target = "/eth/v1/builder/blinded_blocks";
  reveal.body = R"({"message":{}})";
  reveal.never_resend = true;
  const UpstreamAnswer answer = pool->Send(reveal, kBudget);
  EXPECT_FALSE(answer.ok());
  EXPECT_EQ(server.requests(), 2);
  // The pool is still good.
  EXPECT_TRUE(pool->Send(Get("/"), kBudget).ok());
}

TEST_F(UpstreamPoolTest, WarmLeavesACheckedConnectionForTheNextRequest) {
  auto server = TestServer::Plain();
  auto pool = MakePool(Options(absl::StrCat("http://", server->address())));
  ASSERT_THAT(pool->Warm("/eth/v1/builder/status", kBudget), IsOk());
  EXPECT_EQ(server->connections(), 1);
  const UpstreamAnswer answer = pool->Send(Get("/eth/v1/builder/header/1/0x11/0xaa"), kBudget);
  ASSERT_TRUE(answer.ok()) << answer.error;
  EXPECT_TRUE(answer.warmed_connection);
  EXPECT_EQ(server->connections(), 1);
  const UpstreamPoolStats stats = pool->stats();
  EXPECT_EQ(stats.warmed, 1u);
  EXPECT_EQ(stats.warmed_used, 1u);
  // Only the first use after a warm-up counts.
  EXPECT_FALSE(pool->Send(Get("/"), kBudget).warmed_connection);
}

TEST_F(UpstreamPoolTest, WarmNamesTheFailure) {
  auto pool = MakePool(Options("http://127.0.0.1:1"));
  const absl::Status warmed = pool->Warm("/eth/v1/builder/status", kBudget);
  EXPECT_TRUE(absl::IsUnavailable(warmed));
  EXPECT_THAT(warmed.message(), HasSubstr("127.0.0.1:1"));
}

TEST_F(UpstreamPoolTest, AbortEndsAnExchangeInProgress) {
  auto server = TestServer::Plain();
  Mutex mu;
  bool release = false;
  CondVar released;
  server->server().Get("/x/slow", [&](const httplib::Request&, httplib::Response& response) {
    MutexLock lock(&mu);
    while (!release) released.Wait(&mu);
    response.set_content("late", "text/plain");
  });
  auto pool = MakePool(Options(absl::StrCat("http://", server->address())));
  UpstreamAnswer answer;
  std::thread sender([&] { answer = pool->Send(Get("/x/slow"), absl::Seconds(60)); });
  EXPECT_TRUE(WaitFor([&] { return server->requests() > 0 || server->connections() > 0; }));
  pool->Abort();
  sender.join();
  EXPECT_EQ(answer.failure, UpstreamAnswer::Failure::kStopped);
  {
    MutexLock lock(&mu);
    release = true;
  }
  released.SignalAll();
}

}  // namespace
}  // namespace breaker::sidecar
