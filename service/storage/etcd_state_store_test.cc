// The etcd store's own behaviour, beyond the conformance suite (state_store_test.cc): its size
// limit, leadership and fencing, and etcd's faults, over real etcd members.

#include "service/storage/etcd_state_store.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/fake_clock.h"
#include "common/mutex.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "glog/logging.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "tests/support/etcd_cluster.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::service {
namespace {

using ::breaker::testing::EtcdCluster;
using ::breaker::testing::FakeClock;
using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

using Journal = std::vector<std::pair<uint64_t, std::string>>;

// Three members for the whole binary, started by the first test from the test thread; each
// test keeps its keys under a prefix of its own.
EtcdCluster& Cluster() {
  static EtcdCluster* const cluster = [] {
    EtcdCluster::Options options;
    options.directory = breaker::testing::TestDir() + "/etcd";
    absl::StatusOr<std::unique_ptr<EtcdCluster>> started = EtcdCluster::Start(options);
    CHECK(started.ok()) << started.status();
    return started->release();
  }();
  return *cluster;
}

class EtcdStateStoreTest : public ::testing::Test {
 protected:
  EtcdStateStore::Options StoreOptions(const std::string& name) {
    EtcdStateStore::Options options;
    options.endpoints = Cluster().endpoints();
    options.prefix = prefix_;
    options.name = name;
    options.call_timeout = absl::Seconds(2);
    return options;
  }

  std::unique_ptr<EtcdStateStore> OpenStore(EtcdStateStore::Options options) {
    absl::StatusOr<std::unique_ptr<EtcdStateStore>> store = EtcdStateStore::Open(options);
    EXPECT_THAT(store, IsOk());
    return store.ok() ? *std::move(store) : nullptr;
  }

  // Revokes `lease` behind its holder's back, as its expiry would.
  void RevokeLease(int64_t lease) {
    auto channel = grpc::CreateChannel(Cluster().endpoint(0), grpc::InsecureChannelCredentials());
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    etcdserverpb::LeaseRevokeRequest request;
    request.set_id(lease);
    etcdserverpb::LeaseRevokeResponse response;
    const grpc::Status status =
        etcdserverpb::Lease::NewStub(channel)->LeaseRevoke(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }

  const std::string prefix_ =
      absl::StrCat("/test/", ::testing::UnitTest::GetInstance()->current_test_info()->name());
};

// Records the calls of Options::on_deposed.
class DeposedRecorder {
 public:
  std::function<void(const absl::Status&)> Callback() {
    return [this](const absl::Status& status) {
      MutexLock lock(&mu_);
      calls_.push_back(status);
    };
  }
  std::vector<absl::Status> calls() const {
    MutexLock lock(&mu_);
    return calls_;
  }

