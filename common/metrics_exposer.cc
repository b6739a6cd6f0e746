#include "common/metrics_exposer.h"

#include <exception>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/port_holder.h"

namespace breaker::common {
namespace {

// Civetweb takes a bare port or any string it fails on later with an unhelpful message; insist
// on host:port so that the error can say what is wrong.
absl::Status ValidateAddress(const std::string& address, absl::string_view setting) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(address).substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(setting, " '", address,
                     "' is not host:port; pass e.g. 127.0.0.1:9464, or empty to turn metrics off"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<prometheus::Exposer>> StartMetricsExposer(
    const std::string& listen_address, absl::string_view setting) {
  if (absl::Status status = ValidateAddress(listen_address, setting); !status.ok()) return status;
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    // A connection holds one of the HTTP server's threads until its request is read, so an
    // idle or slow client would hold up every scrape behind it: a few threads, a short read
    // timeout, and no keep-alive bound what one client can hold.
    exposer = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", listen_address, "num_threads", "4",
                                 "request_timeout_ms", "2000", "enable_keep_alive", "no"});
  } catch (const std::exception& error) {
    // ValidateAddress above made sure the port parses.
    int port = 0;
    if (!absl::SimpleAtoi(absl::string_view(listen_address).substr(listen_address.rfind(':') + 1),
                          &port)) {
      port = 0;
    }
    return absl::UnavailableError(absl::StrCat(
        "cannot serve metrics on '", listen_address, "' (", error.what(), "): address in use",
        PortHolderSuffix(port), " or invalid; pass ", setting, " with a free host:port"));
  }
  if (exposer->GetListeningPorts().empty()) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on '", listen_address, "': nothing bound"));
  }
  return exposer;
}

}  // namespace breaker::common
