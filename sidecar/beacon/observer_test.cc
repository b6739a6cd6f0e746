#include "sidecar/beacon/observer.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/fake_client.h"
#include "common/fake_clock.h"
#include "core/observation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace breaker::sidecar {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// 12 s slots from genesis at time 0; the tests start at slot 100, 1 s in.
core::ChainSpec Chain() {
  core::ChainSpec chain;
  chain.network = "test";
  chain.genesis_time_unix = 0;
  return chain;
}

core::BlockRoot Root(absl::string_view label) { return core::BlockRootFromBytes(label); }

// One report, as "slot:kind[details]", for readable expectations.
std::string Describe(const client::FakeClient::Reported& reported) {
  struct Visitor {
    std::string operator()(const core::BlocksSeen& e) const {
      std::string roots;
      for (const core::BlockRoot& root : e.roots) {
        absl::StrAppend(&roots, roots.empty() ? "" : ",",
                        std::string(reinterpret_cast<const char*>(root.bytes.data()), 2));
      }
      return absl::StrCat("blocks[", roots, "]");
    }
    std::string operator()(const core::Finalized& e) const {
      return absl::StrCat("finalized[", e.epoch, "]");
    }
    std::string operator()(const core::BidSeen& e) const {
      return absl::StrCat("bid[", e.builder, e.relay, "]");
    }
    std::string operator()(const core::PayloadDelivered& e) const {
      return absl::StrCat("delivered[", e.builder, "]");
    }
    std::string operator()(const core::PayloadMissing& e) const {
      return absl::StrCat("missing[", e.builder, ",", e.attested_fraction, "]");
    }
    std::string operator()(const core::BuilderExited&) const { return "exited"; }
    std::string operator()(const core::RelayRevealMissing&) const { return "reveal"; }
  };
  return absl::StrCat(reported.slot, ":", std::visit(Visitor{}, reported.event));
}

class ObserverTest : public ::testing::Test {
 protected:
  ObserverTest()
      : clock_(core::StartOf(100, Chain()) + absl::Seconds(1)),
        observer_(Options(), clock_, client_) {}

  static ObserverOptions Options() {
    ObserverOptions options;
    options.chain = Chain();
    options.max_backfill_slots = 4;
    options.max_roots_per_slot = 3;
    return options;
  }

  // Moves the clock to `seconds` into `slot`.
  void At(core::Slot slot, int seconds = 0) {
    clock_.Set(core::StartOf(slot, Chain()) + absl::Seconds(seconds));
  }

  // The reports since the last call.
  std::vector<std::string> Reports() {
    std::vector<std::string> described;
    const std::vector<client::FakeClient::Reported> all = client_.reports();
    for (size_t i = seen_; i < all.size(); ++i) described.push_back(Describe(all[i]));
    seen_ = all.size();
    return described;
  }

  testing::FakeClock clock_;
  client::FakeClient client_;
  Observer observer_;
  size_t seen_ = 0;
};

TEST_F(ObserverTest, ReportsEachBlockAtOnceAndAnEmptySlotAtItsEnd) {
  At(100, 0);
  observer_.SetWatching(true);
  At(100, 3);
  observer_.OnBlock(100, Root("aa"));
  EXPECT_THAT(Reports(), ElementsAre("100:blocks[aa]"));
  At(101, 0);
  observer_.Tick();
  EXPECT_THAT(Reports(), IsEmpty()) << "a slot with a block needs no second report";
  // Slot 101 goes without a block: judged empty at its end, not before.
  At(101, 11);
  observer_.Tick();
  EXPECT_THAT(Reports(), IsEmpty());
  At(102, 0);
  observer_.Tick();
  observer_.Tick();
  EXPECT_THAT(Reports(), ElementsAre("101:blocks[]"));
}

TEST_F(ObserverTest, ALateBlockAmendsASlotJudgedEmpty) {
  At(100, 0);
  observer_.SetWatching(true);
  observer_.OnBlock(99, Root("ev"));
  At(101, 0);
  observer_.Tick();
  EXPECT_THAT(Reports(), ElementsAre("99:blocks[ev]", "100:blocks[]"));
  At(101, 2);
  observer_.OnBlock(100, Root("la"));
  EXPECT_THAT(Reports(), ElementsAre("100:blocks[la]"));
}

TEST_F(ObserverTest, AReorgedOutBlockKeepsItsSlotPresent) {
  At(100, 0);
  observer_.SetWatching(true);
  observer_.OnBlock(100, Root("aa"));
  // The node reorgs to a sibling: the old block stays among the slot's roots.
  observer_.OnBlock(100, Root("bb"));
  observer_.OnBlock(100, Root("aa"));
  At(101, 0);
  observer_.Tick();
  EXPECT_THAT(Reports(), ElementsAre("100:blocks[aa]", "100:blocks[aa,bb]"));
}

