#ifndef SERVICE_RPC_AUTHORIZER_H_
#define SERVICE_RPC_AUTHORIZER_H_

// Each call's caller, from its credentials, checked against what the call needs.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/mutex.h"
#include "grpcpp/server_context.h"
#include "service/rpc/access_policy.h"

namespace breaker::service {

// What a caller presents, read off its call once: a stream keeps it, so that the access file
// in force can be checked against it again after a reload.
struct Credentials {
  // The SHA-256 (lower-case hex) of the bearer token, when the call sent one: it then decides.
  // Only the digest is kept, as in the access file.
  std::optional<std::string> token_sha256;
  // The verified client certificate's subject alternative names, then its common name; empty
  // without one (plaintext, or TLS without --tls_client_ca).
  std::vector<std::string> certificate_identities;
};

// Thread-safe.
class Authorizer {
 public:
  // Reads and checks an access file: AccessPolicy::Load, or a test's stand-in.
  using AccessLoader = std::function<absl::StatusOr<AccessPolicy>(const std::string& path)>;

  // Without an access policy every caller is an admin: for breakerd on loopback, or on a
  // network where only the transport (mutual TLS, a firewall) decides who gets in.
  // `access_file`: the file `policy` was read from, which Reload reads again with `load`;
  // empty: none.
  explicit Authorizer(std::optional<AccessPolicy> policy, std::string access_file = "",
                      AccessLoader load = &AccessPolicy::Load);

  // The caller of `context`, if it may do what `permission` covers.
  // UNAUTHENTICATED: no credential, or a token or certificate the access file does not list.
  // PERMISSION_DENIED: a known caller whose role does not allow it.
  // A bearer token (metadata `authorization: Bearer <token>`), when sent, decides; otherwise
  // the client certificate does.
  absl::StatusOr<Principal> Authorize(const grpc::ServerContextBase& context,
                                      Permission permission) const;

  // As above, for credentials read before (CredentialsOf), against the access file in force
  // now.
  absl::StatusOr<Principal> Authorize(const Credentials& credentials, Permission permission) const;

  // What the caller of `context` presents. UNAUTHENTICATED for an authorization metadata that
  // is not a bearer token.
  static absl::StatusOr<Credentials> CredentialsOf(const grpc::ServerContextBase& context);

  // Whether `caller` may speak for node `node_id`: nodes only for themselves, admins for any.
  // PERMISSION_DENIED otherwise.
  static absl::Status CheckNodeId(const Principal& caller, absl::string_view node_id);

  // Re-reads the access file and puts it in force for every call authorized from then on;
  // returns how many principals it lists. FAILED_PRECONDITION without an access file (every
  // caller stays an admin: a file can only be given at start); otherwise the file's errors
  // (NOT_FOUND, FAILED_PRECONDITION when it cannot be read, INVALID_ARGUMENT when it is not
  // valid), and the file in force stays.
  // Reloads may overlap (SIGHUP and Admin.ReloadAccess); each one is numbered when it is
  // called, and one that finishes reading after a later-called one put its file in force
  // changes nothing and returns ABORTED: the later one, which read the file after it, stays
  // in force (the earlier one's read may predate a revocation).
  absl::StatusOr<size_t> Reload();

  // The access file given at start; empty when there is none.
  const std::string& access_file() const { return access_file_; }

 private:
  const std::string access_file_;
  const AccessLoader load_;
  mutable Mutex mu_;
  // Null without an access policy. Each one is immutable; a reload replaces it.
  std::shared_ptr<const AccessPolicy> policy_ ABSL_GUARDED_BY(mu_);
  // How many reloads were called, and the number of the one whose file is in force (0: the
  // file given at start).
  uint64_t reloads_called_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t reload_in_force_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace breaker::service

#endif  // SERVICE_RPC_AUTHORIZER_H_
