#include "tests/support/quiet_relay.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace breaker::testing {
namespace {

constexpr char kTls[] = "tests/support/testdata/tls/";

TEST(QuietRelayTest, AnswersEveryRequestOfAKeptAliveConnection) {
  absl::StatusOr<std::unique_ptr<QuietRelay>> relay = QuietRelay::Start("{\"a\":1}", std::nullopt);
  ASSERT_TRUE(relay.ok()) << relay.status();
  httplib::Client client("127.0.0.1", (*relay)->port());
  client.set_keep_alive(true);
  for (int i = 0; i < 3; ++i) {
    httplib::Result result = client.Get(absl::StrCat("/eth/v1/builder/header/", i));
    ASSERT_TRUE(result) << httplib::to_string(result.error());
    EXPECT_EQ(result->status, 200);
    EXPECT_EQ(result->body, "{\"a\":1}");
    EXPECT_EQ(result->get_header_value("Content-Type"), "application/json");
  }
}

TEST(QuietRelayTest, ServesTls13WithTheGivenCertificate) {
  absl::StatusOr<std::unique_ptr<QuietRelay>> relay = QuietRelay::Start(
      "{}", QuietRelayTls{absl::StrCat(kTls, "server.pem"), absl::StrCat(kTls, "server.key")});
  ASSERT_TRUE(relay.ok()) << relay.status();
  httplib::SSLClient client("localhost", (*relay)->port());
  client.set_ca_cert_path(absl::StrCat(kTls, "ca.pem").c_str());
  client.enable_server_certificate_verification(true);
  httplib::Result result = client.Get("/eth/v1/builder/status");
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(result->body, "{}");
}

TEST(QuietRelayTest, RefusesToStartWithTlsFilesItCannotRead) {
  absl::StatusOr<std::unique_ptr<QuietRelay>> relay =
      QuietRelay::Start("{}", QuietRelayTls{"no-such.pem", "no-such.key"});
  ASSERT_FALSE(relay.ok());
  EXPECT_NE(relay.status().message().find("no-such.pem"), std::string::npos) << relay.status();
}

TEST(QuietRelayTest, StopsWithAnIdleConnectionOpen) {
  absl::StatusOr<std::unique_ptr<QuietRelay>> relay = QuietRelay::Start("{}", std::nullopt);
  ASSERT_TRUE(relay.ok()) << relay.status();
  httplib::Client client("127.0.0.1", (*relay)->port());
  client.set_keep_alive(true);
  ASSERT_TRUE(client.Get("/"));
  // The connection stays open in the client; the relay's destructor must not wait for it.
  relay->reset();
  EXPECT_FALSE(client.Get("/"));
}

}  // namespace
}  // namespace breaker::testing
