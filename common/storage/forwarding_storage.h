// storage::ForwardingStorage: the thread-safe public face that the Storage backends
// share.
//
// A backend has two parts. Its connection class is a single-threaded Storage over one
// database connection: it validates input, runs the SQL, and is the Storage& that
// RunInTransaction hands to bodies (for both backends, storage::SqlStorage in
// sql_storage.h over that backend's driver and dialect). Its public class (SqliteStorage, PostgresStorage)
// derives from ForwardingStorage, owns the connections and implements one hook,
// WithConnection(), which lends a connection to one call at a time (SQLite: its single
// connection under a mutex; PostgreSQL: one from its pool).
//
// ForwardingStorage implements every Storage method the same way:
//   1. a call made on this object from inside its own RunInTransaction body, on the
//      body's thread, is FAILED_PRECONDITION (the body must use the Storage& it
//      receives; waiting for the connection the body holds would deadlock);
//   2. WithConnection() lends a connection; when that fails (PostgreSQL: cannot
//      connect) its status is returned and nothing is called;
//   3. the call is forwarded to the connection and its result returned.
// RunInTransaction also holds a mutex of this object for the whole body, so bodies from
// one process run one at a time, and forwards to the connection's RunInTransaction.
//
// Thread-safety: safe for concurrent use, given a thread-safe WithConnection().
#ifndef KAGENT_COMMON_STORAGE_FORWARDING_STORAGE_H_
#define KAGENT_COMMON_STORAGE_FORWARDING_STORAGE_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/storage/storage.h"

namespace kagent::storage {

class ForwardingStorage : public Storage {
 public:
  ~ForwardingStorage() override = default;
  ForwardingStorage(const ForwardingStorage&) = delete;
  ForwardingStorage& operator=(const ForwardingStorage&) = delete;

#include "common/storage/storage_overrides.inc"

 protected:
  ForwardingStorage() = default;

  // Runs `call` on a connection that no other thread uses until `call` returns, and
  // returns `call`'s status. When no connection can be had, returns why without calling
  // `call`. Called from many threads at once.
  virtual absl::Status WithConnection(absl::FunctionRef<absl::Status(Storage&)> call) = 0;

 private:
  // Steps 1 to 3 above for one call: `fn(connection)` returns the call's result.
  template <typename Fn>
  auto Forward(Fn fn) -> decltype(fn(std::declval<Storage&>()));

  // FAILED_PRECONDITION when the calling thread is inside RunInTransaction's body.
  absl::Status CheckNotReentrant() const;

  // Held for the whole body of RunInTransaction: one transaction at a time per object.
  absl::Mutex transaction_mu_;
  // The thread running a RunInTransaction body, if any.
  std::atomic<std::thread::id> transaction_thread_{};
};

}  // namespace kagent::storage

#endif  // KAGENT_COMMON_STORAGE_FORWARDING_STORAGE_H_
