// OpenStorage: the Storage backend named by a URL, for binaries that take the backend
// from configuration (the coordinator's --db flag, kagentd).
//
//   sqlite:/var/lib/kagent/kagent.db      SqliteStorage on that file (sqlite::memory: for
//                                         a private in-memory database)
//   /var/lib/kagent/kagent.db             a plain path (no scheme): SQLite as well
//   postgresql://user:pw@host:5432/kagent PostgresStorage; a libpq connection URI, with
//   postgres://...                        any libpq parameters (?sslmode=require, ...)
//
// Errors: INVALID_ARGUMENT for an empty URL, an unknown scheme (the message lists the
// known ones), or an empty path; otherwise the backend's Open() status (see
// sqlite_storage.h and postgres_storage.h): FAILED_PRECONDITION, DATA_LOSS,
// UNAVAILABLE (server unreachable; the message never holds the password), ...
//
// Thread-safety: OpenStorage is safe to call from any thread. The caller owns the
// returned Storage.
#ifndef KAGENT_COMMON_STORAGE_STORAGE_FACTORY_H_
#define KAGENT_COMMON_STORAGE_STORAGE_FACTORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/storage/storage.h"

namespace kagent {

enum class StorageBackend { kSqlite, kPostgres };

// What a storage URL names, without opening anything.
struct StorageUrl {
  StorageBackend backend = StorageBackend::kSqlite;
  // SQLite: the file path (or ":memory:"). PostgreSQL: the URL unchanged (libpq parses
  // it).
  std::string target{};
};

// Parses a storage URL (the forms above). INVALID_ARGUMENT for an empty URL, an
// unknown scheme, or "sqlite:" without a path.
absl::StatusOr<StorageUrl> ParseStorageUrl(absl::string_view url);

// The URL with any password replaced by "***", for logs and messages.
std::string RedactStorageUrl(absl::string_view url);

// Opens the backend `url` names, with the backend's default options.
absl::StatusOr<std::unique_ptr<Storage>> OpenStorage(const std::string& url);

}  // namespace kagent

#endif  // KAGENT_COMMON_STORAGE_STORAGE_FACTORY_H_
