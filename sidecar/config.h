#ifndef SIDECAR_CONFIG_H_
#define SIDECAR_CONFIG_H_

// breaker-sidecar's configuration: a text-format `breaker.v1.SidecarConfig`
// (proto/breaker/v1/sidecar.proto), validated and with its defaults filled in.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "breaker/v1/sidecar.pb.h"

namespace breaker::sidecar {

struct UpstreamSettings {
  uint16_t listen_port = 0;
  // The URL as configured (it may hold mev-boost's relay public key).
  std::string url;
  // The URL normalized as breakerd normalizes relay identifiers: what is reported and banned.
  std::string relay_id;
  // "scheme://host[:port]" to connect to, and the path prepended to every request's.
  std::string scheme_host_port;
  std::string path_prefix;
  bool trusted = false;
  // TLS to an https:// upstream: the CA file in place of the system's trust store (empty: the
  // system's), and the client certificate and key for mutual TLS (both or neither).
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
};

struct SidecarSettings {
  // As configured; empty: no observer. Split as for an upstream: "scheme://host[:port]" and
  // the path before every request's.
  std::string beacon_node_url;
  std::string beacon_node_base;
  std::string beacon_node_path_prefix;
  std::vector<std::string> breakerd_addresses;
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string token_file;
  std::string node_id;
  std::string network;
  std::string fallback_config_file;
  // Zero: the client library's default.
  absl::Duration staleness_limit = absl::ZeroDuration();
  std::string listen_host = "127.0.0.1";
  // "host:port" of the metrics endpoint; empty: off.
  std::string metrics_listen;
  // The validator-facing port; host empty: off. Port 0: one the kernel picks.
  std::string validator_listen_host;
  uint16_t validator_listen_port = 0;
  absl::Duration upstream_timeout = absl::Seconds(10);
  size_t max_body_bytes = 16 << 20;
  // The connection pool to each upstream: how long a connection stays idle, and how many idle
  // ones are kept.
  absl::Duration upstream_idle_timeout = absl::Seconds(60);
  size_t upstream_max_idle_connections = 4;
  std::vector<UpstreamSettings> upstreams;
};

inline constexpr size_t kMaxUpstreams = 64;
inline constexpr size_t kMaxBreakerdAddresses = 16;

// Validates `proto` and fills in the defaults. Returns INVALID_ARGUMENT naming the field (e.g.
// "upstreams[1].url: ...") for a missing required field or a value out of range.
absl::StatusOr<SidecarSettings> SettingsFromProto(const breaker::v1::SidecarConfig& proto);

// Parses a text-format SidecarConfig (`source_name` prefixes syntax errors with line and
// column), then applies SettingsFromProto.
absl::StatusOr<SidecarSettings> ParseSidecarConfig(absl::string_view text,
                                                   absl::string_view source_name);

// Reads and parses the file at `path`: NOT_FOUND or FAILED_PRECONDITION when it cannot be
// read, otherwise what ParseSidecarConfig returns.
absl::StatusOr<SidecarSettings> LoadSidecarConfig(const std::string& path);

}  // namespace breaker::sidecar

#endif  // SIDECAR_CONFIG_H_
