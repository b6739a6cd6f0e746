// Fuzz target for the fleet (service/fleet.h): the engine behind its journal, its writer's threads
// and its store. The input is what nodes and operators send: serialized breaker.v1.NodeMessages
// on a few streams and breaker.v1.AdminActions, with the clock moving between them. The fleet
// runs over the in-memory store with a fake clock and no ticker, and the target checks that
//   - every SubmitObservations gets its acknowledgement, whose sequence number is the batch's
//     highest, and whose refusals name observations of the batch, with a code and a message;
//   - every admin action gets its answer: the policy, or an error with a message;
//   - policy versions never go back, as published to listeners and as read;
//   - at the end (and at each 'r' frame), a fleet re-opened from what the store holds publishes
//     the same policy and lists the same builders and relays: once after a crash (no final
//     snapshot: the journal is replayed) and once after a clean shutdown (the final snapshot).
// A violation aborts, with what differs on stderr.
//
// Input format: frames, until the input ends.
//   'n' STREAM LEN_HI LEN_LO BYTES   a NodeMessage of LEN bytes on stream STREAM % 3: a hello
//                                    names the stream's node (as breakerd's Connect does);
//                                    observations are submitted for it, policy acks recorded
//   'a' LEN_HI LEN_LO BYTES          an AdminAction of LEN bytes
//   't' SECONDS                      the clock moves SECONDS (0-255) and the fleet ticks
//   's'                              Sync(): everything submitted is answered
//   'i'                              the inspection calls (ListBuilders, ListNodes, ...)
//   'r'                              restart: the checks above, then go on with the new fleet
//   'c'                              restart with the other configuration of the same chain
//                                    (as after an operator's edit), then the checks above
// The first byte picks the configuration (see Configs()). Any other frame byte stands for the
// frame at (byte % 7) in that list; a message that does not parse is skipped. Seeds are made
// by `tools/fuzz.sh seeds` from text-format messages.
//
// BREAKER_FUZZ_TRACE=1 in the environment prints every frame and turns the fleet's logging on.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "breaker/state/v1/state.pb.h"
#include "breaker/v1/breaker.pb.h"
#include "common/fake_clock.h"
#include "common/mutex.h"
#include "core/chain_time.h"
#include "core/config.h"
#include "core/engine_invariants.h"
#include "core/input_bounds.h"
#include "glog/logging.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message.h"
#include "google/protobuf/stubs/logging.h"
#include "proto/codec/journal_apply.h"
#include "proto/codec/received_batch.h"
#include "service/fleet.h"
#include "service/storage/memory_state_store.h"
#include "tests/support/fuzz_frames.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;

// The fleet starts at this slot of mainnet: observations of the seeds name slots near it.
constexpr core::Slot kStartSlot = 10'000'000;
// Bounds the work per input, as libFuzzer's -max_len bounds its size.
constexpr int kMaxFrames = 256;
// Restarts per input ('r' frames), each of which opens two fleets.
constexpr int kMaxRestarts = 4;
constexpr int kStreams = 3;

bool Tracing() {
  static const bool tracing = [] {
    const char* value = std::getenv("BREAKER_FUZZ_TRACE");
    return value != nullptr && *value != '\0' && *value != '0';
  }();
  return tracing;
}

[[noreturn]] void Fail(absl::string_view what) {
  std::fprintf(stderr, "fleet invariant violated: %.*s\n", static_cast<int>(what.size()),
               what.data());
  std::abort();
}

core::Config BaseConfig() {
  core::Config config;
  config.trusted_builders = {1, 2};
  config.blacklisted_builders = {3};
  config.relays = {core::RelayConfig{"https://relay-a.example", true, {4, 5}},
                   core::RelayConfig{"relay-b.example:18550", false, {6, 7, 8}}};
  return config;
}

