#include "core/chain_time.h"

#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::core {
namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int64_t kMainnetGenesis = 1606824023;

absl::Time Genesis(const ChainSpec& spec) { return absl::FromUnixSeconds(spec.genesis_time_unix); }

TEST(ChainSpecForNetwork, Mainnet) {
  absl::StatusOr<ChainSpec> spec = ChainSpecForNetwork("mainnet");
  ASSERT_THAT(spec, IsOk());
  EXPECT_EQ(spec->network, "mainnet");
  EXPECT_EQ(spec->genesis_time_unix, kMainnetGenesis);
  EXPECT_EQ(spec->seconds_per_slot, 12u);
  EXPECT_EQ(spec->slots_per_epoch, 32u);
  EXPECT_EQ(spec->gloas_fork_epoch, kFarFutureEpoch);
}

TEST(ChainSpecForNetwork, MainnetIsTheDefault) {
  absl::StatusOr<ChainSpec> spec = ChainSpecForNetwork("mainnet");
  ASSERT_THAT(spec, IsOk());
  EXPECT_EQ(*spec, ChainSpec());
}

TEST(ChainSpecForNetwork, Sepolia) {
  absl::StatusOr<ChainSpec> spec = ChainSpecForNetwork("sepolia");
  ASSERT_THAT(spec, IsOk());
  EXPECT_EQ(spec->network, "sepolia");
  EXPECT_EQ(spec->genesis_time_unix, 1655733600);
  EXPECT_EQ(spec->seconds_per_slot, 12u);
  EXPECT_EQ(spec->slots_per_epoch, 32u);
  EXPECT_EQ(spec->gloas_fork_epoch, kFarFutureEpoch);
}

TEST(ChainSpecForNetwork, Hoodi) {
  absl::StatusOr<ChainSpec> spec = ChainSpecForNetwork("hoodi");
  ASSERT_THAT(spec, IsOk());
  EXPECT_EQ(spec->network, "hoodi");
  EXPECT_EQ(spec->genesis_time_unix, 1742213400);
  EXPECT_EQ(spec->seconds_per_slot, 12u);
  EXPECT_EQ(spec->slots_per_epoch, 32u);
  EXPECT_EQ(spec->gloas_fork_epoch, kFarFutureEpoch);
}

TEST(ChainSpecForNetwork, KnownNetworksAreValid) {
  for (absl::string_view name : {"mainnet", "sepolia", "hoodi"}) {
    absl::StatusOr<ChainSpec> spec = ChainSpecForNetwork(name);
    ASSERT_THAT(spec, IsOk()) << name;
    EXPECT_THAT(ValidateChainSpec(*spec), IsOk()) << name;
  }
}

TEST(ChainSpecForNetwork, UnknownNameListsKnownNetworksAndCustomFields) {
  EXPECT_THAT(ChainSpecForNetwork("holesky"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"holesky\""), HasSubstr("mainnet"), HasSubstr("sepolia"),
                             HasSubstr("hoodi"), HasSubstr("genesis_time_unix"))));
}

TEST(ChainSpecForNetwork, EmptyNameIsUnknown) {
  EXPECT_THAT(ChainSpecForNetwork(""), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ChainSpecForNetwork, NamesAreExact) {
  EXPECT_THAT(ChainSpecForNetwork("Mainnet"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ChainSpecForNetwork("mainnet "), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ValidateChainSpec, DefaultIsValid) { EXPECT_THAT(ValidateChainSpec(ChainSpec()), IsOk()); }

TEST(ValidateChainSpec, CustomNetworkIsValid) {
  ChainSpec spec;
  spec.network = "devnet-7";
  spec.genesis_time_unix = 1700000000;
  spec.seconds_per_slot = 6;
  spec.slots_per_epoch = 8;
  spec.gloas_fork_epoch = 10;
  EXPECT_THAT(ValidateChainSpec(spec), IsOk());
}

TEST(ValidateChainSpec, ZeroSecondsPerSlot) {
  ChainSpec spec;
  spec.seconds_per_slot = 0;
  EXPECT_THAT(ValidateChainSpec(spec),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("chain.seconds_per_slot")));
}

TEST(ValidateChainSpec, ZeroSlotsPerEpoch) {
  ChainSpec spec;
  spec.slots_per_epoch = 0;
  EXPECT_THAT(ValidateChainSpec(spec),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("chain.slots_per_epoch")));
}

TEST(ValidateChainSpec, EmptyNetwork) {
  ChainSpec spec;
  spec.network = "";
  EXPECT_THAT(ValidateChainSpec(spec),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("chain.network")));
}

