#ifndef SERVICE_RPC_SERVER_SETTINGS_H_
#define SERVICE_RPC_SERVER_SETTINGS_H_

// breakerd's gRPC transport settings, in one place: its own server and the benchmark's
// bare-gRPC baseline both apply them.

#include "grpcpp/server_builder.h"

namespace breaker::service {

// Largest message a client may send, by default (--max_message_bytes): a full batch of 1000
// observations takes about 100 KB.
inline constexpr int kDefaultMaxReceiveMessageBytes = 1 << 20;

// No shared port, keepalive for streams that live for days, and the per-connection limits:
// `max_receive_message_bytes` per message (gRPC ends a call that sends more with
// RESOURCE_EXHAUSTED) and `max_concurrent_streams` calls open at once.
void ApplyServerSettings(grpc::ServerBuilder& builder, int max_receive_message_bytes,
                         int max_concurrent_streams);

}  // namespace breaker::service

#endif  // SERVICE_RPC_SERVER_SETTINGS_H_
