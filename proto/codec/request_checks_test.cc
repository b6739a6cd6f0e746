#include "proto/codec/request_checks.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::codec {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

v1::Hello GoodHello() {
  v1::Hello hello;
  hello.set_node_id("bn-eu-1");
  hello.set_client_version("breaker-client/1.0");
  hello.set_network("mainnet");
  return hello;
}

TEST(CheckHelloTest, EachStringFieldAtItsBoundAndOnePast) {
  EXPECT_THAT(CheckHello(GoodHello()), IsOk());
  struct Case {
    const char* field;
    void (*set)(v1::Hello&, std::string);
    size_t bound;
  };
  const Case cases[] = {
      {"hello.node_id", [](v1::Hello& h, std::string v) { h.set_node_id(v); }, 128},
      {"hello.client_version", [](v1::Hello& h, std::string v) { h.set_client_version(v); }, 128},
      {"hello.network", [](v1::Hello& h, std::string v) { h.set_network(v); }, 64},
      {"hello.fleet_id", [](v1::Hello& h, std::string v) { h.set_fleet_id(v); }, 64},
  };
  for (const Case& c : cases) {
    v1::Hello at = GoodHello();
    c.set(at, std::string(c.bound, 'a'));
    EXPECT_THAT(CheckHello(at), IsOk()) << c.field;
    v1::Hello past = GoodHello();
    c.set(past, std::string(c.bound + 1, 'a'));
    EXPECT_THAT(CheckHello(past),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(c.field), HasSubstr(std::to_string(c.bound + 1)),
                               HasSubstr(std::to_string(c.bound)))))
        << c.field;
  }
}

TEST(CheckHelloTest, NodeIdMustBePrintable) {
  v1::Hello hello = GoodHello();
  hello.set_node_id("bn-1\nI1201 forged log line");
  EXPECT_THAT(CheckHello(hello),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("printable")));
  hello.set_node_id("");
  EXPECT_THAT(CheckHello(hello), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
}

TEST(CheckReportRequestTest, NodeIdAndBatchSize) {
  v1::ReportRequest request;
  request.set_node_id("bn-1");
  for (int i = 0; i < 1000; ++i) request.mutable_observations()->add_observations();
  EXPECT_THAT(CheckReportRequest(request), IsOk());
  request.mutable_observations()->add_observations();
  EXPECT_THAT(CheckReportRequest(request),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1001 observations")));
  request.set_node_id(std::string(129, 'n'));
  EXPECT_THAT(CheckReportRequest(request),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("node_id is 129 bytes")));
}

TEST(CheckAdminActionTest, ReasonsAndRelayIdentifiers) {
  state::v1::AdminAction ban;
  ban.mutable_ban()->set_reason(std::string(1024, 'r'));
  EXPECT_THAT(CheckAdminAction(ban), IsOk());
  ban.mutable_ban()->set_reason(std::string(1025, 'r'));
  EXPECT_THAT(CheckAdminAction(ban),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reason is 1025 bytes")));

  state::v1::AdminAction reset;
  reset.mutable_reset()->set_reason(std::string(5000, 'r'));
  EXPECT_THAT(CheckAdminAction(reset), StatusIs(absl::StatusCode::kInvalidArgument));

  state::v1::AdminAction trust;
  trust.mutable_relay_trust()->set_relay("https://r.example/" + std::string(600, 'p'));
  EXPECT_THAT(CheckAdminAction(trust),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most 512 bytes")));
}

}  // namespace
}  // namespace breaker::codec