TEST(SlotAt, GenesisIsSlotZero) {
  const ChainSpec spec;
  EXPECT_EQ(SlotAt(Genesis(spec), spec), 0u);
}

TEST(SlotAt, BeforeGenesisIsSlotZero) {
  const ChainSpec spec;
  EXPECT_EQ(SlotAt(Genesis(spec) - absl::Nanoseconds(1), spec), 0u);
  EXPECT_EQ(SlotAt(Genesis(spec) - absl::Hours(24 * 365), spec), 0u);
  EXPECT_EQ(SlotAt(absl::UnixEpoch(), spec), 0u);
  EXPECT_EQ(SlotAt(absl::InfinitePast(), spec), 0u);
}

TEST(SlotAt, ExactlyAtSlotStart) {
  const ChainSpec spec;
  EXPECT_EQ(SlotAt(Genesis(spec) + absl::Seconds(12), spec), 1u);
  EXPECT_EQ(SlotAt(Genesis(spec) + absl::Seconds(12 * 1000), spec), 1000u);
}

TEST(SlotAt, OneNanosecondBeforeSlotStartIsPreviousSlot) {
  const ChainSpec spec;
  EXPECT_EQ(SlotAt(Genesis(spec) + absl::Seconds(12) - absl::Nanoseconds(1), spec), 0u);
  EXPECT_EQ(SlotAt(Genesis(spec) + absl::Seconds(12 * 1000) - absl::Nanoseconds(1), spec), 999u);
}

TEST(SlotAt, MidSlot) {
  const ChainSpec spec;
  EXPECT_EQ(SlotAt(Genesis(spec) + absl::Seconds(12 * 5 + 7), spec), 5u);
}

TEST(SlotAt, KnownMainnetTime) {
  // 2024-01-01T00:00:00Z: (1704067200 - 1606824023) / 12 = 8103598 (remainder 1).
  const ChainSpec spec;
  EXPECT_EQ(SlotAt(absl::FromUnixSeconds(1704067200), spec), 8103598u);
}

TEST(SlotAt, InfiniteFutureDoesNotWrap) {
  const ChainSpec spec;
  EXPECT_EQ(SlotAt(absl::InfiniteFuture(), spec),
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / 12);
}

TEST(SlotAt, CustomSlotLength) {
  ChainSpec spec;
  spec.network = "custom";
  spec.genesis_time_unix = 0;
  spec.seconds_per_slot = 5;
  EXPECT_EQ(SlotAt(absl::FromUnixSeconds(14), spec), 2u);
  EXPECT_EQ(SlotAt(absl::FromUnixSeconds(15), spec), 3u);
}

TEST(StartOf, SlotZeroIsGenesis) {
  const ChainSpec spec;
  EXPECT_EQ(StartOf(0, spec), Genesis(spec));
}

TEST(StartOf, AddsWholeSlots) {
  const ChainSpec spec;
  EXPECT_EQ(StartOf(1, spec), Genesis(spec) + absl::Seconds(12));
  EXPECT_EQ(StartOf(32, spec), Genesis(spec) + absl::Seconds(384));
}

TEST(StartOf, RoundTripsWithSlotAt) {
  const ChainSpec spec;
  for (Slot slot : {Slot{0}, Slot{1}, Slot{31}, Slot{32}, Slot{8103598}, Slot{1} << 40}) {
    EXPECT_EQ(SlotAt(StartOf(slot, spec), spec), slot) << slot;
    if (slot > 0) {
      EXPECT_EQ(SlotAt(StartOf(slot, spec) - absl::Nanoseconds(1), spec), slot - 1) << slot;
    }
  }
}

