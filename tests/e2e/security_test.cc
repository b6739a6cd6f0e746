// breakerd's transport security and roles, end to end: TLS and mutual TLS, the access file's
// roles by client certificate and by bearer token, node ids bound to credentials, and the
// client library and breakerctl's channel settings against them.

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "client/channel_security.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "service/rpc/server_test_support.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::client::ChannelSecurityFiles;
using ::breaker::testing::FromGrpc;
using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::breaker::testing::TestDir;
using ::breaker::testing::WaitFor;
using test_support::NodeClient;
using test_support::ServerTest;
using ::testing::HasSubstr;

constexpr char kTestdata[] = "tests/support/testdata/";

std::string Tls(const std::string& name) { return absl::StrCat(kTestdata, "tls/", name); }

// What a client presents: a client certificate (mutual TLS) and/or a bearer token.
struct Credential {
  std::string certificate;  // "node_a" for tls/node_a.pem and .key; empty: none
  std::string token;        // empty: none
};

class SecurityTest : public ServerTest {
 protected:
  // breakerd with TLS, the test access file (or `access_file`) and, with `mutual`, client
  // certificates required.
  void StartSecureServer(bool mutual, const std::string& access_file = "") {
    WriteConfig("");
    ServerOptions options = Options();
    options.tls = {Tls("server.pem"), Tls("server.key"), mutual ? Tls("ca.pem") : ""};
    options.access_file =
        access_file.empty() ? absl::StrCat(kTestdata, "access.textproto") : access_file;
    StartServerWith(options);
  }

  // A copy of the test access file in the test's directory, to edit, and the path of it.
  std::string CopyAccessFile() {
    const std::string path = dir_ + "/access.textproto";
    std::filesystem::copy_file(absl::StrCat(kTestdata, "access.textproto"), path,
                               std::filesystem::copy_options::overwrite_existing);
    return path;
  }

