// Hostile and broken input across breakerd's API, one table row each: what is sent, the error it
// must get (the call's or stream's status, or the observation's refusal), and, after every row,
// a state and policy exactly as before.

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "core/input_bounds.h"
#include "core/types.h"
#include "google/protobuf/unknown_field_set.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "service/rpc/server.h"
#include "service/rpc/server_test_support.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::testing::IsOk;
using ::breaker::testing::WaitFor;
using ::google::protobuf::util::MessageDifferencer;
using test_support::Bans;
using test_support::Bid;
using test_support::kSlot;
using test_support::kStartEpoch;
using test_support::kStartSlot;
using test_support::Missing;
using test_support::NodeClient;
using test_support::Root;
using test_support::ServerTest;
using ::testing::HasSubstr;

// Small limits, so that the rows can reach them; builder 3 is blacklisted by the configuration.
constexpr char kLimits[] =
    "blacklisted_builders: 3\n"
    "max_connected_nodes: 4\n"
    "node_observation_rate: 10\n"
    "node_observation_burst: 1000\n";

// What a bad input got: the status of the call or stream, or the first refusal listed in the
// observations' acknowledgement (OK when none).
struct Outcome {
  absl::StatusCode code = absl::StatusCode::kOk;
  std::string message;
};

Outcome FromStatus(const absl::Status& status) {
  return Outcome{status.code(), std::string(status.message())};
}

v1::NodeMessage HelloMessage(const std::string& node_id, const std::string& network = "mainnet") {
  v1::NodeMessage message;
  message.mutable_hello()->set_node_id(node_id);
  message.mutable_hello()->set_network(network);
  return message;
}

v1::NodeMessage Batch(const std::vector<v1::Observation>& observations) {
  v1::NodeMessage message;
  for (const v1::Observation& observation : observations) {
    *message.mutable_observations()->add_observations() = observation;
  }
  return message;
}

// `count` valid observations that change nothing (a missing payload attested too little to be
// a failure), numbered from `first`.
std::vector<v1::Observation> NoEffect(uint64_t first, int count) {
  std::vector<v1::Observation> observations;
  for (int i = 0; i < count; ++i) observations.push_back(Missing(first + i, 5, 'n', 0.1));
  return observations;
}

// A message (or observation) holding only a field this build does not know: what a newer
// client's new kind of message looks like here.
template <typename Message>
void AddUnknownField(Message& message) {
  message.GetReflection()->MutableUnknownFields(&message)->AddVarint(99, 1);
}

// A bid through a relay whose identifier is `bytes` long: one message larger than 1 MiB.
v1::Observation HugeBid(uint64_t sequence) {
  return Bid(sequence, 5, "https://relay.example/" + std::string(2 << 20, 'a'));
}

class BadInputTest : public ServerTest {
 public:
  // The rows' inputs are lambdas given the fixture: what they use is public.
  using ServerTest::BanBuilder;
  using ServerTest::Call;
  using ServerTest::config_path_;
  using ServerTest::ConnectedNode;
  using ServerTest::FindNode;
  using ServerTest::GetBuilder;
  using ServerTest::ReloadConfig;
  using ServerTest::UnbanBuilder;
  using ServerTest::WriteConfig;

  // Sends `messages` on a new stream and returns how the server ended it.
  Outcome StreamEnd(const std::vector<v1::NodeMessage>& messages) {
    NodeClient node(channel_);
    for (const v1::NodeMessage& message : messages) {
      if (!node.Send(message)) break;  // the server has ended the stream already
    }
    return FromStatus(::breaker::testing::FromGrpc(node.AwaitEnd()));
  }

  // Calls `method` with `bytes` as its serialized request, as a client not built on these
  // protos may.
  Outcome RawUnary(const std::string& method, const std::string& bytes) {
    grpc::GenericStub stub(channel_);
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    grpc::ClientContext context;
    context.set_deadline(test_support::Deadline());
    std::promise<grpc::Status> done;
    stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                   [&done](grpc::Status status) { done.set_value(std::move(status)); });
    return FromStatus(::breaker::testing::FromGrpc(done.get_future().get()));
  }

  // Connects `node_id`, sends each batch and waits for its acknowledgement, and returns the
  // first refusal listed. The stream must survive: it ends with OK when the node closes it.
  Outcome Refusal(const std::string& node_id,
                  const std::vector<std::vector<v1::Observation>>& batches) {
    std::unique_ptr<NodeClient> node = ConnectedNode(node_id);
    Outcome outcome;
    bool refused = false;
    for (const std::vector<v1::Observation>& batch : batches) {
      if (!node->Observe(batch)) return Outcome{absl::StatusCode::kAborted, "stream ended"};
      std::optional<v1::ServerMessage> message;
      // Read until this batch's acknowledgement (sequence 0 is acknowledged as 0 too).
      while ((message = node->Read()).has_value() && !message->has_observation_ack()) {
        if (message->has_policy()) node->AckPolicy(message->policy().version());
      }
      if (!message.has_value()) return Outcome{absl::StatusCode::kAborted, "stream ended"};
      const v1::ObservationAck& ack = message->observation_ack();
      uint64_t highest = 0;
      for (const v1::Observation& observation : batch) {
        highest = std::max(highest, observation.sequence());
      }
      EXPECT_EQ(ack.sequence(), highest) << "the acknowledgement covers the whole batch";
      if (!refused && ack.refused_size() > 0) {
        refused = true;
        outcome =
            Outcome{static_cast<absl::StatusCode>(ack.refused(0).code()), ack.refused(0).message()};
      }
    }
    EXPECT_TRUE(node->Close().ok()) << "the stream survives a refused observation";
    return outcome;
  }

  Outcome ReportOutcome(const std::string& node_id,
                        const std::vector<v1::Observation>& observations) {
    std::unique_ptr<v1::Breaker::Stub> stub = v1::Breaker::NewStub(channel_);
    absl::StatusOr<v1::ReportResponse> response = Report(*stub, node_id, observations);
    if (!response.ok()) return FromStatus(response.status());
    if (response->ack().refused_size() == 0) return Outcome();
    return Outcome{static_cast<absl::StatusCode>(response->ack().refused(0).code()),
                   response->ack().refused(0).message()};
  }

  // Writes `text` (after the chain and the limits) as the configuration file, asks for a
  // reload, and puts the good file back.
  Outcome ReloadWith(const std::string& text) {
    WriteConfig(std::string(kLimits) + text);
    const Outcome outcome = FromStatus(ReloadConfig().status());
    WriteConfig(kLimits);
    return outcome;
  }

  // Everything a bad input must leave as it was.
  struct State {
    v1::Policy policy;
    v1::ListBuildersResponse builders;
    v1::ListRelaysResponse relays;
    v1::Config config;
  };

  State Snapshot() {
    server_->fleet()->Sync();
    return State{GetPolicy(), ListBuilders(), ListRelays(), GetConfig()};
  }

  void ExpectUnchanged(const State& before) {
    const State after = Snapshot();
    EXPECT_TRUE(MessageDifferencer::Equals(after.policy, before.policy))
        << "policy was\n"
        << before.policy.DebugString() << "is\n"
        << after.policy.DebugString();
    EXPECT_TRUE(MessageDifferencer::Equals(after.builders, before.builders))
        << after.builders.DebugString();
    EXPECT_TRUE(MessageDifferencer::Equals(after.relays, before.relays))
        << after.relays.DebugString();
    EXPECT_TRUE(MessageDifferencer::Equals(after.config, before.config));
  }

  // No node holds a stream: the earlier rows' streams have ended on the server's side too.
  bool NoNodeConnected() {
    const v1::ListNodesResponse nodes = ListNodes();
    for (const v1::Node& node : nodes.nodes()) {
      if (node.connected()) return false;
    }
    return true;
  }
};

