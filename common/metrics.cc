#include "common/metrics.h"

#include <chrono>
#include <exception>

#include <google/protobuf/descriptor.h>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/logging.h"

namespace kagent {
namespace {

using grpc::experimental::InterceptionHookPoints;

class MetricsInterceptor : public grpc::experimental::Interceptor {
 public:
  MetricsInterceptor(Metrics* metrics, std::string method)
      : metrics_(metrics), method_(std::move(method)) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      start_ = std::chrono::steady_clock::now();
      started_ = true;
      metrics_->RecordStarted(method_);
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS) &&
        started_ && !finished_) {
      finished_ = true;
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      metrics_->RecordHandled(method_, methods->GetSendStatus().error_code(), seconds);
    }
    methods->Proceed();
  }

 private:
  Metrics* metrics_;
  std::string method_;
  std::chrono::steady_clock::time_point start_;
  bool started_ = false;
  bool finished_ = false;
};

class MetricsInterceptorFactory
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit MetricsInterceptorFactory(Metrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new MetricsInterceptor(metrics_, info->method() ? info->method() : "");
  }

 private:
  Metrics* metrics_;
};

}  // namespace

std::pair<std::string, std::string> SplitFullMethod(const std::string& full_method) {
  std::string m = full_method;
  if (!m.empty() && m[0] == '/') m.erase(0, 1);
  size_t slash = m.find('/');
  if (slash == std::string::npos) return {"unknown", m.empty() ? "unknown" : m};
  return {m.substr(0, slash), m.substr(slash + 1)};
}

prometheus::Histogram::BucketBoundaries Metrics::LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
          2.5,   5,      10,    30,   60,    120,  300, 600};
}

absl::StatusOr<std::unique_ptr<Metrics>> Metrics::Create(const std::string& listen_address) {
  std::unique_ptr<Metrics> m(new Metrics());
  m->registry_ = std::make_shared<prometheus::Registry>();
  if (!listen_address.empty()) {
    try {
      m->exposer_ = std::make_unique<prometheus::Exposer>(listen_address, /*num_threads=*/2);
    } catch (const std::exception& e) {
      return absl::UnavailableError(
          absl::StrCat("cannot serve metrics on ", listen_address, ": ", e.what()));
    }
    m->exposer_->RegisterCollectable(m->registry_);
    auto ports = m->exposer_->GetListeningPorts();
    if (!ports.empty()) m->port_ = ports.front();
  }
  m->started_ = &prometheus::BuildCounter()
                     .Name("kagent_grpc_server_started_total")
                     .Help("gRPC calls started on the server, by service and method.")
                     .Register(*m->registry_);
  m->handled_ = &prometheus::BuildCounter()
                     .Name("kagent_grpc_server_handled_total")
                     .Help("gRPC calls completed on the server, by service, method and code.")
                     .Register(*m->registry_);
  m->handling_seconds_ = &prometheus::BuildHistogram()
                              .Name("kagent_grpc_server_handling_seconds")
                              .Help("Time from a call's start to its status, by method.")
                              .Register(*m->registry_);
  m->build_info_ = &prometheus::BuildGauge()
                        .Name("kagent_build_info")
                        .Help("Always 1; labels carry the version.")
                        .Register(*m->registry_);
  m->build_info_->Add({{"version", "0.1.0"}}).Set(1);
  return m;
}

Metrics::~Metrics() = default;

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
Metrics::NewServerInterceptorFactory() {
  return std::make_unique<MetricsInterceptorFactory>(this);
}

void Metrics::InitializeService(const std::string& full_name) {
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(full_name);
  if (service == nullptr) return;
  for (int i = 0; i < service->method_count(); ++i) {
    const std::string& method = service->method(i)->name();
    started_->Add({{"service", full_name}, {"method", method}});
    handled_->Add({{"service", full_name}, {"method", method}, {"code", GrpcCodeName(0)}});
    handling_seconds_->Add({{"service", full_name}, {"method", method}}, LatencyBuckets());
  }
}

void Metrics::RecordStarted(const std::string& full_method) {
  auto [service, method] = SplitFullMethod(full_method);
  in_flight_.fetch_add(1);
  started_->Add({{"service", service}, {"method", method}}).Increment();
}

void Metrics::RecordHandled(const std::string& full_method, int code, double seconds) {
  auto [service, method] = SplitFullMethod(full_method);
  in_flight_.fetch_sub(1);
  handled_->Add({{"service", service}, {"method", method}, {"code", GrpcCodeName(code)}})
      .Increment();
  handling_seconds_->Add({{"service", service}, {"method", method}}, LatencyBuckets())
      .Observe(seconds);
}

}  // namespace kagent
