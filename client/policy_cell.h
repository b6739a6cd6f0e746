#ifndef CLIENT_POLICY_CELL_H_
#define CLIENT_POLICY_CELL_H_

// An immutable value that one writer replaces now and then and many threads read all the time:
// the policy in force, read by the beacon node at every block production.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"

namespace breaker::client {
namespace policy_cell_internal {

// Returns a number no other call in this process returned; never 0.
uint64_t NewGeneration();

}  // namespace policy_cell_internal

// Holds a std::shared_ptr<const T>: Set replaces it, Get returns the latest.
//
// Get is wait-free in the common case: it takes no lock shared with the writer except once per
// thread per new value. Each thread caches, per cell, the shared_ptr it last read and the
// cell's version then; Get compares the cell's atomic version with the cached one and, when it
// has not moved, returns the cached shared_ptr (an atomic reference-count increment). Only the
// first Get of a thread after a Set takes the cell's mutex, to refresh its cache. The cache is
// keyed by the cell's generation, a number unique in the process for the cell's lifetime, not
// by its address: a cell destroyed and another built at the same address cannot be confused.
// (std::atomic_load of a shared_ptr would do, but libstdc++ implements it with a global pool of
// mutexes that every reader takes; std::atomic<std::shared_ptr> is C++20.)
//
// Costs: a thread's cache holds a few cells' values, so a value (and a destroyed cell's last
// value) stays alive until the thread next reads that cache slot, or exits; the last
// reference may then be released, and T destroyed, on a reader thread. Threads that read more
// than kCacheSlots live cells in turn may evict one another and take the mutex more often.
//
// This class is thread-safe.
template <typename T>
class PolicyCell {
 public:
  // Cells whose caches never evict one another, per thread and per T.
  static constexpr size_t kCacheSlots = 8;

  // Holds null until the first Set.
  PolicyCell() : generation_(policy_cell_internal::NewGeneration()) {}
  explicit PolicyCell(std::shared_ptr<const T> value) : PolicyCell() { Set(std::move(value)); }

  PolicyCell(const PolicyCell&) = delete;
  PolicyCell& operator=(const PolicyCell&) = delete;

  // Replaces the value. The previous one is released outside the lock.
  void Set(std::shared_ptr<const T> value) {
    {
      MutexLock lock(&mu_);
      value_.swap(value);
      // Released: a reader that sees the new version and then takes the mutex reads the value
      // set with it, or a later one.
      version_.fetch_add(1, std::memory_order_release);
    }
  }

  // Returns the latest value set (null before any Set). A thread never reads an older value
  // after a newer one.
  std::shared_ptr<const T> Get() const {
    CacheEntry& cached = Cache()[generation_ % kCacheSlots];
    const uint64_t version = version_.load(std::memory_order_acquire);
    if (cached.generation == generation_ && cached.version == version) return cached.value;

    MutexLock lock(&mu_);
    cached.generation = generation_;
    cached.version = version_.load(std::memory_order_relaxed);
    cached.value = value_;
    return cached.value;
  }

 private:
  struct CacheEntry {
    // 0 (no cell's generation) when empty.
    uint64_t generation = 0;
    uint64_t version = 0;
    std::shared_ptr<const T> value;
  };

  // The calling thread's cache, shared by every PolicyCell<T>. Cells are spread over its slots
  // by generation; consecutive generations do not collide.
  static CacheEntry* Cache() {
    thread_local CacheEntry cache[kCacheSlots];
    return cache;
  }

  const uint64_t generation_;
  // Incremented by every Set, under mu_.
  std::atomic<uint64_t> version_{0};
  mutable Mutex mu_;
  std::shared_ptr<const T> value_ ABSL_GUARDED_BY(mu_);
};

}  // namespace breaker::client

#endif  // CLIENT_POLICY_CELL_H_
