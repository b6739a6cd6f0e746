#include "sidecar/beacon/beacon_api.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/bounded_json.h"
#include "common/mutex.h"
#include "glog/logging.h"
#include "httplib.h"
#include "nlohmann/json.hpp"

namespace breaker::sidecar {
namespace {

using Json = nlohmann::json;

// Follows `path`, a list of object keys.
const Json* Path(const Json& json, std::initializer_list<const char*> path) {
  const Json* at = &json;
  for (const char* key : path) {
    at = JsonMember(*at, key);
    if (at == nullptr) return nullptr;
  }
  return at;
}

std::optional<uint64_t> Uint64(const Json* value) {
  if (value == nullptr) return std::nullopt;
  if (value->is_number_unsigned()) return value->get<uint64_t>();
  if (!value->is_string()) return std::nullopt;
  uint64_t parsed = 0;
  const std::string& text = value->get_ref<const std::string&>();
  if (text.empty() || text.size() > 20 || !absl::SimpleAtoi(text, &parsed)) return std::nullopt;
  if (!std::all_of(text.begin(), text.end(), absl::ascii_isdigit)) return std::nullopt;
  return parsed;
}

std::optional<core::BlockRoot> Root(const Json* value) {
  if (value == nullptr || !value->is_string()) return std::nullopt;
  const std::string& text = value->get_ref<const std::string&>();
  if (text.size() != 66 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) {
    return std::nullopt;
  }
  for (size_t i = 2; i < text.size(); ++i) {
    if (!absl::ascii_isxdigit(text[i])) return std::nullopt;
  }
  return core::BlockRootFromBytes(absl::HexStringToBytes(text.substr(2)));
}

std::optional<bool> Bool(const Json* value) {
  if (value == nullptr || !value->is_boolean()) return std::nullopt;
  return value->get<bool>();
}

std::optional<std::string> Pubkey(const Json* value) {
  if (value == nullptr || !value->is_string()) return std::nullopt;
  return ValidatorPubkey(value->get_ref<const std::string&>());
}

// An answer that is not what the spec says: DATA_LOSS naming the endpoint and the field.
absl::Status BadBody(absl::string_view endpoint, absl::string_view what) {
  return absl::DataLossError(absl::StrCat("the beacon node's ", endpoint, ": ", what));
}

absl::Status Malformed(absl::string_view what, absl::string_view field) {
  return absl::DataLossError(absl::StrCat(what, ": '", field, "' is missing or malformed"));
}

}  // namespace

absl::string_view TopicsFormName(TopicsForm form) {
  return form == TopicsForm::kRepeated ? "repeated" : "comma";
}

BeaconApi::BeaconApi(std::string base, std::string path_prefix, BeaconApiLimits limits,
                     const Clock& clock)
    : base_(std::move(base)),
      path_prefix_(std::move(path_prefix)),
      limits_(limits),
      clock_(clock) {}

BeaconApi::~BeaconApi() { Interrupt(); }

absl::StatusOr<std::string> BeaconApi::Get(const std::string& path) {
  httplib::Client client(base_);
  const int64_t timeout_us = absl::ToInt64Microseconds(limits_.request_timeout);
  client.set_connection_timeout(timeout_us / 1000000, timeout_us % 1000000);
  client.set_read_timeout(timeout_us / 1000000, timeout_us % 1000000);
  client.set_keep_alive(false);
  {
    MutexLock lock(&mu_);
    if (interrupted_) return absl::CancelledError("the observer is stopping");
    rest_clients_.insert(&client);
  }
  struct Unregister {
    BeaconApi* api;
    httplib::Client* client;
    ~Unregister() {
      MutexLock lock(&api->mu_);
      api->rest_clients_.erase(client);
    }
  } unregister{this, &client};
  const absl::Duration deadline = clock_.Monotonic() + limits_.request_timeout;
  std::string body;
  bool too_big = false;
  bool too_slow = false;
  int status = 0;
  httplib::Result result =
      client.Get((path_prefix_ + path).c_str(), httplib::Headers{{"Accept", "application/json"}},
                 [&](const httplib::Response& response) {
                   status = response.status;
                   return true;
                 },
                 [&](const char* data, size_t length) {
                   if (body.size() + length > limits_.max_body_bytes) {
                     too_big = true;
                     return false;
                   }
                   if (clock_.Monotonic() > deadline) {
                     too_slow = true;
                     return false;
                   }
                   body.append(data, length);
                   return true;
                 });
  if (too_big) {
    ++bad_answers_;
    return absl::ResourceExhaustedError(absl::StrCat(
        "the beacon node's ", path, " answered more than ", limits_.max_body_bytes, " bytes"));
  }
  if (too_slow) {
    return absl::DeadlineExceededError(absl::StrCat("the beacon node's ", path, " took over ",
                                                    absl::FormatDuration(limits_.request_timeout)));
  }
  if (stopping_) return absl::CancelledError("the observer is stopping");
  if (!result) {
    return absl::UnavailableError(absl::StrCat("the beacon node at ", base_, " (", path,
                                               "): ", httplib::to_string(result.error())));
  }
  if (status == 404) {
    return absl::NotFoundError(absl::StrCat("the beacon node's ", path, " answered 404"));
  }
  if (status != 200) {
    return absl::UnavailableError(
        absl::StrCat("the beacon node's ", path, " answered status ", status));
  }
  return body;
}

namespace {

// The preset a spec names (PRESET_BASE: mainnet, minimal, or mainnet's limits for another),
// with each limit the spec lists in place of the base's: the limits changed between versions
// of the consensus specs, and the node's own are those its blocks have.
absl::StatusOr<ssz::Preset> PresetOf(const Json& spec) {
  ssz::Preset preset = ssz::Preset::kMainnet;
  if (const Json* base = JsonMember(spec, "PRESET_BASE"); base != nullptr) {
    if (!base->is_string()) return absl::InvalidArgumentError("data.PRESET_BASE is no string");
    if (base->get_ref<const std::string&>() == "minimal") preset = ssz::Preset::kMinimal;
  }
  const std::pair<const char*, uint64_t ssz::Preset::*> limits[] = {
      {"MAX_VALIDATORS_PER_COMMITTEE", &ssz::Preset::max_validators_per_committee},
      {"MAX_COMMITTEES_PER_SLOT", &ssz::Preset::max_committees_per_slot},
      {"SYNC_COMMITTEE_SIZE", &ssz::Preset::sync_committee_size},
      {"MAX_WITHDRAWALS_PER_PAYLOAD", &ssz::Preset::max_withdrawals_per_payload},
      {"MAX_BLOB_COMMITMENTS_PER_BLOCK", &ssz::Preset::max_blob_commitments_per_block},
      {"MAX_DEPOSIT_REQUESTS_PER_PAYLOAD", &ssz::Preset::max_deposit_requests_per_payload},
      {"MAX_WITHDRAWAL_REQUESTS_PER_PAYLOAD", &ssz::Preset::max_withdrawal_requests_per_payload},
      {"MAX_CONSOLIDATION_REQUESTS_PER_PAYLOAD",
       &ssz::Preset::max_consolidation_requests_per_payload},
  };
  for (const auto& [name, field] : limits) {
    const Json* value = JsonMember(spec, name);
    if (value == nullptr) continue;
    std::optional<uint64_t> limit = Uint64(value);
    if (!limit.has_value() || *limit == 0 || *limit > ssz::kMaxPresetLimit) {
      return absl::InvalidArgumentError(
          absl::StrCat("data.", name, " is no quoted decimal in 1..", ssz::kMaxPresetLimit));
    }
    preset.*field = *limit;
  }
  return preset;
}

}  // namespace

absl::StatusOr<NodeChain> DecodeChain(absl::string_view genesis_body, absl::string_view spec_body) {
  const Json genesis = ParseBoundedJson(genesis_body);
  NodeChain chain;
  std::optional<uint64_t> genesis_time = Uint64(Path(genesis, {"data", "genesis_time"}));
  if (!genesis_time.has_value() || *genesis_time > (uint64_t{1} << 62)) {
    return BadBody("/eth/v1/beacon/genesis", "no data.genesis_time, a quoted decimal");
  }
  chain.genesis_time_unix = static_cast<int64_t>(*genesis_time);

  const Json spec = ParseBoundedJson(spec_body);
  const Json* data = JsonMember(spec, "data");
  std::optional<uint64_t> seconds =
      Uint64(JsonMember(data == nullptr ? spec : *data, "SECONDS_PER_SLOT"));
  if (!seconds.has_value()) {
    // Later forks give the slot in milliseconds instead.
    std::optional<uint64_t> ms =
        Uint64(data == nullptr ? nullptr : JsonMember(*data, "SLOT_DURATION_MS"));
    if (ms.has_value() && *ms % 1000 == 0) seconds = *ms / 1000;
  }
  std::optional<uint64_t> slots =
      Uint64(data == nullptr ? nullptr : JsonMember(*data, "SLOTS_PER_EPOCH"));
  if (data == nullptr || !seconds.has_value() || !slots.has_value() || *seconds == 0 ||
      *slots == 0) {
    return BadBody("/eth/v1/config/spec",
                   "no data.SECONDS_PER_SLOT and data.SLOTS_PER_EPOCH, quoted decimals above 0");
  }
  chain.seconds_per_slot = *seconds;
  chain.slots_per_epoch = *slots;
  if (const Json* gloas = JsonMember(*data, "GLOAS_FORK_EPOCH"); gloas != nullptr) {
    std::optional<uint64_t> epoch = Uint64(gloas);
    if (!epoch.has_value()) {
      return BadBody("/eth/v1/config/spec", "data.GLOAS_FORK_EPOCH is not a quoted decimal");
    }
    chain.gloas_fork_epoch = *epoch;
  }
  absl::StatusOr<ssz::Preset> preset = PresetOf(*data);
  if (!preset.ok()) return BadBody("/eth/v1/config/spec", preset.status().message());
  chain.preset = *preset;
  return chain;
}

absl::StatusOr<NodeChain> BeaconApi::GetChain() {
  absl::StatusOr<std::string> genesis_body = Get("/eth/v1/beacon/genesis");
  if (!genesis_body.ok()) return genesis_body.status();
  absl::StatusOr<std::string> spec_body = Get("/eth/v1/config/spec");
  if (!spec_body.ok()) return spec_body.status();
  return Checked(DecodeChain(*genesis_body, *spec_body));
}

absl::StatusOr<SyncStatus> BeaconApi::GetSyncing() {
  absl::StatusOr<std::string> body = Get("/eth/v1/node/syncing");
  if (!body.ok()) return body.status();
  return Checked(DecodeSyncing(*body));
}

absl::StatusOr<SyncStatus> DecodeSyncing(absl::string_view body) {
  const Json json = ParseBoundedJson(body);
  std::optional<bool> syncing = Bool(Path(json, {"data", "is_syncing"}));
  if (!syncing.has_value()) {
    return BadBody("/eth/v1/node/syncing", "no data.is_syncing, a boolean");
  }
  SyncStatus status;
  status.is_syncing = *syncing;
  // Absent from older nodes: not optimistic.
  status.is_optimistic = Bool(Path(json, {"data", "is_optimistic"})).value_or(false);
  return status;
}

absl::StatusOr<std::vector<core::BlockRoot>> BeaconApi::GetHeaders(core::Slot slot) {
  absl::StatusOr<std::string> body = Get(absl::StrCat("/eth/v1/beacon/headers?slot=", slot));
  if (absl::IsNotFound(body.status())) return std::vector<core::BlockRoot>{};
  if (!body.ok()) return body.status();
  return Checked(DecodeHeaders(*body, slot));
}

absl::StatusOr<std::vector<core::BlockRoot>> DecodeHeaders(absl::string_view body,
                                                           core::Slot slot) {
  const Json json = ParseBoundedJson(body);
  const Json* data = JsonMember(json, "data");
  if (data == nullptr || !data->is_array()) {
    return BadBody("/eth/v1/beacon/headers", "no data array");
  }
  std::vector<core::BlockRoot> roots;
  for (const Json& header : *data) {
    std::optional<core::BlockRoot> root = Root(JsonMember(header, "root"));
    std::optional<uint64_t> header_slot = Uint64(Path(header, {"header", "message", "slot"}));
    if (!root.has_value()) return BadBody("/eth/v1/beacon/headers", "a header without root");
    // A node that ignores the query would list other slots' headers.
    if (header_slot.has_value() && *header_slot != slot) continue;
    roots.push_back(*root);
  }
  return roots;
}

absl::StatusOr<core::Epoch> BeaconApi::GetFinalizedEpoch() {
  absl::StatusOr<std::string> body = Get("/eth/v1/beacon/states/head/finality_checkpoints");
  if (!body.ok()) return body.status();
  return Checked(DecodeFinalizedEpoch(*body));
}

absl::StatusOr<core::Epoch> DecodeFinalizedEpoch(absl::string_view body) {
  std::optional<uint64_t> epoch =
      Uint64(Path(ParseBoundedJson(body), {"data", "finalized", "epoch"}));
  if (!epoch.has_value()) {
    return BadBody("/eth/v1/beacon/states/head/finality_checkpoints",
                   "no data.finalized.epoch, a quoted decimal");
  }
  return *epoch;
}

absl::StatusOr<std::vector<ForkChoiceNode>> BeaconApi::GetForkChoice() {
  absl::StatusOr<std::string> body = Get("/eth/v1/debug/fork_choice");
  if (!body.ok()) return body.status();
  return Checked(DecodeForkChoice(*body));
}

absl::StatusOr<std::vector<ForkChoiceNode>> DecodeForkChoice(absl::string_view body) {
  const Json json = ParseBoundedJson(body);
  const Json* nodes = JsonMember(json, "fork_choice_nodes");
  if (nodes == nullptr || !nodes->is_array()) {
    return BadBody("/eth/v1/debug/fork_choice", "no fork_choice_nodes array");
  }
  std::vector<ForkChoiceNode> out;
  for (const Json& node : *nodes) {
    std::optional<uint64_t> slot = Uint64(JsonMember(node, "slot"));
    std::optional<core::BlockRoot> root = Root(JsonMember(node, "block_root"));
    std::optional<uint64_t> weight = Uint64(JsonMember(node, "weight"));
    if (!slot.has_value() || !root.has_value() || !weight.has_value()) {
      return BadBody("/eth/v1/debug/fork_choice", "a node without slot, block_root and weight");
    }
    // The anchor has no parent: clients leave parent_root out or write null.
    const Json* parent = JsonMember(node, "parent_root");
    std::optional<core::BlockRoot> parent_root;
    if (parent != nullptr && !parent->is_null()) {
      parent_root = Root(parent);
      if (!parent_root.has_value()) {
        return BadBody("/eth/v1/debug/fork_choice", "a parent_root that is not a 32-byte hex");
      }
    }
    out.push_back(ForkChoiceNode{*slot, *root, *weight, parent_root});
  }
  return out;
}

uint64_t OwnWeight(const std::vector<ForkChoiceNode>& nodes, const core::BlockRoot& root) {
  uint64_t weight = 0;
  uint64_t children = 0;
  bool found = false;
  for (const ForkChoiceNode& node : nodes) {
    if (node.root == root && !found) {
      weight = node.weight;
      found = true;
    } else if (node.parent_root == root) {
      children += node.weight;
    }
  }
  // A node whose children outweigh it answered inconsistently (weights read at different
  // moments): no votes of its own, rather than a wrapped count.
  return children >= weight ? 0 : weight - children;
}

absl::StatusOr<core::BuilderIndex> BeaconApi::GetBlockBidBuilder(const core::BlockRoot& root) {
  const std::string hex = absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(root.bytes.data()), root.bytes.size()));
  absl::StatusOr<std::string> body = Get(absl::StrCat("/eth/v2/beacon/blocks/0x", hex));
  if (!body.ok()) return body.status();
  return Checked(DecodeBlockBidBuilder(*body));
}

