// breakerctl against a real breakerd: an in-process Server on a loopback port (fake clock, a
// configuration file in the test's directory), and the real breakerctl binary run as a child
// process, whose output and exit code are checked as an operator's script would see them.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "client/client.h"
#include "common/fake_clock.h"
#include "core/chain_time.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/codec/config_file.h"
#include "service/rpc/server.h"
#include "tests/support/status_matchers.h"
#include "tests/support/subprocess.h"
#include "tests/support/test_util.h"

namespace breaker {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::testing::CallUnary;
using ::breaker::testing::ClosedPort;
using ::breaker::testing::FakeClock;
using ::breaker::testing::IsOk;
using ::breaker::testing::Subprocess;
using ::breaker::testing::TestDir;
using ::breaker::testing::WaitFor;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

// Mainnet with Gloas from genesis: the per-builder rules apply.
core::ChainSpec Chain() {
  core::ChainSpec spec = core::ChainSpecForNetwork("mainnet").value();
  spec.gloas_fork_epoch = 0;
  return spec;
}

constexpr core::Epoch kStartEpoch = 100;
constexpr core::Slot kStartSlot = kStartEpoch * 32 + 8;

// The chain, builder 2 trusted, one configured relay serving builder 11.
constexpr char kConfig[] =
    "chain { network: \"mainnet\" gloas_fork_epoch: 0 }\n"
    "trusted_builders: [2]\n"
    "relays { identifier: \"https://relay.example.com\" builder_indices: [11] }\n";

// Exit codes, as documented by `breakerctl --help`.
constexpr int kOk = 0;
constexpr int kRefused = 1;
constexpr int kUsage = 2;
constexpr int kUnreachable = 3;
constexpr int kExpectationFailed = 4;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::trunc);
  file << text;
  ASSERT_TRUE(file.good()) << path;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

// The breakerctl binary, from the test's runfiles.
std::string BreakerctlPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || workspace == nullptr) return "ctl/breakerctl";
  return absl::StrCat(srcdir, "/", workspace, "/ctl/breakerctl");
}

// How a finished breakerctl ended.
struct Outcome {
  // The exit code; -1 when it did not exit by itself in time (it was killed).
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::ostream& operator<<(std::ostream& os, const Outcome& outcome) {
  return os << "exit " << outcome.exit_code << "\n--- stdout\n"
            << outcome.out << "--- stderr\n"
            << outcome.err;
}

// breakerctl running as a child process (see tests/support/subprocess.h).
class Child {
 public:
  explicit Child(const std::vector<std::string>& args) {
    Subprocess::Options options;
    options.binary = BreakerctlPath();
    options.args = args;
    options.name = "breakerctl";
    absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(std::move(options));
    if (started.ok()) {
      process_ = *std::move(started);
    } else {
      ADD_FAILURE() << "cannot start breakerctl: " << started.status();
    }
  }

  // What it has written to stdout so far.
  std::string Stdout() const {
    return process_ == nullptr ? "" : Joined(process_->Lines(Subprocess::Stream::kStdout));
  }

  // Waits for it to exit, killing it after `timeout`.
  Outcome Wait(absl::Duration timeout) {
    Outcome outcome;
    if (process_ == nullptr) return outcome;
    std::optional<int> status = process_->WaitUntilExit(absl::Now() + timeout);
    if (!status.has_value()) {
      process_->Kill(SIGKILL);
      process_->Wait();
    } else if (WIFEXITED(*status)) {
      outcome.exit_code = WEXITSTATUS(*status);
    }
    // The child has exited; its last lines may still be in the pipes: read to their end.
    const auto never = [](const std::vector<std::string>&) { return false; };
    for (Subprocess::Stream stream : {Subprocess::Stream::kStdout, Subprocess::Stream::kStderr}) {
      process_->WaitUntil(stream, never, absl::Now() + absl::Seconds(10));
    }
    outcome.out = Joined(process_->Lines(Subprocess::Stream::kStdout));
    outcome.err = Joined(process_->Lines(Subprocess::Stream::kStderr));
    return outcome;
  }

 private:
  static std::string Joined(const std::vector<std::string>& lines) {
    std::string text;
    for (const std::string& line : lines) absl::StrAppend(&text, line, "\n");
    return text;
  }

  std::unique_ptr<Subprocess> process_;
};

// A listening socket that never accepts: connections complete in the kernel's backlog and
// then hear nothing, as from a breakerd that hangs.
class SilentListener {
 public:
  SilentListener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(listen(fd_, 16), 0);
    socklen_t length = sizeof(address);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    port_ = ntohs(address.sin_port);
  }
  ~SilentListener() { close(fd_); }
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;

  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

template <typename Message>
Message FromJson(const std::string& json) {
  Message message;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &message);
  EXPECT_TRUE(status.ok()) << status << "\n" << json;
  return message;
}

// Member `name` of the JSON object `json`, re-encoded as JSON; empty (and a test failure) when
// absent. Through reflection on a Struct the library allocates: code compiled here must not
// touch a map field, since under ThreadSanitizer protobuf's map_field.h gives MapFieldBase
// members that the system's uninstrumented libprotobuf does not have, and inline accessors
// then read the wrong offsets.
std::string JsonMember(const std::string& json, const std::string& name) {
  namespace pb = ::google::protobuf;
  const std::unique_ptr<pb::Message> object(pb::Struct::default_instance().New());
  const auto parsed = pb::util::JsonStringToMessage(json, object.get());
  EXPECT_TRUE(parsed.ok()) << parsed << "\n" << json;
  const pb::FieldDescriptor* fields = object->GetDescriptor()->FindFieldByName("fields");
  const pb::Reflection* reflection = object->GetReflection();
  for (int i = 0; i < reflection->FieldSize(*object, fields); ++i) {
    // A map entry: key is field 1, value field 2.
    const pb::Message& entry = reflection->GetRepeatedMessage(*object, fields, i);
    const pb::Descriptor* type = entry.GetDescriptor();
    if (entry.GetReflection()->GetString(entry, type->FindFieldByNumber(1)) != name) continue;
    std::string member;
    EXPECT_TRUE(pb::util::MessageToJsonString(
                    entry.GetReflection()->GetMessage(entry, type->FindFieldByNumber(2)), &member)
                    .ok());
    return member;
  }
  ADD_FAILURE() << "no member " << name << " in " << json;
  return "";
}

// A failure of `builder`: its payload of the previous slot is missing, 90% attested.
v1::Observation Missing(uint64_t sequence, uint64_t builder) {
  v1::Observation observation;
  observation.set_sequence(sequence);
  observation.set_slot(kStartSlot - 1);
  v1::PayloadMissing* missing = observation.mutable_payload_missing();
  missing->set_builder_index(builder);
  missing->set_block_root(std::string(31, '\0') + static_cast<char>(sequence));
  missing->set_attested_fraction(0.9);
  return observation;
}