TEST(StartOf, HugeSlotSaturatesInsteadOfWrapping) {
  const ChainSpec spec;
  EXPECT_EQ(StartOf(std::numeric_limits<Slot>::max(), spec), absl::InfiniteFuture());
  EXPECT_GT(StartOf(Slot{1} << 62, spec), StartOf(Slot{1} << 40, spec));
}

TEST(EpochOf, EpochBoundaries) {
  const ChainSpec spec;
  EXPECT_EQ(EpochOf(0, spec), 0u);
  EXPECT_EQ(EpochOf(31, spec), 0u);
  EXPECT_EQ(EpochOf(32, spec), 1u);
  EXPECT_EQ(EpochOf(63, spec), 1u);
  EXPECT_EQ(EpochOf(64, spec), 2u);
}

TEST(FirstSlotOf, InvertsEpochOfAtBoundaries) {
  const ChainSpec spec;
  EXPECT_EQ(FirstSlotOf(0, spec), 0u);
  EXPECT_EQ(FirstSlotOf(1, spec), 32u);
  for (Epoch epoch : {Epoch{0}, Epoch{1}, Epoch{7}, Epoch{253245}}) {
    EXPECT_EQ(EpochOf(FirstSlotOf(epoch, spec), spec), epoch);
    if (epoch > 0) {
      EXPECT_EQ(EpochOf(FirstSlotOf(epoch, spec) - 1, spec), epoch - 1);
    }
  }
}

TEST(EpochOf, EpochOfTimeOneNanosecondBeforeEpochStart) {
  const ChainSpec spec;
  const absl::Time epoch_two = StartOf(FirstSlotOf(2, spec), spec);
  EXPECT_EQ(EpochOf(SlotAt(epoch_two, spec), spec), 2u);
  EXPECT_EQ(EpochOf(SlotAt(epoch_two - absl::Nanoseconds(1), spec), spec), 1u);
}

TEST(IsGloas, NotScheduledByDefault) {
  const ChainSpec spec;
  EXPECT_FALSE(IsGloas(0, spec));
  EXPECT_FALSE(IsGloas(kFarFutureEpoch - 1, spec));
}

TEST(IsGloas, FromForkEpochOn) {
  ChainSpec spec;
  spec.gloas_fork_epoch = 100;
  EXPECT_FALSE(IsGloas(99, spec));
  EXPECT_TRUE(IsGloas(100, spec));
  EXPECT_TRUE(IsGloas(101, spec));
}

}  // namespace
}  // namespace breaker::core

namespace breaker::core {
namespace {

TEST(ValidateChainSpecBounds, SlotAndEpochLengthsAndNetworkName) {
  ChainSpec spec;
  spec.seconds_per_slot = 3601;
  EXPECT_THAT(ValidateChainSpec(spec),
              ::breaker::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                           ::testing::HasSubstr("1..3600")));
  spec = ChainSpec();
  spec.slots_per_epoch = 8193;
  EXPECT_THAT(ValidateChainSpec(spec),
              ::breaker::testing::StatusIs(absl::StatusCode::kInvalidArgument));
  spec = ChainSpec();
  spec.network = std::string(65, 'n');
  EXPECT_THAT(ValidateChainSpec(spec),
              ::breaker::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                           ::testing::HasSubstr("chain.network is 65 bytes")));
  spec = ChainSpec();
  spec.genesis_time_unix = -1;
  EXPECT_THAT(ValidateChainSpec(spec),
              ::breaker::testing::StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ValidateGenesisTime, MoreThanAYearAheadIsRefused) {
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  ChainSpec spec;
  spec.genesis_time_unix = 1'800'000'000 + 366 * 24 * 3600;
  EXPECT_THAT(ValidateGenesisTime(spec, now), ::breaker::testing::IsOk());
  // Milliseconds written for seconds.
  spec.genesis_time_unix = int64_t{1'800'000'000} * 1000;
  EXPECT_THAT(ValidateGenesisTime(spec, now),
              ::breaker::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                           ::testing::HasSubstr("not milliseconds")));
  spec.genesis_time_unix = std::numeric_limits<int64_t>::max();
  EXPECT_THAT(ValidateGenesisTime(spec, now),
              ::breaker::testing::StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace breaker::core