 private:
  mutable Mutex mu_;
  std::vector<absl::Status> calls_ ABSL_GUARDED_BY(mu_);
};

TEST_F(EtcdStateStoreTest, AppendLargerThanOneRequestIsInvalidArgument) {
  std::unique_ptr<EtcdStateStore> store = OpenStore(StoreOptions("a"));
  ASSERT_NE(store, nullptr);
  const std::string half(EtcdStateStore::kDefaultMaxRequestBytes / 2, 'x');
  EXPECT_THAT(store->Append({half, half}), StatusIs(absl::StatusCode::kInvalidArgument,
                                                    AllOf(HasSubstr("do not fit one etcd request"),
                                                          HasSubstr("--max-request-bytes"))));
  // Each alone fits, and nothing of the refused batch landed.
  ASSERT_THAT(store->Append({half}), IsOk());
  absl::StatusOr<StoredState> state = store->Load();
  ASSERT_THAT(state, IsOk());
  EXPECT_THAT(state->journal, ElementsAre(Pair(1u, half)));
}

TEST_F(EtcdStateStoreTest, SnapshotOfManyRequestsIsStoredAtomicallyAndCompactsHistory) {
  EtcdStateStore::Options options = StoreOptions("a");
  options.snapshot_chunk_bytes = 100;
  std::unique_ptr<EtcdStateStore> store = OpenStore(options);
  ASSERT_NE(store, nullptr);
  ASSERT_THAT(store->Append({"a", "b", "c"}), IsOk());
  std::string snapshot;
  for (int i = 0; i < 1050; ++i) snapshot.push_back(static_cast<char>(i % 251));
  ASSERT_THAT(store->WriteSnapshot(snapshot, 2), IsOk());
  const std::string smaller(250, 's');
  ASSERT_THAT(store->WriteSnapshot(smaller, 3), IsOk());
  absl::StatusOr<StoredState> state = store->Load();
  ASSERT_THAT(state, IsOk());
  EXPECT_EQ(state->snapshot, smaller);
  EXPECT_EQ(state->snapshot_sequence, 3u);
  EXPECT_TRUE(state->journal.empty());

  auto channel = grpc::CreateChannel(Cluster().endpoint(0), grpc::InsecureChannelCredentials());
  auto kv = etcdserverpb::KV::NewStub(channel);
  // Only the current generation's three chunks are left.
  {
    grpc::ClientContext context;
    etcdserverpb::RangeRequest request;
    request.set_key(prefix_ + "/snapshot/");
    request.set_range_end(prefix_ + "/snapshot0");
    request.set_count_only(true);
    etcdserverpb::RangeResponse response;
    ASSERT_TRUE(kv->Range(&context, request, &response).ok());
    EXPECT_EQ(response.count(), 3);
  }
  // History before the last snapshot is compacted away.
  {
    grpc::ClientContext context;
    etcdserverpb::RangeRequest request;
    request.set_key(prefix_ + "/snapshot");
    request.set_revision(store->leader_revision());
    etcdserverpb::RangeResponse response;
    const grpc::Status status = kv->Range(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::OUT_OF_RANGE) << status.error_message();
  }
}

TEST_F(EtcdStateStoreTest, SecondStoreCannotLeadWhileTheFirstsLeaseLives) {
  std::unique_ptr<EtcdStateStore> first = OpenStore(StoreOptions("first"));
  ASSERT_NE(first, nullptr);
  EtcdStateStore::Options second = StoreOptions("second");
  second.campaign_timeout = absl::Milliseconds(300);
  EXPECT_THAT(EtcdStateStore::Open(second),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("another breakerd leads " + prefix_), HasSubstr("'first'"),
                             HasSubstr("--etcd_prefix"))));
  // The first, kept alive meanwhile, still writes.
  EXPECT_THAT(first->Append({"a"}), IsOk());
  EXPECT_THAT(first->leadership(), IsOk());
}

TEST_F(EtcdStateStoreTest, AStandbyFollowsTheLeaderAndIsListedUntilItStopsCampaigning) {
  std::unique_ptr<EtcdStateStore> first = OpenStore(StoreOptions("leader:1"));
  ASSERT_NE(first, nullptr);
  Mutex mu;
  std::vector<std::string> followed;
  std::atomic<bool> stop{false};
  EtcdStateStore::Options standby = StoreOptions("standby:2");
  standby.campaign_timeout = absl::InfiniteDuration();
  standby.on_follow = [&](absl::string_view leader) {
    MutexLock lock(&mu);
    followed.emplace_back(leader);
  };
  standby.cancelled = [&] { return stop.load(); };
  absl::Status campaign;
  std::thread campaigning([&] { campaign = EtcdStateStore::Open(standby).status(); });
  ASSERT_TRUE(breaker::testing::WaitFor([&] {
    MutexLock lock(&mu);
    return !followed.empty();
  }));
  absl::StatusOr<EtcdStateStore::Replicas> replicas = first->ReadReplicas();
  ASSERT_THAT(replicas, IsOk());
  EXPECT_EQ(replicas->leader, "leader:1");
  EXPECT_THAT(replicas->names, ElementsAre("leader:1", "standby:2"));

  stop = true;
  campaigning.join();
  EXPECT_THAT(campaign, StatusIs(absl::StatusCode::kCancelled));
  {
    MutexLock lock(&mu);
    EXPECT_THAT(followed, ElementsAre("leader:1"));  // once: the leader did not change
  }
  // Its lease revoked as it gave up, it is no longer listed.
  replicas = first->ReadReplicas();
  ASSERT_THAT(replicas, IsOk());
  EXPECT_THAT(replicas->names, ElementsAre("leader:1"));
}

TEST_F(EtcdStateStoreTest, ClosedStoreHandsOverAtOnce) {
  std::unique_ptr<EtcdStateStore> first = OpenStore(StoreOptions("first"));
  ASSERT_NE(first, nullptr);
  ASSERT_THAT(first->Append({"a"}), IsOk());
  EtcdStateStore::Options next = StoreOptions("second");
  next.campaign_timeout = absl::Seconds(10);
  first.reset();  // revokes its lease
  const absl::Time start = absl::Now();
  std::unique_ptr<EtcdStateStore> second = OpenStore(next);
  ASSERT_NE(second, nullptr);
  // Far sooner than the 5 s TTL: the key was freed, not expired.
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_THAT(second->Append({"b"}), IsOk());
}

