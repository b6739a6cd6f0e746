// breakerd and `breakerctl simulate` apply a journal entry with one function
// (codec::ApplyJournalEntry). Here the same journal is played both ways, and the policies they
// end with must be the same bytes:
//   - breakerd's way: a fleet opened over an in-memory store that holds the journal (what a
//     restart replays);
//   - the simulator's way: Simulate() on a shipped scenario, which gives the journal it played,
//     and SimulateJournal() on a journal written here, with what the scenarios lack (a
//     configuration change, a relay ban, a fleet id renewal).

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "breaker/state/v1/state.pb.h"
#include "breaker/v1/breaker.pb.h"
#include "common/fake_clock.h"
#include "core/chain_time.h"
#include "core/config.h"
#include "ctl/simulator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/codec/config_file.h"
#include "proto/codec/text_file.h"
#include "service/fleet.h"
#include "service/storage/memory_state_store.h"
#include "tests/support/status_matchers.h"

namespace breaker {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::testing::FakeClock;
using ::breaker::testing::IsOk;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kScenarioDir[] = "examples/scenarios/";
constexpr core::Slot kStartSlot = 320000;  // the first slot of epoch 10000

// A policy's bytes, without the fleet id (breakerd's own; the simulator has none). The API's
// messages have no map fields, so their serialization is the same bytes for equal messages.
std::string PolicyBytes(v1::Policy policy) {
  policy.clear_fleet_id();
  return policy.SerializeAsString();
}

absl::StatusOr<std::unique_ptr<service::Fleet>> OpenFleet(
    const core::Config& config, const Clock& clock,
    const std::shared_ptr<service::MemoryStateStore::Backing>& backing) {
  service::Fleet::Options options;
  options.config = config;
  options.store = std::make_unique<service::MemoryStateStore>(backing);
  options.clock = &clock;
  options.run_ticker = false;
  return service::Fleet::Open(std::move(options));
}

// The configuration in force after `journal`, from `config`: its last reconfiguration's.
core::Config ConfigInForce(core::Config config,
                           const std::vector<state::v1::JournalEntry>& journal) {
  for (const state::v1::JournalEntry& entry : journal) {
    if (!entry.has_reconfigure()) continue;
    absl::StatusOr<core::Config> next = codec::ConfigFromProto(entry.reconfigure());
    if (next.ok()) config = *std::move(next);
  }
  return config;
}

// The policy breakerd publishes after a restart over a state directory that was made at
// `start_slot` under `config` and then took the changes of `journal`. The restart is under
// the configuration in force at the journal's end (another one would be journaled as a change
// of its own), with the clock still at the start slot: the journal's advances moved time.
absl::StatusOr<v1::Policy> BreakerdPolicy(const core::Config& config, core::Slot start_slot,
                                          const std::vector<state::v1::JournalEntry>& journal) {
  auto backing = std::make_shared<service::MemoryStateStore::Backing>();
  FakeClock clock(core::StartOf(start_slot, config.chain));
  {
    // The first start on an empty state: it writes the first snapshot.
    absl::StatusOr<std::unique_ptr<service::Fleet>> first = OpenFleet(config, clock, backing);
    if (!first.ok()) return first.status();
  }
  if (!journal.empty()) {
    std::vector<std::string> entries;
    entries.reserve(journal.size());
    for (const state::v1::JournalEntry& entry : journal)
      entries.push_back(entry.SerializeAsString());
    absl::StatusOr<uint64_t> appended = service::MemoryStateStore(backing).Append(entries);
    if (!appended.ok()) return appended.status();
  }
  absl::StatusOr<std::unique_ptr<service::Fleet>> restarted =
      OpenFleet(ConfigInForce(config, journal), clock, backing);
  if (!restarted.ok()) return restarted.status();
  return (*restarted)->policy()->proto;
}

// The configurations a shipped scenario's header runs it under (its --config= flags).
std::vector<std::string> ConfigsNamedIn(absl::string_view text) {
  std::vector<std::string> configs;
  constexpr absl::string_view kFlag = "--config=";
  for (size_t at = text.find(kFlag); at != absl::string_view::npos; at = text.find(kFlag, at + 1)) {
    const size_t start = at + kFlag.size();
    const size_t end = text.find_first_of(" \\\n", start);
    configs.emplace_back(text.substr(start, end - start));
  }
  return configs;
}

TEST(ApplyPathTest, EveryShippedScenarioEndsInTheSamePolicyInBreakerd) {
  const std::vector<std::string> names = {
      "01_builder_bug",      "02_client_bug",        "03_untrusted_attack",
      "04_relay_collateral", "05_missed_slots",      "06_mixed_fleet",
      "07_prysm_preset",     "08_lighthouse_preset", "09_teku_preset",
  };
  for (const std::string& name : names) {
    const std::string path = absl::StrCat(kScenarioDir, name, ".scenario.textproto");
    SCOPED_TRACE(path);
    absl::StatusOr<std::string> text = codec::ReadTextFile(path, "scenario file");
    ASSERT_THAT(text, IsOk());
    absl::StatusOr<v1::Scenario> scenario = ctl::LoadScenarioFile(path);
    ASSERT_THAT(scenario, IsOk());
    const std::vector<std::string> configs = ConfigsNamedIn(*text);
    ASSERT_THAT(configs, Not(IsEmpty()));
    for (const std::string& config_path : configs) {
      SCOPED_TRACE(config_path);
      absl::StatusOr<core::Config> config = codec::LoadConfigFile(config_path);
      ASSERT_THAT(config, IsOk());
      std::vector<state::v1::JournalEntry> journal;
      absl::StatusOr<ctl::SimulationResult> simulated = ctl::Simulate(*config, *scenario, &journal);
      ASSERT_THAT(simulated, IsOk());
      ASSERT_THAT(simulated->failures, IsEmpty()) << ctl::FormatTimeline(*simulated);
      ASSERT_THAT(journal, Not(IsEmpty()));

      absl::StatusOr<v1::Policy> breakerd =
          BreakerdPolicy(*config, scenario->start_slot(), journal);
      ASSERT_THAT(breakerd, IsOk());
      const v1::Policy& simulator = simulated->timeline.back().policy;
      EXPECT_EQ(PolicyBytes(*breakerd), PolicyBytes(simulator))
          << "breakerd:\n"
          << breakerd->DebugString() << "simulator:\n"
          << simulator.DebugString();
    }
  }
}

// --- A journal written by hand ---------------------------------------------------------------

// `journal` with every observations entry as breakerd writes it since it journals the batch it
// received (NodeObservations.batch); JournalBuilder writes the earlier form (observations).
std::vector<state::v1::JournalEntry> AsReceived(std::vector<state::v1::JournalEntry> journal) {
  for (state::v1::JournalEntry& entry : journal) {
    if (!entry.has_observations()) continue;
    v1::ObservationBatch batch;
    batch.mutable_observations()->Swap(entry.mutable_observations()->mutable_observations());
    entry.mutable_observations()->set_batch(batch.SerializeAsString());
  }
  return journal;
}

// Builds a journal as breakerd writes it: each node numbers its observations from 1.
class JournalBuilder {
 public:
  // `node` reports one observation at the current slot.
  v1::Observation& Observe(const std::string& node) {
    state::v1::JournalEntry& entry = journal_.emplace_back();
    entry.mutable_observations()->set_node_id(node);
    v1::Observation* observation = entry.mutable_observations()->add_observations();
    observation->set_slot(slot_);
    observation->set_sequence(++sequences_[node]);
    return *observation;
  }
  void Bid(const std::string& node, uint64_t builder, const std::string& relay, char key) {
    v1::BidSeen* bid = Observe(node).mutable_bid_seen();
    bid->set_builder_index(builder);
    bid->set_relay(relay);
    bid->set_builder_pubkey(std::string(48, key));
  }
  void Missing(const std::string& node, uint64_t builder, char root) {
    v1::PayloadMissing* missing = Observe(node).mutable_payload_missing();
    missing->set_builder_index(builder);
    missing->set_block_root(std::string(32, root));
    missing->set_attested_fraction(0.9);
  }
  void Delivered(const std::string& node, uint64_t builder, char root) {
    v1::PayloadDelivered* delivered = Observe(node).mutable_payload_delivered();
    delivered->set_builder_index(builder);
    delivered->set_block_root(std::string(32, root));
  }
  state::v1::AdminAction& Admin() { return *journal_.emplace_back().mutable_admin(); }
  void Reconfigure(const core::Config& config) {
    *journal_.emplace_back().mutable_reconfigure() = codec::ConfigToProto(config);
  }
  // The clock ticks at every slot boundary up to `slots` slots on, as breakerd's does.
  void Ticks(uint64_t slots) {
    for (uint64_t i = 0; i < slots; ++i) journal_.emplace_back().set_advance_to_slot(++slot_);
  }
  void RenewFleetId(const std::string& fleet_id) {
    journal_.emplace_back().mutable_renew_fleet_id()->set_fleet_id(fleet_id);
  }

