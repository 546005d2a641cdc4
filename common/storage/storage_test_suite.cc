#include "common/storage/storage_test_suite.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <google/protobuf/util/message_differencer.h>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace kagent::storage_suite {
namespace {

using v1::Artifact;
using v1::Candidate;
using v1::Job;
using v1::JobEvent;
using v1::Reflexion;

// --- Helpers -----------------------------------------------------------------------

template <typename T>
T Unwrap(absl::StatusOr<T> result) {
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  return *std::move(result);
}

void RequireOk(const absl::Status& status) {
  INFO(status.ToString());
  REQUIRE(status.ok());
}

// The status has `code` and its message mentions `needle` (a field name, an id).
void RequireCode(const absl::Status& status, absl::StatusCode code, absl::string_view needle = "") {
  INFO(status.ToString());
  REQUIRE(status.code() == code);
  REQUIRE(absl::StrContains(status.message(), needle));
}

bool Equal(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

std::unique_ptr<Storage> OpenStorage(StorageTestEnv& env) { return Unwrap(env.Open()); }

Job MakeJob(const std::string& id, const std::string& tenant,
            v1::JobState state = v1::JOB_STATE_QUEUED) {
  Job job;
  job.set_id(id);
  job.set_tenant(tenant);
  job.set_state(state);
  job.mutable_problem()->set_name("matvec_bf16");
  job.mutable_problem()->set_source("class Model(nn.Module):\n    pass\n");
  job.mutable_start_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  job.mutable_start_kernel()->set_source("class ModelNew: ...");
  job.mutable_config()->set_beam_width(2);
  job.mutable_config()->mutable_budget()->set_max_rounds(5);
  job.mutable_created_at()->set_seconds(1700000000);
  return job;
}

JobEvent MakeEvent(v1::JobEventType type, const std::string& message) {
  JobEvent event;
  event.set_type(type);
  event.set_message(message);
  event.set_state(v1::JOB_STATE_ROUNDS);
  event.set_round(1);
  return event;
}

Candidate MakeCandidate(const std::string& id, const std::string& job_id, int round) {
  Candidate candidate;
  candidate.set_id(id);
  candidate.set_job_id(job_id);
  candidate.set_round(round);
  candidate.set_worker_index(round % 3);
  candidate.mutable_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  candidate.mutable_kernel()->set_source(absl::StrCat("# kernel ", id));
  candidate.mutable_prescription()->set_pattern_id("vectorize-loads");
  (*candidate.mutable_prescription()->mutable_knob_changes())["BLOCK_M"] = "64";
  (*candidate.mutable_prescription()->mutable_knob_changes())["num_warps"] = "8";
  candidate.mutable_measurement()->set_verdict(v1::VERDICT_CORRECT);
  candidate.mutable_measurement()->mutable_candidate()->set_median_ms(0.125 + round);
  (*candidate.mutable_metrics()->mutable_aggregate()->mutable_values())["dram__throughput"] = 81.5;
  return candidate;
}

Reflexion MakeReflexion(const std::string& lesson, int round = 1) {
  Reflexion reflexion;
  reflexion.set_candidate_id("cand-" + lesson);
  reflexion.set_round(round);
  reflexion.set_pattern_id("vectorize-loads");
  reflexion.set_fix_effective(true);
  reflexion.set_actual_speedup(1.25);
  reflexion.set_lesson(lesson);
  reflexion.add_avoid_patterns("split-k");
  return reflexion;
}

Artifact MakeArtifact(const std::string& name, const std::string& content) {
  Artifact artifact;
  artifact.set_name(name);
  artifact.set_kind("kernel");
  artifact.set_content_type("text/x-python");
  artifact.set_content(content);
  return artifact;
}

std::vector<std::string> Ids(const std::vector<StoredJob>& jobs) {
  std::vector<std::string> ids;
  for (const StoredJob& stored : jobs) ids.push_back(stored.job.id());
  return ids;
}

std::vector<int64_t> Sequences(const std::vector<JobEvent>& events) {
  std::vector<int64_t> sequences;
  for (const JobEvent& event : events) sequences.push_back(event.sequence());
  return sequences;
}

std::vector<std::string> CandidateIds(const std::vector<Candidate>& candidates) {
  std::vector<std::string> ids;
  for (const Candidate& candidate : candidates) ids.push_back(candidate.id());
  return ids;
}

std::vector<std::string> ArtifactNames(const std::vector<Artifact>& artifacts) {
  std::vector<std::string> names;
  for (const Artifact& artifact : artifacts) names.push_back(artifact.name());
  return names;
}

std::vector<std::string> Lessons(const std::vector<Reflexion>& reflexions) {
  std::vector<std::string> lessons;
  for (const Reflexion& reflexion : reflexions) lessons.push_back(reflexion.lesson());
  return lessons;
}

// A fixture of one job with something of every kind, for the persistence and
// bad-input cases.
struct Populated {
  std::vector<std::string> job_ids;
  std::vector<std::string> candidate_ids;
  std::vector<std::string> task_ids;
  std::vector<std::pair<std::string, std::string>> checkpoints;  // (job, key)
  SharedMemoryKey shared_key{"tenant-a", "matvec", "sm_90"};
};

Populated Populate(Storage& storage) {
  Populated p;
  for (int j = 0; j < 2; ++j) {
    const std::string job_id = absl::StrCat("job-", j);
    Job job = MakeJob(job_id, j == 0 ? "tenant-a" : "tenant-b");
    RequireOk(storage.CreateJob(job, absl::StrCat("key-", j)).status());
    job.set_state(v1::JOB_STATE_ROUNDS);
    job.set_current_round(2);
    REQUIRE(Unwrap(storage.UpdateJob(job, 1)) == 2);
    p.job_ids.push_back(job_id);
    for (int e = 0; e < 3; ++e) {
      Unwrap(storage.AppendEvent(job_id, MakeEvent(v1::JOB_EVENT_LOG, absl::StrCat("e", e))));
    }
    for (int c = 0; c < 3; ++c) {
      const std::string id = absl::StrCat(job_id, "-cand-", c);
      RequireOk(storage.PutCandidate(MakeCandidate(id, job_id, c / 2)));
      p.candidate_ids.push_back(id);
    }
    const std::string task = absl::StrCat(job_id, "-task-1");
    REQUIRE(Unwrap(storage.PutTaskResult(job_id, task, std::string("r\0esult", 7))) ==
            std::string("r\0esult", 7));
    p.task_ids.push_back(task);
    Unwrap(storage.AppendReflexion(job_id, MakeReflexion(absl::StrCat(job_id, "-lesson"))));
    RequireOk(storage.PutArtifact(job_id, MakeArtifact("round-1/kernel.py", "print(1)")));
    RequireOk(storage.PutArtifact(job_id, MakeArtifact("summary.json", "{}")));
    RequireOk(storage.PutCheckpoint(job_id, "state", absl::StrCat("checkpoint of ", job_id)));
    p.checkpoints.push_back({job_id, "state"});
  }
  RequireOk(storage.AppendSharedReflexion(p.shared_key, "job-0", MakeReflexion("shared")));
  return p;
}

// Everything `p` names, read back, as one comparable text.
std::string Snapshot(Storage& storage, const Populated& p) {
  std::string out;
  for (const std::string& job_id : p.job_ids) {
    StoredJob stored = Unwrap(storage.GetJob(job_id));
    absl::StrAppend(&out, "job ", stored.revision, "\n", stored.job.DebugString());
    for (const JobEvent& event : Unwrap(storage.ListEvents(job_id, 0, 0))) {
      absl::StrAppend(&out, "event\n", event.DebugString());
    }
    for (const Candidate& candidate : Unwrap(storage.ListCandidates(job_id, std::nullopt))) {
      absl::StrAppend(&out, "candidate\n", candidate.DebugString());
    }
    for (const Reflexion& reflexion : Unwrap(storage.ListReflexions(job_id))) {
      absl::StrAppend(&out, "reflexion\n", reflexion.DebugString());
    }
    for (const Artifact& artifact : Unwrap(storage.ListArtifacts(job_id, "", true))) {
      absl::StrAppend(&out, "artifact\n", artifact.DebugString());
    }
  }
  for (const std::string& id : p.candidate_ids) {
    absl::StrAppend(&out, "get candidate\n", Unwrap(storage.GetCandidate(id)).DebugString());
  }
  for (const std::string& task : p.task_ids) {
    absl::StrAppend(&out, "task ", absl::CHexEscape(Unwrap(storage.GetTaskResult(task))), "\n");
  }
  for (const auto& [job_id, key] : p.checkpoints) {
    absl::StrAppend(&out, "checkpoint ", Unwrap(storage.GetCheckpoint(job_id, key)), "\n");
  }
  for (const Reflexion& reflexion : Unwrap(storage.ListSharedReflexions(p.shared_key, 0))) {
    absl::StrAppend(&out, "shared\n", reflexion.DebugString());
  }
  JobPage page = Unwrap(storage.ListJobs({.tenant = "tenant-a"}));
  absl::StrAppend(&out, "tenant-a jobs ", page.jobs.size(), "\n");
  absl::StrAppend(&out, "unfinished ", Unwrap(storage.ListUnfinishedJobs()).size(), "\n");
  return out;
}

}  // namespace

// --- Jobs ------------------------------------------------------------------------

void JobCreateAndGet(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  const Job job = MakeJob("job-1", "tenant-a");
  CreateJobResult created = Unwrap(storage->CreateJob(job, ""));
  REQUIRE(created.created);
  REQUIRE(created.stored.revision == 1);
  REQUIRE(Equal(created.stored.job, job));

  StoredJob got = Unwrap(storage->GetJob("job-1"));
  REQUIRE(got.revision == 1);
  REQUIRE(Equal(got.job, job));

  RequireCode(storage->GetJob("job-2").status(), absl::StatusCode::kNotFound, "job-2");

  // An id is global: another tenant cannot take it, and the first job is unchanged.
  RequireCode(storage->CreateJob(MakeJob("job-1", "tenant-b", v1::JOB_STATE_DONE), "").status(),
              absl::StatusCode::kAlreadyExists, "job-1");
  RequireCode(storage->CreateJob(MakeJob("job-1", "tenant-a"), "").status(),
              absl::StatusCode::kAlreadyExists, "job.id");
  got = Unwrap(storage->GetJob("job-1"));
  REQUIRE(got.revision == 1);
  REQUIRE(Equal(got.job, job));
}

void JobValidation(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  const auto invalid = absl::StatusCode::kInvalidArgument;

  RequireCode(storage->CreateJob(MakeJob("", "t"), "").status(), invalid, "job.id");
  RequireCode(storage->CreateJob(MakeJob(std::string(kMaxStorageIdBytes + 1, 'x'), "t"), "")
                  .status(),
              invalid, "job.id");
  RequireCode(storage->CreateJob(MakeJob("has space", "t"), "").status(), invalid, "job.id");
  RequireCode(storage->CreateJob(MakeJob(std::string("nul\0id", 6), "t"), "").status(), invalid,
              "job.id");
  RequireCode(storage->CreateJob(MakeJob("job-1", ""), "").status(), invalid, "job.tenant");
  RequireCode(storage->CreateJob(MakeJob("job-1", "t", v1::JOB_STATE_UNSPECIFIED), "").status(),
              invalid, "job.state");
  RequireCode(
      storage->CreateJob(MakeJob("job-1", "t", static_cast<v1::JobState>(99)), "").status(),
      invalid, "job.state");
  Job negative_round = MakeJob("job-1", "t");
  negative_round.set_current_round(-1);
  RequireCode(storage->CreateJob(negative_round, "").status(), invalid, "job.current_round");
  RequireCode(storage->CreateJob(MakeJob("job-1", "t"), "bad key").status(), invalid,
              "idempotency_key");
  RequireCode(storage->GetJob("").status(), invalid, "job_id");
  RequireCode(storage->DeleteJob(""), invalid, "job_id");

  // The longest valid id is accepted; nothing invalid was stored.
  const std::string longest(kMaxStorageIdBytes, 'y');
  RequireOk(storage->CreateJob(MakeJob(longest, "t"), "").status());
  REQUIRE(Ids(Unwrap(storage->ListJobs({.tenant = "t"})).jobs) ==
          std::vector<std::string>{longest});
  RequireCode(storage->GetJob("job-1").status(), absl::StatusCode::kNotFound);
}

void JobIdempotencyKey(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  const Job first = MakeJob("job-1", "tenant-a");
  REQUIRE(Unwrap(storage->CreateJob(first, "submit-42")).created);

  // Same tenant and key, another id: the first job comes back and nothing is written.
  CreateJobResult again = Unwrap(storage->CreateJob(MakeJob("job-2", "tenant-a"), "submit-42"));
  REQUIRE_FALSE(again.created);
  REQUIRE(again.stored.job.id() == "job-1");
  REQUIRE(again.stored.revision == 1);
  REQUIRE(Equal(again.stored.job, first));
  RequireCode(storage->GetJob("job-2").status(), absl::StatusCode::kNotFound);

  // The key is per tenant.
  CreateJobResult other = Unwrap(storage->CreateJob(MakeJob("job-3", "tenant-b"), "submit-42"));
  REQUIRE(other.created);
  REQUIRE(other.stored.job.id() == "job-3");

  // After an update, a retried submit returns the current job and revision.
  Job updated = first;
  updated.set_state(v1::JOB_STATE_BASELINE);
  REQUIRE(Unwrap(storage->UpdateJob(updated, 1)) == 2);
  again = Unwrap(storage->CreateJob(MakeJob("job-4", "tenant-a"), "submit-42"));
  REQUIRE_FALSE(again.created);
  REQUIRE(again.stored.revision == 2);
  REQUIRE(again.stored.job.state() == v1::JOB_STATE_BASELINE);

  // Without a key, every call creates.
  REQUIRE(Unwrap(storage->CreateJob(MakeJob("job-5", "tenant-a"), "")).created);
  REQUIRE(Unwrap(storage->CreateJob(MakeJob("job-6", "tenant-a"), "")).created);
  REQUIRE(Unwrap(storage->ListJobs({.tenant = "tenant-a"})).jobs.size() == 3);
}

void JobOptimisticConcurrency(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  Job job = MakeJob("job-1", "tenant-a");
  RequireOk(storage->CreateJob(job, "").status());

  job.set_state(v1::JOB_STATE_BASELINE);
  REQUIRE(Unwrap(storage->UpdateJob(job, 1)) == 2);
  StoredJob got = Unwrap(storage->GetJob("job-1"));
  REQUIRE(got.revision == 2);
  REQUIRE(Equal(got.job, job));

  // A writer that read revision 1 loses.
  Job stale = job;
  stale.set_state(v1::JOB_STATE_CANCELLED);
  RequireCode(storage->UpdateJob(stale, 1).status(), absl::StatusCode::kAborted, "revision");
  got = Unwrap(storage->GetJob("job-1"));
  REQUIRE(got.revision == 2);
  REQUIRE(got.job.state() == v1::JOB_STATE_BASELINE);

  // A revision from the future is stale too.
  RequireCode(storage->UpdateJob(stale, 3).status(), absl::StatusCode::kAborted);

  RequireCode(storage->UpdateJob(MakeJob("job-9", "tenant-a"), 1).status(),
              absl::StatusCode::kNotFound, "job-9");
  RequireCode(storage->UpdateJob(MakeJob("job-1", "tenant-b"), 2).status(),
              absl::StatusCode::kInvalidArgument, "tenant");
  RequireCode(storage->UpdateJob(job, 0).status(), absl::StatusCode::kInvalidArgument,
              "expected_revision");
  RequireCode(storage->UpdateJob(MakeJob("job-1", "tenant-a", v1::JOB_STATE_UNSPECIFIED), 2)
                  .status(),
              absl::StatusCode::kInvalidArgument, "job.state");
  got = Unwrap(storage->GetJob("job-1"));
  REQUIRE(got.revision == 2);
  REQUIRE(Equal(got.job, job));
}

void JobConcurrentUpdatersOneWins(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  RequireOk(storage->CreateJob(MakeJob("job-1", "tenant-a"), "").status());
  constexpr int kThreads = 8;

  // Everyone updates from revision 1: exactly one wins.
  std::vector<absl::Status> results(kThreads);
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        Job job = MakeJob("job-1", "tenant-a");
        job.set_current_round(100 + t);
        results[t] = storage->UpdateJob(job, 1).status();
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  int winners = 0;
  int winner = -1;
  for (int t = 0; t < kThreads; ++t) {
    INFO(results[t].ToString());
    if (results[t].ok()) {
      ++winners;
      winner = t;
    } else {
      REQUIRE(results[t].code() == absl::StatusCode::kAborted);
    }
  }
  REQUIRE(winners == 1);
  StoredJob got = Unwrap(storage->GetJob("job-1"));
  REQUIRE(got.revision == 2);
  REQUIRE(got.job.current_round() == 100 + winner);

  // Read-modify-write with retry on ABORTED loses no increment.
  constexpr int kIncrements = 10;
  std::atomic<int> failures{0};
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < kIncrements; ++i) {
          while (true) {
            absl::StatusOr<StoredJob> current = storage->GetJob("job-1");
            if (!current.ok()) {
              ++failures;
              return;
            }
            current->job.set_current_round(current->job.current_round() + 1);
            absl::StatusOr<int64_t> updated = storage->UpdateJob(current->job, current->revision);
            if (updated.ok()) break;
            if (updated.status().code() != absl::StatusCode::kAborted) {
              ++failures;
              return;
            }
          }
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  REQUIRE(failures == 0);
  got = Unwrap(storage->GetJob("job-1"));
  REQUIRE(got.job.current_round() == 100 + winner + kThreads * kIncrements);
  REQUIRE(got.revision == 2 + kThreads * kIncrements);
}

void ListJobsPaginationAndTenants(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  // Interleave two tenants' jobs.
  for (int i = 0; i < 7; ++i) {
    RequireOk(storage->CreateJob(MakeJob(absl::StrCat("a-", i), "tenant-a"), "").status());
    if (i < 3) {
      RequireOk(storage->CreateJob(MakeJob(absl::StrCat("b-", i), "tenant-b"), "").status());
    }
  }

  // Newest first, in pages of 3.
  JobPage page1 = Unwrap(storage->ListJobs({.tenant = "tenant-a", .page_size = 3}));
  REQUIRE(Ids(page1.jobs) == std::vector<std::string>{"a-6", "a-5", "a-4"});
  REQUIRE_FALSE(page1.next_page_token.empty());
  REQUIRE(page1.jobs[0].revision == 1);

  // Jobs created or deleted between pages neither repeat nor shift the listing.
  RequireOk(storage->CreateJob(MakeJob("a-7", "tenant-a"), "").status());
  RequireOk(storage->DeleteJob("a-2"));
  JobPage page2 = Unwrap(storage->ListJobs(
      {.tenant = "tenant-a", .page_size = 3, .page_token = page1.next_page_token}));
  REQUIRE(Ids(page2.jobs) == std::vector<std::string>{"a-3", "a-1", "a-0"});
  // Exactly at the end: whether a token comes back, following it yields nothing more.
  if (!page2.next_page_token.empty()) {
    JobPage page3 = Unwrap(storage->ListJobs(
        {.tenant = "tenant-a", .page_size = 3, .page_token = page2.next_page_token}));
    REQUIRE(page3.jobs.empty());
    REQUIRE(page3.next_page_token.empty());
  }

  JobPage short_page = Unwrap(storage->ListJobs({.tenant = "tenant-a", .page_size = 5}));
  REQUIRE(Ids(short_page.jobs) == std::vector<std::string>{"a-7", "a-6", "a-5", "a-4", "a-3"});
  JobPage last = Unwrap(storage->ListJobs(
      {.tenant = "tenant-a", .page_size = 5, .page_token = short_page.next_page_token}));
  REQUIRE(Ids(last.jobs) == std::vector<std::string>{"a-1", "a-0"});
  REQUIRE(last.next_page_token.empty());

  // Tenants are isolated.
  JobPage b = Unwrap(storage->ListJobs({.tenant = "tenant-b"}));
  REQUIRE(Ids(b.jobs) == std::vector<std::string>{"b-2", "b-1", "b-0"});
  REQUIRE(b.next_page_token.empty());
  JobPage c = Unwrap(storage->ListJobs({.tenant = "tenant-c"}));
  REQUIRE(c.jobs.empty());
  REQUIRE(c.next_page_token.empty());
  for (const StoredJob& stored : Unwrap(storage->ListJobs({.tenant = "tenant-a"})).jobs) {
    REQUIRE(stored.job.tenant() == "tenant-a");
  }

  // Page size: 0 is the default, out of range is rejected.
  REQUIRE(Unwrap(storage->ListJobs({.tenant = "tenant-a", .page_size = 0})).jobs.size() == 7);
  REQUIRE(Unwrap(storage->ListJobs({.tenant = "tenant-a", .page_size = kMaxJobPageSize}))
              .jobs.size() == 7);
  RequireCode(storage->ListJobs({.tenant = "tenant-a", .page_size = -1}).status(),
              absl::StatusCode::kInvalidArgument, "page_size");
  RequireCode(storage->ListJobs({.tenant = "tenant-a", .page_size = kMaxJobPageSize + 1}).status(),
              absl::StatusCode::kInvalidArgument, "page_size");
  RequireCode(storage->ListJobs({.tenant = ""}).status(), absl::StatusCode::kInvalidArgument,
              "tenant");
}

void ListJobsStateFilterAndTokens(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  const v1::JobState states[] = {v1::JOB_STATE_DONE, v1::JOB_STATE_QUEUED, v1::JOB_STATE_DONE,
                                 v1::JOB_STATE_FAILED, v1::JOB_STATE_DONE, v1::JOB_STATE_DONE};
  for (int i = 0; i < 6; ++i) {
    RequireOk(
        storage->CreateJob(MakeJob(absl::StrCat("j-", i), "tenant-a", states[i]), "").status());
  }
  RequireOk(storage->CreateJob(MakeJob("other", "tenant-b", v1::JOB_STATE_DONE), "").status());

  ListJobsQuery done{.tenant = "tenant-a", .state = v1::JOB_STATE_DONE, .page_size = 2};
  JobPage page1 = Unwrap(storage->ListJobs(done));
  REQUIRE(Ids(page1.jobs) == std::vector<std::string>{"j-5", "j-4"});
  done.page_token = page1.next_page_token;
  JobPage page2 = Unwrap(storage->ListJobs(done));
  REQUIRE(Ids(page2.jobs) == std::vector<std::string>{"j-2", "j-0"});
  REQUIRE(Ids(Unwrap(storage->ListJobs({.tenant = "tenant-a", .state = v1::JOB_STATE_QUEUED}))
                  .jobs) == std::vector<std::string>{"j-1"});
  REQUIRE(Unwrap(storage->ListJobs({.tenant = "tenant-a", .state = v1::JOB_STATE_CANCELLED}))
              .jobs.empty());

  // A state change moves the job between filtered listings.
  Job moved = MakeJob("j-1", "tenant-a", v1::JOB_STATE_DONE);
  REQUIRE(Unwrap(storage->UpdateJob(moved, 1)) == 2);
  REQUIRE(Unwrap(storage->ListJobs({.tenant = "tenant-a", .state = v1::JOB_STATE_QUEUED}))
              .jobs.empty());
  REQUIRE(Unwrap(storage->ListJobs({.tenant = "tenant-a", .state = v1::JOB_STATE_DONE}))
              .jobs.size() == 5);

  // Tokens are bound to their query and opaque.
  const auto invalid = absl::StatusCode::kInvalidArgument;
  RequireCode(storage->ListJobs({.tenant = "tenant-b", .state = v1::JOB_STATE_DONE,
                                 .page_size = 2, .page_token = page1.next_page_token})
                  .status(),
              invalid, "page_token");
  RequireCode(storage->ListJobs({.tenant = "tenant-a", .page_size = 2,
                                 .page_token = page1.next_page_token})
                  .status(),
              invalid, "page_token");
  RequireCode(storage->ListJobs({.tenant = "tenant-a", .page_token = "not a token!"}).status(),
              invalid, "page_token");
  RequireCode(storage->ListJobs({.tenant = "tenant-a", .page_token = "cDF8MHwtNXx0ZW5hbnQtYQ"})
                  .status(),
              invalid, "page_token");
  RequireCode(
      storage->ListJobs({.tenant = "tenant-a", .state = static_cast<v1::JobState>(42)}).status(),
      invalid, "state");
}

void ListUnfinishedJobs(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  REQUIRE(Unwrap(storage->ListUnfinishedJobs()).empty());
  const std::pair<const char*, v1::JobState> jobs[] = {
      {"q", v1::JOB_STATE_QUEUED},  {"d", v1::JOB_STATE_DONE},   {"b", v1::JOB_STATE_BASELINE},
      {"f", v1::JOB_STATE_FAILED},  {"r", v1::JOB_STATE_ROUNDS}, {"c", v1::JOB_STATE_CANCELLED}};
  for (const auto& [id, state] : jobs) {
    const std::string tenant = std::string(id) == "b" ? "tenant-b" : "tenant-a";
    RequireOk(storage->CreateJob(MakeJob(id, tenant, state), "").status());
  }
  Job rounds = MakeJob("r", "tenant-a", v1::JOB_STATE_ROUNDS);
  rounds.set_current_round(3);
  REQUIRE(Unwrap(storage->UpdateJob(rounds, 1)) == 2);

  std::vector<StoredJob> unfinished = Unwrap(storage->ListUnfinishedJobs());
  REQUIRE(Ids(unfinished) == std::vector<std::string>{"q", "b", "r"});  // oldest first
  REQUIRE(unfinished[2].revision == 2);
  REQUIRE(unfinished[2].job.current_round() == 3);
  REQUIRE(unfinished[1].job.tenant() == "tenant-b");

  rounds.set_state(v1::JOB_STATE_DONE);
  REQUIRE(Unwrap(storage->UpdateJob(rounds, 2)) == 3);
  REQUIRE(Ids(Unwrap(storage->ListUnfinishedJobs())) == std::vector<std::string>{"q", "b"});
  for (v1::JobState state : {v1::JOB_STATE_QUEUED, v1::JOB_STATE_BASELINE, v1::JOB_STATE_ROUNDS}) {
    REQUIRE(IsUnfinishedJobState(state));
  }
  for (v1::JobState state : {v1::JOB_STATE_DONE, v1::JOB_STATE_FAILED, v1::JOB_STATE_CANCELLED,
                             v1::JOB_STATE_UNSPECIFIED}) {
    REQUIRE_FALSE(IsUnfinishedJobState(state));
  }
}

void DeleteJobCascades(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  const Populated p = Populate(*storage);
  Populated only_other = p;
  only_other.job_ids = {"job-1"};
  only_other.candidate_ids = {"job-1-cand-0", "job-1-cand-1", "job-1-cand-2"};
  only_other.task_ids = {"job-1-task-1"};
  only_other.checkpoints = {{"job-1", "state"}};
  const std::string before_other = Snapshot(*storage, only_other);

  RequireOk(storage->DeleteJob("job-0"));
  const auto not_found = absl::StatusCode::kNotFound;
  RequireCode(storage->GetJob("job-0").status(), not_found, "job-0");
  RequireCode(storage->ListEvents("job-0", 0, 0).status(), not_found, "job-0");
  RequireCode(storage->ListCandidates("job-0", std::nullopt).status(), not_found);
  RequireCode(storage->GetCandidate("job-0-cand-0").status(), not_found, "job-0-cand-0");
  RequireCode(storage->GetTaskResult("job-0-task-1").status(), not_found, "job-0-task-1");
  RequireCode(storage->ListReflexions("job-0").status(), not_found);
  RequireCode(storage->ListArtifacts("job-0", "", true).status(), not_found);
  RequireCode(storage->GetCheckpoint("job-0", "state").status(), not_found);
  RequireCode(storage->DeleteJob("job-0"), not_found, "job-0");
  // The cross-job memory outlives the job.
  REQUIRE(Lessons(Unwrap(storage->ListSharedReflexions(p.shared_key, 0))) ==
          std::vector<std::string>{"shared"});
  // The idempotency key is free again, and a job re-created with the id starts afresh.
  CreateJobResult again = Unwrap(storage->CreateJob(MakeJob("job-0", "tenant-a"), "key-0"));
  REQUIRE(again.created);
  REQUIRE(again.stored.revision == 1);
  REQUIRE(Unwrap(storage->AppendEvent("job-0", MakeEvent(v1::JOB_EVENT_LOG, "x"))) == 1);
  REQUIRE(Unwrap(storage->ListCandidates("job-0", std::nullopt)).empty());

  // The other job is untouched.
  std::string after_other = Snapshot(*storage, only_other);
  // The snapshot's counts of tenant-a and unfinished jobs are the same (job-0 is back).
  REQUIRE(after_other == before_other);
}

// --- Events ----------------------------------------------------------------------

void EventSequences(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  RequireOk(storage->CreateJob(MakeJob("job-1", "tenant-a"), "").status());
  RequireOk(storage->CreateJob(MakeJob("job-2", "tenant-a"), "").status());
  REQUIRE(Unwrap(storage->ListEvents("job-1", 0, 0)).empty());

  REQUIRE(Unwrap(storage->AppendEvent("job-1", MakeEvent(v1::JOB_EVENT_STATE_CHANGED, "a"))) == 1);
  JobEvent with_id = MakeEvent(v1::JOB_EVENT_ROUND_STARTED, "b");
  with_id.set_job_id("job-1");
  REQUIRE(Unwrap(storage->AppendEvent("job-1", with_id)) == 2);
  JobEvent rich = MakeEvent(v1::JOB_EVENT_CANDIDATE_MEASURED, "c");
  *rich.mutable_candidate() = MakeCandidate("cand-1", "job-1", 1);
  *rich.mutable_reflexion() = MakeReflexion("lesson");
  rich.set_best_speedup(1.5);
  rich.mutable_time()->set_seconds(1700000123);
  REQUIRE(Unwrap(storage->AppendEvent("job-1", rich)) == 3);
  // Sequences are per job.
  REQUIRE(Unwrap(storage->AppendEvent("job-2", MakeEvent(v1::JOB_EVENT_LOG, "x"))) == 1);

  std::vector<JobEvent> events = Unwrap(storage->ListEvents("job-1", 0, 0));
  REQUIRE(Sequences(events) == std::vector<int64_t>{1, 2, 3});
  for (const JobEvent& event : events) REQUIRE(event.job_id() == "job-1");
  JobEvent expected = rich;
  expected.set_job_id("job-1");
  expected.set_sequence(3);
  REQUIRE(Equal(events[2], expected));

  REQUIRE(Sequences(Unwrap(storage->ListEvents("job-1", 1, 0))) == std::vector<int64_t>{1, 2, 3});
  REQUIRE(Sequences(Unwrap(storage->ListEvents("job-1", 2, 0))) == std::vector<int64_t>{2, 3});
  REQUIRE(Sequences(Unwrap(storage->ListEvents("job-1", 2, 1))) == std::vector<int64_t>{2});
  REQUIRE(Unwrap(storage->ListEvents("job-1", 4, 0)).empty());
  REQUIRE(Sequences(Unwrap(storage->ListEvents("job-1", 0, kMaxEventLimit))).size() == 3);

  const auto invalid = absl::StatusCode::kInvalidArgument;
  RequireCode(storage->ListEvents("job-1", 0, -1).status(), invalid, "limit");
  RequireCode(storage->ListEvents("job-1", 0, kMaxEventLimit + 1).status(), invalid, "limit");
  RequireCode(storage->ListEvents("job-1", -1, 0).status(), invalid, "from_sequence");
  RequireCode(storage->ListEvents("nope", 0, 0).status(), absl::StatusCode::kNotFound, "nope");
  RequireCode(storage->AppendEvent("nope", MakeEvent(v1::JOB_EVENT_LOG, "x")).status(),
              absl::StatusCode::kNotFound, "nope");
  JobEvent wrong_job = MakeEvent(v1::JOB_EVENT_LOG, "x");
  wrong_job.set_job_id("job-2");
  RequireCode(storage->AppendEvent("job-1", wrong_job).status(), invalid, "event.job_id");
  JobEvent preset = MakeEvent(v1::JOB_EVENT_LOG, "x");
  preset.set_sequence(9);
  RequireCode(storage->AppendEvent("job-1", preset).status(), invalid, "event.sequence");
  RequireCode(storage->AppendEvent("job-1", MakeEvent(v1::JOB_EVENT_TYPE_UNSPECIFIED, "x")).status(),
              invalid, "event.type");
  RequireCode(
      storage->AppendEvent("job-1", MakeEvent(static_cast<v1::JobEventType>(77), "x")).status(),
      invalid, "event.type");
  RequireCode(storage->AppendEvent("", MakeEvent(v1::JOB_EVENT_LOG, "x")).status(), invalid,
              "job_id");

  // Failed appends consume no sequence number.
  REQUIRE(Unwrap(storage->AppendEvent("job-1", MakeEvent(v1::JOB_EVENT_LOG, "d"))) == 4);
  REQUIRE(Sequences(Unwrap(storage->ListEvents("job-1", 0, 0))) ==
          std::vector<int64_t>{1, 2, 3, 4});
}

void EventConcurrentAppenders(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  RequireOk(storage->CreateJob(MakeJob("job-1", "tenant-a"), "").status());
  RequireOk(storage->CreateJob(MakeJob("job-2", "tenant-a"), "").status());
  constexpr int kThreads = 8;
  constexpr int kPerThread = 30;
  std::vector<std::vector<std::pair<int, int64_t>>> assigned(kThreads);  // (job, sequence)
  std::atomic<int> failures{0};
  std::atomic<bool> writing{true};
  std::atomic<int> reader_gaps{0};

  // A reader never sees a gap: the log is always 1..n.
  std::thread reader([&] {
    while (writing.load()) {
      absl::StatusOr<std::vector<JobEvent>> events = storage->ListEvents("job-1", 0, 0);
      if (!events.ok()) {
        ++failures;
        return;
      }
      for (size_t i = 0; i < events->size(); ++i) {
        if ((*events)[i].sequence() != static_cast<int64_t>(i) + 1) ++reader_gaps;
      }
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int job = (t + i) % 2;
        JobEvent event = MakeEvent(v1::JOB_EVENT_LOG, absl::StrCat("t", t, "-", i));
        absl::StatusOr<int64_t> sequence =
            storage->AppendEvent(job == 0 ? "job-1" : "job-2", event);
        if (!sequence.ok()) {
          ++failures;
          continue;
        }
        assigned[t].push_back({job, *sequence});
      }
    });
  }
  for (std::thread& writer : writers) writer.join();
  writing = false;
  reader.join();
  REQUIRE(failures == 0);
  REQUIRE(reader_gaps == 0);

