#ifndef SERVICE_STORAGE_SQLITE_STATE_STORE_H_
#define SERVICE_STORAGE_SQLITE_STATE_STORE_H_

// The StateStore of breakerd: one SQLite database, `<directory>/breakerd.db`, in WAL mode
// with every commit synced to disk.
//
// Back it up with `sqlite3 breakerd.db ".backup copy.db"` (safe while breakerd runs). To move
// the database, move breakerd.db together with breakerd.db-wal and breakerd.db-shm when they
// exist: the -wal file can hold committed changes not yet copied into breakerd.db.
//
// SQLite's locking keeps the file consistent when several processes open it, but nothing stops
// two breakerd processes from sharing a state directory: each would serve its own view. One
// directory per breakerd.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/mutex.h"
#include "service/storage/state_store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace breaker::service {

// This class is thread-safe: one connection, used under one mutex.
class SqliteStateStore : public StateStore {
 public:
  // The file name of the database inside the state directory.
  static constexpr absl::string_view kFileName = "breakerd.db";
  // The schema this code writes (stored as the database's user_version). Version 2 has the
  // tables of version 1; it marks a journal that may hold entries breakerds of version 1 would
  // misread (observations journaled as the bytes received, state.proto's
  // NodeObservations.batch, which they ignore), so that they refuse the file. A database of
  // version 1 is opened, and marked version 2.
  static constexpr int kSchemaVersion = 2;
  static constexpr int kOldestSchemaVersion = 1;

  // Takes an exclusive lock on `<directory>/LOCK`, held while the store lives: two processes
  // writing one journal would corrupt it. Then opens `<directory>/breakerd.db`, creating it
  // (but not the directory) when missing, and checks it (PRAGMA quick_check), which reads the
  // whole file.
  // Returns
  //   INVALID_ARGUMENT     `directory` is empty;
  //   FAILED_PRECONDITION  another process (or store) holds the directory's lock, the
  //                        directory is missing or not a directory, the database cannot
  //                        be created or written there (permissions, read-only file system),
  //                        the file is another application's SQLite database, or it has a
  //                        schema newer than kSchemaVersion (written by a newer breakerd);
  //   DATA_LOSS            the file is not a database or is corrupt: restore it from a
  //                        backup, or move it (with its -wal and -shm files) away to start
  //                        from empty state;
  //   UNAVAILABLE          an I/O error, or another process holds the database locked;
  //   INTERNAL             an unexpected SQLite error.
  // Every message names the file or directory and says what to do.
  //
  // `page_size`: the page size in bytes of a database this call creates (a power of two from
  // 512 to 65536; INVALID_ARGUMENT otherwise), 0 for SQLite's default (4096). An existing
  // database keeps the page size it was created with.
  static absl::StatusOr<std::unique_ptr<SqliteStateStore>> Open(const std::string& directory,
                                                                int page_size = kPageSize);

  // The page size of the databases breakerd creates. A journal entry is a batch of hundreds of
  // observations, tens of KB: in pages of SQLite's default 4 KiB, a chain of overflow pages,
  // each written to the WAL in two system calls, copied into the database by the checkpoint,
  // and read back when a snapshot deletes the entry. In 32 KiB pages a full batch (about
  // 45 KB) is one overflow page, which SQLite fills, and a cell of the rest on a leaf page it
  // shares with others; in 64 KiB pages it takes a page of its own, a third of it empty, and
  // every byte of that page is checksummed, written and checkpointed. breakerd spends a fifth
  // less CPU per observation in 32 KiB pages than in 64 KiB ones, which took 40 % less than
  // 4 KiB ones (BENCHMARKS.md).
  static constexpr int kPageSize = 32768;

  ~SqliteStateStore() override;
  SqliteStateStore(const SqliteStateStore&) = delete;
  SqliteStateStore& operator=(const SqliteStateStore&) = delete;

  // The database file's path.
  const std::string& path() const { return path_; }

  // StateStore; see there for the errors.
  absl::StatusOr<StoredState> Load() override;
  absl::StatusOr<uint64_t> Append(const std::vector<std::string>& entries) override;
  absl::Status WriteSnapshot(absl::string_view snapshot, uint64_t through_sequence) override;

 private:
  struct Statements;
  struct ConnectionCloser {
    void operator()(sqlite3* db) const;
  };

  // An open file descriptor holding the state directory's lock; closing it releases the lock.
  struct DirectoryLock {
    explicit DirectoryLock(int fd) : fd(fd) {}
    ~DirectoryLock();
    const int fd;
  };

  // The lock of `directory`, whose LOCK file is `lock_path`.
  static absl::StatusOr<std::unique_ptr<DirectoryLock>> LockDirectory(const std::string& directory,
                                                                      const std::string& lock_path);

  SqliteStateStore(std::unique_ptr<DirectoryLock> lock, std::string path,
                   std::unique_ptr<sqlite3, ConnectionCloser> db,
                   std::unique_ptr<Statements> statements);

  // Rolls back the open transaction, if any, and returns `status`.
  absl::Status Abort(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `begin`, a BEGIN statement. On failure returns the error for `action` (the verb of
  // the messages: "loading", ...).
  absl::Status Begin(sqlite3_stmt* begin, absl::string_view action)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Commits the open transaction, or rolls it back and returns the error for `action`.
  absl::Status Commit(absl::string_view action) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads the current snapshot's sequence and the last appended sequence.
  // REQUIRES: inside a transaction.
  absl::Status ReadSequences(absl::string_view action, uint64_t& snapshot_sequence,
                             uint64_t& last_sequence) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Declared first, so released last: after the database is closed.
  const std::unique_ptr<DirectoryLock> lock_;
  const std::string path_;

  Mutex mu_;
  // Created by Open, destroyed with the store (the statements first); mu_ serializes their use.
  const std::unique_ptr<sqlite3, ConnectionCloser> db_ ABSL_PT_GUARDED_BY(mu_);
  const std::unique_ptr<Statements> statements_ ABSL_PT_GUARDED_BY(mu_);
};

}  // namespace breaker::service

#endif  // SERVICE_STORAGE_SQLITE_STATE_STORE_H_
