#include "sidecar/config.h"

#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/relay_id.h"
#include "proto/codec/text_file.h"

namespace breaker::sidecar {
namespace {

constexpr uint32_t kMinBodyBytes = 1024;
constexpr uint32_t kMaxBodyBytes = 64u << 20;
constexpr uint32_t kMaxTimeoutMs = 60000;
constexpr size_t kMaxUrlBytes = 512;
constexpr uint32_t kMaxStalenessSeconds = 86400;
constexpr uint32_t kMaxIdleTimeoutSeconds = 3600;
constexpr uint32_t kMaxIdleConnections = 64;

absl::Status Invalid(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

bool PrintableAscii(absl::string_view s) {
  for (char c : s) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

// Splits an http(s) URL into "scheme://host[:port]" (credentials removed) and its path.
absl::Status SplitUrl(absl::string_view field, absl::string_view url, UpstreamSettings& upstream) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == absl::string_view::npos) {
    return Invalid(field, absl::StrCat("'", url, "' is not an http:// or https:// URL"));
  }
  const std::string scheme = absl::AsciiStrToLower(url.substr(0, scheme_end));
  if (scheme != "http" && scheme != "https") {
    return Invalid(field, absl::StrCat("'", url, "' is not an http:// or https:// URL"));
  }
  absl::string_view rest = url.substr(scheme_end + 3);
  const size_t path_start = rest.find_first_of("/?#");
  absl::string_view authority = rest.substr(0, path_start);
  absl::string_view path = path_start == absl::string_view::npos ? "" : rest.substr(path_start);
  if (absl::StrContains(path, '?') || absl::StrContains(path, '#')) {
    return Invalid(field, absl::StrCat("'", url, "' has a query or fragment"));
  }
  const size_t at = authority.rfind('@');
  if (at != absl::string_view::npos) authority = authority.substr(at + 1);
  if (authority.empty()) return Invalid(field, absl::StrCat("'", url, "' has no host"));
  while (absl::EndsWith(path, "/")) path.remove_suffix(1);
  upstream.scheme_host_port = absl::StrCat(scheme, "://", authority);
  upstream.path_prefix = std::string(path);
  return absl::OkStatus();
}

// The per-upstream TLS files: only for https://, the certificate and key together, each a
// bounded path.
absl::Status UpstreamTls(absl::string_view field, const breaker::v1::Upstream& in,
                         UpstreamSettings& upstream) {
  const std::pair<const char*, const std::string*> files[] = {
      {"tls_ca_file", &in.tls_ca_file()},
      {"tls_cert_file", &in.tls_cert_file()},
      {"tls_key_file", &in.tls_key_file()}};
  const bool https = absl::StartsWith(upstream.scheme_host_port, "https://");
  for (const auto& [name, path] : files) {
    if (path->empty()) continue;
    if (path->size() > kMaxUrlBytes) {
      return Invalid(absl::StrCat(field, ".", name),
                     absl::StrCat("longer than ", kMaxUrlBytes, " bytes"));
    }
    if (!https) {
      return Invalid(absl::StrCat(field, ".", name),
                     absl::StrCat("set for '", upstream.scheme_host_port,
                                  "', which is not https://: remove it, or use https"));
    }
  }
  if (in.tls_cert_file().empty() != in.tls_key_file().empty()) {
    return Invalid(
        absl::StrCat(field, in.tls_cert_file().empty() ? ".tls_cert_file" : ".tls_key_file"),
        "tls_cert_file and tls_key_file go together");
  }
  upstream.tls_ca_file = in.tls_ca_file();
  upstream.tls_cert_file = in.tls_cert_file();
  upstream.tls_key_file = in.tls_key_file();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SidecarSettings> SettingsFromProto(const breaker::v1::SidecarConfig& proto) {
  SidecarSettings settings;
  settings.beacon_node_url = proto.beacon_node_url();
  if (settings.beacon_node_url.size() > kMaxUrlBytes) {
    return Invalid("beacon_node_url", absl::StrCat("longer than ", kMaxUrlBytes, " bytes"));
  }
  if (!settings.beacon_node_url.empty()) {
    UpstreamSettings split;
    if (absl::Status valid = SplitUrl("beacon_node_url", settings.beacon_node_url, split);
        !valid.ok()) {
      return valid;
    }
    settings.beacon_node_base = split.scheme_host_port;
    settings.beacon_node_path_prefix = split.path_prefix;
  }
  if (proto.breakerd_addresses().empty()) return Invalid("breakerd_addresses", "required");
  if (static_cast<size_t>(proto.breakerd_addresses_size()) > kMaxBreakerdAddresses) {
    return Invalid("breakerd_addresses", absl::StrCat(proto.breakerd_addresses_size(),
                                                      " given, at most ", kMaxBreakerdAddresses));
  }
  for (int i = 0; i < proto.breakerd_addresses_size(); ++i) {
    const std::string& address = proto.breakerd_addresses(i);
    if (address.empty() || address.size() > kMaxUrlBytes || !PrintableAscii(address)) {
      return Invalid(absl::StrCat("breakerd_addresses[", i, "]"),
                     "must be host:port, printable ASCII, at most 512 bytes");
    }
    settings.breakerd_addresses.push_back(address);
  }
  settings.tls_ca_file = proto.tls_ca_file();
  settings.tls_cert_file = proto.tls_cert_file();
  settings.tls_key_file = proto.tls_key_file();
  if (settings.tls_cert_file.empty() != settings.tls_key_file.empty()) {
    return Invalid(settings.tls_cert_file.empty() ? "tls_cert_file" : "tls_key_file",
                   "tls_cert_file and tls_key_file go together");
  }
  settings.token_file = proto.token_file();

  settings.node_id = proto.node_id();
  if (settings.node_id.empty()) return Invalid("node_id", "required");
  if (settings.node_id.size() > 128 || !PrintableAscii(settings.node_id)) {
    return Invalid("node_id", "must be 1..128 printable ASCII characters");
  }
  settings.network = proto.network();
  if (settings.network.size() > 64) return Invalid("network", "longer than 64 bytes");

  settings.fallback_config_file = proto.fallback_config_file();
  if (proto.staleness_limit_seconds() > kMaxStalenessSeconds) {
    return Invalid("staleness_limit_seconds", absl::StrCat(proto.staleness_limit_seconds(),
                                                           " is not in 1..", kMaxStalenessSeconds));
  }
  settings.staleness_limit = absl::Seconds(proto.staleness_limit_seconds());
  if (!proto.listen_host().empty()) settings.listen_host = proto.listen_host();
  settings.metrics_listen = proto.metrics_listen();
  if (settings.metrics_listen.size() > kMaxUrlBytes || !PrintableAscii(settings.metrics_listen)) {
    return Invalid("metrics_listen", "must be host:port, printable ASCII, at most 512 bytes");
  }
  if (!proto.validator_listen().empty()) {
    const std::string& listen = proto.validator_listen();
    const size_t colon = listen.rfind(':');
    int port = -1;
    if (colon == std::string::npos || colon == 0 || listen.size() > kMaxUrlBytes ||
        !PrintableAscii(listen) || !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 ||
        port > 65535) {
      return Invalid("validator_listen",
                     absl::StrCat("\"", listen.substr(0, 64),
                                  "\" is not host:port (e.g. 127.0.0.1:5062, port 0..65535)"));
    }
    if (settings.beacon_node_url.empty()) {
      return Invalid("validator_listen",
                     "needs beacon_node_url: the beacon node the validator port forwards to");
    }
    settings.validator_listen_host = listen.substr(0, colon);
    // "[::1]:5062": the brackets are the URL's, not the address's.
    if (settings.validator_listen_host.size() > 2 &&
        settings.validator_listen_host.front() == '[' &&
        settings.validator_listen_host.back() == ']') {
      settings.validator_listen_host =
          settings.validator_listen_host.substr(1, settings.validator_listen_host.size() - 2);
    }
    settings.validator_listen_port = static_cast<uint16_t>(port);
  }
  if (proto.upstream_timeout_ms() != 0) {
    if (proto.upstream_timeout_ms() > kMaxTimeoutMs) {
      return Invalid("upstream_timeout_ms",
                     absl::StrCat(proto.upstream_timeout_ms(), " is not in 1..", kMaxTimeoutMs));
    }
    settings.upstream_timeout = absl::Milliseconds(proto.upstream_timeout_ms());
  }
  if (proto.max_body_bytes() != 0) {
    if (proto.max_body_bytes() < kMinBodyBytes || proto.max_body_bytes() > kMaxBodyBytes) {
      return Invalid("max_body_bytes", absl::StrCat(proto.max_body_bytes(), " is not in ",
                                                    kMinBodyBytes, "..", kMaxBodyBytes));
    }
    settings.max_body_bytes = proto.max_body_bytes();
  }
  if (proto.upstream_idle_timeout_seconds() != 0) {
    if (proto.upstream_idle_timeout_seconds() > kMaxIdleTimeoutSeconds) {
      return Invalid("upstream_idle_timeout_seconds",
                     absl::StrCat(proto.upstream_idle_timeout_seconds(), " is not in 1..",
                                  kMaxIdleTimeoutSeconds));
    }
    settings.upstream_idle_timeout = absl::Seconds(proto.upstream_idle_timeout_seconds());
  }
  if (proto.upstream_max_idle_connections() != 0) {
    if (proto.upstream_max_idle_connections() > kMaxIdleConnections) {
      return Invalid("upstream_max_idle_connections",
                     absl::StrCat(proto.upstream_max_idle_connections(), " is not in 1..",
                                  kMaxIdleConnections));
    }
    settings.upstream_max_idle_connections = proto.upstream_max_idle_connections();
  }

  if (proto.upstreams().empty()) return Invalid("upstreams", "at least one is required");
  if (static_cast<size_t>(proto.upstreams_size()) > kMaxUpstreams) {
    return Invalid("upstreams",
                   absl::StrCat(proto.upstreams_size(), " given, at most ", kMaxUpstreams));
  }
  absl::flat_hash_set<uint32_t> ports;
  for (int i = 0; i < proto.upstreams_size(); ++i) {
    const breaker::v1::Upstream& in = proto.upstreams(i);
    const std::string field = absl::StrCat("upstreams[", i, "]");
    UpstreamSettings upstream;
    if (in.listen_port() == 0 || in.listen_port() > 65535) {
      return Invalid(absl::StrCat(field, ".listen_port"),
                     absl::StrCat(in.listen_port(), " is not in 1..65535"));
    }
    if (!ports.insert(in.listen_port()).second) {
      return Invalid(absl::StrCat(field, ".listen_port"),
                     absl::StrCat(in.listen_port(), " is already another upstream's"));
    }
    upstream.listen_port = static_cast<uint16_t>(in.listen_port());
    if (in.url().empty()) return Invalid(absl::StrCat(field, ".url"), "required");
    if (in.url().size() > kMaxUrlBytes) {
      return Invalid(absl::StrCat(field, ".url"),
                     absl::StrCat("longer than ", kMaxUrlBytes, " bytes"));
    }
    upstream.url = in.url();
    absl::StatusOr<std::string> relay_id = core::NormalizeRelayId(in.url());
    if (!relay_id.ok()) {
      return Invalid(absl::StrCat(field, ".url"), relay_id.status().message());
    }
    upstream.relay_id = *std::move(relay_id);
    if (absl::Status split = SplitUrl(absl::StrCat(field, ".url"), in.url(), upstream);
        !split.ok()) {
      return split;
    }
    upstream.trusted = in.trusted();
    if (absl::Status tls = UpstreamTls(field, in, upstream); !tls.ok()) return tls;
    settings.upstreams.push_back(std::move(upstream));
  }
  return settings;
}

absl::StatusOr<SidecarSettings> ParseSidecarConfig(absl::string_view text,
                                                   absl::string_view source_name) {
  breaker::v1::SidecarConfig proto;
  if (absl::Status parsed = codec::ParseTextFormat(text, source_name, proto); !parsed.ok()) {
    return parsed;
  }
  absl::StatusOr<SidecarSettings> settings = SettingsFromProto(proto);
  if (!settings.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source_name, ": ", settings.status().message()));
  }
  return settings;
}

absl::StatusOr<SidecarSettings> LoadSidecarConfig(const std::string& path) {
  absl::StatusOr<std::string> text = codec::ReadTextFile(path, "sidecar config file");
  if (!text.ok()) return text.status();
  return ParseSidecarConfig(*text, path);
}

}  // namespace breaker::sidecar
