// The C API (client/c_api.h) over breaker::client::BreakerClient.
//
// Nothing here catches exceptions: the C++ side reports errors as absl::Status and does not
// throw (an allocation failure would terminate the process, as anywhere in the library).

#include "client/c_api.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
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
#include "client/policy_snapshot.h"
#include "core/config.h"
#include "core/input_bounds.h"
#include "core/observation.h"
#include "core/policy.h"
#include "core/relay_id.h"
#include "core/types.h"
#include "proto/codec/config_file.h"

struct breaker_options {
  breaker::client::ClientOptions options;
  // NULL: warnings and errors to stderr.
  breaker_log_callback log_callback = nullptr;
  void* log_user_data = nullptr;
  // Read by breaker_client_new; empty: none.
  std::string fallback_config_file;
  breaker::client::ChannelSecurityFiles security_files;
};

struct breaker_client {
  std::unique_ptr<breaker::client::BreakerClient> impl;
};

// A held snapshot, with its lists sorted once so that bindings read them by index.
struct breaker_policy {
  std::shared_ptr<const breaker::client::PolicySnapshot> snapshot;
  std::vector<uint64_t> banned_builders;
  std::vector<uint64_t> trusted_builders;
  // Point into `snapshot`, which this holds.
  std::vector<const std::string*> banned_relays;
  std::vector<const std::string*> trusted_relays;
};

