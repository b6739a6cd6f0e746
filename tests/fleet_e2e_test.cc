// The fleet as it runs in production: the real breakerd binary and several example_node
// processes (each a beacon node linking the client library), over real loopback TCP, on the
// real clock. The test drives the nodes by writing observations to their stdin (example_node
// --script) and checks what every node prints, and what breakerd's Admin API says.
//
// Everything here crosses processes, so every wait is for a condition with a generous deadline
// (sanitizers on a loaded 2-core machine), and nothing asserts how long anything took. The
// chains are the test's own (a custom network, its genesis set by the test): slow 12 s slots
// where a ban must outlast the test, 2 s slots where slots must go by.

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "core/chain_time.h"
#include "core/types.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/status_matchers.h"
#include "tests/subprocess.h"
#include "tests/tcp_proxy.h"
#include "tests/test_util.h"

namespace breaker {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::testing::CallUnary;
using ::breaker::testing::IsOk;
using ::breaker::testing::Subprocess;
using ::breaker::testing::TcpProxy;
using ::breaker::testing::TestDir;

using Stream = Subprocess::Stream;

// The binaries, from the runfiles root of the workspace (the test's working directory).
constexpr char kBreakerd[] = "service/breakerd";
constexpr char kExampleNode[] = "client/example_node";

// Every cross-process wait: generous, since sanitizers slow each process down several times
// and the machine is shared.
constexpr absl::Duration kTimeout = absl::Seconds(90);

absl::Time Deadline() { return absl::Now() + kTimeout; }

// Polls `condition` until it holds or `timeout` has passed; returns whether it holds. Slower
// than testing::WaitFor's 2 ms: here each poll may be an rpc.
bool PollUntil(const std::function<bool()>& condition, absl::Duration timeout = kTimeout,
               absl::Duration interval = absl::Milliseconds(20)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(interval);
  }
  return true;
}

// --- Chains -------------------------------------------------------------------------------

// A network no one else knows: breakerd and the nodes take every chain setting from the test's
// configuration file.
constexpr char kNetwork[] = "e2e";

// Gloas from genesis, with mainnet's 12 s slots and 32-slot epochs. Genesis is set so that the
// test starts two slots into an epoch: the next epoch boundary, where a first ban lifts, is six
// minutes away, beyond any test.
core::ChainSpec GloasChain() {
  core::ChainSpec chain;
  chain.network = kNetwork;
  chain.seconds_per_slot = 12;
  chain.slots_per_epoch = 32;
  chain.gloas_fork_epoch = 0;
  const int64_t epoch_seconds = 12 * 32;
  chain.genesis_time_unix = absl::ToUnixSeconds(absl::Now()) - 1000 * epoch_seconds - 2 * 12;
  return chain;
}

// 2 s slots, for the missed-slot rules: a slot is judged once the next one has ended, so a
// run of missed slots builds up in seconds. (Not 1 s: a report written as its slot ends must
// reach breakerd before the slot is judged, or the run it belongs to is judged broken; 2 s
// leaves a slow, loaded machine seconds for it.) Gloas from genesis, or not scheduled
// (pre-Gloas).
core::ChainSpec FastChain(bool gloas) {
  core::ChainSpec chain;
  chain.network = kNetwork;
  chain.seconds_per_slot = 2;
  chain.slots_per_epoch = 32;
  chain.gloas_fork_epoch = gloas ? 0 : core::kFarFutureEpoch;
  chain.genesis_time_unix = absl::ToUnixSeconds(absl::Now()) - 100'000;
  return chain;
}

std::string ChainConfig(const core::ChainSpec& chain) {
  std::string text = absl::StrCat("chain {\n  network: \"", chain.network,
                                  "\"\n  genesis_time_unix: ", chain.genesis_time_unix,
                                  "\n  seconds_per_slot: ", chain.seconds_per_slot,
                                  "\n  slots_per_epoch: ", chain.slots_per_epoch, "\n");
  if (chain.gloas_fork_epoch != core::kFarFutureEpoch) {
    absl::StrAppend(&text, "  gloas_fork_epoch: ", chain.gloas_fork_epoch, "\n");
  }
  absl::StrAppend(&text, "}\n");
  return text;
}

// --- Observations, as example_node --script reads them --------------------------------------

// Builder `builder`'s block `root` (a label) got no payload, though 90% of the committee
// attested it: a failure. Of the node's current slot.
std::string Missing(core::BuilderIndex builder, absl::string_view root) {
  return absl::StrCat("payload_missing { builder_index: ", builder, " block_root: \"", root,
                      "\" attested_fraction: 0.9 }");
}

