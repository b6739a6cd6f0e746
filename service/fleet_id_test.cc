// The fleet id when the state goes back: an old backup of the state restored, over the
// in-memory store and a fake clock. A node holding a version above the restored state's own
// under the same fleet id makes the fleet take a new one, durably, and publish its policy
// under it; nothing else changes it.

#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "breaker/v1/breaker.pb.h"
#include "common/fake_clock.h"
#include "common/mutex.h"
#include "core/chain_time.h"
#include "core/config.h"
#include "gtest/gtest.h"
#include "service/fleet.h"
#include "service/storage/memory_state_store.h"
#include "tests/support/status_matchers.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::testing::FakeClock;
using ::breaker::testing::IsOk;

constexpr core::Slot kStartSlot = 100 * 32 + 8;

core::Config TestConfig() {
  core::Config config;
  config.chain = core::ChainSpecForNetwork("mainnet").value();
  config.chain.gloas_fork_epoch = 0;
  return config;
}

// What the fleet publishes: each policy's version and fleet id.
class Publications : public PolicyListener {
 public:
  void OnPolicy(std::shared_ptr<const PublishedPolicy> policy) override {
    MutexLock lock(&mu_);
    published_.emplace_back(policy->policy.version, policy->proto.fleet_id());
  }
  std::vector<std::pair<uint64_t, std::string>> published() const {
    MutexLock lock(&mu_);
    return published_;
  }
  void Clear() {
    MutexLock lock(&mu_);
    published_.clear();
  }

 private:
  mutable Mutex mu_;
  std::vector<std::pair<uint64_t, std::string>> published_;
};

class FleetIdTest : public ::testing::Test {
 protected:
  FleetIdTest() : clock_(core::StartOf(kStartSlot, TestConfig().chain)) {}

  void TearDown() override { Close(); }

  // Opens a fleet over `backing`: a start of breakerd on that state. The publications
  // recorded are this fleet's.
  void Open(const std::shared_ptr<MemoryStateStore::Backing>& backing) {
    Close();
    auto store = std::make_unique<MemoryStateStore>(backing);
    store_ = store.get();
    Fleet::Options options;
    options.config = TestConfig();
    options.store = std::move(store);
    options.clock = &clock_;
    options.run_ticker = false;
    absl::StatusOr<std::unique_ptr<Fleet>> fleet = Fleet::Open(std::move(options));
    ASSERT_THAT(fleet, IsOk());
    fleet_ = *std::move(fleet);
    publications_.Clear();
    fleet_->Subscribe(&publications_);
  }

  // Stops the fleet cleanly (a final snapshot).
  void Close() {
    if (fleet_ != nullptr) fleet_->Unsubscribe(&publications_);
    fleet_.reset();
  }

  // Stops the fleet as a crash would leave it: its final snapshot fails, so a restart replays
  // the journal.
  void Crash() {
    store_->FailNextWriteSnapshots(1, absl::UnavailableError("killed"));
    Close();
  }

  void Ban(uint64_t builder) {
    state::v1::AdminAction action;
    action.mutable_ban()->set_builder_index(builder);
    action.mutable_ban()->set_reason("operator's test ban");
    std::promise<absl::Status> answer;
    fleet_->SubmitAdmin(std::move(action),
                        [&answer](absl::StatusOr<std::shared_ptr<const PublishedPolicy>> policy) {
                          answer.set_value(policy.status());
                        });
    ASSERT_THAT(answer.get_future().get(), IsOk());
  }

  // The node says at its hello that it holds `version` of `fleet_id`.
  void Hello(const std::string& fleet_id, uint64_t version) {
    fleet_->RenewFleetId("bn-1", fleet_id, version);
    fleet_->Sync();
  }

  FakeClock clock_;
  const std::shared_ptr<MemoryStateStore::Backing> backing_ =
      std::make_shared<MemoryStateStore::Backing>();
  MemoryStateStore* store_ = nullptr;
  std::unique_ptr<Fleet> fleet_;
  Publications publications_;
};