absl::StatusOr<core::BuilderIndex> DecodeBlockBidBuilder(absl::string_view body) {
  const Json json = ParseBoundedJson(body);
  std::optional<uint64_t> builder =
      Uint64(Path(json, {"data", "message", "body", "signed_execution_payload_bid", "message",
                         "builder_index"}));
  if (!builder.has_value()) {
    return BadBody("/eth/v2/beacon/blocks",
                   "no data.message.body.signed_execution_payload_bid.message.builder_index");
  }
  return *builder;
}

std::optional<std::string> ValidatorPubkey(absl::string_view text) {
  if (text.size() != 98 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) {
    return std::nullopt;
  }
  for (size_t i = 2; i < text.size(); ++i) {
    if (!absl::ascii_isxdigit(text[i])) return std::nullopt;
  }
  return absl::AsciiStrToLower(text);
}

absl::StatusOr<std::vector<ValidatorKeyIndex>> DecodeValidators(
    absl::string_view body, const std::vector<std::string>& asked) {
  constexpr absl::string_view kEndpoint = "/eth/v1/beacon/states/head/validators";
  const Json json = ParseBoundedJson(body);
  const Json* data = JsonMember(json, "data");
  if (data == nullptr || !data->is_array() || data->size() > asked.size()) {
    return BadBody(kEndpoint, "no data array of at most the validators asked about");
  }
  std::vector<ValidatorKeyIndex> out;
  for (const Json& validator : *data) {
    std::optional<uint64_t> index = Uint64(JsonMember(validator, "index"));
    std::optional<std::string> key = Pubkey(Path(validator, {"validator", "pubkey"}));
    if (!index.has_value() || !key.has_value()) {
      return BadBody(kEndpoint, "a validator without index and validator.pubkey");
    }
    if (std::find(asked.begin(), asked.end(), *key) == asked.end()) {
      return BadBody(kEndpoint, absl::StrCat("validator ", *key, " was not asked about"));
    }
    out.push_back(ValidatorKeyIndex{*std::move(key), *index});
  }
  return out;
}

