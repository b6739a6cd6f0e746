// The proxy over real loopback HTTP, against relays that misbehave: answers passed back byte for
// byte, a 100 MB request and a 100 MB answer, truncated JSON, a relay that never answers, one
// that trickles its headers, one that closes mid-body, one that is not there. Whatever the
// relay does, the answer comes, and by the request's own deadline.

#include "sidecar/builder/proxy.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/fake_client.h"
#include "core/observation.h"
#include "core/policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "sidecar/builder/enforcer.h"
#include "sidecar/config.h"
#include "sidecar/ssz/test_blocks.h"
#include "tests/support/status_matchers.h"

namespace breaker::sidecar {
namespace {

using ::breaker::testing::IsOk;
using ::testing::HasSubstr;

constexpr char kHeaderPath[] = "/eth/v1/builder/header/100/0x11/0xaa";
constexpr char kBidPath[] = "/eth/v1/builder/execution_payload_bid/100/0x11/0x22/0xaa";
constexpr char kHeaderBody[] =
    R"({"version":"deneb","data":{"message":{"header":{)"
    R"("block_hash":"0x2222222222222222222222222222222222222222222222222222222222222222"},)"
    R"("value":"1"},"signature":"0x00"}})";
constexpr size_t kHundredMegabytes = 100u << 20;
// Far longer than any request's own timeout below: an answer that took this long waited for
// the configured limit, not for the request's deadline.
constexpr absl::Duration kConfiguredLimit = absl::Seconds(60);

std::string BidBody(int builder) {
  return absl::StrCat(R"({"version":"gloas","data":{"message":{"slot":"100","builder_index":")",
                      builder, R"(","value":"5"},"signature":"0x00"}})");
}

// A valid block (its root can be computed), of kHeaderBody's block hash.
std::string BlindedBlockBody(int slot) {
  return ssz::BlindedBlockJson(slot, "0x" + std::string(64, '2'));
}

// A relay speaking raw TCP, for what no HTTP server library would send: each connection is
// handed to `behaviour` on a thread of its own.
class RawRelay {
 public:
  explicit RawRelay(std::function<void(int fd)> behaviour) : behaviour_(std::move(behaviour)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ADD_FAILURE() << "cannot listen";
      return;
    }
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] {
      for (;;) {
        const int connection = accept(fd_, nullptr, nullptr);
        if (connection < 0) return;
        if (stopping_) {
          close(connection);
          return;
        }
        ++connections_;
        connections_threads_.emplace_back([this, connection] {
          behaviour_(connection);
          close(connection);
        });
      }
    });
  }

  ~RawRelay() {
    stopping_ = true;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    acceptor_.join();
    for (std::thread& thread : connections_threads_) thread.join();
  }

  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }
  int connections() const { return connections_; }
  bool stopping() const { return stopping_; }

  // Reads the request's head (up to the blank line) from `fd`.
  static void ReadHead(int fd) {
    std::string head;
    char c;
    while (head.find("\r\n\r\n") == std::string::npos && read(fd, &c, 1) == 1) head.push_back(c);
  }

  static void Write(int fd, absl::string_view text) {
    (void)!send(fd, text.data(), text.size(), MSG_NOSIGNAL);
  }

 private:
  std::function<void(int)> behaviour_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  std::vector<std::thread> connections_threads_;
};

