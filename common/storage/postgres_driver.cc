#include "common/storage/postgres_driver.h"

#include <libpq-fe.h>
#include <poll.h>

#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "common/status.h"
#include "common/storage/storage.h"

namespace kagent::storage {
namespace {

// Type OIDs of the parameters we send and the integer columns we read (binary format).
constexpr Oid kByteaOid = 17;
constexpr Oid kInt8Oid = 20;
constexpr Oid kInt2Oid = 21;
constexpr Oid kInt4Oid = 23;
constexpr Oid kTextOid = 25;
constexpr Oid kBoolOid = 16;

// Removes `secret` from `text` (a message that might echo it).
std::string Scrub(std::string text, const std::string& secret) {
  if (secret.size() >= 1) absl::StrReplaceAll({{secret, "***"}}, &text);
  return text;
}

struct ResultDeleter {
  void operator()(PGresult* result) const { PQclear(result); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// True when the command succeeded (with or without rows).
bool Succeeded(const PGresult* result) {
  ExecStatusType status = PQresultStatus(result);
  return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
}

std::string BigEndian(int64_t value) {
  std::string bytes(8, '\0');
  uint64_t v = static_cast<uint64_t>(value);
  for (int i = 7; i >= 0; --i) {
    bytes[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  return bytes;
}

// Every row of a successful binary-format result.
SqlRows ReadRows(const PGresult* result) {
  SqlRows rows;
  const int columns = PQnfields(result);
  for (int row = 0; row < PQntuples(result); ++row) {
    std::vector<SqlRows::Cell> cells(columns);
    for (int column = 0; column < columns; ++column) {
      SqlRows::Cell& cell = cells[column];
      cell.null = PQgetisnull(result, row, column) != 0;
      const int length = PQgetlength(result, row, column);
      cell.bytes.assign(PQgetvalue(result, row, column), static_cast<size_t>(length));
      const Oid type = PQftype(result, column);
      if (type != kInt8Oid && type != kInt4Oid && type != kInt2Oid && type != kBoolOid) continue;
      cell.is_integer = true;
      const auto* bytes = reinterpret_cast<const unsigned char*>(cell.bytes.data());
      uint64_t v = 0;
      for (int i = 0; i < length; ++i) v = (v << 8) | bytes[i];
      if (length == 4) {
        cell.integer = static_cast<int32_t>(static_cast<uint32_t>(v));
      } else if (length == 2) {
        cell.integer = static_cast<int16_t>(static_cast<uint16_t>(v));
      } else {
        cell.integer = static_cast<int64_t>(v);
      }
    }
    rows.AddRow(std::move(cells));
  }
  const char* count = PQcmdTuples(const_cast<PGresult*>(result));
  rows.set_affected(count != nullptr && count[0] != '\0' ? std::strtoll(count, nullptr, 10) : 0);
  return rows;
}

void IgnoreNotice(void*, const char*) {}

}  // namespace

std::string CleanPostgresMessage(absl::string_view message) {
  std::string out(absl::StripAsciiWhitespace(message));
  absl::StrReplaceAll({{"\n", " "}, {"\t", " "}}, &out);
  return out;
}

std::string PostgresPasswordOf(const std::string& url) {
  std::string password;
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (error != nullptr) PQfreemem(error);
  if (options == nullptr) return password;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (std::strcmp(o->keyword, "password") == 0 && o->val != nullptr) password = o->val;
  }
  PQconninfoFree(options);
  return password;
}

absl::StatusOr<std::unique_ptr<PostgresConnection>> PostgresConnection::Connect(
    const std::string& url, int connect_timeout_s, int lock_timeout_ms,
    const std::string& description) {
  const std::string password = PostgresPasswordOf(url);
  bool has_timeout = false;
  {
    char* error = nullptr;
    PQconninfoOption* parsed = PQconninfoParse(url.c_str(), &error);
    if (error != nullptr) PQfreemem(error);
    if (parsed != nullptr) {
      for (PQconninfoOption* o = parsed; o->keyword != nullptr; ++o) {
        if (std::strcmp(o->keyword, "connect_timeout") == 0 && o->val != nullptr) {
          has_timeout = true;
        }
      }
      PQconninfoFree(parsed);
    }
  }
  const std::string timeout = absl::StrCat(connect_timeout_s);
  std::vector<const char*> keys = {"dbname", "client_encoding", "fallback_application_name"};
  std::vector<const char*> values = {url.c_str(), "UTF8", "kagent"};
  if (!has_timeout) {
    keys.push_back("connect_timeout");
    values.push_back(timeout.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  PGconn* conn = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
  if (conn == nullptr) {
    return absl::ResourceExhaustedError("libpq could not allocate a connection");
  }
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string reason = Scrub(CleanPostgresMessage(PQerrorMessage(conn)), password);
    PQfinish(conn);
    return StorageFailure(absl::StatusCode::kUnavailable,
                          absl::StrCat("postgres ", description, ": cannot connect: ", reason),
                          "postgres: cannot connect to the database server");
  }
  PQsetNoticeProcessor(conn, IgnoreNotice, nullptr);
  std::unique_ptr<PostgresConnection> connection(new PostgresConnection(conn, description));
  if (PQserverVersion(conn) < 110000) {
    return absl::FailedPreconditionError(absl::StrCat(
        "postgres ", description, ": server version ", PQserverVersion(conn),
        " is too old; kagent needs PostgreSQL 11 or newer"));
  }
  KAGENT_RETURN_IF_ERROR(connection->Exec(absl::StrCat("SET lock_timeout = ", lock_timeout_ms),
                                          "setting lock_timeout"));
  return connection;
}

PostgresConnection::~PostgresConnection() { PQfinish(conn_); }

bool PostgresConnection::LooksAlive() {
  if (PQstatus(conn_) != CONNECTION_OK || PQtransactionStatus(conn_) != PQTRANS_IDLE) {
    return false;
  }
  pollfd fd{PQsocket(conn_), POLLIN, 0};
  if (fd.fd < 0) return false;
  // We never LISTEN, so an idle connection receives nothing unless the server is
  // going away (a termination message, then EOF: a restart, an idle timeout, an
  // administrator's pg_terminate_backend). Treat anything readable as dead.
  return poll(&fd, 1, 0) == 0;
}

bool PostgresConnection::Reusable() const {
  return PQstatus(conn_) == CONNECTION_OK && PQtransactionStatus(conn_) == PQTRANS_IDLE &&
         depth_ == 0;
}

absl::Status PostgresConnection::Error(const PGresult* result, absl::string_view what) const {
  const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  const std::string sqlstate = state != nullptr ? state : "";
  const char* primary =
      result != nullptr ? PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  std::string detail = CleanPostgresMessage(primary != nullptr ? primary : PQerrorMessage(conn_));
  const std::string code_note = sqlstate.empty() ? "" : absl::StrCat(" (SQLSTATE ", sqlstate, ")");
  std::string message = absl::StrCat("postgres ", description_, ": ", what,
                                     what.empty() ? "" : ": ", detail, code_note);
  // The log gets `message` (server, statement, the server's text). A client gets the
  // server's text only where it names no file or host (disk, I/O, corruption and
  // connection errors do): there a plain description.
  auto failure = [&](absl::StatusCode code, absl::string_view suffix,
                     absl::string_view client_text = "") {
    return StorageFailure(
        code, absl::StrCat(message, suffix),
        absl::StrCat("postgres: ", client_text.empty() ? detail : std::string(client_text),
                     code_note, client_text.empty() ? suffix : ""));
  };
  if (PQstatus(conn_) != CONNECTION_OK || sqlstate.empty() || absl::StartsWith(sqlstate, "08") ||
      sqlstate == "57P01" || sqlstate == "57P02" || sqlstate == "57P03" ||
      sqlstate == "53300") {
    return failure(absl::StatusCode::kUnavailable, "; the connection to the server failed",
                   "the connection to the database server failed");
  }
  if (sqlstate == "40001" || sqlstate == "40P01") {
    return failure(absl::StatusCode::kAborted,
                   "; a concurrent transaction changed the same rows: re-read and retry");
  }
  if (sqlstate == "55P03" || sqlstate == "57014") {
    return failure(absl::StatusCode::kUnavailable,
                   " (another transaction holds the lock past lock_timeout)");
  }
  if (sqlstate == "53100") {
    return failure(absl::StatusCode::kResourceExhausted, " (disk full?)",
                   "the database server's disk is full");
  }
  if (absl::StartsWith(sqlstate, "53") || absl::StartsWith(sqlstate, "54")) {
    return failure(absl::StatusCode::kResourceExhausted, "",
                   "the database server is out of resources");
  }
  if (absl::StartsWith(sqlstate, "58")) {  // I/O error
    return failure(absl::StatusCode::kUnavailable, "", "I/O error on the database server");
  }
  if (sqlstate == "XX001" || sqlstate == "XX002") {
    return failure(absl::StatusCode::kDataLoss,
                   ". The database is corrupt; restore it from a backup (see docs/storage.md)",
                   "the database is corrupt");
  }
  if (absl::StartsWith(sqlstate, "23")) {
    return failure(absl::StatusCode::kFailedPrecondition, " (constraint violated)");
  }
  if (absl::StartsWith(sqlstate, "42501") || absl::StartsWith(sqlstate, "25006") ||
      absl::StartsWith(sqlstate, "28")) {
    return failure(absl::StatusCode::kFailedPrecondition, "");
  }
  return failure(absl::StatusCode::kInternal, "", absl::StartsWith(sqlstate, "XX")
                                                      ? "internal error of the database server"
                                                      : "");
}

absl::StatusOr<SqlRows> PostgresConnection::Query(absl::string_view sql, const SqlParams& params,
                                                  absl::string_view what) {
  const std::string text(sql);
  std::vector<Oid> types;
  std::vector<std::string> encoded;  // int8 values in network order
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
  encoded.reserve(params.values().size());
  for (const SqlParams::Value& value : params.values()) {
    formats.push_back(1);
    switch (value.type) {
      case SqlParams::Type::kInt:
        types.push_back(kInt8Oid);
        encoded.push_back(BigEndian(value.integer));
        values.push_back(encoded.back().data());
        lengths.push_back(8);
        break;
      case SqlParams::Type::kText:
      case SqlParams::Type::kBlob:
        types.push_back(value.type == SqlParams::Type::kText ? kTextOid : kByteaOid);
        values.push_back(value.bytes.data());
        lengths.push_back(static_cast<int>(value.bytes.size()));
        break;
      case SqlParams::Type::kNullText:
        types.push_back(kTextOid);
        values.push_back(nullptr);
        lengths.push_back(0);
        break;
    }
  }
  Result result(PQexecParams(conn_, text.c_str(), static_cast<int>(types.size()), types.data(),
                             values.data(), lengths.data(), formats.data(),
                             /*resultFormat=*/1));
  if (!Succeeded(result.get())) {
    return Error(result.get(), what.empty() ? sql.substr(0, 60) : what);
  }
  return ReadRows(result.get());
}

absl::Status PostgresConnection::Exec(absl::string_view sql, absl::string_view what) {
  const std::string text(sql);
  Result result(PQexec(conn_, text.c_str()));
  if (!Succeeded(result.get())) return Error(result.get(), what);
  return absl::OkStatus();
}

absl::Status PostgresConnection::Atomically(absl::FunctionRef<absl::Status()> fn,
                                            bool snapshot) {
  const int level = depth_;
  const std::string savepoint = absl::StrCat("kagent_", level);
  if (level == 0) {
    KAGENT_RETURN_IF_ERROR(Exec(
        snapshot ? "BEGIN ISOLATION LEVEL REPEATABLE READ" : "BEGIN", "beginning a transaction"));
  } else {
    KAGENT_RETURN_IF_ERROR(Exec(absl::StrCat("SAVEPOINT ", savepoint), "creating a savepoint"));
  }
  ++depth_;
  absl::Status status = fn();
  --depth_;
  if (status.ok() && PQtransactionStatus(conn_) == PQTRANS_INERROR) {
    // A statement failed and its error was dropped: COMMIT would silently roll back.
    status = StorageFailure(
        absl::StatusCode::kAborted,
        absl::StrCat("postgres ", description_,
                     ": a statement in the transaction failed and the transaction was "
                     "rolled back"),
        "postgres: a statement in the transaction failed and the transaction was rolled back");
  }
  if (status.ok()) {
    status = level == 0 ? Exec("COMMIT", "committing")
                        : Exec(absl::StrCat("RELEASE SAVEPOINT ", savepoint),
                               "releasing a savepoint");
    if (status.ok()) return status;
  }
  // Undo. A failed rollback (connection lost) leaves nothing better to report than the
  // first error; the broken connection is dropped from the pool.
  if (level == 0) {
    if (PQtransactionStatus(conn_) != PQTRANS_IDLE) Exec("ROLLBACK", "rolling back").IgnoreError();
  } else {
    Exec(absl::StrCat("ROLLBACK TO SAVEPOINT ", savepoint, "; RELEASE SAVEPOINT ", savepoint),
         "rolling back to a savepoint")
        .IgnoreError();
  }
  return status;
}

}  // namespace kagent::storage
