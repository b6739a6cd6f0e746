#include "sidecar/beacon/beacon_api.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/mutex.h"
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
using ::breaker::testing::WaitFor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

core::ChainSpec Chain() {
  core::ChainSpec chain;
  chain.network = "test";
  chain.genesis_time_unix = 1700000000;
  chain.seconds_per_slot = 6;
  chain.slots_per_epoch = 8;
  chain.gloas_fork_epoch = 10;
  return chain;
}

core::BlockRoot Root(absl::string_view label) { return core::BlockRootFromBytes(label); }

class BeaconApiTest : public ::testing::Test {
 protected:
  BeaconApiTest() : node_(Chain()), api_(node_.url(), "", Limits(), SystemClock()) {}

  static BeaconApiLimits Limits() {
    BeaconApiLimits limits;
    limits.max_body_bytes = 64 << 10;
    limits.request_timeout = absl::Seconds(5);
    return limits;
  }

  // Streams events on a thread of its own until `count` have come, then interrupts.
  std::vector<SseEvent> StreamUntil(size_t count, const std::function<void()>& once_open,
                                    TopicsForm form = TopicsForm::kRepeated) {
    std::vector<SseEvent> events;
    absl::Notification open;
    Mutex mu;
    std::thread streamer([&] {
      static_cast<void>(api_.StreamEvents(
          PreGloasTopics(), form, [&] { open.Notify(); },
          [&](const SseEvent& event) {
            MutexLock lock(&mu);
            events.push_back(event);
            if (events.size() >= count) api_.Interrupt();
          }));
    });
    open.WaitForNotificationWithTimeout(absl::Seconds(30));
    EXPECT_TRUE(WaitFor([&] { return node_.streams_open() > 0; }));
    once_open();
    streamer.join();
    return events;
  }

  FakeBeaconNode node_;
  BeaconApi api_;
};

TEST_F(BeaconApiTest, ReadsTheNodesChain) {
  absl::StatusOr<NodeChain> chain = api_.GetChain();
  ASSERT_THAT(chain, IsOk());
  EXPECT_EQ(chain->genesis_time_unix, 1700000000);
  EXPECT_EQ(chain->seconds_per_slot, 6u);
  EXPECT_EQ(chain->slots_per_epoch, 8u);
  EXPECT_EQ(chain->gloas_fork_epoch, 10u);
  node_.SetSpecNamesGloas(false);
  chain = api_.GetChain();
  ASSERT_THAT(chain, IsOk());
  EXPECT_FALSE(chain->gloas_fork_epoch.has_value());
}

TEST_F(BeaconApiTest, ReadsTheNodesPresetFromItsSpec) {
  absl::StatusOr<NodeChain> chain = api_.GetChain();
  ASSERT_THAT(chain, IsOk());
  EXPECT_EQ(chain->preset, ssz::Preset::kMainnet) << "a spec that names none";

  const std::string spec = R"({"data":{"SECONDS_PER_SLOT":"6","SLOTS_PER_EPOCH":"8",)";
  node_.OverridePath("/eth/v1/config/spec", 200, spec + R"("PRESET_BASE":"minimal"}})");
  chain = api_.GetChain();
  ASSERT_THAT(chain, IsOk());
  EXPECT_EQ(chain->preset, ssz::Preset::kMinimal);

  // A limit the spec lists is the node's own, whatever its base's.
  node_.OverridePath("/eth/v1/config/spec", 200,
                     spec + R"("PRESET_BASE":"minimal","MAX_BLOB_COMMITMENTS_PER_BLOCK":"16"}})");
  chain = api_.GetChain();
  ASSERT_THAT(chain, IsOk());
  ssz::Preset expected = ssz::Preset::kMinimal;
  expected.max_blob_commitments_per_block = 16;
  EXPECT_EQ(chain->preset, expected);

  node_.OverridePath("/eth/v1/config/spec", 200, spec + R"("SYNC_COMMITTEE_SIZE":"0"}})");
  EXPECT_THAT(api_.GetChain(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("SYNC_COMMITTEE_SIZE")));
  node_.OverridePath("/eth/v1/config/spec", 200, spec + R"("PRESET_BASE":7}})");
  EXPECT_THAT(api_.GetChain(), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("PRESET_BASE")));
}

TEST_F(BeaconApiTest, ReadsTheSyncStatus) {
  absl::StatusOr<SyncStatus> status = api_.GetSyncing();
  ASSERT_THAT(status, IsOk());
  EXPECT_FALSE(status->is_syncing);
  node_.SetSyncing(false, /*optimistic=*/true);
  status = api_.GetSyncing();
  ASSERT_THAT(status, IsOk());
  EXPECT_TRUE(status->is_optimistic);
}

