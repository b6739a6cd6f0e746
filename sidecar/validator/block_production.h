#ifndef SIDECAR_VALIDATOR_BLOCK_PRODUCTION_H_
#define SIDECAR_VALIDATOR_BLOCK_PRODUCTION_H_

// Block production as the validator client asks for it, rewritten to the fleet's policy: the
// pure part of the sidecar's validator-facing port (docs/sidecar.md, "The validator port").
//
// produceBlockV4 (Gloas, POST /eth/v4/validator/blocks/{slot}) carries a BuilderConfig
// (sidecar/ssz/builder_config.h) in JSON or SSZ. Each entry's auth signs only that entry, so the
// list and the top-level fields may be changed without the validators' keys:
//   - ALL_BUILDERS: an entry whose url is a banned relay is dropped; a banned builder's key is
//     dropped from builder_pubkeys, and an entry whose every key was banned is dropped whole (an
//     empty list means "any builder", which would let the banned builder back in). The top level
//     is left as sent.
//   - TRUSTED_ONLY: only trusted entries are kept (a trusted relay's, or one whose keys are all
//     trusted builders'); the top-level builder_boost_factor becomes 0 and min_bid 2^64-1, so that
//     P2P bids rank below the local build.
//   - SELF_BUILD: builders [], builder_boost_factor 0, min_bid 2^64-1.
// An entry's url is judged by its relay identifier (core/relay_id.h); a url naming one of the
// sidecar's own builder-API ports is judged as the upstream behind that port. A url that cannot
// be normalized cannot be judged, and is dropped.
//
// The body is read as the beacon API tells beacon nodes to: a malformed entry is ignored, so it
// is dropped here too. A body whose top level cannot be read is forwarded untouched in
// ALL_BUILDERS (the node refuses it as well), and replaced by the self-build BuilderConfig in the
// other modes, so that no refusal by the sidecar ever costs the slot and no builder slips past
// the policy. The answer is in the encoding received. A JSON answer copies the kept entries'
// bytes as they came and writes only what changes (sidecar/ssz/builder_config_scan.h): an entry
// that names its url or builder_pubkeys twice is therefore malformed, since the node could read
// the value the sidecar did not judge, and every value of a top-level member named twice is
// replaced.
//
// produceBlockV3 (GET /eth/v3/validator/blocks/{slot}): in SELF_BUILD, builder_boost_factor=0
// replaces any value in the query; other modes leave it as sent.
//
// Pure; thread-safe.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "core/policy.h"

namespace breaker::sidecar::validator {

// Which block production a request is.
enum class BlockRoute {
  kProduceBlockV3,  // GET /eth/v3/validator/blocks/{slot}
  kProduceBlockV4,  // POST /eth/v4/validator/blocks/{slot}
  kOther,
};

// Classifies a request by its method and path (without the query).
BlockRoute ClassifyBlockRoute(absl::string_view method, absl::string_view path);

// An upstream served on one of the sidecar's builder-API ports.
struct OwnPortUpstream {
  // Its normalized relay identifier.
  std::string relay_id;
  // Trusted by the sidecar's configuration.
  bool trusted = false;
};

// What the rewrite applies: the policy's decisions about relays and builders' keys.
struct RewriteRules {
  core::Mode mode = core::Mode::kAllBuilders;
  // Normalized relay identifiers.
  absl::flat_hash_set<std::string> banned_relays;
  absl::flat_hash_set<std::string> trusted_relays;
  // BLS public keys, 48 bytes each: those of banned builders, and of trusted ones.
  absl::flat_hash_set<std::string> banned_keys;
  absl::flat_hash_set<std::string> trusted_keys;
  // The sidecar's builder-API ports by normalized url ("http://127.0.0.1:18550").
  absl::flat_hash_map<std::string, OwnPortUpstream> own_ports;
};

// The rules of `policy` (its mode, relays, and the keys it carries of its banned and trusted
// builders), with the sidecar's `own_ports`. A banned or trusted builder whose key the policy
// does not carry (breakerd never saw it bid) cannot be matched in builder_pubkeys.
RewriteRules RulesOf(const core::Policy& policy,
                     absl::flat_hash_map<std::string, OwnPortUpstream> own_ports);

struct V4Rewrite {
  // The body to forward; the one received when `changed` is false.
  std::string body;
  bool changed = false;
  // The top level could not be read (the body was forwarded untouched, or replaced by the
  // self-build config; `changed` tells which).
  bool unreadable = false;
  // Entries received, kept, dropped as malformed, dropped by the policy; keys dropped from
  // entries that were kept.
  size_t entries = 0;
  size_t kept = 0;
  size_t malformed = 0;
  size_t refused = 0;
  size_t keys_dropped = 0;
  // Why the top level could not be read; empty when it could.
  std::string error;
};

// Rewrites a produceBlockV4 body of `content_type` (application/octet-stream: SSZ; anything
// else: JSON) to `rules`.
V4Rewrite RewriteProduceBlockV4(absl::string_view body, absl::string_view content_type,
                                const RewriteRules& rules);

// The query (without '?') a produceBlockV3 is forwarded with in `mode`. Every other parameter
// keeps its place and spelling.
std::string RewriteProduceBlockV3Query(absl::string_view query, core::Mode mode);

// Where the block a beacon node produced takes its payload from.
enum class PayloadSource {
  kBuilderApi,  // a builder-API bid (V4: Eth-Builder-Url; V3: a blinded block)
  kP2p,         // a P2P bid (V4 only: no builder url, no payload, and one was asked for)
  kLocal,       // the node's own execution payload
  kUnknown,     // the headers do not tell (e.g. V4 asked not to include the payload)
};
// "builder_api", "p2p", "local", "unknown".
absl::string_view PayloadSourceName(PayloadSource source);

// What the answer's headers say about who won.
struct BlockOutcome {
  PayloadSource source = PayloadSource::kUnknown;
  // Eth-Builder-Url; empty when absent.
  std::string builder_url;
  // Eth-Execution-Payload-Value (Wei) and Eth-Consensus-Block-Value (Wei), as sent.
  std::string payload_value;
  std::string consensus_value;
};

// Reads a successful block production answer's headers; `header` returns a header's value
// (empty when absent). `include_payload` is the V4 request's query parameter.
BlockOutcome ReadBlockOutcome(BlockRoute route, bool include_payload,
                              const std::function<std::string(absl::string_view)>& header);

}  // namespace breaker::sidecar::validator

#endif  // SIDECAR_VALIDATOR_BLOCK_PRODUCTION_H_
