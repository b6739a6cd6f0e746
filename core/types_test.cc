#include "core/types.h"

#include <string>

#include "gtest/gtest.h"

namespace breaker::core {
namespace {

TEST(BlockRootTest, ShortHexIsTheFirstEightBytesInLowerCaseHex) {
  const BlockRoot root =
      BlockRootFromBytes(std::string("\x01\xab\xff\x00\x10\x7f\x80\x09zzzz", 12));
  EXPECT_EQ(root.ShortHex(), "0x01abff00107f8009");
  EXPECT_EQ(BlockRoot().ShortHex(), "0x0000000000000000");
}

TEST(BlockRootTest, FromBytesZeroPadsAndTruncates) {
  EXPECT_EQ(BlockRootFromBytes("a").bytes[0], 'a');
  EXPECT_EQ(BlockRootFromBytes("a").bytes[1], 0);
  EXPECT_EQ(BlockRootFromBytes(std::string(40, 'x')), BlockRootFromBytes(std::string(32, 'x')));
}

}  // namespace
}  // namespace breaker::core
