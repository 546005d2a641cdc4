#include "common/parse_errors.h"

#include <mutex>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/stubs/logging.h>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/metrics.h"

namespace kagent {
namespace {

using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::ServerRpcInfo;

class ParseErrorInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit ParseErrorInterceptor(std::string method) : method_(std::move(method)) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        !received_) {
      received_ = true;
      unparseable_ = methods->GetRecvMessage() == nullptr;
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS) &&
        unparseable_ && methods->GetSendStatus().error_code() == grpc::StatusCode::INTERNAL) {
      methods->ModifySendStatus(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, UnparseableRequestMessage(method_)));
    }
    methods->Proceed();
  }

 private:
  std::string method_;
  bool received_ = false;
  bool unparseable_ = false;
};

class ParseErrorInterceptorFactory
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(ServerRpcInfo* info) override {
    // Only where the server deserializes the one request itself.
    if (info->type() != ServerRpcInfo::Type::UNARY &&
        info->type() != ServerRpcInfo::Type::SERVER_STREAMING) {
      return nullptr;
    }
    return new ParseErrorInterceptor(info->method() ? info->method() : "");
  }
};

void ProtobufLogHandler(google::protobuf::LogLevel level, const char* filename, int line,
                        const std::string& message) {
  LogLevel ours = LogLevel::kError;
  switch (level) {
    case google::protobuf::LOGLEVEL_INFO:
      ours = LogLevel::kInfo;
      break;
    case google::protobuf::LOGLEVEL_WARNING:
      ours = LogLevel::kWarning;
      break;
    default:
      ours = LogLevel::kError;
  }
  if (ours < GetLogLevel()) return;
  LogMessage(ours, filename, line).With("source", "libprotobuf") << message;
}

}  // namespace

std::string UnparseableRequestMessage(const std::string& full_method) {
  auto [service, method] = SplitFullMethod(full_method);
  std::string type = "the method's request message";
  const google::protobuf::ServiceDescriptor* s =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service);
  const google::protobuf::MethodDescriptor* m = s ? s->FindMethodByName(method) : nullptr;
  if (m != nullptr) type = m->input_type()->full_name();
  return absl::StrCat("the request could not be parsed as ", type,
                      " (truncated or not protobuf bytes, or a string field that is not "
                      "valid UTF-8)");
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewParseErrorInterceptorFactory() {
  return std::make_unique<ParseErrorInterceptorFactory>();
}

void InstallProtobufLogHandler() {
  static std::once_flag once;
  std::call_once(once, [] { google::protobuf::SetLogHandler(&ProtobufLogHandler); });
}

}  // namespace kagent