// Mainnet's chain in all: the fleet's slot comes from the fake clock and mainnet's genesis.
// Configurations i and i ^ 2 have the same chain settings, so that a fleet can restart from
// one to the other (the chain cannot change under a state directory).
const std::vector<core::Config>& Configs() {
  static const auto* const configs = [] {
    auto* configs = new std::vector<core::Config>;
    {
      // Gloas from genesis, every default.
      core::Config config = BaseConfig();
      config.chain.gloas_fork_epoch = 0;
      configs->push_back(config);
    }
    {
      // Pre-Gloas, the latched missed-slot rule, two reporters, small caps but a strict
      // escalation.
      core::Config config = BaseConfig();
      config.missed_slots = core::MissedSlotRulesForPreset("mevboost").value();
      config.min_reporting_nodes = 2;
      config.max_tracked_builders = 16;
      config.max_relays = 4;
      config.max_indices_per_relay = 4;
      configs->push_back(config);
    }
    {
      // Gloas, two reporters, small caps, a tolerant and finite escalation, other relays.
      core::Config config = core::WithSmallCaps(BaseConfig());
      config.chain.gloas_fork_epoch = 0;
      config.relays = {core::RelayConfig{"https://relay-c.example", false, {10, 11}}};
      configs->push_back(config);
    }
    {
      // Pre-Gloas, the prysm preset (recovers by itself), one reporter, no relays configured.
      core::Config config = BaseConfig();
      config.missed_slots = core::MissedSlotRulesForPreset("prysm").value();
      config.relays.clear();
      config.trusted_builders = {4};
      configs->push_back(config);
    }
    return configs;
  }();
  return *configs;
}

std::string Deterministic(const google::protobuf::Message& message) {
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  return bytes;
}

