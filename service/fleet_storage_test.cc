// Storage faults at the fleet: an in-memory store that fails appends on demand (also after
// committing them: the outcome a real disk can leave unknown), a fake clock for the retries.
// What is refused is never acknowledged, the fault is signalled, and after recovery the state
// is what the store holds, versions never went back and resent observations count once.

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.pb.h"
#include "common/fake_clock.h"
#include "common/mutex.h"
#include "core/chain_time.h"
#include "core/config.h"
#include "gtest/gtest.h"
#include "proto/codec/received_batch.h"
#include "service/fleet.h"
#include "service/storage/memory_state_store.h"
#include "tests/support/status_matchers.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::testing::FakeClock;
using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr core::Slot kStartSlot = 100 * 32 + 8;
constexpr char kNode[] = "bn-1";

core::Config TestConfig() {
  core::Config config;
  config.chain = core::ChainSpecForNetwork("mainnet").value();
  config.chain.gloas_fork_epoch = 0;
  return config;
}

// Builder `builder`'s block (root made of `root`) got no payload though 90% attested it: a
// failure, which bans the builder.
v1::Observation Missing(uint64_t sequence, uint64_t builder, char root) {
  v1::Observation observation;
  observation.set_sequence(sequence);
  observation.set_slot(kStartSlot - 1);
  v1::PayloadMissing* missing = observation.mutable_payload_missing();
  missing->set_builder_index(builder);
  missing->set_block_root(std::string(32, root));
  missing->set_attested_fraction(0.9);
  return observation;
}

// Every policy version the fleet publishes.
class VersionRecorder : public PolicyListener {
 public:
  void OnPolicy(std::shared_ptr<const PublishedPolicy> policy) override {
    MutexLock lock(&mu_);
    versions_.push_back(policy->policy.version);
  }
  std::vector<uint64_t> versions() const {
    MutexLock lock(&mu_);
    return versions_;
  }

 private:
  mutable Mutex mu_;
  std::vector<uint64_t> versions_;
};

class FleetStorageTest : public ::testing::Test {
 protected:
  FleetStorageTest() : clock_(core::StartOf(kStartSlot, TestConfig().chain)) {}

  void SetUp() override { ASSERT_NO_FATAL_FAILURE(Open()); }

  void TearDown() override {
    if (fleet_ != nullptr) {
      fleet_->WatchStorage(nullptr);
      fleet_->Unsubscribe(&versions_);
    }
    fleet_.reset();
  }

  // Opens a fleet over the backing: the first time over an empty one, later as a restart.
  void Open() {
    if (fleet_ != nullptr) {
      fleet_->WatchStorage(nullptr);
      fleet_->Unsubscribe(&versions_);
    }
    fleet_.reset();
    auto store = std::make_unique<MemoryStateStore>(backing_);
    store_ = store.get();
    Fleet::Options options;
    options.config = TestConfig();
    options.store = std::move(store);
    options.clock = &clock_;
    options.run_ticker = false;
    options.snapshot_every_bytes = snapshot_every_bytes_;
    options.snapshot_every_entries = snapshot_every_entries_;
    absl::StatusOr<std::unique_ptr<Fleet>> fleet = Fleet::Open(std::move(options));
    ASSERT_THAT(fleet, IsOk());
    fleet_ = *std::move(fleet);
    fleet_->Subscribe(&versions_);
    fleet_->WatchStorage([this](bool writable) {
      MutexLock lock(&mu_);
      writable_.push_back(writable);
    });
  }

  absl::StatusOr<v1::ObservationAck> Submit(std::vector<v1::Observation> observations) {
    v1::ObservationBatch batch;
    for (v1::Observation& observation : observations) {
      *batch.add_observations() = std::move(observation);
    }
    std::promise<absl::StatusOr<v1::ObservationAck>> answer;
    fleet_->SubmitObservations(
        kNode, codec::ReceivedBatch::Of(batch),
        [&answer](absl::StatusOr<v1::ObservationAck> ack) { answer.set_value(std::move(ack)); });
    return answer.get_future().get();
  }

