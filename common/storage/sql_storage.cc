#include "common/storage/sql_storage.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/storage/records.h"
#include "common/storage/validation.h"

namespace kagent::storage {
namespace {

// Parses `column` of every row into a Message.
template <typename Message>
absl::StatusOr<std::vector<Message>> ParseRows(const SqlRows& rows, int column,
                                               absl::string_view what) {
  std::vector<Message> out;
  out.reserve(rows.size());
  for (int row = 0; row < rows.size(); ++row) {
    KAGENT_ASSIGN_OR_RETURN(Message message, ParseStored<Message>(rows.Bytes(row, column), what));
    out.push_back(std::move(message));
  }
  return out;
}

absl::StatusOr<StoredJob> ReadJob(const SqlRows& rows, int row, int revision_column,
                                  int data_column) {
  return ParseStoredJob(rows.Bytes(row, data_column), rows.Int(row, revision_column));
}

}  // namespace

absl::Status SqlStorage::RequireJob(absl::string_view job_id) {
  KAGENT_ASSIGN_OR_RETURN(SqlRows rows, connection_->Query("SELECT 1 FROM jobs WHERE id = $1",
                                                           SqlParams().Text(job_id)));
  if (rows.empty()) return JobNotFound(job_id);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> SqlStorage::SchemaVersion() {
  KAGENT_ASSIGN_OR_RETURN(
      SqlRows rows, connection_->Query("SELECT COALESCE(MAX(version), 0) FROM schema_version",
                                       SqlParams(), "reading the schema version"));
  return rows.empty() ? 0 : rows.Int(0, 0);
}

absl::Status SqlStorage::RunInTransaction(absl::FunctionRef<absl::Status(Storage&)> body) {
  return connection_->Atomically([&] { return body(*this); }, /*snapshot=*/true);
}

// --- Jobs ------------------------------------------------------------------------

absl::StatusOr<std::optional<StoredJob>> SqlStorage::FindJobByKey(
    absl::string_view tenant, absl::string_view idempotency_key) {
  if (idempotency_key.empty()) return std::optional<StoredJob>();
  KAGENT_ASSIGN_OR_RETURN(
      SqlRows rows,
      connection_->Query("SELECT revision, data FROM jobs WHERE tenant = $1 AND idempotency_key = $2",
                         SqlParams().Text(tenant).Text(idempotency_key)));
  if (rows.empty()) return std::optional<StoredJob>();
  KAGENT_ASSIGN_OR_RETURN(StoredJob stored, ReadJob(rows, 0, 0, 1));
  return std::optional<StoredJob>(std::move(stored));
}

absl::StatusOr<CreateJobResult> SqlStorage::CreateJob(const v1::Job& job,
                                                      absl::string_view idempotency_key) {
  KAGENT_RETURN_IF_ERROR(ValidateCreateJob(job, idempotency_key));
  CreateJobResult result;
  KAGENT_RETURN_IF_ERROR(connection_->Atomically([&]() -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(std::optional<StoredJob> found,
                            FindJobByKey(job.tenant(), idempotency_key));
    if (found.has_value()) {
      result.stored = *std::move(found);
      return absl::OkStatus();
    }
    KAGENT_ASSIGN_OR_RETURN(SqlRows exists, connection_->Query("SELECT 1 FROM jobs WHERE id = $1",
                                                               SqlParams().Text(job.id())));
    if (!exists.empty()) return JobIdTaken(job.id());
    SqlParams params;
    params.Text(job.id()).Text(job.tenant()).Int(job.state());
    if (idempotency_key.empty()) {
      params.NullText();
    } else {
      params.Text(idempotency_key);
    }
    params.Blob(job.SerializeAsString());
    // A concurrent creator of the same id or key (another PostgreSQL connection) wins
    // the race: we wait for it to commit, insert nothing, and answer as if we had come
    // second.
    KAGENT_ASSIGN_OR_RETURN(
        SqlRows inserted,
        connection_->Query("INSERT INTO jobs(id, tenant, state, idempotency_key, revision, data) "
                           "VALUES ($1, $2, $3, $4, 1, $5) ON CONFLICT DO NOTHING RETURNING seq",
                           params));
    if (inserted.empty()) {
      KAGENT_ASSIGN_OR_RETURN(found, FindJobByKey(job.tenant(), idempotency_key));
      if (!found.has_value()) return JobIdTaken(job.id());
      result.stored = *std::move(found);
      return absl::OkStatus();
    }
    if (dialect_.create_job_counters != nullptr) {
      KAGENT_RETURN_IF_ERROR(
          connection_->Query(dialect_.create_job_counters, SqlParams().Text(job.id())).status());
    }
    result.stored.job = job;
    result.stored.revision = 1;
    result.created = true;
    return absl::OkStatus();
  }, /*snapshot=*/false));
  return result;
}

absl::StatusOr<StoredJob> SqlStorage::GetJob(absl::string_view job_id) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  KAGENT_ASSIGN_OR_RETURN(SqlRows rows,
                          connection_->Query("SELECT revision, data FROM jobs WHERE id = $1",
                                             SqlParams().Text(job_id)));
  if (rows.empty()) return JobNotFound(job_id);
  return ReadJob(rows, 0, 0, 1);
}

