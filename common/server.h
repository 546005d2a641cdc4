// The one server bootstrap every kagent service uses.
//
//   ServerOptions opts;                 // registered on an OptionSet, parsed, validated
//   KAGENT_ASSIGN_OR_RETURN(auto host, ServiceHost::Create(opts, metrics));
//   host->AddService(&svc, v1::JobService::service_full_name());  // not owned
//   KAGENT_RETURN_IF_ERROR(host->Start());
//   WaitForTerminationSignal();          // SIGTERM or SIGINT
//   host->Drain();                       // NOT_SERVING -> drain -> Shutdown(deadline)
//
// The host enables grpc.health.v1 (service "" and each added service report readiness;
// service "kagent.liveness" reports liveness and stays SERVING until shutdown), server
// reflection (grpc.reflection.v1alpha and v1), keepalive, a bounded max message size,
// optional TLS (and mutual TLS when a CA is given), the parse-error interceptor
// (common/parse_errors.h: unparseable requests are INVALID_ARGUMENT; libprotobuf logs
// through the JSON logger) and the metrics interceptor (whose gRPC series for every
// method of the added services exist from Start).
//
// Thread-safe after Start(); Drain() may be called from any thread, once.
#ifndef KAGENT_COMMON_SERVER_H_
#define KAGENT_COMMON_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/service_type.h>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/auth.h"
#include "common/metrics.h"
#include "common/options.h"

namespace kagent {

inline constexpr char kLivenessService[] = "kagent.liveness";

struct ServerOptions {
  std::string listen = "127.0.0.1:0";     // host:port; port 0 picks a free one
  std::string metrics_listen = "127.0.0.1:0";  // empty: no metrics endpoint
  std::string tls_cert;                   // PEM files; both or neither
  std::string tls_key;
  std::string tls_client_ca;              // when set, clients must present a certificate
  std::string tokens_file;                // `TOKEN TENANT` lines; empty: auth off
  std::string internal_token;             // service-to-service token (secret)
  int64_t max_message_bytes = 16 << 20;   // 1 KiB .. 256 MiB
  double keepalive_seconds = 30;
  double drain_seconds = 5;               // wait for in-flight calls before shutdown
  double shutdown_grace_seconds = 5;      // then cancel what remains
  std::string log_level = "info";

  // Registers every field on `options` and a validator for them.
  void Register(OptionSet& options);
  absl::Status Validate() const;
};

// Applies log_level and builds the authenticator (null when auth is off).
absl::StatusOr<std::unique_ptr<Authenticator>> MakeAuthenticator(const ServerOptions& options);

class ServiceHost {
 public:
  static absl::StatusOr<std::unique_ptr<ServiceHost>> Create(const ServerOptions& options,
                                                             Metrics* metrics);
  ~ServiceHost();

  // `full_name` is the service's proto name (Generated::service_full_name()); its
  // health status follows readiness.
  void AddService(grpc::Service* service, const std::string& full_name);
  absl::Status Start();
  int port() const { return port_; }
  grpc::Server* server() { return server_.get(); }

  // Readiness for "" and every added service.
  void SetReady(bool ready);
  // NOT_SERVING, wait until in-flight calls finish or drain_seconds pass, then
  // Shutdown with shutdown_grace_seconds as the deadline. Idempotent. Returns when the
  // server has stopped: within drain + grace seconds plus the time handlers take to
  // notice their cancellation (long streams such as WatchJob check it every 100 ms).
  void Drain();

  // Drain's steps, for a process whose several hosts share one bound (kagentd): turn
  // every host NOT_SERVING, WaitForInFlight once, then ShutdownBy the same deadline on
  // each. WaitForInFlight waits until no call is in flight on any server that shares
  // this host's Metrics, or until `until`. ShutdownBy turns liveness off, shuts down
  // (calls still running at `deadline` are cancelled) and waits; idempotent, and Drain
  // after it does nothing.
  void WaitForInFlight(absl::Time until);
  void ShutdownBy(absl::Time deadline);

 private:
  ServiceHost(ServerOptions options, Metrics* metrics)
      : options_(std::move(options)), metrics_(metrics) {}

  ServerOptions options_;
  Metrics* metrics_;
  std::vector<grpc::Service*> services_;
  std::vector<std::string> service_names_;
  std::unique_ptr<grpc::Service> reflection_v1_;  // outlives server_
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  absl::Mutex mu_;
  bool drained_ ABSL_GUARDED_BY(mu_) = false;
};

// Blocks SIGTERM and SIGINT in the calling thread and every thread it starts later.
// Call first thing in main(), before any thread exists.
void BlockTerminationSignals();
// Waits (sigwait) for SIGTERM or SIGINT; returns the signal number.
int WaitForTerminationSignal();

}  // namespace kagent

#endif  // KAGENT_COMMON_SERVER_H_
