#include "client/observation_buffer.h"

#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace breaker::client {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

core::Event Bid(core::BuilderIndex builder = 1) { return core::BidSeen{builder, "", ""}; }
core::Event Missing(core::BuilderIndex builder = 1) {
  return core::PayloadMissing{builder, core::BlockRoot{}, 0.9};
}
core::Event RevealMissing() { return core::RelayRevealMissing{"relay.example", core::BlockRoot{}}; }
core::Event Delivered() { return core::PayloadDelivered{1, core::BlockRoot{}}; }
core::Event Final(core::Epoch epoch = 1) { return core::Finalized{epoch}; }

std::vector<uint64_t> Sequences(const std::vector<ObservationBuffer::Entry>& batch) {
  std::vector<uint64_t> sequences;
  for (const ObservationBuffer::Entry& entry : batch) sequences.push_back(entry.sequence);
  return sequences;
}

// Every entry added is acknowledged, still buffered or dropped.
void ExpectCountsAddUp(const ObservationBuffer::Stats& stats) {
  EXPECT_EQ(stats.reported, stats.acknowledged + stats.buffered + stats.dropped_bids +
                                stats.dropped_other + stats.dropped_failures);
}

TEST(ObservationBuffer, NumbersFromTheFirstSequence) {
  ObservationBuffer buffer(10, 41);
  EXPECT_EQ(buffer.Add(100, Bid()), 41u);
  EXPECT_EQ(buffer.Add(100, Missing()), 42u);
  EXPECT_EQ(buffer.Add(101, Final()), 43u);

  const std::vector<ObservationBuffer::Entry> batch = buffer.NextBatch(10);
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(batch[0].sequence, 41u);
  EXPECT_EQ(batch[0].slot, 100u);
  EXPECT_TRUE(std::holds_alternative<core::BidSeen>(batch[0].event));
  EXPECT_EQ(batch[1].slot, 100u);
  EXPECT_TRUE(std::holds_alternative<core::PayloadMissing>(batch[1].event));
  EXPECT_EQ(batch[2].slot, 101u);
  EXPECT_EQ(std::get<core::Finalized>(batch[2].event).epoch, 1u);
}

TEST(ObservationBuffer, BatchesInSequenceOrderAcrossClasses) {
  ObservationBuffer buffer(100, 1);
  buffer.Add(1, Missing());
  buffer.Add(1, Bid());
  buffer.Add(1, Final());
  buffer.Add(1, Bid());
  buffer.Add(1, RevealMissing());
  buffer.Add(1, Delivered());
  buffer.Add(1, Bid());

  EXPECT_TRUE(buffer.HasUnsent());
  EXPECT_THAT(Sequences(buffer.NextBatch(3)), ElementsAre(1, 2, 3));
  EXPECT_THAT(Sequences(buffer.NextBatch(3)), ElementsAre(4, 5, 6));
  buffer.Add(2, Missing());
  EXPECT_THAT(Sequences(buffer.NextBatch(3)), ElementsAre(7, 8));
  EXPECT_FALSE(buffer.HasUnsent());
  EXPECT_THAT(buffer.NextBatch(3), IsEmpty());
  EXPECT_THAT(buffer.NextBatch(0), IsEmpty());

  const ObservationBuffer::Stats stats = buffer.stats();
  EXPECT_EQ(stats.reported, 8u);
  EXPECT_EQ(stats.buffered, 8u);
  EXPECT_EQ(stats.unsent, 0u);
}

