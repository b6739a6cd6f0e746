#include "service/storage/sqlite_state_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/mutex.h"

namespace breaker::service {
namespace {

// How long a statement waits for a lock held by another connection (an operator's backup,
// say) before failing with UNAVAILABLE.
constexpr int kBusyTimeoutMs = 5000;

// After a checkpoint SQLite reuses the -wal file without shrinking it; this bounds what a
// burst of large snapshots leaves on disk.
constexpr int64_t kWalSizeLimitBytes = 64 << 20;

// The tables of every schema version (kSchemaVersion; user_version 0 is a new, empty database).
// A snapshot row has id 1; its absence means no snapshot yet. The journal's sequence is
// SQLite's rowid.
constexpr char kCreateTables[] = R"sql(
CREATE TABLE snapshot (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  sequence INTEGER NOT NULL CHECK (sequence >= 0),
  data BLOB NOT NULL
);
CREATE TABLE journal (
  sequence INTEGER PRIMARY KEY CHECK (sequence > 0),
  data BLOB NOT NULL
);
)sql";

constexpr char kDataLossHint[] =
    "stop breakerd, then restore the file from a backup, or move it away (with the -wal and "
    "-shm files beside it, if any) to start from empty state";
constexpr char kUnavailableHint[] =
    "check the disk (free space, I/O errors) and that no other process (another breakerd?) "
    "keeps the database locked";
constexpr char kOpenHint[] =
    "check that breakerd's user may create and write files in the directory and that the file "
    "system is not read-only";

struct StatementFinalizer {
  void operator()(sqlite3_stmt* statement) const { sqlite3_finalize(statement); }
};
using Statement = std::unique_ptr<sqlite3_stmt, StatementFinalizer>;

// Resets a statement when leaving the scope: releases its locks and makes it reusable.
class ScopedReset {
 public:
  explicit ScopedReset(sqlite3_stmt* statement) : statement_(statement) {}
  ~ScopedReset() {
    sqlite3_reset(statement_);
    sqlite3_clear_bindings(statement_);
  }
  ScopedReset(const ScopedReset&) = delete;
  ScopedReset& operator=(const ScopedReset&) = delete;

 private:
  sqlite3_stmt* const statement_;
};

// Converts SQLite's `code` from an operation on `db` into a status naming `path`.
// `opening`: the error came while opening, where a file that cannot be opened or written is a
// setup problem rather than a passing one.
absl::Status SqliteError(sqlite3* db, int code, absl::string_view action, absl::string_view path,
                         bool opening = false) {
  const int primary = code & 0xff;
  std::string message = absl::StrCat(action, " ", path, ": ",
                                     db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(code));
  if (db != nullptr && (primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN)) {
    if (const int error = sqlite3_system_errno(db); error != 0) {
      absl::StrAppend(&message, " (", std::strerror(error), ")");
    }
  }
  switch (primary) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(absl::StrCat(message, "; ", kDataLossHint));
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      if (opening) return absl::FailedPreconditionError(absl::StrCat(message, "; ", kOpenHint));
      return absl::UnavailableError(absl::StrCat(message, "; ", kOpenHint));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_NOMEM:
    case SQLITE_PROTOCOL:
    case SQLITE_NOLFS:
      return absl::UnavailableError(absl::StrCat(message, "; ", kUnavailableHint));
    default:
      return absl::InternalError(message);
  }
}

// Binds `data` as a blob (never NULL, even when empty).
int BindBlob(sqlite3_stmt* statement, int index, absl::string_view data) {
  return sqlite3_bind_blob64(statement, index, data.empty() ? "" : data.data(), data.size(),
                             SQLITE_STATIC);
}

std::string ColumnBlob(sqlite3_stmt* statement, int column) {
  // sqlite3_column_bytes after sqlite3_column_blob: the documented order.
  const void* data = sqlite3_column_blob(statement, column);
  const int size = sqlite3_column_bytes(statement, column);
  if (data == nullptr || size <= 0) return std::string();
  return std::string(static_cast<const char*>(data), static_cast<size_t>(size));
}

// Runs one statement with no results.
absl::Status Exec(sqlite3* db, const char* sql, absl::string_view action, absl::string_view path) {
  const int code = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (code != SQLITE_OK) return SqliteError(db, code, action, path, /*opening=*/true);
  return absl::OkStatus();
}

