#ifndef COMMON_METRICS_EXPOSER_H_
#define COMMON_METRICS_EXPOSER_H_

// Prometheus metrics served over plain HTTP at /metrics (prometheus-cpp's Exposer), bounded
// the same way by every program that serves them: breakerd and breaker-sidecar.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prometheus/exposer.h"

namespace breaker::common {

// Serves /metrics on `listen_address` ("host:port", IPv6 hosts in brackets; port 0 picks a free
// port, GetListeningPorts() says which). `setting` names where the address came from (e.g.
// "--metrics_listen"), for the errors. A few threads, each giving a silent client 2 s, and no
// keep-alive: one idle or slow connection cannot hold up a scrape. Returns INVALID_ARGUMENT
// for an address that is not host:port, UNAVAILABLE when it cannot be bound.
absl::StatusOr<std::unique_ptr<prometheus::Exposer>> StartMetricsExposer(
    const std::string& listen_address, absl::string_view setting);

}  // namespace breaker::common

#endif  // COMMON_METRICS_EXPOSER_H_