bool Parse(absl::string_view bytes, google::protobuf::Message& message) {
  // At most 65535 bytes: the frame's length has two bytes.
  return message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

using Reader = ::breaker::testing::FrameReader;

// Checks that the published versions only go up. Called on the journal writer's applier thread.
class VersionListener : public PolicyListener {
 public:
  void OnPolicy(std::shared_ptr<const PublishedPolicy> policy) override {
    MutexLock lock(&mu_);
    if (policy == nullptr) Fail("a listener got no policy");
    if (policy->policy.version <= last_) {
      Fail(absl::StrCat("version ", policy->policy.version, " published after ", last_));
    }
    last_ = policy->policy.version;
  }

 private:
  Mutex mu_;
  uint64_t last_ ABSL_GUARDED_BY(mu_) = 0;
};

// What the acknowledgement of one batch must be.
struct ExpectedAck {
  uint64_t highest = 0;
  absl::flat_hash_set<uint64_t> sequences;
};

void CheckAck(const ExpectedAck& expected, const v1::ObservationAck& ack) {
  if (ack.sequence() != expected.highest) {
    Fail(absl::StrCat("acknowledged sequence ", ack.sequence(), ", the batch's highest is ",
                      expected.highest));
  }
  if (ack.refused_size() > 100) Fail(absl::StrCat(ack.refused_size(), " refusals listed"));
  for (const v1::ObservationRefusal& refusal : ack.refused()) {
    if (!expected.sequences.contains(refusal.sequence())) {
      Fail(absl::StrCat("a refusal of sequence ", refusal.sequence(), ", not in the batch"));
    }
    const auto code = static_cast<absl::StatusCode>(refusal.code());
    if (code != absl::StatusCode::kInvalidArgument && code != absl::StatusCode::kOutOfRange &&
        code != absl::StatusCode::kResourceExhausted) {
      Fail(absl::StrCat("a refusal with code ", refusal.code(), ": ", refusal.message()));
    }
    if (refusal.message().empty()) Fail("a refusal without a message");
  }
}

// What a restart must give back: the state's observable form.
struct Observed {
  std::string policy;
  std::string builders;
  std::string relays;
  std::string config;
};

class Run {
 public:
  explicit Run(size_t config)
      : config_index_(config),
        config_(Configs()[config]),
        clock_(core::StartOf(kStartSlot, config_.chain)),
        backing_(std::make_shared<MemoryStateStore::Backing>()) {
    Open();
  }

  ~Run() {
    // Everything submitted is answered before the fleet goes, callbacks included.
    if (fleet_ != nullptr) fleet_->Unsubscribe(&listener_);
  }

  void Execute(Reader& reader) {
    for (int frame = 0; frame < kMaxFrames && !reader.done(); ++frame) {
      constexpr char kFrames[] = "natsirc";
      constexpr size_t kFrameKinds = sizeof(kFrames) - 1;
      char op = static_cast<char>(reader.Byte());
      if (std::find(kFrames, kFrames + kFrameKinds, op) == kFrames + kFrameKinds) {
        op = kFrames[static_cast<uint8_t>(op) % kFrameKinds];
      }
      switch (op) {
        case 'n': {
          const int stream = reader.Byte() % kStreams;
          v1::NodeMessage message;
          if (!Parse(reader.Message(), message)) break;
          OnNodeMessage(stream, message);
          break;
        }
        case 'a': {
          state::v1::AdminAction action;
          if (!Parse(reader.Message(), action)) break;
          OnAdmin(action);
          break;
        }
        case 't': {
          const uint8_t seconds = reader.Byte();
          if (Tracing()) std::fprintf(stderr, "clock +%us, tick\n", unsigned{seconds});
          clock_.Advance(absl::Seconds(seconds));
          fleet_->Tick();
          break;
        }
        case 's':
          SyncAndCheck();
          break;
        case 'i':
          Inspect();
          break;
        case 'r':
          if (restarts_ < kMaxRestarts) {
            ++restarts_;
            Restart();
          }
          break;
        case 'c':
          if (restarts_ < kMaxRestarts) {
            ++restarts_;
            Reconfigure();
            Restart();
          }
          break;
      }
      CheckVersion(fleet_->policy()->policy.version);
    }
    Restart();
  }

 private:
  void Open() {
    Fleet::Options options;
    options.config = config_;
    auto store = std::make_unique<MemoryStateStore>(backing_);
    store_ = store.get();
    options.store = std::move(store);
    options.clock = &clock_;
    options.run_ticker = false;
    // Snapshots now and then, so that restarts find both a snapshot and a journal after it.
    options.snapshot_every_entries = 8;
    absl::StatusOr<std::unique_ptr<Fleet>> fleet = Fleet::Open(std::move(options));
    if (!fleet.ok()) Fail(absl::StrCat("Fleet::Open: ", fleet.status().ToString()));
    fleet_ = *std::move(fleet);
    fleet_->Subscribe(&listener_);
    CheckVersion(fleet_->policy()->policy.version);
  }

  void CheckVersion(uint64_t version) {
    if (version < version_) {
      Fail(absl::StrCat("the policy version went back from ", version_, " to ", version));
    }
    version_ = version;
  }

  void OnNodeMessage(int stream, const v1::NodeMessage& message) {
    if (Tracing()) {
      std::fprintf(stderr, "stream %d: %s\n", stream, message.ShortDebugString().c_str());
    }
    std::string& node = streams_[stream];
    switch (message.kind_case()) {
      case v1::NodeMessage::kHello: {
        // Refused by Connect: an empty node id, another network.
        const v1::Hello& hello = message.hello();
        if (hello.node_id().empty()) break;
        if (!hello.network().empty() && hello.network() != fleet_->network()) break;
        node = hello.node_id();
        fleet_->NodeConnected(node, absl::StrCat("fuzz:", stream), hello.client_version(),
                              hello.policy_version());
        break;
      }
      case v1::NodeMessage::kObservations: {
        const v1::ObservationBatch& batch = message.observations();
        if (node.empty() || batch.observations_size() > core::bounds::kMaxObservationsPerBatch)
          break;
        auto expected = std::make_shared<ExpectedAck>();
        for (const v1::Observation& observation : batch.observations()) {
          expected->highest = std::max(expected->highest, observation.sequence());
          expected->sequences.insert(observation.sequence());
        }
        ++submitted_;
        // What is refused for its content takes no number: the rest must be taken.
        codec::ReceivedBatch received = codec::ReceivedBatch::Of(batch);
        absl::flat_hash_set<int> refused;
        for (const codec::ContentRefusal& refusal : codec::RefusedForContent(received, node)) {
          refused.insert(refusal.index);
        }
        uint64_t& taken = taken_[node];
        for (int i = 0; i < batch.observations_size(); ++i) {
          if (!refused.contains(i)) taken = std::max(taken, batch.observations(i).sequence());
        }
        fleet_->SubmitObservations(node, std::move(received),
                                   [this, expected](absl::StatusOr<v1::ObservationAck> ack) {
                                     // The fuzzer's store fails no append.
                                     if (!ack.ok()) Fail(ack.status().ToString());
                                     CheckAck(*expected, *ack);
                                     ++answered_;
                                   });
        break;
      }
      case v1::NodeMessage::kPolicyAck:
        if (!node.empty()) fleet_->NodeAckedPolicy(node, message.policy_ack().version());
        break;
      case v1::NodeMessage::KIND_NOT_SET:
        break;
    }
  }

  void OnAdmin(const state::v1::AdminAction& action) {
    if (Tracing()) std::fprintf(stderr, "admin: %s\n", action.ShortDebugString().c_str());
    ++submitted_;
    const uint64_t before = fleet_->policy()->policy.version;
    fleet_->SubmitAdmin(
        action, [this, before](absl::StatusOr<std::shared_ptr<const PublishedPolicy>> policy) {
          if (policy.ok()) {
            if (*policy == nullptr) Fail("an admin action answered no policy");
            if ((*policy)->policy.version < before) {
              Fail(absl::StrCat("an admin action answered version ", (*policy)->policy.version,
                                ", older than ", before, " before it"));
            }
          } else if (policy.status().message().empty()) {
            Fail(absl::StrCat("an admin action failed without a message: ",
                              policy.status().ToString()));
          }
          ++answered_;
        });
  }

  void SyncAndCheck() {
    fleet_->Sync();
    if (answered_ != submitted_) {
      Fail(absl::StrCat(submitted_, " submitted, ", answered_.load(), " answered after Sync()"));
    }
    // An acknowledged sequence number is handled: a resend of it is a replay, also after a
    // restart, so the node's highest number is at least that; but for what was refused for its
    // content, which a resend repeats and so need not be remembered.
    for (const v1::Node& node : fleet_->AllNodes()) {
      auto taken = taken_.find(node.node_id());
      if (taken != taken_.end() && node.last_sequence() < taken->second) {
        Fail(absl::StrCat("node ", node.node_id(), " was acknowledged up to ", taken->second,
                          " (but for refusals of content) but its last sequence is ",
                          node.last_sequence()));
      }
    }
    const std::shared_ptr<const PublishedPolicy> policy = fleet_->policy();
    if (policy->proto.version() != policy->policy.version || policy->proto.version() == 0 ||
        policy->proto.fleet_id() != fleet_->fleet_id() || fleet_->fleet_id().empty()) {
      Fail(absl::StrCat("the published policy is version ", policy->proto.version(), " of fleet '",
                        policy->proto.fleet_id(), "', the engine's is ", policy->policy.version,
                        " of fleet '", fleet_->fleet_id(), "'"));
    }
  }

  // The reads, while the writer may be busy: they must not block on it, nor tear.
  void Inspect() {
    const v1::ListBuildersResponse builders = fleet_->ListBuilders({}).value();
    v1::ListBuildersRequest banned_only;
    banned_only.set_banned_only(true);
    fleet_->ListBuilders(banned_only).value();
    fleet_->ListRelays();
    fleet_->AllNodes();
    fleet_->EffectiveConfig();
    if (builders.builders_size() > 0) {
      absl::StatusOr<v1::Builder> builder =
          fleet_->GetBuilder(builders.builders(0).builder_index());
      if (!builder.ok()) Fail(absl::StrCat("GetBuilder: ", builder.status().ToString()));
    }
    if (fleet_->GetBuilder(core::kSelfBuild).ok()) Fail("GetBuilder answered the self-build index");
  }

  Observed Observe() const {
    return Observed{Deterministic(fleet_->policy()->proto),
                    Deterministic(fleet_->ListBuilders({}).value()),
                    Deterministic(fleet_->ListRelays()), Deterministic(fleet_->EffectiveConfig())};
  }

  void Compare(const Observed& before, absl::string_view how) const {
    const Observed after = Observe();
    auto differ = [&](absl::string_view what) {
      Fail(absl::StrCat("after a restart (", how, ") the ", what,
                        " differs; policy before: ", fleet_policy_text_,
                        "\nafter: ", fleet_->policy()->proto.ShortDebugString()));
    };
    if (after.policy != before.policy) differ("policy");
    if (after.builders != before.builders) differ("builder list");
    if (after.relays != before.relays) differ("relay list");
    if (after.config != before.config) differ("configuration");
  }

  // The operator edits the configuration and restarts breakerd: the new one is journaled and
  // applied on top of the stored state.
  void Reconfigure() {
    SyncAndCheck();
    config_index_ ^= 2;
    config_ = Configs()[config_index_];
    if (Tracing()) std::fprintf(stderr, "restart with configuration %zu\n", config_index_);
    fleet_->Unsubscribe(&listener_);
    fleet_.reset();
    Open();
  }

  // Restart equivalence: after a crash (the journal replayed over the last snapshot), then
  // after a clean shutdown (the final snapshot), the fleet is what it was.
  void Restart() {
    // A tick first: a restart moves time to the clock's slot, which is not the point here.
    fleet_->Tick();
    SyncAndCheck();
    const Observed before = Observe();
    fleet_policy_text_ = fleet_->policy()->proto.ShortDebugString();

    // A crash: the final snapshot is not written.
    store_->FailNextWriteSnapshots(1, absl::UnavailableError("the fuzzer's crash"));
    fleet_->Unsubscribe(&listener_);
    fleet_.reset();
    Open();
    Compare(before, "crash: journal replayed");

    fleet_->Unsubscribe(&listener_);
    fleet_.reset();
    Open();
    Compare(before, "clean shutdown: final snapshot");
  }

  size_t config_index_;
  core::Config config_;
  testing::FakeClock clock_;
  const std::shared_ptr<MemoryStateStore::Backing> backing_;
  VersionListener listener_;
  // The store of the current fleet, which owns it.
  MemoryStateStore* store_ = nullptr;
  // Each stream's node, once its hello named it.
  std::string streams_[kStreams];
  // Per node, the highest sequence number acknowledged (or to be, once synced), of the
  // observations not refused for their content.
  absl::flat_hash_map<std::string, uint64_t> taken_;
  // Submissions (observations and admin actions) and their answers, counted on the writer.
  uint64_t submitted_ = 0;
  std::atomic<uint64_t> answered_{0};
  uint64_t version_ = 0;
  int restarts_ = 0;
  std::string fleet_policy_text_;
  // Last, so that it goes first: its writer's last answers touch the members above.
  std::unique_ptr<Fleet> fleet_;
};

}  // namespace
}  // namespace breaker::service

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // The fleet logs every change, and a fuzzer makes millions; the crashes it simulates log
  // errors by design.
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = breaker::service::Tracing() ? 0 : google::GLOG_FATAL;
  // Protobuf logs every string field that is not UTF-8 (the message is refused all the same).
  if (!breaker::service::Tracing()) google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  breaker::service::Reader reader(data, size);
  const size_t config = reader.Byte() % breaker::service::Configs().size();
  breaker::service::Run run(config);
  run.Execute(reader);
  return 0;
}