// A bid of `builder` reached the node through `relay`.
std::string Bid(core::BuilderIndex builder, absl::string_view relay) {
  return absl::StrCat("bid_seen { builder_index: ", builder, " relay: \"", relay, "\" }");
}

// The node has no block for `slot`.
std::string NoBlock(core::Slot slot) { return absl::StrCat("slot: ", slot, " blocks_seen {}"); }

// The node has a block for `slot`.
std::string Block(core::Slot slot) {
  return absl::StrCat("slot: ", slot, " blocks_seen { block_roots: \"block-", slot, "\" }");
}

// --- What the nodes print -----------------------------------------------------------------

// One `policy source=... version=... mode=... banned=[...] reason="..."` line of example_node.
struct PolicyLine {
  std::string source;
  uint64_t version = 0;
  std::string mode;
  std::vector<core::BuilderIndex> banned;
  std::string text;
};

std::optional<PolicyLine> ParsePolicyLine(absl::string_view text) {
  if (!absl::ConsumePrefix(&text, "policy ")) return std::nullopt;
  PolicyLine line;
  line.text = std::string(text);
  // The reason is free text, last: the fields before it are space-separated key=value.
  const absl::string_view fields = text.substr(0, text.find(" reason="));
  for (absl::string_view field : absl::StrSplit(fields, ' ', absl::SkipEmpty())) {
    const std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(field, '=');
    if (kv.first == "source") {
      line.source = std::string(kv.second);
    } else if (kv.first == "version") {
      if (!absl::SimpleAtoi(kv.second, &line.version)) return std::nullopt;
    } else if (kv.first == "mode") {
      line.mode = std::string(kv.second);
    } else if (kv.first == "banned") {
      absl::string_view list = kv.second;
      if (!absl::ConsumePrefix(&list, "[") || !absl::ConsumeSuffix(&list, "]")) return std::nullopt;
      for (absl::string_view index : absl::StrSplit(list, ',', absl::SkipEmpty())) {
        core::BuilderIndex builder = 0;
        if (!absl::SimpleAtoi(index, &builder)) return std::nullopt;
        line.banned.push_back(builder);
      }
    }
  }
  return line;
}

// The counters of example_node's `observations reported=N acknowledged=M refused=R` line.
struct AckLine {
  uint64_t acknowledged = 0;
  uint64_t refused = 0;
};

std::optional<AckLine> ParseAckLine(absl::string_view text) {
  if (!absl::ConsumePrefix(&text, "observations ")) return std::nullopt;
  AckLine line;
  for (absl::string_view field : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    const std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(field, '=');
    if (kv.first == "acknowledged" && !absl::SimpleAtoi(kv.second, &line.acknowledged)) {
      return std::nullopt;
    }
    if (kv.first == "refused" && !absl::SimpleAtoi(kv.second, &line.refused)) {
      return std::nullopt;
    }
  }
  return line;
}

// A policy every node of the fleet must come to apply.
struct Expected {
  std::string mode = "ALL_BUILDERS";
  std::vector<core::BuilderIndex> banned;
};

std::string Describe(const Expected& expected) {
  return absl::StrCat("mode=", expected.mode, " banned=[", absl::StrJoin(expected.banned, ","),
                      "]");
}

bool Matches(const v1::Policy& policy, const Expected& expected) {
  std::vector<core::BuilderIndex> banned;
  for (const v1::BuilderBan& ban : policy.banned_builders()) banned.push_back(ban.builder_index());
  return v1::Mode_Name(policy.mode()) == absl::StrCat("MODE_", expected.mode) &&
         banned == expected.banned;
}

// --- One node -----------------------------------------------------------------------------

// An example_node process in script mode.
class Node {
 public:
  Node(std::string id, std::unique_ptr<Subprocess> process)
      : id_(std::move(id)), process_(std::move(process)) {}

  const std::string& id() const { return id_; }
  Subprocess& process() { return *process_; }

  // Reports one observation through the node's script.
  void Observe(absl::string_view observation) {
    EXPECT_TRUE(process_->WriteLine(observation)) << id_ << " no longer reads its script";
    ++observed_;
  }

  // Waits until breakerd has handled every observation written to the node, and expects that
  // it refused none.
  bool AwaitHandled() {
    std::optional<AckLine> last;
    const bool handled = process_->WaitUntil(
        Stream::kStdout,
        [&](const std::vector<std::string>& lines) {
          for (auto line = lines.rbegin(); line != lines.rend(); ++line) {
            if ((last = ParseAckLine(*line)).has_value()) break;
          }
          return last.has_value() && last->acknowledged >= observed_;
        },
        Deadline());
    EXPECT_TRUE(handled) << id_ << ": breakerd acknowledged "
                         << (last.has_value() ? last->acknowledged : 0) << " of " << observed_;
    if (last.has_value()) {
      EXPECT_EQ(last->refused, 0u) << id_ << ": see breakerd's log";
    }
    return handled;
  }

