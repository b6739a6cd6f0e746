// breakerd's transport security and roles, end to end: TLS and mutual TLS, the access file's
// roles by client certificate and by bearer token, node ids bound to credentials, and the
// client library and breakerctl's channel settings against them.

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "client/channel_security.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "service/server_test_support.h"
#include "tests/status_matchers.h"
#include "tests/test_util.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::client::ChannelSecurityFiles;
using ::breaker::testing::FromGrpc;
using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::breaker::testing::WaitFor;
using test_support::NodeClient;
using test_support::ServerTest;
using ::testing::HasSubstr;

constexpr char kTestdata[] = "tests/testdata/";

std::string Tls(const std::string& name) { return absl::StrCat(kTestdata, "tls/", name); }

// What a client presents: a client certificate (mutual TLS) and/or a bearer token.
struct Credential {
  std::string certificate;  // "node_a" for tls/node_a.pem and .key; empty: none
  std::string token;        // empty: none
};

class SecurityTest : public ServerTest {
 protected:
  // breakerd with TLS, the test access file and, with `mutual`, client certificates required.
  void StartSecureServer(bool mutual) {
    WriteConfig("");
    ServerOptions options = Options();
    options.tls = {Tls("server.pem"), Tls("server.key"), mutual ? Tls("ca.pem") : ""};
    options.access_file = absl::StrCat(kTestdata, "access.textproto");
    StartServerWith(options);
  }

  std::string Address() const { return absl::StrCat("127.0.0.1:", server_->port()); }

  std::shared_ptr<grpc::Channel> Channel(const Credential& credential) {
    ChannelSecurityFiles files{Tls("ca.pem"), "", ""};
    if (!credential.certificate.empty()) {
      files.tls_cert_file = Tls(credential.certificate + ".pem");
      files.tls_key_file = Tls(credential.certificate + ".key");
    }
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
        client::MakeChannelCredentials(files);
    EXPECT_THAT(credentials, IsOk());
    return client::CreateChannel(Address(), *credentials, credential.token,
                                 grpc::ChannelArguments());
  }

  absl::StatusOr<v1::Policy> GetPolicyAs(const Credential& credential) {
    auto admin = v1::Admin::NewStub(Channel(credential));
    return ::breaker::testing::CallUnary(*admin, &v1::Admin::Stub::async::GetPolicy,
                                         v1::GetPolicyRequest());
  }

  absl::StatusOr<v1::Policy> BanAs(const Credential& credential, uint64_t builder) {
    auto admin = v1::Admin::NewStub(Channel(credential));
    v1::BanBuilderRequest request;
    request.set_builder_index(builder);
    request.set_reason("test");
    return ::breaker::testing::CallUnary(*admin, &v1::Admin::Stub::async::BanBuilder, request);
  }

  // Opens a Connect stream with `credential`, says hello as `node_id` and returns how it went:
  // OK once the policy arrives, else the status the stream ended with.
  absl::Status ConnectAs(const Credential& credential, const std::string& node_id) {
    NodeClient node(Channel(credential));
    node.Hello(node_id);
    if (node.AwaitPolicy().has_value()) return absl::OkStatus();
    return FromGrpc(node.AwaitEnd());
  }

  absl::StatusOr<v1::ReportResponse> ReportAs(const Credential& credential,
                                              const std::string& node_id) {
    auto stub = v1::Breaker::NewStub(Channel(credential));
    return Report(*stub, node_id, {test_support::Bid(1, 7, "")});
  }
};

TEST_F(SecurityTest, MutualTlsRolesComeFromClientCertificates) {
  StartSecureServer(/*mutual=*/true);
  // A node connects as itself, and only as itself.
  EXPECT_THAT(ConnectAs({"node_a", ""}, "node-a"), IsOk());
  EXPECT_THAT(ConnectAs({"node_a", ""}, "node-b"),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("belongs to node 'node-a', which cannot speak for node "
                                 "'node-b'")));
  EXPECT_THAT(GetPolicyAs({"node_a", ""}),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("'node-a' has the role ROLE_NODE, which does not give read "
                                 "access")));
  // A viewer reads, and changes nothing.
  EXPECT_THAT(GetPolicyAs({"viewer", ""}), IsOk());
  EXPECT_THAT(BanAs({"viewer", ""}, 5),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("ROLE_ADMIN")));
  EXPECT_THAT(ConnectAs({"viewer", ""}, "node-a"),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("a node's stream")));
  EXPECT_FALSE(test_support::Bans(server_->fleet()->policy()->proto, 5));
  // An admin does everything, including connecting as any node.
  absl::StatusOr<v1::Policy> banned = BanAs({"admin", ""}, 5);
  ASSERT_THAT(banned, IsOk());
  EXPECT_TRUE(test_support::Bans(*banned, 5));
  EXPECT_THAT(ConnectAs({"admin", ""}, "node-z"), IsOk());
}

