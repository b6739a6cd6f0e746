#include "common/json_cursor.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace breaker {
namespace {

using ::testing::HasSubstr;

// Whether the cursor reads `text` as one JSON value.
bool CursorAccepts(absl::string_view text) {
  JsonCursor cursor(text);
  return cursor.SkipValue() && cursor.AtEnd();
}

bool NlohmannAccepts(absl::string_view text) {
  return !nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false)
              .is_discarded();
}

TEST(JsonCursorTest, AcceptsWhatNlohmannAccepts) {
  const std::string cases[] = {
      // Accepted.
      "{}",
      "[]",
      " \t\r\n{ \"a\" : [ 1 , -2 , 3.5e+2, 0, -0, 1E-3, true, false, null ] } \n",
      "\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\ud83d\\ude00 \\u0000\"",
      "\"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xed\x9f\xbf \xf4\x8f\xbf\xbf\"",
      "\xEF\xBB\xBF[1]",
      "18446744073709551616",
      "-9223372036854775809",
      "1e308",
      std::string(400, '9'),
      "{\"a\":{\"a\":{}},\"a\":[[[]]]}",
      "1e-400",
      // Refused.
      "",
      " ",
      "{",
      "[1,]",
      "{\"a\":1,}",
      "{,}",
      "[,1]",
      "{\"a\"}",
      "{\"a\" 1}",
      "{1:2}",
      "[1 2]",
      "01",
      "-",
      "1.",
      ".5",
      "1e",
      "+1",
      "tru",
      "nul",
      "True",
      "[1}",
      "{\"a\":1]",
      "1e309",
      std::string(400, '9') + "0",
      "\"\\x\"",
      "\"\\u12\"",
      "\"\\ud83d\"",
      "\"\\ud83d\\u0041\"",
      "\"\\ude00\"",
      std::string("\"a\x01\""),
      std::string("\"\0\"", 3),
      "\"\xc0\xaf\"",
      "\"\xe0\x80\xaf\"",
      "\"\xed\xa0\x80\"",
      "\"\xf4\x90\x80\x80\"",
      "\"\xf5\x80\x80\x80\"",
      "\"\xc3\"",
      "\"\xff\"",
      "\xEF\xBB[1]",
      "[1] [2]",
      "[1]x",
      "\"a",
      "// c\n1",
      "NaN",
      "[1,\"a\"",
      std::string(100000, '['),
  };
  for (const std::string& text : cases) {
    EXPECT_EQ(CursorAccepts(text), NlohmannAccepts(text)) << "text: " << text.substr(0, 80);
  }
}

TEST(JsonCursorTest, ReadsMembersAndSpansAsWritten) {
  const std::string text =
      R"({"k\u0065y" : "v\n\u00e9", "n": -12.5e1, "a": [ 1, {"x": [2]} ], "z": 0})";
  JsonCursor cursor(text);
  ASSERT_EQ(cursor.Peek(), JsonCursor::Kind::kObject);
  cursor.EnterObject();
  std::string name, value;
  ASSERT_TRUE(cursor.NextMember(&name));
  EXPECT_EQ(name, "key");
  ASSERT_TRUE(cursor.ReadString(&value));
  EXPECT_EQ(value, "v\n\xc3\xa9");
  ASSERT_TRUE(cursor.NextMember(&name));
  absl::string_view number;
  ASSERT_TRUE(cursor.ReadNumber(&number));
  EXPECT_EQ(number, "-12.5e1");
  ASSERT_TRUE(cursor.NextMember(&name));
  ASSERT_EQ(cursor.Peek(), JsonCursor::Kind::kArray);
  const size_t begin = cursor.position();
  ASSERT_TRUE(cursor.SkipValue());
  EXPECT_EQ(text.substr(begin, cursor.position() - begin), R"([ 1, {"x": [2]} ])");
  ASSERT_TRUE(cursor.NextMember(&name));
  EXPECT_EQ(name, "z");
  ASSERT_TRUE(cursor.SkipValue());
  EXPECT_FALSE(cursor.NextMember(&name));
  EXPECT_TRUE(cursor.AtEnd());
  EXPECT_TRUE(cursor.ok());
}

TEST(JsonCursorTest, KeepsTheFirstErrorAndRefusesEverythingAfter) {
  JsonCursor cursor("[1, x, 2]");
  ASSERT_EQ(cursor.Peek(), JsonCursor::Kind::kArray);
  cursor.EnterArray();
  ASSERT_TRUE(cursor.NextElement());
  EXPECT_TRUE(cursor.SkipValue());
  ASSERT_TRUE(cursor.NextElement());
  EXPECT_FALSE(cursor.SkipValue());
  EXPECT_THAT(cursor.error(), HasSubstr("expected a value at byte 4"));
  EXPECT_FALSE(cursor.NextElement());
  EXPECT_FALSE(cursor.AtEnd());
  EXPECT_FALSE(cursor.Peek().has_value());
}

TEST(JsonCursorTest, SaysWhenAReadValueIsOfAnotherKind) {
  JsonCursor cursor("[\"a\"]");
  std::string value;
  EXPECT_FALSE(cursor.ReadString(&value));
  EXPECT_THAT(cursor.error(), HasSubstr("expected a string"));
}

}  // namespace
}  // namespace breaker