  // Where the node's output is now: what it prints from here on starts at this index.
  size_t Mark() const { return process_->LineCount(Stream::kStdout); }

  // The policies the node printed, from output index `from` on.
  std::vector<PolicyLine> Policies(size_t from = 0) const {
    std::vector<PolicyLine> policies;
    const std::vector<std::string> lines = process_->Lines(Stream::kStdout);
    for (size_t i = from; i < lines.size(); ++i) {
      if (std::optional<PolicyLine> policy = ParsePolicyLine(lines[i])) policies.push_back(*policy);
    }
    return policies;
  }

  std::optional<PolicyLine> LatestPolicy() const {
    std::vector<PolicyLine> policies = Policies();
    if (policies.empty()) return std::nullopt;
    return policies.back();
  }

  // Waits until the policy the node applies now (its latest line) satisfies `predicate`.
  bool AwaitLatestPolicy(const std::function<bool(const PolicyLine&)>& predicate) {
    return process_->WaitUntil(
        Stream::kStdout,
        [&](const std::vector<std::string>& lines) {
          for (auto line = lines.rbegin(); line != lines.rend(); ++line) {
            if (std::optional<PolicyLine> policy = ParsePolicyLine(*line)) {
              return predicate(*policy);
            }
          }
          return false;
        },
        Deadline());
  }

  // Waits for a policy line at output index `from` or later that satisfies `predicate`.
  std::optional<PolicyLine> AwaitPolicyLine(const std::function<bool(const PolicyLine&)>& predicate,
                                            size_t from) {
    std::optional<size_t> index = process_->WaitForLine(
        Stream::kStdout,
        [&](absl::string_view line) {
          std::optional<PolicyLine> policy = ParsePolicyLine(line);
          return policy.has_value() && predicate(*policy);
        },
        Deadline(), from);
    if (!index.has_value()) return std::nullopt;
    return ParsePolicyLine(process_->Lines(Stream::kStdout)[*index]);
  }

 private:
  const std::string id_;
  std::unique_ptr<Subprocess> process_;
  // Observations written to the node's script.
  uint64_t observed_ = 0;
};

// --- The fleet ----------------------------------------------------------------------------

struct NodeOptions {
  // The port the node connects to; 0: breakerd's.
  int port = 0;
  // example_node --staleness_limit_seconds; 0: the library's default.
  double staleness_limit_seconds = 0;
};

// Owns breakerd and the nodes of one test, all child processes, and talks to breakerd's Admin
// API like an operator.
class FleetTest : public ::testing::Test {
 protected:
  FleetTest() : dir_(TestDir()), config_path_(dir_ + "/breakerd.textproto") {}

  // Stops everything gracefully, and expects every process to exit cleanly: a crash or a
  // sanitizer report at shutdown fails the test.
  void TearDown() override {
    for (const auto& node : nodes_) node->process().Kill(SIGTERM);
    for (const auto& node : nodes_) ExpectCleanExit(node->process());
    nodes_.clear();
    if (breakerd_ != nullptr) {
      breakerd_->Kill(SIGTERM);
      ExpectCleanExit(*breakerd_);
    }
    admin_.reset();
    breakerd_.reset();
  }

  static void ExpectCleanExit(Subprocess& process) {
    const std::optional<int> status = process.WaitUntilExit(Deadline());
    ASSERT_TRUE(status.has_value()) << process.name() << " did not stop on SIGTERM";
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << process.name() << " " << Subprocess::DescribeStatus(*status);
  }

  // Writes breakerd's configuration file, which the nodes read too: `chain`, then `rest`
  // (text-format breaker.v1.Config fields).
  void Configure(const core::ChainSpec& chain, absl::string_view rest = "") {
    chain_ = chain;
    std::ofstream file(config_path_, std::ios::trunc);
    file << ChainConfig(chain) << rest;
    ASSERT_TRUE(file.good()) << config_path_;
  }

