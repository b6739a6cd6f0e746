#include "service/rpc/transport_security.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "proto/codec/text_file.h"

namespace breaker::service {
namespace {

// The host of "host:port" or "[v6]:port", without brackets.
absl::string_view HostOf(absl::string_view address) {
  if (absl::StartsWith(address, "[")) {
    const size_t close = address.find(']');
    return close == absl::string_view::npos ? address : address.substr(1, close - 1);
  }
  const size_t colon = address.rfind(':');
  return colon == absl::string_view::npos ? address : address.substr(0, colon);
}

bool IsIpv4Loopback(absl::string_view host) {
  std::vector<absl::string_view> octets = absl::StrSplit(host, '.');
  if (octets.size() != 4 || octets[0] != "127") return false;
  for (absl::string_view octet : octets) {
    int value = 0;
    if (!absl::SimpleAtoi(octet, &value) || value < 0 || value > 255) return false;
  }
  return true;
}

// Checks that `cert_pem` holds a certificate and `key_pem` its private key, so that a wrong
// file is named at start rather than found by gRPC as a port that cannot be bound.
absl::Status CheckKeyPair(const ServerTlsFiles& tls, const std::string& cert_pem,
                          const std::string& key_pem) {
  BIO* cert_bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
  BIO_free(cert_bio);
  BIO* key_bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
  BIO_free(key_bio);
  absl::Status status;
  if (cert == nullptr) {
    status = absl::InvalidArgumentError(absl::StrCat(
        "--tls_cert '", tls.cert_file, "' holds no PEM certificate; give breakerd's certificate"));
  } else if (key == nullptr) {
    status = absl::InvalidArgumentError(
        absl::StrCat("--tls_key '", tls.key_file,
                     "' holds no PEM private key (an encrypted key is not "
                     "supported); give the certificate's unencrypted key"));
  } else if (X509_check_private_key(cert, key) != 1) {
    status = absl::InvalidArgumentError(absl::StrCat("--tls_key '", tls.key_file,
                                                     "' is not the key of --tls_cert '",
                                                     tls.cert_file, "'; give the matching pair"));
  }
  X509_free(cert);
  EVP_PKEY_free(key);
  return status;
}

}  // namespace

bool IsLoopbackAddress(absl::string_view listen_address) {
  if (absl::StartsWith(listen_address, "unix:")) return true;
  absl::string_view address = listen_address;
  absl::ConsumePrefix(&address, "ipv4:");
  absl::ConsumePrefix(&address, "ipv6:");
  const absl::string_view host = HostOf(address);
  return host == "localhost" || host == "::1" || IsIpv4Loopback(host);
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTlsFiles& tls, absl::string_view listen_address, bool allow_insecure_listen) {
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert and --tls_key go together: give breakerd's certificate and its key");
  }
  if (tls.cert_file.empty()) {
    if (!tls.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls_client_ca needs TLS: give --tls_cert and --tls_key as well");
    }
    if (!IsLoopbackAddress(listen_address) && !allow_insecure_listen) {
      return absl::FailedPreconditionError(absl::StrCat(
          "refusing to serve plaintext on '", listen_address,
          "', which other machines can reach: observations and operator actions would cross "
          "the network unprotected. Give --tls_cert and --tls_key (and --tls_client_ca for "
          "mutual TLS), listen on loopback, or pass --allow_insecure_listen on a network you "
          "trust"));
    }
    return grpc::InsecureServerCredentials();
  }
  absl::StatusOr<std::string> cert = codec::ReadTextFile(tls.cert_file, "TLS certificate");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = codec::ReadTextFile(tls.key_file, "TLS private key");
  if (!key.ok()) return key.status();
  if (absl::Status pair = CheckKeyPair(tls, *cert, *key); !pair.ok()) return pair;
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_key_cert_pairs.push_back({*std::move(key), *std::move(cert)});
  if (!tls.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = codec::ReadTextFile(tls.client_ca_file, "client CA file");
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *std::move(ca);
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace breaker::service
