#include "sidecar/beacon/beacon_watcher.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "client/fake_client.h"
#include "core/observation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fake_beacon_node.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::sidecar {
namespace {

using ::breaker::testing::FakeBeaconNode;
using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::HasSubstr;

// 1 s slots on the real clock: the watcher's threads run in real time. Every wait below is for
// a condition, with a generous deadline.
core::ChainSpec Chain() {
  core::ChainSpec chain;
  chain.network = "test";
  chain.genesis_time_unix = absl::ToUnixSeconds(absl::Now()) - 1000;
  chain.seconds_per_slot = 1;
  chain.slots_per_epoch = 8;
  return chain;
}

bool WaitFor(const std::function<bool()>& condition) {
  return testing::WaitFor(condition, absl::Seconds(60), absl::Milliseconds(10));
}

// Whether some BlocksSeen of `slot` reached `client` naming `root` (or empty, for nullopt).
bool ReportedTo(const client::FakeClient& client, core::Slot slot,
                std::optional<core::BlockRoot> root) {
  for (const client::FakeClient::Reported& reported : client.reports()) {
    const auto* seen = std::get_if<core::BlocksSeen>(&reported.event);
    if (seen == nullptr || reported.slot != slot) continue;
    if (!root.has_value() && seen->roots.empty()) return true;
    if (root.has_value() &&
        std::find(seen->roots.begin(), seen->roots.end(), *root) != seen->roots.end()) {
      return true;
    }
  }
  return false;
}

BeaconWatcherOptions OptionsFor(const FakeBeaconNode& node, const core::ChainSpec& chain) {
  BeaconWatcherOptions options;
  options.base = node.url();
  options.observer.chain = chain;
  options.observer.max_backfill_slots = 4;
  options.tick_interval = absl::Milliseconds(20);
  options.initial_backoff = absl::Milliseconds(20);
  options.max_backoff = absl::Milliseconds(200);
  return options;
}

class BeaconWatcherTest : public ::testing::Test {
 protected:
  BeaconWatcherTest() : chain_(Chain()), node_(chain_) {}

  BeaconWatcherOptions Options() const { return OptionsFor(node_, chain_); }

  // Whether some BlocksSeen of `slot` names `root` (or is empty, for nullopt).
  bool Reported(core::Slot slot, std::optional<core::BlockRoot> root) const {
    return ReportedTo(client_, slot, root);
  }

  core::Slot CurrentSlot() const { return core::SlotAt(absl::Now(), chain_); }

  const core::ChainSpec chain_;
  FakeBeaconNode node_;
  client::FakeClient client_;
};

TEST_F(BeaconWatcherTest, RefusesANodeOfAnotherChainNamingBothValues) {
  core::ChainSpec other = chain_;
  other.seconds_per_slot = 12;
  other.gloas_fork_epoch = 5;
  node_.SetChain(other);
  EXPECT_THAT(BeaconWatcher::Start(Options(), SystemClock(), client_),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("SECONDS_PER_SLOT 12 (the sidecar's: 1), GLOAS_FORK_EPOCH 5 "
                                 "(the sidecar's: never (far future))")));
}

TEST_F(BeaconWatcherTest, ReportsBlocksEmptySlotsAndFinalityOfASyncedNode) {
  // Finalized before the sidecar started: read from the REST API.
  node_.Finalize(1);
  absl::StatusOr<std::unique_ptr<BeaconWatcher>> watcher =
      BeaconWatcher::Start(Options(), SystemClock(), client_);
  ASSERT_THAT(watcher, IsOk());
  ASSERT_TRUE(WaitFor([&] { return node_.streams_open() == 1; }));
  // Wait for a slot watched whole.
  const core::Slot start = CurrentSlot();
  ASSERT_TRUE(WaitFor([&] { return CurrentSlot() >= start + 1; }));
  const core::Slot slot = CurrentSlot();
  node_.AddBlock(slot, FakeBeaconNode::ProducedRoot(slot));
  EXPECT_TRUE(WaitFor([&] { return Reported(slot, FakeBeaconNode::ProducedRoot(slot)); }));
  // The next slot has no block: judged empty at its end.
  EXPECT_TRUE(WaitFor([&] { return Reported(slot + 1, std::nullopt); }));
  EXPECT_FALSE(Reported(slot, std::nullopt));
  auto finalized = [&](core::Epoch epoch) {
    for (const auto& reported : client_.reports()) {
      const auto* seen = std::get_if<core::Finalized>(&reported.event);
      if (seen != nullptr && seen->epoch == epoch) return true;
    }
    return false;
  };
  EXPECT_TRUE(WaitFor([&] { return finalized(1); }));
  // Then from the event stream.
  node_.Finalize(2);
  EXPECT_TRUE(WaitFor([&] { return finalized(2); }));
}

