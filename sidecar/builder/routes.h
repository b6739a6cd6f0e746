#ifndef SIDECAR_BUILDER_ROUTES_H_
#define SIDECAR_BUILDER_ROUTES_H_

// The builder API's routes (ethereum/builder-specs), as the sidecar tells them apart: a
// request's endpoint and, for a header or a bid, its slot, from its method and path alone.

#include "absl/strings/string_view.h"
#include "core/types.h"

namespace breaker::sidecar {

enum class Endpoint {
  kStatus,
  kRegisterValidators,
  kGetHeader,
  kSubmitBlindedBlock,
  // Gloas (ePBS).
  kGetExecutionPayloadBid,
  kSubmitBuilderPreferences,
  kSubmitBeaconBlock,
  kOther,
};

absl::string_view EndpointName(Endpoint endpoint);

struct Route {
  Endpoint endpoint = Endpoint::kOther;
  // The header's or bid's slot (kGetHeader, kGetExecutionPayloadBid).
  core::Slot slot = 0;
};

// Classifies a request by its method and path (without the query).
Route ClassifyRoute(absl::string_view method, absl::string_view path);

}  // namespace breaker::sidecar

#endif  // SIDECAR_BUILDER_ROUTES_H_
