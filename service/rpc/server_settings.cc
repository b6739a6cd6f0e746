#include "service/rpc/server_settings.h"

#include "common/grpc_keepalive.h"

namespace breaker::service {

void ApplyServerSettings(grpc::ServerBuilder& builder, int max_receive_message_bytes,
                         int max_concurrent_streams) {
  // gRPC sets SO_REUSEPORT by default: a second breakerd on the same port would then start
  // "successfully" and split the fleet's streams between two states.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Streams live for days: find dead peers with pings, and let clients ping every 10 s.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             kMinPingIntervalWithoutDataMs);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // Hostile or broken input is bounded before it is parsed.
  builder.SetMaxReceiveMessageSize(max_receive_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, max_concurrent_streams);
}

}  // namespace breaker::service
