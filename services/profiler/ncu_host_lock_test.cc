// The host's ncu lock: one holder at a time, across threads and across processes.
#include "services/profiler/ncu_host_lock.h"

#include <sys/file.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "absl/time/clock.h"

namespace kagent {
namespace {

std::string TempLockPath() {
  std::string dir = std::filesystem::temp_directory_path() / "kagent-ncu-lock-XXXXXX";
  REQUIRE(::mkdtemp(dir.data()) != nullptr);
  return dir + "/kagent-ncu.lock";
}

TEST_CASE("ncu host lock: the default file is in ncu's temp dir") {
  CHECK(DefaultNcuLockPath() == "/tmp/kagent-ncu.lock");
}

TEST_CASE("ncu host lock: a second holder waits for the first, then gets it") {
  const std::string path = TempLockPath();
  NcuHostLock first(path);
  REQUIRE(first.Acquire(absl::Seconds(1), nullptr).ok());
  CHECK(first.held());
  CHECK(std::filesystem::exists(path));

  std::atomic<bool> got{false};
  absl::Duration waited;
  std::thread second_thread([&] {
    NcuHostLock second(path);
    absl::Status s = second.Acquire(absl::Seconds(10), nullptr);
    got = s.ok();
    waited = second.waited();
  });
  absl::SleepFor(absl::Milliseconds(300));
  CHECK_FALSE(got.load());  // the first still holds it
  first.Release();
  CHECK_FALSE(first.held());
  second_thread.join();
  CHECK(got.load());
  CHECK(waited >= absl::Milliseconds(250));
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST_CASE("ncu host lock: the wait ends at the timeout or on cancel, saying which") {
  const std::string path = TempLockPath();
  NcuHostLock holder(path);
  REQUIRE(holder.Acquire(absl::Seconds(1), nullptr).ok());

  NcuHostLock late(path);
  absl::Time t0 = absl::Now();
  absl::Status s = late.Acquire(absl::Milliseconds(200), nullptr);
  CHECK(s.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(s.message().find("another ncu run") != absl::string_view::npos);
  CHECK(absl::Now() - t0 >= absl::Milliseconds(200));
  CHECK_FALSE(late.held());

  CancelToken cancel;
  std::thread canceller([&] {
    absl::SleepFor(absl::Milliseconds(100));
    cancel.Cancel();
  });
  s = late.Acquire(absl::Seconds(30), &cancel);
  canceller.join();
  CHECK(s.code() == absl::StatusCode::kCancelled);
  CHECK_FALSE(late.held());
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST_CASE("ncu host lock: another process holding it makes this one wait") {
  const std::string path = TempLockPath();
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Only async-signal-safe calls here: take the lock as another ncu run would, say so,
    // hold it for 400 ms, exit (which releases it).
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0666);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(1);
    char c = 'x';
    if (::write(ready[1], &c, 1) != 1) ::_exit(1);
    struct timespec ts = {0, 400 * 1000 * 1000};
    ::nanosleep(&ts, nullptr);
    ::_exit(0);
  }
  ::close(ready[1]);
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  ::close(ready[0]);
  NcuHostLock lock(path);
  REQUIRE(lock.Acquire(absl::Seconds(10), nullptr).ok());
  CHECK(lock.waited() >= absl::Milliseconds(250));
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

}  // namespace
}  // namespace kagent
