// One conformance suite for every StateStore (in the manner of ml-metadata's
// metadata_store_test_suite), then the tests particular to each implementation.

#include "service/storage/state_store.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/storage/etcd_state_store.h"
#include "service/storage/memory_state_store.h"
#include "service/storage/sqlite_state_store.h"
#include "tests/support/etcd_cluster.h"
#include "tests/support/status_matchers.h"

namespace breaker::service {

// Prints a state without flooding the log with megabyte entries.
void PrintTo(const StoredState& state, std::ostream* os) {
  auto brief = [](const std::string& bytes) {
    constexpr size_t kShown = 24;
    std::string shown = absl::CHexEscape(bytes.substr(0, kShown));
    if (bytes.size() > kShown) absl::StrAppend(&shown, "...(", bytes.size(), " bytes)");
    return absl::StrCat("\"", shown, "\"");
  };
  *os << "{snapshot: " << (state.snapshot ? brief(*state.snapshot) : "none")
      << ", snapshot_sequence: " << state.snapshot_sequence << ", journal: [";
  for (const auto& [sequence, entry] : state.journal) *os << " " << sequence << ":" << brief(entry);
  *os << " ]}";
}

namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

using Journal = std::vector<std::pair<uint64_t, std::string>>;

StoredState State(std::optional<std::string> snapshot, uint64_t snapshot_sequence,
                  Journal journal) {
  StoredState state;
  state.snapshot = std::move(snapshot);
  state.snapshot_sequence = snapshot_sequence;
  state.journal = std::move(journal);
  return state;
}

// A new, empty directory under the test's temporary directory.
std::string NewTempDirectory() {
  const char* root = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(root != nullptr ? root : "/tmp", "/state_store_XXXXXX");
  const char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr) << "mkdtemp " << pattern;
  return pattern;
}

// `size` pseudo-random bytes, every value from 0 to 255 likely.
std::string RandomBytes(size_t size, uint32_t seed) {
  std::mt19937 random(seed);
  std::string bytes(size, '\0');
  for (char& byte : bytes) byte = static_cast<char>(random() & 0xff);
  return bytes;
}

// ---------------------------------------------------------------------------------------------
// The conformance suite.

// Where stores keep what they commit: every store opened over one home sees what earlier ones
// committed there, as breakerd does after a restart.
class StoreHome {
 public:
  virtual ~StoreHome() = default;
  virtual absl::StatusOr<std::unique_ptr<StateStore>> Open() = 0;
};

class SqliteHome : public StoreHome {
 public:
  absl::StatusOr<std::unique_ptr<StateStore>> Open() override {
    absl::StatusOr<std::unique_ptr<SqliteStateStore>> store = SqliteStateStore::Open(directory_);
    if (!store.ok()) return store.status();
    return std::unique_ptr<StateStore>(*std::move(store));
  }

 private:
  const std::string directory_ = NewTempDirectory();
};

class MemoryHome : public StoreHome {
 public:
  absl::StatusOr<std::unique_ptr<StateStore>> Open() override {
    return std::make_unique<MemoryStateStore>(backing_);
  }

 private:
  const std::shared_ptr<MemoryStateStore::Backing> backing_ =
      std::make_shared<MemoryStateStore::Backing>();
};

// One etcd cluster of three members for every test of the binary (started at the first use,
// from the test's thread); each home keeps its keys under a prefix of its own. Requests up to
// 8 MiB, so that the large entries above fit one Append; snapshots in chunks of 512 KiB, so
// that a 2 MiB snapshot takes several requests.
class EtcdHome : public StoreHome {
 public:
  static constexpr int64_t kMaxRequestBytes = 8 << 20;