absl::StatusOr<std::vector<ValidatorKeyIndex>> BeaconApi::GetValidatorIndices(
    const std::vector<std::string>& pubkeys) {
  constexpr absl::string_view kEndpoint = "/eth/v1/beacon/states/head/validators";
  if (pubkeys.size() > kMaxValidatorIdsPerRead) {
    return absl::InvalidArgumentError(absl::StrCat("at most ", kMaxValidatorIdsPerRead,
                                                   " validators a read, not ", pubkeys.size()));
  }
  std::vector<std::string> asked;
  for (const std::string& pubkey : pubkeys) {
    std::optional<std::string> key = ValidatorPubkey(pubkey);
    if (!key.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", pubkey, "' is not a validator public key (0x and 96 hex digits)"));
    }
    asked.push_back(*std::move(key));
  }
  if (asked.empty()) return std::vector<ValidatorKeyIndex>{};
  // One form of the `id` array, read and checked.
  auto read = [&](absl::string_view query) -> absl::StatusOr<std::vector<ValidatorKeyIndex>> {
    absl::StatusOr<std::string> body = Get(absl::StrCat(kEndpoint, "?", query));
    if (!body.ok()) return body.status();
    return Checked(DecodeValidators(*body, asked));
  };
  // The array as repeated keys (OpenAPI's default form, which Lodestar reads), and, when that
  // finds fewer than asked, comma-joined too (which other clients read): a node that takes the
  // other form finds nothing rather than refusing, so both are asked, and their answers joined.
  absl::StatusOr<std::vector<ValidatorKeyIndex>> repeated =
      read(absl::StrCat("id=", absl::StrJoin(asked, "&id=")));
  if (asked.size() == 1 || (repeated.ok() && repeated->size() == asked.size())) return repeated;
  absl::StatusOr<std::vector<ValidatorKeyIndex>> joined =
      read(absl::StrCat("id=", absl::StrJoin(asked, ",")));
  if (!repeated.ok()) return joined;
  if (!joined.ok()) return repeated;
  for (ValidatorKeyIndex& found : *joined) {
    const bool known =
        std::any_of(repeated->begin(), repeated->end(),
                    [&](const ValidatorKeyIndex& k) { return k.pubkey == found.pubkey; });
    if (!known) repeated->push_back(std::move(found));
  }
  return repeated;
}

