#ifndef SERVICE_RPC_RUN_BREAKERD_H_
#define SERVICE_RPC_RUN_BREAKERD_H_

// breakerd's life as a process: the server, the signals, and a replica on etcd starting over
// each time it steps down.

#include <signal.h>

#include "service/rpc/server.h"

namespace breaker::service {

// Starts a Server with `options` and runs it until SIGINT or SIGTERM, reloading the access
// file at each SIGHUP. A replica on etcd that steps down (etcd deposed it) is replaced by a new
// Server on the same options, which binds the same address and campaigns again, as a standby
// until it leads. Returns the process's exit code: 0 after a stop signal, 1 when a server
// cannot start or cannot restore the state it won (the log says why).
// REQUIRES: `signals` holds SIGINT, SIGTERM and SIGHUP, blocked in every thread (before any
// starts), so that only this function's sigwait takes them. options.on_stepped_down is its own.
int RunBreakerd(ServerOptions options, const sigset_t& signals);

}  // namespace breaker::service

#endif  // SERVICE_RPC_RUN_BREAKERD_H_