// A relay over cpp-httplib, its handlers set by the test.
class HttpRelay {
 public:
  HttpRelay() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    // Started by Serve(), once the test's handlers are in.
  }
  ~HttpRelay() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  httplib::Server& server() { return server_; }
  void Serve() {
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

class ProxyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // As the sidecar's main() does: a peer closing mid-write is that connection's error.
    signal(SIGPIPE, SIG_IGN);
  }

  void TearDown() override {
    if (proxy_ != nullptr) proxy_->Stop();
  }

  // Serves `url` as upstream 0 (port picked by the kernel).
  void StartProxy(const std::string& url, size_t max_body_bytes = 16u << 20) {
    SidecarSettings settings;
    settings.upstream_timeout = kConfiguredLimit;
    settings.max_body_bytes = max_body_bytes;
    UpstreamSettings upstream;
    upstream.url = url;
    upstream.relay_id = url;
    upstream.scheme_host_port = url;
    settings.upstreams.push_back(upstream);
    enforcer_ = std::make_unique<Enforcer>(client_, std::vector<UpstreamIdentity>{{url, false}});
    proxy_ = std::make_unique<Proxy>(settings, *enforcer_, SystemClock());
    ASSERT_THAT(proxy_->Start(), IsOk());
  }

  httplib::Client Client() {
    httplib::Client client("127.0.0.1", proxy_->port(0));
    client.set_connection_timeout(10);
    client.set_read_timeout(120);
    client.set_write_timeout(120);
    return client;
  }

  Enforcer::Counters counters() const { return enforcer_->counters(0); }

  client::FakeClient client_;
  std::unique_ptr<Enforcer> enforcer_;
  std::unique_ptr<Proxy> proxy_;
};

TEST(RequestBudgetTest, TheRequestsOwnTimeoutWins) {
  const absl::Time now = absl::FromUnixMillis(1'000'000);
  const absl::Duration limit = absl::Seconds(10);
  EXPECT_EQ(RequestBudget("", "", limit, now), limit);
  EXPECT_EQ(RequestBudget("950", "", limit, now), absl::Milliseconds(950));
  EXPECT_EQ(RequestBudget("60000", "", limit, now), limit);
  // Garbage is ignored.
  EXPECT_EQ(RequestBudget("soon", "", limit, now), limit);
  EXPECT_EQ(RequestBudget("-5", "", limit, now), limit);
  EXPECT_EQ(RequestBudget("0", "", limit, now), limit);
  // Sent 200 ms ago: 750 ms left; sent long ago: late; a date ahead spent nothing.
  EXPECT_EQ(RequestBudget("950", "999800", limit, now), absl::Milliseconds(750));
  EXPECT_EQ(RequestBudget("950", "1", limit, now), absl::ZeroDuration());
  EXPECT_EQ(RequestBudget("950", "1000500", limit, now), absl::Milliseconds(950));
  EXPECT_EQ(RequestBudget("950", "yesterday", limit, now), absl::Milliseconds(950));
  // A date without a timeout says nothing about the deadline.
  EXPECT_EQ(RequestBudget("", "999800", limit, now), limit);
}

TEST_F(ProxyTest, TheUpstreamsAnswerIsPassedBackByteForByte) {
  HttpRelay relay;
  std::string seen_timeout, seen_date, seen_body, seen_query;
  relay.server().Post(".*", [&](const httplib::Request& request, httplib::Response& response) {
    seen_timeout = request.get_header_value("X-Timeout-Ms");
    seen_date = request.get_header_value("Date-Milliseconds");
    seen_body = request.body;
    seen_query = request.target;
    response.status = 418;
    response.set_header("Eth-Consensus-Version", "electra");
    response.set_content(std::string("\x00\x01\xff not json", 12), "application/octet-stream");
  });
  relay.Serve();
  ASSERT_NO_FATAL_FAILURE(StartProxy(relay.url()));

  const std::string date = absl::StrCat(absl::ToUnixMillis(absl::Now()));
  for (const char* path : {"/eth/v1/builder/blinded_blocks", "/eth/v2/builder/blinded_blocks",
                           "/eth/v1/builder/validators?x=1"}) {
    httplib::Result result =
        Client().Post(path, httplib::Headers{{"X-Timeout-Ms", "4000"}, {"Date-Milliseconds", date}},
                      BlindedBlockBody(7), "application/json");
    ASSERT_TRUE(result) << httplib::to_string(result.error());
    EXPECT_EQ(result->status, 418) << path;
    EXPECT_EQ(result->body, std::string("\x00\x01\xff not json", 12));
    EXPECT_EQ(result->get_header_value("Eth-Consensus-Version"), "electra");
    EXPECT_EQ(result->get_header_value("Content-Type"), "application/octet-stream");
    EXPECT_EQ(seen_timeout, "4000");
    EXPECT_EQ(seen_date, date);
    EXPECT_EQ(seen_body, BlindedBlockBody(7));
    EXPECT_EQ(seen_query, path);
  }
  EXPECT_EQ(counters().forwarded, 3u);
  // A 4xx of blinded_blocks is the relay's judgement of the block, not a failed reveal.
  EXPECT_TRUE(client_.reports().empty());
}

