// A fake beacon node's Beacon API on loopback, producing a block at every slot of its chain:
// for trying breaker-sidecar by hand (docs/sidecar.md, "Trying the observer by hand"). Stops at
// SIGTERM or SIGINT.

#include <csignal>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/time/clock.h"
#include "tests/support/fake_beacon_node.h"

ABSL_FLAG(int, port, 0, "the port to serve on, on 127.0.0.1; 0: one of the kernel's choice");
ABSL_FLAG(int64_t, genesis_time, 0,
          "the chain's genesis, in seconds since the Unix epoch; 0: mainnet's");
ABSL_FLAG(uint64_t, seconds_per_slot, 12, "the chain's slot length");
ABSL_FLAG(uint64_t, slots_per_epoch, 32, "the chain's epoch length");
ABSL_FLAG(uint64_t, empty_every, 0,
          "the slots divisible by this get no block (missed slots); 0: every slot has one");
ABSL_FLAG(std::string, topics_form, "both",
          "which form of the event stream's topics query is read: repeated (?topics=a&topics=b), "
          "comma (?topics=a,b) or both");
ABSL_FLAG(bool, refuse_other_form, true,
          "with --topics_form=repeated or comma, answer the other form 400; false: with a "
          "stream that never sends an event");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "fake_beacon_node_main [--port=N] [--genesis_time=T] [--seconds_per_slot=S] "
      "[--empty_every=N] [--topics_form=both|repeated|comma] [--refuse_other_form=false]\n"
      "Serves a fake beacon node's Beacon API (genesis, spec, syncing, headers, fork choice, "
      "events) producing a block at every slot.");
  absl::ParseCommandLine(argc, argv);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  breaker::core::ChainSpec chain;
  if (absl::GetFlag(FLAGS_genesis_time) != 0)
    chain.genesis_time_unix = absl::GetFlag(FLAGS_genesis_time);
  chain.seconds_per_slot = absl::GetFlag(FLAGS_seconds_per_slot);
  chain.slots_per_epoch = absl::GetFlag(FLAGS_slots_per_epoch);
  const std::string form = absl::GetFlag(FLAGS_topics_form);
  if (form != "both" && form != "repeated" && form != "comma") {
    std::cerr << "fake_beacon_node_main: --topics_form is '" << form
              << "'; give repeated, comma or both\n";
    return 1;
  }
  breaker::testing::FakeBeaconNode node(chain, absl::GetFlag(FLAGS_port));
  node.SetTopicsQuery(form == "repeated" ? breaker::testing::TopicsQuery::kRepeatedOnly
                      : form == "comma"  ? breaker::testing::TopicsQuery::kCommaOnly
                                         : breaker::testing::TopicsQuery::kBoth,
                      absl::GetFlag(FLAGS_refuse_other_form));
  if (node.port() <= 0) {
    std::cerr << "fake_beacon_node_main: cannot listen on port " << absl::GetFlag(FLAGS_port)
              << "\n";
    return 1;
  }
  node.SetProducing(true, absl::GetFlag(FLAGS_empty_every));
  std::cout << "fake beacon node listening on " << node.url() << std::endl;
  int signal = 0;
  sigwait(&stop_signals, &signal);
  return 0;
}
