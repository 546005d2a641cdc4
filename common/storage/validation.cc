#include "common/storage/validation.h"

#include <limits>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/cord.h"
#include "common/client_message.h"
#include "common/status.h"

namespace kagent {

bool IsUnfinishedJobState(v1::JobState state) {
  return state == v1::JOB_STATE_QUEUED || state == v1::JOB_STATE_BASELINE ||
         state == v1::JOB_STATE_ROUNDS;
}

namespace {
constexpr absl::string_view kStorageFailureUrl = "type.kagent.dev/storage-failure";
}  // namespace

bool IsStorageFailure(const absl::Status& status) {
  return !status.ok() && status.GetPayload(kStorageFailureUrl).has_value();
}

absl::Status StorageFailure(absl::StatusCode code, absl::string_view message,
                            absl::string_view client_message) {
  absl::Status status(code, message);
  status.SetPayload(kStorageFailureUrl, absl::Cord());
  return WithClientMessage(std::move(status), absl::StrCat("storage error: ", client_message));
}

namespace storage {
namespace {

constexpr absl::string_view kPageTokenVersion = "p1";

std::string Quote(absl::string_view value) { return QuoteValue(value); }

// Returns the offset of the first byte that is not part of well-formed UTF-8 (no
// overlong forms, no surrogates, at most U+10FFFF), or npos when all of it is.
size_t FirstInvalidUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int length = 0;
    unsigned char low = 0x80, high = 0xbf;  // bounds of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      length = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      length = 3;
      if (c == 0xe0) low = 0xa0;
      if (c == 0xed) high = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      length = 4;
      if (c == 0xf0) low = 0x90;
      if (c == 0xf4) high = 0x8f;
    } else {
      return i;
    }
    if (i + length > s.size()) return i;
    const unsigned char second = static_cast<unsigned char>(s[i + 1]);
    if (second < low || second > high) return i;
    for (int k = 2; k < length; ++k) {
      const unsigned char next = static_cast<unsigned char>(s[i + k]);
      if (next < 0x80 || next > 0xbf) return i;
    }
    i += length;
  }
  return absl::string_view::npos;
}

}  // namespace

std::string QuoteValue(absl::string_view value) {
  constexpr size_t kMaxShown = 64;
  if (value.size() <= kMaxShown) return absl::StrCat("\"", absl::CHexEscape(value), "\"");
  return absl::StrCat("\"", absl::CHexEscape(value.substr(0, kMaxShown)), "\"... (",
                      value.size(), " bytes)");
}

absl::Status ValidateIdentifier(absl::string_view field, absl::string_view value,
                                size_t max_bytes) {
  if (value.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(field, " is required"));
  }
  if (value.size() > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(field, " is ", value.size(),
                                                   " bytes; the limit is ", max_bytes));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(value[i]);
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s %s has byte 0x%02x at offset %d; use printable ASCII without spaces", field,
          Quote(value), c, i));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateName(absl::string_view field, absl::string_view value,
                          size_t max_bytes) {
  if (value.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(field, " is required"));
  }
  if (value.size() > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(field, " is ", value.size(),
                                                   " bytes; the limit is ", max_bytes));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s %s has control byte 0x%02x at offset %d", field, Quote(value), c, i));
    }
  }
  return ValidateUtf8(field, value);
}

absl::Status ValidateUtf8(absl::string_view field, absl::string_view value) {
  const size_t bad = FirstInvalidUtf8(value);
  if (bad != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s %s is not valid UTF-8 (at offset %d)", field, Quote(value), bad));
  }
  return absl::OkStatus();
}

absl::Status ValidateSize(absl::string_view what, int64_t size, int64_t limit) {
  if (size > limit) {
    return absl::ResourceExhaustedError(absl::StrCat(what, " is ", size,
                                                     " bytes; the limit is ", limit,
                                                     " bytes"));
  }
  return absl::OkStatus();
}

