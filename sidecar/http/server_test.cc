#include "sidecar/http/server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace breaker::sidecar::http {
namespace {

// A raw connection to 127.0.0.1:port, for what an HTTP client library would hide.
class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~RawConnection() { ::close(fd_); }

  bool connected() const { return connected_; }

  void Send(const std::string& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }

  // Reads until `marker` has been seen, or the connection ends; returns what came.
  std::string ReadUntil(absl::string_view marker) {
    std::string received;
    char buffer[4096];
    while (!absl::StrContains(received, marker)) {
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      received.append(buffer, static_cast<size_t>(n));
    }
    return received;
  }

  // Whether the server closed the connection (reads end), after whatever was still queued.
  bool Closed() {
    char buffer[4096];
    ssize_t n;
    while ((n = ::recv(fd_, buffer, sizeof(buffer), 0)) > 0) {
    }
    return n == 0;
  }

 private:
  const int fd_;
  bool connected_ = false;
};

ServerOptions Options() {
  ServerOptions options;
  options.host = "127.0.0.1";
  options.max_body_bytes = 1000;
  return options;
}

TEST(ServerTest, TheHandlerSeesTheRequestAsSentAndItsAnswerIsSent) {
  Request seen;
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(Options(), [&seen](const Request& request, Response& response) {
        seen = request;
        response.status = 201;
        response.headers.emplace_back("Content-Type", "application/json");
        response.headers.emplace_back("Eth-Consensus-Version", "deneb");
        response.body = R"({"data":1})";
      });
  ASSERT_TRUE(server.ok()) << server.status();
  httplib::Client client("127.0.0.1", (*server)->port());
  httplib::Result result = client.Post("/eth/v1/builder/a%2Fb?x=1&y",
                                       httplib::Headers{{"X-A", "1"}}, "payload", "text/plain");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 201);
  EXPECT_EQ(result->body, R"({"data":1})");
  EXPECT_EQ(result->get_header_value("Eth-Consensus-Version"), "deneb");
  EXPECT_EQ(result->get_header_value("Content-Type"), "application/json");

  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.target, "/eth/v1/builder/a%2Fb?x=1&y");
  EXPECT_EQ(seen.path, "/eth/v1/builder/a/b");
  EXPECT_EQ(seen.body, "payload");
  EXPECT_EQ(seen.header("x-a"), "1");
  EXPECT_EQ(seen.header("content-type"), "text/plain");
  EXPECT_EQ(seen.header("absent"), "");
}

TEST(ServerTest, AChunkedBodyIsReceivedWhole) {
  std::string body;
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(Options(), [&body](const Request& request, Response& response) {
        body = request.body;
        response.status = 204;
      });
  ASSERT_TRUE(server.ok()) << server.status();
  RawConnection connection((*server)->port());
  connection.Send(
      "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n");
  EXPECT_TRUE(absl::StartsWith(connection.ReadUntil("\r\n\r\n"), "HTTP/1.1 204"));
  EXPECT_EQ(body, "abcdefg");
}

TEST(ServerTest, ABodyPastTheLimitIsRefusedWithoutTheHandler) {
  std::atomic<int> handled{0};
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(Options(), [&handled](const Request&, Response&) { ++handled; });
  ASSERT_TRUE(server.ok()) << server.status();

  // Told by its length: answered 413 before the body is read.
  httplib::Client client("127.0.0.1", (*server)->port());
  httplib::Result result = client.Post("/x", std::string(1001, 'a'), "text/plain");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 413);
  EXPECT_TRUE(absl::StrContains(result->body, "max_body_bytes (1000 bytes)")) << result->body;

  // Chunked: the connection is closed once the body grows past the limit.
  RawConnection connection((*server)->port());
  connection.Send("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
  connection.Send(absl::StrCat("3e8\r\n", std::string(1000, 'a'), "\r\n1\r\nb\r\n0\r\n\r\n"));
  EXPECT_TRUE(connection.Closed());

  // Exactly at the limit is taken.
  result = client.Post("/x", std::string(1000, 'a'), "text/plain");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(handled.load(), 1);
}