  for (int job = 0; job < 2; ++job) {
    std::vector<int64_t> returned;
    for (const auto& per_thread : assigned) {
      int64_t last = 0;
      for (const auto& [j, sequence] : per_thread) {
        if (j != job) continue;
        REQUIRE(sequence > last);  // each appender sees its own appends in order
        last = sequence;
        returned.push_back(sequence);
      }
    }
    std::sort(returned.begin(), returned.end());
    const int64_t total = kThreads * kPerThread / 2;
    std::vector<int64_t> expected;
    for (int64_t s = 1; s <= total; ++s) expected.push_back(s);
    REQUIRE(returned == expected);  // unique, no gaps
    std::vector<JobEvent> stored =
        Unwrap(storage->ListEvents(job == 0 ? "job-1" : "job-2", 0, 0));
    REQUIRE(Sequences(stored) == expected);
    // Each stored message is the one its appender sent with that sequence.
    std::set<std::string> messages;
    for (const JobEvent& event : stored) messages.insert(event.message());
    REQUIRE(static_cast<int64_t>(messages.size()) == total);
  }
}

// --- Candidates ------------------------------------------------------------------

void Candidates(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  RequireOk(storage->CreateJob(MakeJob("job-1", "tenant-a"), "").status());
  RequireOk(storage->CreateJob(MakeJob("job-2", "tenant-a"), "").status());
  REQUIRE(Unwrap(storage->ListCandidates("job-1", std::nullopt)).empty());

  RequireOk(storage->PutCandidate(MakeCandidate("c1", "job-1", 0)));
  RequireOk(storage->PutCandidate(MakeCandidate("c2", "job-1", 1)));
  RequireOk(storage->PutCandidate(MakeCandidate("c3", "job-1", 1)));
  RequireOk(storage->PutCandidate(MakeCandidate("c4", "job-1", 0)));
  RequireOk(storage->PutCandidate(MakeCandidate("d1", "job-2", 0)));

  REQUIRE(Equal(Unwrap(storage->GetCandidate("c2")), MakeCandidate("c2", "job-1", 1)));
  REQUIRE(CandidateIds(Unwrap(storage->ListCandidates("job-1", std::nullopt))) ==
          std::vector<std::string>{"c1", "c4", "c2", "c3"});
  REQUIRE(CandidateIds(Unwrap(storage->ListCandidates("job-1", 1))) ==
          std::vector<std::string>{"c2", "c3"});
  REQUIRE(Unwrap(storage->ListCandidates("job-1", 7)).empty());
  REQUIRE(CandidateIds(Unwrap(storage->ListCandidates("job-2", std::nullopt))) ==
          std::vector<std::string>{"d1"});

  // Upsert: the measurement arrives later; the position in the listing is kept.
  Candidate measured = MakeCandidate("c2", "job-1", 1);
  measured.mutable_measurement()->set_verdict(v1::VERDICT_INCORRECT);
  measured.mutable_measurement()->mutable_correctness()->set_reason("max abs error 3.2");
  RequireOk(storage->PutCandidate(measured));
  REQUIRE(Equal(Unwrap(storage->GetCandidate("c2")), measured));
  REQUIRE(CandidateIds(Unwrap(storage->ListCandidates("job-1", 1))) ==
          std::vector<std::string>{"c2", "c3"});
  // A round change moves it between round listings.
  Candidate moved = measured;
  moved.set_round(2);
  RequireOk(storage->PutCandidate(moved));
  REQUIRE(CandidateIds(Unwrap(storage->ListCandidates("job-1", std::nullopt))) ==
          std::vector<std::string>{"c1", "c4", "c3", "c2"});

  const auto invalid = absl::StatusCode::kInvalidArgument;
  RequireCode(storage->PutCandidate(MakeCandidate("c1", "job-2", 0)), invalid, "candidate.job_id");
  RequireCode(storage->PutCandidate(MakeCandidate("c9", "nope", 0)), absl::StatusCode::kNotFound,
              "nope");
  RequireCode(storage->PutCandidate(MakeCandidate("", "job-1", 0)), invalid, "candidate.id");
  RequireCode(storage->PutCandidate(MakeCandidate("c9", "", 0)), invalid, "candidate.job_id");
  RequireCode(storage->PutCandidate(MakeCandidate("c9", "job-1", -1)), invalid, "candidate.round");
  Candidate bad_verdict = MakeCandidate("c9", "job-1", 0);
  bad_verdict.mutable_measurement()->set_verdict(static_cast<v1::Verdict>(50));
  RequireCode(storage->PutCandidate(bad_verdict), invalid, "verdict");
  RequireCode(storage->GetCandidate("c9").status(), absl::StatusCode::kNotFound, "c9");
  RequireCode(storage->GetCandidate("").status(), invalid, "candidate_id");
  RequireCode(storage->ListCandidates("nope", std::nullopt).status(), absl::StatusCode::kNotFound,
              "nope");
  RequireCode(storage->ListCandidates("job-1", -1).status(), invalid, "round");
  REQUIRE(Equal(Unwrap(storage->GetCandidate("c1")), MakeCandidate("c1", "job-1", 0)));
}

