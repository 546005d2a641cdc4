// ServerCallCancel: fires a subprocess CancelToken when a server call is cancelled (the
// client went away or its deadline passed), so the child running for that call is killed.
// A watcher thread polls the call every 100 ms while the object lives.
//
// Not copyable; destroy it before the call returns.
#ifndef KAGENT_SERVICES_BENCHMARK_CALL_CANCEL_H_
#define KAGENT_SERVICES_BENCHMARK_CALL_CANCEL_H_

#include <atomic>
#include <thread>

#include <grpcpp/server_context.h>

#include "common/subprocess/subprocess.h"

namespace kagent {

class ServerCallCancel {
 public:
  explicit ServerCallCancel(grpc::ServerContext* context);
  ~ServerCallCancel();
  ServerCallCancel(const ServerCallCancel&) = delete;
  ServerCallCancel& operator=(const ServerCallCancel&) = delete;

  const CancelToken* token() const { return &token_; }
  bool cancelled() const { return token_.cancelled(); }

 private:
  CancelToken token_;
  std::atomic<bool> done_{false};
  std::thread watcher_;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_BENCHMARK_CALL_CANCEL_H_