TEST_F(EtcdStateStoreTest, DeposedLeaderIsFencedByEtcdBeforeItKnows) {
  DeposedRecorder deposed;
  EtcdStateStore::Options old_options = StoreOptions("old");
  // No keepalive in the test's time: the old leader is as if paused.
  old_options.keepalive_interval = absl::Hours(1);
  old_options.lease_ttl = absl::Seconds(30);
  old_options.on_deposed = deposed.Callback();
  std::unique_ptr<EtcdStateStore> old_leader = OpenStore(old_options);
  ASSERT_NE(old_leader, nullptr);
  ASSERT_THAT(old_leader->Append({"a", "b"}), IsOk());

  // Its lease ends (as when it expires): a standby takes over and writes.
  ASSERT_NO_FATAL_FAILURE(RevokeLease(old_leader->lease_id()));
  EtcdStateStore::Options new_options = StoreOptions("new");
  new_options.campaign_timeout = absl::Seconds(10);
  std::unique_ptr<EtcdStateStore> new_leader = OpenStore(new_options);
  ASSERT_NE(new_leader, nullptr);
  ASSERT_THAT(new_leader->Append({"c"}), IsOk());

  // The old leader's own clock says it still leads; etcd refuses it all the same.
  EXPECT_THAT(old_leader->leadership(), IsOk());
  EXPECT_THAT(old_leader->Append({"from the old leader"}),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr("no longer leads " + prefix_), HasSubstr("'new'"),
                             HasSubstr("campaigns again"))));
  EXPECT_THAT(old_leader->WriteSnapshot("old snapshot", 2),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no longer leads")));
  EXPECT_THAT(old_leader->leadership(), StatusIs(absl::StatusCode::kUnavailable));
  ASSERT_EQ(deposed.calls().size(), 1u);
  EXPECT_EQ(deposed.calls()[0], old_leader->leadership());

  // Nothing of the old leader's landed after the handover.
  absl::StatusOr<StoredState> state = new_leader->Load();
  ASSERT_THAT(state, IsOk());
  EXPECT_EQ(state->snapshot, std::nullopt);
  EXPECT_EQ(state->journal, (Journal{{1, "a"}, {2, "b"}, {3, "c"}}));
}

TEST_F(EtcdStateStoreTest, LeaderStepsDownByItsOwnClockOnceTheTtlLessTheMarginPassed) {
  FakeClock clock(absl::FromUnixSeconds(1'000'000));
  DeposedRecorder deposed;
  EtcdStateStore::Options options = StoreOptions("leader");
  options.clock = &clock;
  options.lease_ttl = absl::Seconds(30);
  options.lease_margin = absl::Seconds(5);
  // No keepalive during the test: only the clock moves.
  options.keepalive_interval = absl::Hours(1);
  options.on_deposed = deposed.Callback();
  std::unique_ptr<EtcdStateStore> store = OpenStore(options);
  ASSERT_NE(store, nullptr);

  clock.Advance(absl::Seconds(25) - absl::Milliseconds(1));
  ASSERT_THAT(store->Append({"in time"}), IsOk());
  EXPECT_TRUE(deposed.calls().empty());

  clock.Advance(absl::Milliseconds(1));
  EXPECT_THAT(store->Append({"too late"}),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr("no keepalive of its etcd lease"), HasSubstr("25s"),
                             HasSubstr("campaigns again"))));
  EXPECT_THAT(store->WriteSnapshot("s", 1), StatusIs(absl::StatusCode::kUnavailable));
  ASSERT_EQ(deposed.calls().size(), 1u);
  EXPECT_THAT(deposed.calls()[0], StatusIs(absl::StatusCode::kUnavailable));
  // Even though etcd still holds its lease and key, the store wrote nothing more.
  absl::StatusOr<StoredState> state = store->Load();
  ASSERT_THAT(state, IsOk());
  EXPECT_EQ(state->journal, (Journal{{1, "in time"}}));
}

