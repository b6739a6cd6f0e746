#include "proto/codec/request_checks.h"

#include <cstddef>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/input_bounds.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
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

// Every string of every kind of operator action, found from the descriptor: one that this
// table does not know fails the test, so that a new action or field cannot go unbounded.
TEST(CheckAdminActionTest, EveryStringOfEveryActionAtItsBoundAndOnePast) {
  namespace pb = ::google::protobuf;
  namespace bounds = ::breaker::core::bounds;
  const absl::flat_hash_map<std::string, size_t> bound_of = {
      {"breaker.v1.BanBuilderRequest.reason", bounds::kMaxReasonBytes},
      {"breaker.v1.BanRelayRequest.relay", bounds::kMaxRelayIdBytes},
      {"breaker.v1.BanRelayRequest.reason", bounds::kMaxReasonBytes},
      {"breaker.v1.UnbanRelayRequest.relay", bounds::kMaxRelayIdBytes},
      {"breaker.v1.SetRelayTrustRequest.relay", bounds::kMaxRelayIdBytes},
      {"breaker.v1.ResetRequest.reason", bounds::kMaxReasonBytes},
      {"breaker.v1.ResetNodeRequest.node_id", bounds::kMaxNodeIdBytes},
      {"breaker.v1.ResetNodeRequest.reason", bounds::kMaxReasonBytes},
  };
  // The strings an action needs, set before the one under test is: those of the other kinds
  // may all be empty.
  const absl::flat_hash_map<std::string, std::string> required = {
      {"breaker.v1.ResetNodeRequest", "node_id"},
  };
  const pb::OneofDescriptor* actions =
      state::v1::AdminAction::descriptor()->FindOneofByName("action");
  ASSERT_NE(actions, nullptr);
  size_t checked = 0;
  for (int i = 0; i < actions->field_count(); ++i) {
    const pb::FieldDescriptor* kind = actions->field(i);
    ASSERT_EQ(kind->type(), pb::FieldDescriptor::TYPE_MESSAGE) << kind->full_name();
    const pb::Descriptor* request = kind->message_type();
    auto needed = required.find(request->full_name());
    // An action of this kind with nothing set (but what it needs) is taken.
    state::v1::AdminAction base;
    pb::Message* base_message = base.GetReflection()->MutableMessage(&base, kind);
    if (needed != required.end()) {
      EXPECT_THAT(CheckAdminAction(base),
                  StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(needed->second)))
          << kind->name();
      base_message->GetReflection()->SetString(base_message,
                                               request->FindFieldByName(needed->second), "bn-1");
    }
    EXPECT_THAT(CheckAdminAction(base), IsOk()) << kind->name();
    for (int j = 0; j < request->field_count(); ++j) {
      const pb::FieldDescriptor* field = request->field(j);
      if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_STRING) continue;
      SCOPED_TRACE(field->full_name());
      auto bound = bound_of.find(field->full_name());
      ASSERT_NE(bound, bound_of.end())
          << "a string of an operator action without a bound: bound it in CheckAdminAction and "
             "list it here";
      for (const size_t size : {bound->second, bound->second + 1}) {
        state::v1::AdminAction action = base;
        pb::Message* message = action.GetReflection()->MutableMessage(&action, kind);
        message->GetReflection()->SetString(message, field, std::string(size, 'a'));
        if (size == bound->second) {
          EXPECT_THAT(CheckAdminAction(action), IsOk());
        } else {
          EXPECT_THAT(CheckAdminAction(action),
                      StatusIs(absl::StatusCode::kInvalidArgument,
                               AllOf(HasSubstr(absl::StrCat(field->name(), " is ", size, " bytes")),
                                     HasSubstr(absl::StrCat("at most ", bound->second)))));
        }
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, bound_of.size()) << "the table lists a field the actions no longer have";
}

TEST(CheckAdminActionTest, AnEmptyActionIsRefused) {
  EXPECT_THAT(CheckAdminAction(state::v1::AdminAction()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("operator action is empty")));
}

}  // namespace
}  // namespace breaker::codec