TEST_F(BeaconApiTest, ReadsHeadersAndForkChoice) {
  node_.AddBlock(5, Root("a"));
  node_.AddBlock(5, Root("b"), /*canonical=*/false);
  absl::StatusOr<std::vector<core::BlockRoot>> five = api_.GetHeaders(5);
  ASSERT_THAT(five, IsOk());
  EXPECT_THAT(*five, ElementsAre(Root("a")));
  absl::StatusOr<std::vector<core::BlockRoot>> none = api_.GetHeaders(6);  // a 404
  ASSERT_THAT(none, IsOk());
  EXPECT_THAT(*none, IsEmpty());
  node_.SetForkChoiceWeights(3200, Root("b"), 77);
  absl::StatusOr<std::vector<ForkChoiceNode>> nodes = api_.GetForkChoice();
  ASSERT_THAT(nodes, IsOk());
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[1].root, Root("b"));
  EXPECT_EQ((*nodes)[1].weight, 77u);
  EXPECT_EQ((*nodes)[2].weight, 3200u);
  EXPECT_FALSE((*nodes)[2].parent_root.has_value());  // the anchor: null
}

TEST_F(BeaconApiTest, ABlocksOwnWeightLeavesOutItsChildrensVotes) {
  node_.AddBlock(5, Root("parent"));
  node_.AddBlock(6, Root("child"));
  node_.AddBlock(6, Root("sibling"), /*canonical=*/false);
  node_.SetForkChoiceParent(Root("child"), Root("parent"));
  node_.SetForkChoiceParent(Root("sibling"), Root("parent"));
  node_.SetForkChoiceWeights(800, Root("parent"), 155);
  node_.SetForkChoiceWeights(800, Root("child"), 95);
  node_.SetForkChoiceWeights(800, Root("sibling"), 5);
  absl::StatusOr<std::vector<ForkChoiceNode>> nodes = api_.GetForkChoice();
  ASSERT_THAT(nodes, IsOk());
  ASSERT_EQ(nodes->size(), 4u);
  EXPECT_EQ((*nodes)[1].parent_root, Root("parent"));
  EXPECT_EQ(OwnWeight(*nodes, Root("parent")), 55u);
  EXPECT_EQ(OwnWeight(*nodes, Root("child")), 95u);
  EXPECT_EQ(OwnWeight(*nodes, Root("unknown")), 0u);
}

TEST(OwnWeightTest, ChildrenOutweighingTheirParentLeaveItNoVotesOfItsOwn) {
  const core::BlockRoot parent = core::BlockRootFromBytes("parent");
  const std::vector<ForkChoiceNode> nodes = {
      {5, parent, 10, std::nullopt},
      {6, core::BlockRootFromBytes("child"), 30, parent},
  };
  EXPECT_EQ(OwnWeight(nodes, parent), 0u);
}

TEST_F(BeaconApiTest, RefusesAForkChoiceNodeWithAMalformedParent) {
  node_.OverridePath("/eth/v1/debug/fork_choice", 200,
                     R"({"fork_choice_nodes":[{"slot":"1","block_root":"0x)" +
                         std::string(64, 'a') + R"(","parent_root":"0x12","weight":"1"}]})");
  absl::StatusOr<std::vector<ForkChoiceNode>> nodes = api_.GetForkChoice();
  EXPECT_THAT(nodes, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("parent_root")));
}

TEST_F(BeaconApiTest, ReadsABlocksBidBuilder) {
  node_.AddBlock(90, Root("g"), true, /*bid_builder=*/42);
  absl::StatusOr<core::BuilderIndex> builder = api_.GetBlockBidBuilder(Root("g"));
  ASSERT_THAT(builder, IsOk());
  EXPECT_EQ(*builder, 42u);
  EXPECT_THAT(api_.GetBlockBidBuilder(Root("unknown")), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(BeaconApiTest, TruncatedOrWrongJsonIsAnErrorNamingTheEndpoint) {
  node_.OverridePath("/eth/v1/beacon/genesis", 200, R"({"data":{"genesis_time":"17000)");
  EXPECT_THAT(api_.GetChain(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("/eth/v1/beacon/genesis")));
  node_.OverridePath("/eth/v1/beacon/genesis", 200, R"({"data":{"genesis_time":-5}})");
  EXPECT_THAT(api_.GetChain(), StatusIs(absl::StatusCode::kDataLoss));
  node_.OverridePath("/eth/v1/node/syncing", 200, R"({"data":{"is_syncing":"no"}})");
  EXPECT_THAT(api_.GetSyncing(), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("is_syncing")));
  node_.OverridePath("/eth/v1/beacon/headers", 200, R"({"data":[{"root":"0x12"}]})");
  EXPECT_THAT(api_.GetHeaders(1), StatusIs(absl::StatusCode::kDataLoss));
  node_.OverridePath("/eth/v1/node/syncing", 500, "{}");
  EXPECT_THAT(api_.GetSyncing(), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("500")));
  EXPECT_GE(api_.stats().bad_answers, 4u);
}

