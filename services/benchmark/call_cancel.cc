#include "services/benchmark/call_cancel.h"

#include <chrono>

namespace kagent {

ServerCallCancel::ServerCallCancel(grpc::ServerContext* context) {
  watcher_ = std::thread([this, context] {
    while (!done_.load()) {
      if (context->IsCancelled()) {
        token_.Cancel();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
}

ServerCallCancel::~ServerCallCancel() {
  done_.store(true);
  watcher_.join();
}

}  // namespace kagent