TEST_F(EtcdStateStoreTest, KeepalivesKeepTheLeaderLeading) {
  FakeClock clock(absl::FromUnixSeconds(1'000'000));
  EtcdStateStore::Options options = StoreOptions("leader");
  options.clock = &clock;
  options.lease_ttl = absl::Seconds(30);
  options.keepalive_interval = absl::Milliseconds(10);
  std::unique_ptr<EtcdStateStore> store = OpenStore(options);
  ASSERT_NE(store, nullptr);
  // Twice 20 s: past the TTL less the margin since the grant, not since the last keepalive.
  for (int step = 0; step < 2; ++step) {
    clock.Advance(absl::Seconds(20));
    ASSERT_TRUE(breaker::testing::WaitFor(
        [&] { return store->last_keepalive() == clock.Monotonic(); }, absl::Seconds(10)));
  }
  EXPECT_THAT(store->Append({"a"}), IsOk());
  EXPECT_THAT(store->leadership(), IsOk());
}

// A grant answered late (etcd had no quorum when it was asked) leaves less than an interval of
// the lease by the store's clock, which counts from when it was asked: the first keepalive goes
// at once, not an interval after the answer, so that the new leader does not step down as soon
// as it leads.
TEST_F(EtcdStateStoreTest, ALeaseGrantedLateIsRenewedAtOnce) {
  FakeClock clock(absl::FromUnixSeconds(1'000'000));
  const absl::Duration asked = clock.Monotonic();
  DeposedRecorder deposed;
  EtcdStateStore::Options options = StoreOptions("leader");
  options.clock = &clock;
  options.lease_ttl = absl::Seconds(30);
  options.lease_margin = absl::Seconds(5);
  options.keepalive_interval = absl::Seconds(10);
  options.on_deposed = deposed.Callback();
  bool granted = false;
  // The first call is the grant: its answer comes 24 s after it was asked, 1 s before the lease
  // runs out by the store's clock.
  options.on_answered = [&](bool) {
    if (granted) return;
    granted = true;
    clock.Advance(absl::Seconds(24));
  };
  std::unique_ptr<EtcdStateStore> store = OpenStore(options);
  ASSERT_NE(store, nullptr);

  EXPECT_TRUE(
      breaker::testing::WaitFor([&] { return store->last_keepalive() > asked; }, absl::Seconds(10)))
      << "no keepalive within the lease's last second";
  clock.Advance(absl::Seconds(1));
  EXPECT_THAT(store->Append({"still leading"}), IsOk());
  EXPECT_TRUE(deposed.calls().empty());
}

// Without a quorum etcd answers nothing and expires no lease. The store counts its lease on its
// own clock and is deposed once the TTL less the margin has passed since its last keepalive, at
// that moment: a write waiting on etcd then ends with it, long before its own deadline, later
// writes fail without asking etcd, and the store goes without waiting to revoke its lease.
TEST_F(EtcdStateStoreTest, AWriteWaitingWithoutAQuorumEndsWhenTheLeaseRunsOut) {
  DeposedRecorder deposed;
  EtcdStateStore::Options options = StoreOptions("leader");
  options.lease_ttl = absl::Seconds(3);
  options.lease_margin = absl::Seconds(1);
  // Far past the lease: only the deposition can end the write in time.
  options.call_timeout = absl::Seconds(60);
  options.on_deposed = deposed.Callback();
  std::unique_ptr<EtcdStateStore> store = OpenStore(options);
  ASSERT_NE(store, nullptr);
  ASSERT_THAT(store->Append({"before"}), IsOk());

  // The store's member stays up, without a quorum: it holds the write.
  Cluster().Kill(1);
  Cluster().Kill(2);
  absl::Cleanup restart = [] {
    EXPECT_THAT(Cluster().Restart(1), IsOk());
    EXPECT_THAT(Cluster().Restart(2), IsOk());
  };
  const absl::Time start = absl::Now();
  EXPECT_THAT(store->Append({"during"}), StatusIs(absl::StatusCode::kUnavailable,
                                                  AllOf(HasSubstr("no keepalive of its etcd lease"),
                                                        HasSubstr("campaigns again"))));
  // The lease runs out 2 s after the last keepalive, at the latest; the write's deadline is a
  // minute away, and etcd gives up on it by itself after 7 s (its request timeout).
  EXPECT_LT(absl::Now() - start, absl::Seconds(4));
  ASSERT_EQ(deposed.calls().size(), 1u);
  EXPECT_EQ(deposed.calls()[0], store->leadership());

  const absl::Time again = absl::Now();
  EXPECT_THAT(store->Append({"after"}), StatusIs(absl::StatusCode::kUnavailable,
                                                 HasSubstr("no keepalive of its etcd lease")));
  EXPECT_THAT(store->WriteSnapshot("s", 1), StatusIs(absl::StatusCode::kUnavailable));
  store.reset();
  EXPECT_LT(absl::Now() - again, absl::Seconds(2));
}