absl::Status ValidateJob(const v1::Job& job) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("job.id", job.id()));
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("job.tenant", job.tenant()));
  if (!v1::JobState_IsValid(job.state())) {
    return absl::InvalidArgumentError(
        absl::StrCat("job.state ", static_cast<int>(job.state()), " is not a JobState"));
  }
  if (job.state() == v1::JOB_STATE_UNSPECIFIED) {
    return absl::InvalidArgumentError("job.state must be set (JOB_STATE_UNSPECIFIED)");
  }
  if (job.current_round() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("job.current_round is ", job.current_round(), "; it must be >= 0"));
  }
  return ValidateSize(absl::StrCat("job ", Quote(job.id()), " serialized"),
                      static_cast<int64_t>(job.ByteSizeLong()), kMaxRecordBytes);
}

absl::Status ValidateIdempotencyKey(absl::string_view key) {
  if (key.empty()) return absl::OkStatus();
  return ValidateIdentifier("idempotency_key", key, kMaxIdempotencyKeyBytes);
}

absl::Status ValidateEvent(absl::string_view job_id, const v1::JobEvent& event) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  if (!event.job_id().empty() && event.job_id() != job_id) {
    return absl::InvalidArgumentError(
        absl::StrCat("event.job_id ", Quote(event.job_id()), " differs from job_id ",
                     Quote(job_id), "; leave it empty or make them equal"));
  }
  if (event.sequence() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "event.sequence is ", event.sequence(), "; leave it 0: storage assigns it"));
  }
  if (!v1::JobEventType_IsValid(event.type())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "event.type ", static_cast<int>(event.type()), " is not a JobEventType"));
  }
  if (event.type() == v1::JOB_EVENT_TYPE_UNSPECIFIED) {
    return absl::InvalidArgumentError("event.type must be set (JOB_EVENT_TYPE_UNSPECIFIED)");
  }
  if (!v1::JobState_IsValid(event.state())) {
    return absl::InvalidArgumentError(
        absl::StrCat("event.state ", static_cast<int>(event.state()), " is not a JobState"));
  }
  return ValidateSize("event serialized", static_cast<int64_t>(event.ByteSizeLong()),
                      kMaxRecordBytes);
}

absl::Status ValidateCandidate(const v1::Candidate& candidate) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("candidate.id", candidate.id()));
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("candidate.job_id", candidate.job_id()));
  if (candidate.round() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("candidate.round is ", candidate.round(), "; it must be >= 0"));
  }
  if (!v1::Verdict_IsValid(candidate.measurement().verdict())) {
    return absl::InvalidArgumentError(
        absl::StrCat("candidate.measurement.verdict ",
                     static_cast<int>(candidate.measurement().verdict()), " is not a Verdict"));
  }
  return ValidateSize(absl::StrCat("candidate ", Quote(candidate.id()), " serialized"),
                      static_cast<int64_t>(candidate.ByteSizeLong()), kMaxRecordBytes);
}

absl::Status ValidateReflexion(absl::string_view field, const v1::Reflexion& reflexion) {
  if (reflexion.round() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".round is ", reflexion.round(), "; it must be >= 0"));
  }
  return ValidateSize(absl::StrCat(field, " serialized"),
                      static_cast<int64_t>(reflexion.ByteSizeLong()), kMaxRecordBytes);
}

absl::Status ValidateSharedMemoryKey(const SharedMemoryKey& key) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("key.tenant", key.tenant));
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("key.op_class", key.op_class));
  return ValidateIdentifier("key.gpu_arch", key.gpu_arch);
}