absl::StatusOr<std::vector<ProposerDuty>> BeaconApi::GetProposerDuties(core::Epoch epoch,
                                                                       uint64_t slots_per_epoch) {
  constexpr absl::string_view kEndpoint = "/eth/v1/validator/duties/proposer";
  absl::StatusOr<std::string> body = Get(absl::StrCat(kEndpoint, "/", epoch));
  if (!body.ok()) return body.status();
  return Checked(DecodeProposerDuties(*body, epoch, slots_per_epoch));
}

absl::StatusOr<std::vector<ProposerDuty>> DecodeProposerDuties(absl::string_view body,
                                                               core::Epoch epoch,
                                                               uint64_t slots_per_epoch) {
  constexpr absl::string_view kEndpoint = "/eth/v1/validator/duties/proposer";
  const Json json = ParseBoundedJson(body);
  const Json* data = JsonMember(json, "data");
  if (data == nullptr || !data->is_array() || data->size() > slots_per_epoch) {
    return BadBody(kEndpoint,
                   absl::StrCat("no data array of at most ", slots_per_epoch, " duties"));
  }
  std::vector<ProposerDuty> out;
  for (const Json& duty : *data) {
    std::optional<std::string> key = Pubkey(JsonMember(duty, "pubkey"));
    std::optional<uint64_t> index = Uint64(JsonMember(duty, "validator_index"));
    std::optional<uint64_t> slot = Uint64(JsonMember(duty, "slot"));
    if (!key.has_value() || !index.has_value() || !slot.has_value()) {
      return BadBody(kEndpoint, "a duty without pubkey, validator_index and slot");
    }
    if (*slot / slots_per_epoch != epoch) {
      return BadBody(kEndpoint, absl::StrCat("a duty of slot ", *slot, ", not of epoch ", epoch));
    }
    out.push_back(ProposerDuty{*std::move(key), *index, *slot});
  }
  return out;
}

