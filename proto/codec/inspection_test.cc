#include "proto/codec/inspection.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "breaker/v1/breaker.pb.h"
#include "core/config.h"
#include "core/engine.h"
#include "core/input_bounds.h"
#include "core/observation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::codec {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;

// What every refused page token's message ends with.
constexpr char kStartAgain[] = "start again from an empty page_token";

// The tokens of one process; another key stands for another process.
const PageTokens& Tokens() {
  static const PageTokens* const tokens = new PageTokens("this process's key");
  return *tokens;
}

// The position `token` names, "(first page)" for none, or the refusal.
std::string Opened(const PageTokens& tokens, PageTokens::Listing listing,
                   const std::string& token) {
  absl::StatusOr<std::optional<std::string>> position = tokens.Open(listing, token);
  if (!position.ok()) return std::string(position.status().message());
  return position->value_or("(first page)");
}

// Builders 3 and 5 banned by the operator, 7 trusted by the configuration, 9 seen bidding
// through a relay (which makes no record of it: it is not listed, only described); relay
// "https://banned.example" banned before any bid came through it.
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
  v1::ListBuildersResponse all = ListBuilders(engine, v1::ListBuildersRequest(), Tokens()).value();
  EXPECT_THAT(Indices(all), ElementsAre(3, 5, 7));
  EXPECT_THAT(all.next_page_token(), IsEmpty());
  EXPECT_TRUE(all.builders(2).trusted());

  v1::ListBuildersRequest banned;
  banned.set_banned_only(true);
  EXPECT_THAT(Indices(ListBuilders(engine, banned, Tokens()).value()), ElementsAre(3, 5));
}

TEST(InspectionTest, PagesOfBuildersFollowOneAnother) {
  const core::Engine engine = MakeEngine();
  v1::ListBuildersRequest request;
  request.set_page_size(2);
  v1::ListBuildersResponse first = ListBuilders(engine, request, Tokens()).value();
  EXPECT_THAT(Indices(first), ElementsAre(3, 5));
  ASSERT_THAT(first.next_page_token(), ::testing::Not(IsEmpty()));
  request.set_page_token(first.next_page_token());
  v1::ListBuildersResponse second = ListBuilders(engine, request, Tokens()).value();
  EXPECT_THAT(Indices(second), ElementsAre(7));
  EXPECT_THAT(second.next_page_token(), IsEmpty());
}