struct Row {
  std::string name;
  std::function<Outcome(BadInputTest&)> input;
  absl::StatusCode code;
  std::string message;
};

// Runs each row: its input gets its status and message, and changes neither state nor policy.
void RunRows(BadInputTest& test, const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const BadInputTest::State before = test.Snapshot();
    const Outcome outcome = row.input(test);
    EXPECT_EQ(outcome.code, row.code) << outcome.message;
    EXPECT_THAT(outcome.message, HasSubstr(row.message));
    test.ExpectUnchanged(before);
  }
}

TEST_F(BadInputTest, EveryBadInputGetsItsErrorAndChangesNothing) {
  StartServer(kLimits);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  v1::Observation short_root = Missing(1, 5, 'a');
  short_root.mutable_payload_missing()->set_block_root("0x1234");
  v1::Observation no_event;
  no_event.set_sequence(1);
  no_event.set_slot(kSlot);
  v1::Observation unknown_event = no_event;
  AddUnknownField(unknown_event);
  v1::NodeMessage unknown_kind;
  AddUnknownField(unknown_kind);
  v1::NodeMessage policy_ack;
  policy_ack.mutable_policy_ack()->set_version(1);

  const std::vector<Row> rows = {
      // --- Connect: the stream is refused ---
      {"missing hello: observations first",
       [](BadInputTest& t) { return t.StreamEnd({Batch({Missing(1, 5, 'a')})}); },
       absl::StatusCode::kInvalidArgument, "must be a hello"},
      {"second hello",
       [](BadInputTest& t) {
         return t.StreamEnd({HelloMessage("n1"), HelloMessage("n1")});
       },
       absl::StatusCode::kInvalidArgument, "second hello"},
      {"empty node id", [](BadInputTest& t) { return t.StreamEnd({HelloMessage("")}); },
       absl::StatusCode::kInvalidArgument, "node_id is empty"},
      {"a node id that begins with a space",
       [](BadInputTest& t) { return t.StreamEnd({HelloMessage(" bn-sp")}); },
       absl::StatusCode::kInvalidArgument, "hello.node_id \" bn-sp\" begins with a space"},
      {"a node id of a space alone",
       [](BadInputTest& t) { return t.StreamEnd({HelloMessage(" ")}); },
       absl::StatusCode::kInvalidArgument, "hello.node_id \" \" begins with a space"},
      {"a network name with a NUL byte",
       [](BadInputTest& t) {
         return t.StreamEnd({HelloMessage("n2", std::string("main\0net", 8))});
       },
       absl::StatusCode::kInvalidArgument, "hello.network \"main\\x00net\" has byte 0x00"},
      {"unknown network",
       [](BadInputTest& t) { return t.StreamEnd({HelloMessage("n2", "hoodi")}); },
       absl::StatusCode::kInvalidArgument, "hello.network is 'hoodi'"},
      {"empty NodeMessage",
       [](BadInputTest& t) {
         return t.StreamEnd({HelloMessage("n3"), v1::NodeMessage()});
       },
       absl::StatusCode::kInvalidArgument, "empty NodeMessage"},
      {"oversized batch (1001 observations)",
       [](BadInputTest& t) {
         return t.StreamEnd({HelloMessage("n4"), Batch(NoEffect(1, 1001))});
       },
       absl::StatusCode::kInvalidArgument, "send at most 1000"},
      {"message larger than the maximum size",
       [](BadInputTest& t) {
         return t.StreamEnd({HelloMessage("n5"), Batch({HugeBid(1)})});
       },
       absl::StatusCode::kResourceExhausted, "larger than max"},
      {"duplicate node id: the first stream is replaced",
       [](BadInputTest& t) {
         std::unique_ptr<NodeClient> first = t.ConnectedNode("dup");
         std::unique_ptr<NodeClient> second = t.ConnectedNode("dup");
         const Outcome outcome = FromStatus(::breaker::testing::FromGrpc(first->AwaitEnd()));
         EXPECT_TRUE(second->Close().ok());
         return outcome;
       },
       absl::StatusCode::kAborted, "replaced"},
      {"too many nodes connected",
       [](BadInputTest& t) {
         EXPECT_TRUE(WaitFor([&t] { return t.NoNodeConnected(); }));
         std::vector<std::unique_ptr<NodeClient>> nodes;
         for (int i = 0; i < 4; ++i) nodes.push_back(t.ConnectedNode("cap-" + std::to_string(i)));
         const Outcome outcome = t.StreamEnd({HelloMessage("cap-4")});
         // A node already connected may still replace its stream.
         std::unique_ptr<NodeClient> again = t.ConnectedNode("cap-0");
         EXPECT_TRUE(again->Close().ok());
         return outcome;
       },
       absl::StatusCode::kResourceExhausted, "max_connected_nodes (4)"},
      // --- Connect: the stream survives ---
      {"a NodeMessage of an unknown kind (a newer client's) is ignored",
       [unknown_kind, policy_ack](BadInputTest& t) {
         std::unique_ptr<NodeClient> node = t.ConnectedNode("n6");
         EXPECT_TRUE(node->Send(unknown_kind));
         EXPECT_TRUE(node->Send(policy_ack));
         return FromStatus(::breaker::testing::FromGrpc(node->Close()));
       },
       absl::StatusCode::kOk, ""},
      {"over the rate limit",
       [](BadInputTest& t) {
         return t.Refusal("n7", {NoEffect(1, 1000), NoEffect(1001, 5)});
       },
       absl::StatusCode::kResourceExhausted, "node_observation_rate 10"},
      {"replayed sequence numbers are acknowledged and ignored",
       [](BadInputTest& t) {
         return t.Refusal("n8", {NoEffect(5, 1), {Missing(5, 5, 'r'), Missing(4, 6, 's')}});
       },
       absl::StatusCode::kOk, ""},
      // --- Connect: one observation is refused ---
      {"slot far in the future",
       [](BadInputTest& t) {
         return t.Refusal("o1", {{Missing(1, 5, 'a', 0.9, kStartSlot + 100)}});
       },
       absl::StatusCode::kOutOfRange, "max_future_slots"},
      {"slot older than the window",
       [](BadInputTest& t) {
         return t.Refusal("o2", {{Missing(1, 5, 'a', 0.9, kStartSlot - 200)}});
       },
       absl::StatusCode::kOutOfRange, "amendment window"},
      {"self-build index in a failure",
       [](BadInputTest& t) { return t.Refusal("o3", {{Missing(1, core::kSelfBuild, 'a')}}); },
       absl::StatusCode::kInvalidArgument, "self-build index"},
      {"NaN attested fraction",
       [nan](BadInputTest& t) { return t.Refusal("o4", {{Missing(1, 5, 'a', nan)}}); },
       absl::StatusCode::kInvalidArgument, "attested_fraction is nan"},
      {"attested fraction above 1",
       [](BadInputTest& t) { return t.Refusal("o5", {{Missing(1, 5, 'a', 1.5)}}); },
       absl::StatusCode::kInvalidArgument, "attested_fraction is 1.5"},
      {"attested fraction below 0",
       [](BadInputTest& t) { return t.Refusal("o6", {{Missing(1, 5, 'a', -0.25)}}); },
       absl::StatusCode::kInvalidArgument, "attested_fraction is -0.25"},
      {"malformed relay identifier",
       [](BadInputTest& t) { return t.Refusal("o7", {{Bid(1, 5, "ftp://relay example")}}); },
       absl::StatusCode::kInvalidArgument, "relay"},
      {"block root of the wrong length",
       [short_root](BadInputTest& t) { return t.Refusal("o8", {{short_root}}); },
       absl::StatusCode::kInvalidArgument, "block_root is 6 bytes"},
      {"sequence 0", [](BadInputTest& t) { return t.Refusal("o9", {{Missing(0, 5, 'a')}}); },
       absl::StatusCode::kInvalidArgument, "sequence"},
      {"observation with no event",
       [no_event](BadInputTest& t) { return t.Refusal("o10", {{no_event}}); },
       absl::StatusCode::kInvalidArgument, "has no event"},
      {"observation with only an unknown event (a newer client's)",
       [unknown_event](BadInputTest& t) { return t.Refusal("o11", {{unknown_event}}); },
       absl::StatusCode::kInvalidArgument, "newer than this breakerd"},
      // --- Report ---
      {"Report: empty node id",
       [](BadInputTest& t) { return t.ReportOutcome("", {Missing(1, 5, 'a')}); },
       absl::StatusCode::kInvalidArgument, "node_id is empty"},
      {"Report: oversized batch",
       [](BadInputTest& t) { return t.ReportOutcome("r1", NoEffect(1, 1001)); },
       absl::StatusCode::kInvalidArgument, "send at most 1000"},
      {"Report: message larger than the maximum size",
       [](BadInputTest& t) { return t.ReportOutcome("r2", {HugeBid(1)}); },
       absl::StatusCode::kResourceExhausted, "larger than max"},
      {"Report: NaN attested fraction",
       [nan](BadInputTest& t) { return t.ReportOutcome("r3", {Missing(1, 5, 'a', nan)}); },
       absl::StatusCode::kInvalidArgument, "attested_fraction is nan"},
      {"Report: over the rate limit",
       [](BadInputTest& t) {
         EXPECT_EQ(t.ReportOutcome("r4", NoEffect(1, 1000)).code, absl::StatusCode::kOk);
         return t.ReportOutcome("r4", NoEffect(1001, 1));
       },
       absl::StatusCode::kResourceExhausted, "over its observation rate"},
      // --- Admin ---
      {"ban the self-build index",
       [](BadInputTest& t) { return FromStatus(t.BanBuilder(core::kSelfBuild, "x").status()); },
       absl::StatusCode::kInvalidArgument, "self-build"},
      {"ban with an empty reason",
       [](BadInputTest& t) { return FromStatus(t.BanBuilder(9, "").status()); },
       absl::StatusCode::kInvalidArgument, "reason"},
      {"ban until an epoch in the past",
       [](BadInputTest& t) { return FromStatus(t.BanBuilder(9, "x", kStartEpoch - 1).status()); },
       absl::StatusCode::kInvalidArgument, "epoch"},
      {"unban a builder that is not banned",
       [](BadInputTest& t) { return FromStatus(t.UnbanBuilder(9).status()); },
       absl::StatusCode::kNotFound, "not banned"},
      {"unban a blacklisted builder",
       [](BadInputTest& t) { return FromStatus(t.UnbanBuilder(3).status()); },
       absl::StatusCode::kFailedPrecondition, "configured blacklist"},
      {"trust a malformed relay",
       [](BadInputTest& t) {
         v1::SetRelayTrustRequest request;
         request.set_relay("ftp://relay example");
         request.set_trusted(true);
         return FromStatus(t.Call(&v1::Admin::Stub::async::SetRelayTrust, request).status());
       },
       absl::StatusCode::kInvalidArgument, "relay"},
      {"trust the self-build index",
       [](BadInputTest& t) {
         v1::SetBuilderTrustRequest request;
         request.set_builder_index(core::kSelfBuild);
         request.set_trusted(true);
         return FromStatus(t.Call(&v1::Admin::Stub::async::SetBuilderTrust, request).status());
       },
       absl::StatusCode::kInvalidArgument, "self-build"},
      {"GetBuilder of the self-build index",
       [](BadInputTest& t) { return FromStatus(t.GetBuilder(core::kSelfBuild).status()); },
       absl::StatusCode::kInvalidArgument, "self-build"},
      {"reload: syntax error",
       [](BadInputTest& t) { return t.ReloadWith("critical_failures: :\n"); },
       absl::StatusCode::kInvalidArgument, "breakerd.textproto:6:"},
      {"reload: invalid value",
       [](BadInputTest& t) { return t.ReloadWith("attestation_threshold: 1.5\n"); },
       absl::StatusCode::kInvalidArgument, "attestation_threshold is 1.5"},
      {"reload: invalid limit",
       [](BadInputTest& t) {
         t.WriteConfig("node_observation_burst: 10\n");
         const Outcome outcome = FromStatus(t.ReloadConfig().status());
         t.WriteConfig(kLimits);
         return outcome;
       },
       absl::StatusCode::kInvalidArgument, "node_observation_burst is 10"},
      {"reload: missing file",
       [](BadInputTest& t) {
         std::filesystem::remove(t.config_path_);
         const Outcome outcome = FromStatus(t.ReloadConfig().status());
         t.WriteConfig(kLimits);
         return outcome;
       },
       absl::StatusCode::kNotFound, "does not exist"},
  };
  ASSERT_GE(rows.size(), 25u);

  RunRows(*this, rows);
}