absl::StatusOr<int64_t> SqlStorage::UpdateJob(const v1::Job& job, int64_t expected_revision) {
  KAGENT_RETURN_IF_ERROR(ValidateUpdateJob(job, expected_revision));
  int64_t new_revision = 0;
  KAGENT_RETURN_IF_ERROR(connection_->Atomically([&]() -> absl::Status {
    // With a row lock (PostgreSQL), concurrent updaters queue; each then sees the latest
    // revision.
    KAGENT_ASSIGN_OR_RETURN(
        SqlRows current,
        connection_->Query(
            absl::StrCat("SELECT tenant, revision FROM jobs WHERE id = $1", dialect_.lock_job_row),
            SqlParams().Text(job.id())));
    if (current.empty()) return JobNotFound(job.id());
    KAGENT_RETURN_IF_ERROR(
        CheckJobUpdate(job, current.Bytes(0, 0), current.Int(0, 1), expected_revision));
    KAGENT_ASSIGN_OR_RETURN(
        SqlRows update,
        connection_->Query("UPDATE jobs SET state = $2, data = $3, revision = revision + 1 "
                           "WHERE id = $1 AND revision = $4",
                           SqlParams().Text(job.id()).Int(job.state())
                               .Blob(job.SerializeAsString()).Int(expected_revision)));
    KAGENT_CHECK(update.affected() == 1) << "the revision changed inside a transaction";
    new_revision = expected_revision + 1;
    return absl::OkStatus();
  }, /*snapshot=*/false));
  return new_revision;
}

absl::StatusOr<JobPage> SqlStorage::ListJobs(const ListJobsQuery& query) {
  KAGENT_ASSIGN_OR_RETURN(int page_size, ValidateListJobsQuery(query));
  KAGENT_ASSIGN_OR_RETURN(int64_t before, JobPageStart(query));
  const bool filtered = query.state != v1::JOB_STATE_UNSPECIFIED;
  SqlParams params;
  params.Text(query.tenant).Int(before).Int(page_size + 1);
  if (filtered) params.Int(query.state);
  KAGENT_ASSIGN_OR_RETURN(
      SqlRows rows,
      connection_->Query(filtered ? "SELECT seq, revision, data FROM jobs WHERE tenant = $1 "
                                    "AND state = $4 AND seq < $2 ORDER BY seq DESC LIMIT $3"
                                  : "SELECT seq, revision, data FROM jobs WHERE tenant = $1 "
                                    "AND seq < $2 ORDER BY seq DESC LIMIT $3",
                         params));
  JobPage page;
  int64_t last_position = 0;
  for (int row = 0; row < rows.size(); ++row) {
    if (static_cast<int>(page.jobs.size()) == page_size) {
      page.next_page_token = EncodeJobPageToken(query, last_position);
      break;
    }
    last_position = rows.Int(row, 0);
    KAGENT_ASSIGN_OR_RETURN(StoredJob stored, ReadJob(rows, row, 1, 2));
    page.jobs.push_back(std::move(stored));
  }
  return page;
}

absl::StatusOr<std::vector<StoredJob>> SqlStorage::ListUnfinishedJobs() {
  KAGENT_ASSIGN_OR_RETURN(
      SqlRows rows,
      connection_->Query("SELECT revision, data FROM jobs WHERE state IN ($1, $2, $3) ORDER BY seq",
                         SqlParams().Int(v1::JOB_STATE_QUEUED).Int(v1::JOB_STATE_BASELINE)
                             .Int(v1::JOB_STATE_ROUNDS)));
  std::vector<StoredJob> jobs;
  for (int row = 0; row < rows.size(); ++row) {
    KAGENT_ASSIGN_OR_RETURN(StoredJob stored, ReadJob(rows, row, 0, 1));
    jobs.push_back(std::move(stored));
  }
  return jobs;
}

