#ifndef TESTS_FLEET_HARNESS_H_
#define TESTS_FLEET_HARNESS_H_

// The fleet as it runs in production, for tests: the real breakerd binary and several
// example_node processes (each a beacon node linking the client library), over real loopback
// TCP, on the real clock. A test drives the nodes by writing observations to their stdin
// (example_node --script), reads what every node prints, and asks breakerd's Admin API.
//
// Everything here crosses processes, so every wait is for a condition with a generous deadline
// (sanitizers on a loaded 2-core machine), and nothing asserts how long anything took. The
// chains are the test's own (a custom network, its genesis set by the test).
//
// The binaries must be in the test's data: //service:breakerd and //examples:example_node.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "core/chain_time.h"
#include "core/types.h"
#include "gtest/gtest.h"
#include "tests/support/subprocess.h"
#include "tests/support/test_util.h"

namespace breaker::testing {

// The binaries, from the runfiles root of the workspace (the test's working directory).
inline constexpr char kBreakerd[] = "service/breakerd";
inline constexpr char kExampleNode[] = "examples/example_node";

// Every cross-process wait: generous, since sanitizers slow each process down several times
// and the machine is shared.
inline constexpr absl::Duration kFleetTimeout = absl::Seconds(90);

inline absl::Time Deadline() { return absl::Now() + kFleetTimeout; }

// Polls `condition` until it holds or `timeout` has passed; returns whether it holds. Slower
// than WaitFor's 2 ms: here each poll may be an rpc.
bool PollUntil(const std::function<bool()>& condition, absl::Duration timeout = kFleetTimeout,
               absl::Duration interval = absl::Milliseconds(20));

// --- Chains -------------------------------------------------------------------------------

// A network no one else knows: breakerd and the nodes take every chain setting from the test's
// configuration file.
inline constexpr char kNetwork[] = "e2e";

// Gloas from genesis, with mainnet's 12 s slots and 32-slot epochs. Genesis is set so that the
// test starts two slots into an epoch: the next epoch boundary, where a first ban lifts, is six
// minutes away, beyond any test.
core::ChainSpec GloasChain();

// 2 s slots, for the missed-slot rules: a slot is judged once the next one has ended, so a
// run of missed slots builds up in seconds. (Not 1 s: a report written as its slot ends must
// reach breakerd before the slot is judged, or the run it belongs to is judged broken; 2 s
// leaves a slow, loaded machine seconds for it.) Gloas from genesis, or not scheduled
// (pre-Gloas).
core::ChainSpec FastChain(bool gloas);

// The `chain { ... }` block of a configuration file.
std::string ChainConfig(const core::ChainSpec& chain);

// --- Observations, as example_node --script reads them --------------------------------------

// Builder `builder`'s block `root` (a label) got no payload, though 90% of the committee
// attested it: a failure. Of the node's current slot.
std::string Missing(core::BuilderIndex builder, absl::string_view root);

// A bid of `builder` reached the node through `relay` (empty: no relay named).
std::string Bid(core::BuilderIndex builder, absl::string_view relay);

// The node has no block for `slot`.
std::string NoBlock(core::Slot slot);

// The node has a block for `slot`.
std::string Block(core::Slot slot);

// --- What the nodes print -----------------------------------------------------------------

// One `policy source=... version=... mode=... banned=[...] reason="..."` line of example_node.
struct PolicyLine {
  std::string source;
  uint64_t version = 0;
  std::string mode;
  std::vector<core::BuilderIndex> banned;
  std::string text;
};

std::optional<PolicyLine> ParsePolicyLine(absl::string_view text);

// The counters of example_node's `observations reported=N acknowledged=M refused=R` line.
struct AckLine {
  uint64_t reported = 0;
  uint64_t acknowledged = 0;
  uint64_t refused = 0;
};

std::optional<AckLine> ParseAckLine(absl::string_view text);

// A policy every node of the fleet must come to apply.
struct Expected {
  std::string mode = "ALL_BUILDERS";
  std::vector<core::BuilderIndex> banned;
};

std::string Describe(const Expected& expected);

bool Matches(const v1::Policy& policy, const Expected& expected);

// --- One node -----------------------------------------------------------------------------

// An example_node process in script mode.
class Node {
 public:
  Node(std::string id, std::unique_ptr<Subprocess> process);

