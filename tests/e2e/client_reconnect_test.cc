// The client library's reconnection, as in production: the breakerd binary killed and
// restarted on its port, and an example_node process (a beacon node linking the library) that
// must be back within its own configured backoff, whatever gRPC's channel would do by itself.

#include <signal.h>
#include <sys/wait.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/support/fleet_harness.h"
#include "tests/support/status_matchers.h"
#include "tests/support/subprocess.h"

namespace breaker::testing {
namespace {

using Stream = Subprocess::Stream;

// The node's backoff: the values of the outage first seen by hand, where gRPC's own reconnect
// schedule made a node come back 10 s after breakerd instead of within a second.
constexpr absl::Duration kInitialBackoff = absl::Milliseconds(200);
constexpr absl::Duration kMaxBackoff = absl::Seconds(1);
// The library's default jitter: a wait is at most kMaxBackoff * (1 + kJitter).
constexpr double kJitter = 0.2;
// For breakerd's answer to travel once the node dials: connect, hello, the first message, on a
// loaded machine, under sanitizers.
constexpr absl::Duration kMargin = absl::Seconds(2);

// What the library logs (on stderr) when a stream has brought breakerd's first message, and
// when an attempt or a stream has ended.
constexpr absl::string_view kConnected = "connected to breakerd at";
constexpr absl::string_view kBackingOff = "reconnecting with backoff";

class ClientReconnectTest : public FleetTest {
 protected:
  // Starts an example_node with the test's backoff, in script mode (it reports nothing unless
  // told), owned by the fixture, which stops it at the end.
  Node& StartBackingOffNode(const std::string& id) {
    Subprocess::Options options;
    options.binary = kExampleNode;
    options.name = id;
    options.args = {
        absl::StrCat("--target=127.0.0.1:", port_),
        absl::StrCat("--node_id=", id),
        absl::StrCat("--config=", config_path_),
        "--script",
        absl::StrCat("--initial_backoff_ms=", absl::ToInt64Milliseconds(kInitialBackoff)),
        absl::StrCat("--max_backoff_ms=", absl::ToInt64Milliseconds(kMaxBackoff))};
    absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(options);
    EXPECT_THAT(started, IsOk());
    if (!started.ok()) std::abort();  // the test means nothing without its node
    nodes_.push_back(std::make_unique<Node>(id, *std::move(started)));
    return *nodes_.back();
  }

  // Waits until `node` logs a line containing `text`, at stderr index `from` or later, until
  // `deadline`; returns the line's index.
  static std::optional<size_t> AwaitLog(Node& node, absl::string_view text, absl::Time deadline,
                                        size_t from) {
    return node.process().WaitForLine(
        Stream::kStderr, [text](absl::string_view line) { return absl::StrContains(line, text); },
        deadline, from);
  }

  // Waits until `node` has logged `count` lines containing `text` at stderr index `from` or
  // later.
  static bool AwaitLogCount(Node& node, absl::string_view text, size_t count, size_t from) {
    return node.process().WaitUntil(
        Stream::kStderr,
        [&](const std::vector<std::string>& lines) {
          size_t seen = 0;
          for (size_t i = from; i < lines.size(); ++i) seen += absl::StrContains(lines[i], text);
          return seen >= count;
        },
        Deadline());
  }
};

TEST_F(ClientReconnectTest, ANodeIsBackWithinItsOwnBackoffOnceBreakerdIsBack) {
  ASSERT_NO_FATAL_FAILURE(Configure(GloasChain()));
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  Node& node = StartBackingOffNode("bn-1");
  ASSERT_TRUE(AwaitLog(node, kConnected, Deadline(), 0).has_value());

  const size_t killed_at = node.process().LineCount(Stream::kStderr);
  const int status = StopBreakerd(SIGKILL);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << Subprocess::DescribeStatus(status);
  // An outage of about 3 s, long enough for the node's waits to reach kMaxBackoff: the end of
  // the stream, then five refused attempts after waits of about 0.2, 0.32, 0.51, 0.82 and 1 s.
  ASSERT_TRUE(AwaitLogCount(node, kBackingOff, 6, killed_at))
      << "the node did not keep trying while breakerd was away";

  const size_t restarted_at = node.process().LineCount(Stream::kStderr);
  ASSERT_NO_FATAL_FAILURE(StartBreakerd());
  // breakerd listens again: the node's wait in progress is at most kMaxBackoff plus jitter,
  // and the attempt after it must reach breakerd.
  const absl::Time back = absl::Now();
  const absl::Duration bound = kMaxBackoff * (1 + kJitter) + kMargin;
  if (AwaitLog(node, kConnected, back + bound, restarted_at).has_value()) return;
  // Late: say how late, or whether it ever came back.
  const bool eventually = AwaitLog(node, kConnected, Deadline(), restarted_at).has_value();
  ADD_FAILURE() << "the node was not back within " << bound << " of breakerd's restart; "
                << (eventually
                        ? absl::StrCat("it was after ", absl::FormatDuration(absl::Now() - back))
                        : std::string("it never was"))
                << " (its log is above)";
}

}  // namespace
}  // namespace breaker::testing
