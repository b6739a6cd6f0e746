// Fuzz target for breakerd's gRPC surface (service/rpc/server.h): raw bytes sent as the request of
// every unary rpc of breaker.v1.Breaker and breaker.v1.Admin, and as the messages of Connect
// streams, by a client that does not build them from the protos, as a client of another stack
// or an attacker may. One breakerd runs in the process, started before the first input: SQLite
// state in a temporary directory, a configuration file (so that ReloadConfig is fuzzed too), a
// fake clock that stands still, no ticker, 127.0.0.1:0. Its state carries over from one input
// to the next, as a real breakerd's does from one client to the next.
//
// After each input the target checks, through the public surface only, that
//   - every call got its answer within its deadline, and none answered UNIMPLEMENTED (every
//     method called exists; a request that does not parse is INVALID_ARGUMENT), UNKNOWN,
//     INTERNAL or DATA_LOSS (none is the client's fault);
//   - every error message, and every observation refusal's, is at most kMaxErrorMessageBytes:
//     refusals quote only short prefixes of what was sent;
//   - every message breakerd sent parses as the rpc's response type and is at most
//     core::bounds::kMaxSentMessageBytes;
//   - health (grpc.health.v1, overall) is SERVING;
//   - GetPolicy answers OK, with at most kMaxSentMessageBytes, and policy versions never go
//     back: across inputs, nor in what one input was answered (policies, acknowledgements,
//     Report's and ListNodes' versions, the policies of a stream).
// A violation aborts, with the input's calls and their answers on stderr.
//
// Input format: frames, until the input ends (at most kMaxCalls of them).
//   METHOD LEN_HI LEN_LO BYTES         a unary call of Methods()[METHOD % 14] with BYTES (LEN
//                                      of them, fewer at the end of the input) as its request
//   METHOD COUNT {LEN_HI LEN_LO BYTES}  when METHOD % 14 names Connect (13): a stream on which
//                                      the next COUNT % 9 frames' BYTES are written as messages,
//                                      then WritesDone; every message breakerd sends is read
//                                      until it ends the stream
// Seeds are made by `tools/fuzz.sh seeds` from text-format messages and a few raw byte strings.
// Since the state carries over, an input that fails may need some of the inputs before it;
// the checks are of the answers, so replaying it alone usually fails the same way.
//
// BREAKER_FUZZ_TRACE=1 in the environment prints every call and turns breakerd's logging on.

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "breaker/v1/breaker.pb.h"
#include "breaker/v1/config.pb.h"
#include "common/fake_clock.h"
#include "core/chain_time.h"
#include "core/input_bounds.h"
#include "glog/logging.h"
#include "google/protobuf/message.h"
#include "google/protobuf/stubs/logging.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/completion_queue.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/channel_arguments.h"
#include "grpcpp/support/status.h"
#include "service/rpc/server.h"
#include "tests/support/fuzz_frames.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;

// The clock stands at the start of this slot of mainnet (Gloas from genesis); the seeds'
// observations are of the slot before.
constexpr core::Slot kStartSlot = 10'000'000;
// Bounds the work per input, as libFuzzer's -max_len bounds its size.
constexpr int kMaxCalls = 32;
constexpr int kMaxStreamMessages = 8;
// Every call's deadline; a call not answered this long after its deadline has hung.
constexpr auto kCallDeadline = std::chrono::seconds(10);
constexpr auto kHangAfter = std::chrono::seconds(10);
// Refusals name the field and its bound and quote at most a short prefix of the input.
constexpr size_t kMaxErrorMessageBytes = 1024;

// The configuration file: mainnet, Gloas from genesis, and a rate limit that the fuzzer's
// millions of observations do not exhaust while the clock stands still (the limit itself is
// bad_input_test's). Everything else at its default, as an operator starts.
constexpr char kConfig[] =
    "chain { network: \"mainnet\" gloas_fork_epoch: 0 }\n"
    "node_observation_rate: 1000000\n"
    "node_observation_burst: 10000000\n";

bool Tracing() {
  static const bool tracing = [] {
    const char* value = std::getenv("BREAKER_FUZZ_TRACE");
    return value != nullptr && *value != '\0' && *value != '0';
  }();
  return tracing;
}

// What one rpc answers, for its checks.
enum class Answers { kPolicy, kReport, kListBuilders, kBuilder, kListRelays, kListNodes, kConfig };

struct Method {
  const char* path;
  Answers answers;
};

constexpr int kConnect = 13;

