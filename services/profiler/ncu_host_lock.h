// One Nsight Compute run at a time on a host. Two ncu runs that overlap break each other:
// on the H200 (2026-12-05, kagentd with 8 jobs) every profile started while another ncu
// run was alive came back with no kernels captured, and of two started together one hung
// until its deadline; each profile run alone succeeded. ncu's front end and the library
// it injects meet through files in the shared temp dir (kNcuTempDir), so the runs are
// serialized with an flock(2) on a file there: across the threads of one process (each
// lock opens the file anew, and flock treats separate opens independently) and across
// the processes of one host (several workers, kagent_profile_once). A TMPDIR of each run's
// own (ncu keeps its nsight-compute-lock file there) does not make overlapping runs work:
// tried on the H200 (2026-12-05, a suite slice through kagentd, each run in its own
// /tmp/kagent-ncu-* TMPDIR, the GPU slot serializing the profiled forwards): 7 of 17
// profiles captured no kernels and 2 hung until their deadline.
//
// Thread-safe; a NcuHostLock object is used by one thread.
#ifndef KAGENT_SERVICES_PROFILER_NCU_HOST_LOCK_H_
#define KAGENT_SERVICES_PROFILER_NCU_HOST_LOCK_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/cancel.h"

namespace kagent {

// The lock file every ncu run of a host takes: <kNcuTempDir>/kagent-ncu.lock.
std::string DefaultNcuLockPath();

class NcuHostLock {
 public:
  explicit NcuHostLock(std::string path) : path_(std::move(path)) {}
  ~NcuHostLock();  // releases the lock when held
  NcuHostLock(const NcuHostLock&) = delete;
  NcuHostLock& operator=(const NcuHostLock&) = delete;

  // Waits (polling every 50 ms) until this host has no other ncu run holding the lock,
  // then holds it. DEADLINE_EXCEEDED when `timeout` passes first, CANCELLED when `cancel`
  // (may be null) is cancelled first, INTERNAL when the lock file cannot be opened.
  // Precondition: not held.
  absl::Status Acquire(absl::Duration timeout, const CancelToken* cancel);
  // How long the last Acquire waited (zero when the lock was free at once).
  absl::Duration waited() const { return waited_; }
  bool held() const { return fd_ >= 0; }
  void Release();

 private:
  const std::string path_;
  int fd_ = -1;
  absl::Duration waited_;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_PROFILER_NCU_HOST_LOCK_H_