  absl::Status Ban(uint64_t builder) {
    state::v1::AdminAction action;
    action.mutable_ban()->set_builder_index(builder);
    action.mutable_ban()->set_reason("operator's test ban");
    std::promise<absl::Status> answer;
    fleet_->SubmitAdmin(std::move(action),
                        [&answer](absl::StatusOr<std::shared_ptr<const PublishedPolicy>> policy) {
                          answer.set_value(policy.status());
                        });
    return answer.get_future().get();
  }

  // Moves the fake clock and lets the fleet act on it (a storage retry when one is due).
  void AdvanceAndTick(absl::Duration duration) {
    clock_.Advance(duration);
    fleet_->Tick();
    fleet_->Sync();
  }

  uint64_t Version() const { return fleet_->policy()->policy.version; }

  // (builder index, failures recorded, banned) of every builder the fleet lists.
  std::vector<std::tuple<uint64_t, uint32_t, bool>> Builders() const {
    std::vector<std::tuple<uint64_t, uint32_t, bool>> builders;
    const v1::ListBuildersResponse listed = fleet_->ListBuilders({}).value();
    for (const v1::Builder& builder : listed.builders()) {
      builders.emplace_back(builder.builder_index(), builder.failed(), builder.has_ban());
    }
    return builders;
  }

  std::vector<bool> Writable() const {
    MutexLock lock(&mu_);
    return writable_;
  }

  FakeClock clock_;
  uint64_t snapshot_every_bytes_ = Fleet::Options().snapshot_every_bytes;
  uint64_t snapshot_every_entries_ = 4096;
  const std::shared_ptr<MemoryStateStore::Backing> backing_ =
      std::make_shared<MemoryStateStore::Backing>();
  MemoryStateStore* store_ = nullptr;  // owned by fleet_
  VersionRecorder versions_;
  std::unique_ptr<Fleet> fleet_;
  mutable Mutex mu_;
  std::vector<bool> writable_;
};

TEST_F(FleetStorageTest, AFullJournalByBytesIsFoldedIntoASnapshot) {
  // Below the bound, the batch stays in the journal.
  ASSERT_THAT(Submit({Missing(1, 5, 'a')}), IsOk());
  const StoredState kept = backing_->Read();
  EXPECT_FALSE(kept.journal.empty());
  EXPECT_LT(kept.snapshot_sequence, kept.last_sequence());

  // A bound below one batch's entry: every round is folded at once, and the state survives.
  snapshot_every_bytes_ = 1;
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_THAT(Submit({Missing(2, 6, 'b')}), IsOk());
  fleet_->Sync();  // the snapshot comes after the acknowledgement
  const StoredState folded = backing_->Read();
  EXPECT_TRUE(folded.journal.empty());
  EXPECT_EQ(folded.snapshot_sequence, folded.last_sequence());
  ASSERT_NO_FATAL_FAILURE(Open());
  EXPECT_THAT(Builders(),
              ElementsAre(std::make_tuple(5u, 1u, true), std::make_tuple(6u, 1u, true)));
}

TEST_F(FleetStorageTest, RestartsAfterKillsBeforeTheSnapshotReplayABoundedJournal) {
  // Each process journals two batches and is killed before its final snapshot: the journal
  // each restart replays counts toward the next snapshot, so it stays under the bound instead
  // of growing with every kill.
  snapshot_every_entries_ = 4;
  uint64_t sequence = 0;
  for (int kill = 0; kill < 5; ++kill) {
    ASSERT_NO_FATAL_FAILURE(Open());
    ASSERT_THAT(Submit({Missing(++sequence, 5, 'a')}), IsOk());
    ASSERT_THAT(Submit({Missing(++sequence, 5, 'a')}), IsOk());
    fleet_->Sync();
    store_->FailNextWriteSnapshots(1, absl::UnavailableError("killed"));
    EXPECT_LE(backing_->Read().journal.size(), 4u) << "after kill " << kill;
  }
}

