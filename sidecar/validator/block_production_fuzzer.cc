// Fuzz target for the rewrite of a produceBlockV4 body: the input's first byte picks the mode
// (its value mod 3) and the encoding (bit 2: SSZ), the rest is the body. Whatever the body, the
// rewrite must answer one the beacon node reads as a BuilderConfig holding no entry the policy
// refuses, or, for a top level that cannot be read, the body untouched (ALL_BUILDERS) or the
// self-build config. A violation aborts, with what broke on stderr.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

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

void Check(absl::string_view input) {
  if (input.empty()) return;
  const core::Mode mode = static_cast<core::Mode>(static_cast<uint8_t>(input[0]) % 3);
  const bool ssz = (static_cast<uint8_t>(input[0]) & 4) != 0;
  const absl::string_view body = input.substr(1);
  const RewriteRules rules = Rules(mode);
  const V4Rewrite rewrite =
      RewriteProduceBlockV4(body, ssz ? "application/octet-stream" : "application/json", rules);
  if (rewrite.unreadable && mode == core::Mode::kAllBuilders) {
    if (rewrite.changed || rewrite.body != body) Fail("unreadable body not forwarded", input);
    return;
  }
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
