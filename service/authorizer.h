#ifndef SERVICE_AUTHORIZER_H_
#define SERVICE_AUTHORIZER_H_

// Each call's caller, from its credentials, checked against what the call needs.

#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/server_context.h"
#include "service/access_policy.h"

namespace breaker::service {

// Thread-safe (immutable).
class Authorizer {
 public:
  // Without an access policy every caller is an admin: for breakerd on loopback, or on a
  // network where only the transport (mutual TLS, a firewall) decides who gets in.
  explicit Authorizer(std::optional<AccessPolicy> policy) : policy_(std::move(policy)) {}

  // The caller of `context`, if it may do what `permission` covers.
  // UNAUTHENTICATED: no credential, or a token or certificate the access file does not list.
  // PERMISSION_DENIED: a known caller whose role does not allow it.
  // A bearer token (metadata `authorization: Bearer <token>`), when sent, decides; otherwise
  // the client certificate does.
  absl::StatusOr<Principal> Authorize(const grpc::ServerContextBase& context,
                                      Permission permission) const;

  // Whether `caller` may speak for node `node_id`: nodes only for themselves, admins for any.
  // PERMISSION_DENIED otherwise.
  static absl::Status CheckNodeId(const Principal& caller, absl::string_view node_id);

 private:
  const std::optional<AccessPolicy> policy_;
};

}  // namespace breaker::service

#endif  // SERVICE_AUTHORIZER_H_