TEST_F(FleetStorageTest, AJournalEntryAMinuteAfterTheSnapshotIsFoldedIntoANewOne) {
  ASSERT_THAT(Submit({Missing(1, 5, 'a')}), IsOk());
  fleet_->Sync();
  EXPECT_FALSE(backing_->Read().journal.empty());
  clock_.Advance(absl::Minutes(1));
  ASSERT_THAT(Submit({Missing(2, 5, 'a')}), IsOk());
  fleet_->Sync();
  EXPECT_TRUE(backing_->Read().journal.empty());
}

TEST_F(FleetStorageTest, ABatchIsJournaledAsTheBytesReceived) {
  const v1::Observation observation = Missing(1, 5, 'a');
  ASSERT_THAT(Submit({observation}), IsOk());
  const StoredState stored = backing_->Read();
  ASSERT_FALSE(stored.journal.empty());
  state::v1::JournalEntry entry;
  ASSERT_TRUE(entry.ParseFromString(stored.journal.back().second));
  EXPECT_EQ(entry.observations().node_id(), kNode);
  EXPECT_EQ(entry.observations().observations_size(), 0);
  v1::ObservationBatch sent;
  *sent.add_observations() = observation;
  EXPECT_EQ(entry.observations().batch(), sent.SerializeAsString());
}

TEST_F(FleetStorageTest, AFailedAppendIsRefusedNotAppliedAndDegradesTheFleet) {
  const uint64_t version = Version();
  const StoredState stored = backing_->Read();
  store_->FailNextAppends(1, absl::UnavailableError("appending to breakerd.db: disk full"));

  absl::StatusOr<v1::ObservationAck> ack = Submit({Missing(1, 5, 'a')});
  EXPECT_THAT(ack,
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr("disk full"), HasSubstr("none of these was acknowledged"),
                             HasSubstr("free disk space"))));
  // Not applied, not published, not stored.
  EXPECT_EQ(Version(), version);
  EXPECT_TRUE(Builders().empty());
  EXPECT_EQ(backing_->Read(), stored);
  EXPECT_THAT(fleet_->storage_status(),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("disk full")));
  EXPECT_THAT(Writable(), ElementsAre(true, false));

  // Everything new is refused at once, without trying the store.
  const int appends = store_->append_calls();
  EXPECT_THAT(Submit({Missing(2, 6, 'b')}), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(Ban(7), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("not applied")));
  EXPECT_EQ(store_->append_calls(), appends);
  EXPECT_EQ(Version(), version);
  // The node is known (it reported), but nothing it sent was applied.
  const std::vector<v1::Node> nodes = fleet_->AllNodes();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].last_sequence(), 0u);
  EXPECT_FALSE(nodes[0].has_last_observation());
}

TEST_F(FleetStorageTest, RecoversWhenTheStoreWritesAgainAndTakesTheResentObservations) {
  const uint64_t version = Version();
  store_->FailNextAppends(1, absl::UnavailableError("disk full"));
  ASSERT_THAT(Submit({Missing(1, 5, 'a')}), StatusIs(absl::StatusCode::kUnavailable));
  const int loads = store_->load_calls();
  const int snapshots = store_->write_snapshot_calls();

  // Not before its time.
  AdvanceAndTick(StorageSupervisor::kFirstAttempt - absl::Milliseconds(1));
  EXPECT_EQ(store_->load_calls(), loads);
  EXPECT_FALSE(fleet_->storage_status().ok());

  AdvanceAndTick(absl::Milliseconds(1));
  EXPECT_EQ(store_->load_calls(), loads + 1);
  EXPECT_EQ(store_->write_snapshot_calls(), snapshots + 1);  // the proof that it writes
  EXPECT_THAT(fleet_->storage_status(), IsOk());
  EXPECT_THAT(Writable(), ElementsAre(true, false, true));
  EXPECT_EQ(Version(), version);

  // The node resends what was refused: taken now, once.
  absl::StatusOr<v1::ObservationAck> ack = Submit({Missing(1, 5, 'a')});
  ASSERT_THAT(ack, IsOk());
  EXPECT_EQ(ack->sequence(), 1u);
  EXPECT_EQ(ack->refused_size(), 0);
  EXPECT_THAT(Builders(), ElementsAre(std::make_tuple(5u, 1u, true)));
  EXPECT_EQ(Version(), version + 1);
  EXPECT_THAT(versions_.versions(), ElementsAre(version + 1));
}