TEST_F(BeaconWatcherTest, BackfillsTheSlotsMissedWhileTheStreamWasDown) {
  absl::StatusOr<std::unique_ptr<BeaconWatcher>> watcher =
      BeaconWatcher::Start(Options(), SystemClock(), client_);
  ASSERT_THAT(watcher, IsOk());
  ASSERT_TRUE(WaitFor([&] { return node_.streams_open() == 1; }));
  // The node "restarts": its streams drop and it refuses the topics for a while, during which
  // it imports a block (canonical) and a sibling (not), unseen by the stream.
  node_.SetOffersGloasTopics(false);
  node_.OverridePath("/eth/v1/events", 503, "{}");
  node_.DropStreams();
  ASSERT_TRUE(WaitFor([&] { return node_.streams_open() == 0; }));
  const core::Slot slot = CurrentSlot();
  node_.AddBlock(slot, core::BlockRootFromBytes("canonical"));
  node_.AddBlock(slot, core::BlockRootFromBytes("sibling"), /*canonical=*/false);
  ASSERT_TRUE(WaitFor([&] { return CurrentSlot() >= slot + 2; }));
  node_.ClearOverride("/eth/v1/events");
  EXPECT_TRUE(WaitFor([&] {
    return Reported(slot, core::BlockRootFromBytes("canonical")) &&
           Reported(slot, core::BlockRootFromBytes("sibling"));
  }));
  EXPECT_TRUE(WaitFor([&] { return Reported(slot + 1, std::nullopt); }));
  // Reconnected with the pre-Gloas topics.
  EXPECT_EQ(node_.last_topics(), "block,head,chain_reorg,finalized_checkpoint");
  EXPECT_GE((*watcher)->stats().reconnects, 1u);
}

TEST_F(BeaconWatcherTest, ReportsNothingWhileTheNodeSyncs) {
  node_.SetSyncing(true);
  absl::StatusOr<std::unique_ptr<BeaconWatcher>> watcher =
      BeaconWatcher::Start(Options(), SystemClock(), client_);
  ASSERT_THAT(watcher, IsOk());
  ASSERT_TRUE(WaitFor([&] { return node_.streams_open() == 1; }));
  const core::Slot slot = CurrentSlot();
  node_.AddBlock(slot, FakeBeaconNode::ProducedRoot(slot));
  ASSERT_TRUE(WaitFor([&] { return CurrentSlot() >= slot + 3; }));
  EXPECT_TRUE(client_.reports().empty());
  // Synced: slots are judged again, from the first block the node is known to have on.
  node_.SetSyncing(false);
  ASSERT_TRUE(WaitFor([&] { return !(*watcher)->stats().syncing; }));
  const core::Slot synced = CurrentSlot();
  node_.AddBlock(synced, core::BlockRootFromBytes("synced"));
  EXPECT_TRUE(WaitFor([&] { return Reported(synced + 1, std::nullopt); }));
}

TEST_F(BeaconWatcherTest, ANodeRestartedOnAnotherGenesisIsNotObserved) {
  absl::StatusOr<std::unique_ptr<BeaconWatcher>> watcher =
      BeaconWatcher::Start(Options(), SystemClock(), client_);
  ASSERT_THAT(watcher, IsOk());
  ASSERT_TRUE(WaitFor([&] { return node_.streams_open() == 1; }));
  core::ChainSpec other = chain_;
  other.genesis_time_unix += 7;
  node_.SetChain(other);
  node_.DropStreams();
  EXPECT_TRUE(WaitFor([&] { return (*watcher)->stats().chain_mismatches >= 2; }));
  EXPECT_EQ(node_.streams_open(), 0);
  const size_t reports = client_.reports().size();
  const core::Slot now = CurrentSlot();
  ASSERT_TRUE(WaitFor([&] { return CurrentSlot() >= now + 2; }));
  EXPECT_EQ(client_.reports().size(), reports);
}