void TaskResultsAreIdempotent(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  RequireOk(storage->CreateJob(MakeJob("job-1", "tenant-a"), "").status());
  RequireOk(storage->CreateJob(MakeJob("job-2", "tenant-a"), "").status());

  RequireCode(storage->GetTaskResult("task-1").status(), absl::StatusCode::kNotFound, "task-1");
  const std::string first("first\0\xff", 7);
  REQUIRE(Unwrap(storage->PutTaskResult("job-1", "task-1", first)) == first);
  // A re-run's result does not replace the first one.
  REQUIRE(Unwrap(storage->PutTaskResult("job-1", "task-1", "second")) == first);
  REQUIRE(Unwrap(storage->GetTaskResult("task-1")) == first);
  REQUIRE(Unwrap(storage->PutTaskResult("job-1", "task-empty", "")).empty());
  REQUIRE(Unwrap(storage->GetTaskResult("task-empty")).empty());

  const auto invalid = absl::StatusCode::kInvalidArgument;
  RequireCode(storage->PutTaskResult("job-2", "task-1", "x").status(), invalid, "task-1");
  RequireCode(storage->PutTaskResult("nope", "task-2", "x").status(), absl::StatusCode::kNotFound,
              "nope");
  RequireCode(storage->PutTaskResult("job-1", "", "x").status(), invalid, "task_id");
  RequireCode(storage->PutTaskResult("", "task-2", "x").status(), invalid, "job_id");
  RequireCode(
      storage->PutTaskResult("job-1", "task-2", std::string(kMaxTaskResultBytes + 1, 'r')).status(),
      absl::StatusCode::kResourceExhausted, "task-2");
  RequireCode(storage->GetTaskResult("task-2").status(), absl::StatusCode::kNotFound);

  // Racing writers all get the same, first, result.
  constexpr int kThreads = 8;
  std::vector<absl::StatusOr<std::string>> results(kThreads, absl::UnknownError("unset"));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      results[t] = storage->PutTaskResult("job-2", "task-race", absl::StrCat("result-", t));
    });
  }
  for (std::thread& thread : threads) thread.join();
  const std::string kept = Unwrap(storage->GetTaskResult("task-race"));
  for (auto& result : results) REQUIRE(Unwrap(std::move(result)) == kept);
}

