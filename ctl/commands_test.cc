// Every breakerctl command that shows breakerd's answers to people, against a fake Admin service
// whose every string is hostile (a screen clear, a forged row, a NUL, a right-to-left
// override, invisible characters): what reaches the terminal is inert text, each table keeps
// one row per entry, and the hostile strings are shown escaped.

#include "ctl/commands.h"

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "common/fake_clock.h"
#include "ctl/command_line.h"
#include "gmock/gmock.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::ctl {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::testing::IsOk;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::StartsWith;

// A screen clear, a forged row after CR LF, a NUL, a right-to-left override, a bidi isolate, a
// C1 control (NEL), a zero-width space and a backslash. (Invalid UTF-8 cannot cross gRPC in a
// proto3 string: format_test covers it.)
constexpr char kHostileBytes[] = "x\x1b[2J\r\nbn-forged  connected\0\u202e\u2066\u0085\u200b\\";
const std::string kHostile(kHostileBytes, sizeof(kHostileBytes) - 1);
// How it is shown.
constexpr char kShown[] =
    "x\\x1b[2J\\r\\nbn-forged  connected\\x00\\u202e\\u2066\\u0085\\u200b\\\\";

v1::Ban HostileBan() {
  v1::Ban ban;
  ban.set_kind(v1::BAN_KIND_OPERATOR);
  ban.set_until_reset(true);
  ban.set_reason(kHostile);
  return ban;
}

v1::Policy HostilePolicy() {
  v1::Policy policy;
  policy.set_version(3);
  policy.set_mode(v1::MODE_TRUSTED_ONLY);
  policy.set_mode_reason(kHostile);
  policy.set_reason(kHostile);
  v1::BuilderBan* builder = policy.add_banned_builders();
  builder->set_builder_index(5);
  *builder->mutable_ban() = HostileBan();
  v1::RelayBan* relay = policy.add_banned_relays();
  relay->set_relay(kHostile);
  *relay->mutable_ban() = HostileBan();
  policy.add_trusted_relays(kHostile);
  v1::MissedSlotState* missed = policy.mutable_missed_slots();
  missed->set_active(true);
  missed->set_tripped(true);
  missed->set_rule(kHostile);
  return policy;
}

v1::Config HostileConfig() {
  v1::Config config;
  config.mutable_chain()->set_network(kHostile);
  config.add_relays()->set_identifier(kHostile);
  config.add_blacklisted_relays(kHostile);
  return config;
}

