// Cancellation: the one token every layer uses (CancelToken), and the adapter that fires
// one when a gRPC server call is cancelled (ServerCallCancel).
//
// A CancelToken is fired once, from any thread (Cancel()); whoever works on its behalf
// learns it three ways, whichever suits the wait it is in:
//   - cancelled(): a flag to check between steps (a scheduler's queue, a GPU slot);
//   - wait_fd(): a descriptor that becomes readable, for poll() (RunSubprocess kills its
//     child's process group; the harness server client closes its connection);
//   - Register(): outbound gRPC calls (grpc::ClientContext) that are TryCancel()ed when the
//     token fires (the coordinator's calls to its workers and services).
//
//   CancelToken cancel;
//   // another thread: cancel.Cancel();
//   SubprocessOptions o; o.cancel = &cancel;             // the child is killed
//   if (!cancel.Register(ctx)) return Cancelled();       // the call is TryCancel()ed
//   ... stub->Call(ctx, ...); cancel.Unregister(ctx);
//
// Thread-safety: every method may be called from any thread at any time. Lifetime: the
// token must outlive every use (a RunSubprocess watching it, a registered context).
#ifndef KAGENT_COMMON_CANCEL_H_
#define KAGENT_COMMON_CANCEL_H_

#include <atomic>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace grpc {
class ClientContext;
class ServerContext;
}  // namespace grpc

namespace kagent {

class CancelToken {
 public:
  CancelToken();
  ~CancelToken();
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  // Fires the token: cancelled() turns true, wait_fd() becomes readable and every
  // registered context is TryCancel()ed. Any number of calls; the first one counts.
  void Cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  // A descriptor that becomes (and stays) readable once Cancel() was called; for poll().
  // -1 when the pipe could not be created (then only cancelled() is reliable; pollers
  // check it at least every 50 ms).
  int wait_fd() const { return read_fd_; }

  // Registers `context` to be TryCancel()ed on Cancel(); returns false (and does not
  // register) when the token has fired already. Not owned: Unregister it before it is
  // destroyed.
  bool Register(grpc::ClientContext* context);
  void Unregister(grpc::ClientContext* context);

 private:
  std::atomic<bool> cancelled_{false};
  int read_fd_ = -1;
  int write_fd_ = -1;
  absl::Mutex mu_;
  std::vector<grpc::ClientContext*> contexts_ ABSL_GUARDED_BY(mu_);
};

// ServerCallCancel: the adapter from a server call to a CancelToken. It fires its token
// when the call is cancelled (the client went away or its deadline passed), so the work
// done for the call (a child process, a wait for the GPU) stops. A watcher thread polls
// the call every 100 ms while the object lives.
//
// Not copyable; `context` must outlive it: destroy it before the call returns.
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

#endif  // KAGENT_COMMON_CANCEL_H_