TEST_F(FleetStorageTest, AFailedAppendThatLandedIsAppliedOnRecoveryAndResendsCountOnce) {
  const uint64_t version = Version();
  store_->CommitThenFailNextAppends(1, absl::UnavailableError("fsync failed"));
  ASSERT_THAT(Submit({Missing(1, 5, 'a')}), StatusIs(absl::StatusCode::kUnavailable));
  // Stored, but its outcome unknown: neither applied nor published until the store says so.
  EXPECT_EQ(backing_->Read().last_sequence(), 2u);  // 1: the first advance of time
  EXPECT_EQ(Version(), version);
  EXPECT_TRUE(Builders().empty());
  EXPECT_TRUE(versions_.versions().empty());

  // The store works again, and holds the batch: applied as a restart would replay it.
  AdvanceAndTick(StorageSupervisor::kFirstAttempt);
  ASSERT_THAT(fleet_->storage_status(), IsOk());
  EXPECT_THAT(Builders(), ElementsAre(std::make_tuple(5u, 1u, true)));
  EXPECT_EQ(Version(), version + 1);
  EXPECT_THAT(versions_.versions(), ElementsAre(version + 1));
  // The snapshot that proved the store writes folds it in.
  EXPECT_EQ(backing_->Read().snapshot_sequence, 2u);

  // The node, never acknowledged, resends it: a duplicate, acknowledged, counted once.
  absl::StatusOr<v1::ObservationAck> ack = Submit({Missing(1, 5, 'a')});
  ASSERT_THAT(ack, IsOk());
  EXPECT_EQ(ack->sequence(), 1u);
  EXPECT_EQ(ack->policy_version(), version + 1);
  EXPECT_THAT(Builders(), ElementsAre(std::make_tuple(5u, 1u, true)));
  EXPECT_EQ(Version(), version + 1);

  // A restart finds the same state.
  const v1::ListBuildersResponse before = fleet_->ListBuilders({}).value();
  ASSERT_NO_FATAL_FAILURE(Open());
  EXPECT_EQ(Version(), version + 1);
  EXPECT_EQ(fleet_->ListBuilders({}).value().SerializeAsString(), before.SerializeAsString());
}

TEST_F(FleetStorageTest, AnAdminActionWhoseWriteLandedSaysItMayTakeEffect) {
  store_->CommitThenFailNextAppends(1, absl::UnavailableError("fsync failed"));
  EXPECT_THAT(Ban(7),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("may still have stored it")));
  EXPECT_TRUE(Builders().empty());
  AdvanceAndTick(StorageSupervisor::kFirstAttempt);
  ASSERT_THAT(fleet_->storage_status(), IsOk());
  EXPECT_THAT(Builders(), ElementsAre(std::make_tuple(7u, 0u, true)));
}