TEST_F(BeaconWatcherTest, TellsTheNodesPresetOnceItsChainMatches) {
  node_.OverridePath("/eth/v1/config/spec", 200,
                     absl::StrCat(R"({"data":{"SECONDS_PER_SLOT":")", chain_.seconds_per_slot,
                                  R"(","SLOTS_PER_EPOCH":")", chain_.slots_per_epoch,
                                  R"(","PRESET_BASE":"minimal"}})"));
  BeaconWatcherOptions options = Options();
  std::optional<ssz::Preset> told;
  options.on_preset = [&told](const ssz::Preset& preset) { told = preset; };
  absl::StatusOr<std::unique_ptr<BeaconWatcher>> watcher =
      BeaconWatcher::Start(std::move(options), SystemClock(), client_);
  ASSERT_THAT(watcher, IsOk());
  (*watcher)->Stop();
  ASSERT_TRUE(told.has_value());
  EXPECT_EQ(*told, ssz::Preset::kMinimal);
}

TEST_F(BeaconWatcherTest, GloasBidsPayloadsAndAMissingPayloadWithItsAttestedFraction) {
  core::ChainSpec gloas = chain_;
  gloas.gloas_fork_epoch = 0;
  node_.SetChain(gloas);
  BeaconWatcherOptions options = Options();
  options.observer.chain = gloas;
  absl::StatusOr<std::unique_ptr<BeaconWatcher>> watcher =
      BeaconWatcher::Start(options, SystemClock(), client_);
  ASSERT_THAT(watcher, IsOk());
  ASSERT_TRUE(WaitFor([&] { return node_.streams_open() == 1; }));
  const core::Slot start = CurrentSlot();
  ASSERT_TRUE(WaitFor([&] { return CurrentSlot() >= start + 1; }));
  const core::Slot slot = CurrentSlot();
  const core::BlockRoot delivered = core::BlockRootFromBytes("delivered");
  const core::BlockRoot withheld = core::BlockRootFromBytes("withheld");
  node_.Bid(slot, 7);
  node_.AddBlock(slot, delivered, true, /*bid_builder=*/7);
  node_.Payload(slot, delivered, 7);
  // A sibling whose builder never reveals; 80 of the slot's 100 (800 / 8 slots) attested it.
  node_.SetForkChoiceWeights(800, withheld, 80);
  node_.AddBlock(slot, withheld, false, /*bid_builder=*/9);
  EXPECT_TRUE(WaitFor([&] {
    bool bid = false, ok = false, missing = false;
    for (const auto& reported : client_.reports()) {
      if (const auto* e = std::get_if<core::BidSeen>(&reported.event)) {
        bid = bid || (e->builder == 7 && e->relay.empty());
      } else if (const auto* e = std::get_if<core::PayloadDelivered>(&reported.event)) {
        ok = ok || (e->builder == 7 && e->root == delivered);
      } else if (const auto* e = std::get_if<core::PayloadMissing>(&reported.event)) {
        EXPECT_EQ(e->builder, 9u);
        EXPECT_EQ(e->root, withheld);
        EXPECT_DOUBLE_EQ(e->attested_fraction, 0.8);
        missing = true;
      }
    }
    return bid && ok && missing;
  }));
}

