// The C API (client/c_api.h) over breaker::client::BreakerClient.
//
// Nothing here catches exceptions: the C++ side reports errors as absl::Status and does not
// throw (an allocation failure would terminate the process, as anywhere in the library).

#include "client/c_api.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/channel_security.h"
#include "client/client.h"
#include "core/config.h"
#include "core/observation.h"
#include "core/policy.h"
#include "core/types.h"
#include "proto/codec/config_file.h"

struct breaker_options {
  breaker::client::ClientOptions options;
  // Read by breaker_client_new; empty: none.
  std::string fallback_config_file;
  breaker::client::ChannelSecurityFiles security_files;
};

struct breaker_client {
  std::unique_ptr<breaker::client::BreakerClient> impl;
};

namespace {

using breaker::client::BreakerClient;
using breaker::client::PolicySnapshot;
using breaker::client::PolicySource;

int Code(absl::StatusCode code) { return static_cast<int>(code); }

constexpr int kInvalidArgument = BREAKER_INVALID_ARGUMENT;

// Fills `err` (when not null) with `status`, truncating the message to fit; returns its code.
int SetError(const absl::Status& status, breaker_error* err) {
  const int code = Code(status.code());
  if (err != nullptr) {
    err->code = code;
    const absl::string_view message = status.message();
    const size_t n = std::min(message.size(), sizeof(err->message) - 1);
    if (n > 0) std::memcpy(err->message, message.data(), n);
    err->message[n] = '\0';
  }
  return code;
}

int ModeNumber(breaker::core::Mode mode) {
  switch (mode) {
    case breaker::core::Mode::kAllBuilders:
      return BREAKER_MODE_ALL_BUILDERS;
    case breaker::core::Mode::kTrustedOnly:
      return BREAKER_MODE_TRUSTED_ONLY;
    case breaker::core::Mode::kSelfBuild:
      return BREAKER_MODE_SELF_BUILD;
  }
  return 0;
}

int SourceNumber(PolicySource source) {
  switch (source) {
    case PolicySource::kFleet:
      return BREAKER_SOURCE_FLEET;
    case PolicySource::kFleetAndLocal:
      return BREAKER_SOURCE_FLEET_AND_LOCAL;
    case PolicySource::kLocal:
      return BREAKER_SOURCE_LOCAL;
  }
  return 0;
}

breaker::core::BlockRoot Root(const uint8_t* bytes) {
  breaker::core::BlockRoot root;
  std::memcpy(root.bytes.data(), bytes, root.bytes.size());
  return root;
}

absl::string_view OrEmpty(const char* s) { return s == nullptr ? absl::string_view() : s; }

// Queues `event`; the caller has checked its arguments.
int Report(breaker_client* client, uint64_t slot, breaker::core::Event event) {
  client->impl->Report(slot, std::move(event));
  return BREAKER_OK;
}

}  // namespace

