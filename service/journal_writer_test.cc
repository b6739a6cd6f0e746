#include "service/journal_writer.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/fake_clock.h"
#include "common/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/storage/memory_state_store.h"
#include "tests/support/test_util.h"

namespace breaker::service {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);
constexpr absl::Duration kDeadline = absl::Seconds(30);

std::unique_ptr<JournalChange> Change(std::string entry) {
  auto change = std::make_unique<JournalChange>();
  change->entry = std::move(entry);
  return change;
}

// Records what the writer hands over. Apply can be held until released.
class RecordingSink : public JournalWriter::Sink {
 public:
  explicit RecordingSink(MemoryStateStore& store) : store_(store) {}

  bool Apply(const JournalChanges& changes, uint64_t last_sequence) override {
    // Durable first: the store holds the round before it is applied.
    const absl::StatusOr<StoredState> stored = store_.Load();
    EXPECT_TRUE(stored.ok());
    if (stored.ok()) {
      EXPECT_GE(stored->last_sequence(), last_sequence);
    }
    {
      MutexLock lock(&mu_);
      rounds_.push_back({changes.size(), last_sequence});
      in_apply_ = true;
    }
    if (hold_apply_.load()) release_apply_.WaitForNotification();
    MutexLock lock(&mu_);
    in_apply_ = false;
    return want_snapshot_;
  }

  void Refuse(const JournalChanges& changes, const absl::Status& fault, bool written) override {
    MutexLock lock(&mu_);
    refusals_.push_back({changes.size(), written});
    last_fault_ = fault;
  }

  absl::Status WriteSnapshot() override {
    MutexLock lock(&mu_);
    ++snapshots_;
    return absl::OkStatus();
  }

  void Recover() override {
    MutexLock lock(&mu_);
    // The applier is idle whenever the recovery runs.
    EXPECT_FALSE(in_apply_);
    ++recoveries_;
  }

  struct Round {
    size_t changes;
    uint64_t last_sequence;
    bool operator==(const Round& other) const {
      return changes == other.changes && last_sequence == other.last_sequence;
    }
  };
  struct Refusal {
    size_t changes;
    bool written;
    bool operator==(const Refusal& other) const {
      return changes == other.changes && written == other.written;
    }
  };

  std::vector<Round> rounds() const {
    MutexLock lock(&mu_);
    return rounds_;
  }
  std::vector<Refusal> refusals() const {
    MutexLock lock(&mu_);
    return refusals_;
  }
  int snapshots() const {
    MutexLock lock(&mu_);
    return snapshots_;
  }
  int recoveries() const {
    MutexLock lock(&mu_);
    return recoveries_;
  }
  bool in_apply() const {
    MutexLock lock(&mu_);
    return in_apply_;
  }
  void set_want_snapshot(bool want) {
    MutexLock lock(&mu_);
    want_snapshot_ = want;
  }

  // Apply blocks until Release().
  void Hold() { hold_apply_ = true; }
  void Release() { release_apply_.Notify(); }

 private:
  MemoryStateStore& store_;
  mutable Mutex mu_;
  std::vector<Round> rounds_ ABSL_GUARDED_BY(mu_);
  std::vector<Refusal> refusals_ ABSL_GUARDED_BY(mu_);
  absl::Status last_fault_ ABSL_GUARDED_BY(mu_);
  int snapshots_ ABSL_GUARDED_BY(mu_) = 0;
  int recoveries_ ABSL_GUARDED_BY(mu_) = 0;
  bool in_apply_ ABSL_GUARDED_BY(mu_) = false;
  bool want_snapshot_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> hold_apply_{false};
  absl::Notification release_apply_;
};

class JournalWriterTest : public ::testing::Test {
 protected:
  std::unique_ptr<JournalWriter> NewWriter(uint64_t snapshot_every_entries = 1'000'000) {
    JournalWriter::Options options;
    options.store = &store_;
    options.supervisor = &supervisor_;
    options.sink = &sink_;
    options.metrics = &NoMetrics();
    options.clock = &clock_;
    options.snapshot_every_entries = snapshot_every_entries;
    return std::make_unique<JournalWriter>(options);
  }

  std::vector<std::string> StoredEntries() {
    const StoredState stored = store_.Load().value();
    std::vector<std::string> entries;
    for (const auto& [sequence, bytes] : stored.journal) entries.push_back(bytes);
    return entries;
  }

  testing::FakeClock clock_{kStart};
  MemoryStateStore store_;
  StorageSupervisor supervisor_{clock_, nullptr};
  RecordingSink sink_{store_};
};

TEST_F(JournalWriterTest, StoresInSubmissionOrderAndAppliesOnlyWhatIsStored) {
  auto writer = NewWriter();
  std::vector<std::string> submitted;
  for (int i = 0; i < 100; ++i) {
    submitted.push_back(absl::StrCat("entry ", i));
    writer->Submit(Change(submitted.back()));
  }
  writer->Sync();
  EXPECT_EQ(StoredEntries(), submitted);
  size_t applied = 0;
  uint64_t last = 0;
  for (const RecordingSink::Round& round : sink_.rounds()) {
    applied += round.changes;
    EXPECT_EQ(round.last_sequence, last + round.changes);
    last = round.last_sequence;
  }
  EXPECT_EQ(applied, submitted.size());
  EXPECT_THAT(sink_.refusals(), IsEmpty());
}