absl::Status BeaconApi::StreamEvents(const std::vector<std::string>& topics, TopicsForm form,
                                     const std::function<void()>& on_open,
                                     const std::function<void(const SseEvent&)>& on_event) {
  httplib::Client client(base_);
  const int64_t connect_us = absl::ToInt64Microseconds(limits_.request_timeout);
  const int64_t idle_us = absl::ToInt64Microseconds(limits_.stream_idle_timeout);
  client.set_connection_timeout(connect_us / 1000000, connect_us % 1000000);
  client.set_read_timeout(idle_us / 1000000, idle_us % 1000000);
  {
    MutexLock lock(&mu_);
    if (interrupted_) return absl::CancelledError("the observer is stopping");
    stream_client_ = &client;
    ending_ = false;
  }
  ++streams_opened_;

  int status = 0;
  std::string error_body;
  absl::Duration second_start = clock_.Monotonic();
  uint32_t in_second = 0;
  SseParser parser(
      limits_.sse,
      [&](SseEvent event) {
        const absl::Duration now = clock_.Monotonic();
        if (now - second_start >= absl::Seconds(1)) {
          second_start = now;
          in_second = 0;
        }
        if (++in_second > limits_.max_events_per_second) {
          if (dropped_events_++ % 1000 == 0) {
            LOG(WARNING) << "the beacon node sends over " << limits_.max_events_per_second
                         << " events a second: the excess is dropped (" << dropped_events_
                         << " so far)";
          }
          return;
        }
        on_event(event);
      },
      [&](absl::string_view reason) {
        ++dropped_events_;
        LOG(WARNING) << "the beacon node's event stream sent " << reason << ": dropped";
      });
  const std::string query = absl::StrJoin(topics, form == TopicsForm::kRepeated ? "&topics=" : ",");
  httplib::Result result = client.Get(
      (path_prefix_ + "/eth/v1/events?topics=" + query).c_str(),
      httplib::Headers{{"Accept", "text/event-stream"}},
      [&](const httplib::Response& response) {
        // An Interrupt or EndStream that came before the connection existed could not close
        // it.
        if (stopping_ || ending_) return false;
        status = response.status;
        if (status == 200) on_open();
        return true;
      },
      [&](const char* data, size_t length) {
        if (stopping_ || ending_) return false;
        if (status != 200) {
          // An error's body, for the message: bounded.
          error_body.append(
              data, std::min(length, size_t{512} - std::min(error_body.size(), size_t{512})));
          return true;
        }
        parser.Feed(absl::string_view(data, length));
        return true;
      });
  bool interrupted = false;
  {
    MutexLock lock(&mu_);
    stream_client_ = nullptr;
    interrupted = interrupted_;
  }
  if (interrupted) return absl::CancelledError("the observer is stopping");
  if (ending_) return absl::AbortedError("the observer ended the event stream");
  if (status >= 400 && status < 500) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the beacon node refused the event stream's topics ", absl::StrJoin(topics, ","), " (",
        TopicsFormName(form), " form, status ", status, "): ", error_body));
  }
  if (status != 0 && status != 200) {
    return absl::UnavailableError(
        absl::StrCat("the beacon node's event stream answered status ", status));
  }
  if (!result) {
    return absl::UnavailableError(
        absl::StrCat("the beacon node's event stream ended: ", httplib::to_string(result.error())));
  }
  return absl::UnavailableError("the beacon node closed its event stream");
}