// A slowloris on an upstream's port: connections that send nothing or half a request hold up
// no getHeader on another connection.
TEST_F(ProxyTest, IdleAndHalfSentConnectionsHoldUpNoHeader) {
  HttpRelay relay;
  relay.server().Get(".*", [](const httplib::Request&, httplib::Response& response) {
    response.set_content(R"({"version":"deneb","data":{}})", "application/json");
  });
  relay.Serve();
  ASSERT_NO_FATAL_FAILURE(StartProxy(relay.url()));
  std::vector<int> silent;
  for (int i = 0; i < 200; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(proxy_->port(0)));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
    if (i % 2 == 1) {
      const std::string half = "GET /eth/v1/builder/status HTTP/1.1\r\n";
      ASSERT_EQ(write(fd, half.data(), half.size()), static_cast<ssize_t>(half.size()));
    }
    silent.push_back(fd);
  }
  // Each silent connection would hold a thread of the library's own pool for 5 s: 200 of them
  // would hold up the header for minutes, past this client's generous 10 s.
  httplib::Client client("127.0.0.1", proxy_->port(0));
  client.set_connection_timeout(10);
  client.set_read_timeout(10);
  httplib::Result result = client.Get(absl::StrCat(
      "/eth/v1/builder/header/5/0x", std::string(64, '1'), "/0x", std::string(96, '2')));
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, 200);
  for (int fd : silent) close(fd);
}

TEST_F(ProxyTest, AHundredMegabyteRequestIsRefusedWithoutReachingTheUpstream) {
  HttpRelay relay;
  std::atomic<int> requests{0};
  relay.server().Post(".*", [&](const httplib::Request&, httplib::Response&) { ++requests; });
  relay.Serve();
  ASSERT_NO_FATAL_FAILURE(StartProxy(relay.url()));
  httplib::Result result = Client().Post("/eth/v2/builder/blinded_blocks",
                                         std::string(kHundredMegabytes, '{'), "application/json");
  // The proxy answers 413 on the request's Content-Length and closes the connection without
  // reading the body: a client still writing then sees the connection closed instead of the
  // answer (on a slow machine, or under a sanitizer). Either way nothing was forwarded.
  if (result) {
    EXPECT_EQ(result->status, 413);
  } else {
    EXPECT_EQ(result.error(), httplib::Error::Write) << httplib::to_string(result.error());
  }
  EXPECT_EQ(requests, 0);
  // The port still serves.
  result = Client().Post("/eth/v2/builder/blinded_blocks", "{}", "application/json");
  ASSERT_TRUE(result);
  EXPECT_EQ(requests, 1);
}

TEST_F(ProxyTest, AHundredMegabyteAnswerIsCutOffAnd502) {
  HttpRelay relay;
  relay.server().Get(".*", [](const httplib::Request&, httplib::Response& response) {
    response.set_content_provider(kHundredMegabytes, "application/json",
                                  [chunk = std::string(64 << 10, ' ')](
                                      size_t /*offset*/, size_t length, httplib::DataSink& sink) {
                                    return sink.write(chunk.data(), std::min(length, chunk.size()));
                                  });
  });
  relay.Serve();
  ASSERT_NO_FATAL_FAILURE(StartProxy(relay.url(), /*max_body_bytes=*/1u << 20));
  httplib::Result result = Client().Get(kHeaderPath);
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, 502);
  EXPECT_THAT(result->body, HasSubstr("larger than max_body_bytes"));
  EXPECT_EQ(counters().upstream_errors, 1u);
}