absl::Status SqlStorage::DeleteJob(absl::string_view job_id) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  return connection_->Atomically([&]() -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(SqlRows rows, connection_->Query("DELETE FROM jobs WHERE id = $1",
                                                             SqlParams().Text(job_id)));
    if (rows.affected() == 0) return JobNotFound(job_id);
    return absl::OkStatus();
  }, /*snapshot=*/false);
}

// --- Events and reflexions: numbered per job -----------------------------------------

absl::StatusOr<int64_t> SqlStorage::AppendNumbered(
    absl::string_view job_id, const char* next_sequence, const char* insert,
    absl::FunctionRef<void(int64_t, SqlParams&)> values) {
  int64_t sequence = 0;
  KAGENT_RETURN_IF_ERROR(connection_->Atomically([&]() -> absl::Status {
    // The counter's row lock serializes appenders until this transaction ends: numbers
    // are handed out, and become visible, in order.
    KAGENT_ASSIGN_OR_RETURN(SqlRows next,
                            connection_->Query(next_sequence, SqlParams().Text(job_id)));
    if (next.empty()) return JobNotFound(job_id);
    sequence = next.Int(0, 0);
    SqlParams params;
    params.Text(job_id).Int(sequence);
    values(sequence, params);
    return connection_->Query(insert, params).status();
  }, /*snapshot=*/false));
  return sequence;
}

absl::StatusOr<int64_t> SqlStorage::AppendEvent(absl::string_view job_id,
                                                const v1::JobEvent& event) {
  KAGENT_RETURN_IF_ERROR(ValidateEvent(job_id, event));
  return AppendNumbered(
      job_id, dialect_.next_event_sequence,
      "INSERT INTO job_events(job_id, sequence, type, data) VALUES ($1, $2, $3, $4)",
      [&](int64_t sequence, SqlParams& params) {
        v1::JobEvent stored = event;
        stored.set_job_id(std::string(job_id));
        stored.set_sequence(sequence);
        params.Int(event.type()).Blob(stored.SerializeAsString());
      });
}

absl::StatusOr<std::vector<v1::JobEvent>> SqlStorage::ListEvents(absl::string_view job_id,
                                                                 int64_t from_sequence,
                                                                 int limit) {
  KAGENT_ASSIGN_OR_RETURN(int effective, ValidateListEvents(job_id, from_sequence, limit));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  KAGENT_ASSIGN_OR_RETURN(
      SqlRows rows,
      connection_->Query("SELECT data FROM job_events WHERE job_id = $1 AND sequence >= $2 "
                         "ORDER BY sequence LIMIT $3",
                         SqlParams().Text(job_id).Int(from_sequence).Int(effective)));
  return ParseRows<v1::JobEvent>(rows, 0, "job event");
}

absl::StatusOr<int64_t> SqlStorage::AppendReflexion(absl::string_view job_id,
                                                    const v1::Reflexion& reflexion) {
  KAGENT_RETURN_IF_ERROR(ValidateAppendReflexion(job_id, reflexion));
  return AppendNumbered(
      job_id, dialect_.next_reflexion_sequence,
      "INSERT INTO reflexions(job_id, sequence, round, data) VALUES ($1, $2, $3, $4)",
      [&](int64_t, SqlParams& params) {
        params.Int(reflexion.round()).Blob(reflexion.SerializeAsString());
      });
}

absl::StatusOr<std::vector<v1::Reflexion>> SqlStorage::ListReflexions(absl::string_view job_id) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  KAGENT_ASSIGN_OR_RETURN(
      SqlRows rows,
      connection_->Query("SELECT data FROM reflexions WHERE job_id = $1 ORDER BY sequence",
                         SqlParams().Text(job_id)));
  return ParseRows<v1::Reflexion>(rows, 0, "reflexion");
}