// Runs a statement and returns the first column of its first row as text ("" without rows).
absl::StatusOr<std::string> QueryText(sqlite3* db, const char* sql, absl::string_view action,
                                      absl::string_view path) {
  sqlite3_stmt* raw = nullptr;
  int code = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
  Statement statement(raw);
  if (code != SQLITE_OK) return SqliteError(db, code, action, path, /*opening=*/true);
  code = sqlite3_step(statement.get());
  if (code == SQLITE_DONE) return std::string();
  if (code != SQLITE_ROW) return SqliteError(db, code, action, path, /*opening=*/true);
  const unsigned char* text = sqlite3_column_text(statement.get(), 0);
  return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text));
}

absl::StatusOr<int64_t> QueryInt(sqlite3* db, const char* sql, absl::string_view action,
                                 absl::string_view path) {
  sqlite3_stmt* raw = nullptr;
  int code = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
  Statement statement(raw);
  if (code != SQLITE_OK) return SqliteError(db, code, action, path, /*opening=*/true);
  code = sqlite3_step(statement.get());
  if (code != SQLITE_ROW) return SqliteError(db, code, action, path, /*opening=*/true);
  return sqlite3_column_int64(statement.get(), 0);
}

// Checks that `directory` exists and that this process may create files in it.
absl::Status CheckDirectory(const std::string& directory) {
  struct stat info;
  if (stat(directory.c_str(), &info) != 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) {
      return absl::FailedPreconditionError(absl::StrCat(
          "state directory ", directory, " does not exist: create it, or pass the right one"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("cannot access state directory ", directory, ": ", std::strerror(error)));
  }
  if (!S_ISDIR(info.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("state directory ", directory, " is not a directory"));
  }
  // SQLite creates breakerd.db-wal and breakerd.db-shm beside the database, so the directory
  // itself must be writable, not only the file.
  if (access(directory.c_str(), W_OK | X_OK) != 0) {
    const int error = errno;
    return absl::FailedPreconditionError(absl::StrCat(
        "state directory ", directory, " is not writable: ", std::strerror(error),
        "; breakerd creates breakerd.db and its -wal and -shm files there: give its user write "
        "permission or pass another directory"));
  }
  return absl::OkStatus();
}

// Syncs `directory`, making the creation of files in it durable: fsync of a new file does not
// persist its directory entry.
absl::Status SyncDirectory(const std::string& directory) {
  const int fd = open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    return absl::UnavailableError(
        absl::StrCat("opening state directory ", directory, " to sync it: ", std::strerror(error)));
  }
  const int result = fsync(fd);
  const int error = errno;
  close(fd);
  if (result != 0) {
    return absl::UnavailableError(
        absl::StrCat("syncing state directory ", directory, ": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

// Returns the schema version of the database: 0 for a new, empty one, or one from
// kOldestSchemaVersion to kSchemaVersion. Refuses another application's database and a newer
// schema.
absl::StatusOr<int64_t> CheckSchema(sqlite3* db, const std::string& path) {
  absl::StatusOr<int64_t> version =
      QueryInt(db, "PRAGMA user_version", "reading the schema version of", path);
  if (!version.ok()) return version;
  if (*version >= SqliteStateStore::kOldestSchemaVersion &&
      *version <= SqliteStateStore::kSchemaVersion) {
    return version;
  }
  if (*version > SqliteStateStore::kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " has schema version ", *version,
                     ", written by a newer breakerd; this one understands up to version ",
                     SqliteStateStore::kSchemaVersion,
                     ": run the newer breakerd, or restore a backup made by this version"));
  }
  absl::StatusOr<int64_t> objects =
      QueryInt(db, "SELECT COUNT(*) FROM sqlite_schema", "reading the schema of", path);
  if (!objects.ok()) return objects.status();
  if (*version != 0 || *objects != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is an SQLite database but not breakerd's (schema version ", *version,
                     "): pass another state directory, or move the file away"));
  }
  return 0;
}

