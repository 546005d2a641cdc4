#include "common/server.h"

#include <signal.h>

#include <thread>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/strings/str_cat.h"
#include "common/file_io.h"
#include "common/logging.h"
#include "common/parse_errors.h"
#include "common/reflection_v1.h"
#include "common/status.h"

namespace kagent {

void ServerOptions::Register(OptionSet& o) {
  o.AddString("listen", &listen, "gRPC listen address host:port (port 0 picks one)");
  o.AddString("metrics-listen", &metrics_listen,
              "Prometheus /metrics listen address host:port; empty disables it");
  o.AddString("tls-cert", &tls_cert, "server certificate (PEM); enables TLS with --tls-key");
  o.AddString("tls-key", &tls_key, "server private key (PEM)");
  o.AddString("tls-client-ca", &tls_client_ca, "CA (PEM) that client certificates must chain to");
  o.AddString("tokens-file", &tokens_file,
              "file of `TOKEN TENANT` lines; enables bearer-token auth");
  o.AddString("internal-token", &internal_token,
              "token the cluster's services use to call each other", /*secret=*/true);
  o.AddInt("max-message-bytes", &max_message_bytes, "largest gRPC message accepted or sent");
  o.AddDouble("keepalive-seconds", &keepalive_seconds, "HTTP/2 keepalive ping interval");
  o.AddDouble("drain-seconds", &drain_seconds,
              "on SIGTERM, how long to wait for in-flight calls after readiness turns off");
  o.AddDouble("shutdown-grace-seconds", &shutdown_grace_seconds,
              "after draining, how long calls still running get before they are cancelled");
  o.AddString("log-level", &log_level, "debug, info, warning or error");
  o.AddValidator([this] { return Validate(); });
}

absl::Status ServerOptions::Validate() const {
  if (listen.empty() || listen.find(':') == std::string::npos) {
    return absl::InvalidArgumentError("--listen must be host:port, e.g. 0.0.0.0:50051");
  }
  if (tls_cert.empty() != tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key must be given together");
  }
  if (!tls_client_ca.empty() && tls_cert.empty()) {
    return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
  }
  if (max_message_bytes < 1024 || max_message_bytes > (256LL << 20)) {
    return absl::InvalidArgumentError("--max-message-bytes must be in [1024, 268435456]");
  }
  if (keepalive_seconds < 1 || keepalive_seconds > 3600) {
    return absl::InvalidArgumentError("--keepalive-seconds must be in [1, 3600]");
  }
  if (drain_seconds < 0 || drain_seconds > 600 || shutdown_grace_seconds < 0 ||
      shutdown_grace_seconds > 600) {
    return absl::InvalidArgumentError(
        "--drain-seconds and --shutdown-grace-seconds must be in [0, 600]");
  }
  LogLevel level;
  if (!ParseLogLevel(log_level, &level)) {
    return absl::InvalidArgumentError("--log-level must be debug, info, warning or error");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Authenticator>> MakeAuthenticator(const ServerOptions& options) {
  LogLevel level;
  if (ParseLogLevel(options.log_level, &level)) SetLogLevel(level);
  if (options.tokens_file.empty() && options.internal_token.empty()) return nullptr;
  if (options.tokens_file.empty()) {
    return std::make_unique<Authenticator>(std::map<std::string, std::string>{},
                                           options.internal_token);
  }
  KAGENT_ASSIGN_OR_RETURN(Authenticator auth,
                          Authenticator::FromFile(options.tokens_file, options.internal_token));
  return std::make_unique<Authenticator>(std::move(auth));
}

absl::StatusOr<std::unique_ptr<ServiceHost>> ServiceHost::Create(const ServerOptions& options,
                                                                 Metrics* metrics) {
  KAGENT_RETURN_IF_ERROR(options.Validate());
  return std::unique_ptr<ServiceHost>(new ServiceHost(options, metrics));
}

ServiceHost::~ServiceHost() {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }
}

void ServiceHost::AddService(grpc::Service* service, const std::string& full_name) {
  services_.push_back(service);
  service_names_.push_back(full_name);
}

absl::Status ServiceHost::Start() {
  InstallProtobufLogHandler();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!options_.tls_cert.empty()) {
    grpc::SslServerCredentialsOptions ssl(
        options_.tls_client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                       : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    KAGENT_ASSIGN_OR_RETURN(std::string cert, ReadFile(options_.tls_cert));
    KAGENT_ASSIGN_OR_RETURN(std::string key, ReadFile(options_.tls_key));
    ssl.pem_key_cert_pairs.push_back({key, cert});
    if (!options_.tls_client_ca.empty()) {
      KAGENT_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadFile(options_.tls_client_ca));
    }
    creds = grpc::SslServerCredentials(ssl);
  }
  builder.AddListeningPort(options_.listen, creds, &port_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options_.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(options_.max_message_bytes));
  int keepalive_ms = static_cast<int>(options_.keepalive_seconds * 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, keepalive_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  for (grpc::Service* s : services_) builder.RegisterService(s);
  // Reflection v1 next to the plugin's v1alpha; both list the same services.
  std::vector<std::string> listed = service_names_;
  for (const char* name : {"grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection",
                           "grpc.reflection.v1.ServerReflection"}) {
    listed.push_back(name);
  }
  reflection_v1_ = std::make_unique<ReflectionV1Service>(std::move(listed));
  builder.RegisterService(reflection_v1_.get());
  // The parse-error interceptor first: interceptors see PRE_SEND_STATUS in order, so the
  // metrics count the status it rewrites.
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> f;
  f.push_back(NewParseErrorInterceptorFactory());
  if (metrics_ != nullptr) {
    for (const std::string& name : service_names_) metrics_->InitializeService(name);
    f.push_back(metrics_->NewServerInterceptorFactory());
  }
  builder.experimental().SetInterceptorCreators(std::move(f));
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) {
    server_.reset();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.listen,
                                               " (address in use or not permitted?)"));
  }
  KLOG(INFO).With("port", static_cast<double>(port_))
      << "gRPC serving on " << options_.listen << " (port " << port_ << ")"
      << (options_.tls_cert.empty() ? "" : " with TLS");
  SetReady(true);
  server_->GetHealthCheckService()->SetServingStatus(kLivenessService, true);
  return absl::OkStatus();
}