TEST_F(EtcdStateStoreTest, QuorumLossIsUnavailableAndRecoversWhenItReturns) {
  EtcdStateStore::Options options = StoreOptions("leader");
  options.call_timeout = absl::Seconds(1);
  // Longer than the outage below, so that the store still leads when etcd returns.
  options.lease_ttl = absl::Seconds(60);
  std::unique_ptr<EtcdStateStore> store = OpenStore(options);
  ASSERT_NE(store, nullptr);
  ASSERT_THAT(store->Append({"before"}), IsOk());

  // Two of three gone, among them the one the store talks to.
  Cluster().Kill(0);
  Cluster().Kill(1);
  const absl::Time start = absl::Now();
  EXPECT_THAT(store->Append({"during"}),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("etcd at 127.0.0.1:")));
  EXPECT_THAT(store->Append({"during"}), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(store->Load(), StatusIs(absl::StatusCode::kUnavailable));
  // Each call within its deadline, plus the time to fail over to the next endpoint.
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));

  ASSERT_THAT(Cluster().Restart(0), IsOk());
  ASSERT_THAT(Cluster().Restart(1), IsOk());
  absl::StatusOr<uint64_t> after;
  ASSERT_TRUE(breaker::testing::WaitFor(
      [&] {
        after = store->Append({"after"});
        return after.ok();
      },
      absl::Seconds(20), absl::Milliseconds(100)))
      << after.status();
  EXPECT_THAT(store->leadership(), IsOk());
  absl::StatusOr<StoredState> state = store->Load();
  ASSERT_THAT(state, IsOk());
  // What was acknowledged is there; a refused append may have landed or not, but sequences
  // stay consecutive and the last is the one acknowledged.
  ASSERT_GE(state->journal.size(), 2u);
  EXPECT_EQ(state->journal.front(), (std::pair<uint64_t, std::string>{1, "before"}));
  EXPECT_EQ(state->journal.back(), (std::pair<uint64_t, std::string>{*after, "after"}));
  for (size_t i = 1; i + 1 < state->journal.size(); ++i) {
    EXPECT_EQ(state->journal[i].second, "during");
  }
}

TEST_F(EtcdStateStoreTest, OneMemberDownOfThreeChangesNothing) {
  std::unique_ptr<EtcdStateStore> store = OpenStore(StoreOptions("leader"));
  ASSERT_NE(store, nullptr);
  ASSERT_THAT(store->Append({"a"}), IsOk());
  Cluster().Kill(2);
  EXPECT_THAT(store->Append({"b"}), IsOk());
  absl::StatusOr<StoredState> state = store->Load();
  ASSERT_THAT(state, IsOk());
  EXPECT_EQ(state->journal, (Journal{{1, "a"}, {2, "b"}}));
  ASSERT_THAT(Cluster().Restart(2), IsOk());
}

TEST(EtcdStateStoreOptionsTest, BadOptionsNameTheirFlag) {
  EtcdStateStore::Options options;
  options.prefix = "/breaker/pool";
  EXPECT_THAT(EtcdStateStore::Open(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--etcd_endpoints")));
  options.endpoints = {"localhost"};
  EXPECT_THAT(EtcdStateStore::Open(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--etcd_endpoints")));
  options.endpoints = {"127.0.0.1:2379"};
  for (const char* prefix : {"", "/", "breaker", "/breaker/"}) {
    options.prefix = prefix;
    EXPECT_THAT(EtcdStateStore::Open(options),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--etcd_prefix")))
        << prefix;
  }
  options.prefix = "/breaker/pool";
  options.lease_ttl = absl::Seconds(1);
  EXPECT_THAT(EtcdStateStore::Open(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--etcd_lease_ttl")));
  options.lease_ttl = absl::Seconds(5);
  for (int64_t bytes : {int64_t{1000}, int64_t{1} << 40}) {
    options.max_request_bytes = bytes;
    EXPECT_THAT(EtcdStateStore::Open(options),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--etcd_max_request_bytes")))
        << bytes;
  }
}

TEST(EtcdStateStoreOptionsTest, TlsFilesAreCheckedNamingTheirFlag) {
  EXPECT_THAT(MakeEtcdCredentials({}), IsOk());
  EXPECT_THAT(MakeEtcdCredentials({"", "cert.pem", ""}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--etcd_key")));
  EXPECT_THAT(MakeEtcdCredentials({"/nonexistent/ca.pem", "", ""}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--etcd_ca"), HasSubstr("/nonexistent/ca.pem"))));
}

}  // namespace
}  // namespace breaker::service
