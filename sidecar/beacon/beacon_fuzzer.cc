// Fuzz target for what the sidecar reads from its beacon node (beacon_api.h): the event stream
// (the SSE parser, then DecodeEvent on each event) and the REST answers' decoders. The first
// byte chooses (its value modulo 9): the stream, or the answers of genesis and spec (split at
// the first NUL), syncing, headers, finality, fork choice, a block's bid, validators,
// proposer duties; the rest is the body.
//
// Invariants: the stream's events are the same however its bytes are split into chunks (here:
// whole, and split at the position the second byte names), and an event is at most the
// parser's bounds; a decoder returns what it read or DATA_LOSS naming the endpoint; what it
// read keeps the answer's own bounds (no more validators than asked, duties of the epoch). A
// violation aborts.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "sidecar/beacon/beacon_api.h"
#include "sidecar/beacon/sse_parser.h"

namespace breaker::sidecar {
namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "beacon node reader invariant violated: %s\n", what);
  std::abort();
}

template <typename T>
void CheckRefusal(const absl::StatusOr<T>& read) {
  if (read.ok()) return;
  if (read.status().code() != absl::StatusCode::kDataLoss ||
      !absl::StrContains(read.status().message(), "the beacon node's /eth/")) {
    Fail("a refused answer is not DATA_LOSS naming the endpoint");
  }
}

std::vector<SseEvent> Events(absl::string_view stream, size_t split) {
  SseParser::Limits limits;
  limits.max_line_bytes = 512;
  limits.max_event_bytes = 1024;
  std::vector<SseEvent> events;
  SseParser parser(limits, [&](SseEvent event) {
    if (event.data.size() > limits.max_event_bytes) Fail("an event over the parser's bound");
    events.push_back(std::move(event));
  });
  parser.Feed(stream.substr(0, split));
  parser.Feed(stream.substr(split));
  return events;
}

void Stream(absl::string_view stream, size_t split) {
  const std::vector<SseEvent> whole = Events(stream, stream.size());
  const std::vector<SseEvent> in_two = Events(stream, split);
  if (whole.size() != in_two.size()) Fail("the events depend on how the stream is split");
  for (size_t i = 0; i < whole.size(); ++i) {
    if (whole[i].name != in_two[i].name || whole[i].data != in_two[i].data) {
      Fail("an event depends on how the stream is split");
    }
    absl::StatusOr<BeaconEvent> decoded = DecodeEvent(whole[i]);
    if (!decoded.ok() && decoded.status().message().empty()) Fail("an event refused unsaid");
  }
}

}  // namespace
}  // namespace breaker::sidecar

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace breaker::sidecar;  // NOLINT: the target's own namespace
  if (size < 2) return 0;
  const absl::string_view body(reinterpret_cast<const char*>(data + 2), size - 2);
  const size_t split = body.empty() ? 0 : data[1] % (body.size() + 1);
  switch (data[0] % 9) {
    case 0:
      Stream(body, split);
      break;
    case 1: {
      const size_t nul = body.find('\0');
      const absl::string_view genesis = body.substr(0, nul);
      const absl::string_view spec =
          nul == absl::string_view::npos ? absl::string_view() : body.substr(nul + 1);
      const absl::StatusOr<NodeChain> chain = DecodeChain(genesis, spec);
      CheckRefusal(chain);
      if (chain.ok() && (chain->seconds_per_slot == 0 || chain->slots_per_epoch == 0)) {
        Fail("a chain of empty slots or epochs");
      }
      break;
    }
    case 2:
      CheckRefusal(DecodeSyncing(body));
      break;
    case 3:
      CheckRefusal(DecodeHeaders(body, data[1]));
      break;
    case 4:
      CheckRefusal(DecodeFinalizedEpoch(body));
      break;
    case 5: {
      const absl::StatusOr<std::vector<ForkChoiceNode>> nodes = DecodeForkChoice(body);
      CheckRefusal(nodes);
      if (nodes.ok() && !nodes->empty()) OwnWeight(*nodes, nodes->front().root);
      break;
    }
    case 6:
      CheckRefusal(DecodeBlockBidBuilder(body));
      break;
    case 7: {
      const std::vector<std::string> asked = {"0x" + std::string(96, 'a'),
                                              "0x" + std::string(96, 'b')};
      const absl::StatusOr<std::vector<ValidatorKeyIndex>> validators =
          DecodeValidators(body, asked);
      CheckRefusal(validators);
      if (validators.ok() && validators->size() > asked.size()) Fail("more validators than asked");
      break;
    }
    case 8: {
      const uint64_t slots_per_epoch = 1 + data[1] % 64;
      const breaker::core::Epoch epoch = data[1] / 64;
      const absl::StatusOr<std::vector<ProposerDuty>> duties =
          DecodeProposerDuties(body, epoch, slots_per_epoch);
      CheckRefusal(duties);
      if (duties.ok()) {
        if (duties->size() > slots_per_epoch) Fail("more duties than slots");
        for (const ProposerDuty& duty : *duties) {
          if (duty.slot / slots_per_epoch != epoch) Fail("a duty outside its epoch");
        }
      }
      break;
    }
  }
  return 0;
}