// --- Reflexions ------------------------------------------------------------------

void Reflexions(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  RequireOk(storage->CreateJob(MakeJob("job-1", "tenant-a"), "").status());
  RequireOk(storage->CreateJob(MakeJob("job-2", "tenant-a"), "").status());
  REQUIRE(Unwrap(storage->ListReflexions("job-1")).empty());

  REQUIRE(Unwrap(storage->AppendReflexion("job-1", MakeReflexion("first", 1))) == 1);
  REQUIRE(Unwrap(storage->AppendReflexion("job-1", MakeReflexion("second", 1))) == 2);
  REQUIRE(Unwrap(storage->AppendReflexion("job-2", MakeReflexion("other", 1))) == 1);
  REQUIRE(Unwrap(storage->AppendReflexion("job-1", MakeReflexion("third", 2))) == 3);
  std::vector<Reflexion> listed = Unwrap(storage->ListReflexions("job-1"));
  REQUIRE(Lessons(listed) == std::vector<std::string>{"first", "second", "third"});
  REQUIRE(Equal(listed[2], MakeReflexion("third", 2)));
  REQUIRE(Lessons(Unwrap(storage->ListReflexions("job-2"))) == std::vector<std::string>{"other"});

  RequireCode(storage->AppendReflexion("nope", MakeReflexion("x")).status(),
              absl::StatusCode::kNotFound, "nope");
  RequireCode(storage->ListReflexions("nope").status(), absl::StatusCode::kNotFound, "nope");
  RequireCode(storage->AppendReflexion("job-1", MakeReflexion("x", -1)).status(),
              absl::StatusCode::kInvalidArgument, "reflexion.round");
  REQUIRE(Unwrap(storage->ListReflexions("job-1")).size() == 3);
}

