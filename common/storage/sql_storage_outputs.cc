// The Storage methods of SqlStorage (sql_storage.h) for what a job's steps leave
// behind (idempotent task results, artifacts, checkpoints) and for leader leases; the
// job, event, reflexion and candidate methods are in sql_storage.cc.
#include "common/storage/sql_storage.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/storage/records.h"
#include "common/storage/validation.h"

namespace kagent::storage {
namespace {

// The smallest string greater than every string starting with `prefix`, or empty when
// there is none (prefix empty or all 0xff).
std::string PrefixUpperBound(absl::string_view prefix) {
  std::string upper(prefix);
  while (!upper.empty() && static_cast<unsigned char>(upper.back()) == 0xff) upper.pop_back();
  if (!upper.empty()) upper.back() = static_cast<char>(static_cast<unsigned char>(upper.back()) + 1);
  return upper;
}

// Row `row` of a lease query (SqlDialect: name, holder, address, term, remaining ms).
LeaderLease ReadLease(const SqlRows& rows, int row) {
  LeaderLease lease;
  lease.name = rows.Bytes(row, 0);
  lease.holder = rows.Bytes(row, 1);
  lease.address = rows.Bytes(row, 2);
  lease.term = rows.Int(row, 3);
  lease.remaining = absl::Milliseconds(rows.Int(row, 4));
  return lease;
}

}  // namespace

// --- Task results ----------------------------------------------------------------

absl::StatusOr<std::optional<std::pair<std::string, std::string>>> SqlStorage::FindTaskResult(
    absl::string_view task_id) {
  KAGENT_ASSIGN_OR_RETURN(
      SqlRows rows, connection_->Query("SELECT job_id, data FROM task_results WHERE task_id = $1",
                                       SqlParams().Text(task_id)));
  if (rows.empty()) return std::optional<std::pair<std::string, std::string>>();
  return std::make_optional(std::make_pair(rows.Bytes(0, 0), rows.Bytes(0, 1)));
}

absl::StatusOr<std::string> SqlStorage::PutTaskResult(absl::string_view job_id,
                                                      absl::string_view task_id,
                                                      absl::string_view result) {
  KAGENT_RETURN_IF_ERROR(ValidatePutTaskResult(job_id, task_id, result));
  std::string recorded;
  KAGENT_RETURN_IF_ERROR(connection_->Atomically([&]() -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(auto found, FindTaskResult(task_id));
    if (!found.has_value()) {
      KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
      KAGENT_ASSIGN_OR_RETURN(
          SqlRows inserted,
          connection_->Query("INSERT INTO task_results(task_id, job_id, data) VALUES ($1, $2, $3) "
                             "ON CONFLICT (task_id) DO NOTHING RETURNING 1",
                             SqlParams().Text(task_id).Text(job_id).Blob(result)));
      if (!inserted.empty()) {
        recorded = std::string(result);
        return absl::OkStatus();
      }
      // A racing writer (another PostgreSQL connection) recorded first: its result stands.
      KAGENT_ASSIGN_OR_RETURN(found, FindTaskResult(task_id));
      if (!found.has_value()) {
        return absl::AbortedError(
            absl::StrCat("task ", QuoteValue(task_id), " was recorded concurrently; retry"));
      }
    }
    KAGENT_RETURN_IF_ERROR(CheckTaskJob(task_id, found->first, job_id));
    recorded = std::move(found->second);
    return absl::OkStatus();
  }, /*snapshot=*/false));
  return recorded;
}

absl::StatusOr<std::string> SqlStorage::GetTaskResult(absl::string_view task_id) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("task_id", task_id));
  KAGENT_ASSIGN_OR_RETURN(SqlRows rows,
                          connection_->Query("SELECT data FROM task_results WHERE task_id = $1",
                                             SqlParams().Text(task_id)));
  if (rows.empty()) return TaskResultNotFound(task_id);
  return rows.Bytes(0, 0);
}