// Every unary rpc of breaker/v1/breaker.proto, then Connect. Not WatchPolicy, which streams
// until the client goes and whose request is empty.
const std::vector<Method>& Methods() {
  static const auto* const methods = new std::vector<Method>{
      {"/breaker.v1.Breaker/Report", Answers::kReport},
      {"/breaker.v1.Admin/GetPolicy", Answers::kPolicy},
      {"/breaker.v1.Admin/ListBuilders", Answers::kListBuilders},
      {"/breaker.v1.Admin/GetBuilder", Answers::kBuilder},
      {"/breaker.v1.Admin/ListRelays", Answers::kListRelays},
      {"/breaker.v1.Admin/ListNodes", Answers::kListNodes},
      {"/breaker.v1.Admin/BanBuilder", Answers::kPolicy},
      {"/breaker.v1.Admin/UnbanBuilder", Answers::kPolicy},
      {"/breaker.v1.Admin/SetBuilderTrust", Answers::kPolicy},
      {"/breaker.v1.Admin/SetRelayTrust", Answers::kPolicy},
      {"/breaker.v1.Admin/Reset", Answers::kPolicy},
      {"/breaker.v1.Admin/GetConfig", Answers::kConfig},
      {"/breaker.v1.Admin/ReloadConfig", Answers::kConfig},
      {"/breaker.v1.Breaker/Connect", Answers::kPolicy},  // streams ServerMessages
  };
  return *methods;
}

using Reader = ::breaker::testing::FrameReader;

std::string ToString(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (!buffer.Dump(&slices).ok()) return bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

grpc::ByteBuffer ToBuffer(absl::string_view bytes) {
  grpc::Slice slice(bytes.data(), bytes.size());
  return grpc::ByteBuffer(&slice, 1);
}

std::string Describe(const grpc::Status& status) {
  return absl::StrCat(absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())),
                      " \"", absl::CHexEscape(core::bounds::Truncate(status.error_message(), 300)),
                      "\" (", status.error_message().size(), " bytes)");
}

// The breakerd of this process, and what its answers have shown so far.
class Harness {
 public:
  Harness() : clock_(core::StartOf(kStartSlot, Chain())) {}