TEST_F(JournalWriterTest, GroupsWhatIsQueuedDuringAnAppendIntoOneWrite) {
  absl::Notification in_first_append;
  absl::Notification release_first_append;
  std::atomic<int> appends{0};
  store_.SetAppendHook([&](const std::vector<std::string>&) {
    if (appends.fetch_add(1) == 0) {
      in_first_append.Notify();
      release_first_append.WaitForNotification();
    }
  });
  auto writer = NewWriter();
  writer->Submit(Change("first"));
  in_first_append.WaitForNotification();
  for (int i = 0; i < 10; ++i) writer->Submit(Change(absl::StrCat("queued ", i)));
  release_first_append.Notify();
  writer->Sync();
  EXPECT_EQ(appends.load(), 2);
  EXPECT_THAT(sink_.rounds(),
              ElementsAre(RecordingSink::Round{1, 1}, RecordingSink::Round{10, 11}));
}

// A store that takes at most three entries in one Append.
class SmallAppendStore : public MemoryStateStore {
 public:
  bool FitsOneAppend(size_t entries, uint64_t /*bytes*/) const override { return entries <= 3; }
};

TEST(JournalWriterRoundsTest, SplitsARoundWhereTheStoresLimitIs) {
  testing::FakeClock clock(kStart);
  SmallAppendStore store;
  StorageSupervisor supervisor(clock, nullptr);
  RecordingSink sink(store);
  absl::Notification in_first_append;
  absl::Notification release_first_append;
  std::atomic<int> appends{0};
  store.SetAppendHook([&](const std::vector<std::string>& entries) {
    EXPECT_LE(entries.size(), 3u);
    if (appends.fetch_add(1) == 0) {
      in_first_append.Notify();
      release_first_append.WaitForNotification();
    }
  });
  JournalWriter::Options options;
  options.store = &store;
  options.supervisor = &supervisor;
  options.sink = &sink;
  options.metrics = &NoMetrics();
  options.clock = &clock;
  JournalWriter writer(options);
  writer.Submit(Change("first"));
  in_first_append.WaitForNotification();
  for (int i = 0; i < 7; ++i) writer.Submit(Change(absl::StrCat("queued ", i)));
  release_first_append.Notify();
  writer.Sync();
  EXPECT_THAT(sink.rounds(), ElementsAre(RecordingSink::Round{1, 1}, RecordingSink::Round{3, 4},
                                         RecordingSink::Round{3, 7}, RecordingSink::Round{1, 8}));
  EXPECT_EQ(store.Load().value().journal.size(), 8u);
}

TEST_F(JournalWriterTest, AppendsTheNextRoundWhileTheLastOneIsApplied) {
  sink_.Hold();
  std::atomic<int> appends{0};
  store_.SetAppendHook([&](const std::vector<std::string>&) { ++appends; });
  auto writer = NewWriter();
  writer->Submit(Change("round 1"));
  ASSERT_TRUE(testing::WaitFor([&] { return sink_.in_apply(); }, kDeadline));
  // Round 1 is held in Apply; round 2 still reaches the store.
  writer->Submit(Change("round 2"));
  ASSERT_TRUE(testing::WaitFor([&] { return appends.load() == 2; }, kDeadline));
  EXPECT_THAT(StoredEntries(), ElementsAre("round 1", "round 2"));
  EXPECT_EQ(sink_.rounds().size(), 1u);
  sink_.Release();
  writer->Sync();
  EXPECT_THAT(sink_.rounds(), ElementsAre(RecordingSink::Round{1, 1}, RecordingSink::Round{1, 2}));
}

TEST_F(JournalWriterTest, AFailedAppendIsRefusedAppliesNothingAndRefusesWhatFollows) {
  auto writer = NewWriter();
  writer->Submit(Change("stored"));
  writer->Sync();
  store_.FailNextAppends(1, absl::UnavailableError("disk full"));
  writer->Submit(Change("lost"));
  writer->Sync();
  EXPECT_EQ(supervisor_.status(), absl::UnavailableError("disk full"));
  writer->Submit(Change("refused at once"));
  writer->Sync();
  EXPECT_THAT(sink_.rounds(), ElementsAre(RecordingSink::Round{1, 1}));
  EXPECT_THAT(sink_.refusals(),
              ElementsAre(RecordingSink::Refusal{1, true}, RecordingSink::Refusal{1, false}));
  EXPECT_THAT(StoredEntries(), ElementsAre("stored"));
}

TEST_F(JournalWriterTest, RecoveryRunsWithTheApplierIdleAndSyncWaitsForIt) {
  auto writer = NewWriter();
  writer->Submit(Change("a"));
  writer->RequestRecovery();
  writer->RequestRecovery();
  writer->Sync();
  EXPECT_GE(sink_.recoveries(), 1);
  EXPECT_LE(sink_.recoveries(), 2);
  const int before = sink_.recoveries();
  writer->RequestRecovery();
  writer->Sync();
  EXPECT_EQ(sink_.recoveries(), before + 1);
}

TEST_F(JournalWriterTest, SnapshotsAtItsCadenceAndWhenTheSinkAsks) {
  auto writer = NewWriter(/*snapshot_every_entries=*/3);
  for (int i = 0; i < 7; ++i) {
    writer->Submit(Change(absl::StrCat(i)));
    writer->Sync();
  }
  EXPECT_EQ(sink_.snapshots(), 2);
  sink_.set_want_snapshot(true);
  writer->Submit(Change("new epoch"));
  writer->Sync();
  EXPECT_EQ(sink_.snapshots(), 3);
}

TEST_F(JournalWriterTest, DestructionStoresAndAppliesEverythingSubmitted) {
  auto writer = NewWriter();
  for (int i = 0; i < 50; ++i) writer->Submit(Change(absl::StrCat(i)));
  writer.reset();
  size_t applied = 0;
  for (const RecordingSink::Round& round : sink_.rounds()) applied += round.changes;
  EXPECT_EQ(applied, 50u);
  EXPECT_EQ(StoredEntries().size(), 50u);
}

}  // namespace
}  // namespace breaker::service