absl::Status ValidateArtifact(const v1::Artifact& artifact) {
  KAGENT_RETURN_IF_ERROR(ValidateName("artifact.name", artifact.name(), kMaxArtifactNameBytes));
  if (!artifact.kind().empty()) {
    KAGENT_RETURN_IF_ERROR(
        ValidateName("artifact.kind", artifact.kind(), kMaxArtifactKindBytes));
  }
  if (!artifact.content_type().empty()) {
    KAGENT_RETURN_IF_ERROR(
        ValidateName("artifact.content_type", artifact.content_type(), kMaxArtifactKindBytes));
  }
  return ValidateSize(absl::StrCat("artifact ", Quote(artifact.name()), " content"),
                      static_cast<int64_t>(artifact.content().size()), kMaxArtifactBytes);
}

absl::Status ValidateCheckpoint(absl::string_view key, absl::string_view value) {
  KAGENT_RETURN_IF_ERROR(ValidateName("checkpoint key", key, kMaxCheckpointKeyBytes));
  return ValidateSize(absl::StrCat("checkpoint ", Quote(key), " value"),
                      static_cast<int64_t>(value.size()), kMaxCheckpointBytes);
}

absl::Status ValidateTaskResult(absl::string_view task_id, absl::string_view result) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("task_id", task_id));
  return ValidateSize(absl::StrCat("task ", Quote(task_id), " result"),
                      static_cast<int64_t>(result.size()), kMaxTaskResultBytes);
}

absl::StatusOr<int> NormalizeLimit(absl::string_view field, int value, int default_value,
                                   int max) {
  if (value == 0) return default_value;
  if (value < 0 || value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is ", value, "; use 1..", max, " (0 means ", default_value, ")"));
  }
  return value;
}

std::string EncodeJobPageToken(const ListJobsQuery& query, int64_t last_position) {
  return absl::WebSafeBase64Escape(absl::StrCat(kPageTokenVersion, "|",
                                                static_cast<int>(query.state), "|",
                                                last_position, "|", query.tenant));
}

absl::StatusOr<int64_t> DecodeJobPageToken(const ListJobsQuery& query) {
  const absl::Status bad = absl::InvalidArgumentError(
      "page_token is not a token returned by ListJobs; pass next_page_token unchanged "
      "or leave it empty for the first page");
  std::string raw;
  if (!absl::WebSafeBase64Unescape(query.page_token, &raw)) return bad;
  std::vector<std::string> parts = absl::StrSplit(raw, absl::MaxSplits('|', 3));
  int state = 0;
  int64_t position = 0;
  if (parts.size() != 4 || parts[0] != kPageTokenVersion || !absl::SimpleAtoi(parts[1], &state) ||
      !absl::SimpleAtoi(parts[2], &position) || position <= 0) {
    return bad;
  }
  if (parts[3] != query.tenant || state != static_cast<int>(query.state)) {
    return absl::InvalidArgumentError(
        "page_token was issued for a different tenant or state filter; start again "
        "without a page_token");
  }
  return position;
}

absl::StatusOr<int> ValidateListJobsQuery(const ListJobsQuery& query) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("tenant", query.tenant));
  if (!v1::JobState_IsValid(query.state)) {
    return absl::InvalidArgumentError(
        absl::StrCat("state ", static_cast<int>(query.state), " is not a JobState"));
  }
  KAGENT_ASSIGN_OR_RETURN(int page_size, NormalizeLimit("page_size", query.page_size,
                                                         kDefaultJobPageSize,
                                                         kMaxJobPageSize));
  if (!query.page_token.empty()) {
    KAGENT_RETURN_IF_ERROR(DecodeJobPageToken(query).status());
  }
  return page_size;
}

absl::Status ValidateCreateJob(const v1::Job& job, absl::string_view idempotency_key) {
  KAGENT_RETURN_IF_ERROR(ValidateJob(job));
  return ValidateIdempotencyKey(idempotency_key);
}

absl::Status ValidateUpdateJob(const v1::Job& job, int64_t expected_revision) {
  KAGENT_RETURN_IF_ERROR(ValidateJob(job));
  if (expected_revision < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected_revision is ", expected_revision, "; pass the revision GetJob returned (>= 1)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> ValidateListEvents(absl::string_view job_id, int64_t from_sequence,
                                       int limit) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  if (from_sequence < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("from_sequence is ", from_sequence, "; it must be >= 0"));
  }
  return NormalizeLimit("limit", limit, kDefaultEventLimit, kMaxEventLimit);
}

