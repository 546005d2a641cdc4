#include "common/storage/storage_factory.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/storage/postgres_storage.h"
#include "common/storage/sqlite_storage.h"
#include "common/storage/validation.h"

namespace kagent {
namespace {

constexpr absl::string_view kKnownSchemes =
    "sqlite:PATH, a plain file path (SQLite), postgres://... or postgresql://... "
    "(a PostgreSQL connection URI)";

// The scheme of `url` ("" when it has none): letters, digits, '+', '-', '.' before the
// first ':', starting with a letter, and at least two characters long so that a
// Windows-style "C:\..." is not taken for one.
std::string SchemeOf(absl::string_view url) {
  const size_t colon = url.find(':');
  if (colon == absl::string_view::npos || colon < 2) return "";
  if (!absl::ascii_isalpha(static_cast<unsigned char>(url[0]))) return "";
  for (size_t i = 0; i < colon; ++i) {
    const unsigned char c = static_cast<unsigned char>(url[i]);
    if (!absl::ascii_isalnum(c) && c != '+' && c != '-' && c != '.') return "";
  }
  return absl::AsciiStrToLower(url.substr(0, colon));
}

}  // namespace

absl::StatusOr<StorageUrl> ParseStorageUrl(absl::string_view url) {
  if (url.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("storage URL is empty; give one of: ", kKnownSchemes));
  }
  const std::string scheme = SchemeOf(url);
  if (scheme.empty()) {
    // A plain path: SQLite.
    return StorageUrl{StorageBackend::kSqlite, std::string(url)};
  }
  if (scheme == "sqlite") {
    absl::string_view path = url.substr(scheme.size() + 1);
    // Accept sqlite:///abs/path and sqlite://relative as the common URL spellings.
    if (absl::StartsWith(path, "//")) path.remove_prefix(2);
    if (path.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "storage URL ", storage::QuoteValue(url),
          " has no path; write sqlite:/path/to/kagent.db (or sqlite::memory:)"));
    }
    return StorageUrl{StorageBackend::kSqlite, std::string(path)};
  }
  if (scheme == "postgres" || scheme == "postgresql") {
    if (!absl::StartsWith(url.substr(scheme.size() + 1), "//")) {
      // Not echoed: without "//" the password cannot be told apart to redact it.
      return absl::InvalidArgumentError(absl::StrCat(
          "storage URL with scheme \"", scheme,
          "\" is not a PostgreSQL connection URI; write ", scheme,
          "://user:password@host:5432/dbname"));
    }
    return StorageUrl{StorageBackend::kPostgres, std::string(url)};
  }
  return absl::InvalidArgumentError(absl::StrCat("storage URL scheme \"", scheme,
                                                 "\" is not supported; use ", kKnownSchemes));
}

std::string RedactStorageUrl(absl::string_view url) {
  std::string out(url);
  const std::string scheme = SchemeOf(url);
  if (scheme != "postgres" && scheme != "postgresql") return out;
  // userinfo: between "://" and the last '@' of the authority.
  const size_t start = out.find("://");
  if (start != std::string::npos) {
    const size_t authority = start + 3;
    size_t end = out.find_first_of("/?", authority);
    if (end == std::string::npos) end = out.size();
    const size_t at = out.rfind('@', end);
    if (at != std::string::npos && at >= authority) {
      const size_t colon = out.find(':', authority);
      if (colon != std::string::npos && colon < at) {
        out.replace(colon + 1, at - colon - 1, "***");
      }
    }
  }
  // password=... in the query string.
  size_t pos = 0;
  while ((pos = out.find("password=", pos)) != std::string::npos) {
    const size_t value = pos + 9;
    size_t end = out.find('&', value);
    if (end == std::string::npos) end = out.size();
    out.replace(value, end - value, "***");
    pos = value + 3;
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Storage>> OpenStorage(const std::string& url) {
  KAGENT_ASSIGN_OR_RETURN(StorageUrl parsed, ParseStorageUrl(url));
  switch (parsed.backend) {
    case StorageBackend::kSqlite: {
      KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStorage> storage,
                              SqliteStorage::Open({.path = parsed.target}));
      return std::unique_ptr<Storage>(std::move(storage));
    }
    case StorageBackend::kPostgres: {
      KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<PostgresStorage> storage,
                              PostgresStorage::Open({.url = parsed.target}));
      return std::unique_ptr<Storage>(std::move(storage));
    }
  }
  return absl::InternalError("unknown storage backend");
}

}  // namespace kagent