  absl::StatusOr<v1::ReloadAccessResponse> ReloadAccessAs(const Credential& credential) {
    auto admin = v1::Admin::NewStub(Channel(credential));
    return ::breaker::testing::CallUnary(*admin, &v1::Admin::Stub::async::ReloadAccess,
                                         v1::ReloadAccessRequest());
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
  const std::string token_file = TestDir() + "/node-b.token";
  std::ofstream(token_file) << "node-b-token\n";
  absl::StatusOr<client::ChannelSecurity> security =
      client::SecurityFromFiles({Tls("ca.pem"), "", ""}, token_file);
  ASSERT_THAT(security, IsOk());
  EXPECT_EQ(security->bearer_token, "node-b-token");
  options.credentials = security->credentials;
  options.bearer_token = security->bearer_token;
  absl::StatusOr<std::unique_ptr<client::BreakerClient>> node =
      client::StartGrpcClient(std::move(options));
  ASSERT_THAT(node, IsOk());
  ASSERT_THAT(BanAs({"", "admin-token"}, 9), IsOk());
  EXPECT_TRUE(WaitFor([&] { return !(*node)->IsAllowed(9, ""); }));
  EXPECT_TRUE(WaitFor([&] { return (*node)->stats().connected; }));
}

// The access file is reloaded while a node streams under a token: once the token is gone, the
// stream ends; a bad or missing file changes nothing.
TEST_F(SecurityTest, AReloadOfTheAccessFileEndsTheStreamsOfCredentialsItNoLongerAllows) {
  const std::string access_file = CopyAccessFile();
  StartSecureServer(/*mutual=*/false, access_file);
  NodeClient node(Channel({"", "node-b-token"}));
  ASSERT_TRUE(node.Hello("node-b"));
  ASSERT_TRUE(node.AwaitPolicy().has_value());
  // A dashboard watching the policy.
  auto viewer = v1::Admin::NewStub(Channel({"", "viewer-token"}));
  grpc::ClientContext watch_context;
  watch_context.set_deadline(test_support::Deadline());
  std::unique_ptr<grpc::ClientReader<v1::Policy>> watch =
      viewer->WatchPolicy(&watch_context, v1::WatchPolicyRequest());
  v1::Policy watched;
  ASSERT_TRUE(watch->Read(&watched));

  // Only admins reload; without one nothing is read.
  EXPECT_THAT(ReloadAccessAs({"", "viewer-token"}),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("ROLE_ADMIN")));
  // A bad file, or none, changes nothing: the node streams on, its token still works.
  std::ofstream(access_file, std::ios::trunc) << "principal { name: \"nobody\" }\n";
  EXPECT_THAT(ReloadAccessAs({"", "admin-token"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'nobody'")));
  std::filesystem::remove(access_file);
  EXPECT_THAT(ReloadAccessAs({"", "admin-token"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("access.textproto")));
  std::optional<v1::ObservationAck> ack = node.ObserveAndAwaitAck({test_support::Bid(1, 7, "")});
  ASSERT_TRUE(ack.has_value()) << "the node's stream ended at a refused reload";
  EXPECT_THAT(ReportAs({"", "node-b-token"}, "node-b"), IsOk());

  // node-b's token is taken out of the file (its certificate stays).
  CopyAccessFile();
  std::ifstream in(access_file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string token_line =
      "  token_sha256: \"7d49769b839b5fb183eb8d87e7d5fc00841dd27dde42d7c754237fa30786836f\"\n";
  ASSERT_NE(text.find(token_line), std::string::npos);
  text.erase(text.find(token_line), token_line.size());
  std::ofstream(access_file, std::ios::trunc) << text;
  absl::StatusOr<v1::ReloadAccessResponse> reloaded = ReloadAccessAs({"", "admin-token"});
  ASSERT_THAT(reloaded, IsOk());
  EXPECT_EQ(reloaded->principals(), 4u);
  EXPECT_EQ(reloaded->streams_ended(), 1u);
  EXPECT_THAT(FromGrpc(node.AwaitEnd()),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("breakerd's access file changed: the bearer token is not in")));
  EXPECT_THAT(ConnectAs({"", "node-b-token"}, "node-b"),
              StatusIs(absl::StatusCode::kUnauthenticated));
  // The dashboard, still a viewer, watches on.
  ASSERT_THAT(BanAs({"", "admin-token"}, 5), IsOk());
  ASSERT_TRUE(watch->Read(&watched));
  EXPECT_TRUE(test_support::Bans(watched, 5));
  watch_context.TryCancel();
  while (watch->Read(&watched)) {
  }
  watch->Finish();
}

// A reload that binds a credential to another node id, or takes a role away, ends the streams
// it no longer allows, a node's and a dashboard's.
TEST_F(SecurityTest, AReloadThatMovesACredentialEndsItsStreams) {
  const std::string access_file = CopyAccessFile();
  StartSecureServer(/*mutual=*/true, access_file);
  NodeClient node(Channel({"node_a", ""}));
  ASSERT_TRUE(node.Hello("node-a"));
  ASSERT_TRUE(node.AwaitPolicy().has_value());
  auto viewer = v1::Admin::NewStub(Channel({"viewer", ""}));
  grpc::ClientContext watch_context;
  watch_context.set_deadline(test_support::Deadline());
  std::unique_ptr<grpc::ClientReader<v1::Policy>> watch =
      viewer->WatchPolicy(&watch_context, v1::WatchPolicyRequest());
  v1::Policy watched;
  ASSERT_TRUE(watch->Read(&watched));

  // node-a's certificate now names node "node-z"; the dashboard's certificate is a node's.
  std::ofstream(access_file, std::ios::trunc)
      << "principal { name: \"node-z\" role: ROLE_NODE "
         "certificate_identity: \"node-a.pool.test\" }\n"
         "principal { name: \"dashboard\" role: ROLE_NODE "
         "certificate_identity: \"viewer.pool.test\" }\n"
         "principal { name: \"ops\" role: ROLE_ADMIN certificate_identity: \"admin.pool.test\" }\n";
  absl::StatusOr<v1::ReloadAccessResponse> reloaded = ReloadAccessAs({"admin", ""});
  ASSERT_THAT(reloaded, IsOk());
  EXPECT_EQ(reloaded->principals(), 3u);
  EXPECT_EQ(reloaded->streams_ended(), 2u);
  EXPECT_THAT(FromGrpc(node.AwaitEnd()),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("access file changed: this credential belongs to node 'node-z'")));
  while (watch->Read(&watched)) {
  }
  EXPECT_THAT(FromGrpc(watch->Finish()),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("access file changed: 'dashboard' has the role ROLE_NODE")));
  EXPECT_THAT(ConnectAs({"node_a", ""}, "node-z"), IsOk());
}

TEST_F(SecurityTest, WithoutAnAccessFileThereIsNothingToReload) {
  StartServer();
  auto admin = v1::Admin::NewStub(channel_);
  EXPECT_THAT(::breaker::testing::CallUnary(*admin, &v1::Admin::Stub::async::ReloadAccess,
                                            v1::ReloadAccessRequest()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("--access_file")));
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

TEST(SecurityFromFilesTest, NamesWhatItCannotRead) {
  const absl::StatusOr<client::ChannelSecurity> no_token =
      client::SecurityFromFiles({}, "/nonexistent/node.token");
  ASSERT_FALSE(no_token.ok());
  EXPECT_THAT(std::string(no_token.status().message()), HasSubstr("/nonexistent/node.token"));
  EXPECT_THAT(client::SecurityFromFiles({"", Tls("admin.pem"), ""}, ""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--tls_key")));
  const absl::StatusOr<client::ChannelSecurity> plaintext = client::SecurityFromFiles({}, "");
  ASSERT_THAT(plaintext, IsOk());
  EXPECT_NE(plaintext->credentials, nullptr);
  EXPECT_EQ(plaintext->bearer_token, "");
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
