// The fleet as it runs in production: the real breakerd binary and several example_node
// processes (each a beacon node linking the client library), over real loopback TCP, on the
// real clock. The test drives the nodes by writing observations to their stdin (example_node
// --script) and checks what every node prints, and what breakerd's Admin API says (the
// harness, tests/support/fleet_harness.h, is shared with the crash-loop test).
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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "client/channel_security.h"
#include "core/types.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/support/fleet_harness.h"
#include "tests/support/status_matchers.h"
#include "tests/support/subprocess.h"
#include "tests/support/tcp_proxy.h"

namespace breaker {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::testing::Bid;
using ::breaker::testing::Block;
using ::breaker::testing::CallUnary;
using ::breaker::testing::FastChain;
using ::breaker::testing::FleetTest;
using ::breaker::testing::GloasChain;
using ::breaker::testing::IsOk;
using ::breaker::testing::Missing;
using ::breaker::testing::NoBlock;
using ::breaker::testing::Node;
using ::breaker::testing::NodeOptions;
using ::breaker::testing::PolicyLine;
using ::breaker::testing::PollUntil;
using ::breaker::testing::StatusIs;
using ::breaker::testing::Subprocess;
using ::breaker::testing::TcpProxy;

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

// breakerd's configuration is reloaded while a node is connected: the node's own engine,
// which decides beside the fleet's last policy once breakerd is gone, runs the new rules.
TEST_F(FleetTest, AReloadedConfigurationReachesTheLocalFallbackOfConnectedNodes) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain()));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  // The node started with the file as it was (example_node --config): by its rules, one
  // failed untrusted builder bans only that builder.
  NodeOptions options;
  options.staleness_limit_seconds = 2;
  Node& node = StartNode("bn-1", options);
  AwaitFleetPolicy({});

  // By the new rules one such builder is enough for TRUSTED_ONLY.
  ASSERT_NO_FATAL_FAILURE(Configure(chain_, "critical_failed_untrusted_builders: 1\n"));
  absl::StatusOr<v1::Config> reloaded =
      Call(&v1::Admin::Stub::async::ReloadConfig, v1::ReloadConfigRequest());
  ASSERT_THAT(reloaded, IsOk());
  EXPECT_EQ(reloaded->critical_failed_untrusted_builders(), 1u);
  // What breakerd sends after the reload, the acknowledgement of a bid among it, comes after
  // the new configuration.
  node.Observe(Bid(7, ""));
  ASSERT_TRUE(node.AwaitHandled());

  StopBreakerd(SIGTERM);
  const size_t mark = node.Mark();
  node.Observe(Missing(11, "r11"));
  std::optional<PolicyLine> local = node.AwaitPolicyLine(
      [](const PolicyLine& line) {
        return line.source == "fleet+local" && line.banned == std::vector<core::BuilderIndex>{11};
      },
      mark);
  ASSERT_TRUE(local.has_value()) << "bn-1 never added its own ban of builder 11";
  EXPECT_EQ(local->mode, "TRUSTED_ONLY") << local->text;
}

// SIGHUP makes breakerd re-read its access file; a bad file keeps the one in force, and
// breakerd serves on.
TEST_F(FleetTest, SighupReloadsTheAccessFile) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain()));
  const std::string access_file = dir_ + "/access.textproto";
  // The SHA-256 of "admin-token" and of "viewer-token".
  const std::string admin =
      "principal { name: \"ops\" role: ROLE_ADMIN token_sha256: "
      "\"10a4c7c9fc5206d6f36dc6944a81bb6f4a3cb0e25014ae3b12e6c3e52712292a\" }\n";
  const std::string viewer =
      "principal { name: \"dashboard\" role: ROLE_VIEWER token_sha256: "
      "\"d036bd6d01a1cae081d39a2f8dab751dc042de814fd60df31fcb553170950f29\" }\n";
  auto write = [&](const std::string& text) {
    std::ofstream file(access_file, std::ios::trunc);
    file << text;
    ASSERT_TRUE(file.good()) << access_file;
  };
  ASSERT_NO_FATAL_FAILURE(write(admin));
  breakerd_flags_ = {absl::StrCat("--access_file=", access_file)};
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> plaintext =
      client::MakeChannelCredentials({});
  ASSERT_THAT(plaintext, IsOk());
  auto dashboard = v1::Admin::NewStub(client::CreateChannel(
      absl::StrCat("127.0.0.1:", port_), *plaintext, "viewer-token", grpc::ChannelArguments()));
  auto get_policy = [&] {
    return CallUnary(*dashboard, &v1::Admin::Stub::async::GetPolicy, v1::GetPolicyRequest());
  };
  EXPECT_THAT(get_policy(), StatusIs(absl::StatusCode::kUnauthenticated));

  ASSERT_NO_FATAL_FAILURE(write(admin + viewer));
  size_t mark = breakerd_->LineCount(Subprocess::Stream::kStderr);
  breakerd_->Kill(SIGHUP);
  EXPECT_TRUE(breakerd_
                  ->WaitForLine(
                      Subprocess::Stream::kStderr,
                      [](absl::string_view line) {
                        return absl::StrContains(line, "reloaded: 2 principals");
                      },
                      ::breaker::testing::Deadline(), mark)
                  .has_value());
  EXPECT_THAT(get_policy(), IsOk());

  ASSERT_NO_FATAL_FAILURE(write("principal { name: \"nobody\" }\n"));
  mark = breakerd_->LineCount(Subprocess::Stream::kStderr);
  breakerd_->Kill(SIGHUP);
  EXPECT_TRUE(breakerd_
                  ->WaitForLine(
                      Subprocess::Stream::kStderr,
                      [](absl::string_view line) {
                        return absl::StrContains(line, "access file reload refused") &&
                               absl::StrContains(line, "'nobody'");
                      },
                      ::breaker::testing::Deadline(), mark)
                  .has_value());
  EXPECT_THAT(get_policy(), IsOk());
  EXPECT_EQ(Health(), "SERVING");
}