class BreakerctlTest : public ::testing::Test {
 protected:
  BreakerctlTest()
      : dir_(TestDir()),
        config_path_(dir_ + "/breakerd.textproto"),
        clock_(core::StartOf(kStartSlot, Chain())) {}

  void SetUp() override {
    WriteFile(config_path_, kConfig);
    service::ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.state_dir = dir_ + "/state";
    options.config_path = config_path_;
    options.clock = &clock_;
    options.run_ticker = false;
    absl::StatusOr<std::unique_ptr<service::Server>> server = service::Server::Start(options);
    ASSERT_THAT(server, IsOk());
    server_ = *std::move(server);
    target_ = absl::StrCat("127.0.0.1:", server_->port());
    channel_ = grpc::CreateChannel(target_, grpc::InsecureChannelCredentials());
    admin_ = v1::Admin::NewStub(channel_);
  }

  void TearDown() override {
    admin_.reset();
    channel_.reset();
    if (server_ != nullptr) server_->Shutdown();
    server_.reset();
  }

  // Runs breakerctl with exactly `args` and waits for it.
  Outcome Run(const std::vector<std::string>& args) { return Child(args).Wait(absl::Seconds(60)); }

  // Runs breakerctl against the test's breakerd.
  Outcome Ctl(std::vector<std::string> args) {
    args.insert(args.begin(), "--target=" + target_);
    return Run(args);
  }

  // Runs breakerctl against the test's breakerd and expects success.
  std::string CtlOk(const std::vector<std::string>& args) {
    const Outcome outcome = Ctl(args);
    EXPECT_EQ(outcome.exit_code, kOk) << absl::StrJoin(args, " ") << "\n" << outcome;
    EXPECT_EQ(outcome.err, "") << absl::StrJoin(args, " ");
    return outcome.out;
  }

  v1::Policy GetPolicy() {
    absl::StatusOr<v1::Policy> policy =
        CallUnary(*admin_, &v1::Admin::Stub::async::GetPolicy, v1::GetPolicyRequest());
    EXPECT_THAT(policy, IsOk());
    return policy.value_or(v1::Policy());
  }

  // Reports builder failures from node "bn-report" (one failure is a ban by default).
  void ReportFailures(const std::vector<uint64_t>& builders) {
    auto breaker = v1::Breaker::NewStub(channel_);
    v1::ReportRequest request;
    request.set_node_id("bn-report");
    for (uint64_t builder : builders) {
      *request.mutable_observations()->add_observations() = Missing(++sequence_, builder);
    }
    ASSERT_THAT(CallUnary(*breaker, &v1::Breaker::Stub::async::Report, request), IsOk());
  }

  // A beacon node of the fleet, connected through the client library; null on failure.
  std::unique_ptr<client::BreakerClient> StartNode(
      const std::string& node_id, const std::string& client_version = "test-node/1.0") {
    client::ClientOptions options;
    options.addresses = {target_};
    options.node_id = node_id;
    options.network = "mainnet";
    options.client_version = client_version;
    options.initial_backoff = absl::Milliseconds(10);
    options.max_backoff = absl::Milliseconds(100);
    options.evaluation_interval = absl::Milliseconds(10);
    options.clock = &clock_;
    absl::StatusOr<std::unique_ptr<client::BreakerClient>> node =
        client::StartGrpcClient(std::move(options));
    EXPECT_THAT(node, IsOk());
    if (!node.ok()) return nullptr;
    return *std::move(node);
  }

  // Waits until ListNodes shows `node_id` connected (or not) with the current policy acked.
  bool AwaitNode(const std::string& node_id, bool connected) {
    return WaitFor([&] {
      absl::StatusOr<v1::ListNodesResponse> nodes =
          CallUnary(*admin_, &v1::Admin::Stub::async::ListNodes, v1::ListNodesRequest());
      if (!nodes.ok()) return false;
      for (const v1::Node& node : nodes->nodes()) {
        if (node.node_id() == node_id) {
          return node.connected() == connected && (!connected || node.lag() == 0);
        }
      }
      return false;
    });
  }

  const std::string dir_;
  const std::string config_path_;
  FakeClock clock_;
  std::unique_ptr<service::Server> server_;
  std::string target_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Admin::Stub> admin_;
  uint64_t sequence_ = 0;
};

// --- help and usage -----------------------------------------------------------------------------

TEST_F(BreakerctlTest, HelpListsEveryCommandAndTheExitCodes) {
  const Outcome outcome = Run({"--help"});
  ASSERT_EQ(outcome.exit_code, kOk) << outcome;
  for (const char* command :
       {"status", "builders", "builder", "relays", "nodes", "ban", "unban", "trust", "untrust",
        "reset", "watch", "config", "reload", "reload-access", "simulate", "help"}) {
    EXPECT_THAT(outcome.out, HasSubstr(absl::StrCat("\n  ", command, " "))) << command;
  }
  EXPECT_THAT(outcome.out, HasSubstr("--target=HOST:PORT"));
  EXPECT_THAT(outcome.out, HasSubstr("Exit codes:"));
  EXPECT_THAT(outcome.out, HasSubstr("3   breakerd could not be reached"));
  EXPECT_EQ(Run({"help"}).out, outcome.out);
}

TEST_F(BreakerctlTest, EveryCommandHasItsOwnHelp) {
  for (const char* command :
       {"status", "builders", "builder", "relays", "nodes", "ban", "unban", "trust", "untrust",
        "reset", "watch", "config", "reload", "reload-access", "simulate"}) {
    const Outcome flag = Run({command, "--help"});
    ASSERT_EQ(flag.exit_code, kOk) << command << "\n" << flag;
    EXPECT_THAT(flag.out, StartsWith(absl::StrCat("Usage: breakerctl ", command))) << command;
    EXPECT_THAT(flag.out, HasSubstr("Example:\n  breakerctl")) << command;
    EXPECT_THAT(flag.out, HasSubstr("Global flags:")) << command;
    EXPECT_EQ(Run({"help", command}).out, flag.out) << command;
  }
  const std::string ban = Run({"ban", "--help"}).out;
  EXPECT_THAT(ban, HasSubstr("--reason=TEXT"));
  EXPECT_THAT(ban, HasSubstr("--until_epoch=N"));
  // Only the command's own flags and the global ones.
  EXPECT_THAT(ban, Not(HasSubstr("--scenario")));
}