// Creates the schema in a new database.
absl::Status CreateSchema(sqlite3* db, const std::string& path) {
  // IMMEDIATE, and checking again inside: another process may be creating it at the same time.
  if (absl::Status status = Exec(db, "BEGIN IMMEDIATE", "creating the schema of", path);
      !status.ok()) {
    return status;
  }
  absl::StatusOr<int64_t> version = CheckSchema(db, path);
  absl::Status status = version.status();
  if (status.ok() && *version == 0) {
    status = Exec(
        db,
        absl::StrCat(kCreateTables, "PRAGMA user_version = ", SqliteStateStore::kSchemaVersion, ";")
            .c_str(),
        "creating the schema of", path);
  }
  if (!status.ok()) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return status;
  }
  return Exec(db, "COMMIT", "creating the schema of", path);
}

}  // namespace

// Prepared once by Open and reused by every call.
struct SqliteStateStore::Statements {
  Statement begin_read;
  Statement begin_write;
  Statement commit;
  Statement rollback;
  Statement select_sequences;
  Statement select_snapshot;
  Statement select_journal;
  Statement insert_entry;
  Statement replace_snapshot;
  Statement delete_through;
};

void SqliteStateStore::ConnectionCloser::operator()(sqlite3* db) const {
  // The last connection to close checkpoints the -wal file into the database and removes it.
  sqlite3_close_v2(db);
}