TEST_F(FleetIdTest, AVersionAboveTheRestoredStatesOwnTakesANewFleetId) {
  ASSERT_NO_FATAL_FAILURE(Open(backing_));
  ASSERT_NO_FATAL_FAILURE(Ban(1));
  Close();
  // The operator's backup, then more changes the nodes take.
  const std::shared_ptr<MemoryStateStore::Backing> backup = backing_->Copy();
  ASSERT_NO_FATAL_FAILURE(Open(backing_));
  ASSERT_NO_FATAL_FAILURE(Ban(2));
  ASSERT_NO_FATAL_FAILURE(Ban(3));
  const uint64_t held = fleet_->policy()->policy.version;
  const std::string fleet_id = fleet_->fleet_id();
  ASSERT_FALSE(fleet_id.empty());
  Close();

  // The backup restored: the versions went back, under the same fleet id.
  ASSERT_NO_FATAL_FAILURE(Open(backup));
  const std::shared_ptr<const PublishedPolicy> restored = fleet_->policy();
  ASSERT_EQ(restored->proto.fleet_id(), fleet_id);
  ASSERT_LT(restored->policy.version, held);
  // A node holding a version the restored state has, or one of another fleet id, changes
  // nothing.
  Hello(fleet_id, restored->policy.version);
  Hello("another-state", held);
  Hello("", held);
  EXPECT_EQ(fleet_->fleet_id(), fleet_id);
  EXPECT_TRUE(publications_.published().empty());

  // A node holding the later version.
  Hello(fleet_id, held);
  const std::shared_ptr<const PublishedPolicy> renewed = fleet_->policy();
  const std::string new_id = renewed->proto.fleet_id();
  EXPECT_NE(new_id, fleet_id);
  EXPECT_EQ(new_id.size(), fleet_id.size());
  EXPECT_EQ(fleet_->fleet_id(), new_id);
  // The same policy, under the new fleet id, published to every listener.
  EXPECT_EQ(renewed->policy.version, restored->policy.version);
  EXPECT_TRUE(renewed->policy.SameDecisions(restored->policy));
  EXPECT_GT(renewed->generation, restored->generation);
  EXPECT_EQ(publications_.published(),
            (std::vector<std::pair<uint64_t, std::string>>{{restored->policy.version, new_id}}));

  // Taken once: other nodes holding the same old version, later, change nothing more.
  Hello(fleet_id, held);
  Hello(new_id, restored->policy.version);
  EXPECT_EQ(fleet_->fleet_id(), new_id);
  EXPECT_EQ(publications_.published().size(), 1u);

  // Versions go on under the new fleet id.
  ASSERT_NO_FATAL_FAILURE(Ban(4));
  EXPECT_EQ(fleet_->policy()->policy.version, restored->policy.version + 1);
  EXPECT_EQ(fleet_->policy()->proto.fleet_id(), new_id);
}

TEST_F(FleetIdTest, TheNewFleetIdIsDurable) {
  ASSERT_NO_FATAL_FAILURE(Open(backing_));
  ASSERT_NO_FATAL_FAILURE(Ban(1));
  const std::string fleet_id = fleet_->fleet_id();
  const uint64_t version = fleet_->policy()->policy.version;
  Hello(fleet_id, version + 10);
  const std::string new_id = fleet_->fleet_id();
  ASSERT_NE(new_id, fleet_id);

  // From the journal, replayed after a crash.
  Crash();
  ASSERT_FALSE(backing_->Read().journal.empty());
  ASSERT_NO_FATAL_FAILURE(Open(backing_));
  EXPECT_EQ(fleet_->fleet_id(), new_id);
  EXPECT_EQ(fleet_->policy()->policy.version, version);
  // From the snapshot, after a clean stop.
  Close();
  ASSERT_TRUE(backing_->Read().journal.empty());
  ASSERT_NO_FATAL_FAILURE(Open(backing_));
  EXPECT_EQ(fleet_->fleet_id(), new_id);
  EXPECT_EQ(fleet_->policy()->policy.version, version);
}

TEST_F(FleetIdTest, ARenewalTheStoreRefusesChangesNothing) {
  ASSERT_NO_FATAL_FAILURE(Open(backing_));
  const std::string fleet_id = fleet_->fleet_id();
  const uint64_t version = fleet_->policy()->policy.version;
  store_->FailNextAppends(1, absl::UnavailableError("disk full"));
  Hello(fleet_id, version + 1);
  EXPECT_EQ(fleet_->fleet_id(), fleet_id);
  EXPECT_TRUE(publications_.published().empty());
}

}  // namespace
}  // namespace breaker::service
