#include "common/bounded_json.h"

#include <string>

#include "gtest/gtest.h"

namespace breaker {
namespace {

TEST(JsonTooDeepTest, CountsOutsideStrings) {
  EXPECT_FALSE(JsonTooDeep("[[[]]]", 3));
  EXPECT_TRUE(JsonTooDeep("[[[[]]]]", 3));
  EXPECT_FALSE(JsonTooDeep("[\"[[[[\\\"[[[\"]", 3));
}

TEST(ParseBoundedJsonTest, RefusesWhatIsNotJsonOrTooDeep) {
  EXPECT_EQ(ParseBoundedJson(R"({"a":[1,2]})")["a"][1], 2);
  EXPECT_TRUE(ParseBoundedJson("{\"a\":").is_discarded());
  EXPECT_TRUE(ParseBoundedJson(std::string(1000000, '[')).is_discarded());
  EXPECT_FALSE(ParseBoundedJson("[[[]]]", 3).is_discarded());
  EXPECT_TRUE(ParseBoundedJson("[[[[]]]]", 3).is_discarded());
}

TEST(JsonMemberTest, OfObjectsOnly) {
  const nlohmann::json json = ParseBoundedJson(R"({"a":{"b":1},"c":[1]})");
  ASSERT_NE(JsonMember(json, "a"), nullptr);
  EXPECT_EQ(*JsonMember(*JsonMember(json, "a"), "b"), 1);
  EXPECT_EQ(JsonMember(json, "b"), nullptr);
  EXPECT_EQ(JsonMember(*JsonMember(json, "c"), "a"), nullptr);
}

}  // namespace
}  // namespace breaker