TEST_F(BreakerctlTest, UsageErrorsExitTwoAndShowTheUsage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{}, "no command given"},
      {{"frobnicate"}, "unknown command 'frobnicate'"},
      {{"ban", "5"}, "missing --reason=TEXT"},
      {{"ban", "--reason=x"}, "missing INDEX"},
      {{"ban", "five", "--reason=x"}, "INDEX takes a whole number"},
      {{"ban", "5", "--reason=x", "--until_epoch=soon"}, "--until_epoch takes a whole number"},
      {{"ban", "5", "--relay=https://relay.example.com", "--reason=x"},
       "give a builder INDEX or --relay=URL, not both"},
      {{"ban", "--relay=", "--reason=x"}, "--relay needs the relay's endpoint"},
      {{"ban", "--relay=https://relay.example.com"}, "missing --reason=TEXT"},
      {{"unban"}, "missing INDEX (or --relay=URL)"},
      {{"unban", "5", "--relay", "https://relay.example.com"},
       "give a builder INDEX or --relay=URL, not both"},
      {{"builders", "--colour"}, "unknown flag --colour"},
      {{"builder"}, "missing INDEX"},
      {{"trust"}, "give a builder INDEX or --relay=URL"},
      {{"trust", "5", "--relay=https://relay.example.com"}, "give a builder INDEX or --relay=URL"},
      {{"watch", "--count=0"}, "--count takes a number of versions"},
      {{"status", "--timeout=soon"}, "--timeout takes a positive duration"},
      {{"simulate", "--config=x"}, "missing --scenario=FILE"},
      {{"help", "frobnicate"}, "no command 'frobnicate'"},
  };
  for (const Case& c : cases) {
    const Outcome outcome = Ctl(c.args);
    EXPECT_EQ(outcome.exit_code, kUsage) << absl::StrJoin(c.args, " ") << "\n" << outcome;
    EXPECT_THAT(outcome.err, HasSubstr(c.message)) << absl::StrJoin(c.args, " ");
    EXPECT_THAT(outcome.err, HasSubstr("Usage: breakerctl")) << absl::StrJoin(c.args, " ");
    EXPECT_EQ(outcome.out, "") << absl::StrJoin(c.args, " ");
  }
  // A usage error sends nothing: the policy did not change.
  EXPECT_EQ(GetPolicy().banned_builders_size(), 0);
  EXPECT_EQ(GetPolicy().banned_relays_size(), 0);
  const Outcome ban = Ctl({"ban", "5"});
  EXPECT_THAT(ban.err, HasSubstr("Usage: breakerctl ban INDEX --reason=TEXT [--until_epoch=N]"));
}

// --- reachability -------------------------------------------------------------------------------

TEST_F(BreakerctlTest, UnreachableBreakerdExitsThree) {
  const std::string target = absl::StrCat("127.0.0.1:", ClosedPort());
  for (const char* command : {"status", "builders", "watch"}) {
    const Outcome outcome = Run({"--target", target, command});
    EXPECT_EQ(outcome.exit_code, kUnreachable) << command << "\n" << outcome;
    EXPECT_THAT(outcome.err, HasSubstr("UNAVAILABLE")) << command;
    EXPECT_THAT(outcome.err,
                HasSubstr(absl::StrCat("is breakerd running at ", target, "? (--target")))
        << command;
  }
}

TEST_F(BreakerctlTest, SeveralTargetsAreTriedInTurnUntilOneAnswers) {
  // A replica that is down, then the one that serves: the command runs against the second.
  const std::string down = absl::StrCat("127.0.0.1:", ClosedPort());
  const Outcome outcome = Run({"--target=" + down + "," + target_, "status"});
  EXPECT_EQ(outcome.exit_code, kOk) << outcome;
  EXPECT_THAT(outcome.out, HasSubstr("policy version"));
  // None answering: each address's reason, and the exit code of an unreachable breakerd.
  const std::string also_down = absl::StrCat("127.0.0.1:", ClosedPort());
  const Outcome none = Run({"--target=" + down + "," + also_down, "status"});
  EXPECT_EQ(none.exit_code, kUnreachable) << none;
  EXPECT_THAT(none.err, AllOf(HasSubstr("no address of --target answered"), HasSubstr(down + ":"),
                              HasSubstr(also_down + ":")));
  EXPECT_EQ(Run({"--target=" + target_ + ",", "status"}).exit_code, kUsage);
}

TEST_F(BreakerctlTest, SilentBreakerdExitsThreeAtTheTimeout) {
  SilentListener listener;
  const std::string target = absl::StrCat("127.0.0.1:", listener.port());
  const Outcome outcome = Run({"status", "--target=" + target, "--timeout=300ms"});
  EXPECT_EQ(outcome.exit_code, kUnreachable) << outcome;
  EXPECT_THAT(outcome.err, HasSubstr("DEADLINE_EXCEEDED"));
  EXPECT_THAT(outcome.err, HasSubstr("did not answer within 300ms"));
}

// --- inspection ---------------------------------------------------------------------------------

TEST_F(BreakerctlTest, StatusShowsModeVersionBansAndNodes) {
  ReportFailures({7});
  std::unique_ptr<client::BreakerClient> node = StartNode("bn-1");
  ASSERT_NE(node, nullptr);
  ASSERT_TRUE(AwaitNode("bn-1", true));
  const v1::Policy policy = GetPolicy();

  const std::string out = CtlOk({"status"});
  EXPECT_THAT(out, HasSubstr("mode                 ALL_BUILDERS: bids from every builder"));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("policy version       ", policy.version(), "\n")));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("computed at          slot ", kStartSlot, ", epoch ",
                                          kStartEpoch, "\n")));
  EXPECT_THAT(out, HasSubstr("last change          banned builders 7\n"));
  EXPECT_THAT(out, HasSubstr("banned               1 builder, 0 relays\n"));
  EXPECT_THAT(out, HasSubstr("trusted              1 builder, 0 relays\n"));
  EXPECT_THAT(out, HasSubstr("missed-slot breaker  not active"));
  EXPECT_THAT(
      out,
      HasSubstr("nodes                1 of 2 connected; 0 of them behind the current policy\n"));

  const std::string json = CtlOk({"status", "--json"});
  EXPECT_EQ(Lines(json).size(), 1u) << json;
  const v1::Policy from_json = FromJson<v1::Policy>(JsonMember(json, "policy"));
  EXPECT_EQ(from_json.version(), policy.version());
  ASSERT_EQ(from_json.banned_builders_size(), 1);
  EXPECT_EQ(from_json.banned_builders(0).builder_index(), 7u);
  const v1::ListNodesResponse nodes = FromJson<v1::ListNodesResponse>(JsonMember(json, "nodes"));
  // bn-report, which reported the failure without a stream, and bn-1.
  EXPECT_EQ(nodes.nodes_size(), 2);
}

