// Fuzz target for breakerd's configuration file: the input is the file's text. Whatever it is,
// ParseConfigText must return, either a valid configuration or INVALID_ARGUMENT with a message
// that says what is wrong; a configuration must print (ConfigToText) as text that parses back
// to an equal configuration and prints the same again, and an engine must start with it.
// A violation aborts, with what differs on stderr.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "core/config.h"
#include "core/engine.h"
#include "proto/codec/config_file.h"

namespace breaker::codec {
namespace {

[[noreturn]] void Fail(absl::string_view what, absl::string_view text) {
  std::fprintf(stderr, "config file invariant violated: %.*s\ninput:\n%.*s\n",
               static_cast<int>(what.size()), what.data(), static_cast<int>(text.size()),
               text.data());
  std::abort();
}

// core::Config has no operator==: the fields that differ, by name; empty when equal.
std::string Differences(const core::Config& a, const core::Config& b) {
  std::vector<std::string> fields;
  auto compare = [&](absl::string_view name, bool equal) {
    if (!equal) fields.push_back(std::string(name));
  };
  compare("chain", a.chain == b.chain);
  compare("allowed_failures", a.allowed_failures == b.allowed_failures);
  compare("critical_failures", a.critical_failures == b.critical_failures);
  compare("blacklist_period_epochs", a.blacklist_period_epochs == b.blacklist_period_epochs);
  compare("critical_blacklist_period_epochs",
          a.critical_blacklist_period_epochs == b.critical_blacklist_period_epochs);
  compare("backoff_period_epochs", a.backoff_period_epochs == b.backoff_period_epochs);
  // Exact: a text round trip must not lose a bit of the threshold.
  compare("attestation_threshold", a.attestation_threshold == b.attestation_threshold);
  compare("critical_failed_builders", a.critical_failed_builders == b.critical_failed_builders);
  compare("critical_failed_untrusted_builders",
          a.critical_failed_untrusted_builders == b.critical_failed_untrusted_builders);
  compare("trusted_builders", a.trusted_builders == b.trusted_builders);
  compare("blacklisted_builders", a.blacklisted_builders == b.blacklisted_builders);
  compare("blacklisted_relays", a.blacklisted_relays == b.blacklisted_relays);
  compare("relays.size", a.relays.size() == b.relays.size());
  for (size_t i = 0; i < a.relays.size() && i < b.relays.size(); ++i) {
    compare(absl::StrCat("relays[", i, "].identifier"),
            a.relays[i].identifier == b.relays[i].identifier);
    compare(absl::StrCat("relays[", i, "].trusted"), a.relays[i].trusted == b.relays[i].trusted);
    compare(absl::StrCat("relays[", i, "].indices"), a.relays[i].indices == b.relays[i].indices);
  }
  compare("relay_blacklist_period_epochs",
          a.relay_blacklist_period_epochs == b.relay_blacklist_period_epochs);
  compare("relay_association_ttl_epochs",
          a.relay_association_ttl_epochs == b.relay_association_ttl_epochs);
  compare("max_relays", a.max_relays == b.max_relays);
  compare("max_indices_per_relay", a.max_indices_per_relay == b.max_indices_per_relay);
  compare("max_tracked_builders", a.max_tracked_builders == b.max_tracked_builders);
  compare("missed_slots", a.missed_slots == b.missed_slots);
  compare("min_reporting_nodes", a.min_reporting_nodes == b.min_reporting_nodes);
  compare("amendment_window_slots", a.amendment_window_slots == b.amendment_window_slots);
  compare("max_future_slots", a.max_future_slots == b.max_future_slots);
  return absl::StrJoin(fields, ", ");
}

void CheckOne(absl::string_view text) {
  absl::StatusOr<core::Config> config = ParseConfigText(text, "fuzz.textproto");
  if (!config.ok()) {
    if (config.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail(absl::StrCat("the error is not INVALID_ARGUMENT: ", config.status().ToString()), text);
    }
    if (config.status().message().empty()) Fail("the error has no message", text);
    return;
  }
  if (absl::Status valid = core::ValidateConfig(*config); !valid.ok()) {
    Fail(absl::StrCat("a parsed configuration is invalid: ", valid.ToString()), text);
  }

  // What GetConfig shows and `breakerctl config` prints must read back as the same thing.
  const std::string printed = ConfigToText(*config);
  absl::StatusOr<core::Config> reparsed = ParseConfigText(printed, "printed");
  if (!reparsed.ok()) {
    Fail(absl::StrCat("the printed configuration does not parse: ", reparsed.status().ToString(),
                      "\nprinted:\n", printed),
         text);
  }
  if (std::string differ = Differences(*config, *reparsed); !differ.empty()) {
    Fail(absl::StrCat("the printed configuration parses to another one (", differ, ")\nprinted:\n",
                      printed),
         text);
  }
  if (const std::string again = ConfigToText(*reparsed); again != printed) {
    Fail(absl::StrCat("printing is not stable:\n", printed, "\nthen:\n", again), text);
  }
  absl::StatusOr<core::Config> from_proto = ConfigFromProto(ConfigToProto(*config));
  if (!from_proto.ok()) {
    Fail(absl::StrCat("ConfigFromProto(ConfigToProto()) failed: ", from_proto.status().ToString()),
         text);
  }
  if (std::string differ = Differences(*config, *from_proto); !differ.empty()) {
    Fail(absl::StrCat("ConfigFromProto(ConfigToProto()) differs (", differ, ")"), text);
  }

  // breakerd starts an engine with it, at the current slot or any other.
  for (core::Slot slot : {core::Slot{0}, core::Slot{12'345'678}}) {
    absl::StatusOr<core::Engine> engine = core::Engine::Create(*config, slot);
    if (!engine.ok()) {
      Fail(absl::StrCat("Engine::Create refused a parsed configuration: ",
                        engine.status().ToString()),
           text);
    }
    engine->Advance(slot + 2 * config->chain.slots_per_epoch);
  }
}

}  // namespace
}  // namespace breaker::codec

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  breaker::codec::CheckOne(absl::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
