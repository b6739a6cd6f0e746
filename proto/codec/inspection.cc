#include "proto/codec/inspection.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/input_bounds.h"
#include "core/relay_id.h"
#include "proto/codec/engine_codec.h"

namespace breaker::codec {
namespace {

namespace v1 = ::breaker::v1;

// The entries of `sorted` after the one whose key is `after` (all of them when `after` is
// empty) into `page`, stopping at `page_size` entries or before kMaxPageBytes; returns the
// next page's token (the last entry's key), or empty after the last entry.
template <typename Entry, typename KeyOf, typename Add>
std::string FillPage(const std::vector<Entry>& sorted, KeyOf key_of,
                     const std::optional<std::string>& after, uint32_t page_size, Add add) {
  const uint32_t limit =
      page_size == 0 || page_size > kMaxPageEntries ? kMaxPageEntries : page_size;
  auto it = sorted.begin();
  if (after.has_value()) {
    it = std::upper_bound(
        sorted.begin(), sorted.end(), *after,
        [&](const std::string& key, const Entry& entry) { return key < key_of(entry); });
  }
  size_t bytes = 0;
  uint32_t count = 0;
  for (; it != sorted.end(); ++it) {
    const size_t size = it->ByteSizeLong();
    if (count == limit || (count > 0 && bytes + size > core::bounds::kMaxPageBytes)) break;
    bytes += size;
    ++count;
    add(*it);
  }
  return it == sorted.end() || count == 0 ? "" : key_of(*std::prev(it));
}

// A builder's place in ListBuilders: banned first, then by index, as text that sorts the
// same way ("0:" banned, "1:" not, then the index in 20 digits).
std::string BuilderPageKey(const v1::Builder& builder) {
  return absl::StrCat(builder.has_ban() ? "0:" : "1:",
                      absl::StrFormat("%020u", builder.builder_index()));
}

// ListNodes' page tokens: the last node id listed, after this prefix.
constexpr absl::string_view kNodeTokenPrefix = "n:";

// The key a page token names (a BuilderPageKey, or a node id), or INVALID_ARGUMENT when it is
// not one breakerd gave out.
absl::StatusOr<std::optional<std::string>> ParsePageToken(absl::string_view token,
                                                          bool is_builder_key) {
  if (token.empty()) return std::optional<std::string>();
  if (absl::Status bounded =
          core::bounds::CheckMaxBytes("page_token", token, core::bounds::kMaxPageTokenBytes);
      !bounded.ok()) {
    return bounded;
  }
  absl::string_view key = token;
  const bool well_formed =
      (is_builder_key
           ? token.size() == 22 && (token[0] == '0' || token[0] == '1') && token[1] == ':' &&
                 std::all_of(token.begin() + 2, token.end(), absl::ascii_isdigit)
           : absl::ConsumePrefix(&key, kNodeTokenPrefix) && !key.empty());
  if (!well_formed) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_token \"", core::bounds::QuotePrefix(token),
                     "\" is not one this breakerd gave out; pass an answer's next_page_token, "
                     "or none for the first page"));
  }
  return std::optional<std::string>(std::string(key));
}

}  // namespace

v1::Builder DescribeBuilder(const core::Engine& engine, core::BuilderIndex builder) {
  v1::Builder info;
  info.set_builder_index(builder);
  const core::Policy& policy = engine.policy();
  if (auto record = engine.builders().find(builder); record != engine.builders().end()) {
    info.set_failed(record->second.failures.failed);
    info.set_backoff_epoch(record->second.failures.backoff_epoch);
  }
  if (auto key = engine.builder_keys().find(builder); key != engine.builder_keys().end()) {
    info.set_pubkey(key->second.pubkey);
  }
  if (auto ban = policy.banned_builders.find(builder); ban != policy.banned_builders.end()) {
    *info.mutable_ban() = BanToProto(ban->second);
  }
  bool trusted = policy.trusted_builders.contains(builder);
  for (const std::string& relay : engine.RelaysServing(builder)) {
    trusted = trusted || policy.trusted_relays.contains(relay);
    info.add_relays(relay);
  }
  info.set_trusted(trusted);
  return info;
}