absl::Status ValidateListCandidates(absl::string_view job_id, std::optional<int32_t> round) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  if (round.has_value() && *round < 0) {
    return absl::InvalidArgumentError(absl::StrCat("round is ", *round, "; it must be >= 0"));
  }
  return absl::OkStatus();
}

absl::Status ValidatePutTaskResult(absl::string_view job_id, absl::string_view task_id,
                                   absl::string_view result) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  return ValidateTaskResult(task_id, result);
}

absl::Status ValidateAppendReflexion(absl::string_view job_id, const v1::Reflexion& reflexion) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  return ValidateReflexion("reflexion", reflexion);
}

absl::Status ValidateAppendSharedReflexion(const SharedMemoryKey& key,
                                           absl::string_view source_job_id,
                                           const v1::Reflexion& reflexion) {
  KAGENT_RETURN_IF_ERROR(ValidateSharedMemoryKey(key));
  if (!source_job_id.empty()) {
    KAGENT_RETURN_IF_ERROR(ValidateIdentifier("source_job_id", source_job_id));
  }
  return ValidateReflexion("reflexion", reflexion);
}

absl::StatusOr<int> ValidateListSharedReflexions(const SharedMemoryKey& key, int limit) {
  KAGENT_RETURN_IF_ERROR(ValidateSharedMemoryKey(key));
  return NormalizeLimit("limit", limit, kDefaultSharedReflexionLimit, kMaxSharedReflexionLimit);
}

absl::Status ValidatePutArtifact(absl::string_view job_id, const v1::Artifact& artifact) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  return ValidateArtifact(artifact);
}

absl::Status ValidateGetArtifact(absl::string_view job_id, absl::string_view name) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  return ValidateName("artifact name", name, kMaxArtifactNameBytes);
}

absl::Status ValidateListArtifacts(absl::string_view job_id, absl::string_view prefix) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  if (prefix.size() > kMaxArtifactNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat("prefix is ", prefix.size(),
                                                   " bytes; the limit is ", kMaxArtifactNameBytes));
  }
  return ValidateUtf8("prefix", prefix);
}

absl::Status ValidatePutCheckpoint(absl::string_view job_id, absl::string_view key,
                                   absl::string_view value) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  return ValidateCheckpoint(key, value);
}

absl::Status ValidateGetCheckpoint(absl::string_view job_id, absl::string_view key) {
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  return ValidateName("checkpoint key", key, kMaxCheckpointKeyBytes);
}

absl::StatusOr<int64_t> JobPageStart(const ListJobsQuery& query) {
  if (query.page_token.empty()) return std::numeric_limits<int64_t>::max();
  return DecodeJobPageToken(query);
}

absl::Status JobNotFound(absl::string_view job_id) {
  return absl::NotFoundError(absl::StrCat("job ", Quote(job_id), " not found"));
}

absl::Status CandidateNotFound(absl::string_view candidate_id) {
  return absl::NotFoundError(absl::StrCat("candidate ", Quote(candidate_id), " not found"));
}

absl::Status TaskResultNotFound(absl::string_view task_id) {
  return absl::NotFoundError(absl::StrCat("no result recorded for task ", Quote(task_id)));
}

absl::Status ArtifactNotFound(absl::string_view job_id, absl::string_view name) {
  return absl::NotFoundError(
      absl::StrCat("artifact ", Quote(name), " of job ", Quote(job_id), " not found"));
}

absl::Status CheckpointNotFound(absl::string_view job_id, absl::string_view key) {
  return absl::NotFoundError(
      absl::StrCat("checkpoint ", Quote(key), " of job ", Quote(job_id), " not found"));
}

