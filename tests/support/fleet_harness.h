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
#include <random>
#include <set>
#include <string>
#include <utility>
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

// --- A random load, and what the nodes were told of it ---------------------------------------

using BuilderSet = std::set<core::BuilderIndex>;

// a \ b.
BuilderSet Difference(const BuilderSet& a, const BuilderSet& b);

BuilderSet BannedIn(const v1::Policy& policy);

// Rules under which the state only ever gains bans: each failure bans its builder for 1000
// epochs (beyond any test, on 12 s slots), and no number of banned builders changes the mode.
// So the bans a breakerd must hold are exactly those of the failures acknowledged.
inline constexpr char kBanEveryFailure[] =
    "blacklist_period_epochs: 1000\n"
    "critical_failed_builders: 1000000\n"
    "critical_failed_untrusted_builders: 1000000\n"
    "max_tracked_builders: 8192\n";

// The seed of a randomized schedule: the environment variable `variable` (bazel test
// --test_env=VARIABLE=N) when it holds a number, otherwise a fresh one.
uint64_t SeedFrom(const char* variable);

// What breakerd had told the fleet, as the nodes printed it.
struct Told {
  // Builders of the failures each node had been told were handled.
  BuilderSet acknowledged_failures;
  // Every builder banned in a fleet policy a node applied.
  BuilderSet banned;
  // The highest policy version any node applied.
  uint64_t max_version = 0;
  // Per node, "bn-1 acknowledged=12/15 version=7".
  std::vector<std::string> summary;
};

// Observations written at random to nodes: mostly bids of builders that never fail (they load
// the journal and change no decision), and failures, each a new block of a builder no other
// failure names (each node draws from a range of its own), so that under kBanEveryFailure every
// acknowledged failure is one ban that must stay. What the nodes printed back is the record of
// what breakerd told them: `acknowledged=M` means a node's first M observations are handled
// (sequences follow script order, acknowledgements are cumulative).
//
// Not thread-safe: the test's thread drives it. REQUIRES: the nodes outlive it.
class RandomLoad {
 public:
  RandomLoad(std::vector<Node*> nodes, uint64_t seed);

  // Uniform in [low, high], from the load's PRNG: the test's schedule draws from it too, so
  // that one seed replays it.
  uint64_t Uniform(uint64_t low, uint64_t high);

  // Writes observations to random nodes, a few milliseconds apart, until `until`.
  void ObserveUntil(absl::Time until);

  // What the nodes printed so far. Called while no breakerd leads, it is what every breakerd
  // before told them.
  Told WhatTheNodesWereTold() const;

  // The builders of every failure written so far.
  BuilderSet Failed() const;

 private:
  // What the load wrote to one node's script.
  struct Script {
    // (position in the script, counted from 0; builder) of every failure, in script order.
    std::vector<std::pair<uint64_t, core::BuilderIndex>> failures;
    core::BuilderIndex next_builder = 0;
  };

  const std::vector<Node*> nodes_;
  std::mt19937_64 random_;
  std::vector<Script> scripts_;
};

// Whether the overall health of the breakerd on 127.0.0.1:`port` and that of both its services
// (breaker.v1.Breaker, breaker.v1.Admin) is `expected` ("SERVING", "NOT_SERVING").
bool AllHealthIs(int port, const std::string& expected);

// --- The fleet ----------------------------------------------------------------------------

struct NodeOptions {
  // The port the node connects to; 0: the fleet's breakerd addresses (NodeTargets()).
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

  // Starts a breakerd process named `name` with `args`, then the configuration file and
  // breakerd_flags_. Fails the test when the binary cannot start.
  std::unique_ptr<Subprocess> LaunchBreakerd(const std::string& name,
                                             std::vector<std::string> args);

  // Points the Admin calls and Health at the breakerd on `port`, over a new channel (an old
  // one's reconnect backoff would only delay the calls).
  void TalkTo(int port);

  // The --target of the nodes: breakerd's address; a fleet of several breakerd lists them all.
  virtual std::string NodeTargets() const;

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

  // Whether breakerd lists every node as holding a stream now (one rpc).
  bool AllNodesConnected();

  // breakerd's grpc.health.v1 status for `service` ("": overall): "SERVING", "NOT_SERVING",
  // or "error: " and the call's error.
  std::string Health(const std::string& service = "");

  // AllHealthIs for the breakerd the test talks to.
  bool HealthIs(const std::string& expected) { return AllHealthIs(port_, expected); }

  // --- Convergence ---

  // Waits until breakerd's policy is `expected`, then until every node applies that version
  // (or a later one) from the fleet with the same decisions. Returns breakerd's policy.
  v1::Policy AwaitFleetPolicy(const Expected& expected);

  // Expects that breakerd holds everything `told`: its fleet id is the one it first had in
  // this test, its policy version is at or past every version sent, and every acknowledged
  // failure and every ban a node applied is banned, both in the operators' list and in the
  // policy. `context` goes into the failures' messages.
  void ExpectHolds(const Told& told, const std::string& context);

  // Once `load` has stopped writing: expects that breakerd acknowledges everything every node
  // holds, none refused; that its bans are exactly the load's failures; that every node comes
  // to apply its final policy from the fleet, and breakerd lists every node at that version;
  // and that no node's versions ever went back.
  void ExpectEverythingLanded(const RandomLoad& load, const std::string& context);

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
  // The fleet id breakerd first answered with (ExpectHolds); empty until then.
  std::string fleet_id_;
};

}  // namespace breaker::testing

#endif  // TESTS_FLEET_HARNESS_H_
