#include "services/profiler/ncu_host_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "services/profiler/ncu_backend.h"

namespace kagent {

std::string DefaultNcuLockPath() { return absl::StrCat(kNcuTempDir, "/kagent-ncu.lock"); }

NcuHostLock::~NcuHostLock() { Release(); }

void NcuHostLock::Release() {
  if (fd_ < 0) return;
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
  fd_ = -1;
}

absl::Status NcuHostLock::Acquire(absl::Duration timeout, const CancelToken* cancel) {
  const absl::Time start = absl::Now();
  waited_ = absl::ZeroDuration();
  // Created readable and writable by every user (the workers of a host may run as root or
  // as the sandbox's user); an existing file another user made is opened read-only, which
  // flock accepts as well.
  int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd >= 0) {
    ::fchmod(fd, 0666);  // past the umask; fails harmlessly on another user's file
  } else {
    fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open the ncu lock file ", path_, ": ", std::strerror(errno)));
  }
  for (bool first = true;; first = false) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      fd_ = fd;
      waited_ = first ? absl::ZeroDuration() : absl::Now() - start;  // free at once: no wait
      return absl::OkStatus();
    }
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const int err = errno;
      ::close(fd);
      return absl::InternalError(
          absl::StrCat("cannot lock the ncu lock file ", path_, ": ", std::strerror(err)));
    }
    if (cancel != nullptr && cancel->cancelled()) {
      ::close(fd);
      return absl::CancelledError("profiling cancelled while waiting for another ncu run");
    }
    if (absl::Now() - start >= timeout) {
      ::close(fd);
      return absl::DeadlineExceededError(absl::StrCat(
          "another ncu run on this host held ", path_, " for the whole ",
          absl::FormatDuration(timeout), " this profile could wait (ncu runs one at a time)"));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

}  // namespace kagent