TEST_F(BadInputTest, TheRateLimitRefillsWithTheFleetClock) {
  StartServer(kLimits);
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  std::optional<v1::ObservationAck> ack = node->ObserveAndAwaitAck(NoEffect(1, 1000));
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->refused_size(), 0);
  ack = node->ObserveAndAwaitAck(NoEffect(1001, 20));
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->refused_size(), 20);

  // Two seconds later, 20 more tokens: the first 20 of 25 pass.
  clock_.Advance(absl::Seconds(2));
  ack = node->ObserveAndAwaitAck(NoEffect(1021, 25));
  ASSERT_TRUE(ack.has_value());
  ASSERT_EQ(ack->refused_size(), 5);
  EXPECT_EQ(ack->refused(0).sequence(), 1041u);
  EXPECT_EQ(ack->refused(0).code(), static_cast<int>(absl::StatusCode::kResourceExhausted));

  // The observations within the rate are applied: a failure bans.
  clock_.Advance(absl::Seconds(1));
  ack = node->ObserveAndAwaitAck({Missing(1046, 8, 'f')});
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->refused_size(), 0);
  EXPECT_TRUE(Bans(GetPolicy(), 8));
}

// The bytes of every file under `dir`.
uintmax_t TotalBytes(const std::string& dir) {
  uintmax_t total = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) total += entry.file_size();
  }
  return total;
}