// A node that says hello and then never reads its stream, while breakerd has a policy larger
// than the stream's flow-control window to write to it: breakerd ends that stream at its write
// deadline and counts it, and the node beside it streams on.
TEST_F(FleetTest, ANodeThatStopsReadingIsEndedAtTheWriteDeadlineAndTheOthersGoOn) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain()));
  const int metrics_port = ::breaker::testing::FreeLoopbackPort();
  breakerd_flags_ = {"--write_timeout_seconds=2",
                     absl::StrCat("--metrics_listen=127.0.0.1:", metrics_port)};
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  StartNodes(1);
  auto write_timeouts = [&]() -> double {
    httplib::Client client("127.0.0.1", metrics_port);
    httplib::Result result = client.Get("/metrics");
    if (!result || result->status != 200) return -1;
    const std::string series = "\nbreakerd_write_timeouts_total{rpc=\"connect\"} ";
    const size_t at = result->body.find(series);
    if (at == std::string::npos) return -1;
    return std::strtod(result->body.c_str() + at + series.size(), nullptr);
  };
  // Every operator ban there may be, with long names and reasons: a policy over 64 KiB.
  for (int relay = 0; relay < 64; ++relay) {
    v1::BanRelayRequest ban;
    ban.set_relay(absl::StrCat("https://relay-", relay, ".", std::string(480, 'r')));
    ban.set_reason(std::string(96, 'x'));
    ASSERT_THAT(Call(&v1::Admin::Stub::async::BanRelay, ban), IsOk());
  }
  for (core::BuilderIndex builder = 1; builder <= 256; ++builder) {
    v1::BanBuilderRequest ban;
    ban.set_builder_index(builder);
    ban.set_reason(std::string(96, 'x'));
    ASSERT_THAT(Call(&v1::Admin::Stub::async::BanBuilder, ban), IsOk());
  }
  absl::StatusOr<v1::Policy> policy = GetPolicy();
  ASSERT_THAT(policy, IsOk());
  ASSERT_GT(policy->ByteSizeLong(), 66000u);
  ASSERT_TRUE(node(0).AwaitLatestPolicy(
      [&](const PolicyLine& line) { return line.version == policy->version(); }));
  std::optional<v1::Node> live = NodeInfo("bn-1");
  ASSERT_TRUE(live.has_value() && live->connected());
  EXPECT_EQ(write_timeouts(), 0);

  // The stalled node, over a connection of its own whose window it does not grow.
  grpc::ChannelArguments arguments;
  arguments.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  std::unique_ptr<v1::Breaker::Stub> stub = v1::Breaker::NewStub(grpc::CreateCustomChannel(
      absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials(), arguments));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(::breaker::testing::Deadline()));
  std::unique_ptr<grpc::ClientReaderWriter<v1::NodeMessage, v1::ServerMessage>> stalled =
      stub->Connect(&context);
  v1::NodeMessage hello;
  hello.mutable_hello()->set_node_id("bn-stalled");
  hello.mutable_hello()->set_network(::breaker::testing::kNetwork);
  hello.mutable_hello()->set_client_version("stalled/1.0");
  ASSERT_TRUE(stalled->Write(hello));

  // Ended and counted, before it reads anything (reading would let the write complete).
  EXPECT_TRUE(PollUntil([&] { return write_timeouts() == 1; })) << "never counted";
  EXPECT_TRUE(PollUntil([&] {
    std::optional<v1::Node> info = NodeInfo("bn-stalled");
    return info.has_value() && !info->connected();
  }));
  v1::ServerMessage ignored;
  while (stalled->Read(&ignored)) {
  }
  const grpc::Status status = stalled->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_THAT(status.error_message(), ::testing::HasSubstr("not read within 2s"));

  // bn-1 kept its stream all along, and takes the next policy.
  std::optional<v1::Node> after = NodeInfo("bn-1");
  ASSERT_TRUE(after.has_value());
  EXPECT_TRUE(after->connected());
  EXPECT_EQ(after->connected_since().seconds(), live->connected_since().seconds());
  EXPECT_EQ(after->connected_since().nanos(), live->connected_since().nanos());
  v1::UnbanBuilderRequest unban;
  unban.set_builder_index(1);
  absl::StatusOr<v1::Policy> unbanned = Call(&v1::Admin::Stub::async::UnbanBuilder, unban);
  ASSERT_THAT(unbanned, IsOk());
  EXPECT_TRUE(node(0).AwaitLatestPolicy(
      [&](const PolicyLine& line) { return line.version == unbanned->version(); }));
  EXPECT_EQ(write_timeouts(), 1);
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