  void Start() {
    const char* test_tmpdir = std::getenv("TEST_TMPDIR");
    std::string base = test_tmpdir != nullptr && *test_tmpdir != '\0'
                           ? std::string(test_tmpdir)
                           : std::filesystem::temp_directory_path().string();
    std::string pattern = base + "/rpc_fuzzer.XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) Fail(absl::StrCat("cannot create ", pattern));
    dir_ = pattern;
    const std::string config_path = dir_ + "/breakerd.textproto";
    {
      std::ofstream file(config_path, std::ios::trunc);
      file << kConfig;
      if (!file.good()) Fail(absl::StrCat("cannot write ", config_path));
    }
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.state_dir = dir_ + "/state";
    options.config_path = config_path;
    options.clock = &clock_;
    options.run_ticker = false;
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
    if (!server.ok()) Fail(absl::StrCat("Server::Start: ", server.status().ToString()));
    server_ = *std::move(server);
    grpc::ChannelArguments arguments;
    // Whatever breakerd sends is received, so that its size can be checked here.
    arguments.SetMaxReceiveMessageSize(-1);
    channel_ = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                         grpc::InsecureChannelCredentials(), arguments);
    stub_ = std::make_unique<grpc::GenericStub>(channel_);
    CheckServing();
  }

  // Stops breakerd as at a clean shutdown, and removes its directory.
  void Stop() {
    stub_.reset();
    channel_.reset();
    server_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  void Execute(Reader& reader) {
    trace_.clear();
    for (int call = 0; call < kMaxCalls && !reader.done(); ++call) {
      const size_t index = reader.Byte() % Methods().size();
      if (index == kConnect) {
        std::vector<absl::string_view> messages(reader.Byte() % (kMaxStreamMessages + 1));
        for (absl::string_view& message : messages) message = reader.Message();
        Connect(messages);
      } else {
        Unary(Methods()[index], reader.Message());
      }
    }
    CheckServing();
  }

 private:
  static core::ChainSpec Chain() {
    core::ChainSpec spec = core::ChainSpecForNetwork("mainnet").value();
    spec.gloas_fork_epoch = 0;
    return spec;
  }

  [[noreturn]] void Fail(absl::string_view what) const {
    for (const std::string& line : trace_) std::fprintf(stderr, "  %s\n", line.c_str());
    std::fprintf(stderr, "rpc invariant violated: %.*s\n", static_cast<int>(what.size()),
                 what.data());
    std::abort();
  }

  void Trace(std::string line) {
    if (Tracing()) std::fprintf(stderr, "%s\n", line.c_str());
    trace_.push_back(std::move(line));
  }

  static std::chrono::system_clock::time_point Deadline() {
    return std::chrono::system_clock::now() + kCallDeadline;
  }

  // A call's status: answered in time, by a breakerd that knows the method, with a short
  // message when it refused.
  void CheckStatus(absl::string_view method, const grpc::Status& status) const {
    switch (status.error_code()) {
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        Fail(absl::StrCat(method, " got no answer within its deadline"));
      case grpc::StatusCode::UNIMPLEMENTED:
        Fail(absl::StrCat(method, " answered UNIMPLEMENTED: ", Describe(status)));
      case grpc::StatusCode::UNKNOWN:
      case grpc::StatusCode::INTERNAL:
      case grpc::StatusCode::DATA_LOSS:
        Fail(absl::StrCat(method, " answered ", Describe(status)));
      default:
        break;
    }
    if (!status.ok() && status.error_message().empty()) {
      Fail(absl::StrCat(method, " refused without a message: ", Describe(status)));
    }
    if (status.error_message().size() > kMaxErrorMessageBytes) {
      Fail(absl::StrCat(method, " answered a message of ", status.error_message().size(),
                        " bytes: ", Describe(status)));
    }
  }

  void CheckVersion(absl::string_view what, uint64_t version) {
    if (version < version_) {
      Fail(absl::StrCat(what, ": policy version ", version, " after ", version_));
    }
    version_ = version;
  }

  void CheckPolicy(absl::string_view what, const v1::Policy& policy) {
    if (policy.version() == 0 || policy.fleet_id().empty()) {
      Fail(absl::StrCat(what, ": a policy of version ", policy.version(), " of fleet '",
                        policy.fleet_id(), "'"));
    }
    CheckVersion(what, policy.version());
  }

  void CheckAck(absl::string_view what, const v1::ObservationAck& ack) {
    for (const v1::ObservationRefusal& refusal : ack.refused()) {
      if (refusal.message().empty() || refusal.message().size() > kMaxErrorMessageBytes) {
        Fail(absl::StrCat(what, ": a refusal of sequence ", refusal.sequence(),
                          " with a message of ", refusal.message().size(), " bytes: ",
                          absl::CHexEscape(core::bounds::Truncate(refusal.message(), 300))));
      }
    }
    if (ack.policy_version() != 0) CheckVersion(what, ack.policy_version());
  }

  // Parses what breakerd sent into `message`, checking its size.
  void ParseAnswer(absl::string_view what, const std::string& bytes,
                   google::protobuf::Message& message) const {
    if (bytes.size() > core::bounds::kMaxSentMessageBytes) {
      Fail(absl::StrCat(what, " answered ", bytes.size(), " bytes; at most ",
                        core::bounds::kMaxSentMessageBytes, " are sent"));
    }
    if (!message.ParseFromString(bytes)) {
      Fail(absl::StrCat(what, " answered ", bytes.size(), " bytes that do not parse as ",
                        message.GetTypeName()));
    }
  }

  void CheckAnswer(const Method& method, const std::string& bytes) {
    switch (method.answers) {
      case Answers::kPolicy: {
        v1::Policy policy;
        ParseAnswer(method.path, bytes, policy);
        CheckPolicy(method.path, policy);
        break;
      }
      case Answers::kReport: {
        v1::ReportResponse response;
        ParseAnswer(method.path, bytes, response);
        CheckAck(method.path, response.ack());
        CheckVersion(method.path, response.policy_version());
        break;
      }
      case Answers::kListBuilders: {
        v1::ListBuildersResponse response;
        ParseAnswer(method.path, bytes, response);
        break;
      }
      case Answers::kBuilder: {
        v1::Builder response;
        ParseAnswer(method.path, bytes, response);
        break;
      }
      case Answers::kListRelays: {
        v1::ListRelaysResponse response;
        ParseAnswer(method.path, bytes, response);
        break;
      }
      case Answers::kListNodes: {
        v1::ListNodesResponse response;
        ParseAnswer(method.path, bytes, response);
        CheckVersion(method.path, response.policy_version());
        break;
      }
      case Answers::kConfig: {
        v1::Config response;
        ParseAnswer(method.path, bytes, response);
        break;
      }
    }
  }

  // Calls `path` with `request` as its serialized request; returns the status, and the
  // answer in `response`.
  grpc::Status Call(const std::string& path, absl::string_view request, std::string& response) {
    grpc::ByteBuffer request_buffer = ToBuffer(request);
    grpc::ByteBuffer response_buffer;
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    // A connection being set up again is waited for: only breakerd's answers count.
    context.set_wait_for_ready(true);
    std::promise<grpc::Status> done;
    std::future<grpc::Status> answered = done.get_future();
    stub_->UnaryCall(&context, path, grpc::StubOptions(), &request_buffer, &response_buffer,
                     [&done](grpc::Status status) { done.set_value(std::move(status)); });
    if (answered.wait_for(kCallDeadline + kHangAfter) != std::future_status::ready) {
      Fail(absl::StrCat(path, " did not end ", std::chrono::seconds(kHangAfter).count(),
                        " s after its deadline"));
    }
    grpc::Status status = answered.get();
    response = ToString(response_buffer);
    return status;
  }

  void Unary(const Method& method, absl::string_view request) {
    std::string response;
    const grpc::Status status = Call(method.path, request, response);
    Trace(absl::StrCat(method.path, " (", request.size(), " bytes): ", Describe(status),
                       status.ok() ? absl::StrCat(", ", response.size(), " bytes") : ""));
    CheckStatus(method.path, status);
    if (status.ok()) CheckAnswer(method, response);
  }

  // One Connect stream: the messages written in turn, then WritesDone, then every message
  // breakerd sends read until it ends the stream. On the completion queue's API, one
  // operation at a time.
  void Connect(const std::vector<absl::string_view>& messages) {
    const std::string path = Methods()[kConnect].path;
    std::string written;
    for (absl::string_view message : messages) absl::StrAppend(&written, " ", message.size());
    grpc::CompletionQueue queue;
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    context.set_wait_for_ready(true);
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
        stub_->PrepareCall(&context, path, &queue);
    // Waits for the one operation in flight; its success.
    auto await = [&](const char* operation) {
      void* tag = nullptr;
      bool ok = false;
      const grpc::CompletionQueue::NextStatus next =
          queue.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + kCallDeadline + kHangAfter);
      if (next != grpc::CompletionQueue::GOT_EVENT) {
        Fail(absl::StrCat(path, ": ", operation, " did not complete; messages of", written,
                          " bytes"));
      }
      return ok;
    };
    int tag = 0;
    call->StartCall(&tag);
    bool open = await("StartCall");
    size_t sent = 0;
    for (absl::string_view message : messages) {
      if (!open) break;
      grpc::ByteBuffer buffer = ToBuffer(message);
      call->Write(buffer, &tag);
      open = await("Write");
      if (open) ++sent;
    }
    if (open) {
      call->WritesDone(&tag);
      await("WritesDone");
    }
    int received = 0;
    uint64_t stream_version = 0;
    for (;;) {
      grpc::ByteBuffer buffer;
      call->Read(&buffer, &tag);
      if (!await("Read")) break;
      ++received;
      v1::ServerMessage message;
      ParseAnswer(path, ToString(buffer), message);
      if (message.has_policy()) {
        CheckPolicy(path, message.policy());
        if (message.policy().version() <= stream_version) {
          Fail(absl::StrCat(path, ": policy version ", message.policy().version(),
                            " streamed after ", stream_version));
        }
        stream_version = message.policy().version();
      } else if (message.has_observation_ack()) {
        CheckAck(path, message.observation_ack());
      }
    }
    grpc::Status status;
    call->Finish(&status, &tag);
    await("Finish");
    queue.Shutdown();
    void* ignored_tag;
    bool ignored_ok;
    while (queue.Next(&ignored_tag, &ignored_ok)) {
    }
    Trace(absl::StrCat(path, " (messages of", written, " bytes; ", sent, " written, ", received,
                       " received): ", Describe(status)));
    CheckStatus(path, status);
  }

  // After each input: breakerd serves, and its policy is within its bounds and not older.
  void CheckServing() {
    std::string response;
    // Empty request: the overall health. Answer {status: SERVING}: 08 01.
    const grpc::Status health = Call("/grpc.health.v1.Health/Check", "", response);
    if (!health.ok() || response != std::string("\x08\x01", 2)) {
      Fail(absl::StrCat("health is not SERVING: ", Describe(health), ", answer \"",
                        absl::CHexEscape(response), "\""));
    }
    const grpc::Status policy = Call(Methods()[1].path, "", response);
    if (!policy.ok()) Fail(absl::StrCat("GetPolicy: ", Describe(policy)));
    CheckAnswer(Methods()[1], response);
  }

  testing::FakeClock clock_;
  std::string dir_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<grpc::GenericStub> stub_;
  // The highest policy version answered so far.
  uint64_t version_ = 0;
  // The calls of the current input and their answers, printed when a check fails.
  std::vector<std::string> trace_;
};

Harness* TheHarness() {
  static Harness* const harness = [] {
    auto* harness = new Harness();
    harness->Start();
    // Before gRPC's and Abseil's static objects go, and only at a normal exit: a clean
    // shutdown, with its final snapshot, like breakerd's on SIGTERM.
    std::atexit([] { TheHarness()->Stop(); });
    return harness;
  }();
  return harness;
}

}  // namespace
}  // namespace breaker::service

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // breakerd logs every refusal, and a fuzzer makes millions.
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = breaker::service::Tracing() ? 0 : google::GLOG_FATAL;
  // Protobuf logs every string field that is not UTF-8 (the message is refused all the same).
  if (!breaker::service::Tracing()) google::protobuf::SetLogHandler(nullptr);
  breaker::service::TheHarness();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  breaker::service::Reader reader(data, size);
  breaker::service::TheHarness()->Execute(reader);
  return 0;
}
