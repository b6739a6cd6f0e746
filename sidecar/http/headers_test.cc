#include "sidecar/http/headers.h"

#include "gtest/gtest.h"

namespace breaker::sidecar::http {
namespace {

TEST(IsHopByHopTest, TheConnectionsOwnHeadersInAnyCaseAndNoOther) {
  for (const char* name : {"Connection", "keep-alive", "Transfer-Encoding", "HOST",
                           "Content-Length", "Accept-Encoding", "REMOTE_ADDR", "local_port"}) {
    EXPECT_TRUE(IsHopByHop(name)) << name;
  }
  for (const char* name : {"Content-Type", "X-Timeout-Ms", "Date-Milliseconds",
                           "Eth-Consensus-Version", "Authorization", "hosts", ""}) {
    EXPECT_FALSE(IsHopByHop(name)) << name;
  }
}

}  // namespace
}  // namespace breaker::sidecar::http