TEST(InspectionTest, RefusesABuilderPageTokenItDidNotGiveOut) {
  const core::Engine engine = MakeEngine();
  // The positions in the clear, as tokens were once; and what is not a token at all.
  for (const std::string token : {"n:node-1", "1:00000000000000000003", "0:3", "garbage"}) {
    v1::ListBuildersRequest request;
    request.set_page_token(token);
    EXPECT_THAT(ListBuilders(engine, request, Tokens()),
                StatusIs(kInvalid, AllOf(HasSubstr("is not one this breakerd gave out"),
                                         HasSubstr(kStartAgain))))
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
  v1::ListNodesResponse first = ListNodes(ids, request, describe, Tokens()).value();
  ASSERT_EQ(first.nodes_size(), 2);
  EXPECT_EQ(first.nodes(1).last_sequence(), 7u);
  // Sealed: it names the last node listed, but not in the clear.
  EXPECT_EQ(Opened(Tokens(), PageTokens::Listing::kNodes, first.next_page_token()), "b");
  EXPECT_THAT(first.next_page_token(), Not(HasSubstr("n:b")));
  described.clear();
  request.set_page_token(first.next_page_token());
  v1::ListNodesResponse second = ListNodes(ids, request, describe, Tokens()).value();
  ASSERT_EQ(second.nodes_size(), 1);
  EXPECT_EQ(second.nodes(0).node_id(), "c");
  EXPECT_THAT(second.next_page_token(), IsEmpty());
  EXPECT_THAT(described, ElementsAre("c"));
}

TEST(InspectionTest, RefusesANodePageTokenItDidNotGiveOut) {
  v1::ListNodesRequest request;
  for (const std::string token : {"n:b", "n:", "0:00000000000000000003", "node-1"}) {
    request.set_page_token(token);
    EXPECT_THAT(ListNodes(
                    {"a"}, request, [](v1::Node&) {}, Tokens()),
                StatusIs(kInvalid, AllOf(HasSubstr("is not one this breakerd gave out"),
                                         HasSubstr(kStartAgain))))
        << token;
  }
}

TEST(InspectionTest, APageTokenEditedCutOrOfAnotherProcessOrListingIsRefused) {
  const std::string token = Tokens().Seal(PageTokens::Listing::kNodes, "node-b");
  EXPECT_LE(token.size(), 64u);
  ASSERT_EQ(Opened(Tokens(), PageTokens::Listing::kNodes, token), "node-b");
  EXPECT_EQ(Opened(Tokens(), PageTokens::Listing::kNodes, ""), "(first page)");

  // Every character edited, in turn: the format, the key's id, the listing, the position, the
  // MAC.
  for (size_t i = 0; i < token.size(); ++i) {
    std::string edited = token;
    edited[i] = edited[i] == 'A' ? 'B' : 'A';
    EXPECT_THAT(Tokens().Open(PageTokens::Listing::kNodes, edited),
                StatusIs(kInvalid, AllOf(HasSubstr("page_token"), HasSubstr(kStartAgain))))
        << "edited at " << i;
  }
  for (size_t size = 1; size < token.size(); ++size) {
    EXPECT_THAT(Tokens().Open(PageTokens::Listing::kNodes, token.substr(0, size)),
                StatusIs(kInvalid, HasSubstr(kStartAgain)))
        << "cut to " << size;
  }
  EXPECT_THAT(Tokens().Open(PageTokens::Listing::kNodes, token.substr(0, token.size() - 4)),
              StatusIs(kInvalid, HasSubstr("was changed or cut")));
  // The same position, but ListNodes' token given to ListBuilders.
  EXPECT_THAT(Tokens().Open(PageTokens::Listing::kBuilders, token),
              StatusIs(kInvalid, HasSubstr("not of ListBuilders")));
  // Another process's key: told apart, so that the message says what happened.
  const PageTokens other("another process's key");
  EXPECT_THAT(other.Open(PageTokens::Listing::kNodes, token),
              StatusIs(kInvalid, AllOf(HasSubstr("another breakerd process"),
                                       HasSubstr("restarted"), HasSubstr(kStartAgain))));
  // Past the bound, before anything is decoded.
  EXPECT_THAT(Tokens().Open(PageTokens::Listing::kNodes, std::string(257, 'A')),
              StatusIs(kInvalid, HasSubstr("page_token is 257 bytes")));
}

TEST(InspectionTest, TheLongestNodeIdMakesATokenWithinTheBound) {
  const std::string id(core::bounds::kMaxNodeIdBytes, '~');
  const std::string token = Tokens().Seal(PageTokens::Listing::kNodes, id);
  EXPECT_LE(token.size(), core::bounds::kMaxPageTokenBytes);
  EXPECT_EQ(Opened(Tokens(), PageTokens::Listing::kNodes, token), id);
}

TEST(InspectionTest, TwoRandomKeysAreTwoProcesses) {
  absl::StatusOr<PageTokens> first = PageTokens::Random();
  absl::StatusOr<PageTokens> second = PageTokens::Random();
  ASSERT_THAT(first, IsOk());
  ASSERT_THAT(second, IsOk());
  const std::string token = first->Seal(PageTokens::Listing::kBuilders, "0:1");
  EXPECT_THAT(first->Open(PageTokens::Listing::kBuilders, token), IsOk());
  EXPECT_THAT(second->Open(PageTokens::Listing::kBuilders, token),
              StatusIs(kInvalid, HasSubstr("another breakerd process")));
}

}  // namespace
}  // namespace breaker::codec
