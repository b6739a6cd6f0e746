#include "sidecar/beacon/sse_parser.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace breaker::sidecar {
namespace {

using ::testing::ElementsAre;
using ::testing::FieldsAre;
using ::testing::IsEmpty;

class SseParserTest : public ::testing::Test {
 protected:
  explicit SseParserTest(SseParser::Limits limits = {})
      : parser_(
            limits, [this](SseEvent event) { events_.push_back(std::move(event)); },
            [this](absl::string_view reason) { dropped_.emplace_back(reason); }) {}

  SseParser parser_;
  std::vector<SseEvent> events_;
  std::vector<std::string> dropped_;
};

TEST_F(SseParserTest, ReadsNamedEvents) {
  parser_.Feed("event: block\ndata: {\"slot\":\"1\"}\n\nevent: head\ndata: {}\n\n");
  EXPECT_THAT(events_,
              ElementsAre(FieldsAre("block", "{\"slot\":\"1\"}"), FieldsAre("head", "{}")));
  EXPECT_EQ(parser_.events(), 2u);
}

TEST_F(SseParserTest, JoinsDataLinesWithNewlines) {
  parser_.Feed("event: block\ndata: {\"slot\":\ndata:\"1\"}\n\n");
  EXPECT_THAT(events_, ElementsAre(FieldsAre("block", "{\"slot\":\n\"1\"}")));
}

TEST_F(SseParserTest, SkipsCommentsIdsAndRetries) {
  parser_.Feed(":keep-alive\n\n: another\nid: 7\nretry: 1000\nevent: head\ndata: x\n\n");
  EXPECT_THAT(events_, ElementsAre(FieldsAre("head", "x")));
}

TEST_F(SseParserTest, AcceptsCrLfAndBareCr) {
  parser_.Feed("event: head\r\ndata: a\r\n\r\nevent: block\rdata: b\r\r");
  EXPECT_THAT(events_, ElementsAre(FieldsAre("head", "a"), FieldsAre("block", "b")));
}

TEST_F(SseParserTest, ReassemblesChunksSplitAnywhere) {
  const std::string stream = "event: head\r\ndata: {\"slot\":\"12\"}\r\n\r\n";
  for (size_t split = 1; split < stream.size(); ++split) {
    events_.clear();
    parser_.Reset();
    parser_.Feed(stream.substr(0, split));
    parser_.Feed(stream.substr(split));
    ASSERT_THAT(events_, ElementsAre(FieldsAre("head", "{\"slot\":\"12\"}"))) << split;
  }
  // One byte at a time, a CR and its LF in different chunks included.
  events_.clear();
  parser_.Reset();
  for (char c : stream) parser_.Feed(std::string(1, c));
  EXPECT_THAT(events_, ElementsAre(FieldsAre("head", "{\"slot\":\"12\"}")));
}

TEST_F(SseParserTest, AnEventWithoutDataIsDropped) {
  parser_.Feed("event: head\n\ndata: x\n\n");
  EXPECT_THAT(events_, ElementsAre(FieldsAre("message", "x")));
}

TEST_F(SseParserTest, AFieldWithoutColonOrSpace) {
  parser_.Feed("event:head\ndata\n\n");
  EXPECT_THAT(events_, ElementsAre(FieldsAre("head", "")));
}

TEST_F(SseParserTest, SkipsALeadingByteOrderMark) {
  parser_.Feed("\xEF\xBB");
  parser_.Feed(
      "\xBF"
      "event: head\ndata: x\n\n");
  EXPECT_THAT(events_, ElementsAre(FieldsAre("head", "x")));
}

TEST_F(SseParserTest, AnUnfinishedEventIsNotDispatched) {
  parser_.Feed("event: head\ndata: x\n");
  EXPECT_THAT(events_, IsEmpty());
  parser_.Reset();
  parser_.Feed("\n");
  EXPECT_THAT(events_, IsEmpty());
}

class BoundedSseParserTest : public SseParserTest {
 protected:
  BoundedSseParserTest() : SseParserTest(SseParser::Limits{16, 24}) {}
};

TEST_F(BoundedSseParserTest, DropsAnOverLongLineWithItsEventAndGoesOn) {
  parser_.Feed("event: head\ndata: " + std::string(100000, 'x') + "\n\nevent: block\ndata: ok\n\n");
  EXPECT_THAT(events_, ElementsAre(FieldsAre("block", "ok")));
  EXPECT_THAT(dropped_, ElementsAre("a line longer than 16 bytes"));
  EXPECT_EQ(parser_.dropped(), 1u);
}

TEST_F(BoundedSseParserTest, DropsAnEventWhoseDataExceedsTheBound) {
  parser_.Feed("data: 0123456789\ndata: 0123456789\ndata: 0123456789\n\ndata: ok\n\n");
  EXPECT_THAT(events_, ElementsAre(FieldsAre("message", "ok")));
  EXPECT_THAT(dropped_, ElementsAre("an event longer than 24 bytes"));
}

TEST_F(BoundedSseParserTest, AnEndlessLineCostsNoMoreThanTheBound) {
  for (int i = 0; i < 1000; ++i) parser_.Feed(std::string(4096, 'y'));
  parser_.Feed("\n\ndata: ok\n\n");
  EXPECT_THAT(events_, ElementsAre(FieldsAre("message", "ok")));
  EXPECT_EQ(parser_.dropped(), 1u);
}

}  // namespace
}  // namespace breaker::sidecar
