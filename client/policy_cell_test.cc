#include "client/policy_cell.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"

namespace breaker::client {
namespace {

TEST(PolicyCell, NullBeforeAnySet) {
  PolicyCell<int> cell;
  EXPECT_EQ(cell.Get(), nullptr);
}

TEST(PolicyCell, GetReturnsTheLatestSet) {
  PolicyCell<std::string> cell(std::make_shared<const std::string>("first"));
  EXPECT_EQ(*cell.Get(), "first");
  EXPECT_EQ(*cell.Get(), "first");

  auto second = std::make_shared<const std::string>("second");
  cell.Set(second);
  EXPECT_EQ(cell.Get(), second);
  cell.Set(nullptr);
  EXPECT_EQ(cell.Get(), nullptr);
}

TEST(PolicyCell, ReleasesTheReplacedValue) {
  PolicyCell<int> cell;
  auto first = std::make_shared<const int>(1);
  std::weak_ptr<const int> weak = first;
  cell.Set(std::move(first));
  EXPECT_EQ(*cell.Get(), 1);
  cell.Set(std::make_shared<const int>(2));
  // This thread's cache lets go of the old value at its next Get.
  EXPECT_EQ(*cell.Get(), 2);
  EXPECT_TRUE(weak.expired());
}

TEST(PolicyCell, TwoCellsKeepTheirOwnValues) {
  PolicyCell<int> a(std::make_shared<const int>(1));
  PolicyCell<int> b(std::make_shared<const int>(2));
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(*a.Get(), 10 * i + 1);
    EXPECT_EQ(*b.Get(), 10 * i + 2);
    // Both cells are at the same version: only their generations tell them apart.
    a.Set(std::make_shared<const int>(10 * (i + 1) + 1));
    b.Set(std::make_shared<const int>(10 * (i + 1) + 2));
  }
}

TEST(PolicyCell, ManyCellsReadInTurn) {
  // More cells than cache slots: they evict one another and still read right.
  std::vector<std::unique_ptr<PolicyCell<int>>> cells;
  for (int i = 0; i < 3 * static_cast<int>(PolicyCell<int>::kCacheSlots); ++i) {
    cells.push_back(std::make_unique<PolicyCell<int>>(std::make_shared<const int>(i)));
  }
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < cells.size(); ++i) {
      ASSERT_EQ(*cells[i]->Get(), static_cast<int>(i)) << "round " << round;
    }
  }
}

TEST(PolicyCell, NewCellAtTheSameAddressIsNotConfused) {
  // Build each cell in the same storage, so that every one has the same address, the same
  // version (1) and a cached predecessor.
  std::aligned_storage_t<sizeof(PolicyCell<int>), alignof(PolicyCell<int>)> storage;
  for (int i = 0; i < 1000; ++i) {
    auto* cell = new (&storage) PolicyCell<int>();
    cell->Set(std::make_shared<const int>(i));
    ASSERT_EQ(*cell->Get(), i);
    cell->~PolicyCell<int>();
  }
  // And through the allocator, which usually hands back the same block.
  for (int i = 0; i < 1000; ++i) {
    auto cell = std::make_unique<PolicyCell<int>>(std::make_shared<const int>(i));
    ASSERT_EQ(*cell->Get(), i);
  }
}

TEST(PolicyCell, EachThreadHasItsOwnCache) {
  PolicyCell<int> cell(std::make_shared<const int>(1));
  EXPECT_EQ(*cell.Get(), 1);
  std::thread([&cell] {
    EXPECT_EQ(*cell.Get(), 1);
    cell.Set(std::make_shared<const int>(2));
    EXPECT_EQ(*cell.Get(), 2);
  }).join();
  EXPECT_EQ(*cell.Get(), 2);
}

// Readers run while a writer sets 10,000 versions; each sees them in order. Run under
// --config=tsan.
TEST(PolicyCell, ReadersNeverGoBackWhileAWriterSets) {
  constexpr int kVersions = 10000;
  constexpr int kReaders = 6;
  struct Value {
    int version;
    std::string payload;
  };
  PolicyCell<Value> cell(std::make_shared<const Value>(Value{0, "v0"}));

  std::atomic<bool> failed{false};
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&cell, &failed] {
      int last = 0;
      uint64_t reads = 0;
      while (last < kVersions) {
        const std::shared_ptr<const Value> value = cell.Get();
        ++reads;
        if (value->version < last || value->payload != "v" + std::to_string(value->version)) {
          failed.store(true);
          return;
        }
        last = value->version;
      }
      EXPECT_GT(reads, 0u);
    });
  }
  std::thread writer([&cell] {
    for (int v = 1; v <= kVersions; ++v) {
      cell.Set(std::make_shared<const Value>(Value{v, "v" + std::to_string(v)}));
    }
  });

  writer.join();
  for (std::thread& reader : readers) reader.join();
  EXPECT_FALSE(failed.load()) << "a reader saw a version go backwards or a torn value";
  EXPECT_EQ(cell.Get()->version, kVersions);
}

}  // namespace
}  // namespace breaker::client
