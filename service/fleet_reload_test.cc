// Reloads of the configuration that overlap: a reload that reads slowly must not undo one
// called after it, which answered first. The file's read is a stand-in that stops when told.

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "breaker/v1/config.pb.h"
#include "common/fake_clock.h"
#include "core/chain_time.h"
#include "core/config.h"
#include "gtest/gtest.h"
#include "service/fleet.h"
#include "service/service_limits.h"
#include "service/storage/memory_state_store.h"
#include "tests/support/status_matchers.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::testing::FakeClock;
using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::HasSubstr;

core::Config TestConfig() {
  core::Config config;
  config.chain = core::ChainSpecForNetwork("mainnet").value();
  config.chain.gloas_fork_epoch = 0;
  return config;
}

// Calls ReloadConfig and waits for its answer.
absl::StatusOr<v1::Config> Reload(Fleet& fleet) {
  std::promise<absl::StatusOr<v1::Config>> answer;
  fleet.ReloadConfig(
      [&answer](absl::StatusOr<v1::Config> config) { answer.set_value(std::move(config)); });
  return answer.get_future().get();
}

TEST(FleetReloadTest, AReloadCalledEarlierNeverUndoesOneCalledLater) {
  FakeClock clock(core::StartOf(100 * 32, TestConfig().chain));
  // The first read finds max_connected_nodes 10 and stops until released; the file then says
  // 20, which the second read finds.
  std::promise<void> first_read;
  std::promise<void> release_first;
  std::shared_future<void> released = release_first.get_future().share();
  std::atomic<int> reads{0};
  Fleet::Options options;
  options.config = TestConfig();
  options.config_path = "breakerd.textproto";
  options.load_config = [&](const std::string&) -> absl::StatusOr<ServiceConfig> {
    ServiceConfig config{TestConfig(), ServiceLimits()};
    if (reads.fetch_add(1) == 0) {
      config.limits.max_connected_nodes = 10;
      first_read.set_value();
      released.wait();
    } else {
      config.limits.max_connected_nodes = 20;
    }
    return config;
  };
  options.store = std::make_unique<MemoryStateStore>(std::make_shared<MemoryStateStore::Backing>());
  options.clock = &clock;
  options.run_ticker = false;
  absl::StatusOr<std::unique_ptr<Fleet>> opened = Fleet::Open(std::move(options));
  ASSERT_THAT(opened, IsOk());
  Fleet& fleet = **opened;

  absl::StatusOr<v1::Config> first = absl::UnknownError("not answered");
  std::thread slow([&] { first = Reload(fleet); });
  first_read.get_future().wait();
  absl::StatusOr<v1::Config> second = Reload(fleet);
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(second->max_connected_nodes(), 20u);

  release_first.set_value();
  slow.join();
  EXPECT_THAT(first, StatusIs(absl::StatusCode::kAborted, HasSubstr("reload again")));
  fleet.Sync();
  EXPECT_EQ(fleet.EffectiveConfig().max_connected_nodes(), 20u);
  EXPECT_EQ(fleet.max_connected_nodes(), 20u);

  // A reload called after both is put in force.
  ASSERT_THAT(Reload(fleet), IsOk());
  EXPECT_EQ(reads.load(), 3);
}

}  // namespace
}  // namespace breaker::service
