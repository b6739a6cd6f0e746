#include "service/rpc/transport_security.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::service {
namespace {

using ::breaker::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kTls[] = "tests/support/testdata/tls/";

std::string Fixture(const std::string& name) { return kTls + name; }

TEST(IsLoopbackAddressTest, OnlyThisMachine) {
  for (const char* address : {"127.0.0.1:50051", "127.3.2.1:0", "localhost:50051", "[::1]:50051",
                              "ipv4:127.0.0.1:1", "unix:/run/breakerd.sock"}) {
    EXPECT_TRUE(IsLoopbackAddress(address)) << address;
  }
  for (const char* address :
       {"0.0.0.0:50051", "[::]:50051", "10.0.0.5:50051", ":50051", "breakerd.pool.internal:50051",
        "128.0.0.1:1", "127.0.0.1.5:1", "127.0.0.256:1", "localhost.evil.example:1"}) {
    EXPECT_FALSE(IsLoopbackAddress(address)) << address;
  }
}

TEST(MakeServerCredentialsTest, PlaintextOnLoopback) {
  EXPECT_TRUE(MakeServerCredentials({}, "127.0.0.1:0", false).ok());
}

TEST(MakeServerCredentialsTest, PlaintextElsewhereOnlyWhenAllowed) {
  EXPECT_THAT(MakeServerCredentials({}, "0.0.0.0:50051", false),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("refusing to serve plaintext on '0.0.0.0:50051'")));
  EXPECT_TRUE(MakeServerCredentials({}, "0.0.0.0:50051", true).ok());
}

TEST(MakeServerCredentialsTest, TlsAndMutualTls) {
  ServerTlsFiles tls{Fixture("server.pem"), Fixture("server.key"), ""};
  EXPECT_TRUE(MakeServerCredentials(tls, "0.0.0.0:50051", false).ok());
  tls.client_ca_file = Fixture("ca.pem");
  EXPECT_TRUE(MakeServerCredentials(tls, "0.0.0.0:50051", false).ok());
}

TEST(MakeServerCredentialsTest, NamesWhatIsWrong) {
  EXPECT_THAT(MakeServerCredentials({Fixture("server.pem"), "", ""}, "127.0.0.1:0", false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("go together")));
  EXPECT_THAT(MakeServerCredentials({"", "", Fixture("ca.pem")}, "127.0.0.1:0", false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--tls_client_ca needs TLS")));
  EXPECT_THAT(MakeServerCredentials({Fixture("missing.pem"), Fixture("server.key"), ""},
                                    "127.0.0.1:0", false),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.pem")));
  EXPECT_THAT(
      MakeServerCredentials({Fixture("server.pem"), Fixture("node_a.key"), ""}, "127.0.0.1:0",
                            false),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not the key of --tls_cert")));
  EXPECT_THAT(MakeServerCredentials({Fixture("server.key"), Fixture("server.key"), ""},
                                    "127.0.0.1:0", false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("holds no PEM certificate")));
  EXPECT_THAT(MakeServerCredentials({Fixture("server.pem"), Fixture("server.pem"), ""},
                                    "127.0.0.1:0", false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("holds no PEM private key")));
  EXPECT_THAT(MakeServerCredentials(
                  {Fixture("server.pem"), Fixture("server.key"), Fixture("missing_ca.pem")},
                  "127.0.0.1:0", false),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing_ca.pem")));
}

}  // namespace
}  // namespace breaker::service