TEST_F(ProxyTest, TruncatedJsonIsCountedAHeaderPassedBackABid204) {
  const std::string truncated = std::string(kHeaderBody).substr(0, 40);
  HttpRelay relay;
  relay.server().Get(".*", [&](const httplib::Request&, httplib::Response& response) {
    response.set_content(truncated, "application/json");
  });
  relay.server().Post(".*", [&](const httplib::Request&, httplib::Response& response) {
    response.set_content(BidBody(5).substr(0, 50), "application/json");
  });
  relay.Serve();
  ASSERT_NO_FATAL_FAILURE(StartProxy(relay.url()));

  httplib::Result header = Client().Get(kHeaderPath);
  ASSERT_TRUE(header);
  EXPECT_EQ(header->status, 200);
  EXPECT_EQ(header->body, truncated) << "the node judges a header; the sidecar passes it back";
  httplib::Result bid = Client().Post(kBidPath, "", "application/json");
  ASSERT_TRUE(bid);
  EXPECT_EQ(bid->status, 204) << "a bid whose builder is unknown cannot be let through";
  EXPECT_EQ(counters().malformed_answers, 2u);
  EXPECT_TRUE(client_.reports().empty());
}

TEST_F(ProxyTest, ARelayThatNeverAnswersIsAnswered504ByTheRequestsTimeout) {
  RawRelay relay([&relay](int fd) {
    RawRelay::ReadHead(fd);
    while (!relay.stopping()) absl::SleepFor(absl::Milliseconds(10));
  });
  ASSERT_NO_FATAL_FAILURE(StartProxy(relay.url()));
  const absl::Time start = absl::Now();
  httplib::Result result = Client().Get(kHeaderPath, httplib::Headers{{"X-Timeout-Ms", "300"}});
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, 504);
  EXPECT_THAT(result->body, HasSubstr("no answer within the request's 300 ms"));
  EXPECT_LT(absl::Now() - start, kConfiguredLimit / 2) << "waited for the configured limit";
  EXPECT_EQ(counters().upstream_errors, 1u);
}

TEST_F(ProxyTest, ARelayTricklingItsHeadersIsCutOffAtTheDeadline) {
  // Each byte comes well within the socket timeout; only the whole exchange's deadline stops it.
  RawRelay relay([&relay](int fd) {
    RawRelay::ReadHead(fd);
    RawRelay::Write(fd, "HTTP/1.1 200 OK\r\nX-Slow: ");
    while (!relay.stopping()) {
      RawRelay::Write(fd, "a");
      absl::SleepFor(absl::Milliseconds(20));
    }
  });
  ASSERT_NO_FATAL_FAILURE(StartProxy(relay.url()));
  const absl::Time start = absl::Now();
  httplib::Result result = Client().Get(kHeaderPath, httplib::Headers{{"X-Timeout-Ms", "300"}});
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, 504);
  EXPECT_LT(absl::Now() - start, kConfiguredLimit / 2);
}

TEST_F(ProxyTest, ALateHeaderIsAnswered504WithoutContactingTheUpstreamALateRevealIsSent) {
  HttpRelay relay;
  std::atomic<int> headers{0}, reveals{0};
  relay.server().Get(".*", [&](const httplib::Request&, httplib::Response&) { ++headers; });
  relay.server().Post(".*", [&](const httplib::Request&, httplib::Response& response) {
    ++reveals;
    response.set_content("{}", "application/json");
  });
  relay.Serve();
  ASSERT_NO_FATAL_FAILURE(StartProxy(relay.url()));
  const httplib::Headers late{{"X-Timeout-Ms", "950"}, {"Date-Milliseconds", "1000"}};
  httplib::Result header = Client().Get(kHeaderPath, late);
  ASSERT_TRUE(header);
  EXPECT_EQ(header->status, 504);
  EXPECT_EQ(headers, 0);
  // The node signed the block: its reveal is sent however late, and no failure is made up.
  httplib::Result reveal = Client().Post("/eth/v1/builder/blinded_blocks", late,
                                         BlindedBlockBody(100), "application/json");
  ASSERT_TRUE(reveal);
  EXPECT_EQ(reveal->status, 200);
  EXPECT_EQ(reveals, 1);
  EXPECT_TRUE(client_.reports().empty());
}

