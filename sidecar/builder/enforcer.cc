#include "sidecar/builder/enforcer.h"

#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/mutex.h"
#include "glog/logging.h"
#include "nlohmann/json.hpp"
#include "sidecar/ssz/beacon_block.h"

namespace breaker::sidecar {
namespace {

using Json = nlohmann::json;

constexpr int kMaxJsonDepth = 32;

// Parses `body` as JSON, refusing one nested too deep; a discarded value when it is not JSON.
Json ParseJson(absl::string_view body) {
  if (JsonTooDeep(body, kMaxJsonDepth)) return Json::value_t::discarded;
  return Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
}

const Json* Member(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string StringMember(const Json& object, const char* key) {
  const Json* value = Member(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

uint64_t LittleEndian64(const char* p) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(p[i]);
  return value;
}

// An SSZ container that starts with a variable-size `message` and a BLS signature (96 bytes)
// holds the message's offset (4 bytes) then the signature, so the message starts at 100.
constexpr uint32_t kSignedMessageOffset = 100;

// The start of a signed container's message, when `body` holds at least `fixed_bytes` of it.
const char* SignedSszMessage(absl::string_view body, size_t fixed_bytes) {
  if (body.size() < 4) return nullptr;
  uint32_t offset = 0;
  for (int i = 3; i >= 0; --i) offset = (offset << 8) | static_cast<unsigned char>(body[i]);
  if (offset != kSignedMessageOffset || body.size() < offset + fixed_bytes) return nullptr;
  return body.data() + offset;
}

}  // namespace

absl::string_view EndpointName(Endpoint endpoint) {
  switch (endpoint) {
    case Endpoint::kStatus:
      return "status";
    case Endpoint::kRegisterValidators:
      return "register_validators";
    case Endpoint::kGetHeader:
      return "get_header";
    case Endpoint::kSubmitBlindedBlock:
      return "submit_blinded_block";
    case Endpoint::kGetExecutionPayloadBid:
      return "get_execution_payload_bid";
    case Endpoint::kSubmitBuilderPreferences:
      return "submit_builder_preferences";
    case Endpoint::kSubmitBeaconBlock:
      return "submit_beacon_block";
    case Endpoint::kOther:
      return "other";
  }
  return "other";
}

Route ClassifyRoute(absl::string_view method, absl::string_view path) {
  Route route;
  const std::vector<absl::string_view> parts = absl::StrSplit(path, '/');
  // "", "eth", "v1", "builder", ...
  if (parts.size() < 5 || !parts[0].empty() || parts[1] != "eth" || parts[3] != "builder") {
    return route;
  }
  const absl::string_view version = parts[2];
  const absl::string_view name = parts[4];
  if (method == "GET" && version == "v1" && name == "status" && parts.size() == 5) {
    route.endpoint = Endpoint::kStatus;
  } else if (method == "POST" && version == "v1" && name == "validators" && parts.size() == 5) {
    route.endpoint = Endpoint::kRegisterValidators;
  } else if (method == "GET" && version == "v1" && name == "header" && parts.size() == 8) {
    core::Slot slot = 0;
    if (absl::SimpleAtoi(parts[5], &slot)) {
      route.endpoint = Endpoint::kGetHeader;
      route.slot = slot;
    }
  } else if (method == "POST" && (version == "v1" || version == "v2") && name == "blinded_blocks" &&
             parts.size() == 5) {
    route.endpoint = Endpoint::kSubmitBlindedBlock;
  } else if (method == "POST" && version == "v1" && name == "execution_payload_bid" &&
             parts.size() == 9) {
    core::Slot slot = 0;
    if (absl::SimpleAtoi(parts[5], &slot)) {
      route.endpoint = Endpoint::kGetExecutionPayloadBid;
      route.slot = slot;
    }
  } else if (method == "POST" && version == "v1" && name == "builder_preferences" &&
             parts.size() == 6) {
    route.endpoint = Endpoint::kSubmitBuilderPreferences;
  } else if (method == "POST" && version == "v1" && name == "beacon_blocks" && parts.size() == 5) {
    route.endpoint = Endpoint::kSubmitBeaconBlock;
  }
  return route;
}

absl::string_view RefusalCauseLabel(RefusalCause cause) {
  switch (cause) {
    case RefusalCause::kSelfBuild:
      return "self_build";
    case RefusalCause::kRelayBanned:
      return "relay_banned";
    case RefusalCause::kNotTrusted:
      return "not_trusted";
    case RefusalCause::kBuilderBanned:
      return "builder_banned";
    case RefusalCause::kUnreadableBid:
      return "unreadable_bid";
  }
  return "unknown";
}

std::optional<std::string> RefusalReason(const core::Policy& policy,
                                         const UpstreamIdentity& upstream, RefusalCause* cause) {
  RefusalCause ignored;
  if (cause == nullptr) cause = &ignored;
  if (policy.mode == core::Mode::kSelfBuild) {
    *cause = RefusalCause::kSelfBuild;
    return absl::StrCat("mode SELF_BUILD: ", policy.mode_reason);
  }
  if (auto it = policy.banned_relays.find(upstream.relay_id); it != policy.banned_relays.end()) {
    *cause = RefusalCause::kRelayBanned;
    return absl::StrCat("relay ", upstream.relay_id, " is banned (",
                        core::BanKindName(it->second.kind), "): ", it->second.reason);
  }
  if (policy.mode == core::Mode::kTrustedOnly && !upstream.trusted &&
      !policy.trusted_relays.contains(upstream.relay_id)) {
    *cause = RefusalCause::kNotTrusted;
    return absl::StrCat("mode TRUSTED_ONLY and relay ", upstream.relay_id, " is not trusted");
  }
  return std::nullopt;
}

namespace {

void CountRefusal(Enforcer::Counters& counters, RefusalCause cause) {
  ++counters.refused;
  ++counters.refused_by_cause[static_cast<size_t>(cause)];
}

}  // namespace

bool JsonTooDeep(absl::string_view json, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : json) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

absl::StatusOr<BlindedBlock> ParseBlindedBlock(absl::string_view body,
                                               absl::string_view content_type,
                                               const ssz::Preset& preset) {
  BlindedBlock block;
  absl::StatusOr<ssz::BlockRoot> root;
  if (absl::StartsWithIgnoreCase(content_type, "application/octet-stream")) {
    root = ssz::SignedBlockRootFromSsz(body, ssz::BlockKind::kBlinded, std::nullopt, preset);
    if (!root.ok()) return root.status();
    // A valid block: its message (slot first) is in place.
    block.slot = LittleEndian64(SignedSszMessage(body, 8));
  } else {
    const Json json = ParseJson(body);
    if (json.is_discarded()) return absl::InvalidArgumentError("the body is not JSON");
    root = ssz::SignedBlockRootFromJson(json, ssz::BlockKind::kBlinded, std::nullopt, preset);
    if (!root.ok()) return root.status();
    // A valid block: every member below is in place.
    const Json* signed_block = Member(json, "message") != nullptr ? &json : Member(json, "data");
    const Json& message = *Member(*signed_block, "message");
    if (!absl::SimpleAtoi(StringMember(message, "slot"), &block.slot)) {
      return absl::InvalidArgumentError("message.slot: not a uint64");
    }
    const Json& header = *Member(*Member(message, "body"), "execution_payload_header");
    block.block_hash = absl::AsciiStrToLower(StringMember(header, "block_hash"));
  }
  block.root = core::BlockRootFromBytes(
      absl::string_view(reinterpret_cast<const char*>(root->root.data()), root->root.size()));
  return block;
}

std::string HeaderBlockHash(absl::string_view body) {
  const Json json = ParseJson(body);
  if (json.is_discarded()) return "";
  const Json* data = Member(json, "data");
  const Json* message = data == nullptr ? nullptr : Member(*data, "message");
  const Json* header = message == nullptr ? nullptr : Member(*message, "header");
  return header == nullptr ? "" : absl::AsciiStrToLower(StringMember(*header, "block_hash"));
}

std::optional<core::BuilderIndex> BidBuilderIndex(absl::string_view body,
                                                  absl::string_view content_type) {
  if (absl::StartsWithIgnoreCase(content_type, "application/octet-stream")) {
    // ExecutionPayloadBid: parent_block_hash, parent_block_root, block_hash, prev_randao (32
    // each), fee_recipient (20), gas_limit (8), builder_index (8), slot, value,
    // execution_payment (8 each), the blob commitments' offset (4), execution_requests_root
    // (32): 224 bytes before the commitments.
    const char* message = SignedSszMessage(body, 224);
    if (message == nullptr) return std::nullopt;
    return LittleEndian64(message + 156);
  }
  const Json json = ParseJson(body);
  if (json.is_discarded()) return std::nullopt;
  const Json* signed_bid = &json;
  if (const Json* data = Member(json, "data"); data != nullptr) signed_bid = data;
  const Json* message = Member(*signed_bid, "message");
  const Json* index = message == nullptr ? nullptr : Member(*message, "builder_index");
  if (index == nullptr) return std::nullopt;
  core::BuilderIndex builder = 0;
  if (index->is_number_unsigned()) return index->get<core::BuilderIndex>();
  if (index->is_string() && absl::SimpleAtoi(index->get<std::string>(), &builder)) return builder;
  return std::nullopt;
}

Enforcer::Enforcer(client::BreakerClient& client, std::vector<UpstreamIdentity> upstreams)
    : client_(client), upstreams_(std::move(upstreams)), state_(upstreams_.size()) {}

std::optional<std::string> Enforcer::Refuse(size_t index, const Route& route) {
  if (route.endpoint != Endpoint::kGetHeader &&
      route.endpoint != Endpoint::kGetExecutionPayloadBid) {
    return std::nullopt;
  }
  const std::shared_ptr<const client::PolicySnapshot> snapshot = client_.policy();
  RefusalCause cause;
  std::optional<std::string> reason = RefusalReason(snapshot->policy, upstreams_.at(index), &cause);
  if (reason) {
    MutexLock lock(&mu_);
    CountRefusal(state_.at(index).counters, cause);
  }
  return reason;
}

void Enforcer::OnForwarded(size_t index, bool failed) {
  MutexLock lock(&mu_);
  Counters& counters = state_.at(index).counters;
  ++(failed ? counters.upstream_errors : counters.forwarded);
}

bool Enforcer::OnHeaderAnswered(size_t index, core::Slot slot, int status, absl::string_view body,
                                absl::string_view content_type) {
  if (status != 200) return true;
  // An SSZ header (mev-boost may ask for one) gives no block hash: matched by slot alone.
  const bool ssz = absl::StartsWithIgnoreCase(content_type, "application/octet-stream");
  const bool readable = ssz || !ParseJson(body).is_discarded();
  Header header{slot, ssz ? std::string() : HeaderBlockHash(body)};
  MutexLock lock(&mu_);
  PerUpstream& upstream = state_.at(index);
  if (!readable) {
    ++upstream.counters.malformed_answers;
    return false;
  }
  ++upstream.counters.headers_seen;
  upstream.headers.push_back(std::move(header));
  while (upstream.headers.size() > kMaxRememberedHeaders) upstream.headers.pop_front();
  return true;
}

std::optional<std::string> Enforcer::OnBidAnswered(size_t index, core::Slot slot, int status,
                                                   absl::string_view body,
                                                   absl::string_view content_type) {
  if (status != 200) return std::nullopt;
  const UpstreamIdentity& identity = upstreams_.at(index);
  const std::optional<core::BuilderIndex> builder = BidBuilderIndex(body, content_type);
  if (!builder) {
    MutexLock lock(&mu_);
    Counters& counters = state_.at(index).counters;
    ++counters.malformed_answers;
    CountRefusal(counters, RefusalCause::kUnreadableBid);
    return std::string("the bid's builder index cannot be read, so the policy cannot be applied");
  }
  client_.Report(slot, core::BidSeen{*builder, identity.relay_id, ""});
  // The policy may have changed while the upstream took its time.
  const std::shared_ptr<const client::PolicySnapshot> snapshot = client_.policy();
  const core::Policy& policy = snapshot->policy;
  RefusalCause cause;
  std::optional<std::string> reason = RefusalReason(policy, identity, &cause);
  if (!reason) {
    if (auto it = policy.banned_builders.find(*builder); it != policy.banned_builders.end()) {
      cause = RefusalCause::kBuilderBanned;
      reason = absl::StrCat("builder ", *builder, " is banned (",
                            core::BanKindName(it->second.kind), "): ", it->second.reason);
    }
  }
  MutexLock lock(&mu_);
  Counters& counters = state_.at(index).counters;
  ++counters.bids_seen;
  if (reason) CountRefusal(counters, cause);
  return reason;
}

bool Enforcer::OnBlindedBlockAnswered(size_t index, absl::string_view request_body,
                                      absl::string_view content_type, bool failed) {
  if (!failed) return false;
  ssz::Preset preset;
  {
    MutexLock lock(&mu_);
    preset = preset_;
  }
  const absl::StatusOr<BlindedBlock> block = ParseBlindedBlock(request_body, content_type, preset);
  if (!block.ok()) {
    {
      MutexLock lock(&mu_);
      ++state_.at(index).counters.unreadable_blocks;
    }
    LOG(WARNING) << "a reveal via " << upstreams_.at(index).relay_id
                 << " failed, and its block's root cannot be computed, so the failure is not "
                    "reported: "
                 << block.status().message();
    return false;
  }
  {
    MutexLock lock(&mu_);
    PerUpstream& upstream = state_.at(index);
    bool signed_for_it = false;
    for (const Header& header : upstream.headers) {
      if (header.slot != block->slot) continue;
      // Unknown on either side (SSZ): the slot alone matches.
      if (header.block_hash.empty() || block->block_hash.empty() ||
          header.block_hash == block->block_hash) {
        signed_for_it = true;
        break;
      }
    }
    if (!signed_for_it) return false;
    ++upstream.counters.reveal_failures;
  }
  client_.Report(block->slot, core::RelayRevealMissing{upstreams_.at(index).relay_id, block->root});
  return true;
}

void Enforcer::SetPreset(const ssz::Preset& preset) {
  MutexLock lock(&mu_);
  preset_ = preset;
}

Enforcer::Counters Enforcer::counters(size_t index) const {
  MutexLock lock(&mu_);
  return state_.at(index).counters;
}

}  // namespace breaker::sidecar