TEST(ServerTest, ARequestLineOrHeadersPastTheLibrarysBoundAreRefused) {
  std::atomic<int> handled{0};
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(Options(), [&handled](const Request&, Response&) { ++handled; });
  ASSERT_TRUE(server.ok()) << server.status();
  RawConnection connection((*server)->port());
  connection.Send(absl::StrCat("GET /x HTTP/1.1\r\nHost: a\r\nX-Big: ", std::string(64 * 1024, 'a'),
                               "\r\n\r\n"));
  const std::string answer = connection.ReadUntil("\r\n\r\n");
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 431")) << answer.substr(0, 100);

  RawConnection long_line((*server)->port());
  long_line.Send(
      absl::StrCat("GET /", std::string(64 * 1024, 'a'), " HTTP/1.1\r\nHost: a\r\n\r\n"));
  const std::string refused = long_line.ReadUntil("\r\n\r\n");
  EXPECT_TRUE(absl::StartsWith(refused, "HTTP/1.1 414")) << refused.substr(0, 100);
  EXPECT_EQ(handled.load(), 0);
}

TEST(ServerTest, AHeaderThatCannotBeALineIsLeftOutOfTheAnswer) {
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(Options(), [](const Request&, Response& response) {
        response.headers.emplace_back("X-Injected", "a\r\nSet-Cookie: b");
        response.headers.emplace_back("X-Fine", "c");
      });
  ASSERT_TRUE(server.ok()) << server.status();
  RawConnection connection((*server)->port());
  connection.Send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
  const std::string answer = connection.ReadUntil("\r\n\r\n");
  EXPECT_TRUE(absl::StrContains(answer, "X-Fine: c")) << answer;
  EXPECT_FALSE(absl::StrContains(answer, "Set-Cookie")) << answer;
}

TEST(ServerTest, AConnectionIsKeptForTheNextRequest) {
  std::atomic<int> handled{0};
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(Options(), [&handled](const Request&, Response& response) {
        response.body = absl::StrCat("answer ", ++handled);
      });
  ASSERT_TRUE(server.ok()) << server.status();
  RawConnection connection((*server)->port());
  connection.Send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_TRUE(absl::StrContains(connection.ReadUntil("answer 1"), "answer 1"));
  connection.Send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_TRUE(absl::StrContains(connection.ReadUntil("answer 2"), "answer 2"));
}

TEST(ServerTest, AStopClosesIdleConnectionsAndRefusesNewOnes) {
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(Options(), [](const Request&, Response& response) { response.body = "ok"; });
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  RawConnection idle(port);
  idle.Send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_TRUE(absl::StrContains(idle.ReadUntil("ok"), "ok"));

  (*server)->StopAccepting();
  EXPECT_FALSE(RawConnection(port).connected());
  // A connection already open is still served.
  idle.Send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_TRUE(absl::StrContains(idle.ReadUntil("ok"), "ok"));

  // Idle now: closed by the stop, not left to its timeout.
  (*server)->Stop();
  EXPECT_TRUE(idle.Closed());
}

TEST(ServerTest, AStopLetsAnAnswerBeingMadeLeaveWhole) {
  absl::Notification in_handler;
  absl::Notification release;
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(Options(), [&in_handler, &release](const Request&, Response& response) {
        in_handler.Notify();
        release.WaitForNotification();
        response.body = std::string(100000, 'z');
      });
  ASSERT_TRUE(server.ok()) << server.status();
  RawConnection connection((*server)->port());
  connection.Send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
  in_handler.WaitForNotification();
  std::thread stopper([&server] { (*server)->Stop(); });
  release.Notify();
  const std::string answer = connection.ReadUntil(std::string(100000, 'z'));
  stopper.join();
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 200"));
  EXPECT_TRUE(absl::EndsWith(answer, std::string(100000, 'z')));
}

TEST(ServerTest, APortTakenIsRefusedAndNeverShared) {
  absl::StatusOr<std::unique_ptr<Server>> first =
      Server::Start(Options(), [](const Request&, Response&) {});
  ASSERT_TRUE(first.ok()) << first.status();
  ServerOptions options = Options();
  options.port = (*first)->port();
  absl::StatusOr<std::unique_ptr<Server>> second =
      Server::Start(options, [](const Request&, Response&) {});
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(
      absl::StrContains(second.status().message(), absl::StrCat("127.0.0.1:", options.port)))
      << second.status();
}

}  // namespace
}  // namespace breaker::sidecar::http
