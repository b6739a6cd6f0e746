#include "client/policy_cell.h"

#include <atomic>
#include <cstdint>

namespace breaker::client::policy_cell_internal {

uint64_t NewGeneration() {
  // Starts at 1: 0 marks an empty cache slot.
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace breaker::client::policy_cell_internal