TEST_F(BreakerctlTest, NodesShowsConnectedAndStaleNodes) {
  EXPECT_EQ(CtlOk({"nodes"}), "no nodes known\n");
  {
    std::unique_ptr<client::BreakerClient> gone = StartNode("bn-gone");
    ASSERT_NE(gone, nullptr);
    ASSERT_TRUE(AwaitNode("bn-gone", true));
  }
  ASSERT_TRUE(AwaitNode("bn-gone", false));
  std::unique_ptr<client::BreakerClient> node = StartNode("bn-1");
  ASSERT_NE(node, nullptr);
  ASSERT_TRUE(AwaitNode("bn-1", true));
  const uint64_t version = GetPolicy().version();

  const std::vector<std::string> lines = Lines(CtlOk({"nodes"}));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], absl::StrCat("current policy version ", version));
  EXPECT_THAT(lines[1], StartsWith("NODE     STATE      PEER"));
  EXPECT_THAT(lines[1],
              HasSubstr("CLIENT         CONNECTED SINCE       LAST OBSERVATION  ACKED  LAG"));
  const std::string since =
      absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", clock_.Now(), absl::UTCTimeZone()), "  ");
  std::string connected_row;
  std::string stale_row;
  for (size_t i = 2; i < lines.size(); ++i) {
    if (absl::StartsWith(lines[i], "bn-1 ")) connected_row = lines[i];
    if (absl::StartsWith(lines[i], "bn-gone ")) stale_row = lines[i];
  }
  EXPECT_THAT(
      connected_row,
      AllOf(HasSubstr(" connected  ipv4:127.0.0.1:"), HasSubstr("test-node/1.0"), HasSubstr(since),
            HasSubstr(absl::StrCat("  -                 ", version, "      0"))))
      << connected_row;
  EXPECT_THAT(stale_row, HasSubstr(" stale ")) << stale_row;

  const v1::ListNodesResponse nodes = FromJson<v1::ListNodesResponse>(CtlOk({"nodes", "--json"}));
  EXPECT_EQ(nodes.policy_version(), version);
  EXPECT_EQ(nodes.nodes_size(), 2);

  EXPECT_THAT(CtlOk({"status"}), HasSubstr("1 of 2 connected; 0 of them behind"));
}

// What a terminal would act on: a byte other than printable ASCII and the line end.
bool HasTerminalControl(const std::string& text) {
  for (char c : text) {
    if (c != '\n' && (c < 0x20 || c > 0x7e)) return true;
  }
  return false;
}

TEST_F(BreakerctlTest, NodeAndOperatorChosenStringsAreShownEscaped) {
  // A node whose client version would clear the operator's screen, forge a row and reverse
  // the rest of the line.
  std::unique_ptr<client::BreakerClient> node =
      StartNode("bn-1", "\x1b[2J\r\nbn-forged  connected\u202e");
  ASSERT_NE(node, nullptr);
  ASSERT_TRUE(AwaitNode("bn-1", true));
  const std::string nodes = CtlOk({"nodes"});
  EXPECT_FALSE(HasTerminalControl(nodes)) << nodes;
  const std::vector<std::string> lines = Lines(nodes);
  ASSERT_EQ(lines.size(), 3u) << nodes;  // the version, the header, one node
  EXPECT_THAT(lines[2], AllOf(StartsWith("bn-1 "),
                              HasSubstr("  \\x1b[2J\\r\\nbn-forged  connected\\u202e  ")));

  // An operator's reason (set over the API by another tool) in every listing.
  v1::BanBuilderRequest ban;
  ban.set_builder_index(5);
  ban.set_reason("\x1b]0;owned\x07withheld\nforged row\u2066");
  ASSERT_THAT(CallUnary(*admin_, &v1::Admin::Stub::async::BanBuilder, ban), IsOk());
  const std::string shown = "\\x1b]0;owned\\x07withheld\\nforged row\\u2066";
  const std::string builders = CtlOk({"builders", "--banned"});
  EXPECT_FALSE(HasTerminalControl(builders)) << builders;
  EXPECT_EQ(Lines(builders).size(), 2u) << builders;
  EXPECT_THAT(builders, HasSubstr(shown));
  const std::string builder = CtlOk({"builder", "5"});
  EXPECT_FALSE(HasTerminalControl(builder)) << builder;
  EXPECT_THAT(builder, HasSubstr(absl::StrCat("reason    operator: ", shown, "\n")));
  for (const char* command : {"status", "watch"}) {
    std::vector<std::string> args = {command};
    if (absl::string_view(command) == "watch") args.push_back("--count=1");
    const std::string out = CtlOk(args);
    EXPECT_FALSE(HasTerminalControl(out)) << command << "\n" << out;
  }
  const std::string json = CtlOk({"--json", "builders"});
  EXPECT_FALSE(HasTerminalControl(json)) << json;
  EXPECT_THAT(json, HasSubstr("\\u001b]0;owned\\u0007withheld\\nforged row\\u2066"));
}

TEST_F(BreakerctlTest, BanThenBuildersListsItFirstWithItsReason) {
  EXPECT_EQ(CtlOk({"builders", "--banned"}), "no builders banned\n");

  const std::string ban = CtlOk({"ban", "5", "--reason", "withheld twice"});
  EXPECT_EQ(ban,
            absl::StrCat("builder 5 banned until unbanned\npolicy: version ", GetPolicy().version(),
                         ", mode ALL_BUILDERS, 1 builder and 0 relays banned\n"));

  const std::vector<std::string> lines = Lines(CtlOk({"builders"}));
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0], "INDEX  FAILED  BANNED UNTIL  KIND      TRUSTED  RELAYS  REASON");
  EXPECT_EQ(lines[1],
            "5      0       reset         operator  no       -       operator: withheld twice");
  // The trusted builder of the configuration, known but not banned, after the banned one.
  EXPECT_THAT(lines, Contains("2      0       -             -         yes      -       -"));

  EXPECT_THAT(Lines(CtlOk({"builders", "--banned"})), ElementsAre(lines[0], lines[1]));

  const v1::ListBuildersResponse response =
      FromJson<v1::ListBuildersResponse>(CtlOk({"--json", "builders"}));
  ASSERT_GE(response.builders_size(), 2);
  EXPECT_EQ(response.builders(0).builder_index(), 5u);
  EXPECT_EQ(response.builders(0).ban().kind(), v1::BAN_KIND_OPERATOR);
  EXPECT_EQ(response.builders(0).ban().reason(), "operator: withheld twice");

  // One builder in full.
  EXPECT_EQ(CtlOk({"builder", "5"}),
            "builder   5\n"
            "banned    until reset (operator)\n"
            "reason    operator: withheld twice\n"
            "failures  0\n"
            "trusted   no\n"
            "pubkey    -\n"
            "relays    -\n");
  EXPECT_EQ(FromJson<v1::Builder>(CtlOk({"builder", "5", "--json"})).ban().reason(),
            "operator: withheld twice");

  // A ban until a later epoch.
  const std::string until = absl::StrCat(kStartEpoch + 10);
  EXPECT_THAT(CtlOk({"ban", "6", "--reason=late reveals", "--until_epoch=" + until}),
              StartsWith(absl::StrCat("builder 6 banned until epoch ", until, "\n")));
  EXPECT_THAT(CtlOk({"builders", "--banned"}),
              HasSubstr(absl::StrCat("6      0       epoch ", until)));
}

