#ifndef COMMON_REPLICA_TRAILER_H_
#define COMMON_REPLICA_TRAILER_H_

// How a standby replica of breakerd (on etcd) tells a client that it refused the call only
// because another replica leads: its UNAVAILABLE carries this trailing metadata, the leader's
// advertised address. A client that meets it knows a leader is there, or being elected, and
// comes back soon rather than on its growing backoff. Set once for both ends.

namespace breaker {

inline constexpr char kLeaderTrailer[] = "breaker-leader";

}  // namespace breaker

#endif  // COMMON_REPLICA_TRAILER_H_