extern "C" {

// --- Options ---

breaker_options* breaker_options_new(void) { return new (std::nothrow) breaker_options(); }

void breaker_options_free(breaker_options* opts) { delete opts; }

int breaker_options_add_address(breaker_options* opts, const char* address) {
  if (opts == nullptr || address == nullptr) return kInvalidArgument;
  opts->options.addresses.emplace_back(address);
  return BREAKER_OK;
}

int breaker_options_set_node_id(breaker_options* opts, const char* node_id) {
  if (opts == nullptr || node_id == nullptr) return kInvalidArgument;
  opts->options.node_id = node_id;
  return BREAKER_OK;
}

int breaker_options_set_network(breaker_options* opts, const char* network) {
  if (opts == nullptr || network == nullptr) return kInvalidArgument;
  opts->options.network = network;
  return BREAKER_OK;
}

int breaker_options_set_client_version(breaker_options* opts, const char* client_version) {
  if (opts == nullptr || client_version == nullptr) return kInvalidArgument;
  opts->options.client_version = client_version;
  return BREAKER_OK;
}

int breaker_options_set_max_buffered_observations(breaker_options* opts, size_t max) {
  if (opts == nullptr) return kInvalidArgument;
  opts->options.max_buffered_observations = max;
  return BREAKER_OK;
}

int breaker_options_set_staleness_limit_seconds(breaker_options* opts, double seconds) {
  if (opts == nullptr || !std::isfinite(seconds) || seconds < 0) return kInvalidArgument;
  opts->options.staleness_limit = absl::Seconds(seconds);
  return BREAKER_OK;
}

int breaker_options_set_fallback_config_file(breaker_options* opts, const char* path) {
  if (opts == nullptr || path == nullptr) return kInvalidArgument;
  opts->fallback_config_file = path;
  return BREAKER_OK;
}

int breaker_options_set_tls(breaker_options* opts, const char* ca_file, const char* cert_file,
                            const char* key_file) {
  if (opts == nullptr || ca_file == nullptr) return kInvalidArgument;
  opts->security_files.tls_ca_file = ca_file;
  opts->security_files.tls_cert_file = cert_file == nullptr ? "" : cert_file;
  opts->security_files.tls_key_file = key_file == nullptr ? "" : key_file;
  return BREAKER_OK;
}

int breaker_options_set_bearer_token(breaker_options* opts, const char* token) {
  if (opts == nullptr || token == nullptr) return kInvalidArgument;
  opts->options.bearer_token = token;
  return BREAKER_OK;
}

// --- The client ---

int breaker_client_new(const breaker_options* opts, breaker_client** out, breaker_error* err) {
  if (out != nullptr) *out = nullptr;
  if (opts == nullptr || out == nullptr) {
    return SetError(
        absl::InvalidArgumentError(opts == nullptr ? "breaker_client_new: options is NULL"
                                                   : "breaker_client_new: out is NULL"),
        err);
  }
  breaker::client::ClientOptions options = opts->options;
  if (!opts->fallback_config_file.empty()) {
    absl::StatusOr<breaker::core::Config> config =
        breaker::codec::LoadConfigFile(opts->fallback_config_file);
    if (!config.ok()) {
      return SetError(absl::Status(config.status().code(), absl::StrCat("fallback_config_file: ",
                                                                        config.status().message())),
                      err);
    }
    options.fallback_config = *std::move(config);
  }
  if (opts->security_files.tls()) {
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
        breaker::client::MakeChannelCredentials(opts->security_files);
    if (!credentials.ok()) return SetError(credentials.status(), err);
    options.credentials = *std::move(credentials);
  }
  absl::StatusOr<std::unique_ptr<BreakerClient>> impl =
      breaker::client::StartGrpcClient(std::move(options));
  if (!impl.ok()) return SetError(impl.status(), err);
  *out = new breaker_client{*std::move(impl)};
  return SetError(absl::OkStatus(), err);
}

void breaker_client_free(breaker_client* client) {
  if (client == nullptr) return;
  client->impl->Stop();
  delete client;
}

// --- Reports ---

int breaker_report_bid(breaker_client* client, uint64_t slot, uint64_t builder,
                       const char* relay_or_null, const uint8_t* pubkey, size_t pubkey_len) {
  if (client == nullptr || (pubkey == nullptr && pubkey_len != 0)) return kInvalidArgument;
  breaker::core::BidSeen bid;
  bid.builder = builder;
  bid.relay = std::string(OrEmpty(relay_or_null));
  if (pubkey_len != 0) bid.pubkey.assign(reinterpret_cast<const char*>(pubkey), pubkey_len);
  return Report(client, slot, std::move(bid));
}

int breaker_report_payload_missing(breaker_client* client, uint64_t slot, uint64_t builder,
                                   const uint8_t root[32], double attested_fraction) {
  // Written so that NaN is refused too.
  if (client == nullptr || root == nullptr || !(attested_fraction >= 0 && attested_fraction <= 1)) {
    return kInvalidArgument;
  }
  breaker::core::PayloadMissing missing;
  missing.builder = builder;
  missing.root = Root(root);
  missing.attested_fraction = attested_fraction;
  return Report(client, slot, std::move(missing));
}

int breaker_report_payload_delivered(breaker_client* client, uint64_t slot, uint64_t builder,
                                     const uint8_t root[32]) {
  if (client == nullptr || root == nullptr) return kInvalidArgument;
  breaker::core::PayloadDelivered delivered;
  delivered.builder = builder;
  delivered.root = Root(root);
  return Report(client, slot, std::move(delivered));
}

int breaker_report_blocks_seen(breaker_client* client, uint64_t slot, const uint8_t* roots,
                               size_t n_roots) {
  constexpr size_t kRootSize = sizeof(breaker::core::BlockRoot::bytes);
  if (client == nullptr || (roots == nullptr && n_roots != 0) || n_roots > SIZE_MAX / kRootSize) {
    return kInvalidArgument;
  }
  breaker::core::BlocksSeen seen;
  seen.roots.reserve(n_roots);
  for (size_t i = 0; i < n_roots; ++i) seen.roots.push_back(Root(roots + i * kRootSize));
  return Report(client, slot, std::move(seen));
}

int breaker_report_finalized(breaker_client* client, uint64_t slot, uint64_t epoch) {
  if (client == nullptr) return kInvalidArgument;
  breaker::core::Finalized finalized;
  finalized.epoch = epoch;
  return Report(client, slot, finalized);
}

int breaker_report_builder_exited(breaker_client* client, uint64_t slot, uint64_t builder) {
  if (client == nullptr) return kInvalidArgument;
  breaker::core::BuilderExited exited;
  exited.builder = builder;
  return Report(client, slot, exited);
}

int breaker_report_relay_reveal_missing(breaker_client* client, uint64_t slot, const char* relay,
                                        const uint8_t root[32]) {
  if (client == nullptr || relay == nullptr || root == nullptr) return kInvalidArgument;
  breaker::core::RelayRevealMissing missing;
  missing.relay = relay;
  missing.root = Root(root);
  return Report(client, slot, std::move(missing));
}

// --- The policy in force ---

bool breaker_is_allowed(const breaker_client* client, uint64_t builder, const char* relay_or_null) {
  if (client == nullptr) return false;
  return client->impl->IsAllowed(builder, OrEmpty(relay_or_null));
}

int breaker_mode(const breaker_client* client) {
  if (client == nullptr) return 0;
  return ModeNumber(client->impl->policy()->policy.mode);
}

int breaker_policy_source(const breaker_client* client) {
  if (client == nullptr) return 0;
  return SourceNumber(client->impl->policy()->source);
}

uint64_t breaker_policy_version(const breaker_client* client) {
  if (client == nullptr) return 0;
  return client->impl->policy()->fleet_version;
}

size_t breaker_banned_builders(const breaker_client* client, uint64_t* out, size_t cap) {
  if (client == nullptr) return 0;
  const std::shared_ptr<const PolicySnapshot> snapshot = client->impl->policy();
  std::vector<uint64_t> banned;
  banned.reserve(snapshot->policy.banned_builders.size());
  for (const auto& entry : snapshot->policy.banned_builders) banned.push_back(entry.first);
  std::sort(banned.begin(), banned.end());
  if (out != nullptr) std::copy_n(banned.begin(), std::min(cap, banned.size()), out);
  return banned.size();
}

// --- Subscriptions ---

int breaker_subscribe(breaker_client* client, breaker_policy_callback callback, void* user_data,
                      int* subscription_id) {
  if (client == nullptr || callback == nullptr || subscription_id == nullptr) {
    return kInvalidArgument;
  }
  *subscription_id =
      client->impl->Subscribe([callback, user_data](std::shared_ptr<const PolicySnapshot> s) {
        callback(user_data, s->fleet_version, ModeNumber(s->policy.mode), SourceNumber(s->source));
      });
  return BREAKER_OK;
}

void breaker_unsubscribe(breaker_client* client, int subscription_id) {
  if (client == nullptr) return;
  client->impl->Unsubscribe(subscription_id);
}

// --- Statistics ---

void breaker_get_stats(const breaker_client* client, breaker_stats* out) {
  if (out == nullptr) return;
  *out = breaker_stats{};
  if (client == nullptr) return;
  const breaker::client::ClientStats stats = client->impl->stats();
  out->connected = stats.connected;
  out->reconnects = stats.reconnects;
  out->reported = stats.reported;
  out->acknowledged = stats.acknowledged;
  out->buffered = stats.buffered;
  out->dropped_bids = stats.dropped_bids;
  out->dropped_other = stats.dropped_other;
  out->dropped_failures = stats.dropped_failures;
  out->refused = stats.refused;
  out->fleet_policy_version = stats.fleet_policy_version;
  out->source = SourceNumber(stats.source);
  out->fallback_active = stats.fallback_active;
}

}  // extern "C"