// A bid whose builder key is `key_bytes` long: refused for its content whatever the state.
v1::Observation BidWithKeyOf(uint64_t sequence, size_t key_bytes) {
  v1::Observation bid = Bid(sequence, 5, "https://relay.example");
  bid.mutable_bid_seen()->set_builder_pubkey(std::string(key_bytes, 'k'));
  return bid;
}

TEST_F(BadInputTest, ObservationsRefusedForTheirContentAreNeverStored) {
  StartServer(kLimits);
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  ASSERT_TRUE(node->ObserveAndAwaitAck(NoEffect(1, 1)).has_value());
  const std::string state = dir_ + "/state";
  const uintmax_t before = TotalBytes(state);

  // A batch refused whole: nothing is written at all.
  std::optional<v1::ObservationAck> ack =
      node->ObserveAndAwaitAck({BidWithKeyOf(2, 1 << 18), BidWithKeyOf(3, 1 << 18)});
  ASSERT_TRUE(ack.has_value());
  ASSERT_EQ(ack->refused_size(), 2);
  EXPECT_EQ(ack->refused(0).code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ack->refused(0).message(), HasSubstr("bid_seen.builder_pubkey"));
  EXPECT_EQ(TotalBytes(state), before);

  // Beside an accepted observation, the refused ones are cut from what the journal stores:
  // the directory grows by far less than one refused key.
  ack = node->ObserveAndAwaitAck({Missing(4, 5, 'n', 0.1), BidWithKeyOf(5, 1 << 18)});
  ASSERT_TRUE(ack.has_value());
  ASSERT_EQ(ack->refused_size(), 1);
  EXPECT_EQ(ack->refused(0).sequence(), 5u);
  EXPECT_LT(TotalBytes(state), before + (1 << 16));

  // What was refused for its content took no number, live or replayed from the journal: sent
  // again, it is refused again rather than taken for a replay.
  EXPECT_EQ(GetNode("bn-1").last_sequence(), 4u);
  Restart();
  EXPECT_EQ(GetNode("bn-1").last_sequence(), 4u);
  node = ConnectedNode("bn-1");
  ack = node->ObserveAndAwaitAck({BidWithKeyOf(5, 7)});
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->refused_size(), 1);
  EXPECT_EQ(ack->replayed(), 0u);
}