TEST_F(BreakerctlTest, FailureBansShowTheirKindAndRelays) {
  ReportFailures({11});
  const std::string builders = CtlOk({"builders", "--banned"});
  EXPECT_THAT(builders, HasSubstr("11     1       epoch 101     failure  no       "
                                  "https://relay.example.com  1 consecutive failure(s); last: "));

  const std::string relays = CtlOk({"relays"});
  EXPECT_THAT(Lines(relays)[0],
              StartsWith("RELAY                      CONFIGURED  TRUSTED  BANNED UNTIL"));
  EXPECT_THAT(relays, HasSubstr("https://relay.example.com  yes         no"));
  const v1::ListRelaysResponse response =
      FromJson<v1::ListRelaysResponse>(CtlOk({"relays", "--json"}));
  ASSERT_EQ(response.relays_size(), 1);
  EXPECT_THAT(response.relays(0).builder_indices(), Contains(11u));
}

TEST_F(BreakerctlTest, RefusedRequestsExitOneWithTheCodeAndAHint) {
  const Outcome unban = Ctl({"unban", "7"});
  EXPECT_EQ(unban.exit_code, kRefused) << unban;
  EXPECT_THAT(unban.err, HasSubstr("breakerctl unban: NOT_FOUND: builder 7 is not banned\n"));
  EXPECT_THAT(unban.err,
              HasSubstr("hint: nothing to lift; 'breakerctl builders --banned' lists the bans\n"));
  EXPECT_EQ(unban.out, "");

  const Outcome past = Ctl({"ban", "5", "--reason=x", "--until_epoch=50"});
  EXPECT_EQ(past.exit_code, kRefused) << past;
  EXPECT_THAT(past.err, HasSubstr("INVALID_ARGUMENT: ban until epoch 50 would already be over"));
  EXPECT_THAT(past.err, HasSubstr("hint: 'breakerctl status' shows the current epoch"));

  const Outcome self_build = Ctl({"builder", "18446744073709551615"});
  EXPECT_EQ(self_build.exit_code, kRefused) << self_build;
  EXPECT_THAT(self_build.err, HasSubstr("self-build index"));

  const Outcome relay = Ctl({"trust", "--relay=ftp://relay.example.com"});
  EXPECT_EQ(relay.exit_code, kRefused) << relay;
  EXPECT_THAT(relay.err, HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(relay.err, HasSubstr("hint: give the relay's endpoint"));
}

// --- transport security and roles ----------------------------------------------------------------

TEST_F(BreakerctlTest, TlsFlagsAndRolesAreCheckedAndExplained) {
  // breakerd again, now with mutual TLS and the test access file.
  TearDown();
  service::ServerOptions options;
  const std::string tls = "tests/support/testdata/tls/";
  options.listen_address = "127.0.0.1:0";
  options.state_dir = dir_ + "/state";
  options.config_path = config_path_;
  options.clock = &clock_;
  options.run_ticker = false;
  options.tls = {tls + "server.pem", tls + "server.key", tls + "ca.pem"};
  options.access_file = "tests/support/testdata/access.textproto";
  absl::StatusOr<std::unique_ptr<service::Server>> server = service::Server::Start(options);
  ASSERT_THAT(server, IsOk());
  server_ = *std::move(server);
  target_ = absl::StrCat("127.0.0.1:", server_->port());
  auto as = [&](const std::string& who) {
    return std::vector<std::string>{"--tls_ca=" + tls + "ca.pem",
                                    "--tls_cert=" + tls + who + ".pem",
                                    "--tls_key=" + tls + who + ".key"};
  };
  auto with = [](std::vector<std::string> flags, const std::vector<std::string>& command) {
    flags.insert(flags.end(), command.begin(), command.end());
    return flags;
  };

  EXPECT_THAT(CtlOk(with(as("viewer"), {"status"})), HasSubstr("mode"));
  const Outcome viewer_ban = Ctl(with(as("viewer"), {"ban", "5", "--reason=x"}));
  EXPECT_EQ(viewer_ban.exit_code, kRefused) << viewer_ban;
  EXPECT_THAT(viewer_ban.err, HasSubstr("PERMISSION_DENIED: 'dashboard' has the role ROLE_VIEWER"));
  EXPECT_THAT(viewer_ban.err, HasSubstr("hint: viewers may read, only admins change the state"));
  EXPECT_THAT(CtlOk(with(as("admin"), {"ban", "5", "--reason=x"})), HasSubstr("builder 5 banned"));
  // A relay's ban takes the same role as a builder's.
  const Outcome viewer_relay_ban =
      Ctl(with(as("viewer"), {"ban", "--relay=https://relay.example.com", "--reason=x"}));
  EXPECT_EQ(viewer_relay_ban.exit_code, kRefused) << viewer_relay_ban;
  EXPECT_THAT(viewer_relay_ban.err, HasSubstr("PERMISSION_DENIED"));
  EXPECT_THAT(CtlOk(with(as("admin"), {"ban", "--relay=https://relay.example.com", "--reason=x"})),
              HasSubstr("relay https://relay.example.com banned"));
  EXPECT_EQ(Ctl(with(as("viewer"), {"unban", "--relay=https://relay.example.com"})).exit_code,
            kRefused);
  EXPECT_EQ(Ctl(with(as("admin"), {"unban", "--relay=https://relay.example.com"})).exit_code, kOk);

  // The access file is re-read by an admin only.
  EXPECT_EQ(CtlOk(with(as("admin"), {"reload-access"})),
            "access file reloaded: 4 principals in force; 0 streams ended, their credential no "
            "longer allowed\n");
  const v1::ReloadAccessResponse reloaded =
      FromJson<v1::ReloadAccessResponse>(CtlOk(with(as("admin"), {"reload-access", "--json"})));
  EXPECT_EQ(reloaded.principals(), 4u);
  const Outcome viewer_reload = Ctl(with(as("viewer"), {"reload-access"}));
  EXPECT_EQ(viewer_reload.exit_code, kRefused) << viewer_reload;
  EXPECT_THAT(viewer_reload.err, HasSubstr("PERMISSION_DENIED"));

  // A token decides over the certificate: the viewer's connection with the admin's token.
  const std::string token_file = dir_ + "/admin.token";
  WriteFile(token_file, "admin-token\n");
  EXPECT_EQ(Ctl(with(as("viewer"), {"--token_file=" + token_file, "unban", "5"})).exit_code, kOk);

  const Outcome plaintext = Ctl({"status"});
  EXPECT_EQ(plaintext.exit_code, kUnreachable) << plaintext;
  EXPECT_THAT(plaintext.err, HasSubstr("if it serves TLS, give --tls_ca"));
  const Outcome half = Ctl({"--tls_cert=" + tls + "admin.pem", "status"});
  EXPECT_EQ(half.exit_code, kUsage) << half;
  EXPECT_THAT(half.err, HasSubstr("--tls_cert and --tls_key go together"));
  const Outcome missing = Ctl({"--token_file=" + dir_ + "/none.token", "status"});
  EXPECT_EQ(missing.exit_code, kUsage) << missing;
  EXPECT_THAT(missing.err, HasSubstr("none.token"));
}

// --- steering -----------------------------------------------------------------------------------

TEST_F(BreakerctlTest, UnbanLiftsTheBan) {
  CtlOk({"ban", "5", "--reason=x"});
  EXPECT_THAT(CtlOk({"unban", "5"}), StartsWith("builder 5 unbanned"));
  EXPECT_EQ(CtlOk({"builders", "--banned"}), "no builders banned\n");
  EXPECT_EQ(GetPolicy().banned_builders_size(), 0);
}

TEST_F(BreakerctlTest, BanRelayBansItsBuildersAndUnbanRelayLiftsThem) {
  const std::string ban =
      CtlOk({"ban", "--relay=HTTPS://Relay.Example.com/", "--reason", "leaked bids"});
  EXPECT_EQ(ban, absl::StrCat("relay HTTPS://Relay.Example.com/ banned until unbanned, with every "
                              "builder it serves\npolicy: version ",
                              GetPolicy().version(),
                              ", mode ALL_BUILDERS, 1 builder and 1 relay banned\n"));
  // The configured relay, with its builder 11, both banned by the operator.
  EXPECT_THAT(CtlOk({"relays"}),
              HasSubstr("https://relay.example.com  yes         no       reset         operator  "
                        "11        -         operator: leaked bids"));
  EXPECT_THAT(CtlOk({"builders", "--banned"}),
              HasSubstr("11     0       reset         operator  no       "
                        "https://relay.example.com  relay https://relay.example.com is banned: "
                        "operator: leaked bids"));
  v1::Policy policy = GetPolicy();
  ASSERT_EQ(policy.banned_relays_size(), 1);
  EXPECT_EQ(policy.banned_relays(0).relay(), "https://relay.example.com");
  EXPECT_EQ(policy.banned_relays(0).ban().kind(), v1::BAN_KIND_OPERATOR);
  EXPECT_EQ(policy.mode(), v1::MODE_ALL_BUILDERS);

  // Until an epoch, as JSON; a relay no bid came through yet.
  const std::string until = absl::StrCat(kStartEpoch + 10);
  policy = FromJson<v1::Policy>(CtlOk(
      {"ban", "--relay", "relay.other:18550", "--reason=x", "--until_epoch=" + until, "--json"}));
  ASSERT_EQ(policy.banned_relays_size(), 2);
  EXPECT_EQ(policy.banned_relays(0).relay(), "http://relay.other:18550");
  EXPECT_EQ(policy.banned_relays(0).ban().until_epoch(), kStartEpoch + 10);

  // Its builder is unbanned with the relay, not alone.
  const Outcome member = Ctl({"unban", "11"});
  EXPECT_EQ(member.exit_code, kRefused) << member;
  EXPECT_THAT(member.err, HasSubstr("FAILED_PRECONDITION: builder 11 is banned only as a member of "
                                    "relay(s) https://relay.example.com"));
  EXPECT_THAT(member.err, HasSubstr("'breakerctl unban --relay=URL'"));
  EXPECT_THAT(CtlOk({"unban", "--relay=https://relay.example.com:443"}),
              StartsWith("relay https://relay.example.com:443 unbanned (a ban for its builders' "
                         "failures stays)\npolicy: version "));
  policy = GetPolicy();
  EXPECT_EQ(policy.banned_builders_size(), 0);
  ASSERT_EQ(policy.banned_relays_size(), 1);

  const Outcome again = Ctl({"unban", "--relay=https://relay.example.com"});
  EXPECT_EQ(again.exit_code, kRefused) << again;
  EXPECT_THAT(again.err, HasSubstr("NOT_FOUND: relay https://relay.example.com is not banned by "
                                   "the operator"));
  EXPECT_THAT(again.err, HasSubstr("hint: the operator does not ban this relay"));
  const Outcome malformed = Ctl({"ban", "--relay=ftp://relay.example.com", "--reason=x"});
  EXPECT_EQ(malformed.exit_code, kRefused) << malformed;
  EXPECT_THAT(malformed.err, HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(malformed.err, HasSubstr("hint: give the relay's endpoint"));
  const Outcome long_reason =
      Ctl({"ban", "--relay=https://relay.example.com", "--reason=" + std::string(1025, 'r')});
  EXPECT_EQ(long_reason.exit_code, kRefused) << long_reason;
  EXPECT_THAT(long_reason.err, HasSubstr("reason is 1025 bytes"));

  // One of the configuration's blacklisted_relays is unbanned by editing the file.
  WriteFile(config_path_, absl::StrCat(kConfig, "blacklisted_relays: [\"relay.listed:18550\"]\n"));
  EXPECT_THAT(CtlOk({"reload"}), HasSubstr("blacklisted_relays: \"relay.listed:18550\"\n"));
  EXPECT_THAT(CtlOk({"relays"}), HasSubstr("in the configured blacklist"));
  const Outcome listed = Ctl({"unban", "--relay=relay.listed:18550"});
  EXPECT_EQ(listed.exit_code, kRefused) << listed;
  EXPECT_THAT(listed.err, HasSubstr("FAILED_PRECONDITION"));
  EXPECT_THAT(listed.err, HasSubstr("blacklisted_relays stays banned until it is removed"));
}

TEST_F(BreakerctlTest, TrustAndUntrustBuildersAndRelays) {
  v1::Policy policy = FromJson<v1::Policy>(CtlOk({"trust", "9", "--json"}));
  EXPECT_THAT(policy.trusted_builders(), Contains(9u));
  EXPECT_THAT(CtlOk({"untrust", "9"}), StartsWith("builder 9 untrusted\npolicy: version "));
  EXPECT_THAT(GetPolicy().trusted_builders(), Not(Contains(9u)));

  EXPECT_THAT(CtlOk({"trust", "--relay=HTTPS://Relay.Example.com/"}),
              StartsWith("relay HTTPS://Relay.Example.com/ trusted\n"));
  EXPECT_THAT(GetPolicy().trusted_relays(), Contains("https://relay.example.com"));
  EXPECT_THAT(CtlOk({"relays"}), HasSubstr("https://relay.example.com  yes         yes"));
  policy = FromJson<v1::Policy>(
      CtlOk({"untrust", "--relay", "https://relay.example.com:443/", "--json"}));
  EXPECT_THAT(policy.trusted_relays(), Not(Contains("https://relay.example.com")));
}

TEST_F(BreakerctlTest, ResetClearsFailureBansButNotOperatorBans) {
  ReportFailures({7});
  CtlOk({"ban", "5", "--reason=x"});
  EXPECT_EQ(GetPolicy().banned_builders_size(), 2);

  EXPECT_THAT(CtlOk({"reset", "--reason=incident over"}),
              HasSubstr("cleared (operator bans and trust overrides stay)\npolicy: version "));
  const std::vector<std::string> banned = Lines(CtlOk({"builders", "--banned"}));
  ASSERT_EQ(banned.size(), 2u);
  EXPECT_THAT(banned[1], StartsWith("5 "));

  const v1::Policy policy = FromJson<v1::Policy>(CtlOk({"reset", "--json"}));
  EXPECT_EQ(policy.banned_builders_size(), 1);
}

// A node that reported sequence number 2^62, its last: refused from then on, and visibly so
// (the acknowledgement, `breakerctl nodes`, the library's stats), until the operator resets
// its numbers; then the library's observations, held back meanwhile, are taken.
TEST_F(BreakerctlTest, ANodeAtTheLastSequenceNumberIsShownAndResetByTheOperator) {
  auto breaker = v1::Breaker::NewStub(channel_);
  const auto report = [&](const std::string& node_id, uint64_t sequence) {
    v1::ReportRequest request;
    request.set_node_id(node_id);
    v1::Observation* observation = request.mutable_observations()->add_observations();
    observation->set_sequence(sequence);
    observation->set_slot(kStartSlot - 1);
    observation->mutable_blocks_seen();
    absl::StatusOr<v1::ReportResponse> response =
        CallUnary(*breaker, &v1::Breaker::Stub::async::Report, request);
    EXPECT_THAT(response, IsOk());
    return response.value_or(v1::ReportResponse()).ack();
  };
  constexpr uint64_t kLast = uint64_t{1} << 62;
  EXPECT_EQ(report("bn-1", kLast).refused_size(), 0);
  const v1::ObservationAck refused = report("bn-1", 5);
  ASSERT_EQ(refused.refused_size(), 1);
  EXPECT_EQ(refused.refused(0).code(), static_cast<int32_t>(grpc::StatusCode::FAILED_PRECONDITION));
  EXPECT_THAT(refused.refused(0).message(), HasSubstr("`breakerctl reset --node=bn-1`"));
  // A replay is acknowledged as one.
  EXPECT_EQ(report("bn-2", 3).replayed(), 0u);
  EXPECT_EQ(report("bn-2", 3).replayed(), 1u);

  // The library holds its observations back, and says why in its stats.
  std::unique_ptr<client::BreakerClient> node = StartNode("bn-1");
  ASSERT_NE(node, nullptr);
  ASSERT_TRUE(WaitFor([&] { return node->stats().sequence_exhausted; }));
  EXPECT_TRUE(
      node->Report(kStartSlot - 1, core::PayloadMissing{9, core::BlockRootFromBytes("root-9"), 0.9})
          .ok());
  ASSERT_TRUE(AwaitNode("bn-1", true));
  EXPECT_EQ(node->stats().buffered, 1u);

  const std::string nodes = CtlOk({"nodes"});
  EXPECT_THAT(nodes, HasSubstr("REFUSED  REPLAYED"));
  EXPECT_THAT(nodes, HasSubstr(absl::StrCat("node bn-1 has used sequence number ", kLast,
                                            ", the last: its observations are refused until "
                                            "'breakerctl reset --node=bn-1'")));
  // The last two columns: REFUSED, REPLAYED.
  std::vector<std::string> bn1_counts;
  std::vector<std::string> bn2_counts;
  for (const std::string& line : Lines(nodes)) {
    std::vector<std::string> cells = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (cells.size() < 2) continue;
    std::vector<std::string> counts(cells.end() - 2, cells.end());
    if (absl::StartsWith(line, "bn-1 ")) bn1_counts = counts;
    if (absl::StartsWith(line, "bn-2 ")) bn2_counts = counts;
  }
  EXPECT_THAT(bn1_counts, ElementsAre("1", "0")) << nodes;
  EXPECT_THAT(bn2_counts, ElementsAre("0", "1")) << nodes;
  const v1::ListNodesResponse listed = FromJson<v1::ListNodesResponse>(CtlOk({"nodes", "--json"}));
  ASSERT_EQ(listed.nodes_size(), 2);
  EXPECT_EQ(listed.nodes(0).last_sequence(), kLast);
  EXPECT_EQ(listed.nodes(0).observations_refused(), 1u);
  EXPECT_EQ(listed.nodes(1).observations_replayed(), 1u);

  const Outcome unknown = Ctl({"reset", "--node=bn-unknown"});
  EXPECT_EQ(unknown.exit_code, kRefused) << unknown;
  EXPECT_THAT(unknown.err, HasSubstr("NOT_FOUND")) << unknown;

  EXPECT_THAT(CtlOk({"reset", "--node=bn-1", "--reason=numbered past its clock"}),
              HasSubstr("node bn-1: sequence numbers reset"));
  // The stream ends and reconnects; the observation held back goes, and is taken.
  ASSERT_TRUE(WaitFor([&] {
    const client::ClientStats stats = node->stats();
    return !stats.sequence_exhausted && stats.acknowledged == 1;
  }));
  EXPECT_EQ(node->stats().refused, 0u);
  ASSERT_TRUE(WaitFor([&] { return GetPolicy().banned_builders_size() == 1; }));
  EXPECT_EQ(GetPolicy().banned_builders(0).builder_index(), 9u);
  EXPECT_THAT(CtlOk({"nodes"}), Not(HasSubstr("has used sequence number")));
}

// --- watch --------------------------------------------------------------------------------------

TEST_F(BreakerctlTest, WatchSeesABanHappen) {
  const uint64_t version = GetPolicy().version();
  Child watch({"--target=" + target_, "watch", "--count=2"});
  ASSERT_TRUE(WaitFor([&] { return Lines(watch.Stdout()).size() >= 1; }))
      << watch.Wait(absl::ZeroDuration());
  CtlOk({"ban", "6", "--reason=watched"});

  const Outcome outcome = watch.Wait(absl::Seconds(60));
  ASSERT_EQ(outcome.exit_code, kOk) << outcome;
  const std::vector<std::string> lines = Lines(outcome.out);
  ASSERT_EQ(lines.size(), 2u) << outcome;
  EXPECT_THAT(lines[0],
              HasSubstr(absl::StrCat("Z  version ", version, "  ALL_BUILDERS  0 builders")));
  EXPECT_THAT(lines[1],
              HasSubstr(absl::StrCat("Z  version ", version + 1,
                                     "  ALL_BUILDERS  1 builder, 0 relays banned  slot ",
                                     kStartSlot, " epoch ", kStartEpoch, "  banned builders 6")));
}

TEST_F(BreakerctlTest, WatchJsonIsOnePolicyPerLine) {
  Child watch({"--target=" + target_, "--json", "watch", "--count=2"});
  ASSERT_TRUE(WaitFor([&] { return Lines(watch.Stdout()).size() >= 1; }))
      << watch.Wait(absl::ZeroDuration());
  CtlOk({"trust", "3"});
  const Outcome outcome = watch.Wait(absl::Seconds(60));
  ASSERT_EQ(outcome.exit_code, kOk) << outcome;
  const std::vector<std::string> lines = Lines(outcome.out);
  ASSERT_EQ(lines.size(), 2u) << outcome;
  EXPECT_THAT(FromJson<v1::Policy>(lines[1]).trusted_builders(), Contains(3u));
  EXPECT_EQ(FromJson<v1::Policy>(lines[1]).version(), FromJson<v1::Policy>(lines[0]).version() + 1);
}

TEST_F(BreakerctlTest, WatchEndsWithUnavailableWhenBreakerdStops) {
  Child watch({"--target=" + target_, "watch"});
  ASSERT_TRUE(WaitFor([&] { return Lines(watch.Stdout()).size() >= 1; }))
      << watch.Wait(absl::ZeroDuration());
  server_->Shutdown();
  const Outcome outcome = watch.Wait(absl::Seconds(60));
  EXPECT_EQ(outcome.exit_code, kUnreachable) << outcome;
  EXPECT_THAT(outcome.err, HasSubstr("UNAVAILABLE"));
}

// --- configuration ------------------------------------------------------------------------------

TEST_F(BreakerctlTest, ConfigPrintsAConfigurationFile) {
  const std::string text = CtlOk({"config"});
  v1::Config config;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  EXPECT_EQ(config.chain().network(), "mainnet");
  EXPECT_THAT(config.trusted_builders(), ElementsAre(2u));
  EXPECT_THAT(text, HasSubstr("trusted_builders: 2\n"));
  // The output is a configuration file breakerd accepts as is.
  EXPECT_THAT(codec::ParseConfigText(text, "config output"), IsOk());

  const v1::Config from_json = FromJson<v1::Config>(CtlOk({"config", "--json"}));
  EXPECT_EQ(from_json.chain().network(), "mainnet");
  EXPECT_EQ(from_json.allowed_failures(), config.allowed_failures());
}

TEST_F(BreakerctlTest, ReloadAppliesTheEditedFile) {
  WriteFile(config_path_, absl::StrCat(kConfig, "blacklisted_builders: [12]\n"));
  const std::string out = CtlOk({"reload"});
  EXPECT_THAT(out, StartsWith("# reloaded; the configuration now in force:\n"));
  EXPECT_THAT(out, HasSubstr("blacklisted_builders: 12\n"));
  v1::Config config;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(out, &config)) << out;
  EXPECT_THAT(CtlOk({"builders", "--banned"}),
              HasSubstr("12     0       reset         operator  no       -       in the configured "
                        "blacklist"));

  // A blacklisted builder is unbanned by editing the file, as the hint says.
  const Outcome unban = Ctl({"unban", "12"});
  EXPECT_EQ(unban.exit_code, kRefused) << unban;
  EXPECT_THAT(unban.err, HasSubstr("FAILED_PRECONDITION"));
  EXPECT_THAT(unban.err, HasSubstr("'breakerctl reload'"));

  // A bad file changes nothing.
  WriteFile(config_path_, absl::StrCat(kConfig, "no_such_field: 1\n"));
  const Outcome bad = Ctl({"reload"});
  EXPECT_EQ(bad.exit_code, kRefused) << bad;
  EXPECT_THAT(bad.err, HasSubstr("breakerctl reload: INVALID_ARGUMENT: "));
  EXPECT_THAT(bad.err, HasSubstr("no_such_field"));
  EXPECT_THAT(bad.err, HasSubstr("hint: the configuration in force is unchanged"));
  EXPECT_THAT(CtlOk({"config"}), HasSubstr("blacklisted_builders: 12\n"));

  WriteFile(config_path_, kConfig);
  const v1::Config reverted = FromJson<v1::Config>(CtlOk({"reload", "--json"}));
  EXPECT_THAT(reverted.blacklisted_builders(), IsEmpty());
}

TEST_F(BreakerctlTest, ReloadAccessWithoutAnAccessFileSaysSo) {
  const Outcome outcome = Ctl({"reload-access"});
  EXPECT_EQ(outcome.exit_code, kRefused) << outcome;
  EXPECT_THAT(outcome.err, HasSubstr("breakerctl reload-access: FAILED_PRECONDITION: "));
  EXPECT_THAT(outcome.err, HasSubstr("hint: breakerd runs without --access_file"));
}

// --- simulate -----------------------------------------------------------------------------------

constexpr char kScenario[] = R"(
description: "builder 5 fails once"
start_slot: 3208
step {
  name: "builder 5 misses a payload"
  observe { node: "bn-1" observation { payload_missing {
    builder_index: 5 block_root: "r1" attested_fraction: 0.9 } } }
  expect { mode: MODE_ALL_BUILDERS banned_builders { builder_indices: 5 } }
}
)";

