// FencedStorage: a Storage whose every write commits only while a fence holds.
//
// A coordinator replica that leads by a lease (services/coordinator/leader_election.h)
// must not write once another replica has taken over, even if it was paused (GC, a
// stopped VM, a network cut) past its lease and does not know yet. FencedStorage makes
// each write one transaction of the wrapped storage that first calls `fence` on the
// transaction's Storage& (the leader's fence is Storage::CheckLease, which also locks
// the lease until the transaction ends), then writes:
//
//   FencedStorage fenced(&postgres, [&](Storage& tx) { return elector.CheckFence(tx); });
//   fenced.PutCandidate(c);   // BEGIN; CheckLease; INSERT ...; COMMIT
//
// When the fence fails, nothing is written and its status is returned (CheckLease:
// FAILED_PRECONDITION "fenced: ..."). RunInTransaction calls the fence first, then the
// body, in the same transaction. Reads and the lease methods are passed through
// unfenced.
//
// Costs: a write is one more statement and a transaction; the wrapped backend's
// RunInTransaction contract applies (bodies from one process run one at a time).
// Thread-safety: as the wrapped storage; `fence` is called from many threads at once.
#ifndef KAGENT_COMMON_STORAGE_FENCED_STORAGE_H_
#define KAGENT_COMMON_STORAGE_FENCED_STORAGE_H_

#include <functional>
#include <utility>

#include "common/storage/storage.h"

namespace kagent {

class FencedStorage final : public Storage {
 public:
  using Fence = std::function<absl::Status(Storage& transaction)>;

  // `inner` is borrowed and must outlive this object.
  FencedStorage(Storage* inner, Fence fence) : inner_(inner), fence_(std::move(fence)) {}

#include "common/storage/storage_overrides.inc"

 private:
  // Runs `write(tx)` in a transaction of inner_ after the fence passed.
  template <typename Fn>
  auto Fenced(Fn write) -> decltype(write(std::declval<Storage&>()));

  Storage* const inner_;
  const Fence fence_;
};

}  // namespace kagent

#endif  // KAGENT_COMMON_STORAGE_FENCED_STORAGE_H_
