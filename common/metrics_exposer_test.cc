#include "common/metrics_exposer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "tests/support/status_matchers.h"

namespace breaker::common {
namespace {

using ::breaker::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A loopback TCP connection to `port`, or -1.
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` on a new connection and reads the answer until the server closes it (or 30 s
// pass: a generous bound for a loaded machine, never reached when the server works).
std::string Exchange(int port, const std::string& request) {
  const int fd = Connect(port);
  if (fd < 0) return "";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string answer;
  char buffer[4096];
  pollfd polled{fd, POLLIN, 0};
  while (poll(&polled, 1, 30'000) == 1) {
    const ssize_t got = recv(fd, buffer, sizeof(buffer), 0);
    if (got <= 0) break;
    answer.append(buffer, static_cast<size_t>(got));
  }
  close(fd);
  return answer;
}

class MetricsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<MetricsServer>> server =
        StartMetricsExposer("127.0.0.1:0", "--metrics_listen");
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    prometheus::BuildCounter().Name("test_scrapes_total").Help("h").Register(*registry_).Add({});
    server_->RegisterCollectable(registry_);
    port_ = server_->GetListeningPorts().front();
  }

  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  std::unique_ptr<MetricsServer> server_;
  int port_ = 0;
};

TEST_F(MetricsServerTest, AnswersMetricsAndRefusesTheRest) {
  const std::string metrics = Exchange(port_, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(metrics, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(metrics, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(metrics, HasSubstr("\r\n\r\n# HELP test_scrapes_total h\n"));
  EXPECT_THAT(Exchange(port_, "GET /other HTTP/1.1\r\n\r\n"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(Exchange(port_, "POST /metrics HTTP/1.1\r\n\r\n"), StartsWith("HTTP/1.1 405"));
  EXPECT_THAT(Exchange(port_, "GET /metrics" + std::string(MetricsServer::kMaxRequestBytes, 'x')),
              StartsWith("HTTP/1.1 431"));
}

TEST_F(MetricsServerTest, AScrapeIsAnsweredBesideAThousandIdleAndSlowConnections) {
  // Two descriptors per connection in this process (both ends).
  rlimit files{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &files), 0);
  if (files.rlim_cur < 2500 && files.rlim_max >= 2500) {
    files.rlim_cur = 2500;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &files), 0);
  }
  ASSERT_GE(files.rlim_cur, 2500u) << "too few file descriptors for the test";
  std::vector<int> idle;
  for (int i = 0; i < 1000; ++i) {
    const int fd = Connect(port_);
    ASSERT_GE(fd, 0) << "connection " << i;
    // Half say nothing; half stop in the middle of their request line.
    if (i % 2 == 1) send(fd, "GET /met", 8, MSG_NOSIGNAL);
    idle.push_back(fd);
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string metrics = Exchange(port_, "GET /metrics HTTP/1.1\r\n\r\n");
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_THAT(metrics, StartsWith("HTTP/1.1 200 OK\r\n"));
  // Served at once, not behind the idle ones (a thread per connection, each waiting out its
  // timeout, took minutes here); the bound leaves a loaded machine room.
  EXPECT_LT(took, std::chrono::seconds(3));

  // The idle ones are closed once their exchange timeout has passed.
  for (int fd : idle) {
    pollfd polled{fd, POLLIN, 0};
    char byte;
    EXPECT_EQ(poll(&polled, 1, 30'000), 1);
    EXPECT_LE(recv(fd, &byte, 1, 0), 0);
    close(fd);
  }
}

TEST(StartMetricsExposerTest, NamesTheSettingOfABadAddress) {
  EXPECT_THAT(StartMetricsExposer("9464", "--metrics_listen"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--metrics_listen '9464'")));
  absl::StatusOr<std::unique_ptr<MetricsServer>> first =
      StartMetricsExposer("127.0.0.1:0", "--metrics_listen");
  ASSERT_TRUE(first.ok());
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->GetListeningPorts().front());
  EXPECT_THAT(StartMetricsExposer(taken, "metrics_listen"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("pass metrics_listen")));
}

}  // namespace
}  // namespace breaker::common