TEST_F(BreakerctlTest, SimulatePlaysAScenarioOffline) {
  const std::string config = dir_ + "/sim.textproto";
  const std::string scenario = dir_ + "/scenario.textproto";
  WriteFile(config, "chain { network: \"mainnet\" gloas_fork_epoch: 0 }\n");
  WriteFile(scenario, kScenario);

  // No --target: simulate needs no breakerd.
  const Outcome passed = Run({"simulate", "--config", config, "--scenario", scenario});
  EXPECT_EQ(passed.exit_code, kOk) << passed;
  EXPECT_THAT(passed.out, HasSubstr("builder 5 fails once"));
  EXPECT_THAT(passed.out, HasSubstr("builder 5 misses a payload"));

  const Outcome json = Run({"simulate", "--config=" + config, "--scenario=" + scenario, "--json"});
  EXPECT_EQ(json.exit_code, kOk) << json;
  EXPECT_EQ(JsonMember(json.out, "description"), "\"builder 5 fails once\"");
  // The starting policy and the step's new version.
  EXPECT_EQ(FromJson<google::protobuf::ListValue>(JsonMember(json.out, "timeline")).values_size(),
            2);

  // An expectation that does not hold.
  WriteFile(scenario,
            absl::StrReplaceAll(kScenario, {{"builder_indices: 5", "builder_indices: 6"}}));
  const Outcome failed = Run({"simulate", "--config", config, "--scenario", scenario});
  EXPECT_EQ(failed.exit_code, kExpectationFailed) << failed;
  EXPECT_THAT(failed.err, HasSubstr("1 expectation of the scenario failed"));

  // Files that cannot be used are usage errors.
  const Outcome missing =
      Run({"simulate", "--config", config, "--scenario", dir_ + "/no-such.textproto"});
  EXPECT_EQ(missing.exit_code, kUsage) << missing;
  EXPECT_THAT(missing.err, HasSubstr("no-such.textproto"));
  WriteFile(scenario, "step { bogus: 1 }\n");
  const Outcome malformed = Run({"simulate", "--config", config, "--scenario", scenario});
  EXPECT_EQ(malformed.exit_code, kUsage) << malformed;
  EXPECT_THAT(malformed.err, HasSubstr("bogus"));
}

}  // namespace
}  // namespace breaker