void SharedReflexionMemory(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  const SharedMemoryKey key{"tenant-a", "matvec", "sm_90"};
  REQUIRE(Unwrap(storage->ListSharedReflexions(key, 0)).empty());
  for (int i = 0; i < 5; ++i) {
    RequireOk(storage->AppendSharedReflexion(key, i % 2 ? "" : "job-gone",
                                             MakeReflexion(absl::StrCat("L", i))));
  }
  // Neighbouring keys: another tenant, op class or architecture.
  RequireOk(storage->AppendSharedReflexion({"tenant-b", "matvec", "sm_90"}, "", MakeReflexion("B")));
  RequireOk(storage->AppendSharedReflexion({"tenant-a", "gemm", "sm_90"}, "", MakeReflexion("G")));
  RequireOk(storage->AppendSharedReflexion({"tenant-a", "matvec", "sm_80"}, "", MakeReflexion("A")));

  REQUIRE(Lessons(Unwrap(storage->ListSharedReflexions(key, 0))) ==
          std::vector<std::string>{"L0", "L1", "L2", "L3", "L4"});
  // The most recent `limit`, oldest first.
  REQUIRE(Lessons(Unwrap(storage->ListSharedReflexions(key, 2))) ==
          std::vector<std::string>{"L3", "L4"});
  REQUIRE(Equal(Unwrap(storage->ListSharedReflexions(key, 1))[0], MakeReflexion("L4")));
  REQUIRE(Lessons(Unwrap(storage->ListSharedReflexions({"tenant-b", "matvec", "sm_90"}, 0))) ==
          std::vector<std::string>{"B"});
  REQUIRE(Lessons(Unwrap(storage->ListSharedReflexions({"tenant-a", "gemm", "sm_90"}, 0))) ==
          std::vector<std::string>{"G"});
  REQUIRE(Lessons(Unwrap(storage->ListSharedReflexions({"tenant-a", "matvec", "sm_80"}, 0))) ==
          std::vector<std::string>{"A"});
  REQUIRE(Unwrap(storage->ListSharedReflexions({"tenant-c", "matvec", "sm_90"}, 0)).empty());

  const auto invalid = absl::StatusCode::kInvalidArgument;
  RequireCode(storage->AppendSharedReflexion({"", "matvec", "sm_90"}, "", MakeReflexion("x")),
              invalid, "key.tenant");
  RequireCode(storage->AppendSharedReflexion({"t", "", "sm_90"}, "", MakeReflexion("x")), invalid,
              "key.op_class");
  RequireCode(storage->AppendSharedReflexion({"t", "matvec", ""}, "", MakeReflexion("x")), invalid,
              "key.gpu_arch");
  RequireCode(storage->AppendSharedReflexion(key, "bad id", MakeReflexion("x")), invalid,
              "source_job_id");
  RequireCode(storage->ListSharedReflexions(key, -1).status(), invalid, "limit");
  RequireCode(storage->ListSharedReflexions(key, kMaxSharedReflexionLimit + 1).status(), invalid,
              "limit");
  RequireCode(storage->ListSharedReflexions({"t", "", "sm_90"}, 0).status(), invalid,
              "key.op_class");
  REQUIRE(Unwrap(storage->ListSharedReflexions(key, 0)).size() == 5);
}

