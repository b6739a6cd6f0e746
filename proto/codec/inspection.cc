#include "proto/codec/inspection.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/input_bounds.h"
#include "core/relay_id.h"
#include "proto/codec/api_codec.h"

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

// A page token, before base64url: a format byte, the key's id, the listing, the position, then
// the MAC of all of that. A node id (128 bytes at most) makes a token of 227 characters.
constexpr char kTokenFormat = 1;
constexpr size_t kKeyIdBytes = 8;
constexpr size_t kMacBytes = SHA256_DIGEST_LENGTH;
constexpr size_t kTokenHeaderBytes = 1 + kKeyIdBytes + 1;

absl::string_view ListingName(PageTokens::Listing listing) {
  switch (listing) {
    case PageTokens::Listing::kBuilders:
      return "ListBuilders";
    case PageTokens::Listing::kNodes:
      return "ListNodes";
  }
  return "another listing";
}

absl::Status Refused(absl::string_view token, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("page_token \"", core::bounds::QuotePrefix(token), "\" ", why,
                   ": pass an answer's next_page_token unchanged, or start again from an empty "
                   "page_token (the first page)"));
}

}  // namespace

absl::StatusOr<PageTokens> PageTokens::Random() {
  std::string key(32, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1) {
    return absl::InternalError(
        "the system's random number generator gave no key for page tokens; check that "
        "/dev/urandom is readable");
  }
  return PageTokens(std::move(key));
}

PageTokens::PageTokens(std::string key) : key_(std::move(key)) {
  key_id_ = Mac("breaker page token key id").substr(0, kKeyIdBytes);
}

std::string PageTokens::Mac(absl::string_view data) const {
  unsigned char mac[kMacBytes];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &size);
  return std::string(reinterpret_cast<const char*>(mac), size);
}

std::string PageTokens::Seal(Listing listing, absl::string_view position) const {
  std::string sealed = absl::StrCat(absl::string_view(&kTokenFormat, 1), key_id_,
                                    std::string(1, static_cast<char>(listing)), position);
  sealed += Mac(sealed);
  return absl::WebSafeBase64Escape(sealed);
}

absl::StatusOr<std::optional<std::string>> PageTokens::Open(Listing listing,
                                                            absl::string_view token) const {
  if (token.empty()) return std::optional<std::string>();
  if (absl::Status bounded =
          core::bounds::CheckMaxBytes("page_token", token, core::bounds::kMaxPageTokenBytes);
      !bounded.ok()) {
    return bounded;
  }
  std::string sealed;
  if (!absl::WebSafeBase64Unescape(token, &sealed) ||
      sealed.size() < kTokenHeaderBytes + kMacBytes || sealed[0] != kTokenFormat) {
    return Refused(token, "is not one this breakerd gave out");
  }
  if (absl::string_view(sealed).substr(1, kKeyIdBytes) != key_id_) {
    return Refused(token,
                   "was given out by another breakerd process (this one has restarted since, or "
                   "another replica led then), and a page token lasts only as long as the "
                   "process that gave it out");
  }
  const absl::string_view content(sealed.data(), sealed.size() - kMacBytes);
  const std::string mac = Mac(content);
  if (CRYPTO_memcmp(mac.data(), sealed.data() + content.size(), kMacBytes) != 0) {
    return Refused(token, "was changed or cut after breakerd gave it out");
  }
  if (content[kTokenHeaderBytes - 1] != static_cast<char>(listing)) {
    return Refused(
        token, absl::StrCat("is a page token of another listing, not of ", ListingName(listing)));
  }
  return std::optional<std::string>(std::string(content.substr(kTokenHeaderBytes)));
}

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
                                                      const v1::ListBuildersRequest& request,
                                                      const PageTokens& tokens) {
  absl::StatusOr<std::optional<std::string>> after =
      tokens.Open(PageTokens::Listing::kBuilders, request.page_token());
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
  const std::string next =
      FillPage(builders, BuilderPageKey, *after, request.page_size(),
               [&](const v1::Builder& builder) { *response.add_builders() = builder; });
  if (!next.empty()) {
    response.set_next_page_token(tokens.Seal(PageTokens::Listing::kBuilders, next));
  }
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
                                                const std::function<void(v1::Node&)>& describe,
                                                const PageTokens& tokens) {
  absl::StatusOr<std::optional<std::string>> after =
      tokens.Open(PageTokens::Listing::kNodes, request.page_token());
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
  if (!next.empty()) response.set_next_page_token(tokens.Seal(PageTokens::Listing::kNodes, next));
  return response;
}

}  // namespace breaker::codec
