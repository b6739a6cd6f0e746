// The C API against a real breakerd: what a beacon node written in Go, Rust, Java or Nim does
// through its FFI. The service runs in-process on a loopback port, on the real clock.

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/c_api.h"
#include "core/chain_time.h"
#include "gtest/gtest.h"
#include "service/rpc/server.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker {
namespace {

using ::breaker::testing::IsOk;
using ::breaker::testing::TestDir;
using ::breaker::testing::WaitFor;

struct Notifications {
  std::atomic<int> calls{0};
  std::atomic<uint64_t> last_version{0};
};

void OnPolicy(void* user_data, uint64_t fleet_version, int /*mode*/, int /*source*/) {
  auto* notifications = static_cast<Notifications*>(user_data);
  notifications->last_version = fleet_version;
  ++notifications->calls;
}

TEST(CApiService, ReportAskAndSubscribeThroughTheCApi) {
  const std::string dir = TestDir();
  const std::string config_path = dir + "/breakerd.textproto";
  std::ofstream(config_path) << "chain { network: \"mainnet\" gloas_fork_epoch: 0 }\n";
  service::ServerOptions server_options;
  server_options.listen_address = "127.0.0.1:0";
  server_options.state_dir = dir + "/state";
  server_options.config_path = config_path;
  absl::StatusOr<std::unique_ptr<service::Server>> server = service::Server::Start(server_options);
  ASSERT_THAT(server, IsOk());

  breaker_options* options = breaker_options_new();
  const std::string address = absl::StrCat("127.0.0.1:", (*server)->port());
  ASSERT_EQ(breaker_options_add_address(options, address.c_str()), 0);
  ASSERT_EQ(breaker_options_set_node_id(options, "ffi-node"), 0);
  ASSERT_EQ(breaker_options_set_network(options, "mainnet"), 0);
  breaker_client* client = nullptr;
  breaker_error error{};
  error.size = sizeof error;
  ASSERT_EQ(breaker_client_new(options, &client, &error), 0) << error.message;
  breaker_options_free(options);

  Notifications notifications;
  int subscription = 0;
  ASSERT_EQ(breaker_subscribe(client, &OnPolicy, &notifications, &subscription), 0);
  ASSERT_TRUE(WaitFor([&] { return breaker_policy_source(client) == BREAKER_SOURCE_FLEET; }));
  EXPECT_EQ(breaker_mode(client), BREAKER_MODE_ALL_BUILDERS);
  EXPECT_TRUE(breaker_is_allowed(client, 5, nullptr));

  // Builder 5's block at the current slot got no payload though 93% attested it.
  const core::ChainSpec chain = core::ChainSpecForNetwork("mainnet").value();
  const uint64_t slot = core::SlotAt(absl::Now(), chain);
  uint8_t root[32] = {0xab, 0xcd};
  ASSERT_EQ(breaker_report_payload_missing(client, slot, 5, root, 0.93), 0);
  ASSERT_EQ(breaker_report_bid(client, slot, 6, "Relay.Example:18550", nullptr, 0), 0);

  EXPECT_TRUE(WaitFor([&] { return !breaker_is_allowed(client, 5, nullptr); }));
  EXPECT_TRUE(breaker_is_allowed(client, 6, "http://relay.example:18550/"));
  uint64_t banned[4] = {};
  EXPECT_EQ(breaker_banned_builders(client, banned, 4), 1u);
  EXPECT_EQ(banned[0], 5u);
  const uint64_t version = breaker_policy_version(client);
  EXPECT_EQ(version, (*server)->fleet()->policy()->policy.version);
  EXPECT_TRUE(WaitFor([&] { return notifications.last_version.load() == version; }));

  breaker_stats stats{};
  stats.size = sizeof stats;
  ASSERT_TRUE(WaitFor([&] {
    breaker_get_stats(client, &stats);
    return stats.acknowledged == 2;
  }));
  EXPECT_TRUE(stats.connected);
  EXPECT_EQ(stats.reported, 2u);
  EXPECT_EQ(stats.buffered, 0u);
  EXPECT_EQ(stats.fleet_policy_version, version);

  breaker_unsubscribe(client, subscription);
  breaker_client_free(client);
  (*server)->Shutdown();
}

}  // namespace
}  // namespace breaker