void ServiceHost::SetReady(bool ready) {
  if (!server_) return;
  auto* health = server_->GetHealthCheckService();
  health->SetServingStatus("", ready);
  // Register per-service status under each service's full name.
  for (const auto& name : service_names_) health->SetServingStatus(name, ready);
}

void ServiceHost::Drain() {
  {
    absl::MutexLock lock(&mu_);
    if (drained_ || !server_) return;
  }
  KLOG(INFO) << "draining: readiness NOT_SERVING";
  SetReady(false);
  WaitForInFlight(absl::Now() + absl::Seconds(options_.drain_seconds));
  ShutdownBy(absl::Now() + absl::Seconds(options_.shutdown_grace_seconds));
}

void ServiceHost::WaitForInFlight(absl::Time until) {
  while (absl::Now() < until && metrics_ != nullptr && metrics_->in_flight() > 0) {
    absl::SleepFor(absl::Milliseconds(50));
  }
}

void ServiceHost::ShutdownBy(absl::Time deadline) {
  {
    absl::MutexLock lock(&mu_);
    if (drained_ || !server_) return;
    drained_ = true;
  }
  server_->GetHealthCheckService()->SetServingStatus(kLivenessService, false);
  server_->Shutdown(absl::ToChronoTime(deadline));
  server_->Wait();
  KLOG(INFO) << "server stopped";
}

void BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitForTerminationSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int sig = 0;
  sigwait(&set, &sig);
  KLOG(INFO) << "received signal " << sig << ", shutting down";
  return sig;
}

}  // namespace kagent
