#include "sidecar/http/error_body.h"

#include "gtest/gtest.h"

namespace breaker::sidecar::http {
namespace {

TEST(ErrorBodyTest, IsOneLineOfJsonWhateverTheMessage) {
  EXPECT_EQ(ErrorBody(503, "breaker-sidecar is stopping"),
            R"({"code":503,"message":"breaker-sidecar is stopping"})");
  EXPECT_EQ(ErrorBody(502, "upstream: said \"no\" \\ then\r\nclosed"),
            R"({"code":502,"message":"upstream: said \"no\" \\ then  closed"})");
}

}  // namespace
}  // namespace breaker::sidecar::http