// --- Artifacts -------------------------------------------------------------------

absl::Status SqlStorage::PutArtifact(absl::string_view job_id, const v1::Artifact& artifact) {
  KAGENT_RETURN_IF_ERROR(ValidatePutArtifact(job_id, artifact));
  v1::Artifact meta = artifact;
  meta.clear_content();
  return connection_->Atomically([&]() -> absl::Status {
    KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
    return connection_
        ->Query("INSERT INTO artifacts(job_id, name, kind, size_bytes, meta, content) "
                "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (job_id, name) DO UPDATE SET "
                "kind = excluded.kind, size_bytes = excluded.size_bytes, "
                "meta = excluded.meta, content = excluded.content",
                SqlParams().Text(job_id).Text(artifact.name()).Text(artifact.kind())
                    .Int(static_cast<int64_t>(artifact.content().size()))
                    .Blob(meta.SerializeAsString()).Blob(artifact.content()))
        .status();
  }, /*snapshot=*/false);
}

absl::StatusOr<v1::Artifact> SqlStorage::GetArtifact(absl::string_view job_id,
                                                     absl::string_view name) {
  KAGENT_RETURN_IF_ERROR(ValidateGetArtifact(job_id, name));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  KAGENT_ASSIGN_OR_RETURN(
      SqlRows rows,
      connection_->Query("SELECT meta, content FROM artifacts WHERE job_id = $1 AND name = $2",
                         SqlParams().Text(job_id).Text(name)));
  if (rows.empty()) return ArtifactNotFound(job_id, name);
  KAGENT_ASSIGN_OR_RETURN(v1::Artifact artifact,
                          ParseStored<v1::Artifact>(rows.Bytes(0, 0), "artifact"));
  artifact.set_content(rows.Bytes(0, 1));
  return artifact;
}

absl::StatusOr<std::vector<v1::Artifact>> SqlStorage::ListArtifacts(absl::string_view job_id,
                                                                    absl::string_view prefix,
                                                                    bool include_content) {
  KAGENT_RETURN_IF_ERROR(ValidateListArtifacts(job_id, prefix));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  // Names compare bytewise: name >= prefix starts the range through the primary key;
  // the dialect's bound ends it where the prefix ends.
  SqlParams params;
  params.Text(job_id).Text(prefix);
  std::string bound;
  if (dialect_.prefix_by_starts_with) {
    // No stored name contains NUL (validation refuses it), and such TEXT cannot be sent.
    if (prefix.find('\0') != absl::string_view::npos) return std::vector<v1::Artifact>();
    bound = " AND starts_with(name, $2)";
  } else {
    const std::string upper = PrefixUpperBound(prefix);
    if (!upper.empty()) {
      bound = " AND name < $3";
      params.Text(upper);
    }
  }
  KAGENT_ASSIGN_OR_RETURN(
      SqlRows rows,
      connection_->Query(absl::StrCat("SELECT meta", include_content ? ", content" : "",
                                      " FROM artifacts WHERE job_id = $1 AND name >= $2", bound,
                                      " ORDER BY name"),
                         params));
  std::vector<v1::Artifact> artifacts;
  for (int row = 0; row < rows.size(); ++row) {
    KAGENT_ASSIGN_OR_RETURN(v1::Artifact artifact,
                            ParseStored<v1::Artifact>(rows.Bytes(row, 0), "artifact"));
    if (include_content) artifact.set_content(rows.Bytes(row, 1));
    artifacts.push_back(std::move(artifact));
  }
  return artifacts;
}

// --- Checkpoints -----------------------------------------------------------------

absl::Status SqlStorage::PutCheckpoint(absl::string_view job_id, absl::string_view key,
                                       absl::string_view value) {
  KAGENT_RETURN_IF_ERROR(ValidatePutCheckpoint(job_id, key, value));
  return connection_->Atomically([&]() -> absl::Status {
    KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
    return connection_
        ->Query("INSERT INTO checkpoints(job_id, key, data) VALUES ($1, $2, $3) "
                "ON CONFLICT (job_id, key) DO UPDATE SET data = excluded.data",
                SqlParams().Text(job_id).Text(key).Blob(value))
        .status();
  }, /*snapshot=*/false);
}

