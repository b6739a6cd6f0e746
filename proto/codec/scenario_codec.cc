#include "proto/codec/scenario_codec.h"

#include <string>

namespace breaker::codec {
namespace {

namespace v1 = ::breaker::v1;

constexpr size_t kRootBytes = 32;

void PadRoot(std::string* root) {
  if (root->size() < kRootBytes) root->resize(kRootBytes, '\0');
}

}  // namespace

v1::Observation ExpandScriptedObservation(v1::Observation observation, core::Slot current_slot) {
  if (observation.slot() == 0) observation.set_slot(current_slot);
  switch (observation.event_case()) {
    case v1::Observation::kPayloadMissing:
      PadRoot(observation.mutable_payload_missing()->mutable_block_root());
      break;
    case v1::Observation::kPayloadDelivered:
      PadRoot(observation.mutable_payload_delivered()->mutable_block_root());
      break;
    case v1::Observation::kBlocksSeen:
      for (std::string& root : *observation.mutable_blocks_seen()->mutable_block_roots()) {
        PadRoot(&root);
      }
      break;
    case v1::Observation::kRelayRevealMissing:
      PadRoot(observation.mutable_relay_reveal_missing()->mutable_block_root());
      break;
    default:
      break;
  }
  return observation;
}

}  // namespace breaker::codec