  absl::StatusOr<std::unique_ptr<StateStore>> Open() override {
    static breaker::testing::EtcdCluster* const cluster = [] {
      breaker::testing::EtcdCluster::Options options;
      options.directory = NewTempDirectory();
      options.max_request_bytes = kMaxRequestBytes;
      absl::StatusOr<std::unique_ptr<breaker::testing::EtcdCluster>> started =
          breaker::testing::EtcdCluster::Start(options);
      EXPECT_THAT(started, IsOk());
      return started.ok() ? started->release() : nullptr;
    }();
    if (cluster == nullptr) return absl::UnavailableError("no etcd cluster");
    EtcdStateStore::Options options;
    options.endpoints = cluster->endpoints();
    options.prefix = prefix_;
    options.max_request_bytes = kMaxRequestBytes;
    options.snapshot_chunk_bytes = 512 << 10;
    // The store before it revoked its lease as it closed.
    options.campaign_timeout = absl::Seconds(10);
    absl::StatusOr<std::unique_ptr<EtcdStateStore>> store = EtcdStateStore::Open(options);
    if (!store.ok()) return store.status();
    return std::unique_ptr<StateStore>(*std::move(store));
  }

 private:
  static inline int homes_ = 0;
  const std::string prefix_ = absl::StrCat("/conformance/", ++homes_);
};

struct Backend {
  std::string name;
  std::function<std::unique_ptr<StoreHome>()> make_home;
};

class StateStoreConformanceTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    home_ = GetParam().make_home();
    ASSERT_NO_FATAL_FAILURE(Reopen());
  }

  // Drops the store and opens a new one over the same home, as a restart does.
  void Reopen() {
    store_.reset();
    absl::StatusOr<std::unique_ptr<StateStore>> store = home_->Open();
    ASSERT_THAT(store, IsOk());
    store_ = *std::move(store);
  }

  StoredState Load() {
    absl::StatusOr<StoredState> state = store_->Load();
    EXPECT_THAT(state, IsOk());
    return state.ok() ? *std::move(state) : StoredState();
  }

  // Returns the sequence of the last entry, or 0 after a failure.
  uint64_t Append(const std::vector<std::string>& entries) {
    absl::StatusOr<uint64_t> last = store_->Append(entries);
    EXPECT_THAT(last, IsOk());
    return last.ok() ? *last : 0;
  }

  std::unique_ptr<StoreHome> home_;
  std::unique_ptr<StateStore> store_;
};

TEST_P(StateStoreConformanceTest, NewStoreHoldsNothing) {
  EXPECT_EQ(Load(), State(std::nullopt, 0, {}));
}

TEST_P(StateStoreConformanceTest, AppendNumbersEntriesConsecutivelyFromOne) {
  EXPECT_EQ(Append({"a", "b", "c"}), 3u);
  EXPECT_EQ(Append({"d"}), 4u);
  EXPECT_EQ(Append({"e", "f"}), 6u);
}

TEST_P(StateStoreConformanceTest, AppendOfNoEntriesStoresNothing) {
  EXPECT_EQ(Append({}), 0u);
  EXPECT_EQ(Append({"a", "b"}), 2u);
  EXPECT_EQ(Append({}), 2u);
  EXPECT_EQ(Load(), State(std::nullopt, 0, {{1, "a"}, {2, "b"}}));
}

TEST_P(StateStoreConformanceTest, LoadReturnsTheJournalInOrder) {
  Append({"one", "two"});
  Append({"three"});
  Append({"four", "five", "six"});
  EXPECT_EQ(Load(),
            State(std::nullopt, 0,
                  {{1, "one"}, {2, "two"}, {3, "three"}, {4, "four"}, {5, "five"}, {6, "six"}}));
}

TEST_P(StateStoreConformanceTest, SnapshotDropsFoldedEntriesAndKeepsLaterOnes) {
  Append({"a", "b", "c", "d"});
  ASSERT_THAT(store_->WriteSnapshot("ab", 2), IsOk());
  EXPECT_EQ(Load(), State("ab", 2, {{3, "c"}, {4, "d"}}));

  EXPECT_EQ(Append({"e"}), 5u);
  ASSERT_THAT(store_->WriteSnapshot("abcd", 4), IsOk());
  EXPECT_EQ(Load(), State("abcd", 4, {{5, "e"}}));
}

TEST_P(StateStoreConformanceTest, SequencesGoOnAfterASnapshotEmptiesTheJournal) {
  Append({"a", "b", "c"});
  ASSERT_THAT(store_->WriteSnapshot("abc", 3), IsOk());
  EXPECT_EQ(Load(), State("abc", 3, {}));
  EXPECT_EQ(Append({}), 3u);
  EXPECT_EQ(Append({"d"}), 4u);

  ASSERT_THAT(store_->WriteSnapshot("abcd", 4), IsOk());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(Load(), State("abcd", 4, {}));
  EXPECT_EQ(Append({"e"}), 5u);
}