  // Starts breakerd over the test's state directory: on a free port the first time, then on
  // that same port, which the nodes keep dialing.
  void StartBreakerd() {
    ASSERT_EQ(breakerd_, nullptr) << "breakerd runs already";
    Subprocess::Options options;
    options.binary = kBreakerd;
    options.name = "breakerd";
    options.args = {absl::StrCat("--listen=127.0.0.1:", port_),
                    absl::StrCat("--state_dir=", dir_, "/state"),
                    absl::StrCat("--config=", config_path_)};
    absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(options);
    ASSERT_THAT(started, IsOk());
    breakerd_ = *std::move(started);
    // "breakerd listening on 127.0.0.1:0 (port 41234), network ..."
    std::optional<size_t> index = breakerd_->WaitForLine(
        Stream::kStderr,
        [](absl::string_view line) { return absl::StrContains(line, "breakerd listening on"); },
        Deadline());
    ASSERT_TRUE(index.has_value()) << "breakerd did not start (its log is above)";
    const std::string line = breakerd_->Lines(Stream::kStderr)[*index];
    absl::string_view port_text = absl::string_view(line).substr(line.find("(port ") + 6);
    port_text = port_text.substr(0, port_text.find(')'));
    int port = 0;
    ASSERT_TRUE(absl::SimpleAtoi(port_text, &port)) << line;
    if (port_ != 0) {
      ASSERT_EQ(port, port_);
    }
    port_ = port;
    // A new channel each time: the old one's reconnect backoff would only delay the calls.
    admin_ = v1::Admin::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials()));
  }

  // Sends `signal` to breakerd and waits for it to exit; returns its wait status.
  int StopBreakerd(int signal) {
    breakerd_->Kill(signal);
    const std::optional<int> status = breakerd_->WaitUntilExit(Deadline());
    EXPECT_TRUE(status.has_value()) << "breakerd did not exit on signal " << signal;
    admin_.reset();
    breakerd_.reset();
    return status.value_or(-1);
  }

  // Starts an example_node in script mode, against breakerd or through a proxy.
  Node& StartNode(const std::string& id, const NodeOptions& node_options = {}) {
    Subprocess::Options options;
    options.binary = kExampleNode;
    options.name = id;
    options.args = {
        absl::StrCat("--target=127.0.0.1:", node_options.port != 0 ? node_options.port : port_),
        absl::StrCat("--node_id=", id), absl::StrCat("--config=", config_path_), "--script",
        // Reconnect within a second when breakerd or the link comes back.
        "--initial_backoff_ms=100", "--max_backoff_ms=1000"};
    if (node_options.staleness_limit_seconds > 0) {
      options.args.push_back(
          absl::StrCat("--staleness_limit_seconds=", node_options.staleness_limit_seconds));
    }
    absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(options);
    if (!started.ok()) {
      // No node to hand back, and the test is meaningless without it (a missing binary).
      ADD_FAILURE() << "cannot start " << id << ": " << started.status();
      std::abort();
    }
    nodes_.push_back(std::make_unique<Node>(id, *std::move(started)));
    return *nodes_.back();
  }

  // Starts nodes bn-1 .. bn-`count`, against breakerd.
  void StartNodes(int count) {
    for (int i = 1; i <= count; ++i) StartNode(absl::StrCat("bn-", i));
  }

  Node& node(size_t i) { return *nodes_.at(i); }

  core::Slot CurrentSlot() const { return core::SlotAt(absl::Now(), chain_); }
  core::Epoch CurrentEpoch() const { return core::EpochOf(CurrentSlot(), chain_); }

  // --- The Admin API ---

  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(
      void (v1::Admin::Stub::async::*method)(grpc::ClientContext*, const Request*, Response*,
                                             std::function<void(grpc::Status)>),
      const Request& request) {
    if (admin_ == nullptr) return absl::FailedPreconditionError("breakerd is not running");
    return CallUnary(*admin_, method, request);
  }

  absl::StatusOr<v1::Policy> GetPolicy() {
    return Call(&v1::Admin::Stub::async::GetPolicy, v1::GetPolicyRequest());
  }

  absl::StatusOr<v1::Builder> GetBuilder(core::BuilderIndex builder) {
    v1::GetBuilderRequest request;
    request.set_builder_index(builder);
    return Call(&v1::Admin::Stub::async::GetBuilder, request);
  }

  absl::StatusOr<v1::ListRelaysResponse> ListRelays() {
    return Call(&v1::Admin::Stub::async::ListRelays, v1::ListRelaysRequest());
  }

  // The node as breakerd lists it; nullopt when breakerd does not list it (or cannot say).
  std::optional<v1::Node> NodeInfo(const std::string& id) {
    absl::StatusOr<v1::ListNodesResponse> response =
        Call(&v1::Admin::Stub::async::ListNodes, v1::ListNodesRequest());
    if (!response.ok()) return std::nullopt;
    for (const v1::Node& node : response->nodes()) {
      if (node.node_id() == id) return node;
    }
    return std::nullopt;
  }

  // Whether breakerd lists every node as holding a stream now.
  bool AllNodesConnected() {
    for (const auto& node : nodes_) {
      std::optional<v1::Node> info = NodeInfo(node->id());
      if (!info.has_value() || !info->connected()) return false;
    }
    return true;
  }

  // --- Convergence ---

  // Waits until breakerd's policy is `expected`, then until every node applies that version
  // (or a later one) from the fleet with the same decisions. Returns breakerd's policy.
  v1::Policy AwaitFleetPolicy(const Expected& expected) {
    v1::Policy policy;
    const bool decided = PollUntil([&] {
      absl::StatusOr<v1::Policy> current = GetPolicy();
      if (current.ok()) policy = *std::move(current);
      return current.ok() && Matches(policy, expected);
    });
    EXPECT_TRUE(decided) << "breakerd's policy is not " << Describe(expected) << ": "
                         << policy.ShortDebugString();
    if (!decided) return policy;
    for (const auto& node : nodes_) {
      const bool applied = node->AwaitLatestPolicy([&](const PolicyLine& line) {
        return line.source == "fleet" && line.version >= policy.version() &&
               line.mode == expected.mode && line.banned == expected.banned;
      });
      std::optional<PolicyLine> latest = node->LatestPolicy();
      EXPECT_TRUE(applied) << node->id() << " does not apply version " << policy.version() << " "
                           << Describe(expected) << "; it printed last: "
                           << (latest.has_value() ? latest->text : "no policy");
    }
    return policy;
  }

  // Plays the chain's slots `first`..`last` as they go by: once slot s has ended, calls
  // `report(s)` to write what the nodes saw of it. Stops after a slot for which `done()` holds.
  // Returns the last slot played.
  core::Slot PlaySlots(
      core::Slot first, core::Slot last, const std::function<void(core::Slot)>& report,
      const std::function<bool()>& done = [] { return false; }) {
    core::Slot played = first;
    for (core::Slot slot = first; slot <= last; ++slot) {
      EXPECT_TRUE(
          PollUntil([&] { return CurrentSlot() > slot; }, kTimeout, absl::Milliseconds(10)));
      report(slot);
      played = slot;
      if (done()) break;
    }
    return played;
  }

  const std::string dir_;
  const std::string config_path_;
  core::ChainSpec chain_;
  // breakerd's port: 0 until it first started.
  int port_ = 0;
  std::unique_ptr<Subprocess> breakerd_;
  std::unique_ptr<v1::Admin::Stub> admin_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