TEST_F(ObserverTest, ASlotNotWatchedWholeIsJudgedByTheBackfill) {
  // The stream comes up 5 s into slot 100: slot 100 is a gap, so are those before it, of which
  // a backfill reaches four.
  At(100, 5);
  observer_.SetWatching(true);
  At(101, 0);
  observer_.Tick();
  EXPECT_THAT(Reports(), IsEmpty());
  EXPECT_THAT(observer_.SlotsToBackfill(), ElementsAre(97, 98, 99, 100));
  observer_.OnBackfill(97, {Root("aa")});
  observer_.OnBackfill(98, {});
  observer_.OnBackfill(98, {Root("zz")});  // Judged already: ignored.
  observer_.OnBackfill(101, {});           // No gap: ignored.
  EXPECT_THAT(Reports(), ElementsAre("97:blocks[aa]", "98:blocks[]"));
  EXPECT_THAT(observer_.SlotsToBackfill(), ElementsAre(99, 100));
  // Slot 101 was watched whole.
  At(102, 0);
  observer_.Tick();
  EXPECT_THAT(Reports(), ElementsAre("101:blocks[]"));
}

TEST_F(ObserverTest, NothingIsReportedWhileNotWatched) {
  At(100, 0);
  observer_.SetWatching(true);
  At(100, 6);
  // The node starts syncing (or the stream drops) in slot 100.
  observer_.SetWatching(false);
  observer_.OnBlock(100, Root("aa"));
  observer_.OnFinalized(3);
  At(103, 0);
  observer_.Tick();
  EXPECT_THAT(Reports(), IsEmpty());
  EXPECT_EQ(observer_.stats().ignored_events, 2u);
  // Synced again in slot 103: 100..102 are gaps for the backfill; 103 is not watched whole.
  At(103, 1);
  observer_.SetWatching(true);
  At(104, 0);
  observer_.Tick();
  EXPECT_THAT(Reports(), IsEmpty());
  EXPECT_THAT(observer_.SlotsToBackfill(), ElementsAre(100, 101, 102, 103));
  observer_.OnBackfill(100, {Root("aa")});
  At(105, 0);
  observer_.Tick();
  EXPECT_THAT(Reports(), ElementsAre("100:blocks[aa]", "104:blocks[]"));
}

TEST_F(ObserverTest, SlotsBeyondTheBackfillsReachAreNeverJudged) {
  At(100, 5);
  observer_.SetWatching(true);
  observer_.OnBlock(100, Root("aa"));
  Reports();
  // The first tick comes late (a stalled process): only the last four slots are judged.
  At(110, 0);
  observer_.Tick();
  EXPECT_THAT(Reports(),
              ElementsAre("106:blocks[]", "107:blocks[]", "108:blocks[]", "109:blocks[]"));
  EXPECT_THAT(observer_.SlotsToBackfill(), IsEmpty());
  EXPECT_EQ(observer_.stats().unjudged_slots, 10u);  // 96..105
}

TEST_F(ObserverTest, EventsOutOfRangeOrPastABoundAreIgnored) {
  At(100, 0);
  observer_.SetWatching(true);
  observer_.OnBlock(103, Root("ff"));  // 3 slots ahead
  observer_.OnBlock(35, Root("old"));  // 65 behind
  observer_.OnBlock(100, Root("a1"));
  observer_.OnBlock(100, Root("a2"));
  observer_.OnBlock(100, Root("a3"));
  observer_.OnBlock(100, Root("a4"));  // a fourth root: past the bound
  EXPECT_THAT(Reports(),
              ElementsAre("100:blocks[a1]", "100:blocks[a1,a2]", "100:blocks[a1,a2,a3]"));
  EXPECT_EQ(observer_.stats().ignored_events, 3u);
}

TEST_F(ObserverTest, ReportsEachNewFinalizedEpochOnce) {
  At(100, 0);
  observer_.SetWatching(true);
  observer_.OnFinalized(1);
  observer_.OnFinalized(1);
  observer_.OnFinalized(0);
  observer_.OnFinalized(2);
  observer_.OnFinalized(4);  // ahead of the current epoch (3): nonsense
  EXPECT_THAT(Reports(), ElementsAre("100:finalized[1]", "100:finalized[2]"));
}

TEST_F(ObserverTest, ReportsEachBuildersBidOncePerSlotAsP2p) {
  At(100, 0);
  observer_.SetWatching(true);
  observer_.OnBid(100, 7);
  observer_.OnBid(100, 7);
  observer_.OnBid(100, 8);
  observer_.OnBid(101, 7);
  observer_.OnBid(101, core::kSelfBuild);
  EXPECT_THAT(Reports(), ElementsAre("100:bid[7]", "100:bid[8]", "101:bid[7]"));
}

