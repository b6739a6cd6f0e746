#include "sidecar/builder/routes.h"

#include "gtest/gtest.h"

namespace breaker::sidecar {
namespace {

TEST(ClassifyRouteTest, TheBuilderApi) {
  EXPECT_EQ(ClassifyRoute("GET", "/eth/v1/builder/status").endpoint, Endpoint::kStatus);
  EXPECT_EQ(ClassifyRoute("POST", "/eth/v1/builder/validators").endpoint,
            Endpoint::kRegisterValidators);
  const Route header = ClassifyRoute("GET", "/eth/v1/builder/header/123/0xab/0xcd");
  EXPECT_EQ(header.endpoint, Endpoint::kGetHeader);
  EXPECT_EQ(header.slot, 123u);
  EXPECT_EQ(ClassifyRoute("POST", "/eth/v1/builder/blinded_blocks").endpoint,
            Endpoint::kSubmitBlindedBlock);
  EXPECT_EQ(ClassifyRoute("POST", "/eth/v2/builder/blinded_blocks").endpoint,
            Endpoint::kSubmitBlindedBlock);
  // Not a header: a bad slot, a wrong method, extra segments, another prefix.
  EXPECT_EQ(ClassifyRoute("GET", "/eth/v1/builder/header/x/0xab/0xcd").endpoint, Endpoint::kOther);
  EXPECT_EQ(ClassifyRoute("POST", "/eth/v1/builder/header/1/0xab/0xcd").endpoint, Endpoint::kOther);
  EXPECT_EQ(ClassifyRoute("GET", "/eth/v1/builder/header/1/0xab/0xcd/x").endpoint,
            Endpoint::kOther);
  EXPECT_EQ(ClassifyRoute("GET", "/base/eth/v1/builder/status").endpoint, Endpoint::kOther);
  // Gloas.
  const Route bid =
      ClassifyRoute("POST", "/eth/v1/builder/execution_payload_bid/77/0xab/0xcd/0xef");
  EXPECT_EQ(bid.endpoint, Endpoint::kGetExecutionPayloadBid);
  EXPECT_EQ(bid.slot, 77u);
  EXPECT_EQ(
      ClassifyRoute("GET", "/eth/v1/builder/execution_payload_bid/77/0xab/0xcd/0xef").endpoint,
      Endpoint::kOther);
  EXPECT_EQ(ClassifyRoute("POST", "/eth/v1/builder/execution_payload_bid/77/0xab/0xcd").endpoint,
            Endpoint::kOther);
  EXPECT_EQ(
      ClassifyRoute("POST", "/eth/v1/builder/execution_payload_bid/x/0xab/0xcd/0xef").endpoint,
      Endpoint::kOther);
  EXPECT_EQ(ClassifyRoute("POST", "/eth/v1/builder/builder_preferences/0xab").endpoint,
            Endpoint::kSubmitBuilderPreferences);
  EXPECT_EQ(ClassifyRoute("POST", "/eth/v1/builder/beacon_blocks").endpoint,
            Endpoint::kSubmitBeaconBlock);
  EXPECT_EQ(ClassifyRoute("GET", "").endpoint, Endpoint::kOther);
}

}  // namespace
}  // namespace breaker::sidecar
