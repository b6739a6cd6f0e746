#include "proto/codec/inspection.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "breaker/v1/breaker.pb.h"
#include "core/config.h"
#include "core/engine.h"
#include "core/observation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::codec {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;

// Builders 3 and 5 banned by the operator, 7 trusted by the configuration, 9 seen bidding
// through a relay (which makes no record of it: it is not listed, only described); relay "https://banned.example" banned before any bid came through it.
core::Engine MakeEngine() {
  core::Config config;
  config.trusted_builders = {7};
  core::Engine engine = core::Engine::Create(config, /*current_slot=*/64).value();
  EXPECT_TRUE(engine.BanBuilder(5, "withheld", std::nullopt).ok());
  EXPECT_TRUE(engine.BanBuilder(3, "withheld", std::nullopt).ok());
  EXPECT_TRUE(engine.BanRelay("https://banned.example", "down", std::nullopt).ok());
  core::Observation bid;
  bid.slot = 64;
  bid.node = "node-1";
  bid.sequence = 1;
  bid.event = core::BidSeen{9, "https://relay.example", ""};
  EXPECT_TRUE(engine.Observe(bid).ok());
  engine.RefreshPolicy();
  return engine;
}

std::vector<uint64_t> Indices(const v1::ListBuildersResponse& response) {
  std::vector<uint64_t> indices;
  for (const v1::Builder& builder : response.builders()) indices.push_back(builder.builder_index());
  return indices;
}

TEST(InspectionTest, ListsBannedBuildersFirstThenByIndex) {
  const core::Engine engine = MakeEngine();
  v1::ListBuildersResponse all = ListBuilders(engine, v1::ListBuildersRequest()).value();
  EXPECT_THAT(Indices(all), ElementsAre(3, 5, 7));
  EXPECT_THAT(all.next_page_token(), IsEmpty());
  EXPECT_TRUE(all.builders(2).trusted());

  v1::ListBuildersRequest banned;
  banned.set_banned_only(true);
  EXPECT_THAT(Indices(ListBuilders(engine, banned).value()), ElementsAre(3, 5));
}

TEST(InspectionTest, PagesOfBuildersFollowOneAnother) {
  const core::Engine engine = MakeEngine();
  v1::ListBuildersRequest request;
  request.set_page_size(2);
  v1::ListBuildersResponse first = ListBuilders(engine, request).value();
  EXPECT_THAT(Indices(first), ElementsAre(3, 5));
  ASSERT_THAT(first.next_page_token(), ::testing::Not(IsEmpty()));
  request.set_page_token(first.next_page_token());
  v1::ListBuildersResponse second = ListBuilders(engine, request).value();
  EXPECT_THAT(Indices(second), ElementsAre(7));
  EXPECT_THAT(second.next_page_token(), IsEmpty());
}

TEST(InspectionTest, RefusesABuilderPageTokenItDidNotGiveOut) {
  const core::Engine engine = MakeEngine();
  for (const std::string token : {"n:node-1", "2:00000000000000000003", "0:3", "garbage"}) {
    v1::ListBuildersRequest request;
    request.set_page_token(token);
    EXPECT_THAT(ListBuilders(engine, request),
                StatusIs(kInvalid, HasSubstr("is not one this breakerd gave out")))
        << token;
  }
}

TEST(InspectionTest, DescribesOneBuilder) {
  const core::Engine engine = MakeEngine();
  v1::Builder banned = DescribeBuilder(engine, 3);
  EXPECT_TRUE(banned.has_ban());
  EXPECT_THAT(banned.ban().reason(), HasSubstr("withheld"));
  EXPECT_THAT(DescribeBuilder(engine, 9).relays(), ElementsAre("https://relay.example"));
  v1::Builder unknown = DescribeBuilder(engine, 1234);
  EXPECT_EQ(unknown.builder_index(), 1234u);
  EXPECT_FALSE(unknown.has_ban());
  EXPECT_FALSE(unknown.trusted());
}

TEST(InspectionTest, ListsRelaysBannedBeforeAnyBid) {
  const core::Engine engine = MakeEngine();
  v1::ListRelaysResponse relays = ListRelays(engine);
  ASSERT_EQ(relays.relays_size(), 2);
  EXPECT_EQ(relays.relays(0).relay(), "https://banned.example");
  EXPECT_TRUE(relays.relays(0).has_ban());
  EXPECT_EQ(relays.relays(1).relay(), "https://relay.example");
  EXPECT_THAT(relays.relays(1).builder_indices(), ElementsAre(9));
}

TEST(InspectionTest, PagesOfNodesDescribeOnlyTheirOwn) {
  const std::vector<std::string> ids = {"a", "b", "c"};
  std::vector<std::string> described;
  auto describe = [&](v1::Node& node) {
    described.push_back(node.node_id());
    node.set_last_sequence(7);
  };
  v1::ListNodesRequest request;
  request.set_page_size(2);
  v1::ListNodesResponse first = ListNodes(ids, request, describe).value();
  ASSERT_EQ(first.nodes_size(), 2);
  EXPECT_EQ(first.nodes(1).last_sequence(), 7u);
  EXPECT_EQ(first.next_page_token(), "n:b");
  described.clear();
  request.set_page_token(first.next_page_token());
  v1::ListNodesResponse second = ListNodes(ids, request, describe).value();
  ASSERT_EQ(second.nodes_size(), 1);
  EXPECT_EQ(second.nodes(0).node_id(), "c");
  EXPECT_THAT(second.next_page_token(), IsEmpty());
  EXPECT_THAT(described, ElementsAre("c"));
}

TEST(InspectionTest, RefusesANodePageTokenItDidNotGiveOut) {
  v1::ListNodesRequest request;
  for (const std::string token : {"n:", "0:00000000000000000003", "node-1"}) {
    request.set_page_token(token);
    EXPECT_THAT(ListNodes({"a"}, request, [](v1::Node&) {}),
                StatusIs(kInvalid, HasSubstr("is not one this breakerd gave out")))
        << token;
  }
}

}  // namespace
}  // namespace breaker::codec
