// FullDisk: a place for a SQLite database that a test can make full, and free again.
//
// Where the process may mount file systems (root, as on CI), the database lives on its own
// small tmpfs: FillLeaving(n) checkpoints and truncates the database's WAL, then writes a
// filler file until the file system is out of space (ENOSPC) and gives `n` bytes back;
// Free() deletes the filler. Every SQLite write then fails with SQLITE_FULL ("database
// or disk is full") as on a real full disk.
//
// Elsewhere it falls back to SQLite's PRAGMA max_page_count on the storage's own
// connection (captured with sqlite3_auto_extension while the storage opens):
// FillLeaving(n) first fills the slack in the database's pages (small rows of tenant
// "filler", jobs in state DONE, so nothing resumes them), then caps the database at its
// size plus n / 4096 pages; Free() lifts the cap. mounted() says which one is in use;
// tests say so with a Catch2 WARN. KAGENT_FULL_DISK_NO_MOUNT=1 in the environment forces
// the fallback (to check it where mounting works).
//
// Usage: construct, open the storage at path(), then Attach(storage) before filling.
// Not thread-safe; Fill/Free may run while other threads use the storage (the cap is set
// inside a RunInTransaction body, which holds the storage's connection).
#ifndef KAGENT_COMMON_STORAGE_TESTING_FULL_DISK_H_
#define KAGENT_COMMON_STORAGE_TESTING_FULL_DISK_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "common/storage/storage.h"

struct sqlite3;

namespace kagent::testing {

class FullDisk {
 public:
  // Mounts a tmpfs of `bytes` (or, when that is refused, uses a temporary directory).
  explicit FullDisk(int64_t bytes = 4 << 20);
  ~FullDisk();  // unmounts and removes the directory
  FullDisk(const FullDisk&) = delete;
  FullDisk& operator=(const FullDisk&) = delete;

  bool mounted() const { return mounted_; }
  // Why mounting failed ("" when mounted).
  const std::string& mount_error() const { return mount_error_; }
  // Where to open the SQLite database.
  std::string path() const { return dir_ + "/kagent.db"; }

  // The storage opened at path(), after it was opened (the fallback needs its connection).
  void Attach(Storage* storage) { storage_ = storage; }

  // Makes the disk full but for about `spare_bytes`.
  absl::Status FillLeaving(int64_t spare_bytes);
  absl::Status Fill() { return FillLeaving(0); }
  absl::Status Free();

 private:
  absl::Status CheckpointWal();
  absl::Status SetMaxPageCount(int64_t pages);
  absl::StatusOr<int64_t> PageCount();

  std::string dir_;
  bool mounted_ = false;
  std::string mount_error_;
  Storage* storage_ = nullptr;
  bool slack_filled_ = false;
  int filler_rows_ = 0;
};

}  // namespace kagent::testing

#endif  // KAGENT_COMMON_STORAGE_TESTING_FULL_DISK_H_