TEST_F(ObserverTest, APayloadThatComesIsDeliveredOnce) {
  At(100, 0);
  observer_.SetWatching(true);
  observer_.OnBlock(100, Root("aa"));
  observer_.OnBlockBid(100, Root("aa"), 7);
  observer_.OnPayload(100, Root("aa"), 7);
  observer_.OnPayloadAvailable(100, Root("aa"));
  // Available before the block's bid is known: delivered once the bid is.
  observer_.OnPayloadAvailable(100, Root("bb"));
  observer_.OnBlockBid(100, Root("bb"), 8);
  At(103, 0);
  EXPECT_THAT(observer_.Tick(), IsEmpty());
  EXPECT_THAT(Reports(), ElementsAre("100:blocks[aa]", "100:delivered[7]", "100:delivered[8]",
                                     "101:blocks[]", "102:blocks[]"));
}

TEST_F(ObserverTest, APayloadMissingByTheEndOfTheNextSlotIsOverdue) {
  At(100, 0);
  observer_.SetWatching(true);
  observer_.OnBlockBid(100, Root("aa"), 7);
  observer_.OnBlockBid(100, Root("sb"), core::kSelfBuild);  // the proposer's own: nothing owed
  At(101, 11);
  EXPECT_THAT(observer_.Tick(), IsEmpty());
  At(102, 0);
  const std::vector<OverduePayload> overdue = observer_.Tick();
  ASSERT_EQ(overdue.size(), 1u);
  EXPECT_EQ(overdue[0].slot, 100u);
  EXPECT_EQ(overdue[0].builder, 7u);
  EXPECT_EQ(overdue[0].root, Root("aa"));
  EXPECT_THAT(observer_.Tick(), IsEmpty()) << "each overdue payload is returned once";
  Reports();
  observer_.PayloadOverdue(overdue[0], 1.5);
  EXPECT_THAT(Reports(), ElementsAre("100:missing[7,1]"));
}

TEST_F(ObserverTest, APayloadThatCameWhileItsFractionWasMeasuredIsNotMissing) {
  At(100, 0);
  observer_.SetWatching(true);
  observer_.OnBlock(100, Root("aa"));
  observer_.OnBlockBid(100, Root("aa"), 7);
  At(102, 0);
  const std::vector<OverduePayload> overdue = observer_.Tick();
  ASSERT_EQ(overdue.size(), 1u);
  observer_.OnPayload(100, Root("aa"), 7);
  observer_.PayloadOverdue(overdue[0], 0.9);
  EXPECT_THAT(Reports(), ElementsAre("100:blocks[aa]", "101:blocks[]", "100:delivered[7]"));
}

TEST_F(ObserverTest, AnEmptySlotBeforeTheFirstEvidenceIsLeftToTheBackfill) {
  At(100, 0);
  observer_.SetWatching(true);
  // Slot 100 was watched whole, but no block of the node is known yet: not judged live.
  At(101, 0);
  observer_.Tick();
  EXPECT_THAT(Reports(), IsEmpty());
  EXPECT_THAT(observer_.SlotsToBackfill(), ElementsAre(97, 98, 99, 100));
  // Oldest first: the node has nothing at 97 (a node synced from a checkpoint at 98 has no
  // history before it), a block at 98; the slots after it are evidence of empty slots.
  observer_.OnBackfill(97, {});
  observer_.OnBackfill(98, {Root("aa")});
  observer_.OnBackfill(99, {});
  observer_.OnBackfill(100, {});
  EXPECT_THAT(Reports(), ElementsAre("98:blocks[aa]", "99:blocks[]", "100:blocks[]"));
  EXPECT_EQ(observer_.stats().no_evidence_slots, 1u);
  EXPECT_EQ(observer_.stats().empty_slots, 2u);
}

TEST_F(ObserverTest, ANodeWithoutAnyBlockGetsNoSlotReported) {
  At(100, 0);
  observer_.SetWatching(true);
  for (core::Slot slot = 101; slot <= 110; ++slot) {
    At(slot, 0);
    observer_.Tick();
    for (core::Slot gap : observer_.SlotsToBackfill()) observer_.OnBackfill(gap, {});
  }
  EXPECT_THAT(Reports(), IsEmpty());
  EXPECT_EQ(observer_.stats().empty_slots, 0u);
  // Its first block: the slots after it are judged again.
  observer_.OnBlock(110, Root("aa"));
  At(112, 0);
  observer_.Tick();
  EXPECT_THAT(Reports(), ElementsAre("110:blocks[aa]", "111:blocks[]"));
}

