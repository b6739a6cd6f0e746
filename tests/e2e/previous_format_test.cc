// A state directory written by the previous breakerd restores under this one: the stored
// format is versioned, and kept readable (proto/breaker/state/v1/state.proto).
//
// The fixture, testdata/previous_format/breakerd.db, was made by the breakerd before the
// journal held the batches as received: three example_node processes reported observations
// (some of them failures), an operator banned builder 17 and relay https://relay-z.example and
// trusted builder 3, `breakerctl --json status` printed the policy (policy.json beside it),
// and breakerd was killed with SIGKILL. So the database holds its first snapshot and, after it,
// every change in the journal, in the earlier form (NodeObservations.observations), at schema
// version 1; the WAL was checkpointed into the file.

#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "breaker/state/v1/state.pb.h"
#include "breaker/v1/breaker.pb.h"
#include "common/fake_clock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/codec/received_batch.h"
#include "proto/codec/text_file.h"
#include "service/fleet.h"
#include "service/service_limits.h"
#include "service/storage/sqlite_state_store.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::testing::IsOk;

constexpr char kFixtureDir[] = "tests/e2e/testdata/previous_format/";
constexpr char kConfigPath[] = "examples/breakerd.textproto";
// When the fixture's breakerd started (Unix seconds). A clock there moves no time: the stored
// state is at a later slot, and time never goes back.
constexpr int64_t kFixtureStart = 1796299021;
// What `breakerctl --json nodes` printed before the kill.
constexpr uint64_t kLastSequences[] = {1796299034402981, 1796299034397141, 1796299034412061};

class PreviousFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TestDir();
    // A copy: opening the state upgrades it.
    std::filesystem::copy_file(std::string(kFixtureDir) + "breakerd.db", dir_ + "/breakerd.db",
                               std::filesystem::copy_options::overwrite_existing);
    absl::StatusOr<service::ServiceConfig> config = service::LoadServiceConfig(kConfigPath);
    ASSERT_THAT(config, IsOk());
    config_ = *std::move(config);
  }

  absl::StatusOr<std::unique_ptr<service::Fleet>> Open() {
    absl::StatusOr<std::unique_ptr<service::SqliteStateStore>> store =
        service::SqliteStateStore::Open(dir_);
    if (!store.ok()) return store.status();
    service::Fleet::Options options;
    options.config = config_.rules;
    options.limits = config_.limits;
    options.store = *std::move(store);
    options.clock = &clock_;
    options.run_ticker = false;
    return service::Fleet::Open(std::move(options));
  }

  std::string dir_;
  service::ServiceConfig config_;
  testing::FakeClock clock_{absl::FromUnixSeconds(kFixtureStart)};
};

TEST_F(PreviousFormatTest, TheFixtureHoldsAJournalOfTheEarlierForm) {
  absl::StatusOr<std::unique_ptr<service::SqliteStateStore>> store =
      service::SqliteStateStore::Open(dir_);
  ASSERT_THAT(store, IsOk());
  absl::StatusOr<service::StoredState> stored = (*store)->Load();
  ASSERT_THAT(stored, IsOk());
  int earlier_form = 0;
  for (const auto& [sequence, bytes] : stored->journal) {
    state::v1::JournalEntry entry;
    ASSERT_TRUE(entry.ParseFromString(bytes)) << sequence;
    EXPECT_TRUE(entry.observations().batch().empty()) << sequence;
    if (entry.observations().observations_size() > 0) ++earlier_form;
  }
  EXPECT_GT(earlier_form, 1000);
}

TEST_F(PreviousFormatTest, RestoresThePolicyTheNodesAndTheOperatorsDecisions) {
  absl::StatusOr<std::string> json =
      codec::ReadTextFile(std::string(kFixtureDir) + "policy.json", "policy");
  ASSERT_THAT(json, IsOk());
  v1::Policy expected;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*json, &expected).ok());
  ASSERT_EQ(expected.version(), 45u);

  absl::StatusOr<std::unique_ptr<service::Fleet>> fleet = Open();
  ASSERT_THAT(fleet, IsOk());
  EXPECT_EQ((*fleet)->policy()->proto.SerializeAsString(), expected.SerializeAsString())
      << "restored:\n"
      << (*fleet)->policy()->proto.DebugString() << "expected:\n"
      << expected.DebugString();
  for (int i = 0; i < 3; ++i) {
    const std::string node = "bn-" + std::to_string(i + 1);
    EXPECT_EQ((*fleet)->LastSequence(node), kLastSequences[i]) << node;
  }
  absl::StatusOr<v1::Builder> trusted = (*fleet)->GetBuilder(3);
  ASSERT_THAT(trusted, IsOk());
  EXPECT_TRUE(trusted->trusted());
}

TEST_F(PreviousFormatTest, TakesNewObservationsAndKeepsThemAcrossARestart) {
  const uint64_t next = kLastSequences[0] + 1;
  {
    absl::StatusOr<std::unique_ptr<service::Fleet>> fleet = Open();
    ASSERT_THAT(fleet, IsOk());
    v1::ObservationBatch batch;
    v1::Observation* observation = batch.add_observations();
    // A slot the fixture's nodes reported on.
    observation->set_slot(15789583);
    observation->set_sequence(next);
    observation->mutable_finalized()->set_epoch(1);
    std::promise<absl::StatusOr<v1::ObservationAck>> answer;
    (*fleet)->SubmitObservations(
        "bn-1", codec::ReceivedBatch::Of(batch),
        [&answer](absl::StatusOr<v1::ObservationAck> ack) { answer.set_value(std::move(ack)); });
    absl::StatusOr<v1::ObservationAck> ack = answer.get_future().get();
    ASSERT_THAT(ack, IsOk());
    EXPECT_EQ(ack->sequence(), next);
    EXPECT_EQ(ack->refused_size(), 0) << ack->DebugString();
  }
  absl::StatusOr<std::unique_ptr<service::Fleet>> reopened = Open();
  ASSERT_THAT(reopened, IsOk());
  EXPECT_EQ((*reopened)->LastSequence("bn-1"), next);
  EXPECT_EQ((*reopened)->LastSequence("bn-2"), kLastSequences[1]);
}

}  // namespace
}  // namespace breaker
