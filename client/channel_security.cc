#include "client/channel_security.h"

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/input_bounds.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/support/client_interceptor.h"
#include "proto/codec/text_file.h"

namespace breaker::client {
namespace {

namespace experimental = ::grpc::experimental;

// Adds the authorization header to each call's initial metadata.
class BearerTokenInterceptor : public experimental::Interceptor {
 public:
  explicit BearerTokenInterceptor(const std::string* header) : header_(header) {}

  void Intercept(experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace("authorization", *header_);
    }
    methods->Proceed();
  }

 private:
  const std::string* const header_;  // owned by the factory, which the channel keeps
};

class BearerTokenInterceptorFactory : public experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerTokenInterceptorFactory(const std::string& token)
      : header_(absl::StrCat("Bearer ", token)) {}

  experimental::Interceptor* CreateClientInterceptor(experimental::ClientRpcInfo*) override {
    return new BearerTokenInterceptor(&header_);
  }

 private:
  const std::string header_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ChannelSecurityFiles& files) {
  if (!files.tls()) return grpc::InsecureChannelCredentials();
  if (files.tls_cert_file.empty() != files.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate and its key go together: give both --tls_cert and --tls_key, or "
        "neither");
  }
  grpc::SslCredentialsOptions options;
  if (!files.tls_ca_file.empty()) {
    absl::StatusOr<std::string> ca = codec::ReadTextFile(files.tls_ca_file, "TLS CA file");
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *std::move(ca);
  }
  if (!files.tls_cert_file.empty()) {
    absl::StatusOr<std::string> cert =
        codec::ReadTextFile(files.tls_cert_file, "TLS client certificate");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = codec::ReadTextFile(files.tls_key_file, "TLS client key");
    if (!key.ok()) return key.status();
    options.pem_cert_chain = *std::move(cert);
    options.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(options);
}

absl::StatusOr<ChannelSecurity> SecurityFromFiles(const ChannelSecurityFiles& files,
                                                  const std::string& token_file) {
  ChannelSecurity security;
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(files);
  if (!credentials.ok()) return credentials.status();
  security.credentials = *std::move(credentials);
  if (!token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(token_file);
    if (!token.ok()) return token.status();
    security.bearer_token = *std::move(token);
  }
  return security;
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  absl::StatusOr<std::string> text = codec::ReadTextFile(path, "token file");
  if (!text.ok()) return text.status();
  std::string token(absl::StripAsciiWhitespace(*text));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("token file '", path, "' is empty; write the bearer token in it"));
  }
  return token;
}

std::shared_ptr<grpc::Channel> CreateChannel(
    const std::string& target, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    const std::string& bearer_token, const grpc::ChannelArguments& given_args) {
  // Explicit, not gRPC's default: breakerd bounds what it sends (core/input_bounds.h), and a
  // client must take every message within that bound.
  grpc::ChannelArguments args = given_args;
  args.SetMaxReceiveMessageSize(static_cast<int>(core::bounds::kClientReceiveBytes));
  if (bearer_token.empty()) return grpc::CreateCustomChannel(target, credentials, args);
  std::vector<std::unique_ptr<experimental::ClientInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<BearerTokenInterceptorFactory>(bearer_token));
  return experimental::CreateCustomChannelWithInterceptors(target, credentials, args,
                                                           std::move(interceptors));
}

std::string DescribeStatus(const grpc::Status& status) {
  std::string text = status.error_message();
  if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
      absl::StrContains(text, "larger than max")) {
    absl::StrAppend(&text, " (this client takes messages of up to ",
                    core::bounds::kClientReceiveBytes, " bytes, and breakerd sends at most ",
                    core::bounds::kMaxSentMessageBytes,
                    ": the server is not a breakerd of this version, or a proxy between "
                    "changed the message; check the address)");
  }
  return text;
}

}  // namespace breaker::client