// Every answer full of kHostile; GetBuilder of index 666 is refused with it.
class HostileAdmin final : public v1::Admin::Service {
 public:
  grpc::Status GetPolicy(grpc::ServerContext*, const v1::GetPolicyRequest*,
                         v1::Policy* response) override {
    *response = HostilePolicy();
    return grpc::Status::OK;
  }
  grpc::Status ListBuilders(grpc::ServerContext*, const v1::ListBuildersRequest*,
                            v1::ListBuildersResponse* response) override {
    for (int i = 0; i < 2; ++i) *response->add_builders() = HostileBuilder(5 + i);
    return grpc::Status::OK;
  }
  grpc::Status GetBuilder(grpc::ServerContext*, const v1::GetBuilderRequest* request,
                          v1::Builder* response) override {
    if (request->builder_index() == 666) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, kHostile);
    }
    *response = HostileBuilder(request->builder_index());
    return grpc::Status::OK;
  }
  grpc::Status ListRelays(grpc::ServerContext*, const v1::ListRelaysRequest*,
                          v1::ListRelaysResponse* response) override {
    for (int i = 0; i < 2; ++i) {
      v1::Relay* relay = response->add_relays();
      relay->set_relay(absl::StrCat(kHostile, i));
      *relay->mutable_ban() = HostileBan();
      relay->add_builder_indices(5);
    }
    return grpc::Status::OK;
  }
  grpc::Status ListNodes(grpc::ServerContext*, const v1::ListNodesRequest*,
                         v1::ListNodesResponse* response) override {
    response->set_policy_version(3);
    for (int i = 0; i < 2; ++i) {
      v1::Node* node = response->add_nodes();
      node->set_node_id(absl::StrCat(kHostile, i));
      node->set_connected(i == 0);
      node->set_peer(kHostile);
      node->set_client_version(kHostile);
    }
    v1::Replication* replication = response->mutable_replication();
    replication->set_leader(kHostile);
    replication->add_replicas(kHostile);
    replication->add_replicas(kHostile);
    return grpc::Status::OK;
  }
  grpc::Status BanBuilder(grpc::ServerContext*, const v1::BanBuilderRequest*,
                          v1::Policy* response) override {
    *response = HostilePolicy();
    return grpc::Status::OK;
  }
  grpc::Status UnbanBuilder(grpc::ServerContext*, const v1::UnbanBuilderRequest*,
                            v1::Policy* response) override {
    *response = HostilePolicy();
    return grpc::Status::OK;
  }
  grpc::Status BanRelay(grpc::ServerContext*, const v1::BanRelayRequest*,
                        v1::Policy* response) override {
    *response = HostilePolicy();
    return grpc::Status::OK;
  }
  grpc::Status UnbanRelay(grpc::ServerContext*, const v1::UnbanRelayRequest*,
                          v1::Policy* response) override {
    *response = HostilePolicy();
    return grpc::Status::OK;
  }
  grpc::Status SetBuilderTrust(grpc::ServerContext*, const v1::SetBuilderTrustRequest*,
                               v1::Policy* response) override {
    *response = HostilePolicy();
    return grpc::Status::OK;
  }
  grpc::Status SetRelayTrust(grpc::ServerContext*, const v1::SetRelayTrustRequest*,
                             v1::Policy* response) override {
    *response = HostilePolicy();
    return grpc::Status::OK;
  }
  grpc::Status Reset(grpc::ServerContext*, const v1::ResetRequest*, v1::Policy* response) override {
    *response = HostilePolicy();
    return grpc::Status::OK;
  }
  grpc::Status GetConfig(grpc::ServerContext*, const v1::GetConfigRequest*,
                         v1::Config* response) override {
    *response = HostileConfig();
    return grpc::Status::OK;
  }
  grpc::Status ReloadConfig(grpc::ServerContext*, const v1::ReloadConfigRequest*,
                            v1::Config* response) override {
    *response = HostileConfig();
    return grpc::Status::OK;
  }
  grpc::Status ReloadAccess(grpc::ServerContext*, const v1::ReloadAccessRequest*,
                            v1::ReloadAccessResponse* response) override {
    response->set_principals(2);
    return grpc::Status::OK;
  }
  grpc::Status WatchPolicy(grpc::ServerContext*, const v1::WatchPolicyRequest*,
                           grpc::ServerWriter<v1::Policy>* writer) override {
    writer->Write(HostilePolicy());
    return grpc::Status::OK;
  }

 private:
  static v1::Builder HostileBuilder(uint64_t index) {
    v1::Builder builder;
    builder.set_builder_index(index);
    *builder.mutable_ban() = HostileBan();
    builder.add_relays(kHostile);
    builder.add_relays(kHostile);
    return builder;
  }
};

struct Printed {
  absl::Status status;
  int exit_code = 0;
  std::string out;
  std::string err;
};

class CommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override { server_->Shutdown(); }

  // Runs breakerctl's `args` against the hostile service, as breakerctl_main does.
  Printed Run(std::vector<std::string> args) {
    args.insert(args.begin(), absl::StrCat("--target=127.0.0.1:", port_));
    CommandLine line;
    Printed printed;
    EXPECT_THAT(ParseCommandLine(args, CommandSpecs(), &line), IsOk()) << absl::StrJoin(args, " ");
    absl::StatusOr<GlobalOptions> options = GlobalOptionsFrom(line);
    EXPECT_THAT(options, IsOk());
    if (!options.ok()) return printed;
    std::ostringstream out;
    std::ostringstream err;
    printed.status = RunCommand(line, *options, clock_, out, err);
    printed.exit_code = ReportResult(line, *options, printed.status, err);
    printed.out = out.str();
    printed.err = err.str();
    return printed;
  }

  ::breaker::testing::FakeClock clock_{absl::FromUnixSeconds(1606824023)};
  HostileAdmin service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// Nothing but printable ASCII and line ends: nothing a terminal acts on. (No letter of
// kHostile may pass through ForTerminal.)
void ExpectInert(const std::string& text, const std::string& what) {
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    ASSERT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f))
        << what << ": byte 0x" << std::hex << static_cast<int>(c) << " at " << std::dec << i
        << " in\n"
        << text;
  }
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(absl::StripSuffix(text, "\n"), '\n');
}