TEST(ObservationBuffer, AcknowledgeRemovesUpToTheSequence) {
  ObservationBuffer buffer(100, 1);
  for (int i = 0; i < 6; ++i) buffer.Add(1, i % 2 == 0 ? Bid() : Missing());
  EXPECT_THAT(Sequences(buffer.NextBatch(4)), ElementsAre(1, 2, 3, 4));

  buffer.Acknowledge(3);
  ObservationBuffer::Stats stats = buffer.stats();
  EXPECT_EQ(stats.acknowledged, 3u);
  EXPECT_EQ(stats.buffered, 3u);
  EXPECT_EQ(stats.unsent, 2u);

  // An old acknowledgement changes nothing.
  buffer.Acknowledge(2);
  EXPECT_EQ(buffer.stats().acknowledged, 3u);

  // Unsent entries up to the sequence go too.
  buffer.Acknowledge(5);
  stats = buffer.stats();
  EXPECT_EQ(stats.acknowledged, 5u);
  EXPECT_EQ(stats.buffered, 1u);
  EXPECT_EQ(stats.unsent, 1u);
  EXPECT_THAT(Sequences(buffer.NextBatch(10)), ElementsAre(6));

  buffer.Acknowledge(1000);
  stats = buffer.stats();
  EXPECT_EQ(stats.acknowledged, 6u);
  EXPECT_EQ(stats.buffered, 0u);
  EXPECT_FALSE(buffer.HasUnsent());
  ExpectCountsAddUp(stats);
}

TEST(ObservationBuffer, RewindResendsOnlyUnacknowledged) {
  ObservationBuffer buffer(100, 1);
  for (int i = 0; i < 8; ++i) buffer.Add(1, i % 3 == 0 ? Final() : Bid());
  EXPECT_THAT(Sequences(buffer.NextBatch(5)), ElementsAre(1, 2, 3, 4, 5));
  buffer.Acknowledge(2);

  buffer.Rewind();
  EXPECT_EQ(buffer.stats().unsent, 6u);
  EXPECT_THAT(Sequences(buffer.NextBatch(2)), ElementsAre(3, 4));
  buffer.Add(1, Missing());
  EXPECT_THAT(Sequences(buffer.NextBatch(100)), ElementsAre(5, 6, 7, 8, 9));

  // A rewind in the middle of a resend starts over from the oldest unacknowledged.
  buffer.Rewind();
  EXPECT_THAT(Sequences(buffer.NextBatch(1)), ElementsAre(3));
  buffer.Rewind();
  buffer.Acknowledge(6);
  EXPECT_THAT(Sequences(buffer.NextBatch(100)), ElementsAre(7, 8, 9));
}

TEST(ObservationBuffer, OverflowDropsBidsThenOthersThenFailures) {
  ObservationBuffer buffer(4, 1);
  buffer.Add(1, Missing());  // 1
  buffer.Add(1, Bid());      // 2
  buffer.Add(1, Final());    // 3
  buffer.Add(1, Bid());      // 4
  buffer.Add(1, Missing());  // 5: drops bid 2
  buffer.Add(1, Missing());  // 6: drops bid 4
  EXPECT_THAT(Sequences(buffer.NextBatch(0)), IsEmpty());
  ObservationBuffer::Stats stats = buffer.stats();
  EXPECT_EQ(stats.dropped_bids, 2u);
  EXPECT_EQ(stats.dropped_other, 0u);
  EXPECT_EQ(stats.dropped_failures, 0u);

  buffer.Add(1, RevealMissing());  // 7: drops Finalized 3
  stats = buffer.stats();
  EXPECT_EQ(stats.dropped_other, 1u);

  // Only failures are left: the oldest goes, and a new bid drops itself.
  buffer.Add(1, Missing());  // 8: drops failure 1
  EXPECT_EQ(buffer.Add(1, Bid()), 9u);
  stats = buffer.stats();
  EXPECT_EQ(stats.dropped_bids, 3u);
  EXPECT_EQ(stats.dropped_other, 1u);
  EXPECT_EQ(stats.dropped_failures, 1u);
  EXPECT_EQ(stats.buffered, 4u);
  EXPECT_EQ(stats.reported, 9u);
  ExpectCountsAddUp(stats);

  EXPECT_THAT(Sequences(buffer.NextBatch(100)), ElementsAre(5, 6, 7, 8));
}