// ---------------------------------------------------------------------------------------------
// The seed scenarios of the reference semantics, played fleet-wide.

TEST_F(FleetTest, SeedScenario1FailureBansUntilNextEpochThenUntilReset) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain()));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  StartNodes(3);
  AwaitFleetPolicy({});

  // bn-1 sees builder 5's payload go missing: banned until the next epoch.
  node(0).Observe(Missing(5, "r1"));
  AwaitFleetPolicy({"ALL_BUILDERS", {5}});
  absl::StatusOr<v1::Builder> builder = GetBuilder(5);
  ASSERT_THAT(builder, IsOk());
  EXPECT_EQ(builder->failed(), 1u);
  EXPECT_FALSE(builder->ban().until_reset());
  EXPECT_EQ(builder->ban().until_epoch(), CurrentEpoch() + 1);

  // bn-2 sees it fail again, another block, inside the back-off window: banned until reset.
  node(1).Observe(Missing(5, "r2"));
  ASSERT_TRUE(PollUntil([&] {
    builder = GetBuilder(5);
    return builder.ok() && builder->ban().until_reset();
  })) << builder.status();
  EXPECT_EQ(builder->failed(), 2u);
  const v1::Policy policy = AwaitFleetPolicy({"ALL_BUILDERS", {5}});
  EXPECT_TRUE(policy.banned_builders(0).ban().until_reset());
}

