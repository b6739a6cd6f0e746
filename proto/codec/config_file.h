#ifndef PROTO_CODEC_CONFIG_FILE_H_
#define PROTO_CODEC_CONFIG_FILE_H_

// breakerd's configuration file: a text-format `breaker.v1.Config` (proto/breaker/v1/config.proto)
// turned into the engine's `core::Config`, and back for GetConfig and logs. The file's
// service-limit fields (max_connected_nodes, node_observation_rate and _burst,
// max_known_nodes) are breakerd's, not the engine's: these functions ignore them, and
// service/service_limits.h reads them. The file is read
// and parsed as every hand-written file is (text_file.h), so that they all report a missing
// file and a syntax error alike.
//
// An absent field takes the core default, except where a default depends on another field:
//   - chain: "mainnet", "hoodi" and "sepolia" start from that network's spec; any other name is a
//     custom network, which starts from the core defaults and must set genesis_time_unix.
//   - missed_slots: starts from the named preset (default "mevboost"); present fields override
//     it. When the overrides change a value, the rules are named "custom", so that GetConfig
//     never shows a preset name for rules that are not that preset's. "custom" is also accepted
//     as a preset name (ConfigToProto writes it): it starts from "off".

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "breaker/v1/config.pb.h"
#include "core/config.h"

namespace breaker::codec {

// Builds the engine's configuration from the file's message and validates it.
// Returns INVALID_ARGUMENT naming the field for a custom network without
// chain.genesis_time_unix, an unknown missed_slots.preset, or any value core::ValidateConfig
// refuses (its message as is).
absl::StatusOr<core::Config> ConfigFromProto(const breaker::v1::Config& proto);

// Returns the effective configuration with every field set explicitly, including the
// missed-slot preset name. ConfigFromProto(ConfigToProto(c)) equals c for any valid c whose
// missed-slot rules are either their preset's values or named "custom".
breaker::v1::Config ConfigToProto(const core::Config& config);

// Parses a text-format breaker.v1.Config, then applies ConfigFromProto. `source_name` (usually
// the file's path) prefixes syntax errors.
// Returns INVALID_ARGUMENT "<source_name>:<line>:<column>: <message>" (1-based) for a syntax
// error, an unknown field (named in the message) or a field given twice; otherwise what
// ConfigFromProto returns.
absl::StatusOr<core::Config> ParseConfigText(absl::string_view text, absl::string_view source_name);

// Reads and parses the configuration file at `path`, validating nothing but its syntax.
// Returns NOT_FOUND when the file does not exist, FAILED_PRECONDITION (with the system's
// reason) when it cannot be read, INVALID_ARGUMENT as ParseConfigText for its syntax.
absl::StatusOr<breaker::v1::Config> LoadConfigProto(const std::string& path);

// LoadConfigProto, then ConfigFromProto.
absl::StatusOr<core::Config> LoadConfigFile(const std::string& path);

// Returns the text format of ConfigToProto(config), for logs and `breakerctl config`.
std::string ConfigToText(const core::Config& config);

}  // namespace breaker::codec

#endif  // PROTO_CODEC_CONFIG_FILE_H_
