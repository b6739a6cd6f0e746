#ifndef CLIENT_CHANNEL_SECURITY_H_
#define CLIENT_CHANNEL_SECURITY_H_

// How a client reaches breakerd: plaintext, TLS or mutual TLS from PEM files, and a bearer
// token sent with every call. Used by the client library, example_node and breakerctl.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace breaker::client {

struct ChannelSecurityFiles {
  // CA certificates (PEM) that breakerd's certificate must chain to. Empty: the system's
  // roots when TLS is on.
  std::string tls_ca_file;
  // This client's certificate and key (PEM), for mutual TLS. Both or neither.
  std::string tls_cert_file;
  std::string tls_key_file;

  // TLS is on when any file is given; otherwise the channel is plaintext.
  bool tls() const {
    return !tls_ca_file.empty() || !tls_cert_file.empty() || !tls_key_file.empty();
  }
};

// The channel credentials for `files`: plaintext or TLS.
// INVALID_ARGUMENT when only one of the certificate and key is given; NOT_FOUND or
// FAILED_PRECONDITION (naming the file) when a file cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ChannelSecurityFiles& files);

// Reads a bearer token from `path`: its content without surrounding whitespace.
// NOT_FOUND / FAILED_PRECONDITION when it cannot be read, INVALID_ARGUMENT when it is empty.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// How a client reaches breakerd, from its files: the channel credentials of `files`
// (plaintext when none is given) and the bearer token of `token_file` (none when empty).
struct ChannelSecurity {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  std::string bearer_token;
};

// MakeChannelCredentials(files), then ReadTokenFile(token_file) unless it is empty; their
// errors, naming the file.
absl::StatusOr<ChannelSecurity> SecurityFromFiles(const ChannelSecurityFiles& files,
                                                  const std::string& token_file);

// A channel to `target` with `credentials` and `args` that sends `authorization: Bearer
// <bearer_token>` with every call (none when the token is empty). The token goes as metadata
// on plaintext channels too, where gRPC's call credentials would refuse to: breakerd on
// loopback may still check tokens. The channel accepts messages of up to
// core::bounds::kClientReceiveBytes, twice what breakerd sends at most, whatever `args` says.
std::shared_ptr<grpc::Channel> CreateChannel(
    const std::string& target, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    const std::string& bearer_token, const grpc::ChannelArguments& args);

// `status` as a client shows it: a message refused for its size (RESOURCE_EXHAUSTED from
// gRPC itself) also says what that means, since breakerd never sends one that large.
std::string DescribeStatus(const grpc::Status& status);

}  // namespace breaker::client

#endif  // CLIENT_CHANNEL_SECURITY_H_