absl::StatusOr<std::unique_ptr<SqliteStateStore>> SqliteStateStore::Open(
    const std::string& directory, int page_size) {
  if (directory.empty()) return absl::InvalidArgumentError("the state directory is empty");
  if (page_size != 0 && (page_size < 512 || page_size > 65536 || (page_size & (page_size - 1)))) {
    return absl::InvalidArgumentError(
        absl::StrCat("SQLite page size ", page_size,
                     " refused: pass a power of two from 512 to 65536, or 0 "
                     "for SQLite's default"));
  }
  if (absl::Status status = CheckDirectory(directory); !status.ok()) return status;
  std::string base = directory;
  if (base.back() != '/') base += '/';
  absl::StatusOr<std::unique_ptr<DirectoryLock>> lock = LockDirectory(directory, base + "LOCK");
  if (!lock.ok()) return lock.status();
  std::string path = base + std::string(kFileName);
  if (struct stat info; stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not a regular file: move it away or pass another directory"));
  }

  sqlite3* raw = nullptr;
  // NOMUTEX: the store's own mutex serializes the use of the connection. EXRESCODE: extended
  // error codes, for precise messages.
  int code = sqlite3_open_v2(
      path.c_str(), &raw,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
      nullptr);
  std::unique_ptr<sqlite3, ConnectionCloser> db(raw);
  if (code != SQLITE_OK) return SqliteError(db.get(), code, "opening", path, /*opening=*/true);
  // SQLite silently falls back to read-only when it may not write the file.
  if (sqlite3_db_readonly(db.get(), "main") == 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("opening ", path, ": the file is read-only; ", kOpenHint));
  }
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
  // Before anything writes to the file (even switching it to WAL mode): refuse files that are
  // not breakerd's. The first read of the file, so also where a file that is no database fails.
  absl::StatusOr<int64_t> version = CheckSchema(db.get(), path);
  if (!version.ok()) return version.status();
  // Before WAL mode and the first table, the only time a page size takes; later, a no-op.
  if (page_size != 0) {
    if (absl::Status status =
            Exec(db.get(), absl::StrCat("PRAGMA page_size = ", page_size).c_str(), "opening", path);
        !status.ok()) {
      return status;
    }
  }

  // WAL: a commit appends to the -wal file and syncs it once, instead of syncing a rollback
  // journal and the database; readers (an operator's backup) do not block the writer.
  absl::StatusOr<std::string> mode =
      QueryText(db.get(), "PRAGMA journal_mode = WAL", "opening", path);
  if (!mode.ok()) return mode.status();
  if (*mode != "wal") {
    return absl::FailedPreconditionError(
        absl::StrCat("opening ", path, ": cannot use write-ahead logging (journal mode is \"",
                     *mode, "\"); put the state directory on a local file system"));
  }
  // FULL: every commit syncs the -wal file before COMMIT returns, so an acknowledged change
  // survives power loss. With NORMAL, WAL mode syncs only at checkpoints, and a power loss can
  // undo commits that had already returned, i.e. changes acknowledged to clients.
  if (absl::Status status = Exec(db.get(), "PRAGMA synchronous = FULL", "opening", path);
      !status.ok()) {
    return status;
  }
  // FAST, not the ON Debian's SQLite is built with: ON zeroes every page a snapshot frees, so
  // folding the journal wrote each entry's bytes again (as zeroes, into the -wal file, which
  // the checkpoint then copies). The state holds no secret; a freed page is overwritten when
  // it is used again.
  if (absl::Status status = Exec(db.get(), "PRAGMA secure_delete = FAST", "opening", path);
      !status.ok()) {
    return status;
  }
  if (absl::Status status =
          Exec(db.get(), absl::StrCat("PRAGMA journal_size_limit = ", kWalSizeLimitBytes).c_str(),
               "opening", path);
      !status.ok()) {
    return status;
  }
  // Finds corruption now rather than in the middle of serving. Reads the whole file, which
  // snapshots keep small.
  absl::StatusOr<std::string> check =
      QueryText(db.get(), "PRAGMA quick_check(1)", "checking", path);
  if (!check.ok()) return check.status();
  if (*check != "ok") {
    return absl::DataLossError(absl::StrCat("checking ", path, ": the database is corrupt (",
                                            *check, "); ", kDataLossHint));
  }
  if (*version == 0) {
    if (absl::Status status = CreateSchema(db.get(), path); !status.ok()) return status;
  } else if (*version < kSchemaVersion) {
    // Before anything is written under the new version: the tables are the same.
    if (absl::Status status =
            Exec(db.get(), absl::StrCat("PRAGMA user_version = ", kSchemaVersion).c_str(),
                 "upgrading the schema of", path);
        !status.ok()) {
      return status;
    }
  }
  if (absl::Status status = SyncDirectory(directory); !status.ok()) return status;

  auto statements = std::make_unique<Statements>();
  const std::pair<Statement*, const char*> sqls[] = {
      {&statements->begin_read, "BEGIN"},
      {&statements->begin_write, "BEGIN IMMEDIATE"},
      {&statements->commit, "COMMIT"},
      {&statements->rollback, "ROLLBACK"},
      {&statements->select_sequences,
       "SELECT IFNULL((SELECT sequence FROM snapshot WHERE id = 1), 0), "
       "IFNULL((SELECT MAX(sequence) FROM journal), 0)"},
      {&statements->select_snapshot, "SELECT sequence, data FROM snapshot WHERE id = 1"},
      {&statements->select_journal, "SELECT sequence, data FROM journal ORDER BY sequence"},
      {&statements->insert_entry, "INSERT INTO journal (sequence, data) VALUES (?1, ?2)"},
      {&statements->replace_snapshot,
       "INSERT OR REPLACE INTO snapshot (id, sequence, data) VALUES (1, ?1, ?2)"},
      {&statements->delete_through, "DELETE FROM journal WHERE sequence <= ?1"},
  };
  for (const auto& [statement, sql] : sqls) {
    sqlite3_stmt* prepared = nullptr;
    code = sqlite3_prepare_v3(db.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &prepared, nullptr);
    statement->reset(prepared);
    if (code != SQLITE_OK) {
      return SqliteError(db.get(), code, "preparing statements for", path, /*opening=*/true);
    }
  }
  return std::unique_ptr<SqliteStateStore>(new SqliteStateStore(
      *std::move(lock), std::move(path), std::move(db), std::move(statements)));
}

SqliteStateStore::SqliteStateStore(std::unique_ptr<DirectoryLock> lock, std::string path,
                                   std::unique_ptr<sqlite3, ConnectionCloser> db,
                                   std::unique_ptr<Statements> statements)
    : lock_(std::move(lock)),
      path_(std::move(path)),
      db_(std::move(db)),
      statements_(std::move(statements)) {}

SqliteStateStore::DirectoryLock::~DirectoryLock() { close(fd); }