TEST_P(StateStoreConformanceTest, SnapshotAtTheCurrentSequenceReplacesIt) {
  Append({"a", "b"});
  ASSERT_THAT(store_->WriteSnapshot("first", 1), IsOk());
  ASSERT_THAT(store_->WriteSnapshot("second", 1), IsOk());
  EXPECT_EQ(Load(), State("second", 1, {{2, "b"}}));
}

TEST_P(StateStoreConformanceTest, SnapshotOfANewStoreFoldsInNothing) {
  ASSERT_THAT(store_->WriteSnapshot("initial", 0), IsOk());
  EXPECT_EQ(Load(), State("initial", 0, {}));
  EXPECT_EQ(Append({"a"}), 1u);
}

TEST_P(StateStoreConformanceTest, SnapshotBeyondTheLastEntryIsRefused) {
  EXPECT_THAT(store_->WriteSnapshot("x", 1), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(Load(), State(std::nullopt, 0, {}));

  Append({"a", "b"});
  ASSERT_THAT(store_->WriteSnapshot("a", 1), IsOk());
  const StoredState before = Load();
  EXPECT_THAT(store_->WriteSnapshot("abc", 3),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("3")));
  EXPECT_EQ(Load(), before);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(Load(), before);
  EXPECT_EQ(Append({"c"}), 3u);
}