// --- Artifacts -------------------------------------------------------------------

void Artifacts(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  RequireOk(storage->CreateJob(MakeJob("job-1", "tenant-a"), "").status());
  RequireOk(storage->CreateJob(MakeJob("job-2", "tenant-a"), "").status());
  REQUIRE(Unwrap(storage->ListArtifacts("job-1", "", true)).empty());

  const std::string binary("\x00\x01\xff kernel", 10);
  for (const char* name : {"round-2/cand-3/kernel.py", "round-1/cand-2/kernel.py", "summary.json",
                           "round-1/cand-1/kernel.py", "round-10/x", "r\xc3\xa9sum\xc3\xa9.txt"}) {
    RequireOk(storage->PutArtifact("job-1", MakeArtifact(name, binary + name)));
  }
  RequireOk(storage->PutArtifact("job-2", MakeArtifact("round-1/other", "other job")));

  REQUIRE(ArtifactNames(Unwrap(storage->ListArtifacts("job-1", "", true))) ==
          std::vector<std::string>{"round-1/cand-1/kernel.py", "round-1/cand-2/kernel.py",
                                   "round-10/x", "round-2/cand-3/kernel.py",
                                   "r\xc3\xa9sum\xc3\xa9.txt", "summary.json"});  // bytewise
  std::vector<Artifact> round1 = Unwrap(storage->ListArtifacts("job-1", "round-1/", true));
  REQUIRE(ArtifactNames(round1) ==
          std::vector<std::string>{"round-1/cand-1/kernel.py", "round-1/cand-2/kernel.py"});
  REQUIRE(Equal(round1[0], MakeArtifact("round-1/cand-1/kernel.py",
                                        binary + "round-1/cand-1/kernel.py")));
  REQUIRE(ArtifactNames(Unwrap(storage->ListArtifacts("job-1", "round-1", true))).size() == 3);
  REQUIRE(ArtifactNames(Unwrap(storage->ListArtifacts("job-1", "r\xc3\xa9", true))) ==
          std::vector<std::string>{"r\xc3\xa9sum\xc3\xa9.txt"});
  REQUIRE(Unwrap(storage->ListArtifacts("job-1", "zzz", true)).empty());
  REQUIRE(Unwrap(storage->ListArtifacts("job-1", "round-1/cand-1/kernel.py/", true)).empty());

  // Without content: metadata only.
  std::vector<Artifact> light = Unwrap(storage->ListArtifacts("job-1", "summary", false));
  REQUIRE(light.size() == 1);
  REQUIRE(light[0].content().empty());
  REQUIRE(light[0].kind() == "kernel");
  REQUIRE(light[0].content_type() == "text/x-python");

  // Upsert by name.
  Artifact replaced = MakeArtifact("summary.json", "{\"best\": 2}");
  replaced.set_kind("report");
  RequireOk(storage->PutArtifact("job-1", replaced));
  REQUIRE(Equal(Unwrap(storage->GetArtifact("job-1", "summary.json")), replaced));
  REQUIRE(Unwrap(storage->ListArtifacts("job-1", "", false)).size() == 6);
  // Names are per job.
  REQUIRE(Unwrap(storage->GetArtifact("job-2", "round-1/other")).content() == "other job");
  RequireCode(storage->GetArtifact("job-2", "summary.json").status(), absl::StatusCode::kNotFound,
              "summary.json");

  // Empty content is a valid artifact.
  RequireOk(storage->PutArtifact("job-1", MakeArtifact("empty", "")));
  REQUIRE(Unwrap(storage->GetArtifact("job-1", "empty")).content().empty());

  const auto invalid = absl::StatusCode::kInvalidArgument;
  RequireCode(storage->PutArtifact("job-1", MakeArtifact("", "x")), invalid, "artifact.name");
  RequireCode(storage->PutArtifact("job-1", MakeArtifact("bad\nname", "x")), invalid,
              "artifact.name");
  RequireCode(storage->PutArtifact("job-1", MakeArtifact(std::string(kMaxArtifactNameBytes + 1, 'n'),
                                                         "x")),
              invalid, "artifact.name");
  Artifact bad_kind = MakeArtifact("k", "x");
  bad_kind.set_kind(std::string(kMaxArtifactKindBytes + 1, 'k'));
  RequireCode(storage->PutArtifact("job-1", bad_kind), invalid, "artifact.kind");
  RequireCode(storage->PutArtifact("nope", MakeArtifact("a", "x")), absl::StatusCode::kNotFound,
              "nope");
  RequireCode(storage->ListArtifacts("nope", "", true).status(), absl::StatusCode::kNotFound,
              "nope");
  RequireCode(storage->GetArtifact("nope", "a").status(), absl::StatusCode::kNotFound, "nope");
  RequireCode(storage->GetArtifact("job-1", "").status(), invalid, "name");
  RequireCode(storage->ListArtifacts("job-1", std::string(kMaxArtifactNameBytes + 1, 'p'), true)
                  .status(),
              invalid, "prefix");
}

void ArtifactSizeBound(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  RequireOk(storage->CreateJob(MakeJob("job-1", "tenant-a"), "").status());
  const std::string at_limit(kMaxArtifactBytes, 'a');
  RequireOk(storage->PutArtifact("job-1", MakeArtifact("big", at_limit)));
  REQUIRE(Unwrap(storage->GetArtifact("job-1", "big")).content() == at_limit);

  // One byte over: refused, and the stored artifact of that name is unchanged.
  RequireCode(storage->PutArtifact("job-1", MakeArtifact("big", at_limit + "b")),
              absl::StatusCode::kResourceExhausted, "big");
  RequireCode(storage->PutArtifact("job-1", MakeArtifact("new", at_limit + "b")),
              absl::StatusCode::kResourceExhausted, "limit");
  REQUIRE(Unwrap(storage->GetArtifact("job-1", "big")).content() == at_limit);
  REQUIRE(ArtifactNames(Unwrap(storage->ListArtifacts("job-1", "", false))) ==
          std::vector<std::string>{"big"});
}

// --- Checkpoints -----------------------------------------------------------------

void Checkpoints(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  RequireOk(storage->CreateJob(MakeJob("job-1", "tenant-a"), "").status());
  RequireOk(storage->CreateJob(MakeJob("job-2", "tenant-a"), "").status());

  RequireCode(storage->GetCheckpoint("job-1", "round/1").status(), absl::StatusCode::kNotFound,
              "round/1");
  const std::string bytes("\x08\x01\x00\xff", 4);
  RequireOk(storage->PutCheckpoint("job-1", "round/1", bytes));
  REQUIRE(Unwrap(storage->GetCheckpoint("job-1", "round/1")) == bytes);
  RequireOk(storage->PutCheckpoint("job-1", "round/1", "overwritten"));
  REQUIRE(Unwrap(storage->GetCheckpoint("job-1", "round/1")) == "overwritten");
  RequireOk(storage->PutCheckpoint("job-1", "empty", ""));
  REQUIRE(Unwrap(storage->GetCheckpoint("job-1", "empty")).empty());
  // Keys are per job.
  RequireCode(storage->GetCheckpoint("job-2", "round/1").status(), absl::StatusCode::kNotFound);
  RequireOk(storage->PutCheckpoint("job-2", "round/1", "job 2"));
  REQUIRE(Unwrap(storage->GetCheckpoint("job-1", "round/1")) == "overwritten");

  RequireCode(storage->PutCheckpoint("nope", "k", "v"), absl::StatusCode::kNotFound, "nope");
  RequireCode(storage->GetCheckpoint("nope", "k").status(), absl::StatusCode::kNotFound, "nope");
  RequireCode(storage->PutCheckpoint("job-1", "", "v"), absl::StatusCode::kInvalidArgument,
              "checkpoint key");
  RequireCode(storage->PutCheckpoint("job-1", "round/1", std::string(kMaxCheckpointBytes + 1, 'c')),
              absl::StatusCode::kResourceExhausted, "round/1");
  REQUIRE(Unwrap(storage->GetCheckpoint("job-1", "round/1")) == "overwritten");
}

