// The fleet of unmodified beacon nodes: breakerd and three breaker-sidecars as child
// processes, each sidecar beside a fake beacon node (its Beacon API over loopback HTTP) and in
// front of fake relays. What one node sees reaches every sidecar's decisions.

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "sidecar/ssz/test_blocks.h"
#include "tests/support/fake_beacon_node.h"
#include "tests/support/fake_relay.h"
#include "tests/support/fleet_harness.h"
#include "tests/support/sidecar_process.h"
#include "tests/support/status_matchers.h"
#include "tests/support/subprocess.h"

namespace breaker::testing {
namespace {

class SidecarFleetTest : public FleetTest {
 protected:
  struct Sidecar {
    std::unique_ptr<FakeBeaconNode> node;
    std::unique_ptr<Subprocess> process;
    // The local port of each relay, in the order given.
    std::vector<int> ports;
  };

  void TearDown() override {
    for (Sidecar& sidecar : sidecars_) {
      if (sidecar.process == nullptr) continue;
      sidecar.process->Kill(SIGTERM);
      ExpectCleanExit(*sidecar.process);
    }
    sidecars_.clear();
    FleetTest::TearDown();
  }

  // A fake beacon node producing a block every slot, for each of `count` sidecars: created
  // before breakerd starts, so that every slot breakerd judges has its block.
  void StartNodes(int count) {
    for (int i = 0; i < count; ++i) {
      Sidecar sidecar;
      sidecar.node = std::make_unique<FakeBeaconNode>(chain_);
      sidecar.node->SetProducing(true);
      sidecars_.push_back(std::move(sidecar));
    }
  }

  void StartSidecars(const std::vector<std::string>& relay_urls, int staleness_limit_seconds = 0) {
    for (size_t i = 0; i < sidecars_.size(); ++i) {
      Sidecar& sidecar = sidecars_[i];
      const std::string config_path = absl::StrCat(dir_, "/sidecar-", i, ".textproto");
      std::ofstream config(config_path);
      config << "beacon_node_url: \"" << sidecar.node->url() << "\"\n"
             << "breakerd_addresses: \"127.0.0.1:" << port_ << "\"\n"
             << "node_id: \"sidecar-" << i << "\"\n"
             << "network: \"" << kNetwork << "\"\n"
             << "fallback_config_file: \"" << config_path_ << "\"\n";
      if (staleness_limit_seconds > 0) {
        config << "staleness_limit_seconds: " << staleness_limit_seconds << "\n";
      }
      for (const std::string& url : relay_urls) {
        const int port = FreeLoopbackPort();
        sidecar.ports.push_back(port);
        config << "upstreams { listen_port: " << port << " url: \"" << url << "\" }\n";
      }
      config.close();
      absl::StatusOr<std::unique_ptr<Subprocess>> started =
          StartReadySidecar(config_path, absl::StrCat("sidecar-", i), Deadline());
      ASSERT_THAT(started, IsOk());
      sidecar.process = *std::move(started);
    }
  }

  // The status of a getHeader through sidecar `i`'s port for relay `relay`; 0 on a transport
  // error.
  int GetHeader(size_t i, size_t relay) {
    httplib::Client client("127.0.0.1", sidecars_[i].ports[relay]);
    client.set_connection_timeout(10);
    client.set_read_timeout(30);
    httplib::Result result = client.Get(absl::StrCat("/eth/v1/builder/header/", CurrentSlot(),
                                                     "/0x", std::string(64, '1'), "/0xaaaa")
                                            .c_str());
    return result ? result->status : 0;
  }

  bool EverySidecarAnswers(size_t relay, int status, absl::Duration timeout = kFleetTimeout) {
    return PollUntil(
        [&] {
          for (size_t i = 0; i < sidecars_.size(); ++i) {
            if (GetHeader(i, relay) != status) return false;
          }
          return true;
        },
        timeout);
  }

  void SetProducing(bool producing) {
    for (Sidecar& sidecar : sidecars_) sidecar.node->SetProducing(producing);
  }

  // Waits until `fraction` of the slot after the current one has passed.
  void IntoNextSlot(double fraction) {
    const core::Slot next = CurrentSlot() + 1;
    const absl::Time at =
        core::StartOf(next, chain_) + fraction * absl::Seconds(chain_.seconds_per_slot);
    ASSERT_TRUE(PollUntil([&] { return absl::Now() >= at; }));
  }