absl::Status SqlStorage::AppendSharedReflexion(const SharedMemoryKey& key,
                                               absl::string_view source_job_id,
                                               const v1::Reflexion& reflexion) {
  KAGENT_RETURN_IF_ERROR(ValidateAppendSharedReflexion(key, source_job_id, reflexion));
  return connection_->Atomically([&]() -> absl::Status {
    return connection_
        ->Query("INSERT INTO shared_reflexions(tenant, op_class, gpu_arch, source_job_id, data) "
                "VALUES ($1, $2, $3, $4, $5)",
                SqlParams().Text(key.tenant).Text(key.op_class).Text(key.gpu_arch)
                    .Text(source_job_id).Blob(reflexion.SerializeAsString()))
        .status();
  }, /*snapshot=*/false);
}

absl::StatusOr<std::vector<v1::Reflexion>> SqlStorage::ListSharedReflexions(
    const SharedMemoryKey& key, int limit) {
  KAGENT_ASSIGN_OR_RETURN(int effective, ValidateListSharedReflexions(key, limit));
  KAGENT_ASSIGN_OR_RETURN(
      SqlRows rows,
      connection_->Query(
          "SELECT data FROM (SELECT seq, data FROM shared_reflexions WHERE tenant = $1 "
          "AND op_class = $2 AND gpu_arch = $3 ORDER BY seq DESC LIMIT $4) AS recent "
          "ORDER BY seq",
          SqlParams().Text(key.tenant).Text(key.op_class).Text(key.gpu_arch).Int(effective)));
  return ParseRows<v1::Reflexion>(rows, 0, "shared reflexion");
}

// --- Candidates ------------------------------------------------------------------

absl::StatusOr<std::optional<std::string>> SqlStorage::CandidateJob(
    absl::string_view candidate_id) {
  KAGENT_ASSIGN_OR_RETURN(SqlRows rows,
                          connection_->Query("SELECT job_id FROM candidates WHERE id = $1",
                                             SqlParams().Text(candidate_id)));
  if (rows.empty()) return std::optional<std::string>();
  return std::optional<std::string>(rows.Bytes(0, 0));
}

absl::Status SqlStorage::PutCandidate(const v1::Candidate& candidate) {
  KAGENT_RETURN_IF_ERROR(ValidateCandidate(candidate));
  return connection_->Atomically([&]() -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(std::optional<std::string> job, CandidateJob(candidate.id()));
    if (job.has_value() && *job != candidate.job_id()) return CandidateMoved(candidate, *job);
    KAGENT_RETURN_IF_ERROR(RequireJob(candidate.job_id()));
    KAGENT_ASSIGN_OR_RETURN(
        SqlRows upsert,
        connection_->Query(
            "INSERT INTO candidates(id, job_id, round, verdict, data) "
            "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO UPDATE SET "
            "round = excluded.round, verdict = excluded.verdict, data = excluded.data "
            "WHERE candidates.job_id = excluded.job_id RETURNING seq",
            SqlParams().Text(candidate.id()).Text(candidate.job_id()).Int(candidate.round())
                .Int(candidate.measurement().verdict()).Blob(candidate.SerializeAsString())));
    if (upsert.empty()) {
      // Another connection stored this id under another job meanwhile.
      KAGENT_ASSIGN_OR_RETURN(job, CandidateJob(candidate.id()));
      return CandidateMoved(candidate, job.value_or(""));
    }
    return absl::OkStatus();
  }, /*snapshot=*/false);
}

absl::StatusOr<v1::Candidate> SqlStorage::GetCandidate(absl::string_view candidate_id) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("candidate_id", candidate_id));
  KAGENT_ASSIGN_OR_RETURN(SqlRows rows,
                          connection_->Query("SELECT data FROM candidates WHERE id = $1",
                                             SqlParams().Text(candidate_id)));
  if (rows.empty()) return CandidateNotFound(candidate_id);
  return ParseStored<v1::Candidate>(rows.Bytes(0, 0), "candidate");
}

absl::StatusOr<std::vector<v1::Candidate>> SqlStorage::ListCandidates(
    absl::string_view job_id, std::optional<int32_t> round) {
  KAGENT_RETURN_IF_ERROR(ValidateListCandidates(job_id, round));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  SqlParams params;
  params.Text(job_id);
  if (round.has_value()) params.Int(*round);
  KAGENT_ASSIGN_OR_RETURN(
      SqlRows rows,
      connection_->Query(
          round.has_value()
              ? "SELECT data FROM candidates WHERE job_id = $1 AND round = $2 ORDER BY seq"
              : "SELECT data FROM candidates WHERE job_id = $1 ORDER BY round, seq",
          params));
  return ParseRows<v1::Candidate>(rows, 0, "candidate");
}

}  // namespace kagent::storage