  const std::string& id() const { return id_; }
  Subprocess& process() { return *process_; }

  // Reports one observation through the node's script.
  void Observe(absl::string_view observation);

  // Observations written to the node's script so far.
  uint64_t observed() const { return observed_; }

  // Waits until breakerd has handled every observation written to the node, and expects that
  // it refused none.
  bool AwaitHandled();

  // Where the node's output is now: what it prints from here on starts at this index.
  size_t Mark() const;

  // The policies the node printed, from output index `from` on.
  std::vector<PolicyLine> Policies(size_t from = 0) const;

  std::optional<PolicyLine> LatestPolicy() const;

  // The node's latest observation counters line; nullopt before the first.
  std::optional<AckLine> LatestAck() const;

  // Waits until the policy the node applies now (its latest line) satisfies `predicate`.
  bool AwaitLatestPolicy(const std::function<bool(const PolicyLine&)>& predicate);

  // Waits for a policy line at output index `from` or later that satisfies `predicate`.
  std::optional<PolicyLine> AwaitPolicyLine(const std::function<bool(const PolicyLine&)>& predicate,
                                            size_t from);

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
  FleetTest();

  // Stops everything gracefully, and expects every process to exit cleanly: a crash or a
  // sanitizer report at shutdown fails the test.
  void TearDown() override;

  static void ExpectCleanExit(Subprocess& process);

  // Writes breakerd's configuration file, which the nodes read too: `chain`, then `rest`
  // (text-format breaker.v1.Config fields).
  void Configure(const core::ChainSpec& chain, absl::string_view rest = "");

  // Starts breakerd over the test's state directory: on a free port the first time, then on
  // that same port, which the nodes keep dialing.
  void StartBreakerd();

  // Sends `signal` to breakerd and waits for it to exit; returns its wait status.
  int StopBreakerd(int signal);

  // Starts an example_node in script mode, against breakerd or through a proxy.
  Node& StartNode(const std::string& id, const NodeOptions& node_options = {});

  // Starts nodes bn-1 .. bn-`count`, against breakerd.
  void StartNodes(int count);

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

  absl::StatusOr<v1::Policy> GetPolicy();
  absl::StatusOr<v1::Builder> GetBuilder(core::BuilderIndex builder);
  // Every page, merged.
  absl::StatusOr<v1::ListBuildersResponse> ListBuilders(bool banned_only);
  absl::StatusOr<v1::ListRelaysResponse> ListRelays();

  // The node as breakerd lists it; nullopt when breakerd does not list it (or cannot say).
  std::optional<v1::Node> NodeInfo(const std::string& id);

  // Whether breakerd lists every node as holding a stream now.
  bool AllNodesConnected();

  // breakerd's grpc.health.v1 status for `service` ("": overall): "SERVING", "NOT_SERVING",
  // or "error: " and the call's error.
  std::string Health(const std::string& service = "");

  // --- Convergence ---

  // Waits until breakerd's policy is `expected`, then until every node applies that version
  // (or a later one) from the fleet with the same decisions. Returns breakerd's policy.
  v1::Policy AwaitFleetPolicy(const Expected& expected);

  // Plays the chain's slots `first`..`last` as they go by: once slot s has ended, calls
  // `report(s)` to write what the nodes saw of it. Stops after a slot for which `done()` holds.
  // Returns the last slot played.
  core::Slot PlaySlots(
      core::Slot first, core::Slot last, const std::function<void(core::Slot)>& report,
      const std::function<bool()>& done = [] { return false; });

  const std::string dir_;
  const std::string config_path_;
  core::ChainSpec chain_;
  // breakerd's port: 0 until it first started.
  int port_ = 0;
  // More flags for breakerd, set before StartBreakerd.
  std::vector<std::string> breakerd_flags_;
  std::unique_ptr<Subprocess> breakerd_;
  std::unique_ptr<v1::Admin::Stub> admin_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace breaker::testing

#endif  // TESTS_FLEET_HARNESS_H_
