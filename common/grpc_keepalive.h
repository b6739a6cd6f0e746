#ifndef COMMON_GRPC_KEEPALIVE_H_
#define COMMON_GRPC_KEEPALIVE_H_

// The keepalive of the project's long-lived gRPC streams, set once for both ends: they must
// agree, since a server answers pings more frequent than it permits with GOAWAY
// ("too_many_pings"). Streams live for days through NATs and proxies: an idle connection is
// pinged, and dropped when the ping goes unanswered.

#include "grpcpp/support/channel_arguments.h"

namespace breaker {

// A ping after this long without traffic.
inline constexpr int kKeepaliveTimeMs = 30'000;
// The connection is dropped when a ping's answer takes longer.
inline constexpr int kKeepaliveTimeoutMs = 10'000;
// Servers permit a ping this often without data (a third of kKeepaliveTimeMs: slack for
// clocks and retransmissions).
inline constexpr int kMinPingIntervalWithoutDataMs = 10'000;

// The client side: pings as above, also while no call is open.
inline void SetClientKeepalive(grpc::ChannelArguments& args) {
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
}

}  // namespace breaker

#endif  // COMMON_GRPC_KEEPALIVE_H_