TEST_P(StateStoreConformanceTest, SnapshotBelowTheCurrentOneIsRefused) {
  Append({"a", "b", "c"});
  ASSERT_THAT(store_->WriteSnapshot("ab", 2), IsOk());
  const StoredState before = Load();
  EXPECT_THAT(store_->WriteSnapshot("a", 1), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(store_->WriteSnapshot("", 0), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(Load(), before);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(Load(), before);
}

TEST_P(StateStoreConformanceTest, ReopenedStoreSeesEverythingCommitted) {
  Append({"a", "b"});
  ASSERT_THAT(store_->WriteSnapshot("a", 1), IsOk());
  Append({"c"});
  const StoredState committed = Load();
  ASSERT_EQ(committed, State("a", 1, {{2, "b"}, {3, "c"}}));

  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(Load(), committed);
  EXPECT_EQ(Append({"d"}), 4u);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(Load(), State("a", 1, {{2, "b"}, {3, "c"}, {4, "d"}}));
}

TEST_P(StateStoreConformanceTest, LargeEntriesRoundTrip) {
  constexpr size_t kMiB = 1 << 20;
  const std::string first = RandomBytes(kMiB, 1);
  const std::string second = RandomBytes(kMiB, 2);
  const std::string third = RandomBytes(kMiB + 1, 3);
  const std::string snapshot = RandomBytes(2 * kMiB, 4);
  EXPECT_EQ(Append({first, second}), 2u);
  EXPECT_EQ(Append({third}), 3u);
  ASSERT_THAT(store_->WriteSnapshot(snapshot, 1), IsOk());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(Load(), State(snapshot, 1, {{2, second}, {3, third}}));
}

TEST_P(StateStoreConformanceTest, BinaryBytesRoundTrip) {
  std::string every_byte;
  for (int byte = 0; byte < 256; ++byte) every_byte.push_back(static_cast<char>(byte));
  const std::string with_nuls("\0a\0\0b\0", 6);
  Append({every_byte, "", with_nuls, std::string(1, '\0')});
  ASSERT_THAT(store_->WriteSnapshot(with_nuls, 1), IsOk());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(Load(), State(with_nuls, 1, {{2, ""}, {3, with_nuls}, {4, std::string(1, '\0')}}));

  // An empty snapshot is a snapshot, not the absence of one.
  ASSERT_THAT(store_->WriteSnapshot("", 4), IsOk());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(Load(), State("", 4, {}));
}

TEST_P(StateStoreConformanceTest, ConcurrentAppendsGetUniqueConsecutiveSequences) {
  constexpr int kWriters = 4;
  constexpr int kBatchesPerWriter = 40;
  // What each writer appended, by the sequence the store gave it.
  std::vector<std::map<uint64_t, std::string>> appended(kWriters);
  std::vector<std::thread> threads;
  for (int writer = 0; writer < kWriters; ++writer) {
    threads.emplace_back([this, writer, &appended] {
      uint64_t previous = 0;
      for (int batch = 0; batch < kBatchesPerWriter; ++batch) {
        std::vector<std::string> entries;
        for (int i = 0; i <= batch % 3; ++i) {
          entries.push_back(absl::StrCat("writer ", writer, " batch ", batch, " entry ", i));
        }
        absl::StatusOr<uint64_t> last = store_->Append(entries);
        ASSERT_THAT(last, IsOk());
        ASSERT_GT(*last, previous);
        previous = *last;
        for (size_t i = 0; i < entries.size(); ++i) {
          appended[writer][*last - entries.size() + 1 + i] = entries[i];
        }
      }
    });
  }
  // Meanwhile, fold what is there into snapshots, as the service does.
  threads.emplace_back([this] {
    for (int i = 0; i < 10; ++i) {
      absl::StatusOr<StoredState> state = store_->Load();
      ASSERT_THAT(state, IsOk());
      ASSERT_THAT(store_->WriteSnapshot(absl::StrCat("snapshot ", i), state->last_sequence()),
                  IsOk());
    }
  });
  for (std::thread& thread : threads) thread.join();

  std::map<uint64_t, std::string> all;
  for (const auto& by_sequence : appended) {
    for (const auto& [sequence, entry] : by_sequence) {
      EXPECT_TRUE(all.emplace(sequence, entry).second) << "sequence " << sequence << " twice";
    }
  }
  uint64_t total = 0;
  for (int batch = 0; batch < kBatchesPerWriter; ++batch) total += kWriters * (batch % 3 + 1);
  ASSERT_EQ(all.size(), total);
  EXPECT_EQ(all.begin()->first, 1u);
  EXPECT_EQ(all.rbegin()->first, total);

  ASSERT_NO_FATAL_FAILURE(Reopen());
  const StoredState state = Load();
  EXPECT_EQ(state.last_sequence(), total);
  for (const auto& [sequence, entry] : state.journal) EXPECT_EQ(entry, all[sequence]);
}

INSTANTIATE_TEST_SUITE_P(
    AllStores, StateStoreConformanceTest,
    ::testing::Values(Backend{"Sqlite", [] { return std::make_unique<SqliteHome>(); }},
                      Backend{"Memory", [] { return std::make_unique<MemoryHome>(); }},
                      Backend{"Etcd", [] { return std::make_unique<EtcdHome>(); }}),
    [](const ::testing::TestParamInfo<Backend>& info) { return info.param.name; });

// ---------------------------------------------------------------------------------------------
// MemoryStateStore: its fault injection.

TEST(MemoryStateStoreTest, FailedAppendsStoreNothingThenAppendsWorkAgain) {
  MemoryStateStore store;
  store.FailNextAppends(2, absl::UnavailableError("disk on fire"));
  EXPECT_THAT(store.Append({"a"}), StatusIs(absl::StatusCode::kUnavailable, "disk on fire"));
  EXPECT_THAT(store.Append({"b"}), StatusIs(absl::StatusCode::kUnavailable));
  absl::StatusOr<uint64_t> last = store.Append({"c"});
  ASSERT_THAT(last, IsOk());
  EXPECT_EQ(*last, 1u);
  EXPECT_EQ(store.backing()->Read(), State(std::nullopt, 0, {{1, "c"}}));
  EXPECT_EQ(store.append_calls(), 3);
}

TEST(MemoryStateStoreTest, CommitThenFailCommitsButReportsTheFailure) {
  MemoryStateStore store;
  store.CommitThenFailNextAppends(1, absl::UnavailableError("fsync failed"));
  EXPECT_THAT(store.Append({"a"}), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(store.backing()->Read(), State(std::nullopt, 0, {{1, "a"}}));
}

TEST(MemoryStateStoreTest, FailedSnapshotsAndLoadsChangeNothing) {
  MemoryStateStore store;
  ASSERT_THAT(store.Append({"a"}), IsOk());
  store.FailNextWriteSnapshots(1, absl::DataLossError("gone"));
  EXPECT_THAT(store.WriteSnapshot("a", 1), StatusIs(absl::StatusCode::kDataLoss));
  store.FailNextLoads(1, absl::InternalError("bug"));
  EXPECT_THAT(store.Load(), StatusIs(absl::StatusCode::kInternal));
  absl::StatusOr<StoredState> state = store.Load();
  ASSERT_THAT(state, IsOk());
  EXPECT_EQ(*state, State(std::nullopt, 0, {{1, "a"}}));
  EXPECT_EQ(store.write_snapshot_calls(), 1);
  EXPECT_EQ(store.load_calls(), 2);
}

TEST(MemoryStateStoreTest, ARestartedStoreSeesCommitsButNotFaults) {
  auto store = std::make_unique<MemoryStateStore>();
  const std::shared_ptr<MemoryStateStore::Backing> backing = store->backing();
  ASSERT_THAT(store->Append({"a"}), IsOk());
  store->FailNextAppends(5, absl::UnavailableError("disk on fire"));
  store = std::make_unique<MemoryStateStore>(backing);
  absl::StatusOr<uint64_t> last = store->Append({"b"});
  ASSERT_THAT(last, IsOk());
  EXPECT_EQ(*last, 2u);
}

TEST(MemoryStateStoreTest, AppendHookCanHoldAnAppendInFlight) {
  MemoryStateStore store;
  Mutex mu;
  CondVar changed;
  bool entered = false;
  bool released = false;
  std::vector<std::vector<std::string>> batches;
  store.SetAppendHook([&](const std::vector<std::string>& entries) {
    MutexLock lock(&mu);
    batches.push_back(entries);
    entered = true;
    changed.SignalAll();
    while (!released) changed.Wait(&mu);
  });
  std::thread appender([&] { EXPECT_THAT(store.Append({"a", "b"}), IsOk()); });
  {
    MutexLock lock(&mu);
    while (!entered) changed.Wait(&mu);
    // Held in the hook: nothing committed yet.
    EXPECT_EQ(store.backing()->Read(), State(std::nullopt, 0, {}));
    released = true;
    changed.SignalAll();
  }
  appender.join();
  EXPECT_EQ(batches, (std::vector<std::vector<std::string>>{{"a", "b"}}));
  EXPECT_EQ(store.backing()->Read(), State(std::nullopt, 0, {{1, "a"}, {2, "b"}}));
}

// ---------------------------------------------------------------------------------------------
// SqliteStateStore: the file, its setup and its failures.

std::string DatabasePath(const std::string& directory) {
  return absl::StrCat(directory, "/", SqliteStateStore::kFileName);
}

// Runs `sql` on the database at `path` through a connection of its own.
void ExecSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK) << path;
  char* error = nullptr;
  const int code = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  EXPECT_EQ(code, SQLITE_OK) << sql << ": " << (error != nullptr ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

// Returns the first column of the first row of `sql`, run on the database at `path`.
std::string QuerySql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK) << path;
  sqlite3_stmt* statement = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr), SQLITE_OK) << sql;
  std::string result;
  if (sqlite3_step(statement) == SQLITE_ROW) {
    result = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return result;
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << contents;
  ASSERT_TRUE(file.good()) << path;
}

