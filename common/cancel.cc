#include "common/cancel.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>

namespace kagent {

CancelToken::CancelToken() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    read_fd_ = fds[0];
    write_fd_ = fds[1];
  }
}

CancelToken::~CancelToken() {
  if (read_fd_ >= 0) close(read_fd_);
  if (write_fd_ >= 0) close(write_fd_);
}

void CancelToken::Cancel() {
  if (cancelled_.exchange(true, std::memory_order_acq_rel)) return;
  if (write_fd_ >= 0) {
    // Never drained: the read end stays readable for every watcher.
    char byte = 1;
    ssize_t ignored = write(write_fd_, &byte, 1);
    (void)ignored;
  }
  absl::MutexLock lock(&mu_);
  for (grpc::ClientContext* c : contexts_) c->TryCancel();
}

bool CancelToken::Register(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  if (cancelled()) return false;
  contexts_.push_back(context);
  return true;
}

void CancelToken::Unregister(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  contexts_.erase(std::remove(contexts_.begin(), contexts_.end(), context), contexts_.end());
}

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