// --- Transactions ----------------------------------------------------------------

void TransactionCommitsTogether(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  Job job = MakeJob("job-1", "tenant-a");
  RequireOk(storage->CreateJob(job, "").status());

  int64_t new_revision = 0;
  RequireOk(storage->RunInTransaction([&](Storage& tx) -> absl::Status {
    KAGENT_RETURN_IF_ERROR(tx.PutCandidate(MakeCandidate("c1", "job-1", 1)));
    KAGENT_RETURN_IF_ERROR(tx.PutTaskResult("job-1", "task-1", "measured").status());
    KAGENT_RETURN_IF_ERROR(tx.AppendReflexion("job-1", MakeReflexion("r")).status());
    KAGENT_RETURN_IF_ERROR(tx.PutCheckpoint("job-1", "round/1", "done"));
    KAGENT_RETURN_IF_ERROR(tx.PutArtifact("job-1", MakeArtifact("round-1/k.py", "k")));
    job.set_state(v1::JOB_STATE_ROUNDS);
    job.set_current_round(1);
    KAGENT_ASSIGN_OR_RETURN(new_revision, tx.UpdateJob(job, 1));
    KAGENT_ASSIGN_OR_RETURN(int64_t sequence,
                            tx.AppendEvent("job-1", MakeEvent(v1::JOB_EVENT_BEAM_UPDATED, "b")));
    if (sequence != 1) return absl::InternalError("unexpected sequence");
    // Reads inside see the transaction's own writes.
    KAGENT_ASSIGN_OR_RETURN(StoredJob inside, tx.GetJob("job-1"));
    if (inside.revision != 2) return absl::InternalError("own update not visible");
    KAGENT_ASSIGN_OR_RETURN(Candidate candidate, tx.GetCandidate("c1"));
    if (candidate.round() != 1) return absl::InternalError("own candidate not visible");
    return absl::OkStatus();
  }));
  REQUIRE(new_revision == 2);
  StoredJob stored = Unwrap(storage->GetJob("job-1"));
  REQUIRE(stored.revision == 2);
  REQUIRE(Equal(stored.job, job));
  REQUIRE(Equal(Unwrap(storage->GetCandidate("c1")), MakeCandidate("c1", "job-1", 1)));
  REQUIRE(Unwrap(storage->GetTaskResult("task-1")) == "measured");
  REQUIRE(Unwrap(storage->ListReflexions("job-1")).size() == 1);
  REQUIRE(Unwrap(storage->GetCheckpoint("job-1", "round/1")) == "done");
  REQUIRE(Unwrap(storage->ListArtifacts("job-1", "", false)).size() == 1);
  REQUIRE(Sequences(Unwrap(storage->ListEvents("job-1", 0, 0))) == std::vector<int64_t>{1});
}

void TransactionRollsBackOnError(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  Job job = MakeJob("job-1", "tenant-a");
  RequireOk(storage->CreateJob(job, "").status());
  RequireOk(storage->PutCheckpoint("job-1", "round/0", "kept"));

  // The body fails after writing: nothing it wrote is kept, and its status is returned.
  absl::Status status = storage->RunInTransaction([&](Storage& tx) -> absl::Status {
    KAGENT_RETURN_IF_ERROR(tx.PutCandidate(MakeCandidate("c1", "job-1", 1)));
    KAGENT_RETURN_IF_ERROR(tx.AppendEvent("job-1", MakeEvent(v1::JOB_EVENT_LOG, "x")).status());
    KAGENT_RETURN_IF_ERROR(tx.AppendReflexion("job-1", MakeReflexion("r")).status());
    KAGENT_RETURN_IF_ERROR(tx.PutCheckpoint("job-1", "round/0", "overwritten"));
    KAGENT_RETURN_IF_ERROR(tx.PutTaskResult("job-1", "task-1", "x").status());
    KAGENT_RETURN_IF_ERROR(tx.CreateJob(MakeJob("job-2", "tenant-a"), "k").status());
    Job updated = job;
    updated.set_state(v1::JOB_STATE_FAILED);
    KAGENT_RETURN_IF_ERROR(tx.UpdateJob(updated, 1).status());
    return absl::InternalError("round failed: boom");
  });
  RequireCode(status, absl::StatusCode::kInternal, "boom");

  // A failing storage call inside propagates and also undoes everything.
  status = storage->RunInTransaction([&](Storage& tx) -> absl::Status {
    KAGENT_RETURN_IF_ERROR(tx.PutCandidate(MakeCandidate("c2", "job-1", 1)));
    return tx.UpdateJob(job, 5).status();  // stale
  });
  RequireCode(status, absl::StatusCode::kAborted);

  const auto not_found = absl::StatusCode::kNotFound;
  RequireCode(storage->GetCandidate("c1").status(), not_found);
  RequireCode(storage->GetCandidate("c2").status(), not_found);
  RequireCode(storage->GetTaskResult("task-1").status(), not_found);
  RequireCode(storage->GetJob("job-2").status(), not_found);
  REQUIRE(Unwrap(storage->ListEvents("job-1", 0, 0)).empty());
  REQUIRE(Unwrap(storage->ListReflexions("job-1")).empty());
  REQUIRE(Unwrap(storage->GetCheckpoint("job-1", "round/0")) == "kept");
  StoredJob stored = Unwrap(storage->GetJob("job-1"));
  REQUIRE(stored.revision == 1);
  REQUIRE(Equal(stored.job, job));
  // No sequence number was consumed, and the idempotency key is still free.
  REQUIRE(Unwrap(storage->AppendEvent("job-1", MakeEvent(v1::JOB_EVENT_LOG, "y"))) == 1);
  REQUIRE(Unwrap(storage->AppendReflexion("job-1", MakeReflexion("r"))) == 1);
  REQUIRE(Unwrap(storage->CreateJob(MakeJob("job-3", "tenant-a"), "k")).created);
}

void NestedTransaction(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  RequireOk(storage->CreateJob(MakeJob("job-1", "tenant-a"), "").status());

  // A failed inner unit undoes only its own writes.
  RequireOk(storage->RunInTransaction([&](Storage& tx) -> absl::Status {
    KAGENT_RETURN_IF_ERROR(tx.PutCheckpoint("job-1", "a", "outer-before"));
    absl::Status inner = tx.RunInTransaction([&](Storage& inner_tx) -> absl::Status {
      KAGENT_RETURN_IF_ERROR(inner_tx.PutCheckpoint("job-1", "b", "inner"));
      KAGENT_RETURN_IF_ERROR(inner_tx.PutCheckpoint("job-1", "a", "inner-overwrite"));
      return absl::CancelledError("inner gives up");
    });
    if (inner.code() != absl::StatusCode::kCancelled) return absl::InternalError("inner status");
    // The inner writes are already invisible inside the outer transaction.
    if (tx.GetCheckpoint("job-1", "b").status().code() != absl::StatusCode::kNotFound) {
      return absl::InternalError("inner write visible after its rollback");
    }
    // A successful inner unit commits with the outer one.
    KAGENT_RETURN_IF_ERROR(tx.RunInTransaction(
        [&](Storage& inner_tx) { return inner_tx.PutCheckpoint("job-1", "c", "inner-ok"); }));
    return tx.PutCheckpoint("job-1", "d", "outer-after");
  }));
  REQUIRE(Unwrap(storage->GetCheckpoint("job-1", "a")) == "outer-before");
  RequireCode(storage->GetCheckpoint("job-1", "b").status(), absl::StatusCode::kNotFound);
  REQUIRE(Unwrap(storage->GetCheckpoint("job-1", "c")) == "inner-ok");
  REQUIRE(Unwrap(storage->GetCheckpoint("job-1", "d")) == "outer-after");

  // A successful inner unit is undone when the outer one fails.
  absl::Status status = storage->RunInTransaction([&](Storage& tx) -> absl::Status {
    KAGENT_RETURN_IF_ERROR(tx.RunInTransaction(
        [&](Storage& inner_tx) { return inner_tx.PutCheckpoint("job-1", "e", "inner"); }));
    return absl::AbortedError("outer gives up");
  });
  RequireCode(status, absl::StatusCode::kAborted, "outer gives up");
  RequireCode(storage->GetCheckpoint("job-1", "e").status(), absl::StatusCode::kNotFound);
}