absl::StatusOr<std::string> SqlStorage::GetCheckpoint(absl::string_view job_id,
                                                      absl::string_view key) {
  KAGENT_RETURN_IF_ERROR(ValidateGetCheckpoint(job_id, key));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  KAGENT_ASSIGN_OR_RETURN(
      SqlRows rows, connection_->Query("SELECT data FROM checkpoints WHERE job_id = $1 AND key = $2",
                                       SqlParams().Text(job_id).Text(key)));
  if (rows.empty()) return CheckpointNotFound(job_id, key);
  return rows.Bytes(0, 0);
}

// --- Leader leases ----------------------------------------------------------------

absl::StatusOr<LeaderLease> SqlStorage::AcquireLease(absl::string_view name,
                                                     absl::string_view holder,
                                                     absl::string_view address,
                                                     absl::Duration ttl) {
  if (dialect_.acquire_lease == nullptr) return LeasesUnsupported(dialect_.name);
  KAGENT_RETURN_IF_ERROR(ValidateAcquireLease(name, holder, address, ttl));
  KAGENT_ASSIGN_OR_RETURN(
      SqlRows taken,
      connection_->Query(dialect_.acquire_lease,
                         SqlParams().Text(name).Text(holder).Text(address)
                             .Int(absl::ToInt64Milliseconds(ttl)),
                         "taking a lease"));
  if (taken.size() == 1) return ReadLease(taken, 0);
  return GetLease(name);
}

absl::StatusOr<LeaderLease> SqlStorage::GetLease(absl::string_view name) {
  if (dialect_.get_lease == nullptr) return LeasesUnsupported(dialect_.name);
  KAGENT_RETURN_IF_ERROR(ValidateLeaseName(name));
  KAGENT_ASSIGN_OR_RETURN(SqlRows rows, connection_->Query(dialect_.get_lease,
                                                           SqlParams().Text(name),
                                                           "reading a lease"));
  if (rows.empty()) return LeaseNotFound(name);
  return ReadLease(rows, 0);
}

absl::Status SqlStorage::CheckLease(absl::string_view name, absl::string_view holder,
                                    int64_t term) {
  if (dialect_.check_lease == nullptr) return LeasesUnsupported(dialect_.name);
  KAGENT_RETURN_IF_ERROR(ValidateLeaseHolder(name, holder, term));
  KAGENT_ASSIGN_OR_RETURN(SqlRows rows, connection_->Query(dialect_.check_lease,
                                                           SqlParams().Text(name),
                                                           "checking a lease"));
  if (rows.empty()) return LeaseNotHeld(name, holder, term, nullptr);
  LeaderLease stored = ReadLease(rows, 0);
  if (stored.holder != holder || stored.term != term || stored.remaining <= absl::ZeroDuration()) {
    return LeaseNotHeld(name, holder, term, &stored);
  }
  return absl::OkStatus();
}

absl::Status SqlStorage::ReleaseLease(absl::string_view name, absl::string_view holder,
                                      int64_t term) {
  if (dialect_.release_lease == nullptr) return LeasesUnsupported(dialect_.name);
  KAGENT_RETURN_IF_ERROR(ValidateLeaseHolder(name, holder, term));
  KAGENT_ASSIGN_OR_RETURN(SqlRows rows, connection_->Query(dialect_.release_lease,
                                                           SqlParams().Text(name).Text(holder)
                                                               .Int(term),
                                                           "releasing a lease"));
  if (rows.affected() == 0) KAGENT_RETURN_IF_ERROR(GetLease(name).status());
  return absl::OkStatus();
}

}  // namespace kagent::storage
