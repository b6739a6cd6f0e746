#include "client/policy_snapshot.h"

namespace breaker::client {

absl::string_view PolicySourceName(PolicySource source) {
  switch (source) {
    case PolicySource::kFleet:
      return "fleet";
    case PolicySource::kFleetAndLocal:
      return "fleet+local";
    case PolicySource::kLocal:
      return "local";
  }
  return "unknown";
}

}  // namespace breaker::client