void ConcurrentTransactionsAndReaders(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  RequireOk(storage->CreateJob(MakeJob("job-1", "tenant-a"), "").status());
  constexpr int kWriters = 4;
  constexpr int kRounds = 15;
  std::atomic<int> failures{0};
  std::atomic<int> torn_reads{0};
  std::atomic<bool> writing{true};

  // Each transaction adds one candidate, one event and bumps the job: a reader in a
  // transaction always sees the three agree.
  auto read_consistent = [&] {
    while (writing.load()) {
      absl::Status status = storage->RunInTransaction([&](Storage& tx) -> absl::Status {
        KAGENT_ASSIGN_OR_RETURN(std::vector<JobEvent> events, tx.ListEvents("job-1", 0, 0));
        KAGENT_ASSIGN_OR_RETURN(std::vector<Candidate> candidates,
                                tx.ListCandidates("job-1", std::nullopt));
        KAGENT_ASSIGN_OR_RETURN(StoredJob job, tx.GetJob("job-1"));
        if (events.size() != candidates.size() ||
            static_cast<int64_t>(events.size()) != job.revision - 1 ||
            job.job.current_round() != static_cast<int>(events.size())) {
          ++torn_reads;
        }
        return absl::OkStatus();
      });
      if (!status.ok()) ++failures;
    }
  };
  std::thread reader(read_consistent);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int r = 0; r < kRounds; ++r) {
        absl::Status status = storage->RunInTransaction([&](Storage& tx) -> absl::Status {
          KAGENT_ASSIGN_OR_RETURN(StoredJob job, tx.GetJob("job-1"));
          job.job.set_current_round(job.job.current_round() + 1);
          KAGENT_RETURN_IF_ERROR(tx.UpdateJob(job.job, job.revision).status());
          KAGENT_RETURN_IF_ERROR(
              tx.PutCandidate(MakeCandidate(absl::StrCat("c-", w, "-", r), "job-1", r)));
          return tx.AppendEvent("job-1", MakeEvent(v1::JOB_EVENT_CANDIDATE_MEASURED, "m"))
              .status();
        });
        if (!status.ok()) ++failures;
      }
    });
  }
  for (std::thread& writer : writers) writer.join();
  writing = false;
  reader.join();
  REQUIRE(failures == 0);
  REQUIRE(torn_reads == 0);
  StoredJob job = Unwrap(storage->GetJob("job-1"));
  REQUIRE(job.job.current_round() == kWriters * kRounds);
  REQUIRE(job.revision == 1 + kWriters * kRounds);
  REQUIRE(Unwrap(storage->ListCandidates("job-1", std::nullopt)).size() == kWriters * kRounds);
}

// --- Robustness and persistence ----------------------------------------------------

void BadInputLeavesDataIntact(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  const Populated p = Populate(*storage);
  const std::string before = Snapshot(*storage, p);

  // Each of these fails; none may change what is stored.
  std::vector<absl::Status> failures;
  failures.push_back(storage->CreateJob(MakeJob("job-0", "tenant-a", v1::JOB_STATE_DONE), "").status());
  failures.push_back(storage->CreateJob(MakeJob("job-0", "", v1::JOB_STATE_DONE), "").status());
  Job stale = Unwrap(storage->GetJob("job-0")).job;
  stale.set_state(v1::JOB_STATE_CANCELLED);
  failures.push_back(storage->UpdateJob(stale, 1).status());
  Job retenant = stale;
  retenant.set_tenant("tenant-b");
  failures.push_back(storage->UpdateJob(retenant, 2).status());
  Job bad_state = stale;
  bad_state.set_state(static_cast<v1::JobState>(12));
  failures.push_back(storage->UpdateJob(bad_state, 2).status());
  failures.push_back(storage->PutCandidate(MakeCandidate("job-0-cand-0", "job-1", 0)));
  failures.push_back(storage->PutCandidate(MakeCandidate("job-0-cand-0", "job-0", -4)));
  JobEvent bad_event = MakeEvent(v1::JOB_EVENT_LOG, "x");
  bad_event.set_sequence(2);
  failures.push_back(storage->AppendEvent("job-0", bad_event).status());
  failures.push_back(
      storage->PutArtifact("job-0", MakeArtifact("summary.json", std::string(kMaxArtifactBytes + 1, 'x'))));
  failures.push_back(storage->PutArtifact("job-0", MakeArtifact("round-1/kernel.py\x01", "x")));
  failures.push_back(storage->PutCheckpoint("job-0", "state", std::string(kMaxCheckpointBytes + 1, 'x')));
  failures.push_back(storage->PutTaskResult("job-1", "job-0-task-1", "x").status());
  failures.push_back(storage->AppendReflexion("job-0", MakeReflexion("x", -1)).status());
  failures.push_back(storage->AppendSharedReflexion({"tenant-a", "", "sm_90"}, "", MakeReflexion("x")));
  failures.push_back(storage->DeleteJob("job-404"));
  failures.push_back(storage->RunInTransaction([&](Storage& tx) -> absl::Status {
    KAGENT_RETURN_IF_ERROR(tx.DeleteJob("job-1"));
    KAGENT_RETURN_IF_ERROR(tx.PutCheckpoint("job-0", "state", "clobbered"));
    return absl::UnavailableError("worker lost");
  }));
  for (const absl::Status& status : failures) {
    INFO(status.ToString());
    REQUIRE_FALSE(status.ok());
  }
  // The same-valued task result is answered with the stored one and changes nothing.
  REQUIRE(Unwrap(storage->PutTaskResult("job-0", "job-0-task-1", "new")) ==
          std::string("r\0esult", 7));

  REQUIRE(Snapshot(*storage, p) == before);
  // Nor on disk.
  storage.reset();
  storage = OpenStorage(*env);
  REQUIRE(Snapshot(*storage, p) == before);
}

void RestartKeepsEverything(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  Populated p = Populate(*storage);
  RequireOk(storage->CreateJob(MakeJob("job-a2", "tenant-a", v1::JOB_STATE_DONE), "").status());
  p.job_ids.push_back("job-a2");
  const std::string before = Snapshot(*storage, p);
  JobPage first_page = Unwrap(storage->ListJobs({.tenant = "tenant-a", .page_size = 1}));
  REQUIRE(Ids(first_page.jobs) == std::vector<std::string>{"job-a2"});
  storage.reset();  // close

  storage = OpenStorage(*env);
  REQUIRE(Snapshot(*storage, p) == before);
  // Counters continue where they were.
  REQUIRE(Unwrap(storage->AppendEvent("job-0", MakeEvent(v1::JOB_EVENT_LOG, "after"))) == 4);
  REQUIRE(Unwrap(storage->AppendReflexion("job-0", MakeReflexion("after"))) == 2);
  StoredJob stored = Unwrap(storage->GetJob("job-0"));
  REQUIRE(stored.revision == 2);
  stored.job.set_state(v1::JOB_STATE_DONE);
  REQUIRE(Unwrap(storage->UpdateJob(stored.job, 2)) == 3);
  // Idempotency keys and page tokens survive too.
  REQUIRE_FALSE(Unwrap(storage->CreateJob(MakeJob("job-new", "tenant-a"), "key-0")).created);
  RequireOk(storage->CreateJob(MakeJob("job-new", "tenant-a"), "").status());
  JobPage next = Unwrap(storage->ListJobs(
      {.tenant = "tenant-a", .page_size = 1, .page_token = first_page.next_page_token}));
  REQUIRE(Ids(next.jobs) == std::vector<std::string>{"job-0"});
  storage.reset();

  storage = OpenStorage(*env);
  stored = Unwrap(storage->GetJob("job-0"));
  REQUIRE(stored.revision == 3);
  REQUIRE(stored.job.state() == v1::JOB_STATE_DONE);
  REQUIRE(Sequences(Unwrap(storage->ListEvents("job-0", 0, 0))) ==
          std::vector<int64_t>{1, 2, 3, 4});
  REQUIRE(Ids(Unwrap(storage->ListJobs({.tenant = "tenant-a"})).jobs) ==
          std::vector<std::string>{"job-new", "job-a2", "job-0"});
  REQUIRE(Ids(Unwrap(storage->ListUnfinishedJobs())) ==
          std::vector<std::string>{"job-1", "job-new"});
}

void SchemaVersionAndNewerSchemaRefused(const StorageTestEnvFactory& factory) {
  auto env = factory();
  auto storage = OpenStorage(*env);
  const int64_t version = Unwrap(storage->SchemaVersion());
  REQUIRE(version >= 1);
  RequireOk(storage->CreateJob(MakeJob("job-1", "tenant-a"), "").status());
  storage.reset();

  // Reopening migrates nothing.
  storage = OpenStorage(*env);
  REQUIRE(Unwrap(storage->SchemaVersion()) == version);
  storage.reset();

  // A database from a newer binary is refused with a clear message.
  RequireOk(env->SetRecordedSchemaVersion(version + 1));
  absl::StatusOr<std::unique_ptr<Storage>> refused = env->Open();
  RequireCode(refused.status(), absl::StatusCode::kFailedPrecondition, "newer");
  REQUIRE(absl::StrContains(refused.status().message(), absl::StrCat(version + 1)));

  // Refusing changed nothing: back at this binary's version, the data is there.
  RequireOk(env->SetRecordedSchemaVersion(version));
  storage = OpenStorage(*env);
  REQUIRE(Unwrap(storage->SchemaVersion()) == version);
  REQUIRE(Unwrap(storage->GetJob("job-1")).job.tenant() == "tenant-a");
}

}  // namespace kagent::storage_suite