TEST(ObservationBuffer, DropsOfSentEntriesKeepTheRestInOrder) {
  ObservationBuffer buffer(3, 1);
  buffer.Add(1, Bid());      // 1
  buffer.Add(1, Missing());  // 2
  buffer.Add(1, Final());    // 3
  EXPECT_THAT(Sequences(buffer.NextBatch(2)), ElementsAre(1, 2));

  buffer.Add(1, Delivered());  // 4: drops the sent bid 1
  buffer.Add(1, Final());      // 5: drops the unsent Finalized 3
  ObservationBuffer::Stats stats = buffer.stats();
  EXPECT_EQ(stats.dropped_bids, 1u);
  EXPECT_EQ(stats.dropped_other, 1u);
  EXPECT_EQ(stats.unsent, 2u);
  EXPECT_THAT(Sequences(buffer.NextBatch(100)), ElementsAre(4, 5));

  buffer.Add(1, Final());  // 6: drops the sent PayloadDelivered 4
  buffer.Rewind();
  EXPECT_THAT(Sequences(buffer.NextBatch(100)), ElementsAre(2, 5, 6));
  buffer.Acknowledge(5);
  stats = buffer.stats();
  EXPECT_EQ(stats.acknowledged, 2u);
  EXPECT_EQ(stats.buffered, 1u);
  EXPECT_EQ(stats.unsent, 0u);
  ExpectCountsAddUp(stats);
}

TEST(ObservationBuffer, ZeroCapacityKeepsOne) {
  ObservationBuffer buffer(0, 1);
  buffer.Add(1, Bid());
  buffer.Add(1, Missing());
  EXPECT_THAT(Sequences(buffer.NextBatch(10)), ElementsAre(2));
  EXPECT_EQ(buffer.stats().dropped_bids, 1u);
}

// Reporters add from several threads while a sender takes batches, acknowledges them and now
// and then rewinds as after a reconnect. Run under --config=tsan.
TEST(ObservationBuffer, ConcurrentReportersAndSender) {
  constexpr int kReporters = 4;
  constexpr int kPerReporter = 20000;
  ObservationBuffer buffer(1000, 1);

  std::atomic<int> reporters_done{0};
  std::vector<std::thread> reporters;
  for (int r = 0; r < kReporters; ++r) {
    reporters.emplace_back([&buffer, &reporters_done, r] {
      uint64_t last = 0;
      for (int i = 0; i < kPerReporter; ++i) {
        core::Event event;
        switch ((i + r) % 4) {
          case 0:
          case 1:
            event = Bid(i);
            break;
          case 2:
            event = Final(i);
            break;
          default:
            event = Missing(i);
        }
        const uint64_t sequence = buffer.Add(i, std::move(event));
        EXPECT_GT(sequence, last);
        last = sequence;
      }
      reporters_done.fetch_add(1);
    });
  }

  std::thread sender([&buffer, &reporters_done] {
    uint64_t last_sent = 0;
    uint64_t batches = 0;
    while (true) {
      const bool done = reporters_done.load() == kReporters;
      const std::vector<ObservationBuffer::Entry> batch = buffer.NextBatch(64);
      if (batch.empty()) {
        if (done) break;
        std::this_thread::yield();
        continue;
      }
      for (const ObservationBuffer::Entry& entry : batch) {
        ASSERT_GT(entry.sequence, last_sent);
        last_sent = entry.sequence;
      }
      if (++batches % 7 == 0) {
        // A reconnect: the unacknowledged batch is sent again.
        buffer.Rewind();
        last_sent = 0;
      } else {
        buffer.Acknowledge(batch.back().sequence);
      }
    }
  });

  for (std::thread& reporter : reporters) reporter.join();
  sender.join();

  const ObservationBuffer::Stats stats = buffer.stats();
  EXPECT_EQ(stats.reported, uint64_t{kReporters} * kPerReporter);
  EXPECT_EQ(stats.buffered, 0u);
  EXPECT_EQ(stats.unsent, 0u);
  EXPECT_FALSE(buffer.HasUnsent());
  ExpectCountsAddUp(stats);
}