// A withheld block attested by `own` of its slot's 100 votes, whose child in the next slot was
// attested by 95: the attested fraction the watcher reports for the withheld payload.
double ReportedFractionOfAWithheldPayloadWithAnAttestedChild(FakeBeaconNode& node,
                                                             const core::ChainSpec& chain,
                                                             uint64_t own) {
  core::ChainSpec gloas = chain;
  gloas.gloas_fork_epoch = 0;
  node.SetChain(gloas);
  BeaconWatcherOptions options = OptionsFor(node, gloas);
  client::FakeClient client;
  absl::StatusOr<std::unique_ptr<BeaconWatcher>> watcher =
      BeaconWatcher::Start(options, SystemClock(), client);
  EXPECT_THAT(watcher, IsOk());
  if (!watcher.ok()) return -1;
  EXPECT_TRUE(WaitFor([&] { return node.streams_open() == 1; }));
  const core::Slot start = core::SlotAt(absl::Now(), gloas);
  EXPECT_TRUE(WaitFor([&] { return core::SlotAt(absl::Now(), gloas) >= start + 1; }));
  const core::Slot slot = core::SlotAt(absl::Now(), gloas);
  const core::BlockRoot withheld = core::BlockRootFromBytes("withheld");
  const core::BlockRoot child = core::BlockRootFromBytes("child");
  // Fork choice as proto-array answers once the child is attested: a block's weight holds its
  // descendants' votes (800 in all, 100 per slot).
  node.SetForkChoiceParent(child, withheld);
  node.SetForkChoiceWeights(800, withheld, own + 95);
  node.SetForkChoiceWeights(800, child, 95);
  node.AddBlock(slot, withheld, true, /*bid_builder=*/9);
  node.AddBlock(slot + 1, child, true, /*bid_builder=*/core::kSelfBuild);
  double fraction = -1;
  EXPECT_TRUE(WaitFor([&] {
    for (const auto& reported : client.reports()) {
      if (const auto* e = std::get_if<core::PayloadMissing>(&reported.event)) {
        if (e->root == withheld) fraction = e->attested_fraction;
      }
    }
    return fraction >= 0;
  }));
  return fraction;
}

TEST_F(BeaconWatcherTest, AWithheldPayloadIsJudgedOnItsBlocksOwnVotesNotItsChilds) {
  // 55 % of its slot: below breakerd's default attestation_threshold (0.6), though the
  // block's weight with its child's votes is 150 % of a slot.
  EXPECT_DOUBLE_EQ(ReportedFractionOfAWithheldPayloadWithAnAttestedChild(node_, chain_, 55), 0.55);
}

TEST_F(BeaconWatcherTest, AWithheldPayloadAttestedByMostOfItsSlotIsReportedSo) {
  EXPECT_DOUBLE_EQ(ReportedFractionOfAWithheldPayloadWithAnAttestedChild(node_, chain_, 90), 0.9);
}

// 2-slot epochs: the spec of a node that does not schedule Gloas is re-read at each.
core::ChainSpec ShortEpochChain() {
  core::ChainSpec chain = Chain();
  chain.slots_per_epoch = 2;
  return chain;
}

bool AskedForGloasTopics(const std::vector<testing::EventsRequest>& requests) {
  for (const testing::EventsRequest& request : requests) {
    for (absl::string_view topic : {"execution_payload_bid", "execution_payload", "head_v2"}) {
      if (absl::StrContains(request.topics, topic)) return true;
    }
  }
  return false;
}

core::Slot SlotNow(const core::ChainSpec& chain) { return core::SlotAt(absl::Now(), chain); }

TEST(BeaconWatcherGloasTopicsTest, NeverAsksANodeThatDoesNotScheduleGloasForItsTopics) {
  // Its spec names GLOAS_FORK_EPOCH, as the far future (2^64 - 1): not scheduled.
  const core::ChainSpec chain = ShortEpochChain();
  FakeBeaconNode node(chain);
  node.SetProducing(true);
  client::FakeClient client;
  absl::StatusOr<std::unique_ptr<BeaconWatcher>> watcher =
      BeaconWatcher::Start(OptionsFor(node, chain), SystemClock(), client);
  ASSERT_THAT(watcher, IsOk());
  ASSERT_TRUE(WaitFor([&] { return (*watcher)->stats().topics_form_confirmed; }));
  // Three epochs, the spec re-read at each.
  const core::Slot start = SlotNow(chain);
  ASSERT_TRUE(WaitFor([&] { return SlotNow(chain) >= start + 6; }));
  EXPECT_FALSE(AskedForGloasTopics(node.events_requests()));
  EXPECT_EQ(node.last_topics(), absl::StrJoin(PreGloasTopics(), ","));
  EXPECT_EQ(node.streams_open(), 1);
}

