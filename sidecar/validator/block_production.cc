#include "sidecar/validator/block_production.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/relay_id.h"
#include "nlohmann/json.hpp"
#include "sidecar/ssz/builder_config.h"
#include "sidecar/ssz/builder_config_scan.h"

namespace breaker::sidecar::validator {
namespace {

constexpr uint64_t kNoBidIsEnough = UINT64_MAX;
constexpr absl::string_view kSszContentType = "application/octet-stream";

bool IsSsz(absl::string_view content_type) {
  const absl::string_view media = content_type.substr(0, content_type.find(';'));
  return absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(media), kSszContentType);
}

// Whether the path is /eth/v{version}/validator/blocks/{slot}.
bool IsBlocksPath(absl::string_view path, absl::string_view version) {
  const std::string prefix = absl::StrCat("/eth/", version, "/validator/blocks/");
  if (!absl::StartsWith(path, prefix)) return false;
  const absl::string_view slot = path.substr(prefix.size());
  return !slot.empty() && slot.find('/') == absl::string_view::npos;
}

// What becomes of one entry.
struct Verdict {
  bool keep = false;
  // The indices of the builder_pubkeys kept, when `keep`.
  std::vector<size_t> kept_keys;
};

// The relay an entry's url reaches, as the policy knows it; nullopt when the url cannot be
// normalized.
struct EntryRelay {
  bool banned = false;
  bool trusted = false;
};

std::optional<EntryRelay> RelayOf(absl::string_view url, const RewriteRules& rules) {
  absl::StatusOr<std::string> id = core::NormalizeRelayId(url);
  if (!id.ok()) return std::nullopt;
  EntryRelay relay;
  std::string relay_id = *std::move(id);
  const auto own = rules.own_ports.find(relay_id);
  if (own != rules.own_ports.end()) {
    relay.trusted = own->second.trusted;
    relay_id = own->second.relay_id;
  }
  relay.banned = rules.banned_relays.contains(relay_id);
  relay.trusted = relay.trusted || rules.trusted_relays.contains(relay_id);
  return relay;
}

Verdict Judge(const std::string& url, const std::vector<std::string>& keys,
              const RewriteRules& rules) {
  Verdict verdict;
  if (rules.mode == core::Mode::kSelfBuild) return verdict;
  const std::optional<EntryRelay> relay = RelayOf(url, rules);
  if (!relay.has_value() || relay->banned) return verdict;
  // Through an untrusted relay in TRUSTED_ONLY, only trusted builders' keys may stay.
  const bool keys_must_be_trusted = rules.mode == core::Mode::kTrustedOnly && !relay->trusted;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& key = keys[i];
    if (rules.banned_keys.contains(key)) continue;
    if (keys_must_be_trusted && !rules.trusted_keys.contains(key)) continue;
    verdict.kept_keys.push_back(i);
  }
  // An empty list means any builder: an entry whose every key went must go whole, and one that
  // had none may stay only where any builder may.
  verdict.keep = verdict.kept_keys.empty() ? keys.empty() && !keys_must_be_trusted : true;
  return verdict;
}

// The counts of the verdict on an entry of `keys` keys.
void Count(size_t keys, const Verdict& verdict, V4Rewrite& out) {
  if (!verdict.keep) {
    ++out.refused;
    return;
  }
  ++out.kept;
  out.keys_dropped += keys - verdict.kept_keys.size();
}

bool RanksP2pDown(core::Mode mode) { return mode != core::Mode::kAllBuilders; }

ssz::BuilderConfig SelfBuildConfig() {
  ssz::BuilderConfig config;
  config.min_bid = kNoBidIsEnough;
  config.builder_boost_factor = 0;
  return config;
}

// The top level could not be read: untouched in ALL_BUILDERS, the self-build config otherwise.
V4Rewrite Unreadable(absl::string_view body, bool ssz, const RewriteRules& rules,
                     std::string error) {
  V4Rewrite out;
  out.unreadable = true;
  out.error = std::move(error);
  if (rules.mode == core::Mode::kAllBuilders) {
    out.body = std::string(body);
    return out;
  }
  out.changed = true;
  out.body = ssz ? ssz::BuilderConfigToSsz(SelfBuildConfig())
                 : ssz::BuilderConfigToJson(SelfBuildConfig()).dump();
  return out;
}