TEST_F(FleetTest, SeedScenario2MissedBlocksChangeNothingOnAGloasChain) {
  ASSERT_NO_FATAL_FAILURE(Configure(FastChain(/*gloas=*/true)));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  StartNodes(3);
  const v1::Policy initial = AwaitFleetPolicy({});

  // Eight slots in a row without a block, reported by the nodes in turn: before the Gloas fork
  // this trips the missed-slot breaker (SeedScenario5), from it on it is no evidence.
  const core::Slot first = CurrentSlot() + 1;
  const core::Slot last =
      PlaySlots(first, first + 7, [&](core::Slot slot) { node(slot % 3).Observe(NoBlock(slot)); });
  // Every slot judged, every report handled.
  EXPECT_TRUE(PollUntil([&] { return CurrentSlot() >= last + 2; }));
  for (size_t i = 0; i < 3; ++i) node(i).AwaitHandled();

  absl::StatusOr<v1::Policy> policy = GetPolicy();
  ASSERT_THAT(policy, IsOk());
  EXPECT_EQ(policy->version(), initial.version());
  EXPECT_EQ(policy->mode(), v1::MODE_ALL_BUILDERS);
  EXPECT_FALSE(policy->missed_slots().active());
  for (size_t i = 0; i < 3; ++i) {
    std::optional<PolicyLine> latest = node(i).LatestPolicy();
    ASSERT_TRUE(latest.has_value());
    EXPECT_EQ(latest->version, initial.version()) << latest->text;
    EXPECT_EQ(latest->mode, "ALL_BUILDERS");
  }
}

TEST_F(FleetTest, SeedScenario3UntrustedFailuresFallBackToTrustedOnlyThenSelfBuild) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain(), "trusted_builders: [100, 101]\n"));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  StartNodes(3);
  AwaitFleetPolicy({});

  // Builders 1, 2, 3 fail, each seen by another node: three untrusted builders banned.
  for (core::BuilderIndex builder = 1; builder <= 3; ++builder) {
    node((builder - 1) % 3).Observe(Missing(builder, absl::StrCat("r", builder)));
  }
  AwaitFleetPolicy({"TRUSTED_ONLY", {1, 2, 3}});

  for (core::BuilderIndex builder = 4; builder <= 6; ++builder) {
    node((builder - 1) % 3).Observe(Missing(builder, absl::StrCat("r", builder)));
  }
  AwaitFleetPolicy({"TRUSTED_ONLY", {1, 2, 3, 4, 5, 6}});

  // The seventh: every proposer of the fleet builds its own payload.
  node(0).Observe(Missing(7, "r7"));
  const v1::Policy policy = AwaitFleetPolicy({"SELF_BUILD", {1, 2, 3, 4, 5, 6, 7}});
  EXPECT_TRUE(absl::StrContains(policy.mode_reason(), "1, 2, 3")) << policy.mode_reason();
}

TEST_F(FleetTest, SeedScenario4ConfiguredRelayFailureBansItsOtherBuilder) {
  ASSERT_NO_FATAL_FAILURE(Configure(
      GloasChain(), "relays { identifier: \"https://relay.example\" builder_indices: [1, 2] }\n"));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  StartNodes(3);
  AwaitFleetPolicy({});

  node(1).Observe(Missing(1, "r1"));
  AwaitFleetPolicy({"ALL_BUILDERS", {1, 2}});
  absl::StatusOr<v1::Builder> failed = GetBuilder(1);
  absl::StatusOr<v1::Builder> sibling = GetBuilder(2);
  ASSERT_THAT(failed, IsOk());
  ASSERT_THAT(sibling, IsOk());
  EXPECT_EQ(failed->ban().kind(), v1::BAN_KIND_FAILURE);
  EXPECT_EQ(sibling->ban().kind(), v1::BAN_KIND_COLLATERAL);
  EXPECT_EQ(sibling->failed(), 0u);
  absl::StatusOr<v1::ListRelaysResponse> relays = ListRelays();
  ASSERT_THAT(relays, IsOk());
  ASSERT_EQ(relays->relays_size(), 1);
  EXPECT_EQ(relays->relays(0).relay(), "https://relay.example");
  EXPECT_TRUE(relays->relays(0).has_ban());
}

TEST_F(FleetTest, SeedScenario4RelayLearnedFromBidsOfTwoNodesBansBothBuilders) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain()));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  StartNodes(3);
  AwaitFleetPolicy({});

  // Two nodes see bids of builders 1 and 2 through one relay, spelled two ways.
  node(0).Observe(Bid(1, "Relay.Example:18550"));
  node(1).Observe(Bid(2, "http://relay.example:18550/"));
  node(0).AwaitHandled();
  node(1).AwaitHandled();
  // A third sees builder 1 fail.
  node(2).Observe(Missing(1, "r1"));
  AwaitFleetPolicy({"ALL_BUILDERS", {1, 2}});
  absl::StatusOr<v1::ListRelaysResponse> relays = ListRelays();
  ASSERT_THAT(relays, IsOk());
  ASSERT_EQ(relays->relays_size(), 1);
  const v1::Relay& relay = relays->relays(0);
  EXPECT_EQ(relay.relay(), "http://relay.example:18550");
  EXPECT_EQ(std::vector<uint64_t>(relay.builder_indices().begin(), relay.builder_indices().end()),
            (std::vector<uint64_t>{1, 2}));
  EXPECT_TRUE(relay.has_ban());
}

