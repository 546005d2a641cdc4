#include "common/storage/testing/full_disk.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace kagent::testing {
namespace {

// The connections SQLite opened while a FullDisk was alive: the last one on its path.
absl::Mutex captured_mu;
std::string* captured_path ABSL_GUARDED_BY(captured_mu) = nullptr;
sqlite3* captured_db ABSL_GUARDED_BY(captured_mu) = nullptr;

int Capture(sqlite3* db, char**, const sqlite3_api_routines*) {
  absl::MutexLock lock(&captured_mu);
  const char* file = sqlite3_db_filename(db, "main");
  // The first connection on the path is the storage's (later ones are our own).
  if (captured_path != nullptr && captured_db == nullptr && file != nullptr &&
      std::filesystem::path(file).filename() == "kagent.db" &&
      std::string(file).rfind(*captured_path, 0) == 0) {
    captured_db = db;
  }
  return SQLITE_OK;
}

std::string Filler(const std::string& dir) { return dir + "/filler"; }

}  // namespace

FullDisk::FullDisk(int64_t bytes) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "kagent-full-disk-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  dir_ = tmpl;
  const std::string options = absl::StrCat("size=", bytes, ",mode=0700");
  const char* no_mount = std::getenv("KAGENT_FULL_DISK_NO_MOUNT");  // to test the fallback
  if (no_mount != nullptr && no_mount[0] == '1') {
    mount_error_ = "KAGENT_FULL_DISK_NO_MOUNT=1";
  } else if (mount("tmpfs", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) == 0) {
    mounted_ = true;
  } else {
    mount_error_ = std::strerror(errno);
  }
  {
    absl::MutexLock lock(&captured_mu);
    captured_path = new std::string(dir_);
    captured_db = nullptr;
  }
  sqlite3_auto_extension(reinterpret_cast<void (*)()>(&Capture));
}

FullDisk::~FullDisk() {
  sqlite3_cancel_auto_extension(reinterpret_cast<void (*)()>(&Capture));
  {
    absl::MutexLock lock(&captured_mu);
    delete captured_path;
    captured_path = nullptr;
    captured_db = nullptr;
  }
  if (mounted_ && umount2(dir_.c_str(), MNT_DETACH) != 0) {
    std::fprintf(stderr, "FullDisk: umount %s: %s\n", dir_.c_str(), std::strerror(errno));
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

absl::Status FullDisk::CheckpointWal() {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path().c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_busy_timeout(db, 10000);
    rc = sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  }
  std::string error = db != nullptr ? sqlite3_errmsg(db) : "cannot open";
  sqlite3_close(db);
  if (rc != SQLITE_OK) return absl::InternalError(absl::StrCat("checkpoint: ", error));
  return absl::OkStatus();
}

absl::Status FullDisk::SetMaxPageCount(int64_t pages) {
  if (storage_ == nullptr) return absl::FailedPreconditionError("FullDisk: Attach() first");
  return storage_->RunInTransaction([&](Storage&) -> absl::Status {
    absl::MutexLock lock(&captured_mu);  // the storage's connection is ours in here
    if (captured_db == nullptr) return absl::FailedPreconditionError("no connection captured");
    const std::string sql = absl::StrCat("PRAGMA max_page_count=", pages);
    if (sqlite3_exec(captured_db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      return absl::InternalError(sqlite3_errmsg(captured_db));
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<int64_t> FullDisk::PageCount() {
  int64_t pages = -1;
  absl::Status s = storage_->RunInTransaction([&](Storage&) -> absl::Status {
    absl::MutexLock lock(&captured_mu);
    if (captured_db == nullptr) return absl::FailedPreconditionError("no connection captured");
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(captured_db, "PRAGMA page_count", -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      pages = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
    return pages < 0 ? absl::InternalError("PRAGMA page_count") : absl::OkStatus();
  });
  if (!s.ok()) return s;
  return pages;
}

absl::Status FullDisk::FillLeaving(int64_t spare_bytes) {
  if (mounted_) {
    if (absl::Status s = Free(); !s.ok()) return s;
    if (absl::Status s = CheckpointWal(); !s.ok()) return s;
    int fd = open(Filler(dir_).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return absl::InternalError(absl::StrCat("filler: ", std::strerror(errno)));
    static const std::string kBlock(4096, 'x');
    int64_t written = 0;
    while (true) {
      ssize_t n = write(fd, kBlock.data(), kBlock.size());
      if (n <= 0) break;
      written += n;
    }
    const int err = errno;
    int rc = ftruncate(fd, std::max<int64_t>(0, written - spare_bytes));
    close(fd);
    if (err != ENOSPC) return absl::InternalError(absl::StrCat("filler: ", std::strerror(err)));
    if (rc != 0) return absl::InternalError("filler: ftruncate failed");
    return absl::OkStatus();
  }
  if (storage_ == nullptr) return absl::FailedPreconditionError("FullDisk: Attach() first");
  if (absl::Status s = Free(); !s.ok()) return s;
  absl::StatusOr<int64_t> pages = PageCount();
  if (!pages.ok()) return pages.status();
  if (absl::Status s = SetMaxPageCount(*pages); !s.ok()) return s;
  if (!slack_filled_) {
    // Small rows until the pages they go to have no room: then a real job, its event or
    // any larger write needs a new page.
    v1::Job job;
    job.set_tenant("filler");
    job.set_state(v1::JOB_STATE_DONE);
    v1::JobEvent event;
    event.set_type(v1::JOB_EVENT_LOG);
    for (int i = 0; i < 100000; ++i) {
      job.set_id(absl::StrCat("filler-", filler_rows_++));
      if (!storage_->CreateJob(job, "").ok()) break;
    }
    for (int i = 0; i < 100000; ++i) {
      if (!storage_->AppendEvent("filler-0", event).ok()) break;
    }
    slack_filled_ = true;
  }
  return SetMaxPageCount(*pages + spare_bytes / 4096);
}

absl::Status FullDisk::Free() {
  if (mounted_) {
    std::error_code ec;
    std::filesystem::remove(Filler(dir_), ec);
    if (ec) return absl::InternalError(absl::StrCat("filler: ", ec.message()));
    return absl::OkStatus();
  }
  if (storage_ == nullptr) return absl::OkStatus();
  return SetMaxPageCount(1073741823);
}

}  // namespace kagent::testing