// A chain from genesis: blocks at every slot but a run of empty slots from slot 14, which the
// node announces 4 s into their slot. The genesis slot has the genesis block, which no event
// announces and which the node's headers do not list (as the fake beacon node's do not).
// Whatever the observer's start, it must report exactly that run empty and nothing of slot 0:
// a report of slot 0 empty is a missed slot more for every window rule, and makes a run of
// the slots around it for the consecutive ones.
struct Start {
  const char* name;
  // When the observer starts watching: seconds from genesis.
  int64_t seconds_from_genesis;
};

struct Run {
  // The preset whose consecutive rule the run just trips (docs/semantics.md, "Presets"); the
  // window rules then count exactly this run.
  const char* preset;
  uint64_t length;
};

void PrintTo(const Start& start, std::ostream* os) { *os << start.name; }
void PrintTo(const Run& run, std::ostream* os) {
  *os << run.length << " empty (" << run.preset << ")";
}

class ObserverFromGenesisTest : public ::testing::TestWithParam<std::tuple<Start, Run>> {
 protected:
  static constexpr core::Slot kRunStart = 14;

  static core::ChainSpec GenesisChain() {
    core::ChainSpec chain;
    chain.network = "test";
    chain.genesis_time_unix = 1'700'000'000;
    return chain;
  }

  static ObserverOptions Options() {
    ObserverOptions options;
    options.chain = GenesisChain();
    return options;
  }

  ObserverFromGenesisTest()
      : clock_(core::StartOf(0, GenesisChain()) +
               absl::Seconds(std::get<0>(GetParam()).seconds_from_genesis)),
        observer_(Options(), clock_, client_) {}

  uint64_t run() const { return std::get<1>(GetParam()).length; }

  bool HasBlock(core::Slot slot) const {
    return slot > 0 && !(slot >= kRunStart && slot < kRunStart + run());
  }

  static core::BlockRoot RootOf(core::Slot slot) {
    return core::BlockRootFromBytes(absl::StrFormat("%02d", slot));
  }

  // What the watcher does at each of its ticks: judges, then backfills the gaps from the
  // node's headers.
  void TickAndBackfill() {
    observer_.Tick();
    for (core::Slot gap : observer_.SlotsToBackfill()) {
      std::vector<core::BlockRoot> roots;
      if (HasBlock(gap)) roots.push_back(RootOf(gap));
      observer_.OnBackfill(gap, roots);
    }
  }

  // Plays the chain up to slot `last`: each slot's start, then its block 4 s in.
  void PlayUntil(core::Slot last) {
    const core::ChainSpec chain = GenesisChain();
    for (core::Slot slot = core::SlotAt(clock_.Now(), chain); slot <= last; ++slot) {
      for (absl::Duration into : {absl::ZeroDuration(), absl::Seconds(4)}) {
        const absl::Time at = core::StartOf(slot, chain) + into;
        if (at < clock_.Now()) continue;
        clock_.Set(at);
        if (into > absl::ZeroDuration() && HasBlock(slot)) observer_.OnBlock(slot, RootOf(slot));
        TickAndBackfill();
      }
    }
  }

  testing::FakeClock clock_;
  client::FakeClient client_;
  Observer observer_;
};

TEST_P(ObserverFromGenesisTest, ReportsEverySlotButTheGenesisSlotAsTheNodeSawIt) {
  observer_.SetWatching(true);
  const core::Slot last = kRunStart + run() + 3;
  PlayUntil(last);
  std::vector<std::string> expected;
  for (core::Slot slot = 1; slot <= last; ++slot) {
    expected.push_back(HasBlock(slot) ? absl::StrFormat("%d:blocks[%02d]", slot, slot)
                                      : absl::StrCat(slot, ":blocks[]"));
  }
  std::vector<std::string> reports;
  for (const auto& reported : client_.reports()) reports.push_back(Describe(reported));
  EXPECT_EQ(reports, expected);
  EXPECT_EQ(observer_.stats().empty_slots, run());
}

INSTANTIATE_TEST_SUITE_P(
    StartsAndRuns, ObserverFromGenesisTest,
    ::testing::Combine(::testing::Values(Start{"BeforeGenesis", -30}, Start{"AtGenesis", 0},
                                         Start{"MidEpochInTheRun", 15 * 12 + 6}),
                       ::testing::Values(Run{"prysm", 2}, Run{"three", 3},
                                         Run{"lighthouse_teku", 4}, Run{"mevboost", 6})),
    [](const ::testing::TestParamInfo<std::tuple<Start, Run>>& info) {
      return absl::StrCat(std::get<0>(info.param).name, "_", std::get<1>(info.param).preset);
    });

}  // namespace
}  // namespace breaker::sidecar