absl::StatusOr<std::unique_ptr<SqliteStateStore::DirectoryLock>> SqliteStateStore::LockDirectory(
    const std::string& directory, const std::string& lock_path) {
  const int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) {
    const int error = errno;
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot open ", lock_path, ": ", std::strerror(error),
        "; give breakerd's user write permission on the state directory or pass another one"));
  }
  auto lock = std::make_unique<DirectoryLock>(fd);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("another breakerd is using the state directory ", directory,
                     "; stop it, or pass --state_dir with another directory"));
  }
  return lock;
}

// Out of line, where Statements is complete.
SqliteStateStore::~SqliteStateStore() = default;

absl::Status SqliteStateStore::Abort(absl::Status status) {
  if (!sqlite3_get_autocommit(db_.get())) {
    ScopedReset reset(statements_->rollback.get());
    sqlite3_step(statements_->rollback.get());
  }
  return status;
}

absl::Status SqliteStateStore::Begin(sqlite3_stmt* begin, absl::string_view action) {
  // A transaction left open by a ROLLBACK that failed would make every BEGIN fail.
  Abort(absl::OkStatus()).IgnoreError();
  ScopedReset reset(begin);
  const int code = sqlite3_step(begin);
  if (code != SQLITE_DONE) return Abort(SqliteError(db_.get(), code, action, path_));
  return absl::OkStatus();
}

absl::Status SqliteStateStore::Commit(absl::string_view action) {
  ScopedReset reset(statements_->commit.get());
  const int code = sqlite3_step(statements_->commit.get());
  if (code != SQLITE_DONE) return Abort(SqliteError(db_.get(), code, action, path_));
  return absl::OkStatus();
}

absl::Status SqliteStateStore::ReadSequences(absl::string_view action, uint64_t& snapshot_sequence,
                                             uint64_t& last_sequence) {
  sqlite3_stmt* select = statements_->select_sequences.get();
  ScopedReset reset(select);
  const int code = sqlite3_step(select);
  if (code != SQLITE_ROW) return SqliteError(db_.get(), code, action, path_);
  const int64_t snapshot = sqlite3_column_int64(select, 0);
  const int64_t journal = sqlite3_column_int64(select, 1);
  if (snapshot < 0 || journal < 0) {
    return absl::DataLossError(
        absl::StrCat(action, " ", path_, ": negative sequence; ", kDataLossHint));
  }
  snapshot_sequence = static_cast<uint64_t>(snapshot);
  last_sequence = std::max(snapshot_sequence, static_cast<uint64_t>(journal));
  return absl::OkStatus();
}

absl::StatusOr<StoredState> SqliteStateStore::Load() {
  constexpr absl::string_view kAction = "loading";
  MutexLock lock(&mu_);
  // One read transaction: the snapshot and the journal from the same moment, even if another
  // process writes in between.
  if (absl::Status status = Begin(statements_->begin_read.get(), kAction); !status.ok()) {
    return status;
  }
  StoredState state;
  {
    sqlite3_stmt* select = statements_->select_snapshot.get();
    ScopedReset reset(select);
    const int code = sqlite3_step(select);
    if (code == SQLITE_ROW) {
      const int64_t sequence = sqlite3_column_int64(select, 0);
      if (sequence < 0) {
        return Abort(absl::DataLossError(
            absl::StrCat("loading ", path_, ": negative snapshot sequence; ", kDataLossHint)));
      }
      state.snapshot_sequence = static_cast<uint64_t>(sequence);
      state.snapshot = ColumnBlob(select, 1);
    } else if (code != SQLITE_DONE) {
      return Abort(SqliteError(db_.get(), code, kAction, path_));
    }
  }
  {
    sqlite3_stmt* select = statements_->select_journal.get();
    ScopedReset reset(select);
    uint64_t expected = state.snapshot_sequence + 1;
    int code;
    while ((code = sqlite3_step(select)) == SQLITE_ROW) {
      const int64_t sequence = sqlite3_column_int64(select, 0);
      // A gap means entries are lost: replaying around it would build a wrong state.
      if (sequence < 0 || static_cast<uint64_t>(sequence) != expected) {
        return Abort(absl::DataLossError(
            absl::StrCat("loading ", path_, ": the journal has entry ", sequence, " where entry ",
                         expected, " belongs (the snapshot folds in entries up to ",
                         state.snapshot_sequence, "); entries are missing; ", kDataLossHint)));
      }
      state.journal.emplace_back(expected++, ColumnBlob(select, 1));
    }
    if (code != SQLITE_DONE) return Abort(SqliteError(db_.get(), code, kAction, path_));
  }
  if (absl::Status status = Commit(kAction); !status.ok()) return status;
  return state;
}