TEST(SqliteStateStoreTest, CreatesTheDatabaseInTheDirectory) {
  const std::string directory = NewTempDirectory();
  absl::StatusOr<std::unique_ptr<SqliteStateStore>> store = SqliteStateStore::Open(directory);
  ASSERT_THAT(store, IsOk());
  EXPECT_EQ((*store)->path(), DatabasePath(directory));
  struct stat info;
  EXPECT_EQ(stat(DatabasePath(directory).c_str(), &info), 0);
}

TEST(SqliteStateStoreTest, OneStoreAtATimeHoldsTheDirectory) {
  const std::string directory = NewTempDirectory();
  {
    absl::StatusOr<std::unique_ptr<SqliteStateStore>> first = SqliteStateStore::Open(directory);
    ASSERT_THAT(first, IsOk());
    EXPECT_THAT(
        SqliteStateStore::Open(directory),
        StatusIs(absl::StatusCode::kFailedPrecondition,
                 AllOf(HasSubstr("another breakerd is using the state directory " + directory),
                       HasSubstr("--state_dir"))));
  }
  // Released with the store.
  EXPECT_THAT(SqliteStateStore::Open(directory), IsOk());
}

TEST(SqliteStateStoreTest, UsesWriteAheadLogging) {
  const std::string directory = NewTempDirectory();
  absl::StatusOr<std::unique_ptr<SqliteStateStore>> store = SqliteStateStore::Open(directory);
  ASSERT_THAT(store, IsOk());
  ASSERT_THAT((*store)->Append({"a"}), IsOk());
  // WAL mode is a property of the file, so another connection sees it.
  EXPECT_EQ(QuerySql(DatabasePath(directory), "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(QuerySql(DatabasePath(directory), "PRAGMA user_version"),
            absl::StrCat(SqliteStateStore::kSchemaVersion));
}

TEST(SqliteStateStoreTest, CreatesADatabaseWithThePageSizeAskedAndKeepsAnExistingOnes) {
  const std::string directory = NewTempDirectory();
  {
    absl::StatusOr<std::unique_ptr<SqliteStateStore>> store =
        SqliteStateStore::Open(directory, 4096);
    ASSERT_THAT(store, IsOk());
    ASSERT_THAT((*store)->Append({"a"}), IsOk());
  }
  EXPECT_EQ(QuerySql(DatabasePath(directory), "PRAGMA page_size"), "4096");
  {
    // breakerd's own page size does not apply to a database made before it.
    absl::StatusOr<std::unique_ptr<SqliteStateStore>> reopened = SqliteStateStore::Open(directory);
    ASSERT_THAT(reopened, IsOk());
    absl::StatusOr<StoredState> state = (*reopened)->Load();
    ASSERT_THAT(state, IsOk());
    EXPECT_EQ(state->journal.size(), 1u);
  }
  EXPECT_EQ(QuerySql(DatabasePath(directory), "PRAGMA page_size"), "4096");
}

TEST(SqliteStateStoreTest, CreatesADatabaseWithBreakerdsPageSize) {
  const std::string directory = NewTempDirectory();
  ASSERT_THAT(SqliteStateStore::Open(directory), IsOk());
  EXPECT_EQ(QuerySql(DatabasePath(directory), "PRAGMA page_size"),
            absl::StrCat(SqliteStateStore::kPageSize));
}

TEST(SqliteStateStoreTest, ASnapshotDoesNotWriteTheEntriesItFoldsAgain) {
  const std::string directory = NewTempDirectory();
  absl::StatusOr<std::unique_ptr<SqliteStateStore>> store = SqliteStateStore::Open(directory);
  ASSERT_THAT(store, IsOk());
  // Each entry of about a batch of observations; in all, far below the size at which the -wal
  // file is checkpointed and starts again, so that the file only grows here.
  const std::vector<std::string> entries(32, std::string(40000, 'x'));
  absl::StatusOr<uint64_t> last = (*store)->Append(entries);
  ASSERT_THAT(last, IsOk());
  const std::string wal = DatabasePath(directory) + "-wal";
  struct stat before;
  ASSERT_EQ(stat(wal.c_str(), &before), 0);
  ASSERT_THAT((*store)->WriteSnapshot("state", *last), IsOk());
  struct stat after;
  ASSERT_EQ(stat(wal.c_str(), &after), 0);
  // Freeing the entries' pages rewrites the pages of the table that held them, not every page
  // freed: with SQLite 3.40 in 32 KiB pages, 9 pages, against 43 when it zeroes freed pages.
  EXPECT_LT(after.st_size - before.st_size, entries.size() * entries[0].size() / 2)
      << "the snapshot wrote " << after.st_size - before.st_size << " bytes for " << entries.size()
      << " entries of " << entries[0].size() << " bytes";
  absl::StatusOr<StoredState> state = (*store)->Load();
  ASSERT_THAT(state, IsOk());
  EXPECT_TRUE(state->journal.empty());
}

TEST(SqliteStateStoreTest, RefusesAPageSizeSqliteCannotUse) {
  for (int page_size : {-1, 256, 1000, 131072}) {
    EXPECT_THAT(SqliteStateStore::Open(NewTempDirectory(), page_size),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat("page size ", page_size, " refused"))));
  }
}

