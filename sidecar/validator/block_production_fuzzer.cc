// Fuzz target for the rewrite of a produceBlockV4 body: the input's first byte picks the mode
// (its value mod 3) and the encoding (bit 2: SSZ), the rest is the body. Whatever the body, the
// rewrite must answer one the beacon node reads as a BuilderConfig holding no entry the policy
// refuses, or, for a top level that cannot be read, the body untouched (ALL_BUILDERS) or the
// self-build config. A JSON body is also read as a document (nlohmann::json and the readers of
// sidecar/ssz/builder_config.h): the rewrite must find the same top level readable or not, the
// same entries malformed, and forward each kept entry as it was but for keys left out. A
// violation aborts, with what broke on stderr.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/relay_id.h"
#include "nlohmann/json.hpp"
#include "sidecar/ssz/builder_config.h"
#include "sidecar/validator/block_production.h"

namespace breaker::sidecar::validator {
namespace {

[[noreturn]] void Fail(absl::string_view what, absl::string_view input) {
  std::fprintf(stderr, "block production rewrite invariant violated: %.*s\ninput: \"%s\"\n",
               static_cast<int>(what.size()), what.data(), absl::CEscape(input).c_str());
  std::abort();
}

// Relays spelled as the seeds spell them; keys of one repeated byte.
RewriteRules Rules(core::Mode mode) {
  RewriteRules rules;
  rules.mode = mode;
  rules.banned_relays = {"https://banned.example"};
  rules.trusted_relays = {"https://trusted.example"};
  rules.banned_keys = {std::string(48, 'B')};
  rules.trusted_keys = {std::string(48, 'T')};
  rules.own_ports["http://127.0.0.1:18550"] = {"https://banned.example", false};
  return rules;
}

using Json = nlohmann::json;

// `text` as a document (discarded when it is not JSON), and whether an object in it names a
// member twice (the document keeps the last value; the rewrite is stricter for entries' url and
// builder_pubkeys).
Json ParseNotingDuplicates(absl::string_view text, bool& duplicate) {
  std::vector<std::set<std::string>> names;
  duplicate = false;
  const Json::parser_callback_t note = [&](int, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) names.emplace_back();
    if (event == Json::parse_event_t::object_end && !names.empty()) names.pop_back();
    if (event == Json::parse_event_t::key && !names.empty() &&
        !names.back().insert(parsed.get<std::string>()).second) {
      duplicate = true;
    }
    return true;
  };
  return Json::parse(text.begin(), text.end(), note, /*allow_exceptions=*/false);
}

// The top level as BuilderConfigFromJson reads it.
bool TopLevelReads(const Json& json) {
  if (!json.is_object()) return false;
  for (const char* name : {"min_bid", "builder_boost_factor"}) {
    if (!json.contains(name) || !ssz::Uint64FromJson(json[name], name).ok()) return false;
  }
  return json.contains("builders") && json["builders"].is_array() &&
         json["builders"].size() <= ssz::kMaxBuilderEntries;
}

// Whether `forwarded` is `original` with some of its builder_pubkeys left out.
bool NarrowedFrom(Json forwarded, Json original) {
  const Json kept = forwarded["builder_pubkeys"];
  const Json all = original["builder_pubkeys"];
  size_t at = 0;
  for (const Json& key : kept) {
    while (at < all.size() && all[at] != key) ++at;
    if (at++ == all.size()) return false;
  }
  forwarded.erase("builder_pubkeys");
  original.erase("builder_pubkeys");
  return forwarded == original;
}

// The rewrite of a JSON body against its reading as a document.
void CheckAgainstDocument(absl::string_view input, absl::string_view body,
                          const V4Rewrite& rewrite) {
  bool duplicate = false;
  const Json document = ParseNotingDuplicates(body, duplicate);
  const bool reads = !document.is_discarded() && TopLevelReads(document);
  if (rewrite.unreadable == reads) Fail("top level read unlike a document", input);
  if (!reads || duplicate) return;
  std::vector<const Json*> well_formed;
  for (const Json& entry : document["builders"]) {
    if (ssz::BuilderEntryFromJson(entry).ok()) well_formed.push_back(&entry);
  }
  if (rewrite.entries != document["builders"].size() ||
      rewrite.malformed != rewrite.entries - well_formed.size()) {
    Fail("entries counted unlike a document", input);
  }
  const Json forwarded = Json::parse(rewrite.body, nullptr, /*allow_exceptions=*/false);
  size_t next = 0;
  for (const Json& entry : forwarded["builders"]) {
    while (next < well_formed.size() && !NarrowedFrom(entry, *well_formed[next])) ++next;
    if (next++ == well_formed.size()) Fail("a forwarded entry is none of the body's", input);
  }
}

void Check(absl::string_view input) {
  if (input.empty()) return;
  const core::Mode mode = static_cast<core::Mode>(static_cast<uint8_t>(input[0]) % 3);
  const bool ssz = (static_cast<uint8_t>(input[0]) & 4) != 0;
  const absl::string_view body = input.substr(1);
  const RewriteRules rules = Rules(mode);
  const V4Rewrite rewrite =
      RewriteProduceBlockV4(body, ssz ? "application/octet-stream" : "application/json", rules);
  if (rewrite.unreadable && mode == core::Mode::kAllBuilders &&
      (rewrite.changed || rewrite.body != body)) {
    Fail("unreadable body not forwarded", input);
  }
  if (!ssz) CheckAgainstDocument(input, body, rewrite);
  if (rewrite.unreadable && mode == core::Mode::kAllBuilders) return;
  if (!rewrite.changed && rewrite.body != body) Fail("unchanged but different", input);
  absl::StatusOr<ssz::BuilderConfig> config =
      ssz ? ssz::BuilderConfigFromSsz(rewrite.body)
          : ssz::BuilderConfigFromJson(
                nlohmann::json::parse(rewrite.body, nullptr, /*allow_exceptions=*/false));
  if (!config.ok()) Fail(absl::StrCat("forwarded body unread: ", config.status().message()), input);
  if (rewrite.kept != config->builders.size()) Fail("kept count differs", input);
  if (mode != core::Mode::kAllBuilders &&
      (config->min_bid != UINT64_MAX || config->builder_boost_factor != 0)) {
    Fail("P2P bids not ranked down", input);
  }
  if (mode == core::Mode::kSelfBuild && !config->builders.empty()) Fail("builders kept", input);
  for (const ssz::BuilderEntry& entry : config->builders) {
    for (const std::string& key : entry.builder_pubkeys) {
      if (rules.banned_keys.contains(key)) Fail("banned key kept", input);
    }
    absl::StatusOr<std::string> relay = core::NormalizeRelayId(entry.url);
    if (!relay.ok()) Fail("unjudged url kept", input);
    const auto own = rules.own_ports.find(*relay);
    if (rules.banned_relays.contains(own == rules.own_ports.end() ? *relay
                                                                  : own->second.relay_id)) {
      Fail("banned relay kept", input);
    }
  }
}

}  // namespace
}  // namespace breaker::sidecar::validator

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  breaker::sidecar::validator::Check(absl::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
