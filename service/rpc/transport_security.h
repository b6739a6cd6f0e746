#ifndef SERVICE_RPC_TRANSPORT_SECURITY_H_
#define SERVICE_RPC_TRANSPORT_SECURITY_H_

// How breakerd's listening port is secured: TLS or mutual TLS from PEM files, and the rule that
// plaintext stays on loopback unless the operator says otherwise.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/server_credentials.h"

namespace breaker::service {

struct ServerTlsFiles {
  // breakerd's certificate chain and private key (PEM). Both empty: plaintext.
  std::string cert_file;
  std::string key_file;
  // CA certificates (PEM) that client certificates must chain to. Set: mutual TLS, every
  // client must present a certificate. Empty: clients are not asked for one.
  std::string client_ca_file;
};

// Whether `listen_address` ("host:port", "[v6]:port" or "unix:path") can only be reached from
// this machine: 127.0.0.0/8, ::1, localhost, or a Unix socket.
bool IsLoopbackAddress(absl::string_view listen_address);

// The credentials for `tls`, after the rule for `listen_address`:
// INVALID_ARGUMENT when only one of cert_file and key_file is given, or client_ca_file without
// them; FAILED_PRECONDITION for plaintext on a non-loopback address unless
// `allow_insecure_listen`; NOT_FOUND or FAILED_PRECONDITION when a file cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTlsFiles& tls, absl::string_view listen_address, bool allow_insecure_listen);

}  // namespace breaker::service

#endif  // SERVICE_RPC_TRANSPORT_SECURITY_H_