TEST(SqliteStateStoreTest, FileThatIsNoDatabaseIsDataLoss) {
  const std::string directory = NewTempDirectory();
  std::string garbage;
  for (int i = 0; i < 200; ++i) garbage += "this is not an SQLite database. ";
  ASSERT_NO_FATAL_FAILURE(WriteFile(DatabasePath(directory), garbage));
  EXPECT_THAT(
      SqliteStateStore::Open(directory),
      StatusIs(absl::StatusCode::kDataLoss, AllOf(HasSubstr(DatabasePath(directory)),
                                                  HasSubstr("backup"), HasSubstr("move it away"))));
}

TEST(SqliteStateStoreTest, CorruptDatabaseIsDataLoss) {
  const std::string directory = NewTempDirectory();
  {
    absl::StatusOr<std::unique_ptr<SqliteStateStore>> store = SqliteStateStore::Open(directory);
    ASSERT_THAT(store, IsOk());
    for (int i = 0; i < 20; ++i) ASSERT_THAT((*store)->Append({RandomBytes(3000, i)}), IsOk());
  }
  // Closing the last connection moved everything into the database file. Overwrite its
  // second page (a table's root) with garbage.
  const std::string path = DatabasePath(directory);
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(file.good());
  const int page_size = std::stoi(QuerySql(path, "PRAGMA page_size"));
  file.seekp(page_size);
  const std::string garbage = RandomBytes(page_size, 99);
  file.write(garbage.data(), garbage.size());
  file.close();
  EXPECT_THAT(SqliteStateStore::Open(directory),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path)));
}

