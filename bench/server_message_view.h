#ifndef BENCH_SERVER_MESSAGE_VIEW_H_
#define BENCH_SERVER_MESSAGE_VIEW_H_

// What a simulated node needs of a breaker.v1.ServerMessage, read straight from the wire.
//
// Parsing the whole message made the harness slower with every fan-out trial: each trial's ban
// lengthens the policy, and 5,000 nodes parsing (and freeing) every ban of it became the
// bottleneck of the measurement. The view reads the few fields it needs and skips the rest,
// at a cost independent of the policy's size.

#include <cstdint>
#include <string>

#include "grpcpp/support/byte_buffer.h"

namespace breaker::bench {

struct ServerMessageView {
  enum class Kind { kUnknown, kPolicy, kObservationAck, kConfig };
  Kind kind = Kind::kUnknown;
  // kPolicy: Policy.version and Policy.fleet_id.
  uint64_t version = 0;
  std::string fleet_id;
  // kObservationAck: ObservationAck.sequence and how many refusals it lists.
  uint64_t ack_sequence = 0;
  int refused = 0;
};

// False when `buffer` is not a well-formed ServerMessage.
bool ParseServerMessageView(grpc::ByteBuffer& buffer, ServerMessageView* view);

// The serialized message, for keeping a copy.
std::string BytesOf(const grpc::ByteBuffer& buffer);

}  // namespace breaker::bench

#endif  // BENCH_SERVER_MESSAGE_VIEW_H_
