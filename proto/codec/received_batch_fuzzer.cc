// Fuzz target for the reading of a node's batch: the input is the batch's bytes, as a
// NodeMessage's observations field would hold them. ReceivedBatch must accept exactly what
// protobuf's parser accepts and read the same observations from it, whether it reads the
// batch in place or leaves it to protobuf; it must keep the bytes as they came; and the bytes
// its rate-limit cut keeps must parse to the observations it keeps. A violation aborts, with
// what differs on stderr.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/string_view.h"
#include "breaker/v1/breaker.pb.h"
#include "proto/codec/received_batch.h"

namespace breaker::codec {
namespace {

namespace v1 = ::breaker::v1;

[[noreturn]] void Fail(absl::string_view what, const std::string& input) {
  std::fprintf(stderr, "received batch invariant violated: %.*s\ninput: \"%s\"\n",
               static_cast<int>(what.size()), what.data(), absl::CEscape(input).c_str());
  std::abort();
}

void Check(const std::string& input) {
  v1::ObservationBatch expected;
  const bool parses = expected.ParseFromString(input);
  absl::StatusOr<ReceivedBatch> received = ReceivedBatch::Parse(input);
  if (received.ok() != parses) {
    Fail(parses ? "protobuf parses the batch, ReceivedBatch refuses it"
                : "ReceivedBatch takes a batch protobuf refuses",
         input);
  }
  if (!parses) return;
  if (received->bytes() != input) Fail("the bytes kept are not the bytes received", input);
  if (received->size() != expected.observations_size())
    Fail("another number of observations", input);
  for (int i = 0; i < received->size(); ++i) {
    if (received->sequence(i) != expected.observations(i).sequence()) {
      Fail("another sequence number", input);
    }
  }
  if (received->ToProto().SerializeAsString() != expected.SerializeAsString()) {
    Fail(received->read_in_place() ? "the batch read in place differs from protobuf's"
                                   : "the batch parsed differs from protobuf's",
         input);
  }
  const int kept = received->size() / 2;
  received->KeepFirst(kept);
  expected.mutable_observations()->DeleteSubrange(kept, expected.observations_size() - kept);
  v1::ObservationBatch cut;
  if (!cut.ParseFromString(received->bytes()) ||
      cut.SerializeAsString() != expected.SerializeAsString()) {
    Fail("the bytes kept by KeepFirst do not hold the observations kept", input);
  }
}

}  // namespace
}  // namespace breaker::codec

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  breaker::codec::Check(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
