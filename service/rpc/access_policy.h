#ifndef SERVICE_RPC_ACCESS_POLICY_H_
#define SERVICE_RPC_ACCESS_POLICY_H_

// Who may call what: the access file's principals, found by the credential a caller presents,
// and what each role may do. Pure logic; service/rpc/authorizer reads the credentials off a call.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "breaker/v1/access.pb.h"

namespace breaker::service {

// What a call needs.
enum class Permission {
  kNodeStream,  // Breaker.Connect, Breaker.Report
  kView,        // the Admin service's read-only calls
  kOperate,     // the Admin service's changes: bans, trust, reset, config and access reloads
};

// "a node's stream", "read access", "operator access": for error messages.
absl::string_view PermissionName(Permission permission);

// Whether `role` holds `permission` (see breaker.v1.Role).
bool RoleAllows(breaker::v1::Role role, Permission permission);

struct Principal {
  std::string name;
  breaker::v1::Role role = breaker::v1::ROLE_UNSPECIFIED;
};

// The lower-case hex SHA-256 of `data`.
std::string Sha256Hex(absl::string_view data);

// An access file's principals, indexed by credential. Immutable; thread-safe.
class AccessPolicy {
 public:
  // Validates `proto`: every principal has a unique non-empty name, a role, and at least one
  // credential; digests are 64 hex digits; no credential names two principals. Errors are
  // INVALID_ARGUMENT "<source>: principal '<name>': <what is wrong>; <what to do>".
  static absl::StatusOr<AccessPolicy> FromProto(const breaker::v1::AccessPolicy& proto,
                                                absl::string_view source);
  // Reads and validates a text-format breaker.v1.AccessPolicy file. NOT_FOUND or
  // FAILED_PRECONDITION when it cannot be read, INVALID_ARGUMENT when it is not valid.
  static absl::StatusOr<AccessPolicy> Load(const std::string& path);

  // The principal holding `token` (compared by its SHA-256), or null.
  const Principal* FindByToken(absl::string_view token) const;
  // The principal holding the token whose SHA-256 (lower-case hex) is `token_sha256`, or null.
  const Principal* FindByTokenSha256(absl::string_view token_sha256) const;
  // The principal named by the first of `identities` (a certificate's subject alternative
  // names, then its common name) that the file lists, or null.
  const Principal* FindByCertificate(const std::vector<std::string>& identities) const;

  size_t size() const { return principals_.size(); }

 private:
  AccessPolicy() = default;

  std::vector<Principal> principals_;
  // Indexes into principals_.
  absl::flat_hash_map<std::string, size_t> by_token_sha256_;
  absl::flat_hash_map<std::string, size_t> by_certificate_identity_;
};

}  // namespace breaker::service

#endif  // SERVICE_RPC_ACCESS_POLICY_H_