TEST_F(BadInputTest, ALargeLegitimateBatchFitsTheMessageSize) {
  StartServer(kLimits);
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  // 1000 bids with public keys, through a relay whose URL is 200 characters long.
  std::string host;
  for (char label = 'a'; label < 'e'; ++label) host += std::string(40, label) + ".";
  const std::string relay = "https://" + host + "example:18550";
  std::vector<v1::Observation> batch;
  for (uint64_t sequence = 1; sequence <= 1000; ++sequence) {
    v1::Observation bid = Bid(sequence, 1'000'000 + sequence % 16, relay);
    bid.mutable_bid_seen()->set_builder_pubkey(std::string(48, static_cast<char>(sequence % 16)));
    batch.push_back(bid);
  }
  EXPECT_LT(Batch(batch).ByteSizeLong(), 1u << 19) << "half the limit";
  std::optional<v1::ObservationAck> ack = node->ObserveAndAwaitAck(batch);
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->refused_size(), 0);
}

TEST_F(BadInputTest, NewNodeIdsBeyondMaxKnownNodesAreRefused) {
  StartServer(std::string(kLimits) + "max_known_nodes: 3\n");
  for (const char* node : {"r1", "r2", "r3"}) {
    EXPECT_EQ(ReportOutcome(node, NoEffect(1, 1)).code, absl::StatusCode::kOk) << node;
  }
  const State before = Snapshot();
  Outcome outcome = ReportOutcome("r4", NoEffect(1, 1));
  EXPECT_EQ(outcome.code, absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(outcome.message, HasSubstr("max_known_nodes (3)"));
  EXPECT_THAT(outcome.message, HasSubstr("raise max_known_nodes"));
  // A stream's hello counts likewise.
  outcome = StreamEnd({HelloMessage("c5")});
  EXPECT_EQ(outcome.code, absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(outcome.message, HasSubstr("max_known_nodes (3)"));
  // Known nodes are never refused.
  EXPECT_EQ(ReportOutcome("r1", NoEffect(2, 1)).code, absl::StatusCode::kOk);
  ExpectUnchanged(before);
  EXPECT_EQ(ListNodes().nodes_size(), 3);

  // The nodes the stored state remembers count after a restart too.
  Restart();
  EXPECT_EQ(ReportOutcome("r4", NoEffect(1, 1)).code, absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ReportOutcome("r2", NoEffect(2, 1)).code, absl::StatusCode::kOk);
  // Raising the limit admits the next node.
  WriteConfig(std::string(kLimits) + "max_known_nodes: 4\n");
  ASSERT_THAT(ReloadConfig(), IsOk());
  EXPECT_EQ(ReportOutcome("r4", NoEffect(1, 1)).code, absl::StatusCode::kOk);
  EXPECT_EQ(ListNodes().nodes_size(), 4);
}

TEST_F(BadInputTest, TheTrackedBuildersCapNeverDropsAnActiveBan) {
  StartServer(std::string(kLimits) + "max_tracked_builders: 16\n");
  std::unique_ptr<NodeClient> node = ConnectedNode("bn-1");
  std::vector<v1::Observation> failures;
  for (int i = 0; i < 16; ++i) failures.push_back(Missing(i + 1, 100 + i, 'A' + i));
  std::optional<v1::ObservationAck> ack = node->ObserveAndAwaitAck(failures);
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->refused_size(), 0);
  ack = node->ObserveAndAwaitAck({Missing(17, 200, 'z')});
  ASSERT_TRUE(ack.has_value());
  ASSERT_EQ(ack->refused_size(), 1);
  EXPECT_EQ(ack->refused(0).code(), static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(ack->refused(0).message(), HasSubstr("max_tracked_builders (16)"));
  EXPECT_THAT(ack->refused(0).message(), HasSubstr("raise the cap"));
  const v1::Policy policy = GetPolicy();
  for (int i = 0; i < 16; ++i) EXPECT_TRUE(Bans(policy, 100 + i)) << 100 + i;
  EXPECT_FALSE(Bans(policy, 200));
}

}  // namespace
}  // namespace breaker::service