TEST(SqliteStateStoreTest, JournalWithAGapIsDataLoss) {
  const std::string directory = NewTempDirectory();
  absl::StatusOr<std::unique_ptr<SqliteStateStore>> store = SqliteStateStore::Open(directory);
  ASSERT_THAT(store, IsOk());
  ASSERT_THAT((*store)->Append({"a", "b", "c"}), IsOk());
  ASSERT_NO_FATAL_FAILURE(
      ExecSql(DatabasePath(directory), "DELETE FROM journal WHERE sequence = 2"));
  EXPECT_THAT((*store)->Load(), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("missing")));
}

TEST(SqliteStateStoreTest, NewerSchemaIsRefused) {
  const std::string directory = NewTempDirectory();
  ASSERT_THAT(SqliteStateStore::Open(directory), IsOk());
  ASSERT_NO_FATAL_FAILURE(
      ExecSql(DatabasePath(directory),
              absl::StrCat("PRAGMA user_version = ", SqliteStateStore::kSchemaVersion + 1)));
  EXPECT_THAT(SqliteStateStore::Open(directory),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(DatabasePath(directory)), HasSubstr("newer"))));
}

TEST(SqliteStateStoreTest, AnOlderSchemaIsOpenedAndMarkedCurrent) {
  const std::string directory = NewTempDirectory();
  {
    absl::StatusOr<std::unique_ptr<SqliteStateStore>> store = SqliteStateStore::Open(directory);
    ASSERT_THAT(store, IsOk());
    ASSERT_THAT((*store)->Append({"a"}), IsOk());
  }
  ASSERT_NO_FATAL_FAILURE(
      ExecSql(DatabasePath(directory),
              absl::StrCat("PRAGMA user_version = ", SqliteStateStore::kOldestSchemaVersion)));
  absl::StatusOr<std::unique_ptr<SqliteStateStore>> store = SqliteStateStore::Open(directory);
  ASSERT_THAT(store, IsOk());
  EXPECT_EQ(QuerySql(DatabasePath(directory), "PRAGMA user_version"),
            absl::StrCat(SqliteStateStore::kSchemaVersion));
  absl::StatusOr<StoredState> stored = (*store)->Load();
  ASSERT_THAT(stored, IsOk());
  ASSERT_EQ(stored->journal.size(), 1u);
  EXPECT_EQ(stored->journal[0].second, "a");
}

