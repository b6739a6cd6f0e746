#include "service/rpc/malformed_request.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "grpcpp/server_context.h"

namespace breaker::service {
namespace {

class MalformedRequestInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit MalformedRequestInterceptor(grpc::experimental::ServerRpcInfo* info) : info_(info) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    // A request gRPC could not parse reaches the server's code as no message at all.
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() == nullptr) {
      unparsed_ = true;
    }
    if (unparsed_ && methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      // gRPC's own answer to it; breakerd never answers UNIMPLEMENTED without a message.
      const grpc::Status status = methods->GetSendStatus();
      if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED &&
          status.error_message().empty()) {
        const std::string method = info_->method();
        LOG(WARNING) << "call " << method << " from " << info_->server_context()->peer()
                     << " refused: its request could not be parsed";
        methods->ModifySendStatus(grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            absl::StrCat("the request to ", method,
                         " could not be parsed as the rpc's request message; send the message "
                         "type breaker/v1/breaker.proto names for it")));
      }
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* const info_;
  bool unparsed_ = false;
};

class MalformedRequestInterceptorFactory
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new MalformedRequestInterceptor(info);
  }
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MakeMalformedRequestInterceptorFactory() {
  return std::make_unique<MalformedRequestInterceptorFactory>();
}

}  // namespace breaker::service