V4Rewrite RewriteSsz(absl::string_view body, const RewriteRules& rules) {
  absl::StatusOr<ssz::BuilderConfigSszParts> parts = ssz::SplitBuilderConfigSsz(body);
  if (!parts.ok()) return Unreadable(body, true, rules, std::string(parts.status().message()));
  V4Rewrite out;
  out.entries = parts->builders.size();
  ssz::BuilderConfig config;
  config.min_bid = parts->min_bid;
  config.builder_boost_factor = parts->builder_boost_factor;
  for (absl::string_view encoded : parts->builders) {
    absl::StatusOr<ssz::BuilderEntry> entry = ssz::BuilderEntryFromSsz(encoded);
    if (!entry.ok()) {
      ++out.malformed;
      continue;
    }
    const Verdict verdict = Judge(entry->url, entry->builder_pubkeys, rules);
    Count(entry->builder_pubkeys.size(), verdict, out);
    if (!verdict.keep) continue;
    std::vector<std::string> keys;
    for (size_t i : verdict.kept_keys) keys.push_back(std::move(entry->builder_pubkeys[i]));
    entry->builder_pubkeys = std::move(keys);
    config.builders.push_back(*std::move(entry));
  }
  if (RanksP2pDown(rules.mode)) {
    config.min_bid = kNoBidIsEnough;
    config.builder_boost_factor = 0;
  }
  out.body = ssz::BuilderConfigToSsz(config);
  out.changed = out.body != body;
  if (!out.changed) out.body = std::string(body);
  return out;
}

// A piece of the answer: bytes [begin, end) of the body replaced by `text`.
struct Splice {
  ssz::JsonSpan span;
  std::string text;
};

// The body with `splices` (in order, apart) made.
std::string Spliced(absl::string_view body, const std::vector<Splice>& splices) {
  std::string out;
  size_t at = 0;
  for (const Splice& splice : splices) {
    absl::StrAppend(&out, body.substr(at, splice.span.begin - at), splice.text);
    at = splice.span.end;
  }
  absl::StrAppend(&out, body.substr(at));
  return out;
}

absl::string_view Bytes(absl::string_view body, ssz::JsonSpan span) {
  return body.substr(span.begin, span.end - span.begin);
}

// A kept entry as it came, but for its builder_pubkeys narrowed to `kept_keys` (each key as it
// was spelled).
void AppendEntry(absl::string_view body, const ssz::ScannedBuilderEntry& entry,
                 const std::vector<size_t>& kept_keys, std::string& out) {
  if (kept_keys.size() == entry.builder_pubkeys.size()) {
    absl::StrAppend(&out, Bytes(body, entry.bytes));
    return;
  }
  absl::StrAppend(&out, body.substr(entry.bytes.begin, entry.keys_array.begin - entry.bytes.begin),
                  "[");
  for (size_t i = 0; i < kept_keys.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ",", Bytes(body, entry.key_bytes[kept_keys[i]]));
  }
  absl::StrAppend(&out, "]",
                  body.substr(entry.keys_array.end, entry.bytes.end - entry.keys_array.end));
}

// The kept entries' bytes are copied as they came, and only what changes is written: the
// builders array, and in the modes that rank P2P bids down, the top-level numbers. A member the
// body names more than once has each of its values replaced, whichever one the node reads.
V4Rewrite RewriteJson(absl::string_view body, const RewriteRules& rules) {
  absl::StatusOr<ssz::ScannedBuilderConfig> config = ssz::ScanBuilderConfigJson(body);
  if (!config.ok()) return Unreadable(body, false, rules, std::string(config.status().message()));
  V4Rewrite out;
  out.entries = config->builders.size();
  std::string builders = "[";
  for (const ssz::ScannedBuilderEntry& entry : config->builders) {
    if (!entry.well_formed) {
      ++out.malformed;
      continue;
    }
    const Verdict verdict = Judge(entry.url, entry.builder_pubkeys, rules);
    Count(entry.builder_pubkeys.size(), verdict, out);
    if (!verdict.keep) continue;
    if (builders.size() > 1) builders.push_back(',');
    AppendEntry(body, entry, verdict.kept_keys, builders);
  }
  builders.push_back(']');
  const bool top_changes = RanksP2pDown(rules.mode);
  out.changed = top_changes || out.kept != out.entries || out.keys_dropped > 0 ||
                config->builders_values.size() > 1;
  if (!out.changed) {
    out.body = std::string(body);
    return out;
  }
  std::vector<Splice> splices;
  for (ssz::JsonSpan span : config->builders_values) splices.push_back({span, builders});
  if (top_changes) {
    for (ssz::JsonSpan span : config->min_bid_values) {
      splices.push_back({span, absl::StrCat("\"", kNoBidIsEnough, "\"")});
    }
    for (ssz::JsonSpan span : config->builder_boost_factor_values) {
      splices.push_back({span, "\"0\""});
    }
  }
  std::sort(splices.begin(), splices.end(),
            [](const Splice& a, const Splice& b) { return a.span.begin < b.span.begin; });
  out.body = Spliced(body, splices);
  return out;
}

}  // namespace

