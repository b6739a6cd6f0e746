// Fuzz target for breaker-sidecar's configuration file: the input is the file's text. Whatever
// it is, ParseSidecarConfig returns settings within the file's bounds (at most kMaxUpstreams
// upstreams, each on its own port, at most kMaxBreakerdAddresses addresses) or an error that
// says what is wrong. A violation aborts.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sidecar/config.h"

namespace breaker::sidecar {
namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "sidecar configuration invariant violated: %s\n", what);
  std::abort();
}

}  // namespace
}  // namespace breaker::sidecar

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace breaker::sidecar;  // NOLINT: the target's own namespace
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<SidecarSettings> settings = ParseSidecarConfig(text, "fuzz.textproto");
  if (!settings.ok()) {
    if (settings.status().message().empty()) Fail("a refused configuration says not why");
    return 0;
  }
  if (settings->upstreams.empty() || settings->upstreams.size() > kMaxUpstreams) {
    Fail("upstreams out of bounds");
  }
  if (settings->breakerd_addresses.size() > kMaxBreakerdAddresses) Fail("too many addresses");
  std::set<uint16_t> ports;
  for (const UpstreamSettings& upstream : settings->upstreams) {
    if (upstream.relay_id.empty()) Fail("an upstream without relay identifier");
    if (upstream.listen_port == 0) Fail("an upstream without port");
    ports.insert(upstream.listen_port);
  }
  if (ports.size() != settings->upstreams.size()) Fail("two upstreams on one port");
  return 0;
}