TEST(BeaconWatcherGloasTopicsTest, AsksForTheGloasTopicsOnceTheNodesSpecSchedulesGloas) {
  // The sidecar's chain schedules Gloas, far ahead; the node's spec does not name it (a release
  // without Gloas, as Lodestar 1.5).
  core::ChainSpec chain = ShortEpochChain();
  chain.gloas_fork_epoch = core::EpochOf(SlotNow(chain), chain) + 1000;
  FakeBeaconNode node(chain);
  node.SetSpecNamesGloas(false);
  node.SetProducing(true);
  client::FakeClient client;
  absl::StatusOr<std::unique_ptr<BeaconWatcher>> watcher =
      BeaconWatcher::Start(OptionsFor(node, chain), SystemClock(), client);
  ASSERT_THAT(watcher, IsOk());
  ASSERT_TRUE(WaitFor([&] { return (*watcher)->stats().topics_form_confirmed; }));
  const core::Slot start = SlotNow(chain);
  ASSERT_TRUE(WaitFor([&] { return SlotNow(chain) >= start + 4; }));
  EXPECT_FALSE(AskedForGloasTopics(node.events_requests()));
  // The node's spec now schedules the fork, its stream still up (a node behind a proxy that
  // was upgraded): within an epoch or two the stream is reopened with the Gloas topics.
  node.SetSpecNamesGloas(true);
  EXPECT_TRUE(WaitFor([&] { return node.last_topics() == absl::StrJoin(GloasTopics(), ","); }));
  EXPECT_TRUE(WaitFor([&] { return node.streams_open() == 1; }));
}

// A node that reads one form of the topics query only, and does not read the other.
struct OneForm {
  const char* name;
  testing::TopicsQuery accepted;
  // The other form is answered 400 (true) or with a stream that never sends an event.
  bool refuse_other;
  TopicsForm expected;
};

void PrintTo(const OneForm& form, std::ostream* os) { *os << form.name; }

class BeaconWatcherTopicsFormTest : public ::testing::TestWithParam<OneForm> {};

TEST_P(BeaconWatcherTopicsFormTest, StreamsFromANodeThatReadsOneFormOnlyAndKeepsThatForm) {
  const core::ChainSpec chain = Chain();
  FakeBeaconNode node(chain);
  node.SetTopicsQuery(GetParam().accepted, GetParam().refuse_other);
  node.SetProducing(true);
  client::FakeClient client;
  absl::StatusOr<std::unique_ptr<BeaconWatcher>> watcher =
      BeaconWatcher::Start(OptionsFor(node, chain), SystemClock(), client);
  ASSERT_THAT(watcher, IsOk());
  ASSERT_TRUE(WaitFor([&] { return (*watcher)->stats().topics_form_confirmed; }));
  EXPECT_EQ((*watcher)->stats().topics_form, GetParam().expected);
  const core::Slot slot = SlotNow(chain) + 1;
  EXPECT_TRUE(WaitFor([&] {
    return ReportedTo(client, slot, FakeBeaconNode::ProducedRoot(slot)) &&
           ReportedTo(client, slot + 1, FakeBeaconNode::ProducedRoot(slot + 1));
  }));

  // The node restarts: it is asked in the form that worked, at once.
  const size_t before = node.events_requests().size();
  node.DropStreams();
  ASSERT_TRUE(WaitFor([&] { return node.events_requests().size() > before; }));
  ASSERT_TRUE(WaitFor([&] { return node.streams_open() == 1; }));
  const std::vector<testing::EventsRequest> requests = node.events_requests();
  for (size_t i = before; i < requests.size(); ++i) {
    EXPECT_EQ(requests[i].comma_joined, GetParam().expected == TopicsForm::kComma) << i;
  }
  // Every slot had its block: none was judged empty, not even while a stream sent nothing.
  for (const client::FakeClient::Reported& reported : client.reports()) {
    const auto* seen = std::get_if<core::BlocksSeen>(&reported.event);
    EXPECT_FALSE(seen != nullptr && seen->roots.empty()) << "slot " << reported.slot;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Forms, BeaconWatcherTopicsFormTest,
    ::testing::Values(OneForm{"CommaOnlyRefusingRepeated", testing::TopicsQuery::kCommaOnly, true,
                              TopicsForm::kComma},
                      OneForm{"CommaOnlySilentOnRepeated", testing::TopicsQuery::kCommaOnly, false,
                              TopicsForm::kComma},
                      OneForm{"RepeatedOnlyRefusingComma", testing::TopicsQuery::kRepeatedOnly,
                              true, TopicsForm::kRepeated},
                      OneForm{"RepeatedOnlySilentOnComma", testing::TopicsQuery::kRepeatedOnly,
                              false, TopicsForm::kRepeated}),
    [](const ::testing::TestParamInfo<OneForm>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace breaker::sidecar
