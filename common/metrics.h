// Prometheus metrics with prometheus-cpp, served over HTTP on their own port.
//
// One Metrics object per process owns the registry and (optionally) the HTTP exposer.
// Every service registers its own families on registry(). The gRPC server interceptor
// counts `kagent_grpc_server_started_total{service,method}`,
// `kagent_grpc_server_handled_total{service,method,code}` and observes
// `kagent_grpc_server_handling_seconds{service,method}`; it also tracks the number of
// RPCs in flight, which the server bootstrap uses to drain.
//
// Thread-safe. Must outlive every server that uses its interceptor.
#ifndef KAGENT_COMMON_METRICS_H_
#define KAGENT_COMMON_METRICS_H_

#include <atomic>
#include <memory>
#include <string>

#include <grpcpp/support/server_interceptor.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "absl/status/statusor.h"

namespace kagent {

class Metrics {
 public:
  // `listen_address` like "0.0.0.0:9090" or "127.0.0.1:0"; empty means no HTTP endpoint
  // (the registry still works, e.g. in unit tests).
  static absl::StatusOr<std::unique_ptr<Metrics>> Create(const std::string& listen_address);
  ~Metrics();

  prometheus::Registry& registry() { return *registry_; }
  // The bound HTTP port, or 0 without an exposer.
  int port() const { return port_; }
  int64_t in_flight() const { return in_flight_.load(); }

  // A new interceptor factory for a grpc::ServerBuilder (each builder takes ownership).
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
  NewServerInterceptorFactory();

  // Creates the gRPC series of every method of the service named `full_name` (a
  // generated service's proto name), `code="OK"` for the handled counter, so a scrape
  // shows 0 before the first call. Unknown names are ignored. ServiceHost calls it.
  void InitializeService(const std::string& full_name);

  // Records one finished server RPC (used by the interceptor; exposed for tests).
  void RecordStarted(const std::string& full_method);
  void RecordHandled(const std::string& full_method, int code, double seconds);

  // Buckets for latencies from 1 ms to ~10 min.
  static prometheus::Histogram::BucketBoundaries LatencyBuckets();

 private:
  Metrics() = default;

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
  std::atomic<int64_t> in_flight_{0};
  prometheus::Family<prometheus::Counter>* started_ = nullptr;
  prometheus::Family<prometheus::Counter>* handled_ = nullptr;
  prometheus::Family<prometheus::Histogram>* handling_seconds_ = nullptr;
  prometheus::Family<prometheus::Gauge>* build_info_ = nullptr;
};

// Splits "/kagent.v1.JobService/SubmitJob" into {"kagent.v1.JobService", "SubmitJob"}.
std::pair<std::string, std::string> SplitFullMethod(const std::string& full_method);

}  // namespace kagent

#endif  // KAGENT_COMMON_METRICS_H_
