#include "tests/support/fleet_harness.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "tests/support/status_matchers.h"

namespace breaker::testing {

using Stream = Subprocess::Stream;

bool PollUntil(const std::function<bool()>& condition, absl::Duration timeout,
               absl::Duration interval) {
  return WaitFor(condition, timeout, interval);
}

// --- Chains -------------------------------------------------------------------------------

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

// --- Observations -------------------------------------------------------------------------

std::string Missing(core::BuilderIndex builder, absl::string_view root) {
  return absl::StrCat("payload_missing { builder_index: ", builder, " block_root: \"", root,
                      "\" attested_fraction: 0.9 }");
}

std::string Bid(core::BuilderIndex builder, absl::string_view relay) {
  if (relay.empty()) return absl::StrCat("bid_seen { builder_index: ", builder, " }");
  return absl::StrCat("bid_seen { builder_index: ", builder, " relay: \"", relay, "\" }");
}

std::string NoBlock(core::Slot slot) { return absl::StrCat("slot: ", slot, " blocks_seen {}"); }

std::string Block(core::Slot slot) {
  return absl::StrCat("slot: ", slot, " blocks_seen { block_roots: \"block-", slot, "\" }");
}

// --- What the nodes print -----------------------------------------------------------------

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

std::optional<AckLine> ParseAckLine(absl::string_view text) {
  if (!absl::ConsumePrefix(&text, "observations ")) return std::nullopt;
  AckLine line;
  for (absl::string_view field : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    const std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(field, '=');
    uint64_t* counter = kv.first == "reported"       ? &line.reported
                        : kv.first == "acknowledged" ? &line.acknowledged
                        : kv.first == "refused"      ? &line.refused
                                                     : nullptr;
    if (counter != nullptr && !absl::SimpleAtoi(kv.second, counter)) return std::nullopt;
  }
  return line;
}

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

Node::Node(std::string id, std::unique_ptr<Subprocess> process)
    : id_(std::move(id)), process_(std::move(process)) {}

void Node::Observe(absl::string_view observation) {
  EXPECT_TRUE(process_->WriteLine(observation)) << id_ << " no longer reads its script";
  ++observed_;
}

bool Node::AwaitHandled() {
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

size_t Node::Mark() const { return process_->LineCount(Stream::kStdout); }

std::vector<PolicyLine> Node::Policies(size_t from) const {
  std::vector<PolicyLine> policies;
  const std::vector<std::string> lines = process_->Lines(Stream::kStdout);
  for (size_t i = from; i < lines.size(); ++i) {
    if (std::optional<PolicyLine> policy = ParsePolicyLine(lines[i])) policies.push_back(*policy);
  }
  return policies;
}

std::optional<PolicyLine> Node::LatestPolicy() const {
  std::vector<PolicyLine> policies = Policies();
  if (policies.empty()) return std::nullopt;
  return policies.back();
}

std::optional<AckLine> Node::LatestAck() const {
  const std::vector<std::string> lines = process_->Lines(Stream::kStdout);
  for (auto line = lines.rbegin(); line != lines.rend(); ++line) {
    if (std::optional<AckLine> ack = ParseAckLine(*line)) return ack;
  }
  return std::nullopt;
}

bool Node::AwaitLatestPolicy(const std::function<bool(const PolicyLine&)>& predicate) {
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

std::optional<PolicyLine> Node::AwaitPolicyLine(
    const std::function<bool(const PolicyLine&)>& predicate, size_t from) {
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

// --- A random load -------------------------------------------------------------------------

BuilderSet Difference(const BuilderSet& a, const BuilderSet& b) {
  BuilderSet difference;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(),
                      std::inserter(difference, difference.end()));
  return difference;
}

BuilderSet BannedIn(const v1::Policy& policy) {
  BuilderSet banned;
  for (const v1::BuilderBan& ban : policy.banned_builders()) banned.insert(ban.builder_index());
  return banned;
}

uint64_t SeedFrom(const char* variable) {
  uint64_t seed = 0;
  if (const char* text = std::getenv(variable); text != nullptr && absl::SimpleAtoi(text, &seed)) {
    return seed;
  }
  return (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
}

namespace {
// Bids come from builders that never fail.
constexpr core::BuilderIndex kFirstBidder = 50;
constexpr core::BuilderIndex kBidders = 20;
}  // namespace

RandomLoad::RandomLoad(std::vector<Node*> nodes, uint64_t seed)
    : nodes_(std::move(nodes)), random_(seed), scripts_(nodes_.size()) {
  for (size_t i = 0; i < scripts_.size(); ++i) scripts_[i].next_builder = (i + 1) * 1000;
}

uint64_t RandomLoad::Uniform(uint64_t low, uint64_t high) {
  return std::uniform_int_distribution<uint64_t>(low, high)(random_);
}

void RandomLoad::ObserveUntil(absl::Time until) {
  while (absl::Now() < until) {
    const size_t i = Uniform(0, nodes_.size() - 1);
    Script& script = scripts_[i];
    if (Uniform(0, 4) == 0) {
      const core::BuilderIndex builder = script.next_builder++;
      script.failures.emplace_back(nodes_[i]->observed(), builder);
      nodes_[i]->Observe(Missing(builder, absl::StrCat("f", builder)));
    } else {
      nodes_[i]->Observe(Bid(kFirstBidder + Uniform(0, kBidders - 1), ""));
    }
    absl::SleepFor(absl::Milliseconds(Uniform(3, 30)));
  }
}

Told RandomLoad::WhatTheNodesWereTold() const {
  Told told;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const std::optional<AckLine> ack = nodes_[i]->LatestAck();
    const uint64_t acknowledged = ack.has_value() ? ack->acknowledged : 0;
    for (const auto& [position, builder] : scripts_[i].failures) {
      if (position < acknowledged) told.acknowledged_failures.insert(builder);
    }
    uint64_t version = 0;
    for (const PolicyLine& line : nodes_[i]->Policies()) {
      if (line.source == "local") continue;
      version = std::max(version, line.version);
      if (line.source == "fleet") told.banned.insert(line.banned.begin(), line.banned.end());
    }
    told.max_version = std::max(told.max_version, version);
    told.summary.push_back(absl::StrCat(nodes_[i]->id(), " acknowledged=", acknowledged, "/",
                                        nodes_[i]->observed(), " version=", version));
  }
  return told;
}

BuilderSet RandomLoad::Failed() const {
  BuilderSet failed;
  for (const Script& script : scripts_) {
    for (const auto& failure : script.failures) failed.insert(failure.second);
  }
  return failed;
}

bool AllHealthIs(int port, const std::string& expected) {
  for (const char* service : {"", "breaker.v1.Breaker", "breaker.v1.Admin"}) {
    if (CheckHealth(port, service) != expected) return false;
  }
  return true;
}

// --- The fleet ----------------------------------------------------------------------------

FleetTest::FleetTest() : dir_(TestDir()), config_path_(dir_ + "/breakerd.textproto") {}

void FleetTest::TearDown() {
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

void FleetTest::ExpectCleanExit(Subprocess& process) {
  const std::optional<int> status = process.WaitUntilExit(Deadline());
  ASSERT_TRUE(status.has_value()) << process.name() << " did not stop on SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << process.name() << " " << Subprocess::DescribeStatus(*status);
}

void FleetTest::Configure(const core::ChainSpec& chain, absl::string_view rest) {
  chain_ = chain;
  std::ofstream file(config_path_, std::ios::trunc);
  file << ChainConfig(chain) << rest;
  ASSERT_TRUE(file.good()) << config_path_;
}

void FleetTest::StartBreakerd() {
  ASSERT_EQ(breakerd_, nullptr) << "breakerd runs already";
  breakerd_ = LaunchBreakerd("breakerd", {absl::StrCat("--listen=127.0.0.1:", port_),
                                          absl::StrCat("--state_dir=", dir_, "/state")});
  ASSERT_NE(breakerd_, nullptr);
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
  TalkTo(port);
}

std::unique_ptr<Subprocess> FleetTest::LaunchBreakerd(const std::string& name,
                                                      std::vector<std::string> args) {
  Subprocess::Options options;
  options.binary = kBreakerd;
  options.name = name;
  options.args = std::move(args);
  options.args.push_back(absl::StrCat("--config=", config_path_));
  options.args.insert(options.args.end(), breakerd_flags_.begin(), breakerd_flags_.end());
  absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(options);
  EXPECT_THAT(started, IsOk()) << name;
  if (!started.ok()) return nullptr;
  return *std::move(started);
}

void FleetTest::TalkTo(int port) {
  port_ = port;
  admin_ = v1::Admin::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials()));
}

std::string FleetTest::NodeTargets() const { return absl::StrCat("127.0.0.1:", port_); }

int FleetTest::StopBreakerd(int signal) {
  breakerd_->Kill(signal);
  const std::optional<int> status = breakerd_->WaitUntilExit(Deadline());
  EXPECT_TRUE(status.has_value()) << "breakerd did not exit on signal " << signal;
  admin_.reset();
  breakerd_.reset();
  return status.value_or(-1);
}

Node& FleetTest::StartNode(const std::string& id, const NodeOptions& node_options) {
  Subprocess::Options options;
  options.binary = kExampleNode;
  options.name = id;
  options.args = {absl::StrCat("--target=", node_options.port != 0
                                                ? absl::StrCat("127.0.0.1:", node_options.port)
                                                : NodeTargets()),
                  absl::StrCat("--node_id=", id), absl::StrCat("--config=", config_path_),
                  "--script",
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

void FleetTest::StartNodes(int count) {
  for (int i = 1; i <= count; ++i) StartNode(absl::StrCat("bn-", i));
}

// --- The Admin API ---

std::string FleetTest::Health(const std::string& service) {
  return ::breaker::testing::CheckHealth(port_, service);
}

absl::StatusOr<v1::Policy> FleetTest::GetPolicy() {
  return Call(&v1::Admin::Stub::async::GetPolicy, v1::GetPolicyRequest());
}

absl::StatusOr<v1::Builder> FleetTest::GetBuilder(core::BuilderIndex builder) {
  v1::GetBuilderRequest request;
  request.set_builder_index(builder);
  return Call(&v1::Admin::Stub::async::GetBuilder, request);
}

absl::StatusOr<v1::ListBuildersResponse> FleetTest::ListBuilders(bool banned_only) {
  v1::ListBuildersRequest request;
  request.set_banned_only(banned_only);
  v1::ListBuildersResponse all;
  do {
    absl::StatusOr<v1::ListBuildersResponse> page =
        Call(&v1::Admin::Stub::async::ListBuilders, request);
    if (!page.ok()) return page.status();
    all.mutable_builders()->MergeFrom(page->builders());
    request.set_page_token(page->next_page_token());
  } while (!request.page_token().empty());
  return all;
}

absl::StatusOr<v1::ListRelaysResponse> FleetTest::ListRelays() {
  return Call(&v1::Admin::Stub::async::ListRelays, v1::ListRelaysRequest());
}

std::optional<v1::Node> FleetTest::NodeInfo(const std::string& id) {
  absl::StatusOr<v1::ListNodesResponse> response =
      Call(&v1::Admin::Stub::async::ListNodes, v1::ListNodesRequest());
  if (!response.ok()) return std::nullopt;
  for (const v1::Node& node : response->nodes()) {
    if (node.node_id() == id) return node;
  }
  return std::nullopt;
}

bool FleetTest::AllNodesConnected() {
  absl::StatusOr<v1::ListNodesResponse> response =
      Call(&v1::Admin::Stub::async::ListNodes, v1::ListNodesRequest());
  if (!response.ok()) return false;
  std::set<std::string> connected;
  for (const v1::Node& info : response->nodes()) {
    if (info.connected()) connected.insert(info.node_id());
  }
  return std::all_of(nodes_.begin(), nodes_.end(),
                     [&](const auto& node) { return connected.count(node->id()) > 0; });
}

// --- Convergence ---

v1::Policy FleetTest::AwaitFleetPolicy(const Expected& expected) {
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

void FleetTest::ExpectHolds(const Told& told, const std::string& context_text) {
  const std::string context =
      absl::StrCat(context_text, "; the nodes had been told: ", absl::StrJoin(told.summary, "; "));
  absl::StatusOr<v1::Policy> policy;
  // The first call may race the listener's start up: breakerd logs that it listens first.
  ASSERT_TRUE(PollUntil([&] { return (policy = GetPolicy()).ok(); }))
      << policy.status() << " " << context;
  if (fleet_id_.empty()) fleet_id_ = policy->fleet_id();
  EXPECT_EQ(policy->fleet_id(), fleet_id_) << "the same state, another fleet id; " << context;
  // Versions never go back: breakerd is at or past every version it (or a predecessor) sent.
  ASSERT_GE(policy->version(), told.max_version) << context;

  absl::StatusOr<v1::ListBuildersResponse> builders = ListBuilders(/*banned_only=*/true);
  ASSERT_THAT(builders, IsOk()) << context;
  BuilderSet listed;
  for (const v1::Builder& builder : builders->builders()) listed.insert(builder.builder_index());
  // No acknowledged failure is lost, no ban a node applied is lost (neither in the operators'
  // list nor in the policy: the latter may be newer, never smaller).
  const BuilderSet in_policy = BannedIn(*policy);
  ASSERT_EQ(Difference(told.acknowledged_failures, listed), BuilderSet{})
      << "acknowledged failures whose ban is not listed; " << context;
  ASSERT_EQ(Difference(told.acknowledged_failures, in_policy), BuilderSet{})
      << "acknowledged failures whose ban is not in the policy; " << context;
  ASSERT_EQ(Difference(told.banned, listed), BuilderSet{})
      << "bans the nodes applied, no longer listed; " << context;
}

void FleetTest::ExpectEverythingLanded(const RandomLoad& load, const std::string& context) {
  // Every node hands over what it still holds, and catches up.
  for (const auto& node : nodes_) {
    ASSERT_TRUE(node->AwaitHandled()) << context;
    const std::optional<AckLine> ack = node->LatestAck();
    EXPECT_EQ(ack->reported, node->observed()) << node->id() << "; " << context;
    EXPECT_EQ(ack->acknowledged, node->observed()) << node->id() << "; " << context;
  }
  const BuilderSet failed = load.Failed();
  const Told told = load.WhatTheNodesWereTold();
  ASSERT_EQ(told.acknowledged_failures, failed) << context;
  ASSERT_NO_FATAL_FAILURE(ExpectHolds(told, context));

  // Every failure is a ban, and nothing else is.
  absl::StatusOr<v1::Policy> final_policy = GetPolicy();
  ASSERT_THAT(final_policy, IsOk()) << context;
  EXPECT_EQ(BannedIn(*final_policy), failed) << context;
  EXPECT_EQ(final_policy->mode(), v1::MODE_ALL_BUILDERS) << context;
  absl::StatusOr<v1::ListBuildersResponse> listed = ListBuilders(/*banned_only=*/true);
  ASSERT_THAT(listed, IsOk()) << context;
  EXPECT_EQ(listed->builders_size(), static_cast<int>(failed.size())) << context;

  // Every node applies the final policy from the fleet, and breakerd knows it.
  const std::vector<core::BuilderIndex> expected_bans(failed.begin(), failed.end());
  for (const auto& node : nodes_) {
    const bool applied = node->AwaitLatestPolicy([&](const PolicyLine& line) {
      return line.source == "fleet" && line.version >= final_policy->version() &&
             line.banned == expected_bans;
    });
    std::optional<PolicyLine> latest = node->LatestPolicy();
    EXPECT_TRUE(applied) << node->id() << " does not apply version " << final_policy->version()
                         << "; it printed last: " << (latest.has_value() ? latest->text : "none")
                         << "; " << context;
  }
  std::optional<v1::Node> lagging;
  EXPECT_TRUE(PollUntil([&] {
    for (const auto& node : nodes_) {
      std::optional<v1::Node> info = NodeInfo(node->id());
      if (!info.has_value() || !info->connected() ||
          info->policy_version_acked() < final_policy->version()) {
        lagging = info;
        return false;
      }
    }
    return true;
  })) << "breakerd lists a node behind version "
      << final_policy->version() << ": " << (lagging.has_value() ? lagging->ShortDebugString() : "")
      << "; " << context;

  // Each node's versions never went back (one fleet id throughout), and the final version is
  // at or past all of them.
  for (const auto& node : nodes_) {
    uint64_t previous = 0;
    for (const PolicyLine& line : node->Policies()) {
      if (line.source == "local") continue;
      EXPECT_GE(line.version, previous) << node->id() << ": " << line.text << "; " << context;
      previous = std::max(previous, line.version);
    }
    EXPECT_LE(previous, final_policy->version()) << node->id() << "; " << context;
  }
}

core::Slot FleetTest::PlaySlots(core::Slot first, core::Slot last,
                                const std::function<void(core::Slot)>& report,
                                const std::function<bool()>& done) {
  core::Slot played = first;
  for (core::Slot slot = first; slot <= last; ++slot) {
    EXPECT_TRUE(
        PollUntil([&] { return CurrentSlot() > slot; }, kFleetTimeout, absl::Milliseconds(10)));
    report(slot);
    played = slot;
    if (done()) break;
  }
  return played;
}

}  // namespace breaker::testing