TEST_F(CommandsTest, EveryCommandShowsHostileStringsEscapedOneRowPerEntry) {
  struct Case {
    std::vector<std::string> args;
    // Lines printed: a table's header and one row per entry, or one per key.
    size_t lines;
    // Whether breakerd's strings are in it (not only numbers).
    bool shows_strings = true;
  };
  const std::vector<Case> cases = {
      // mode, because, version, computed at, last change, banned, trusted, breaker, nodes,
      // leader, replicas.
      {{"status"}, 11},
      // The leader line, the version line, the header, two nodes.
      {{"nodes"}, 5},
      {{"builders"}, 3},
      // builder, banned, reason, failures, trusted, pubkey, relays.
      {{"builder", "5"}, 7},
      {{"relays"}, 3},
      // What was done, then the policy.
      {{"ban", "5", "--reason=r"}, 2, false},
      {{"ban", "--relay=" + kHostile, "--reason=r"}, 2},
      {{"unban", "5"}, 2, false},
      {{"unban", "--relay=" + kHostile}, 2},
      {{"trust", "5"}, 2, false},
      {{"untrust", "--relay=" + kHostile}, 2},
      {{"reset"}, 2, false},
      {{"watch", "--count=1"}, 1},
      {{"reload-access"}, 1, false},
  };
  for (const Case& c : cases) {
    const std::string what = absl::StrJoin(c.args, " ");
    SCOPED_TRACE(what);
    const Printed printed = Run(c.args);
    ASSERT_THAT(printed.status, IsOk()) << printed.err;
    ExpectInert(printed.out, what);
    EXPECT_EQ(printed.err, "");
    EXPECT_THAT(Lines(printed.out), SizeIs(c.lines)) << printed.out;
    if (c.shows_strings) {
      EXPECT_THAT(printed.out, HasSubstr(kShown)) << printed.out;
    }
  }
}

TEST_F(CommandsTest, TablesKeepTheirColumns) {
  // Each row of `nodes` starts with its node id escaped and has all eight columns: the forged
  // "bn-forged  connected" stays inside the first cell.
  const std::vector<std::string> lines = Lines(Run({"nodes"}).out);
  ASSERT_THAT(lines, SizeIs(5));
  EXPECT_EQ(lines[0], absl::StrCat("leader ", kShown, " since -; replicas ", kShown, ", ", kShown));
  EXPECT_THAT(lines[3], StartsWith(absl::StrCat(kShown, "0  connected  ", kShown, "  ", kShown)));
  EXPECT_THAT(lines[4], StartsWith(absl::StrCat(kShown, "1  stale      ", kShown, "  ", kShown)));
}

TEST_F(CommandsTest, WatchStampsEachVersionWithTheClocksTime) {
  const Printed printed = Run({"watch", "--count=1"});
  ASSERT_THAT(printed.status, IsOk()) << printed.err;
  EXPECT_THAT(printed.out, StartsWith("2020-12-01T12:00:23Z  version ")) << printed.out;
}

TEST_F(CommandsTest, ConfigurationTextEscapesItsStrings) {
  for (const char* command : {"config", "reload"}) {
    const Printed printed = Run({command});
    ASSERT_THAT(printed.status, IsOk()) << printed.err;
    ExpectInert(printed.out, command);
    // The text format's own escapes, so that the output stays a configuration file.
    EXPECT_THAT(printed.out, HasSubstr("identifier: \"x\\033[2J\\r\\nbn-forged  connected\\000"))
        << printed.out;
  }
}

TEST_F(CommandsTest, ErrorMessagesAreEscaped) {
  const Printed printed = Run({"builder", "666"});
  EXPECT_EQ(printed.exit_code, 1);
  ExpectInert(printed.err, "stderr");
  const std::vector<std::string> lines = Lines(printed.err);
  ASSERT_THAT(lines, SizeIs(2)) << printed.err;
  EXPECT_EQ(lines[0], absl::StrCat("breakerctl builder: INVALID_ARGUMENT: ", kShown));
  EXPECT_THAT(lines[1], StartsWith("hint: "));
}

TEST_F(CommandsTest, JsonEscapesEveryControlAndNonAsciiCharacter) {
  for (const char* command : {"nodes", "status", "relays", "builders", "config"}) {
    const Printed printed = Run({"--json", command});
    ASSERT_THAT(printed.status, IsOk());
    ExpectInert(printed.out, command);
    EXPECT_THAT(Lines(printed.out), SizeIs(1)) << command;
    EXPECT_THAT(printed.out, HasSubstr("x\\u001b[2J\\r\\nbn-forged  connected\\u0000\\u202e"
                                       "\\u2066\\u0085\\u200b\\\\"))
        << printed.out;
  }
}

}  // namespace
}  // namespace breaker::ctl
