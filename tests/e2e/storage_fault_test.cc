// A storage fault in the real breakerd: its file size limit (RLIMIT_FSIZE) is lowered, while it
// runs, to one byte, so that every write of its SQLite store fails (EFBIG) as on a full disk.
// A node's observations are refused with UNAVAILABLE, never acknowledged, and health says
// NOT_SERVING; once the limit is raised again, breakerd recovers by itself: SERVING, and the
// node's observations, resent by its client library, acknowledged and applied.

#include <sys/resource.h>
#include <sys/types.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/support/fleet_harness.h"
#include "tests/support/status_matchers.h"
#include "tests/support/subprocess.h"
#include "tests/support/test_util.h"

namespace breaker {
namespace {

namespace v1 = ::breaker::v1;

using ::breaker::testing::AckLine;
using ::breaker::testing::CallUnary;
using ::breaker::testing::Deadline;
using ::breaker::testing::FleetTest;
using ::breaker::testing::GloasChain;
using ::breaker::testing::IsOk;
using ::breaker::testing::Missing;
using ::breaker::testing::PollUntil;
using ::breaker::testing::StatusIs;
using ::breaker::testing::Subprocess;
using ::testing::HasSubstr;

using Stream = Subprocess::Stream;

// Sets the file size limit of process `pid` (its soft limit): beyond `bytes`, its writes fail
// with EFBIG. nullopt: back to the hard limit, which stays as it was, so that raising the soft
// one again needs no privilege.
void SetFileSizeLimit(pid_t pid, std::optional<rlim_t> bytes) {
  struct rlimit limit;
  ASSERT_EQ(prlimit(pid, RLIMIT_FSIZE, nullptr, &limit), 0) << std::strerror(errno);
  limit.rlim_cur = bytes.value_or(limit.rlim_max);
  ASSERT_EQ(prlimit(pid, RLIMIT_FSIZE, &limit, nullptr), 0) << std::strerror(errno);
}

class StorageFaultTest : public FleetTest {
 protected:
  // A Report of one observation that changes nothing (too few attested to count as a failure).
  absl::StatusOr<v1::ReportResponse> Report(uint64_t sequence) {
    auto stub = v1::Breaker::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials()));
    v1::ReportRequest request;
    request.set_node_id("reporter");
    v1::Observation* observation = request.mutable_observations()->add_observations();
    observation->set_sequence(sequence);
    observation->set_slot(CurrentSlot());
    v1::PayloadMissing* missing = observation->mutable_payload_missing();
    missing->set_builder_index(77);
    missing->set_block_root(std::string(32, 'q'));
    missing->set_attested_fraction(0.1);
    return CallUnary(*stub, &v1::Breaker::Stub::async::Report, request);
  }
};

TEST_F(StorageFaultTest, AFailingStoreRefusesObservationsUntilItWritesAgain) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain()));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  StartNodes(1);
  AwaitFleetPolicy({});
  ASSERT_THAT(Report(1), IsOk());
  ASSERT_TRUE(HealthIs("SERVING"));

  ASSERT_NO_FATAL_FAILURE(SetFileSizeLimit(breakerd_->pid(), 1));
  // Refused: the append fails now (or failed already, at a slot's advance).
  EXPECT_THAT(Report(2),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("cannot store observations")));
  // A real SQLite write failed, with the limit's error.
  EXPECT_TRUE(breakerd_->WaitForLine(
      Stream::kStderr,
      [](absl::string_view line) {
        return absl::StrContains(line, "the state store failed to append") &&
               absl::StrContains(line, "disk I/O error");
      },
      Deadline()))
      << "breakerd's log (above) shows no failed append";
  EXPECT_TRUE(PollUntil([&] { return HealthIs("NOT_SERVING"); })) << Health();

  // The node's observation: refused, its stream ended (and refused at its hello since),
  // nothing acknowledged.
  const size_t mark = node(0).process().LineCount(Stream::kStderr);
  node(0).Observe(Missing(5, "r1"));
  EXPECT_TRUE(node(0).process().WaitForLine(
      Stream::kStderr,
      [](absl::string_view line) { return absl::StrContains(line, "reconnecting with backoff"); },
      Deadline(), mark))
      << "the node's stream (its log is above) did not end";
  const std::optional<AckLine> ack = node(0).LatestAck();
  EXPECT_EQ(ack.has_value() ? ack->acknowledged : 0, 0u);
  // Reads go on; the refused observation is not applied.
  absl::StatusOr<v1::Policy> policy = GetPolicy();
  ASSERT_THAT(policy, IsOk());
  EXPECT_EQ(policy->banned_builders_size(), 0);

  // The fault clears: breakerd serves again by itself, and takes what the node resends.
  ASSERT_NO_FATAL_FAILURE(SetFileSizeLimit(breakerd_->pid(), std::nullopt));
  EXPECT_TRUE(PollUntil([&] { return HealthIs("SERVING"); })) << Health();
  EXPECT_TRUE(node(0).AwaitHandled());
  AwaitFleetPolicy({"ALL_BUILDERS", {5}});
  EXPECT_THAT(Report(2), IsOk());
}

}  // namespace
}  // namespace breaker
