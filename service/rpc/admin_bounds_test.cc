// Every string field of every Admin rpc, one past its bound, through gRPC against a real
// breakerd on SQLite: refused with INVALID_ARGUMENT naming the field, before anything is
// journaled (the state directory keeps its size) or logged at length (no log line over 1 KiB).
// The rpcs and their fields come from the service's descriptor: an rpc or a string field this
// table does not know fails the test.

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "common/mutex.h"
#include "core/input_bounds.h"
#include "glog/logging.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/text_format.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "service/rpc/server_test_support.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::service {
namespace {

namespace pb = ::google::protobuf;
namespace bounds = ::breaker::core::bounds;
using ::breaker::testing::StatusIs;
using ::testing::HasSubstr;

constexpr size_t kMaxLogLineBytes = 1024;

// The longest log line written while installed, and how it starts.
class LongestLogLine : public google::LogSink {
 public:
  LongestLogLine() { google::AddLogSink(this); }
  ~LongestLogLine() override { google::RemoveLogSink(this); }

  using google::LogSink::send;
  void send(google::LogSeverity, const char*, const char* base_filename, int line,
            const google::LogMessageTime&, const char* message, size_t message_len) override {
    MutexLock lock(&mu_);
    if (message_len <= longest_) return;
    longest_ = message_len;
    start_ = absl::StrCat(base_filename, ":", line, ": ",
                          bounds::ForLog(absl::string_view(message, message_len)));
  }

  size_t longest() const {
    MutexLock lock(&mu_);
    return longest_;
  }
  std::string start() const {
    MutexLock lock(&mu_);
    return start_;
  }

 private:
  mutable Mutex mu_;
  size_t longest_ ABSL_GUARDED_BY(mu_) = 0;
  std::string start_ ABSL_GUARDED_BY(mu_);
};

// The bytes of every file under `dir`.
uintmax_t TotalBytes(const std::string& dir) {
  uintmax_t total = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) total += entry.file_size();
  }
  return total;
}

// One Admin rpc: a request valid but for the field under test (text format), and the bound of
// each of its string fields. Numbers and flags are left out: they cannot make a write or a log
// line long.
struct Row {
  std::string base;
  absl::flat_hash_map<std::string, size_t> bound_of;
};

class AdminBoundsTest : public test_support::ServerTest {
 protected:
  // Calls `method` of breaker.v1.Admin with `request`, serialized, as any client may.
  absl::Status RawCall(const pb::MethodDescriptor& method, const pb::Message& request) {
    grpc::GenericStub stub(channel_);
    grpc::Slice slice(request.SerializeAsString());
    grpc::ByteBuffer bytes(&slice, 1);
    grpc::ByteBuffer response;
    grpc::ClientContext context;
    context.set_deadline(test_support::Deadline());
    std::promise<grpc::Status> done;
    stub.UnaryCall(&context, absl::StrCat("/", method.service()->full_name(), "/", method.name()),
                   grpc::StubOptions(), &bytes, &response,
                   [&done](grpc::Status status) { done.set_value(std::move(status)); });
    return ::breaker::testing::FromGrpc(done.get_future().get());
  }
};

TEST_F(AdminBoundsTest, EveryStringOfEveryAdminRpcOnePastItsBoundIsRefusedBeforeAnyWrite) {
  StartServer();
  const absl::flat_hash_map<std::string, Row> rows = {
      {"GetPolicy", {}},
      {"ListBuilders", {"", {{"page_token", bounds::kMaxPageTokenBytes}}}},
      {"GetBuilder", {}},
      {"ListRelays", {}},
      {"ListNodes", {"", {{"page_token", bounds::kMaxPageTokenBytes}}}},
      {"BanBuilder", {"builder_index: 9 reason: \"x\"", {{"reason", bounds::kMaxReasonBytes}}}},
      {"UnbanBuilder", {}},
      {"BanRelay",
       {"relay: \"https://relay.example\" reason: \"x\"",
        {{"relay", bounds::kMaxRelayIdBytes}, {"reason", bounds::kMaxReasonBytes}}}},
      {"UnbanRelay", {"relay: \"https://relay.example\"", {{"relay", bounds::kMaxRelayIdBytes}}}},
      {"SetBuilderTrust", {}},
      {"SetRelayTrust",
       {"relay: \"https://relay.example\" trusted: true", {{"relay", bounds::kMaxRelayIdBytes}}}},
      {"Reset", {"reason: \"x\"", {{"reason", bounds::kMaxReasonBytes}}}},
      {"ResetNode",
       {"node_id: \"bn-1\" reason: \"x\"",
        {{"node_id", bounds::kMaxNodeIdBytes}, {"reason", bounds::kMaxReasonBytes}}}},
      {"GetConfig", {}},
      {"ReloadConfig", {}},
      {"ReloadAccess", {}},
      {"WatchPolicy", {}},
  };
  const std::string state_dir = Options().state_dir;
  const pb::ServiceDescriptor* admin =
      pb::DescriptorPool::generated_pool()->FindServiceByName(v1::Admin::service_full_name());
  ASSERT_NE(admin, nullptr);
  ASSERT_EQ(static_cast<size_t>(admin->method_count()), rows.size())
      << "the table lists an rpc the service no longer has";
  size_t calls = 0;
  for (int i = 0; i < admin->method_count(); ++i) {
    const pb::MethodDescriptor& method = *admin->method(i);
    SCOPED_TRACE(method.name());
    auto row = rows.find(method.name());
    ASSERT_NE(row, rows.end()) << "an Admin rpc without a row: list its string fields' bounds";
    const pb::Descriptor& input = *method.input_type();
    for (int j = 0; j < input.field_count(); ++j) {
      const pb::FieldDescriptor& field = *input.field(j);
      if (field.cpp_type() != pb::FieldDescriptor::CPPTYPE_STRING) continue;
      SCOPED_TRACE(field.name());
      auto bound = row->second.bound_of.find(field.name());
      ASSERT_NE(bound, row->second.bound_of.end())
          << "a string field without a bound in this table: bound it where the rpc enters "
             "(proto/codec/request_checks.h) and list it here";
      std::unique_ptr<pb::Message> request(
          pb::MessageFactory::generated_factory()->GetPrototype(&input)->New());
      ASSERT_TRUE(pb::TextFormat::ParseFromString(row->second.base, request.get()));
      const size_t size = bound->second + 1;
      request->GetReflection()->SetString(request.get(), &field, std::string(size, 'a'));

      server_->fleet()->Sync();
      const uintmax_t before = TotalBytes(state_dir);
      LongestLogLine log;
      EXPECT_THAT(RawCall(method, *request),
                  StatusIs(absl::StatusCode::kInvalidArgument,
                           HasSubstr(absl::StrCat(field.name(), " is ", size, " bytes"))));
      server_->fleet()->Sync();
      EXPECT_EQ(TotalBytes(state_dir), before) << "the refused call was written";
      EXPECT_LE(log.longest(), kMaxLogLineBytes) << log.start();
      ++calls;
    }
    for (const auto& [name, bound] : row->second.bound_of) {
      EXPECT_NE(input.FindFieldByName(name), nullptr) << name << " is no field of " << input.name();
    }
  }
  EXPECT_EQ(calls, 10u);
}

}  // namespace
}  // namespace breaker::service
