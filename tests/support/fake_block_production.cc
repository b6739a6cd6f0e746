#include "tests/support/fake_block_production.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace breaker::testing {
namespace {

using Json = nlohmann::json;
namespace ssz = ::breaker::sidecar::ssz;

constexpr char kPayloadValue[] = "123000000000";
constexpr char kConsensusValue[] = "4500";

// The config as a beacon node reads it: the top level or nothing, each malformed entry left out.
std::optional<ssz::BuilderConfig> ReadConfig(const std::string& body, bool is_ssz) {
  ssz::BuilderConfig config;
  if (is_ssz) {
    absl::StatusOr<ssz::BuilderConfigSszParts> parts = ssz::SplitBuilderConfigSsz(body);
    if (!parts.ok()) return std::nullopt;
    config.min_bid = parts->min_bid;
    config.builder_boost_factor = parts->builder_boost_factor;
    for (absl::string_view encoded : parts->builders) {
      absl::StatusOr<ssz::BuilderEntry> entry = ssz::BuilderEntryFromSsz(encoded);
      if (entry.ok()) config.builders.push_back(*std::move(entry));
    }
    return config;
  }
  const Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("builders") || !json["builders"].is_array() ||
      json["builders"].size() > ssz::kMaxBuilderEntries) {
    return std::nullopt;
  }
  absl::StatusOr<uint64_t> min_bid = ssz::Uint64FromJson(json.value("min_bid", Json()), "min_bid");
  absl::StatusOr<uint64_t> boost =
      ssz::Uint64FromJson(json.value("builder_boost_factor", Json()), "builder_boost_factor");
  if (!min_bid.ok() || !boost.ok()) return std::nullopt;
  config.min_bid = *min_bid;
  config.builder_boost_factor = *boost;
  for (const Json& entry_json : json["builders"]) {
    absl::StatusOr<ssz::BuilderEntry> entry = ssz::BuilderEntryFromJson(entry_json);
    if (entry.ok()) config.builders.push_back(*std::move(entry));
  }
  return config;
}

void BadRequest(const std::string& message, httplib::Response& response) {
  response.status = 400;
  response.set_content(Json{{"code", 400}, {"message", message}}.dump(), "application/json");
}

// The Gloas block of `slot` whose bid names `builder` (0: the node's own build).
Json Block(const std::string& slot, core::BuilderIndex builder) {
  return Json{{"slot", slot},
              {"proposer_index", "1"},
              {"body",
               {{"signed_execution_payload_bid",
                 {{"message", {{"builder_index", std::to_string(builder)}}}}}}}};
}

std::string SszLike(size_t size) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + 7) & 0xff);
  return bytes;
}

std::string SlotOf(const std::string& path) { return path.substr(path.rfind('/') + 1); }

}  // namespace

void FakeBlockProduction::Script(ProductionScript script) {
  MutexLock lock(&mu_);
  script_ = std::move(script);
}

bool FakeBlockProduction::Serves(const std::string& path) {
  return absl::StartsWith(path, "/eth/v3/validator/blocks/") ||
         absl::StartsWith(path, "/eth/v4/validator/blocks/");
}

std::vector<ProductionRequest> FakeBlockProduction::requests() const {
  MutexLock lock(&mu_);
  return requests_;
}

void FakeBlockProduction::Serve(const httplib::Request& request, httplib::Response& response) {
  ProductionScript script;
  {
    MutexLock lock(&mu_);
    script = script_;
  }
  if (script.delay > absl::ZeroDuration()) absl::SleepFor(script.delay);
  ProductionRequest record;
  record.method = request.method;
  record.target = request.target;
  record.content_type = request.get_header_value("Content-Type");
  record.consensus_version = request.get_header_value("Eth-Consensus-Version");
  record.body = request.body;
  if (absl::StartsWith(request.path, "/eth/v3/") && request.method == "GET") {
    ServeV3(request, script, record, response);
  } else if (absl::StartsWith(request.path, "/eth/v4/") && request.method == "POST") {
    ServeV4(request, script, record, response);
  } else {
    response.status = 405;
  }
  record.status = response.status;
  MutexLock lock(&mu_);
  requests_.push_back(std::move(record));
}

void FakeBlockProduction::ServeV3(const httplib::Request& request, const ProductionScript& script,
                                  ProductionRequest& record, httplib::Response& response) {
  record.version = 3;
  if (request.has_param("builder_boost_factor")) {
    record.builder_boost_factor = request.get_param_value("builder_boost_factor");
  }
  const bool builder = !script.builder_url.empty() && record.builder_boost_factor != "0";
  response.set_header("Eth-Consensus-Version", "fulu");
  response.set_header("Eth-Execution-Payload-Blinded", builder ? "true" : "false");
  response.set_header("Eth-Execution-Payload-Value", kPayloadValue);
  response.set_header("Eth-Consensus-Block-Value", kConsensusValue);
  const Json body{{"version", "fulu"},
                  {"execution_payload_blinded", builder},
                  {"execution_payload_value", kPayloadValue},
                  {"consensus_block_value", kConsensusValue},
                  {"data", Block(SlotOf(request.path), builder ? script.builder : 0)}};
  response.set_content(body.dump(), "application/json");
}

void FakeBlockProduction::ServeV4(const httplib::Request& request, const ProductionScript& script,
                                  ProductionRequest& record, httplib::Response& response) {
  record.version = 4;
  const bool is_ssz = absl::StrContains(record.content_type, "application/octet-stream");
  record.config = ReadConfig(request.body, is_ssz);
  const std::string include = request.get_param_value("include_payload");
  if (include != "true" && include != "false") {
    BadRequest("include_payload is required: true or false", response);
    return;
  }
  if (!record.config.has_value()) {
    BadRequest("the BuilderConfig cannot be read", response);
    return;
  }
  bool builder_api = false;
  for (const ssz::BuilderEntry& entry : record.config->builders) {
    builder_api = builder_api || (!script.builder_url.empty() && entry.url == script.builder_url);
  }
  const bool p2p = !builder_api && script.p2p_bid && record.config->builder_boost_factor != 0;
  const bool included = !builder_api && !p2p && include == "true";
  response.set_header("Eth-Consensus-Version", "gloas");
  response.set_header("Eth-Execution-Payload-Included", included ? "true" : "false");
  response.set_header("Eth-Execution-Payload-Value", kPayloadValue);
  response.set_header("Eth-Consensus-Block-Value", kConsensusValue);
  if (builder_api) response.set_header("Eth-Builder-Url", script.builder_url);
  if (absl::StrContains(request.get_header_value("Accept"), "application/octet-stream")) {
    response.set_content(
        script.ssz_answer.empty() ? SszLike(script.ssz_answer_bytes) : script.ssz_answer,
        "application/octet-stream");
    return;
  }
  const Json body{{"version", "gloas"},
                  {"consensus_block_value", kConsensusValue},
                  {"execution_payload_included", included},
                  {"data", Block(SlotOf(request.path), builder_api || p2p ? script.builder : 0)}};
  response.set_content(body.dump(), "application/json");
}

}  // namespace breaker::testing