namespace breaker::service {
namespace {

// A hello whose fields are set one by one.
v1::NodeMessage HelloWith(const std::string& node_id, const std::string& client_version,
                          const std::string& network, const std::string& fleet_id) {
  v1::NodeMessage message;
  message.mutable_hello()->set_node_id(node_id);
  message.mutable_hello()->set_client_version(client_version);
  message.mutable_hello()->set_network(network);
  message.mutable_hello()->set_fleet_id(fleet_id);
  return message;
}

// A relay identifier of exactly `bytes` bytes.
std::string RelayOfLength(size_t bytes) {
  std::string relay = "https://relay.example/";
  relay.resize(bytes, 'p');
  return relay;
}

v1::Observation KeyedBid(uint64_t sequence, const std::string& key) {
  v1::Observation bid = Bid(sequence, 5, "");
  bid.mutable_bid_seen()->set_builder_pubkey(key);
  return bid;
}

v1::Observation RootsSeen(uint64_t sequence, int roots) {
  v1::Observation observation;
  observation.set_sequence(sequence);
  observation.set_slot(kSlot);
  for (int i = 0; i < roots; ++i) {
    observation.mutable_blocks_seen()->add_block_roots(Root(static_cast<char>('a' + i % 26)));
  }
  return observation;
}

v1::Observation RevealMissing(uint64_t sequence, const std::string& relay) {
  v1::Observation observation;
  observation.set_sequence(sequence);
  observation.set_slot(kSlot);
  observation.mutable_relay_reveal_missing()->set_relay(relay);
  observation.mutable_relay_reveal_missing()->set_block_root(Root('z'));
  return observation;
}

// The server options breakerd's flags make, with one changed.
Outcome Flags(const std::function<void(ServerOptions&)>& change) {
  ServerOptions options;
  change(options);
  return FromStatus(CheckServerOptions(options));
}

TEST_F(BadInputTest, EveryInputPastItsBoundIsRefusedAndChangesNothing) {
  StartServer(kLimits);
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const std::string huge_network(200 << 10, 'n');
  const std::vector<Row> rows = {
      // --- Connect: the hello's strings ---
      {"node id one past its bound",
       [](BadInputTest& t) { return t.StreamEnd({HelloMessage(std::string(129, 'n'))}); },
       absl::StatusCode::kInvalidArgument, "hello.node_id is 129 bytes"},
      {"node id forging a log line",
       [](BadInputTest& t) { return t.StreamEnd({HelloMessage("bn-1\nE1201 00:00:00 forged")}); },
       absl::StatusCode::kInvalidArgument, "printable ASCII"},
      {"node id with a DEL byte",
       [](BadInputTest& t) { return t.StreamEnd({HelloMessage("bn\x7f")}); },
       absl::StatusCode::kInvalidArgument, "0x7f at offset 2"},
      {"client version one past its bound",
       [](BadInputTest& t) {
         return t.StreamEnd({HelloWith("h1", std::string(129, 'v'), "mainnet", "")});
       },
       absl::StatusCode::kInvalidArgument, "hello.client_version is 129 bytes"},
      {"network one past its bound",
       [](BadInputTest& t) { return t.StreamEnd({HelloWith("h2", "", std::string(65, 'n'), "")}); },
       absl::StatusCode::kInvalidArgument, "hello.network is 65 bytes"},
      {"a 200 KB network is refused with a short message",
       [huge_network](BadInputTest& t) {
         const Outcome outcome = t.StreamEnd({HelloWith("h3", "", huge_network, "")});
         EXPECT_LT(outcome.message.size(), 200u);
         return outcome;
       },
       absl::StatusCode::kInvalidArgument, "hello.network is 204800 bytes"},
      {"fleet id one past its bound",
       [](BadInputTest& t) {
         return t.StreamEnd({HelloWith("h4", "", "mainnet", std::string(65, 'f'))});
       },
       absl::StatusCode::kInvalidArgument, "hello.fleet_id is 65 bytes"},
      // --- Connect: one observation is refused ---
      {"public key one short",
       [](BadInputTest& t) { return t.Refusal("k1", {{KeyedBid(1, std::string(47, 'k'))}}); },
       absl::StatusCode::kInvalidArgument, "bid_seen.builder_pubkey is 47 bytes"},
      {"public key one long",
       [](BadInputTest& t) { return t.Refusal("k2", {{KeyedBid(1, std::string(49, 'k'))}}); },
       absl::StatusCode::kInvalidArgument, "bid_seen.builder_pubkey is 49 bytes"},
      {"relay identifier one past its bound",
       [](BadInputTest& t) { return t.Refusal("k3", {{Bid(1, 5, RelayOfLength(513))}}); },
       absl::StatusCode::kInvalidArgument, "is 513 bytes; accepted: at most 512"},
      {"reveal failure of a relay identifier past its bound",
       [](BadInputTest& t) { return t.Refusal("k4", {{RevealMissing(1, RelayOfLength(4096))}}); },
       absl::StatusCode::kInvalidArgument, "is 4096 bytes"},
      {"65 block roots for one slot",
       [](BadInputTest& t) { return t.Refusal("k5", {{RootsSeen(1, 65)}}); },
       absl::StatusCode::kInvalidArgument, "blocks_seen.block_roots lists 65 entries"},
      {"sequence 2^64-1 is refused and does not silence the node",
       [](BadInputTest& t) {
         const Outcome outcome = t.Refusal("k6", {{Missing(kMax, 5, 'a', 0.1)}});
         // Its next observation, numbered as usual, is handled, not taken as a replay.
         EXPECT_EQ(t.Refusal("k6", {NoEffect(2, 1)}).code, absl::StatusCode::kOk);
         std::optional<v1::Node> node = t.FindNode("k6");
         EXPECT_TRUE(node.has_value() && node->last_sequence() == 2);
         return outcome;
       },
       absl::StatusCode::kInvalidArgument, "accepted: 1..4611686018427387904"},
      {"sequence one past 2^62",
       [](BadInputTest& t) {
         return t.Refusal("k7", {{Missing((uint64_t{1} << 62) + 1, 5, 'a', 0.1)}});
       },
       absl::StatusCode::kInvalidArgument, "observation.sequence is 4611686018427387905"},
      // --- Report ---
      {"Report: node id one past its bound",
       [](BadInputTest& t) { return t.ReportOutcome(std::string(129, 'r'), NoEffect(1, 1)); },
       absl::StatusCode::kInvalidArgument, "node_id is 129 bytes"},
      {"Report: node id with a control character",
       [](BadInputTest& t) { return t.ReportOutcome("r\tx", NoEffect(1, 1)); },
       absl::StatusCode::kInvalidArgument, "0x09 at offset 1"},
      {"Report: public key of the wrong length",
       [](BadInputTest& t) { return t.ReportOutcome("r5", {KeyedBid(1, "short")}); },
       absl::StatusCode::kInvalidArgument, "bid_seen.builder_pubkey is 5 bytes"},
      // --- Admin ---
      {"ban reason one past its bound",
       [](BadInputTest& t) { return FromStatus(t.BanBuilder(9, std::string(1025, 'r')).status()); },
       absl::StatusCode::kInvalidArgument, "reason is 1025 bytes"},
      {"ban until more than 2^20 epochs ahead",
       [](BadInputTest& t) {
         return FromStatus(t.BanBuilder(9, "x", kStartEpoch + (uint64_t{1} << 20) + 1).status());
       },
       absl::StatusCode::kInvalidArgument, "more than 1048576 epochs ahead"},
      {"ban until epoch 2^64-1: forever has one spelling",
       [](BadInputTest& t) { return FromStatus(t.BanBuilder(9, "x", kMax).status()); },
       absl::StatusCode::kInvalidArgument, "or none for a ban until unbanned"},
      {"reset reason past its bound",
       [](BadInputTest& t) {
         v1::ResetRequest request;
         request.set_reason(std::string(5000, 'r'));
         return FromStatus(t.Call(&v1::Admin::Stub::async::Reset, request).status());
       },
       absl::StatusCode::kInvalidArgument, "reason is 5000 bytes"},
      {"trust a relay identifier past its bound",
       [](BadInputTest& t) {
         v1::SetRelayTrustRequest request;
         request.set_relay(RelayOfLength(4096));
         request.set_trusted(true);
         return FromStatus(t.Call(&v1::Admin::Stub::async::SetRelayTrust, request).status());
       },
       absl::StatusCode::kInvalidArgument, "relay is 4096 bytes"},
      {"ListBuilders with a page token breakerd did not give out",
       [](BadInputTest& t) {
         v1::ListBuildersRequest request;
         request.set_page_token("0:99999999999999999999999");
         return FromStatus(t.Call(&v1::Admin::Stub::async::ListBuilders, request).status());
       },
       absl::StatusCode::kInvalidArgument, "page_token"},
      {"ListNodes with a page token breakerd did not give out",
       [](BadInputTest& t) {
         v1::ListNodesRequest request;
         request.set_page_token("bogus-token");
         return FromStatus(t.Call(&v1::Admin::Stub::async::ListNodes, request).status());
       },
       absl::StatusCode::kInvalidArgument, "\"bogus-token\" is not one this breakerd gave out"},
      {"ListNodes with a page token past its bound",
       [](BadInputTest& t) {
         v1::ListNodesRequest request;
         request.set_page_token(std::string(300, 't'));
         return FromStatus(t.Call(&v1::Admin::Stub::async::ListNodes, request).status());
       },
       absl::StatusCode::kInvalidArgument, "page_token is 300 bytes"},
      {"a unary request that does not parse",
       [](BadInputTest& t) { return t.RawUnary("/breaker.v1.Admin/BanBuilder", "\xff\xff\xff"); },
       absl::StatusCode::kInvalidArgument, "/breaker.v1.Admin/BanBuilder could not be parsed"},
      {"a Report that does not parse",
       [](BadInputTest& t) { return t.RawUnary("/breaker.v1.Breaker/Report", "\x0a\x05x"); },
       absl::StatusCode::kInvalidArgument, "/breaker.v1.Breaker/Report could not be parsed"},
      // --- Reload: numbers that wrapped, lists and strings past their bounds ---
      {"reload: blacklist period 2^64-1",
       [](BadInputTest& t) {
         return t.ReloadWith("blacklist_period_epochs: 18446744073709551615\n");
       },
       absl::StatusCode::kInvalidArgument, "blacklist_period_epochs is 18446744073709551615"},
      {"reload: critical blacklist period one past 2^20",
       [](BadInputTest& t) { return t.ReloadWith("critical_blacklist_period_epochs: 1048577\n"); },
       absl::StatusCode::kInvalidArgument, "critical_blacklist_period_epochs is 1048577"},
      {"reload: back-off period near 2^64",
       [](BadInputTest& t) {
         return t.ReloadWith("backoff_period_epochs: 18446744073709551000\n");
       },
       absl::StatusCode::kInvalidArgument, "backoff_period_epochs is 18446744073709551000"},
      {"reload: relay blacklist period near 2^64",
       [](BadInputTest& t) {
         return t.ReloadWith("relay_blacklist_period_epochs: 9223372036854775808\n");
       },
       absl::StatusCode::kInvalidArgument, "relay_blacklist_period_epochs is 9223372036854775808"},
      {"reload: relay TTL near 2^64",
       [](BadInputTest& t) {
         return t.ReloadWith("relay_association_ttl_epochs: 18446744073709551615\n");
       },
       absl::StatusCode::kInvalidArgument, "relay_association_ttl_epochs is 18446744073709551615"},
      {"reload: 1025 trusted builders",
       [](BadInputTest& t) {
         std::string text;
         for (int i = 0; i < 1025; ++i) text += absl::StrCat("trusted_builders: ", 100 + i, "\n");
         return t.ReloadWith(text);
       },
       absl::StatusCode::kInvalidArgument, "trusted_builders lists 1025 entries"},
      {"reload: relay identifier past its bound",
       [](BadInputTest& t) {
         return t.ReloadWith(absl::StrCat("relays { identifier: \"", RelayOfLength(513), "\" }\n"));
       },
       absl::StatusCode::kInvalidArgument, "relays[0].identifier: relay identifier"},
      {"reload: caps whose policy would not fit what nodes receive",
       [](BadInputTest& t) { return t.ReloadWith("max_tracked_builders: 16384\n"); },
       absl::StatusCode::kInvalidArgument, "let a policy reach"},
      {"reload: a missed-slot count that could never trip",
       [](BadInputTest& t) {
         return t.ReloadWith(
             "missed_slots { preset: \"custom\" max_consecutive_missed_slots: 1000 }\n");
       },
       absl::StatusCode::kInvalidArgument, "max_consecutive_missed_slots is 1000"},
      // --- breakerd's flags ---
      {"--max_message_bytes negative",
       [](BadInputTest&) {
         return Flags([](ServerOptions& o) { o.max_receive_message_bytes = -1; });
       },
       absl::StatusCode::kInvalidArgument, "--max_message_bytes is -1"},
      {"--max_message_bytes 0",
       [](BadInputTest&) {
         return Flags([](ServerOptions& o) { o.max_receive_message_bytes = 0; });
       },
       absl::StatusCode::kInvalidArgument, "--max_message_bytes is 0"},
      {"--max_concurrent_streams 0",
       [](BadInputTest&) { return Flags([](ServerOptions& o) { o.max_concurrent_streams = 0; }); },
       absl::StatusCode::kInvalidArgument, "--max_concurrent_streams is 0"},
      {"--drain_seconds huge",
       [](BadInputTest&) {
         return Flags([](ServerOptions& o) { o.drain_period = absl::Hours(1e6); });
       },
       absl::StatusCode::kInvalidArgument, "--drain_seconds is"},
      {"--hello_timeout_seconds 0",
       [](BadInputTest&) {
         return Flags([](ServerOptions& o) { o.hello_timeout = absl::ZeroDuration(); });
       },
       absl::StatusCode::kInvalidArgument, "--hello_timeout_seconds is 0; accepted: 1..600"},
      {"--write_timeout_seconds 601",
       [](BadInputTest&) {
         return Flags([](ServerOptions& o) { o.write_timeout = absl::Seconds(601); });
       },
       absl::StatusCode::kInvalidArgument, "--write_timeout_seconds is 10m1s; accepted: 1..600"},
      {"--listen without a port",
       [](BadInputTest&) { return Flags([](ServerOptions& o) { o.listen_address = "0.0.0.0"; }); },
       absl::StatusCode::kInvalidArgument, "--listen is \"0.0.0.0\""},
      {"--listen with an IPv6 address but no port",
       [](BadInputTest&) { return Flags([](ServerOptions& o) { o.listen_address = "[::1]"; }); },
       absl::StatusCode::kInvalidArgument, "--listen is \"[::1]\""},
  };
  ASSERT_GE(rows.size(), 30u);

  RunRows(*this, rows);
}

TEST_F(BadInputTest, AcceptedInputsAtTheirBoundsKeepEveryMessageUnderItsBound) {
  StartServer(kLimits);
  // Bids of 16 builders through 16 relays of the longest identifier, then one failure, which
  // bans the relays and their members: every identifier appears in the policy.
  std::vector<v1::Observation> bids;
  for (uint64_t i = 0; i < 16; ++i) {
    bids.push_back(Bid(i + 1, 10 + i, RelayOfLength(511) + static_cast<char>('a' + i)));
  }
  EXPECT_EQ(Refusal("amp", {bids}).code, absl::StatusCode::kOk);
  EXPECT_EQ(Refusal("amp", {{Missing(100, 10, 'f', 0.9)}}).code, absl::StatusCode::kOk);
  ASSERT_TRUE(BanBuilder(9, std::string(1024, 'o')).ok());
  const v1::Policy policy = GetPolicy();
  ASSERT_TRUE(Bans(policy, 10));
  ASSERT_GE(policy.banned_relays_size(), 1);
  // Each ban's reason is cut: the identifiers and the operator's reason are not repeated.
  for (const v1::BuilderBan& ban : policy.banned_builders()) {
    EXPECT_LE(ban.ban().reason().size(), core::bounds::kMaxBanReasonBytes);
  }
  EXPECT_LT(policy.ByteSizeLong(), 64u << 10);
  // A hello with every string at its bound is taken.
  NodeClient node(channel_);
  ASSERT_TRUE(node.Send(
      HelloWith(std::string(128, 'n'), std::string(128, 'v'), "mainnet", std::string(64, 'f'))));
  EXPECT_TRUE(node.AwaitPolicy().has_value());
  EXPECT_TRUE(node.Close().ok());
}

TEST_F(BadInputTest, APolicyAckOfAVersionNeverSentDoesNotHideTheLag) {
  StartServer(kLimits);
  std::unique_ptr<NodeClient> node = ConnectedNode("acker");
  const uint64_t current = GetPolicy().version();
  node->AckPolicy(current + 1000);
  ASSERT_TRUE(BanBuilder(9, "lag").ok());
  // The node has not acknowledged the version the ban made.
  EXPECT_TRUE(WaitFor([&] {
    std::optional<v1::Node> listed = FindNode("acker");
    return listed.has_value() && listed->policy_version_acked() <= current && listed->lag() >= 1;
  })) << FindNode("acker")->DebugString();
  EXPECT_TRUE(node->Close().ok());
}

}  // namespace
}  // namespace breaker::service
