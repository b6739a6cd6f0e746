#ifndef PROTO_CODEC_REQUEST_CHECKS_H_
#define PROTO_CODEC_REQUEST_CHECKS_H_

// The input bounds of core/input_bounds.h applied to the API's requests, where they enter
// breakerd: each returns OK or INVALID_ARGUMENT naming the field (as spelled in
// breaker/v1/breaker.proto), its length and the bound, quoting at most a short escaped prefix
// of what was sent. What a field means (a known network, a future epoch, a relay identifier's
// syntax) is checked further in, by the engine or the service.

#include "absl/status/status.h"
#include "breaker/state/v1/state.pb.h"
#include "breaker/v1/breaker.pb.h"

namespace breaker::codec {

// node_id, client_version, network and fleet_id.
absl::Status CheckHello(const breaker::v1::Hello& hello);

// node_id and the batch's size.
absl::Status CheckReportRequest(const breaker::v1::ReportRequest& request);

// A batch of `observations` observations.
absl::Status CheckBatchSize(int observations);

// An operator action, before it is journaled or logged: every string of every kind of action
// (reasons and relay identifiers). INVALID_ARGUMENT also for an empty action.
absl::Status CheckAdminAction(const breaker::state::v1::AdminAction& action);

}  // namespace breaker::codec

#endif  // PROTO_CODEC_REQUEST_CHECKS_H_