TEST_F(FleetTest, SeedScenario5PreGloasMissedSlotsTripSelfBuildUnlessABlockIsSeen) {
  // The default rules: the mev-boost preset, tripped (and latched) by more than 5 missed slots
  // in a row.
  ASSERT_NO_FATAL_FAILURE(Configure(FastChain(/*gloas=*/false)));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  StartNodes(3);
  const v1::Policy initial = AwaitFleetPolicy({});
  EXPECT_TRUE(initial.missed_slots().active());
  // breakerd judges only the slots from its start on: play the ones after it.
  const core::Slot first = CurrentSlot() + 1;

  // 1. bn-1 and bn-3 see no block at all; bn-2 sees one every other slot. A block seen by any
  //    node keeps its slot present: no run of missed slots longer than one. (breakerd has each
  //    block before the other nodes' empty reports of its slot, so that it never sees the slot
  //    as missed, however the processes are scheduled.)
  const core::Slot quiet_last = PlaySlots(first, first + 7, [&](core::Slot slot) {
    if ((slot - first) % 2 == 1) {
      node(1).Observe(Block(slot));
      node(1).AwaitHandled();
    }
    node(slot % 2 == 0 ? 0 : 2).Observe(NoBlock(slot));
  });
  EXPECT_TRUE(PollUntil([&] { return CurrentSlot() >= quiet_last + 2; }));
  for (size_t i = 0; i < 3; ++i) node(i).AwaitHandled();
  absl::StatusOr<v1::Policy> quiet = GetPolicy();
  ASSERT_THAT(quiet, IsOk());
  EXPECT_EQ(quiet->version(), initial.version());
  EXPECT_FALSE(quiet->missed_slots().tripped());
  EXPECT_EQ(quiet->mode(), v1::MODE_ALL_BUILDERS);

  // 2. bn-2 loses its blocks too: the sixth missed slot in a row trips the breaker (the slots
  //    go on until the fleet sees it, however slowly the reports travel).
  PlaySlots(
      quiet_last + 1, quiet_last + 40,
      [&](core::Slot slot) { node(slot % 3).Observe(NoBlock(slot)); },
      [&] {
        std::optional<PolicyLine> latest = node(0).LatestPolicy();
        return latest.has_value() && latest->mode == "SELF_BUILD";
      });
  const v1::Policy tripped = AwaitFleetPolicy({"SELF_BUILD", {}});
  EXPECT_TRUE(tripped.missed_slots().tripped());
  EXPECT_TRUE(tripped.missed_slots().latched());
}

// ---------------------------------------------------------------------------------------------
// Aggregation and joining

TEST_F(FleetTest, OneFailureReportedByEveryNodeCountsOnce) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain()));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  StartNodes(3);
  AwaitFleetPolicy({});

  // The whole fleet sees the same block of builder 5 go without its payload.
  for (size_t i = 0; i < 3; ++i) node(i).Observe(Missing(5, "r1"));
  for (size_t i = 0; i < 3; ++i) node(i).AwaitHandled();

  AwaitFleetPolicy({"ALL_BUILDERS", {5}});
  absl::StatusOr<v1::Builder> builder = GetBuilder(5);
  ASSERT_THAT(builder, IsOk());
  // One failure: a first ban, not the critical one three failures would have made.
  EXPECT_EQ(builder->failed(), 1u);
  EXPECT_FALSE(builder->ban().until_reset());
  EXPECT_EQ(builder->ban().until_epoch(), CurrentEpoch() + 1);
}

TEST_F(FleetTest, NodeJoiningLateReceivesTheCurrentPolicy) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain()));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  StartNodes(2);
  node(0).Observe(Missing(5, "r5"));
  node(1).Observe(Missing(6, "r6"));
  const v1::Policy current = AwaitFleetPolicy({"ALL_BUILDERS", {5, 6}});

  Node& late = StartNode("bn-late");
  // The first fleet policy it applies is the current one.
  std::optional<PolicyLine> first =
      late.AwaitPolicyLine([](const PolicyLine& line) { return line.source == "fleet"; }, 0);
  ASSERT_TRUE(first.has_value()) << "bn-late never applied a fleet policy";
  EXPECT_EQ(first->version, current.version()) << first->text;
  EXPECT_EQ(first->banned, (std::vector<core::BuilderIndex>{5, 6})) << first->text;
  // And breakerd knows it holds it.
  EXPECT_TRUE(PollUntil([&] {
    std::optional<v1::Node> info = NodeInfo("bn-late");
    return info.has_value() && info->connected() &&
           info->policy_version_acked() == current.version();
  }));
}