TEST_F(SecurityTest, MutualTlsRefusesConnectionsWithoutATrustedCertificate) {
  StartSecureServer(/*mutual=*/true);
  // Without a certificate, or with one of another CA, the handshake itself fails.
  EXPECT_THAT(GetPolicyAs({"", ""}), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(GetPolicyAs({"rogue", ""}), StatusIs(absl::StatusCode::kUnavailable));
  // Plaintext never reaches a TLS port.
  auto plaintext =
      v1::Admin::NewStub(grpc::CreateChannel(Address(), grpc::InsecureChannelCredentials()));
  EXPECT_THAT(::breaker::testing::CallUnary(*plaintext, &v1::Admin::Stub::async::GetPolicy,
                                            v1::GetPolicyRequest()),
              StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(SecurityTest, BearerTokensGiveRolesOverTls) {
  StartSecureServer(/*mutual=*/false);
  EXPECT_THAT(GetPolicyAs({"", ""}),
              StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("no credential")));
  EXPECT_THAT(GetPolicyAs({"", "guess"}),
              StatusIs(absl::StatusCode::kUnauthenticated,
                       HasSubstr("the bearer token is not in breakerd's access file")));
  EXPECT_THAT(GetPolicyAs({"", "viewer-token"}), IsOk());
  EXPECT_THAT(BanAs({"", "viewer-token"}, 5), StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(BanAs({"", "admin-token"}, 5), IsOk());
  // A node's token reports for that node only.
  EXPECT_THAT(ReportAs({"", "node-b-token"}, "node-b"), IsOk());
  EXPECT_THAT(
      ReportAs({"", "node-b-token"}, "node-a"),
      StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("cannot speak for node 'node-a'")));
  EXPECT_THAT(ReportAs({"", "viewer-token"}, "node-b"),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(ConnectAs({"", "node-b-token"}, "node-b"), IsOk());
  EXPECT_THAT(ConnectAs({"", ""}, "node-b"), StatusIs(absl::StatusCode::kUnauthenticated));
}

TEST_F(SecurityTest, ATokenDecidesOverTheCertificate) {
  StartSecureServer(/*mutual=*/true);
  // An admin's certificate with a wrong token is refused, not let in by the certificate.
  EXPECT_THAT(GetPolicyAs({"admin", "guess"}), StatusIs(absl::StatusCode::kUnauthenticated));
  // A viewer's token on an admin's connection is a viewer.
  EXPECT_THAT(BanAs({"admin", "viewer-token"}, 5), StatusIs(absl::StatusCode::kPermissionDenied));
}

TEST_F(SecurityTest, RefusedCallsLeaveTheStateAlone) {
  StartSecureServer(/*mutual=*/true);
  const v1::Policy before = server_->fleet()->policy()->proto;
  auto viewer = v1::Admin::NewStub(Channel({"viewer", ""}));
  v1::ResetRequest reset;
  EXPECT_THAT(::breaker::testing::CallUnary(*viewer, &v1::Admin::Stub::async::Reset, reset),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(::breaker::testing::CallUnary(*viewer, &v1::Admin::Stub::async::ReloadConfig,
                                            v1::ReloadConfigRequest()),
              StatusIs(absl::StatusCode::kPermissionDenied));
  v1::BanRelayRequest ban_relay;
  ban_relay.set_relay("relay.example:18550");
  ban_relay.set_reason("x");
  EXPECT_THAT(::breaker::testing::CallUnary(*viewer, &v1::Admin::Stub::async::BanRelay, ban_relay),
              StatusIs(absl::StatusCode::kPermissionDenied));
  v1::UnbanRelayRequest unban_relay;
  unban_relay.set_relay("relay.example:18550");
  EXPECT_THAT(
      ::breaker::testing::CallUnary(*viewer, &v1::Admin::Stub::async::UnbanRelay, unban_relay),
      StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(ReportAs({"viewer", ""}, "node-a"), StatusIs(absl::StatusCode::kPermissionDenied));
  server_->fleet()->Sync();
  EXPECT_EQ(server_->fleet()->policy()->proto.SerializeAsString(), before.SerializeAsString());
  EXPECT_TRUE(server_->fleet()->AllNodes().empty());
}

TEST_F(SecurityTest, WatchPolicyNeedsReadAccess) {
  StartSecureServer(/*mutual=*/true);
  for (const auto& [certificate, code] :
       {std::pair<std::string, grpc::StatusCode>{"node_a", grpc::StatusCode::PERMISSION_DENIED},
        {"viewer", grpc::StatusCode::OK}}) {
    auto admin = v1::Admin::NewStub(Channel({certificate, ""}));
    grpc::ClientContext context;
    context.set_deadline(test_support::Deadline());
    std::unique_ptr<grpc::ClientReader<v1::Policy>> reader =
        admin->WatchPolicy(&context, v1::WatchPolicyRequest());
    v1::Policy policy;
    if (reader->Read(&policy)) {
      EXPECT_EQ(code, grpc::StatusCode::OK) << certificate << " read a policy";
      context.TryCancel();
      reader->Finish();
    } else {
      EXPECT_EQ(reader->Finish().error_code(), code) << certificate;
    }
  }
}

TEST_F(SecurityTest, TheClientLibraryConnectsWithTlsAndAToken) {
  StartSecureServer(/*mutual=*/false);
  client::ClientOptions options;
  options.addresses = {Address()};
  options.node_id = "node-b";
  options.network = "mainnet";
  options.clock = &clock_;
  options.initial_backoff = absl::Milliseconds(10);
  options.max_backoff = absl::Milliseconds(100);
  options.evaluation_interval = absl::Milliseconds(10);
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      client::MakeChannelCredentials({Tls("ca.pem"), "", ""});
  ASSERT_THAT(credentials, IsOk());
  options.credentials = *credentials;
  options.bearer_token = "node-b-token";
  absl::StatusOr<std::unique_ptr<client::BreakerClient>> node =
      client::StartGrpcClient(std::move(options));
  ASSERT_THAT(node, IsOk());
  ASSERT_THAT(BanAs({"", "admin-token"}, 9), IsOk());
  EXPECT_TRUE(WaitFor([&] { return !(*node)->IsAllowed(9, ""); }));
  EXPECT_TRUE(WaitFor([&] { return (*node)->stats().connected; }));
}

TEST_F(SecurityTest, PlaintextStaysOnLoopbackUnlessAllowed) {
  WriteConfig("");
  ServerOptions options = Options();
  options.listen_address = "0.0.0.0:0";
  EXPECT_THAT(Server::Start(options),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("refusing to serve plaintext on '0.0.0.0:0'")));
  options.allow_insecure_listen = true;
  EXPECT_THAT(Server::Start(options), IsOk());
}

TEST_F(SecurityTest, TokensWorkOnPlaintextLoopbackToo) {
  WriteConfig("");
  ServerOptions options = Options();
  options.access_file = absl::StrCat(kTestdata, "access.textproto");
  StartServerWith(options);
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> plaintext =
      client::MakeChannelCredentials({});
  ASSERT_THAT(plaintext, IsOk());
  auto viewer = v1::Admin::NewStub(
      client::CreateChannel(Address(), *plaintext, "viewer-token", grpc::ChannelArguments()));
  EXPECT_THAT(::breaker::testing::CallUnary(*viewer, &v1::Admin::Stub::async::GetPolicy,
                                            v1::GetPolicyRequest()),
              IsOk());
  EXPECT_THAT(GetPolicyAs({"", ""}), StatusIs(absl::StatusCode::kUnavailable))
      << "a TLS client does not reach a plaintext port";
}

TEST_F(SecurityTest, AStartWithBadSecurityFilesNamesThem) {
  WriteConfig("");
  ServerOptions options = Options();
  options.access_file = absl::StrCat(kTestdata, "missing_access.textproto");
  EXPECT_THAT(Server::Start(options),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing_access.textproto")));
  options.access_file = "";
  options.tls = {Tls("server.pem"), Tls("admin.key"), ""};
  EXPECT_THAT(Server::Start(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not the key of")));
}

}  // namespace
}  // namespace breaker::service
