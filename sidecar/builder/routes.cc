#include "sidecar/builder/routes.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace breaker::sidecar {

absl::string_view EndpointName(Endpoint endpoint) {
  switch (endpoint) {
    case Endpoint::kStatus:
      return "status";
    case Endpoint::kRegisterValidators:
      return "register_validators";
    case Endpoint::kGetHeader:
      return "get_header";
    case Endpoint::kSubmitBlindedBlock:
      return "submit_blinded_block";
    case Endpoint::kGetExecutionPayloadBid:
      return "get_execution_payload_bid";
    case Endpoint::kSubmitBuilderPreferences:
      return "submit_builder_preferences";
    case Endpoint::kSubmitBeaconBlock:
      return "submit_beacon_block";
    case Endpoint::kOther:
      return "other";
  }
  return "other";
}

Route ClassifyRoute(absl::string_view method, absl::string_view path) {
  Route route;
  const std::vector<absl::string_view> parts = absl::StrSplit(path, '/');
  // "", "eth", "v1", "builder", ...
  if (parts.size() < 5 || !parts[0].empty() || parts[1] != "eth" || parts[3] != "builder") {
    return route;
  }
  const absl::string_view version = parts[2];
  const absl::string_view name = parts[4];
  if (method == "GET" && version == "v1" && name == "status" && parts.size() == 5) {
    route.endpoint = Endpoint::kStatus;
  } else if (method == "POST" && version == "v1" && name == "validators" && parts.size() == 5) {
    route.endpoint = Endpoint::kRegisterValidators;
  } else if (method == "GET" && version == "v1" && name == "header" && parts.size() == 8) {
    core::Slot slot = 0;
    if (absl::SimpleAtoi(parts[5], &slot)) {
      route.endpoint = Endpoint::kGetHeader;
      route.slot = slot;
    }
  } else if (method == "POST" && (version == "v1" || version == "v2") && name == "blinded_blocks" &&
             parts.size() == 5) {
    route.endpoint = Endpoint::kSubmitBlindedBlock;
  } else if (method == "POST" && version == "v1" && name == "execution_payload_bid" &&
             parts.size() == 9) {
    core::Slot slot = 0;
    if (absl::SimpleAtoi(parts[5], &slot)) {
      route.endpoint = Endpoint::kGetExecutionPayloadBid;
      route.slot = slot;
    }
  } else if (method == "POST" && version == "v1" && name == "builder_preferences" &&
             parts.size() == 6) {
    route.endpoint = Endpoint::kSubmitBuilderPreferences;
  } else if (method == "POST" && version == "v1" && name == "beacon_blocks" && parts.size() == 5) {
    route.endpoint = Endpoint::kSubmitBeaconBlock;
  }
  return route;
}

}  // namespace breaker::sidecar