TEST_F(BeaconApiTest, AHugeBodyIsRefusedAtTheBound) {
  node_.OverridePath("/eth/v1/config/spec", 200, std::string(8 << 20, ' '));
  EXPECT_THAT(api_.GetChain(),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("more than 65536 bytes")));
}

TEST_F(BeaconApiTest, AnUnreachableNodeIsUnavailable) {
  BeaconApi nowhere("http://127.0.0.1:1", "", Limits(), SystemClock());
  EXPECT_THAT(nowhere.GetChain(),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("127.0.0.1:1")));
}

TEST_F(BeaconApiTest, StreamsEventsAndSurvivesMalformedFrames) {
  const std::vector<SseEvent> events = StreamUntil(4, [&] {
    node_.AddBlock(7, Root("a"));                                // block and head
    node_.EmitRaw("event: block\ndata: {\"slot\":\"8\",\"blo");  // truncated, then a new event
    node_.EmitRaw("\n\nevent: finalized_checkpoint\ndata: {\"epoch\":\"3\"}\n\n");
  });
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].name, "block");
  EXPECT_EQ(events[1].name, "head");
  // The truncated event ends at the empty line: its JSON is cut, the next event is whole.
  EXPECT_EQ(events[2].name, "block");
  EXPECT_EQ(events[3].name, "finalized_checkpoint");
  EXPECT_THAT(DecodeEvent(events[2]), StatusIs(absl::StatusCode::kDataLoss));
  absl::StatusOr<BeaconEvent> block = DecodeEvent(events[0]);
  ASSERT_THAT(block, IsOk());
  EXPECT_EQ(block->slot, 7u);
  EXPECT_EQ(block->root, Root("a"));
  EXPECT_THAT(node_.last_topics(), "block,head,chain_reorg,finalized_checkpoint");
}

TEST_F(BeaconApiTest, ReadsTheFinalizedEpoch) {
  node_.Finalize(12);
  absl::StatusOr<core::Epoch> epoch = api_.GetFinalizedEpoch();
  ASSERT_THAT(epoch, IsOk());
  EXPECT_EQ(*epoch, 12u);
}

TEST(BeaconApiRateTest, EventsBeyondTheRateAreDropped) {
  FakeBeaconNode node(Chain());
  BeaconApiLimits limits;
  limits.max_events_per_second = 5;
  BeaconApi api(node.url(), "", limits, SystemClock());
  std::atomic<int> received{0};
  std::thread streamer([&] {
    static_cast<void>(api.StreamEvents(
        PreGloasTopics(), TopicsForm::kRepeated, [] {}, [&](const SseEvent&) { ++received; }));
  });
  EXPECT_TRUE(WaitFor([&] { return node.streams_open() > 0; }));
  std::string burst;
  for (int i = 0; i < 200; ++i) burst += "event: head\ndata: {}\n\n";
  node.EmitRaw(burst);
  EXPECT_TRUE(
      WaitFor([&] { return received + static_cast<int>(api.stats().dropped_events) >= 200; }));
  api.Interrupt();
  streamer.join();
  // One second's worth, or two if the burst straddled a second's end.
  EXPECT_LE(received, 10);
  EXPECT_GE(api.stats().dropped_events, 190u);
}