absl::Status JobIdTaken(absl::string_view job_id) {
  return absl::AlreadyExistsError(
      absl::StrCat("job.id ", Quote(job_id), " already exists; choose another id"));
}

absl::Status CheckJobUpdate(const v1::Job& job, absl::string_view stored_tenant,
                            int64_t stored_revision, int64_t expected_revision) {
  if (stored_tenant != job.tenant()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job.tenant ", Quote(job.tenant()), " differs from the stored tenant ",
        Quote(stored_tenant), " of job ", Quote(job.id()), "; a job's tenant cannot change"));
  }
  if (stored_revision != expected_revision) {
    return absl::AbortedError(absl::StrCat(
        "job ", Quote(job.id()), " is at revision ", stored_revision, ", not ",
        expected_revision, ": it was updated concurrently; re-read it and retry"));
  }
  return absl::OkStatus();
}

absl::Status CandidateMoved(const v1::Candidate& candidate, absl::string_view stored_job_id) {
  return absl::InvalidArgumentError(absl::StrCat(
      "candidate.job_id ", Quote(candidate.job_id()), " differs from the stored job ",
      Quote(stored_job_id), " of candidate ", Quote(candidate.id()),
      "; a candidate cannot move to another job"));
}

absl::Status CheckTaskJob(absl::string_view task_id, absl::string_view stored_job_id,
                          absl::string_view job_id) {
  if (stored_job_id == job_id) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "task ", Quote(task_id), " is recorded under job ", Quote(stored_job_id), ", not ",
      Quote(job_id), "; task ids must be unique across jobs"));
}

// --- Leader leases ------------------------------------------------------------------

absl::Status ValidateLeaseName(absl::string_view name) {
  return ValidateIdentifier("lease name", name);
}

absl::Status ValidateLeaseHolder(absl::string_view name, absl::string_view holder,
                                 int64_t term) {
  KAGENT_RETURN_IF_ERROR(ValidateLeaseName(name));
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("lease holder", holder));
  if (term < 1) {
    return absl::InvalidArgumentError(absl::StrCat("lease term is ", term, "; it must be >= 1"));
  }
  return absl::OkStatus();
}

absl::Status ValidateAcquireLease(absl::string_view name, absl::string_view holder,
                                  absl::string_view address, absl::Duration ttl) {
  KAGENT_RETURN_IF_ERROR(ValidateLeaseName(name));
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("lease holder", holder));
  KAGENT_RETURN_IF_ERROR(ValidateIdentifier("lease address", address, kMaxLeaseAddressBytes));
  if (ttl < kMinLeaseTtl || ttl > kMaxLeaseTtl) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease ttl is ", absl::FormatDuration(ttl), "; it must be in [",
                     absl::FormatDuration(kMinLeaseTtl), ", ",
                     absl::FormatDuration(kMaxLeaseTtl), "]"));
  }
  return absl::OkStatus();
}

absl::Status LeaseNotFound(absl::string_view name) {
  return absl::NotFoundError(absl::StrCat("lease '", name, "' was never taken"));
}

absl::Status LeaseNotHeld(absl::string_view name, absl::string_view holder, int64_t term,
                          const LeaderLease* stored) {
  std::string now = "it was never taken";
  if (stored != nullptr) {
    now = stored->remaining > absl::ZeroDuration()
              ? absl::StrCat("it is held by ", stored->holder, " at term ", stored->term)
              : absl::StrCat("it expired (last held by ", stored->holder, " at term ",
                             stored->term, ")");
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "fenced: ", holder, " does not hold lease '", name, "' at term ", term, "; ", now));
}

absl::Status LeasesUnsupported(absl::string_view backend) {
  return absl::FailedPreconditionError(absl::StrCat(
      "leader leases need PostgreSQL; a ", backend,
      " database serves one coordinator (run one replica, or move the state to PostgreSQL)"));
}

}  // namespace storage
}  // namespace kagent