// ---------------------------------------------------------------------------------------------
// Failures

TEST_F(FleetTest, BansAndVersionsSurviveBreakerdKilledWhileNodesStream) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain()));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  StartNodes(3);
  node(0).Observe(Missing(5, "r5"));
  const v1::Policy before = AwaitFleetPolicy({"ALL_BUILDERS", {5}});

  const int status = StopBreakerd(SIGKILL);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << Subprocess::DescribeStatus(status);
  // The nodes keep what they hold, and keep observing: bn-2 sees builder 6 fail meanwhile.
  node(1).Observe(Missing(6, "r6"));

  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  // The ban acknowledged before the kill was durable; versions never go back.
  absl::StatusOr<v1::Policy> restarted;
  ASSERT_TRUE(PollUntil([&] { return (restarted = GetPolicy()).ok(); })) << restarted.status();
  EXPECT_GE(restarted->version(), before.version());
  absl::StatusOr<v1::Builder> builder = GetBuilder(5);
  ASSERT_THAT(builder, IsOk());
  EXPECT_TRUE(builder->has_ban());

  // The nodes reconnect, bn-2 hands over what it saw meanwhile, and the change gets a version
  // above every version before the kill.
  const v1::Policy after = AwaitFleetPolicy({"ALL_BUILDERS", {5, 6}});
  EXPECT_GT(after.version(), before.version());
  EXPECT_TRUE(PollUntil([&] { return AllNodesConnected(); }));
}

TEST_F(FleetTest, PartitionedNodeKeepsTheFleetPolicyThenAddsItsOwnUntilTheLinkIsBack) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain()));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  absl::StatusOr<std::unique_ptr<TcpProxy>> proxy = TcpProxy::Start(port_);
  ASSERT_THAT(proxy, IsOk());
  StartNodes(2);
  // bn-3 reaches breakerd only through the proxy, and trusts the fleet policy for 2 s
  // without breakerd.
  NodeOptions through_proxy;
  through_proxy.port = (*proxy)->port();
  through_proxy.staleness_limit_seconds = 2;
  Node& cut_off = StartNode("bn-3", through_proxy);
  node(0).Observe(Missing(5, "r5"));
  const v1::Policy fleet = AwaitFleetPolicy({"ALL_BUILDERS", {5}});

  const size_t mark = cut_off.Mark();
  (*proxy)->Cut();
  EXPECT_TRUE(PollUntil([&] {
    std::optional<v1::Node> info = NodeInfo("bn-3");
    return info.has_value() && !info->connected();
  })) << "breakerd still lists bn-3 as connected";
  // Cut off, bn-3 sees builder 9 fail: only its own engine knows.
  cut_off.Observe(Missing(9, "r9"));

  // Past the staleness limit, it applies the stricter of the fleet's last policy and its own.
  std::optional<PolicyLine> stale = cut_off.AwaitPolicyLine(
      [](const PolicyLine& line) {
        return line.source == "fleet+local" && line.banned == std::vector<core::BuilderIndex>{5, 9};
      },
      mark);
  ASSERT_TRUE(stale.has_value()) << "bn-3 never added its own ban of builder 9";
  EXPECT_EQ(stale->version, fleet.version());
  // Fail-static: from the cut on, it never applied less than the fleet's last policy.
  for (const PolicyLine& line : cut_off.Policies(mark)) {
    EXPECT_EQ(line.version, fleet.version()) << line.text;
    EXPECT_TRUE(std::count(line.banned.begin(), line.banned.end(), 5) == 1) << line.text;
    EXPECT_NE(line.source, "local") << line.text;
  }
  // The rest of the fleet has not heard of builder 9.
  absl::StatusOr<v1::Builder> nine = GetBuilder(9);
  ASSERT_THAT(nine, IsOk());
  EXPECT_EQ(nine->failed(), 0u);
  EXPECT_FALSE(nine->has_ban());

  // The link is back: bn-3 reconnects, hands over its failure, and the whole fleet applies
  // the fleet's policy again, builder 9 banned by all.
  (*proxy)->Restore();
  const v1::Policy healed = AwaitFleetPolicy({"ALL_BUILDERS", {5, 9}});
  EXPECT_GT(healed.version(), fleet.version());
}

}  // namespace
}  // namespace breaker