TEST_F(BeaconApiTest, ANodeThatRefusesTheGloasTopicsAnswersInvalidArgument) {
  node_.SetOffersGloasTopics(false);
  EXPECT_THAT(api_.StreamEvents(
                  GloasTopics(), TopicsForm::kRepeated, [] {}, [](const SseEvent&) {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Invalid topic")));
}

TEST_F(BeaconApiTest, GivesTheTopicsInEitherForm) {
  // A node that reads only the comma-joined form refuses the other.
  node_.SetTopicsQuery(testing::TopicsQuery::kCommaOnly, /*refuse_other=*/true);
  EXPECT_THAT(
      api_.StreamEvents(
          PreGloasTopics(), TopicsForm::kRepeated, [] {}, [](const SseEvent&) {}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("(repeated form, status 400)")));
  const std::vector<SseEvent> events = StreamUntil(
      1, [&] { node_.Finalize(3); }, TopicsForm::kComma);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, "finalized_checkpoint");
  const std::vector<testing::EventsRequest> requests = node_.events_requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_FALSE(requests[0].comma_joined);
  EXPECT_TRUE(requests[1].comma_joined);
  EXPECT_EQ(requests[1].topics, "block,head,chain_reorg,finalized_checkpoint");
}

TEST_F(BeaconApiTest, EndStreamEndsTheStreamInProgressOnly) {
  // Nothing in progress: the next stream is not ended.
  api_.EndStream();
  absl::Status ended;
  std::thread streamer([&] {
    ended = api_.StreamEvents(
        PreGloasTopics(), TopicsForm::kRepeated, [] {}, [](const SseEvent&) {});
  });
  EXPECT_TRUE(WaitFor([&] { return node_.streams_open() > 0; }));
  api_.EndStream();
  streamer.join();
  EXPECT_THAT(ended, StatusIs(absl::StatusCode::kAborted));
  // And the one after opens as usual.
  const std::vector<SseEvent> events = StreamUntil(1, [&] { node_.Finalize(4); });
  EXPECT_EQ(events.size(), 1u);
}

TEST_F(BeaconApiTest, ARestartEndsTheStream) {
  absl::Status ended;
  std::thread streamer([&] {
    ended = api_.StreamEvents(
        PreGloasTopics(), TopicsForm::kRepeated, [] {}, [](const SseEvent&) {});
  });
  EXPECT_TRUE(WaitFor([&] { return node_.streams_open() > 0; }));
  node_.DropStreams();
  streamer.join();
  EXPECT_THAT(ended, StatusIs(absl::StatusCode::kUnavailable));
}

TEST(DecodeEventTest, DecodesEachTopic) {
  absl::StatusOr<BeaconEvent> reorg = DecodeEvent(
      {"chain_reorg",
       absl::StrCat(R"({"slot":"9","depth":"1","old_head_block":")", FakeBeaconNode::Hex(Root("o")),
                    R"(","new_head_block":")", FakeBeaconNode::Hex(Root("n")), R"("})")});
  ASSERT_THAT(reorg, IsOk());
  EXPECT_EQ(reorg->kind, BeaconEvent::Kind::kReorg);
  EXPECT_EQ(reorg->root, Root("n"));
  EXPECT_EQ(reorg->old_root, Root("o"));

  absl::StatusOr<BeaconEvent> bid =
      DecodeEvent({"execution_payload_bid",
                   R"({"version":"gloas","data":{"message":{"slot":"10","builder_index":"42"}}})"});
  ASSERT_THAT(bid, IsOk());
  EXPECT_EQ(bid->kind, BeaconEvent::Kind::kBid);
  EXPECT_EQ(bid->builder, 42u);

  absl::StatusOr<BeaconEvent> head = DecodeEvent(
      {"head_v2", absl::StrCat(R"({"version":"gloas","data":{"slot":"10","block":")",
                               FakeBeaconNode::Hex(Root("h")), R"(","payload_status":"full"}})")});
  ASSERT_THAT(head, IsOk());
  EXPECT_TRUE(head->payload_full);

  EXPECT_THAT(DecodeEvent({"attestation", "{}"}), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(DecodeEvent({"block", "not json"}), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(DecodeEvent({"block", R"({"slot":"-1","block":"0x00"})"}),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("slot")));
  EXPECT_THAT(DecodeEvent({"finalized_checkpoint", R"({"epoch":"99999999999999999999999"})"}),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("epoch")));
  EXPECT_THAT(DecodeEvent({"block", std::string(100, '[')}), StatusIs(absl::StatusCode::kDataLoss));
}

}  // namespace
}  // namespace breaker::sidecar

namespace breaker::sidecar {
namespace {

// A node that takes connections and never answers: a stop must not wait out the request's
// timeout.
TEST(BeaconApiStopTest, InterruptEndsARequestInFlightAtOnce) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(fd, 4), 0);  // The kernel accepts; nobody reads.
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  BeaconApiLimits limits;
  limits.request_timeout = absl::Seconds(60);
  BeaconApi api(absl::StrCat("http://127.0.0.1:", ntohs(address.sin_port)), "", limits,
                SystemClock());
  absl::Status status;
  std::thread request([&] { status = api.GetChain().status(); });
  // Interrupted before or during the request: either way it ends, CANCELLED.
  absl::SleepFor(absl::Milliseconds(50));
  api.Interrupt();
  request.join();
  EXPECT_TRUE(absl::IsCancelled(status)) << status;
  close(fd);
}

}  // namespace
}  // namespace breaker::sidecar
