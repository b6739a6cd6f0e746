#include "service/rpc/authorizer.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/mutex.h"
#include "core/input_bounds.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/security/auth_context.h"

namespace breaker::service {
namespace {

// The token of an `authorization: Bearer <token>` header; nullopt when there is none. Another
// scheme is an error rather than no token: falling back to the certificate would hide the
// caller's mistake.
absl::StatusOr<std::optional<std::string>> BearerToken(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return std::nullopt;
  absl::string_view value(it->second.data(), it->second.size());
  constexpr absl::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(value.substr(0, kScheme.size()), kScheme)) {
    return absl::UnauthenticatedError(
        "the authorization metadata is not 'Bearer <token>'; send the token that way");
  }
  return std::string(value.substr(kScheme.size()));
}

// The verified client certificate's subject alternative names, then its common name; empty
// without a certificate (plaintext, or TLS without --tls_client_ca).
std::vector<std::string> CertificateIdentities(const grpc::ServerContextBase& context) {
  std::vector<std::string> identities;
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) return identities;
  for (const char* property : {GRPC_X509_SAN_PROPERTY_NAME, GRPC_X509_CN_PROPERTY_NAME}) {
    for (const grpc::string_ref& value : auth->FindPropertyValues(property)) {
      identities.emplace_back(value.data(), value.size());
    }
  }
  return identities;
}

absl::string_view RolesWith(Permission permission) {
  switch (permission) {
    case Permission::kNodeStream:
      return "ROLE_NODE or ROLE_ADMIN";
    case Permission::kView:
      return "ROLE_VIEWER or ROLE_ADMIN";
    case Permission::kOperate:
      return "ROLE_ADMIN";
  }
  return "ROLE_ADMIN";
}

}  // namespace

Authorizer::Authorizer(std::optional<AccessPolicy> policy, std::string access_file,
                       AccessLoader load)
    : access_file_(std::move(access_file)), load_(std::move(load)) {
  if (policy.has_value()) policy_ = std::make_shared<const AccessPolicy>(*std::move(policy));
}

absl::StatusOr<Credentials> Authorizer::CredentialsOf(const grpc::ServerContextBase& context) {
  absl::StatusOr<std::optional<std::string>> token = BearerToken(context);
  if (!token.ok()) return token.status();
  Credentials credentials;
  if (token->has_value()) {
    credentials.token_sha256 = Sha256Hex(**token);
  } else {
    credentials.certificate_identities = CertificateIdentities(context);
  }
  return credentials;
}

absl::StatusOr<Principal> Authorizer::Authorize(const grpc::ServerContextBase& context,
                                                Permission permission) const {
  {
    MutexLock lock(&mu_);
    if (policy_ == nullptr) return Principal{"anyone", breaker::v1::ROLE_ADMIN};
  }
  absl::StatusOr<Credentials> credentials = CredentialsOf(context);
  if (!credentials.ok()) return credentials.status();
  return Authorize(*credentials, permission);
}

absl::StatusOr<Principal> Authorizer::Authorize(const Credentials& credentials,
                                                Permission permission) const {
  std::shared_ptr<const AccessPolicy> policy;
  {
    MutexLock lock(&mu_);
    policy = policy_;
  }
  if (policy == nullptr) return Principal{"anyone", breaker::v1::ROLE_ADMIN};
  const Principal* caller = nullptr;
  if (credentials.token_sha256.has_value()) {
    caller = policy->FindByTokenSha256(*credentials.token_sha256);
    if (caller == nullptr) {
      return absl::UnauthenticatedError(
          "the bearer token is not in breakerd's access file; check the token, or ask the "
          "operator to add its SHA-256");
    }
  } else {
    const std::vector<std::string>& identities = credentials.certificate_identities;
    if (identities.empty()) {
      return absl::UnauthenticatedError(
          "no credential: send a bearer token (authorization: Bearer <token>) or connect with "
          "a client certificate over TLS");
    }
    caller = policy->FindByCertificate(identities);
    if (caller == nullptr) {
      return absl::UnauthenticatedError(absl::StrCat(
          "the client certificate (", core::bounds::ForLog(identities.front()),
          ") is not in breakerd's access file; ask the operator to add one of its names as a "
          "certificate_identity"));
    }
  }
  if (!RoleAllows(caller->role, permission)) {
    return absl::PermissionDeniedError(
        absl::StrCat("'", caller->name, "' has the role ", breaker::v1::Role_Name(caller->role),
                     ", which does not give ", PermissionName(permission),
                     "; use a credential with ", RolesWith(permission)));
  }
  return *caller;
}

absl::Status Authorizer::CheckNodeId(const Principal& caller, absl::string_view node_id) {
  if (caller.role != breaker::v1::ROLE_NODE || caller.name == node_id) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      "this credential belongs to node '", caller.name, "', which cannot speak for node '",
      core::bounds::QuotePrefix(node_id), "'; use node id '", caller.name, "'"));
}

absl::StatusOr<size_t> Authorizer::Reload() {
  if (access_file_.empty()) {
    return absl::FailedPreconditionError(
        "breakerd runs without an access file, so every caller is an admin; restart it with "
        "--access_file to give one");
  }
  uint64_t number = 0;
  {
    MutexLock lock(&mu_);
    number = ++reloads_called_;
  }
  // Read outside the lock: a large file takes a while, and calls are authorized meanwhile.
  absl::StatusOr<AccessPolicy> loaded = load_(access_file_);
  if (!loaded.ok()) return loaded.status();
  const size_t principals = loaded->size();
  auto policy = std::make_shared<const AccessPolicy>(*std::move(loaded));
  MutexLock lock(&mu_);
  if (number < reload_in_force_) {
    return absl::AbortedError(absl::StrCat(
        "a reload of ", access_file_,
        " called after this one finished first and stays in force; this one read the file "
        "earlier and changed nothing: reload again to read it as it is now"));
  }
  policy_ = std::move(policy);
  reload_in_force_ = number;
  return principals;
}

}  // namespace breaker::service