namespace {

using breaker::client::BreakerClient;
using breaker::client::PolicySnapshot;
using breaker::client::PolicySource;

int Code(absl::StatusCode code) { return static_cast<int>(code); }

// Copies `message` into `out`, truncated to fit, NUL-terminated.
template <size_t N>
void CopyTruncated(absl::string_view message, char (&out)[N]) {
  const size_t n = std::min(message.size(), N - 1);
  if (n > 0) std::memcpy(out, message.data(), n);
  out[n] = '\0';
}

// The size of each sized struct in ABI version 1: a caller's `size` below it was never a
// layout of the struct (most likely, `size` was not set).
constexpr size_t kErrorSizeV1 = sizeof(breaker_error);
constexpr size_t kPolicyInfoSizeV1 = sizeof(breaker_policy_info);
constexpr size_t kStatsSizeV1 = offsetof(breaker_stats, last_refusal);

// Writes `full` to the caller's sized struct `out`: its first out->size bytes, with `size` as
// the caller set it, and zeroes past the library's struct when the caller's is larger (fields
// this library does not know read 0). Returns false, writing nothing, when out->size is below
// `min_size`.
template <typename T>
bool FillSized(T full, T* out, size_t min_size) {
  const size_t size = out->size;
  if (size < min_size) return false;
  full.size = size;
  std::memcpy(out, &full, std::min(size, sizeof(T)));
  if (size > sizeof(T)) {
    std::memset(reinterpret_cast<unsigned char*>(out) + sizeof(T), 0, size - sizeof(T));
  }
  return true;
}

// The refusal of a sized struct `name` whose caller's `size` is below `min_size`.
std::string SizeTooSmall(absl::string_view function, absl::string_view name, size_t size,
                         size_t min_size) {
  return absl::StrCat(function, ": out->size is ", size, ", less than any ", name, " (at least ",
                      min_size, "); set it to sizeof(", name, ")");
}

// The result of this thread's last call that returns a code, for breaker_last_error: kept per
// thread so that concurrent callers never see each other's errors.
thread_local breaker_error last_error = {sizeof(breaker_error), BREAKER_OK, ""};

// Records `status` as this thread's last result, fills `err` (when not null and sized right)
// with it, and returns its code.
int SetError(const absl::Status& status, breaker_error* err = nullptr) {
  const int code = Code(status.code());
  last_error.code = code;
  CopyTruncated(status.message(), last_error.message);
  if (err != nullptr) FillSized(last_error, err, kErrorSizeV1);
  return code;
}

int Ok() { return SetError(absl::OkStatus()); }

// Records an INVALID_ARGUMENT of `function` saying `what`; returns its code.
int Invalid(absl::string_view function, absl::string_view what) {
  return SetError(absl::InvalidArgumentError(absl::StrCat(function, ": ", what)));
}

// Records `status`, a refusal of `function`, when it is not OK; returns its code.
int Check(absl::string_view function, const absl::Status& status) {
  if (status.ok()) return Ok();
  return SetError(absl::Status(status.code(), absl::StrCat(function, ": ", status.message())));
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

// Queues `event` (the caller has checked its pointers), or records why the library refused it.
int Report(absl::string_view function, breaker_client* client, uint64_t slot,
           breaker::core::Event event) {
  return Check(function, client->impl->Report(slot, std::move(event)));
}

constexpr char kClientIsNull[] = "client is NULL";
constexpr char kRootIsNull[] = "root is NULL (a block root is 32 bytes)";

// Pointers to the strings `key_of` finds in each element of `container`, in byte order.
template <typename Container, typename KeyOf>
std::vector<const std::string*> SortedStrings(const Container& container, KeyOf key_of) {
  std::vector<const std::string*> strings;
  strings.reserve(container.size());
  for (const auto& element : container) strings.push_back(&key_of(element));
  std::sort(strings.begin(), strings.end(),
            [](const std::string* a, const std::string* b) { return *a < *b; });
  return strings;
}

std::vector<uint64_t> SortedBuilders(
    const absl::flat_hash_map<uint64_t, breaker::core::Ban>& bans) {
  std::vector<uint64_t> builders;
  builders.reserve(bans.size());
  for (const auto& entry : bans) builders.push_back(entry.first);
  std::sort(builders.begin(), builders.end());
  return builders;
}

// Copies the first `cap` of `values` to `out`; returns how many there are.
size_t CopyPrefix(const std::vector<uint64_t>& values, uint64_t* out, size_t cap) {
  if (out != nullptr) std::copy_n(values.begin(), std::min(cap, values.size()), out);
  return values.size();
}

const char* At(const std::vector<const std::string*>& strings, size_t index) {
  return index < strings.size() ? strings[index]->c_str() : nullptr;
}

const char* LevelName(breaker::client::LogLevel level) {
  switch (level) {
    case breaker::client::LogLevel::kInfo:
      return "INFO";
    case breaker::client::LogLevel::kWarning:
      return "WARNING";
    case breaker::client::LogLevel::kError:
      return "ERROR";
  }
  return "LOG";
}

// Where a client's log lines go: the caller's callback, or, by default, warnings and errors to
// stderr (never through glog, which the host program may own or may never have initialized).
breaker::client::LogFunction LogFunctionOf(const breaker_options& opts) {
  if (opts.log_callback != nullptr) {
    return [callback = opts.log_callback, user_data = opts.log_user_data](
               breaker::client::LogLevel level, absl::string_view message) {
      const std::string line(message);
      callback(user_data, static_cast<int>(level), line.c_str());
    };
  }
  return [](breaker::client::LogLevel level, absl::string_view message) {
    if (level == breaker::client::LogLevel::kInfo) return;
    std::fprintf(stderr, "breaker-client: %s: %.*s\n", LevelName(level),
                 static_cast<int>(message.size()), message.data());
  };
}

}  // namespace

extern "C" {

int breaker_abi_version(void) { return BREAKER_ABI_VERSION; }

int breaker_last_error(breaker_error* out) {
  if (out != nullptr && !FillSized(last_error, out, kErrorSizeV1)) return BREAKER_INVALID_ARGUMENT;
  return last_error.code;
}

// --- Options ---

breaker_options* breaker_options_new(void) { return new (std::nothrow) breaker_options(); }

void breaker_options_free(breaker_options* opts) { delete opts; }

// Each setter below checks the same two pointers first.
#define BREAKER_CHECK_SETTER(function, opts, value)                      \
  do {                                                                   \
    if ((opts) == nullptr) return Invalid(function, "options is NULL");  \
    if ((value) == nullptr) return Invalid(function, #value " is NULL"); \
  } while (0)

int breaker_options_add_address(breaker_options* opts, const char* address) {
  BREAKER_CHECK_SETTER("breaker_options_add_address", opts, address);
  opts->options.addresses.emplace_back(address);
  return Ok();
}

int breaker_options_set_node_id(breaker_options* opts, const char* node_id) {
  BREAKER_CHECK_SETTER("breaker_options_set_node_id", opts, node_id);
  opts->options.node_id = node_id;
  return Ok();
}

int breaker_options_set_network(breaker_options* opts, const char* network) {
  BREAKER_CHECK_SETTER("breaker_options_set_network", opts, network);
  opts->options.network = network;
  return Ok();
}

int breaker_options_set_client_version(breaker_options* opts, const char* client_version) {
  BREAKER_CHECK_SETTER("breaker_options_set_client_version", opts, client_version);
  opts->options.client_version = client_version;
  return Ok();
}

int breaker_options_set_max_buffered_observations(breaker_options* opts, size_t max) {
  if (opts == nullptr)
    return Invalid("breaker_options_set_max_buffered_observations", "options is NULL");
  opts->options.max_buffered_observations = max;
  return Ok();
}

int breaker_options_set_staleness_limit_seconds(breaker_options* opts, double seconds) {
  constexpr char kFunction[] = "breaker_options_set_staleness_limit_seconds";
  if (opts == nullptr) return Invalid(kFunction, "options is NULL");
  if (!std::isfinite(seconds) || seconds < 0) {
    return Invalid(kFunction, absl::StrCat("seconds is ", seconds,
                                           "; give a finite, positive number of seconds"));
  }
  opts->options.staleness_limit = absl::Seconds(seconds);
  return Ok();
}

int breaker_options_set_fallback_config_file(breaker_options* opts, const char* path) {
  BREAKER_CHECK_SETTER("breaker_options_set_fallback_config_file", opts, path);
  opts->fallback_config_file = path;
  return Ok();
}

int breaker_options_set_tls(breaker_options* opts, const char* ca_file, const char* cert_file,
                            const char* key_file) {
  BREAKER_CHECK_SETTER("breaker_options_set_tls", opts, ca_file);
  opts->security_files.tls_ca_file = ca_file;
  opts->security_files.tls_cert_file = cert_file == nullptr ? "" : cert_file;
  opts->security_files.tls_key_file = key_file == nullptr ? "" : key_file;
  return Ok();
}

int breaker_options_set_log_callback(breaker_options* opts, breaker_log_callback callback,
                                     void* user_data) {
  if (opts == nullptr) return Invalid("breaker_options_set_log_callback", "options is NULL");
  opts->log_callback = callback;
  opts->log_user_data = user_data;
  return Ok();
}

int breaker_options_set_bearer_token(breaker_options* opts, const char* token) {
  BREAKER_CHECK_SETTER("breaker_options_set_bearer_token", opts, token);
  opts->options.bearer_token = token;
  return Ok();
}

#undef BREAKER_CHECK_SETTER

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
  options.log = LogFunctionOf(*opts);
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
    absl::StatusOr<breaker::client::ChannelSecurity> security =
        breaker::client::SecurityFromFiles(opts->security_files, /*token_file=*/"");
    if (!security.ok()) return SetError(security.status(), err);
    options.credentials = std::move(security->credentials);
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
  constexpr char kFunction[] = "breaker_report_bid";
  if (client == nullptr) return Invalid(kFunction, kClientIsNull);
  if (pubkey == nullptr && pubkey_len != 0) {
    return Invalid(kFunction, absl::StrCat("pubkey is NULL with pubkey_len ", pubkey_len,
                                           "; pass NULL with 0 when the key is not known"));
  }
  breaker::core::BidSeen bid;
  bid.builder = builder;
  bid.relay = std::string(OrEmpty(relay_or_null));
  if (pubkey_len != 0) bid.pubkey.assign(reinterpret_cast<const char*>(pubkey), pubkey_len);
  return Report(kFunction, client, slot, std::move(bid));
}

int breaker_report_payload_missing(breaker_client* client, uint64_t slot, uint64_t builder,
                                   const uint8_t root[32], double attested_fraction) {
  constexpr char kFunction[] = "breaker_report_payload_missing";
  if (client == nullptr) return Invalid(kFunction, kClientIsNull);
  if (root == nullptr) return Invalid(kFunction, kRootIsNull);
  breaker::core::PayloadMissing missing;
  missing.builder = builder;
  missing.root = Root(root);
  missing.attested_fraction = attested_fraction;
  return Report(kFunction, client, slot, std::move(missing));
}

int breaker_report_payload_delivered(breaker_client* client, uint64_t slot, uint64_t builder,
                                     const uint8_t root[32]) {
  constexpr char kFunction[] = "breaker_report_payload_delivered";
  if (client == nullptr) return Invalid(kFunction, kClientIsNull);
  if (root == nullptr) return Invalid(kFunction, kRootIsNull);
  breaker::core::PayloadDelivered delivered;
  delivered.builder = builder;
  delivered.root = Root(root);
  return Report(kFunction, client, slot, std::move(delivered));
}

int breaker_report_blocks_seen(breaker_client* client, uint64_t slot, const uint8_t* roots,
                               size_t n_roots) {
  constexpr char kFunction[] = "breaker_report_blocks_seen";
  if (client == nullptr) return Invalid(kFunction, kClientIsNull);
  if (roots == nullptr && n_roots != 0) {
    return Invalid(kFunction, absl::StrCat("roots is NULL with n_roots ", n_roots));
  }
  // Before reading `roots`, with breakerd's words.
  if (int code = Check(kFunction, breaker::core::bounds::CheckMaxCount(
                                      "blocks_seen.block_roots", n_roots,
                                      breaker::core::bounds::kMaxBlockRootsPerSlot));
      code != BREAKER_OK) {
    return code;
  }
  constexpr size_t kRootSize = sizeof(breaker::core::BlockRoot::bytes);
  breaker::core::BlocksSeen seen;
  seen.roots.reserve(n_roots);
  for (size_t i = 0; i < n_roots; ++i) seen.roots.push_back(Root(roots + i * kRootSize));
  return Report(kFunction, client, slot, std::move(seen));
}

int breaker_report_finalized(breaker_client* client, uint64_t slot, uint64_t epoch) {
  constexpr char kFunction[] = "breaker_report_finalized";
  if (client == nullptr) return Invalid(kFunction, kClientIsNull);
  breaker::core::Finalized finalized;
  finalized.epoch = epoch;
  return Report(kFunction, client, slot, finalized);
}

int breaker_report_builder_exited(breaker_client* client, uint64_t slot, uint64_t builder) {
  constexpr char kFunction[] = "breaker_report_builder_exited";
  if (client == nullptr) return Invalid(kFunction, kClientIsNull);
  breaker::core::BuilderExited exited;
  exited.builder = builder;
  return Report(kFunction, client, slot, exited);
}

int breaker_report_relay_reveal_missing(breaker_client* client, uint64_t slot, const char* relay,
                                        const uint8_t root[32]) {
  constexpr char kFunction[] = "breaker_report_relay_reveal_missing";
  if (client == nullptr) return Invalid(kFunction, kClientIsNull);
  if (relay == nullptr) {
    return Invalid(kFunction, "relay is NULL; name the relay that signed the header");
  }
  if (root == nullptr) return Invalid(kFunction, kRootIsNull);
  breaker::core::RelayRevealMissing missing;
  missing.relay = relay;
  missing.root = Root(root);
  return Report(kFunction, client, slot, std::move(missing));
}

// --- The policy in force ---

bool breaker_is_allowed(const breaker_client* client, uint64_t builder, const char* relay_or_null) {
  if (client == nullptr) return false;
  return client->impl->IsAllowed(builder, OrEmpty(relay_or_null));
}

bool breaker_is_relay_allowed(const breaker_client* client, const char* relay) {
  if (client == nullptr || relay == nullptr) return false;
  absl::StatusOr<std::string> normalized = breaker::core::NormalizeRelayId(relay);
  // An identifier that cannot be normalized is nobody's relay.
  return normalized.ok() && client->impl->policy()->policy.IsRelayAllowed(*normalized);
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
  return CopyPrefix(SortedBuilders(client->impl->policy()->policy.banned_builders), out, cap);
}

breaker_policy* breaker_policy_get(const breaker_client* client) {
  if (client == nullptr) return nullptr;
  auto* held = new breaker_policy();
  held->snapshot = client->impl->policy();
  const breaker::core::Policy& policy = held->snapshot->policy;
  held->banned_builders = SortedBuilders(policy.banned_builders);
  held->trusted_builders.assign(policy.trusted_builders.begin(), policy.trusted_builders.end());
  std::sort(held->trusted_builders.begin(), held->trusted_builders.end());
  held->banned_relays = SortedStrings(
      policy.banned_relays, [](const auto& entry) -> const std::string& { return entry.first; });
  held->trusted_relays = SortedStrings(
      policy.trusted_relays, [](const std::string& relay) -> const std::string& { return relay; });
  return held;
}

void breaker_policy_free(breaker_policy* policy) { delete policy; }

bool breaker_policy_is_current(const breaker_client* client, const breaker_policy* policy) {
  if (client == nullptr || policy == nullptr) return false;
  // `policy` holds its snapshot, so no other snapshot can have its address meanwhile.
  return client->impl->policy() == policy->snapshot;
}

int breaker_policy_read(const breaker_policy* policy, breaker_policy_info* out) {
  constexpr char kFunction[] = "breaker_policy_read";
  if (policy == nullptr) return Invalid(kFunction, "policy is NULL");
  if (out == nullptr) return Invalid(kFunction, "out is NULL");
  breaker_policy_info info{};
  info.fleet_version = policy->snapshot->fleet_version;
  info.mode = ModeNumber(policy->snapshot->policy.mode);
  info.source = SourceNumber(policy->snapshot->source);
  info.n_banned_builders = policy->banned_builders.size();
  info.n_trusted_builders = policy->trusted_builders.size();
  info.n_banned_relays = policy->banned_relays.size();
  info.n_trusted_relays = policy->trusted_relays.size();
  if (!FillSized(info, out, kPolicyInfoSizeV1)) {
    return SetError(absl::InvalidArgumentError(
        SizeTooSmall(kFunction, "breaker_policy_info", out->size, kPolicyInfoSizeV1)));
  }
  return Ok();
}

size_t breaker_policy_banned_builders(const breaker_policy* policy, uint64_t* out, size_t cap) {
  return policy == nullptr ? 0 : CopyPrefix(policy->banned_builders, out, cap);
}

size_t breaker_policy_trusted_builders(const breaker_policy* policy, uint64_t* out, size_t cap) {
  return policy == nullptr ? 0 : CopyPrefix(policy->trusted_builders, out, cap);
}

const char* breaker_policy_banned_relay(const breaker_policy* policy, size_t index) {
  return policy == nullptr ? nullptr : At(policy->banned_relays, index);
}

const char* breaker_policy_trusted_relay(const breaker_policy* policy, size_t index) {
  return policy == nullptr ? nullptr : At(policy->trusted_relays, index);
}

const char* breaker_policy_mode_reason(const breaker_policy* policy) {
  return policy == nullptr ? "" : policy->snapshot->policy.mode_reason.c_str();
}

// --- Subscriptions ---

int breaker_subscribe(breaker_client* client, breaker_policy_callback callback, void* user_data,
                      int* subscription_id) {
  constexpr char kFunction[] = "breaker_subscribe";
  if (client == nullptr) return Invalid(kFunction, kClientIsNull);
  if (callback == nullptr) return Invalid(kFunction, "callback is NULL");
  if (subscription_id == nullptr) return Invalid(kFunction, "subscription_id is NULL");
  *subscription_id =
      client->impl->Subscribe([callback, user_data](std::shared_ptr<const PolicySnapshot> s) {
        callback(user_data, s->fleet_version, ModeNumber(s->policy.mode), SourceNumber(s->source));
      });
  return Ok();
}

void breaker_unsubscribe(breaker_client* client, int subscription_id) {
  if (client == nullptr) return;
  client->impl->Unsubscribe(subscription_id);
}

// --- Statistics ---

int breaker_get_stats(const breaker_client* client, breaker_stats* out) {
  constexpr char kFunction[] = "breaker_get_stats";
  if (out == nullptr) return Invalid(kFunction, "out is NULL");
  breaker_stats c_stats{};
  if (client != nullptr) {
    const breaker::client::ClientStats stats = client->impl->stats();
    c_stats.connected = stats.connected;
    c_stats.reconnects = stats.reconnects;
    c_stats.reported = stats.reported;
    c_stats.acknowledged = stats.acknowledged;
    c_stats.buffered = stats.buffered;
    c_stats.dropped_bids = stats.dropped_bids;
    c_stats.dropped_other = stats.dropped_other;
    c_stats.dropped_failures = stats.dropped_failures;
    c_stats.refused = stats.refused;
    c_stats.fleet_policy_version = stats.fleet_policy_version;
    c_stats.source = SourceNumber(stats.source);
    c_stats.fallback_active = stats.fallback_active;
    c_stats.replayed = stats.replayed;
    c_stats.sequence_exhausted = stats.sequence_exhausted;
    CopyTruncated(stats.address, c_stats.address);
    CopyTruncated(stats.last_refusal, c_stats.last_refusal);
  }
  if (!FillSized(c_stats, out, kStatsSizeV1)) {
    return SetError(absl::InvalidArgumentError(
        SizeTooSmall(kFunction, "breaker_stats", out->size, kStatsSizeV1)));
  }
  return Ok();
}

bool breaker_is_synced(const breaker_client* client) {
  return client != nullptr && breaker::client::IsSynced(client->impl->stats());
}

}  // extern "C"