absl::StatusOr<uint64_t> SqliteStateStore::Append(const std::vector<std::string>& entries) {
  constexpr absl::string_view kAction = "appending to";
  MutexLock lock(&mu_);
  // IMMEDIATE takes the write lock now: the sequences read below stay the last ones.
  if (absl::Status status = Begin(statements_->begin_write.get(), kAction); !status.ok()) {
    return status;
  }
  uint64_t snapshot_sequence = 0;
  uint64_t last = 0;
  if (absl::Status status = ReadSequences(kAction, snapshot_sequence, last); !status.ok()) {
    return Abort(status);
  }
  if (entries.size() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - last) {
    return Abort(absl::InternalError(
        absl::StrCat(kAction, " ", path_, ": sequence numbers exhausted after ", last)));
  }
  sqlite3_stmt* insert = statements_->insert_entry.get();
  for (size_t i = 0; i < entries.size(); ++i) {
    ScopedReset reset(insert);
    sqlite3_bind_int64(insert, 1, static_cast<int64_t>(last + 1));
    if (const int code = BindBlob(insert, 2, entries[i]); code != SQLITE_OK) {
      if (code == SQLITE_TOOBIG) {
        return Abort(absl::InvalidArgumentError(absl::StrCat(
            kAction, " ", path_, ": entry ", i, " of the batch has ", entries[i].size(),
            " bytes, more than SQLite's limit of ",
            sqlite3_limit(db_.get(), SQLITE_LIMIT_LENGTH, -1), "; nothing was appended")));
      }
      return Abort(SqliteError(db_.get(), code, kAction, path_));
    }
    if (const int code = sqlite3_step(insert); code != SQLITE_DONE) {
      return Abort(SqliteError(db_.get(), code, kAction, path_));
    }
    ++last;
  }
  if (absl::Status status = Commit(kAction); !status.ok()) return status;
  return last;
}

absl::Status SqliteStateStore::WriteSnapshot(absl::string_view snapshot,
                                             uint64_t through_sequence) {
  constexpr absl::string_view kAction = "writing a snapshot to";
  MutexLock lock(&mu_);
  if (absl::Status status = Begin(statements_->begin_write.get(), kAction); !status.ok()) {
    return status;
  }
  uint64_t snapshot_sequence = 0;
  uint64_t last = 0;
  if (absl::Status status = ReadSequences(kAction, snapshot_sequence, last); !status.ok()) {
    return Abort(status);
  }
  if (through_sequence > last || through_sequence < snapshot_sequence) {
    return Abort(absl::InvalidArgumentError(absl::StrCat(
        "snapshot through sequence ", through_sequence, " refused: the current snapshot is at ",
        snapshot_sequence, " and the last appended entry at ", last)));
  }
  {
    sqlite3_stmt* replace = statements_->replace_snapshot.get();
    ScopedReset reset(replace);
    sqlite3_bind_int64(replace, 1, static_cast<int64_t>(through_sequence));
    int code = BindBlob(replace, 2, snapshot);
    if (code == SQLITE_TOOBIG) {
      return Abort(absl::InvalidArgumentError(
          absl::StrCat(kAction, " ", path_, ": the snapshot has ", snapshot.size(),
                       " bytes, more than SQLite's limit of ",
                       sqlite3_limit(db_.get(), SQLITE_LIMIT_LENGTH, -1))));
    }
    if (code == SQLITE_OK) code = sqlite3_step(replace);
    if (code != SQLITE_DONE) return Abort(SqliteError(db_.get(), code, kAction, path_));
  }
  {
    sqlite3_stmt* remove = statements_->delete_through.get();
    ScopedReset reset(remove);
    sqlite3_bind_int64(remove, 1, static_cast<int64_t>(through_sequence));
    if (const int code = sqlite3_step(remove); code != SQLITE_DONE) {
      return Abort(SqliteError(db_.get(), code, kAction, path_));
    }
  }
  return Commit(kAction);
}

}  // namespace breaker::service