TEST_F(ProxyTest, ARelayClosingMidBodyIs502AndAFailedReveal) {
  RawRelay relay([](int fd) {
    RawRelay::ReadHead(fd);
    RawRelay::Write(fd,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    "Content-Length: 1000\r\n\r\n{\"version\":");
  });
  ASSERT_NO_FATAL_FAILURE(StartProxy(relay.url()));
  // The relay signed a header for slot 100 (answered by hand: this relay cannot answer).
  ASSERT_TRUE(enforcer_->OnHeaderAnswered(0, 100, 200, kHeaderBody, "application/json"));

  httplib::Result header = Client().Get(kHeaderPath);
  ASSERT_TRUE(header);
  EXPECT_EQ(header->status, 502);
  httplib::Result reveal =
      Client().Post("/eth/v1/builder/blinded_blocks", BlindedBlockBody(100), "application/json");
  ASSERT_TRUE(reveal);
  EXPECT_EQ(reveal->status, 502);
  const auto reports = client_.reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<core::RelayRevealMissing>(reports[0].event));
  EXPECT_EQ(counters().upstream_errors, 2u);
  EXPECT_EQ(counters().reveal_failures, 1u);
}

TEST_F(ProxyTest, ARelayThatIsNotThereIs502AtOnce) {
  std::string url;
  {
    RawRelay gone([](int) {});
    url = gone.url();
  }
  ASSERT_NO_FATAL_FAILURE(StartProxy(url));
  httplib::Result result = Client().Get(kHeaderPath);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 502);
  EXPECT_EQ(counters().upstream_errors, 1u);
}

TEST_F(ProxyTest, AMethodOutsideRestIsAnswered405WithoutReachingTheUpstream) {
  HttpRelay relay;
  std::atomic<int> reached{0};
  relay.server().Options(".*", [&](const httplib::Request&, httplib::Response&) { ++reached; });
  relay.Serve();
  ASSERT_NO_FATAL_FAILURE(StartProxy(relay.url()));
  httplib::Result result = Client().Options(kHeaderPath);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 405);
  EXPECT_EQ(result->get_header_value("Allow"), "GET, HEAD, POST, PUT, DELETE, PATCH");
  EXPECT_EQ(reached.load(), 0);
}

TEST_F(ProxyTest, GloasBidsAreReportedAndABannedBuildersIsRefused) {
  HttpRelay relay;
  std::atomic<int> bids{0};
  std::atomic<int> builder{5};
  relay.server().Post(".*", [&](const httplib::Request&, httplib::Response& response) {
    ++bids;
    response.set_header("Eth-Consensus-Version", "gloas");
    response.set_content(BidBody(builder), "application/json");
  });
  relay.Serve();
  ASSERT_NO_FATAL_FAILURE(StartProxy(relay.url()));
  core::Policy policy;
  policy.banned_builders[6] = core::Ban{core::BanKind::kFailure, 10, false, "withheld"};
  client_.SetPolicy(policy, client::PolicySource::kFleet);

  httplib::Result allowed = Client().Post(kBidPath, "", "application/json");
  ASSERT_TRUE(allowed);
  EXPECT_EQ(allowed->status, 200);
  EXPECT_EQ(allowed->body, BidBody(5));
  EXPECT_EQ(allowed->get_header_value("Eth-Consensus-Version"), "gloas");

  builder = 6;
  httplib::Result banned = Client().Post(kBidPath, "", "application/json");
  ASSERT_TRUE(banned);
  EXPECT_EQ(banned->status, 204);
  EXPECT_TRUE(banned->body.empty());
  const auto reports = client_.reports();
  ASSERT_EQ(reports.size(), 2u) << "both bids were seen";
  EXPECT_EQ(std::get<core::BidSeen>(reports[1].event).builder, 6u);
  EXPECT_EQ(std::get<core::BidSeen>(reports[1].event).relay, relay.url());

  // The relay banned: 204 without asking it.
  policy.banned_relays[relay.url()] = core::Ban{core::BanKind::kOperator, 0, true, "operator"};
  client_.SetPolicy(policy, client::PolicySource::kFleet);
  httplib::Result refused = Client().Post(kBidPath, "", "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 204);
  EXPECT_EQ(bids, 2);
  EXPECT_EQ(counters().refused, 2u);
  EXPECT_EQ(counters().forwarded, 1u);
  EXPECT_EQ(counters().bids_seen, 2u);
}

}  // namespace
}  // namespace breaker::sidecar