void BeaconApi::EndStream() {
  MutexLock lock(&mu_);
  if (stream_client_ == nullptr) return;
  ending_ = true;
  stream_client_->stop();
}

void BeaconApi::Interrupt() {
  MutexLock lock(&mu_);
  interrupted_ = true;
  stopping_ = true;
  if (stream_client_ != nullptr) stream_client_->stop();
  for (httplib::Client* client : rest_clients_) client->stop();
}

BeaconApiStats BeaconApi::stats() const {
  BeaconApiStats stats;
  stats.bad_answers = bad_answers_;
  stats.dropped_events = dropped_events_;
  stats.streams_opened = streams_opened_;
  return stats;
}

absl::StatusOr<BeaconEvent> DecodeEvent(const SseEvent& event) {
  using Kind = BeaconEvent::Kind;
  const Json json = ParseBoundedJson(event.data);
  if (json.is_discarded() || !json.is_object()) {
    return absl::DataLossError(absl::StrCat("event '", event.name, "': not a JSON object"));
  }
  // Gloas events come as {"version": ..., "data": {...}}.
  const Json& body = JsonMember(json, "version") != nullptr && JsonMember(json, "data") != nullptr
                         ? json["data"]
                         : json;
  BeaconEvent out;
  const std::string& what = event.name;
  auto slot = [&](const Json& object) -> absl::Status {
    std::optional<uint64_t> value = Uint64(JsonMember(object, "slot"));
    if (!value.has_value()) return Malformed(what, "slot");
    out.slot = *value;
    return absl::OkStatus();
  };
  auto root = [&](const Json& object, const char* field, core::BlockRoot& into) -> absl::Status {
    std::optional<core::BlockRoot> value = Root(JsonMember(object, field));
    if (!value.has_value()) return Malformed(what, field);
    into = *value;
    return absl::OkStatus();
  };
  auto builder = [&](const Json& object) -> absl::Status {
    std::optional<uint64_t> value = Uint64(JsonMember(object, "builder_index"));
    if (!value.has_value()) return Malformed(what, "builder_index");
    out.builder = *value;
    return absl::OkStatus();
  };
  absl::Status status;
  if (what == "block") {
    out.kind = Kind::kBlock;
    status.Update(slot(body));
    status.Update(root(body, "block", out.root));
  } else if (what == "head" || what == "head_v2") {
    out.kind = Kind::kHead;
    status.Update(slot(body));
    status.Update(root(body, "block", out.root));
    if (const Json* payload = JsonMember(body, "payload_status");
        payload != nullptr && payload->is_string()) {
      out.payload_full = payload->get_ref<const std::string&>() == "full";
    }
  } else if (what == "chain_reorg") {
    out.kind = Kind::kReorg;
    status.Update(slot(body));
    status.Update(root(body, "new_head_block", out.root));
    status.Update(root(body, "old_head_block", out.old_root));
  } else if (what == "finalized_checkpoint") {
    out.kind = Kind::kFinalized;
    std::optional<uint64_t> epoch = Uint64(JsonMember(body, "epoch"));
    if (!epoch.has_value()) return Malformed(what, "epoch");
    out.epoch = *epoch;
  } else if (what == "execution_payload_bid") {
    out.kind = Kind::kBid;
    const Json* message = JsonMember(body, "message");
    if (message == nullptr) return Malformed(what, "message");
    status.Update(slot(*message));
    status.Update(builder(*message));
  } else if (what == "execution_payload") {
    out.kind = Kind::kPayload;
    status.Update(slot(body));
    status.Update(root(body, "block_root", out.root));
    status.Update(builder(body));
  } else if (what == "execution_payload_available") {
    out.kind = Kind::kPayloadAvailable;
    status.Update(slot(body));
    status.Update(root(body, "block_root", out.root));
  } else {
    return absl::NotFoundError(absl::StrCat("event '", what, "': not a topic the observer uses"));
  }
  if (!status.ok()) return status;
  return out;
}

}  // namespace breaker::sidecar
