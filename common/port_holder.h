#ifndef COMMON_PORT_HOLDER_H_
#define COMMON_PORT_HOLDER_H_

// Who holds a TCP port, for the error of a server that cannot bind it: "pid 4242
// (breaker-sideca)" tells the operator what to stop, where "address in use" leaves them to find
// it. Linux only: read from /proc.

#include <string>

namespace breaker {

// Describes the process listening on TCP `port` (any address, IPv4 or IPv6) as
// "pid N (name)"; "a process of another user" when the socket is seen but not its owner;
// empty when nothing is found. Reads /proc; bounded to a few thousand processes. Thread-safe.
std::string DescribePortHolder(int port);

// " (held by pid N (name))" when DescribePortHolder knows, otherwise "": for appending to an
// error message.
std::string PortHolderSuffix(int port);

}  // namespace breaker

#endif  // COMMON_PORT_HOLDER_H_
