#ifndef BENCH_SERVER_MESSAGES_H_
#define BENCH_SERVER_MESSAGES_H_

// The messages breakerd sent in a run, handed to the baseline server so that it sends messages
// of exactly the same sizes: the configuration message of every connect, and each policy
// version in turn.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace breaker::bench {

struct ServerMessages {
  // A serialized breaker.v1.ServerMessage holding a Config.
  std::string config;
  // Serialized breaker.v1.ServerMessages holding Policies, in increasing version.
  std::vector<std::string> policies;
};

// A file of length-delimited ServerMessages: the configuration, then the policies.
absl::Status WriteServerMessages(const ServerMessages& messages, const std::string& path);
absl::StatusOr<ServerMessages> ReadServerMessages(const std::string& path);

}  // namespace breaker::bench

#endif  // BENCH_SERVER_MESSAGES_H_