TEST_F(FleetStorageTest, RetriesBackOffWhileTheStoreStillFails) {
  store_->FailNextAppends(1, absl::UnavailableError("disk full"));
  ASSERT_THAT(Submit({Missing(1, 5, 'a')}), StatusIs(absl::StatusCode::kUnavailable));
  store_->FailNextLoads(1, absl::UnavailableError("still no disk"));
  store_->FailNextWriteSnapshots(1, absl::UnavailableError("no room for a snapshot"));
  const int loads = store_->load_calls();

  // 1 s: the load fails.
  AdvanceAndTick(absl::Seconds(1));
  EXPECT_EQ(store_->load_calls(), loads + 1);
  EXPECT_THAT(fleet_->storage_status(),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("still no disk")));
  // The next try 2 s later: the load works, the snapshot does not, still degraded.
  AdvanceAndTick(absl::Seconds(1));
  EXPECT_EQ(store_->load_calls(), loads + 1);
  AdvanceAndTick(absl::Seconds(1));
  EXPECT_EQ(store_->load_calls(), loads + 2);
  EXPECT_THAT(fleet_->storage_status(),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no room for a snapshot")));
  EXPECT_THAT(Submit({Missing(1, 5, 'a')}), StatusIs(absl::StatusCode::kUnavailable));
  // Then 4 s later: recovered.
  AdvanceAndTick(absl::Seconds(3));
  EXPECT_EQ(store_->load_calls(), loads + 2);
  AdvanceAndTick(absl::Seconds(1));
  EXPECT_EQ(store_->load_calls(), loads + 3);
  EXPECT_THAT(fleet_->storage_status(), IsOk());
  EXPECT_THAT(Writable(), ElementsAre(true, false, true));
  EXPECT_THAT(Submit({Missing(1, 5, 'a')}), IsOk());
}

TEST_F(FleetStorageTest, TimeMovesOnAfterRecovery) {
  // The failed write is an advance of time, three slots on; the store recovers within that
  // slot, so the clock's slot has been submitted already, and refused.
  const core::ChainSpec chain = TestConfig().chain;
  store_->FailNextAppends(1, absl::UnavailableError("disk full"));
  AdvanceAndTick(absl::Seconds(chain.seconds_per_slot * 3));
  ASSERT_FALSE(fleet_->storage_status().ok());
  AdvanceAndTick(StorageSupervisor::kFirstAttempt);
  ASSERT_THAT(fleet_->storage_status(), IsOk());
  // The engine is at the clock's slot: an observation of that slot is not beyond
  // max_future_slots.
  v1::Observation now = Missing(1, 5, 'a');
  now.set_slot(core::SlotAt(clock_.Now(), chain));
  absl::StatusOr<v1::ObservationAck> ack = Submit({now});
  ASSERT_THAT(ack, IsOk());
  EXPECT_EQ(ack->refused_size(), 0) << ack->refused(0).message();
  EXPECT_THAT(Builders(), ElementsAre(std::make_tuple(5u, 1u, true)));
}

TEST(FleetStorageOpenTest, AStoreThatCannotAppendWhileOpeningIsAnError) {
  FakeClock clock(core::StartOf(kStartSlot, TestConfig().chain));
  auto store = std::make_unique<MemoryStateStore>();
  store->FailNextAppends(1, absl::UnavailableError("disk full"));
  Fleet::Options options;
  options.config = TestConfig();
  options.store = std::move(store);
  options.clock = &clock;
  options.run_ticker = false;
  EXPECT_THAT(Fleet::Open(std::move(options)),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("disk full")));
}

}  // namespace
}  // namespace breaker::service

namespace breaker::service {
namespace {

TEST_F(FleetStorageTest, AStoredConfigurationThatBreaksANewBoundIsReplacedNotALoss) {
  ASSERT_THAT(Submit({Missing(1, 5, 'a')}), IsOk());
  fleet_->Sync();
  fleet_.reset();  // the final snapshot
  // A snapshot as an earlier breakerd wrote it: caps whose policy this one finds too large.
  StoredState stored = backing_->Read();
  ASSERT_TRUE(stored.snapshot.has_value());
  state::v1::EngineSnapshot snapshot;
  ASSERT_TRUE(snapshot.ParseFromString(*stored.snapshot));
  snapshot.mutable_config()->set_max_tracked_builders(16384);
  MemoryStateStore writer(backing_);
  ASSERT_THAT(writer.WriteSnapshot(snapshot.SerializeAsString(), stored.snapshot_sequence), IsOk());

  ASSERT_NO_FATAL_FAILURE(Open());
  EXPECT_TRUE(fleet_->policy()->policy.banned_builders.contains(5));
  EXPECT_EQ(fleet_->EffectiveConfig().max_tracked_builders(), TestConfig().max_tracked_builders);
}

}  // namespace
}  // namespace breaker::service