  std::vector<Sidecar> sidecars_;
};

// The seed rule with a short run: more than 2 missed slots in a row trips, until a reset.
constexpr char kMissedSlotRules[] =
    "missed_slots { preset: \"custom\" latched_rule: true max_allowed_missing_slots: 2 }\n";

TEST_F(SidecarFleetTest, MissedSlotsSeenByTheNodesTripEveryHeaderToNoContentUntilAReset) {
  ASSERT_NO_FATAL_FAILURE(Configure(FastChain(/*gloas=*/false), kMissedSlotRules));
  StartNodes(3);
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  FakeRelay relay(FakeRelay::Reveals::kDelivers);
  ASSERT_NO_FATAL_FAILURE(StartSidecars({relay.url()}));
  ASSERT_TRUE(EverySidecarAnswers(0, 200));

  // 1. A reorg's non-canonical block keeps its slot present. Slots s, s+1 and s+2 have no
  //    canonical block on any node, but node 0 imported a block at s that it then reorged out:
  //    only s+1 and s+2 are missed, a run of 2, which does not trip.
  ASSERT_NO_FATAL_FAILURE(IntoNextSlot(0.5));
  SetProducing(false);
  const core::Slot s = CurrentSlot() + 1;
  ASSERT_TRUE(PollUntil([&] { return CurrentSlot() == s; }));
  const core::BlockRoot orphan = core::BlockRootFromBytes("orphan");
  sidecars_[0].node->AddBlock(s, orphan, /*canonical=*/false);
  sidecars_[0].node->Reorg(s, orphan, FakeBeaconNode::ProducedRoot(s - 1));
  ASSERT_TRUE(PollUntil([&] { return CurrentSlot() == s + 3; }));
  SetProducing(true);
  // The run ending at s+2 is judged from s+4 on; a few slots more for the reports to travel.
  ASSERT_TRUE(PollUntil([&] { return CurrentSlot() >= s + 6; }));
  absl::StatusOr<v1::Policy> after_reorg = GetPolicy();
  ASSERT_THAT(after_reorg, IsOk());
  EXPECT_FALSE(after_reorg->missed_slots().tripped()) << after_reorg->missed_slots().rule();
  EXPECT_EQ(GetHeader(1, 0), 200);

  // 2. Three empty slots in a row, seen by every node's event stream: every sidecar answers
  //    every getHeader 204, without reaching the relay.
  SetProducing(false);
  ASSERT_TRUE(EverySidecarAnswers(0, 204));
  const v1::Policy tripped = AwaitFleetPolicy({"SELF_BUILD", {}});
  EXPECT_TRUE(tripped.missed_slots().latched());
  const int seen = relay.headers();
  EXPECT_EQ(GetHeader(2, 0), 204);
  EXPECT_EQ(relay.headers(), seen);

  // 3. Blocks again, and an operator's reset: forwarded again.
  SetProducing(true);
  v1::ResetRequest reset;
  reset.set_reason("chain healthy again");
  ASSERT_THAT(Call(&v1::Admin::Stub::async::Reset, reset), IsOk());
  EXPECT_TRUE(EverySidecarAnswers(0, 200));
}

TEST_F(SidecarFleetTest, ASidecarStartedBeforeGenesisTripsOnTheRunAloneAndRecoversAfterIt) {
  // More than 2 missed slots in a row, or more than 4 in the last 64. The node's chain has
  // blocks at every slot but 4..7: the consecutive rule trips on that run, and lifts once
  // slot 8's block came. The genesis slot counted missed would make the window rule's 5
  // missed slots, which holds the breaker tripped for 64 slots.
  core::ChainSpec chain = FastChain(/*gloas=*/false);
  chain.genesis_time_unix = absl::ToUnixSeconds(absl::Now()) + 20;
  ASSERT_NO_FATAL_FAILURE(Configure(
      chain,
      "missed_slots { preset: \"custom\" latched_rule: false max_consecutive_missed_slots: 2 "
      "max_missed_slots_in_window: 4 window_slots: 64 }\n"));
  Sidecar sidecar;
  sidecar.node = std::make_unique<FakeBeaconNode>(chain_);
  sidecars_.push_back(std::move(sidecar));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  FakeRelay relay(FakeRelay::Reveals::kDelivers);
  ASSERT_NO_FATAL_FAILURE(StartSidecars({relay.url()}));
  ASSERT_LT(absl::Now(), core::StartOf(0, chain_)) << "the sidecar must start before genesis";

  auto has_block = [](core::Slot slot) { return slot > 0 && (slot < 4 || slot > 7); };
  core::Slot added = 0;
  bool tripped_by_the_run = false;
  bool recovered = false;
  ASSERT_TRUE(PollUntil([&] {
    // Each block a moment into its slot, as a node imports it.
    const core::Slot now = absl::Now() >= core::StartOf(0, chain_) + absl::Milliseconds(300)
                               ? core::SlotAt(absl::Now() - absl::Milliseconds(300), chain_)
                               : 0;
    while (added < now) {
      ++added;
      if (has_block(added)) sidecars_[0].node->AddBlock(added, FakeBeaconNode::ProducedRoot(added));
    }
    absl::StatusOr<v1::Policy> policy = GetPolicy();
    if (!policy.ok()) return false;
    const v1::MissedSlotState& missed = policy->missed_slots();
    if (missed.tripped()) {
      EXPECT_TRUE(absl::StrContains(missed.rule(), "consecutive missed slots > 2"))
          << "slot " << now << ": " << missed.rule();
      tripped_by_the_run = true;
    }
    recovered = tripped_by_the_run && !missed.tripped() && now >= 9;
    return recovered;
  }));
  EXPECT_TRUE(recovered);
  EXPECT_EQ(GetHeader(0, 0), 200);
}

TEST_F(SidecarFleetTest, ARevealFailureSeenByOneSidecarReachesEveryOneAndOutlivesBreakerd) {
  // A relay's ban lasts 10 epochs (over 10 minutes here): no epoch boundary lifts it mid-test.
  ASSERT_NO_FATAL_FAILURE(Configure(
      FastChain(/*gloas=*/false), absl::StrCat("blacklist_period_epochs: 10\n", kMissedSlotRules)));
  StartNodes(3);
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  FakeRelay withholding(FakeRelay::Reveals::kWithholds);
  FakeRelay honest(FakeRelay::Reveals::kDelivers);
  ASSERT_NO_FATAL_FAILURE(
      StartSidecars({withholding.url(), honest.url()}, /*staleness_limit_seconds=*/3));
  ASSERT_TRUE(EverySidecarAnswers(0, 200));

  // Sidecar 0's node takes the withholding relay's header, signs it, and gets a 500 for the
  // payload.
  const core::Slot slot = CurrentSlot();
  httplib::Client client("127.0.0.1", sidecars_[0].ports[0]);
  client.set_read_timeout(30);
  httplib::Result header = client.Get(
      absl::StrCat("/eth/v1/builder/header/", slot, "/0x", std::string(64, '1'), "/0xaaaa")
          .c_str());
  ASSERT_TRUE(header);
  ASSERT_EQ(header->status, 200);
  // A valid block of the header's block hash: the sidecar computes its root.
  const std::string blinded = sidecar::ssz::BlindedBlockJson(slot, "0x" + std::string(64, '2'));
  httplib::Result reveal =
      client.Post("/eth/v1/builder/blinded_blocks", blinded, "application/json");
  ASSERT_TRUE(reveal);
  EXPECT_EQ(reveal->status, 500);

  // Every sidecar refuses that relay (within a second once the policy is out; polled, not
  // timed), and still forwards to the other.
  ASSERT_TRUE(EverySidecarAnswers(0, 204));
  EXPECT_TRUE(EverySidecarAnswers(1, 200));

  // breakerd dies: the sidecars keep the last fleet policy.
  StopBreakerd(SIGKILL);
  EXPECT_TRUE(EverySidecarAnswers(0, 204, absl::Seconds(5)));
  for (size_t i = 0; i < sidecars_.size(); ++i) EXPECT_EQ(GetHeader(i, 1), 200) << i;

  // Past the staleness limit their local rules apply too: the nodes stop seeing blocks, and
  // each sidecar's own engine trips its missed-slot rule: every header is refused.
  SetProducing(false);
  EXPECT_TRUE(EverySidecarAnswers(1, 204));
  EXPECT_TRUE(EverySidecarAnswers(0, 204));
}

TEST_F(SidecarFleetTest, ASidecarBesideANodeOfAnotherChainRefusesToStart) {
  ASSERT_NO_FATAL_FAILURE(Configure(FastChain(/*gloas=*/false)));
  core::ChainSpec other = chain_;
  other.seconds_per_slot = 12;
  FakeBeaconNode node(other);
  const std::string config_path = dir_ + "/sidecar.textproto";
  std::ofstream(config_path) << "beacon_node_url: \"" << node.url() << "\"\n"
                             << "breakerd_addresses: \"127.0.0.1:1\"\n"
                             << "node_id: \"sidecar-0\"\n"
                             << "network: \"" << kNetwork << "\"\n"
                             << "fallback_config_file: \"" << config_path_ << "\"\n"
                             << "upstreams { listen_port: " << FreeLoopbackPort()
                             << " url: \"http://127.0.0.1:1\" }\n";
  absl::StatusOr<std::unique_ptr<Subprocess>> sidecar =
      StartSidecarProcess(config_path, "sidecar-0");
  ASSERT_THAT(sidecar, IsOk());
  const int status = (*sidecar)->Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << Subprocess::DescribeStatus(status);
  EXPECT_TRUE((*sidecar)->WaitForLine(
      Subprocess::Stream::kStderr,
      [](absl::string_view line) {
        return absl::StrContains(line, "SECONDS_PER_SLOT 12 (the sidecar's: 2)");
      },
      Deadline()));
}

}  // namespace
}  // namespace breaker::testing