TEST(SqliteStateStoreTest, AnotherApplicationsDatabaseIsRefused) {
  const std::string directory = NewTempDirectory();
  ASSERT_NO_FATAL_FAILURE(ExecSql(DatabasePath(directory), "CREATE TABLE accounts (id INTEGER)"));
  EXPECT_THAT(SqliteStateStore::Open(directory),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not breakerd's")));
  // Left as it was.
  EXPECT_EQ(QuerySql(DatabasePath(directory), "SELECT COUNT(*) FROM sqlite_schema"), "1");
  EXPECT_EQ(QuerySql(DatabasePath(directory), "PRAGMA journal_mode"), "delete");
}

TEST(SqliteStateStoreTest, MissingDirectoryIsRefused) {
  const std::string directory = NewTempDirectory() + "/missing";
  EXPECT_THAT(SqliteStateStore::Open(directory),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(directory), HasSubstr("does not exist"))));
}

TEST(SqliteStateStoreTest, DirectoryThatIsAFileIsRefused) {
  const std::string directory = NewTempDirectory() + "/file";
  ASSERT_NO_FATAL_FAILURE(WriteFile(directory, "x"));
  EXPECT_THAT(SqliteStateStore::Open(directory),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(directory), HasSubstr("not a directory"))));
}

TEST(SqliteStateStoreTest, DatabaseThatIsADirectoryIsRefused) {
  const std::string directory = NewTempDirectory();
  ASSERT_EQ(mkdir(DatabasePath(directory).c_str(), 0700), 0);
  EXPECT_THAT(SqliteStateStore::Open(directory),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(DatabasePath(directory))));
}

TEST(SqliteStateStoreTest, UnwritableDirectoryIsRefused) {
  if (geteuid() == 0) GTEST_SKIP() << "root may write into any directory";
  const std::string directory = NewTempDirectory();
  ASSERT_EQ(chmod(directory.c_str(), 0500), 0);
  EXPECT_THAT(SqliteStateStore::Open(directory),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(directory), HasSubstr("not writable"))));
  chmod(directory.c_str(), 0700);
}

TEST(SqliteStateStoreTest, EmptyDirectoryNameIsRefused) {
  EXPECT_THAT(SqliteStateStore::Open(""), StatusIs(absl::StatusCode::kInvalidArgument));
}

// What the child process of the test below appends as entry `sequence`.
std::string EntryFor(uint64_t sequence) { return absl::StrCat("entry ", sequence); }

TEST(SqliteStateStoreTest, AcknowledgedAppendsSurviveSigkill) {
  constexpr uint64_t kAcksBeforeKill = 20;
  const std::string directory = NewTempDirectory();
  int acks[2];
  ASSERT_EQ(pipe(acks), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Appends until killed, acknowledging each entry on the pipe once Append returned.
    close(acks[0]);
    absl::StatusOr<std::unique_ptr<SqliteStateStore>> store = SqliteStateStore::Open(directory);
    if (!store.ok()) _exit(2);
    for (uint64_t sequence = 1;; ++sequence) {
      absl::StatusOr<uint64_t> last = (*store)->Append({EntryFor(sequence)});
      if (!last.ok() || *last != sequence) _exit(3);
      if (write(acks[1], &sequence, sizeof sequence) != sizeof sequence) _exit(4);
    }
  }
  close(acks[1]);
  uint64_t acknowledged = 0;
  uint64_t sequence = 0;
  while (acknowledged < kAcksBeforeKill &&
         read(acks[0], &sequence, sizeof sequence) == sizeof sequence) {
    acknowledged = sequence;
  }
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int wait_status = 0;
  ASSERT_EQ(waitpid(child, &wait_status, 0), child);
  // Acknowledgements sent before the kill are still in the pipe.
  while (read(acks[0], &sequence, sizeof sequence) == sizeof sequence) acknowledged = sequence;
  close(acks[0]);
  ASSERT_TRUE(WIFSIGNALED(wait_status)) << "the child exited with " << WEXITSTATUS(wait_status);
  ASSERT_GE(acknowledged, kAcksBeforeKill);

  absl::StatusOr<std::unique_ptr<SqliteStateStore>> store = SqliteStateStore::Open(directory);
  ASSERT_THAT(store, IsOk());
  absl::StatusOr<StoredState> state = (*store)->Load();
  ASSERT_THAT(state, IsOk());
  ASSERT_GE(state->journal.size(), acknowledged);
  for (const auto& [sequence, entry] : state->journal) EXPECT_EQ(entry, EntryFor(sequence));
}

}  // namespace
}  // namespace breaker::service
