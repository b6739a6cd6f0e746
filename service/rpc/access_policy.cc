#include "service/rpc/access_policy.h"

#include <openssl/sha.h>

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/input_bounds.h"
#include "proto/codec/text_file.h"

namespace breaker::service {

namespace v1 = ::breaker::v1;

absl::string_view PermissionName(Permission permission) {
  switch (permission) {
    case Permission::kNodeStream:
      return "a node's stream";
    case Permission::kView:
      return "read access";
    case Permission::kOperate:
      return "operator access";
  }
  return "an unknown permission";
}

bool RoleAllows(v1::Role role, Permission permission) {
  switch (role) {
    case v1::ROLE_ADMIN:
      return true;
    case v1::ROLE_VIEWER:
      return permission == Permission::kView;
    case v1::ROLE_NODE:
      return permission == Permission::kNodeStream;
    default:
      return false;
  }
}

std::string Sha256Hex(absl::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

namespace {

bool IsSha256Hex(absl::string_view text) {
  if (text.size() != 2 * SHA256_DIGEST_LENGTH) return false;
  for (char c : text) {
    if (!absl::ascii_isxdigit(c)) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<AccessPolicy> AccessPolicy::FromProto(const v1::AccessPolicy& proto,
                                                     absl::string_view source) {
  AccessPolicy policy;
  absl::flat_hash_set<std::string> names;
  for (const v1::Principal& entry : proto.principal()) {
    const size_t index = policy.principals_.size();
    auto invalid = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": principal '",
                                                     core::bounds::QuotePrefix(entry.name()),
                                                     "' (the ", index + 1, ". one): ", what));
    };
    if (entry.name().empty()) return invalid("name is empty; give every principal a name");
    // A node's principal name is its node id: every name follows the node ids' rule, so that
    // none names a node that can never connect.
    if (absl::Status name = core::bounds::CheckNodeId("name", entry.name()); !name.ok()) {
      return invalid(name.message());
    }
    if (!names.insert(entry.name()).second) {
      return invalid("the name is used twice; give every principal its own name");
    }
    if (entry.role() != v1::ROLE_NODE && entry.role() != v1::ROLE_VIEWER &&
        entry.role() != v1::ROLE_ADMIN) {
      return invalid("no role; set role to ROLE_NODE, ROLE_VIEWER or ROLE_ADMIN");
    }
    if (entry.certificate_identity().empty() && entry.token_sha256().empty()) {
      return invalid(
          "no credential; give a certificate_identity or a token_sha256 (the SHA-256 of a "
          "bearer token, `printf %s \"$TOKEN\" | sha256sum`)");
    }
    for (const std::string& digest : entry.token_sha256()) {
      if (!IsSha256Hex(digest)) {
        return invalid(absl::StrCat("token_sha256 '", digest,
                                    "' is not 64 hex digits; store the token's SHA-256, "
                                    "`printf %s \"$TOKEN\" | sha256sum`"));
      }
      if (!policy.by_token_sha256_.emplace(absl::AsciiStrToLower(digest), index).second) {
        return invalid(absl::StrCat("token_sha256 '", digest,
                                    "' is another principal's too; give each its own token"));
      }
    }
    for (const std::string& identity : entry.certificate_identity()) {
      if (identity.empty()) return invalid("a certificate_identity is empty");
      if (!policy.by_certificate_identity_.emplace(identity, index).second) {
        return invalid(absl::StrCat("certificate_identity '", identity,
                                    "' is another principal's too; give each its own "
                                    "certificate"));
      }
    }
    policy.principals_.push_back(Principal{entry.name(), entry.role()});
  }
  return policy;
}

absl::StatusOr<AccessPolicy> AccessPolicy::Load(const std::string& path) {
  absl::StatusOr<std::string> text = codec::ReadTextFile(path, "access file");
  if (!text.ok()) return text.status();
  v1::AccessPolicy proto;
  if (absl::Status parsed = codec::ParseTextFormat(*text, path, proto); !parsed.ok()) {
    return parsed;
  }
  return FromProto(proto, path);
}

const Principal* AccessPolicy::FindByToken(absl::string_view token) const {
  return FindByTokenSha256(Sha256Hex(token));
}

const Principal* AccessPolicy::FindByTokenSha256(absl::string_view token_sha256) const {
  auto it = by_token_sha256_.find(token_sha256);
  return it == by_token_sha256_.end() ? nullptr : &principals_[it->second];
}

const Principal* AccessPolicy::FindByCertificate(const std::vector<std::string>& identities) const {
  for (const std::string& identity : identities) {
    auto it = by_certificate_identity_.find(identity);
    if (it != by_certificate_identity_.end()) return &principals_[it->second];
  }
  return nullptr;
}

}  // namespace breaker::service