// breakerd's NodeState says it handled this node's numbers up to 1000, above where a restart
// with a clock set back began numbering: what was never sent is renumbered above it, in order.
TEST(ObservationBuffer, RenumbersWhatWasNeverSentAboveBreakerdsLast) {
  ObservationBuffer buffer(100, 10);
  buffer.Add(1, Missing(1));  // 10
  buffer.Add(1, Bid(2));      // 11
  buffer.Add(1, Final(3));    // 12
  EXPECT_EQ(buffer.RenumberAbove(1000), 3u);
  EXPECT_EQ(buffer.LastSequence(), 1003u);
  EXPECT_EQ(buffer.Add(2, Bid(4)), 1004u);
  const std::vector<ObservationBuffer::Entry> batch = buffer.NextBatch(10);
  EXPECT_THAT(Sequences(batch), ElementsAre(1001u, 1002u, 1003u, 1004u));
  // In the order they were reported, across classes.
  EXPECT_TRUE(std::holds_alternative<core::PayloadMissing>(batch[0].event));
  EXPECT_TRUE(std::holds_alternative<core::BidSeen>(batch[1].event));
  EXPECT_TRUE(std::holds_alternative<core::Finalized>(batch[2].event));
  EXPECT_EQ(std::get<core::BidSeen>(batch[3].event).builder, 4u);
  buffer.Acknowledge(1002);
  EXPECT_EQ(buffer.stats().buffered, 2u);
  ExpectCountsAddUp(buffer.stats());
}

TEST(ObservationBuffer, KeepsTheNumbersOfWhatWasSent) {
  ObservationBuffer buffer(100, 10);
  buffer.Add(1, Missing());  // 10
  buffer.Add(1, Bid());      // 11
  ASSERT_THAT(Sequences(buffer.NextBatch(1)), ElementsAre(10u));
  buffer.Add(1, Final());  // 12
  // Sent and not acknowledged: breakerd may have it (the acknowledgement lost), and a new
  // number would apply it twice. Rewinding for a new stream does not make it unsent.
  buffer.Rewind();
  EXPECT_EQ(buffer.RenumberAbove(20), 2u);
  EXPECT_THAT(Sequences(buffer.NextBatch(10)), ElementsAre(10u, 21u, 22u));
  EXPECT_EQ(buffer.Add(1, Bid()), 23u);
}

TEST(ObservationBuffer, NumbersAlreadyAboveStay) {
  ObservationBuffer buffer(100, 50);
  buffer.Add(1, Bid());
  buffer.Add(1, Bid());
  EXPECT_EQ(buffer.RenumberAbove(49), 0u);
  EXPECT_EQ(buffer.RenumberAbove(0), 0u);
  EXPECT_THAT(Sequences(buffer.NextBatch(10)), ElementsAre(50u, 51u));
  EXPECT_EQ(buffer.Add(1, Bid()), 52u);
}

TEST(ObservationBuffer, AnEmptyBufferNumbersOnAboveBreakerdsLast) {
  ObservationBuffer buffer(100, 5);
  EXPECT_EQ(buffer.RenumberAbove(700), 0u);
  EXPECT_EQ(buffer.LastSequence(), 700u);
  EXPECT_EQ(buffer.Add(1, Bid()), 701u);
  // Acknowledged everything: the next number is still above.
  buffer.Acknowledge(701);
  EXPECT_EQ(buffer.RenumberAbove(900), 0u);
  EXPECT_EQ(buffer.Add(1, Bid()), 901u);
}

TEST(ObservationBuffer, RenumbersAcrossTheGapsOfDroppedEntries) {
  ObservationBuffer buffer(3, 1);
  buffer.Add(1, Missing(1));  // 1
  buffer.Add(1, Bid(2));      // 2, dropped by the fourth
  buffer.Add(1, Missing(3));  // 3
  buffer.Add(1, Missing(4));  // 4
  ASSERT_EQ(buffer.stats().dropped_bids, 1u);
  EXPECT_EQ(buffer.RenumberAbove(3), 3u);
  EXPECT_THAT(Sequences(buffer.NextBatch(10)), ElementsAre(4u, 5u, 6u));
  EXPECT_EQ(buffer.Add(1, Missing(5)), 7u);
}

}  // namespace
}  // namespace breaker::client