absl::StatusOr<v1::ListBuildersResponse> ListBuilders(const core::Engine& engine,
                                                      const v1::ListBuildersRequest& request) {
  absl::StatusOr<std::optional<std::string>> after =
      ParsePageToken(request.page_token(), /*is_builder_key=*/true);
  if (!after.ok()) return after.status();
  const core::Policy& policy = engine.policy();
  absl::flat_hash_set<core::BuilderIndex> indices;
  for (const auto& [builder, record] : engine.builders()) indices.insert(builder);
  for (const auto& [builder, ban] : policy.banned_builders) indices.insert(builder);
  for (core::BuilderIndex builder : engine.config().trusted_builders) indices.insert(builder);
  // Trusted by an operator's override too, not only by the configuration.
  for (core::BuilderIndex builder : policy.trusted_builders) indices.insert(builder);
  indices.erase(core::kSelfBuild);
  std::vector<v1::Builder> builders;
  for (core::BuilderIndex builder : indices) {
    v1::Builder info = DescribeBuilder(engine, builder);
    if (request.banned_only() && !info.has_ban()) continue;
    builders.push_back(std::move(info));
  }
  std::sort(builders.begin(), builders.end(), [](const v1::Builder& a, const v1::Builder& b) {
    return std::make_pair(!a.has_ban(), a.builder_index()) <
           std::make_pair(!b.has_ban(), b.builder_index());
  });
  v1::ListBuildersResponse response;
  response.set_next_page_token(
      FillPage(builders, BuilderPageKey, *after, request.page_size(),
               [&](const v1::Builder& builder) { *response.add_builders() = builder; }));
  return response;
}

v1::ListRelaysResponse ListRelays(const core::Engine& engine) {
  v1::ListRelaysResponse response;
  const core::Policy& policy = engine.policy();
  std::vector<std::string> ids;
  for (const auto& [id, relay] : engine.relays()) ids.push_back(id);
  // A relay the operator banned is listed before any bid came through it.
  for (const auto& [id, ban] : policy.banned_relays) {
    if (!engine.relays().contains(id)) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  absl::flat_hash_set<std::string> configured;
  for (const core::RelayConfig& relay : engine.config().relays) {
    absl::StatusOr<std::string> id = core::NormalizeRelayId(relay.identifier);
    if (id.ok()) configured.insert(*id);
  }
  for (const std::string& id : ids) {
    auto record = engine.relays().find(id);
    v1::Relay* relay = response.add_relays();
    relay->set_relay(id);
    relay->set_configured(configured.contains(id));
    relay->set_trusted(policy.trusted_relays.contains(id));
    if (auto ban = policy.banned_relays.find(id); ban != policy.banned_relays.end()) {
      *relay->mutable_ban() = BanToProto(ban->second);
    }
    for (core::BuilderIndex member : engine.RelayMembers(id)) relay->add_builder_indices(member);
    if (record != engine.relays().end()) {
      relay->set_last_seen_epoch(record->second.last_seen_epoch);
    }
  }
  return response;
}

absl::StatusOr<v1::ListNodesResponse> ListNodes(const std::vector<std::string>& sorted_ids,
                                                const v1::ListNodesRequest& request,
                                                const std::function<void(v1::Node&)>& describe) {
  absl::StatusOr<std::optional<std::string>> after =
      ParsePageToken(request.page_token(), /*is_builder_key=*/false);
  if (!after.ok()) return after.status();
  // Only the ids that can be on the page are described.
  auto first = sorted_ids.begin();
  if (after->has_value()) first = std::upper_bound(sorted_ids.begin(), sorted_ids.end(), **after);
  std::vector<v1::Node> nodes;
  for (auto it = first; it != sorted_ids.end() && nodes.size() < kMaxPageEntries; ++it) {
    v1::Node& node = nodes.emplace_back();
    node.set_node_id(*it);
    describe(node);
  }
  v1::ListNodesResponse response;
  std::string next = FillPage(
      nodes, [](const v1::Node& node) { return node.node_id(); }, std::nullopt, request.page_size(),
      [&](const v1::Node& node) { *response.add_nodes() = node; });
  // The page may also end where the ids described ran out.
  if (next.empty() && static_cast<size_t>(sorted_ids.end() - first) > nodes.size()) {
    next = nodes.back().node_id();
  }
  if (!next.empty()) response.set_next_page_token(absl::StrCat(kNodeTokenPrefix, next));
  return response;
}

}  // namespace breaker::codec
