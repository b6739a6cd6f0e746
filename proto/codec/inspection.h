#ifndef PROTO_CODEC_INSPECTION_H_
#define PROTO_CODEC_INSPECTION_H_

// The Admin API's answers about the engine's state (ListBuilders, GetBuilder, ListRelays) and
// the paging that ListBuilders and ListNodes share. Pure functions of the state they are given:
// the caller holds whatever lock makes it one consistent snapshot.
//
// A page holds at most the request's page_size entries, kMaxPageEntries, and
// core::bounds::kMaxPageBytes of them (one entry at least, so that every page moves on). Its
// next_page_token names the last entry listed, sealed by PageTokens; empty after the last page.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "breaker/v1/breaker.pb.h"
#include "core/engine.h"
#include "core/types.h"

namespace breaker::codec {

// Entries of a page when the request asks for none, or for more.
inline constexpr uint32_t kMaxPageEntries = 1000;

// The page tokens of ListBuilders and ListNodes: opaque, and signed (HMAC-SHA256) with a key
// that lives as long as the process, so that a token is taken only from the process that gave
// it out and unchanged. A token names where its page ended, which a caller can neither choose
// nor read. Immutable; thread-safe.
class PageTokens {
 public:
  // A random key, made once per process (breakerd's fleet). INTERNAL when the system has no
  // randomness to give.
  static absl::StatusOr<PageTokens> Random();
  // Tokens under `key` (tests: two keys stand for two processes). REQUIRES: not empty.
  explicit PageTokens(std::string key);

  // Which rpc's pages a token belongs to.
  enum class Listing : char { kBuilders = 'b', kNodes = 'n' };

  // The token naming `position` (where a page of `listing` ended).
  std::string Seal(Listing listing, absl::string_view position) const;
  // The position a token of listing `listing` names; nullopt for an empty token (the first
  // page). INVALID_ARGUMENT naming page_token, saying to start again from an empty token, for
  // one past core::bounds::kMaxPageTokenBytes, one this process did not give out (another
  // process's, edited, cut) or another listing's.
  absl::StatusOr<std::optional<std::string>> Open(Listing listing, absl::string_view token) const;

 private:
  // HMAC-SHA256 of `data` under key_.
  std::string Mac(absl::string_view data) const;

  std::string key_;
  // Names the key in every token (a MAC of a constant, not the key), so that a token of
  // another process is told apart from a forged one.
  std::string key_id_;
};

// GetBuilder's answer. REQUIRES: not the self-build index.
breaker::v1::Builder DescribeBuilder(const core::Engine& engine, core::BuilderIndex builder);

// A page of ListBuilders: banned builders first, then by index. INVALID_ARGUMENT for a page
// token `tokens` did not give out (PageTokens::Open).
absl::StatusOr<breaker::v1::ListBuildersResponse> ListBuilders(
    const core::Engine& engine, const breaker::v1::ListBuildersRequest& request,
    const PageTokens& tokens);

// Every relay the engine knows or the operator banned, by identifier.
breaker::v1::ListRelaysResponse ListRelays(const core::Engine& engine);

// A page of ListNodes over `sorted_ids` (sorted, without repeats): `describe` fills in each
// listed node's entry, whose node_id is set. INVALID_ARGUMENT for a page token `tokens` did not
// give out (PageTokens::Open).
absl::StatusOr<breaker::v1::ListNodesResponse> ListNodes(
    const std::vector<std::string>& sorted_ids, const breaker::v1::ListNodesRequest& request,
    const std::function<void(breaker::v1::Node&)>& describe, const PageTokens& tokens);

}  // namespace breaker::codec

#endif  // PROTO_CODEC_INSPECTION_H_
