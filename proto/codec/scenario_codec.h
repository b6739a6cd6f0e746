#ifndef PROTO_CODEC_SCENARIO_CODEC_H_
#define PROTO_CODEC_SCENARIO_CODEC_H_

// The conveniences of hand-written observations (scenario files, scripted nodes). See
// breaker/v1/scenario.proto.

#include "breaker/v1/breaker.pb.h"
#include "core/types.h"

namespace breaker::codec {

// Completes a hand-written observation into the API's form: `slot` 0 becomes `current_slot`,
// and every block root shorter than 32 bytes (a label such as "r1") is zero-padded to 32
// bytes. The sequence number is left as it is.
breaker::v1::Observation ExpandScriptedObservation(breaker::v1::Observation observation,
                                                   core::Slot current_slot);

}  // namespace breaker::codec

#endif  // PROTO_CODEC_SCENARIO_CODEC_H_