  const std::vector<state::v1::JournalEntry>& journal() const { return journal_; }

 private:
  core::Slot slot_ = kStartSlot;
  absl::flat_hash_map<std::string, uint64_t> sequences_;
  std::vector<state::v1::JournalEntry> journal_;
};

TEST(ApplyPathTest, AJournalOfEveryKindOfEntryEndsInTheSamePolicy) {
  core::Config config;
  config.chain = core::ChainSpecForNetwork("mainnet").value();
  config.chain.gloas_fork_epoch = 0;
  config.min_reporting_nodes = 2;
  core::Config reconfigured = config;
  reconfigured.min_reporting_nodes = 1;
  reconfigured.trusted_builders = {6};

  JournalBuilder j;
  j.Bid("bn-1", 5, "https://relay-a.example", 'a');
  j.Bid("bn-2", 6, "https://relay-b.example", 'b');
  j.Bid("bn-3", 7, "https://relay-a.example", 'c');
  // Builder 5 fails: one reporter is not enough, the second bans it.
  j.Missing("bn-1", 5, 'x');
  j.Ticks(1);
  j.Missing("bn-2", 5, 'x');
  // A replay of an observation already handled, and one the codec refuses (a short root).
  j.Observe("bn-3").mutable_blocks_seen()->add_block_roots(std::string(32, 'y'));
  v1::Observation& bad = j.Observe("bn-3");
  bad.mutable_payload_missing()->set_builder_index(7);
  bad.mutable_payload_missing()->set_block_root("short");
  bad.mutable_payload_missing()->set_attested_fraction(0.9);
  state::v1::JournalEntry replay = j.journal()[0];
  // Operators ban builder 9 for a while and relay B for good, then trust builder 7.
  v1::BanBuilderRequest& ban = *j.Admin().mutable_ban();
  ban.set_builder_index(9);
  ban.set_reason("under investigation");
  ban.set_until_epoch(10003);
  v1::BanRelayRequest& ban_relay = *j.Admin().mutable_ban_relay();
  ban_relay.set_relay("https://relay-b.example");
  ban_relay.set_reason("censoring");
  j.Admin().mutable_builder_trust()->set_builder_index(7);
  j.Ticks(32);  // an epoch later
  // The configuration changes: one reporter is enough, builder 6 is trusted.
  j.Reconfigure(reconfigured);
  j.Missing("bn-3", 7, 'z');
  j.Missing("bn-1", 6, 'w');
  j.Delivered("bn-2", 5, 'x');
  j.Ticks(70);  // into epoch 10003: builder 9's ban ends
  j.Observe("bn-1").mutable_finalized()->set_epoch(10001);
  j.Admin().mutable_reset()->set_reason("clients restarted");
  state::v1::JournalEntry unban_relay;
  unban_relay.mutable_admin()->mutable_unban_relay()->set_relay("https://relay-b.example");
  j.RenewFleetId("another fleet id");
  j.Ticks(40);

  std::vector<state::v1::JournalEntry> journal = j.journal();
  journal.insert(journal.begin() + 6, replay);
  journal.push_back(unban_relay);

  absl::StatusOr<ctl::SimulationResult> simulated =
      ctl::SimulateJournal(config, kStartSlot, journal);
  ASSERT_THAT(simulated, IsOk());
  // The journal does change the policy, many times over.
  ASSERT_GE(simulated->timeline.size(), 6u) << ctl::FormatTimeline(*simulated);
  absl::StatusOr<v1::Policy> breakerd = BreakerdPolicy(config, kStartSlot, journal);
  ASSERT_THAT(breakerd, IsOk());
  const v1::Policy& simulator = simulated->timeline.back().policy;
  EXPECT_EQ(PolicyBytes(*breakerd), PolicyBytes(simulator))
      << "breakerd:\n"
      << breakerd->DebugString() << "simulator:\n"
      << simulator.DebugString();
  // The same journal as breakerd writes it now, with the batches as received.
  absl::StatusOr<v1::Policy> received = BreakerdPolicy(config, kStartSlot, AsReceived(journal));
  ASSERT_THAT(received, IsOk());
  EXPECT_EQ(PolicyBytes(*received), PolicyBytes(simulator));
  // Each prefix ends in the same policy too: compared at every new version.
  for (const ctl::TimelineEntry& line : simulated->timeline) {
    if (line.step == 0) continue;
    SCOPED_TRACE(absl::StrCat("after entry ", line.step));
    const std::vector<state::v1::JournalEntry> prefix(journal.begin(), journal.begin() + line.step);
    absl::StatusOr<v1::Policy> restored = BreakerdPolicy(config, kStartSlot, prefix);
    ASSERT_THAT(restored, IsOk());
    EXPECT_EQ(PolicyBytes(*restored), PolicyBytes(line.policy));
  }
}

}  // namespace
}  // namespace breaker