BlockRoute ClassifyBlockRoute(absl::string_view method, absl::string_view path) {
  if (method == "GET" && IsBlocksPath(path, "v3")) return BlockRoute::kProduceBlockV3;
  if (method == "POST" && IsBlocksPath(path, "v4")) return BlockRoute::kProduceBlockV4;
  return BlockRoute::kOther;
}

RewriteRules RulesOf(const core::Policy& policy,
                     absl::flat_hash_map<std::string, OwnPortUpstream> own_ports) {
  RewriteRules rules;
  rules.mode = policy.mode;
  for (const auto& [relay, ban] : policy.banned_relays) rules.banned_relays.insert(relay);
  rules.trusted_relays.insert(policy.trusted_relays.begin(), policy.trusted_relays.end());
  for (const auto& [builder, ban] : policy.banned_builders) {
    const auto key = policy.builder_pubkeys.find(builder);
    if (key != policy.builder_pubkeys.end()) rules.banned_keys.insert(key->second);
  }
  for (core::BuilderIndex builder : policy.trusted_builders) {
    const auto key = policy.builder_pubkeys.find(builder);
    if (key != policy.builder_pubkeys.end()) rules.trusted_keys.insert(key->second);
  }
  rules.own_ports = std::move(own_ports);
  return rules;
}

V4Rewrite RewriteProduceBlockV4(absl::string_view body, absl::string_view content_type,
                                const RewriteRules& rules) {
  return IsSsz(content_type) ? RewriteSsz(body, rules) : RewriteJson(body, rules);
}

std::string RewriteProduceBlockV3Query(absl::string_view query, core::Mode mode) {
  if (mode != core::Mode::kSelfBuild) return std::string(query);
  constexpr absl::string_view kBoost = "builder_boost_factor=0";
  std::vector<std::string> parameters;
  bool placed = false;
  for (absl::string_view parameter : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    const absl::string_view name = parameter.substr(0, parameter.find('='));
    if (name != "builder_boost_factor") {
      parameters.emplace_back(parameter);
    } else if (!placed) {
      parameters.emplace_back(kBoost);
      placed = true;
    }
  }
  if (!placed) parameters.emplace_back(kBoost);
  return absl::StrJoin(parameters, "&");
}

absl::string_view PayloadSourceName(PayloadSource source) {
  switch (source) {
    case PayloadSource::kBuilderApi:
      return "builder_api";
    case PayloadSource::kP2p:
      return "p2p";
    case PayloadSource::kLocal:
      return "local";
    case PayloadSource::kUnknown:
      return "unknown";
  }
  return "unknown";
}

BlockOutcome ReadBlockOutcome(BlockRoute route, bool include_payload,
                              const std::function<std::string(absl::string_view)>& header) {
  BlockOutcome outcome;
  outcome.builder_url = header("Eth-Builder-Url");
  outcome.payload_value = header("Eth-Execution-Payload-Value");
  outcome.consensus_value = header("Eth-Consensus-Block-Value");
  const auto is_true = [](const std::string& value) {
    return absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(value), "true");
  };
  const auto is_false = [](const std::string& value) {
    return absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(value), "false");
  };
  if (route == BlockRoute::kProduceBlockV3) {
    const std::string blinded = header("Eth-Execution-Payload-Blinded");
    if (is_true(blinded)) outcome.source = PayloadSource::kBuilderApi;
    if (is_false(blinded)) outcome.source = PayloadSource::kLocal;
    return outcome;
  }
  const std::string included = header("Eth-Execution-Payload-Included");
  if (!outcome.builder_url.empty()) {
    outcome.source = PayloadSource::kBuilderApi;
  } else if (is_true(included)) {
    outcome.source = PayloadSource::kLocal;
  } else if (is_false(included) && include_payload) {
    // A self-built block asked with include_payload carries its payload; a P2P bid's cannot.
    outcome.source = PayloadSource::kP2p;
  }
  return outcome;
}

}  // namespace breaker::sidecar::validator
