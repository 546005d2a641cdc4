// The job service, and the loop against a full disk (testing/loop.h's rig): what a
// failed write stores, a disk that fills mid-run, what a client sees of storage errors;
// the job service's checks of a submission.
#include <catch2/catch.hpp>

#include "services/coordinator/testing/loop.h"

namespace kagent::testing {
namespace {

void SayHowTheDiskIsFull(const FullDisk& disk) {
  if (!disk.mounted()) {
    WARN("cannot mount a tmpfs here (" << disk.mount_error()
                                       << "): the database is made full with SQLite's "
                                          "PRAGMA max_page_count instead");
  }
}

std::vector<std::string> UnfinishedIds(Loop& loop, const std::string& tenant) {
  std::vector<std::string> out;
  absl::StatusOr<std::vector<StoredJob>> jobs = loop.storage->ListUnfinishedJobs();
  REQUIRE(jobs.ok());
  for (const StoredJob& s : *jobs) {
    if (s.job.tenant() == tenant) out.push_back(s.job.id());
  }
  return out;
}

v1::Job FullDiskJob() {
  v1::Job j;
  j.set_tenant("t");
  j.mutable_problem()->set_name("p");
  j.mutable_problem()->set_source(kProblem);
  j.mutable_start_kernel()->set_source(kStart);
  j.mutable_start_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  j.mutable_config()->mutable_budget()->set_max_rounds(1);
  return j;
}

// Fills the disk (once) when the first kernel is measured: in the job's baseline.
struct FillOnFirstMeasure {
  FillOnFirstMeasure(Loop& loop, FullDisk& disk) {
    loop.gpu_a.measure = loop.gpu_b.measure = [this, &disk](const std::string& source) {
      if (!started.exchange(true)) {
        absl::Status s = disk.Fill();
        absl::MutexLock lock(&mu);
        fill_status = s;
        filled = true;
      }
      return Time(source);
    };
  }
  // Waits until the disk was filled (the fill itself done).
  void WaitFilled() {
    absl::MutexLock lock(&mu);
    mu.AwaitWithTimeout(absl::Condition(&filled), absl::Seconds(30));
    REQUIRE(filled);
    REQUIRE(fill_status.ok());
  }
  std::atomic<bool> started{false};
  absl::Mutex mu;
  bool filled ABSL_GUARDED_BY(mu) = false;
  absl::Status fill_status ABSL_GUARDED_BY(mu);
};

// A one-round job on a disk that fills at its first measurement, with storage retries for
// `retry_seconds` (backoff from 50 ms): the job is submitted and the disk full when the
// constructor returns.
struct DiskFillsMidRun {
  explicit DiskFillsMidRun(double retry_seconds) {
    SayHowTheDiskIsFull(disk);
    JobDefaults d;
    d.storage_retry_seconds = retry_seconds;
    d.storage_retry_backoff_seconds = 0.05;
    loop = std::make_unique<Loop>(disk.path(), absl::Milliseconds(2), d);
    disk.Attach(loop->storage.get());
    fill = std::make_unique<FillOnFirstMeasure>(*loop, disk);
    job = loop->Submit(1);
    fill->WaitFilled();
  }
  FullDisk disk;
  std::unique_ptr<Loop> loop;
  std::unique_ptr<FillOnFirstMeasure> fill;
  v1::Job job;
};

TEST_CASE("loop: a SubmitJob that fails on a full disk stores nothing, at every free space") {
  FullDisk disk;
  SayHowTheDiskIsFull(disk);
  Loop loop(disk.path());
  disk.Attach(loop.storage.get());
  // From no space at all upwards, a page more each time: somewhere the job fits and its
  // first event does not. Each failed Submit must leave nothing behind.
  absl::StatusOr<v1::Job> submitted = absl::UnknownError("never tried");
  int failures = 0;
  for (int pages = 0; pages < 256; ++pages) {
    REQUIRE(disk.FillLeaving(int64_t{pages} * 4096).ok());
    v1::Job j = FullDiskJob();
    j.set_id(absl::StrCat("job-full-", pages));
    submitted = loop.manager->Submit(j, "");
    if (submitted.ok()) break;
    ++failures;
    INFO("free pages: " << pages << ": " << submitted.status());
    REQUIRE(submitted.status().code() == absl::StatusCode::kResourceExhausted);
    ListJobsQuery q;
    q.tenant = "t";
    REQUIRE(loop.storage->ListJobs(q)->jobs.empty());
    REQUIRE(UnfinishedIds(loop, "t").empty());
  }
  REQUIRE(failures > 0);
  REQUIRE(submitted.ok());
  // Each failed Submit is counted, so a full disk can page someone (KagentStorageFailing).
  CHECK(loop.Counter("kagent_storage_failures_total", "operation", "submit") == failures);
  REQUIRE(disk.Free().ok());
  // The retries made one job, not one per attempt, and it has its first event.
  ListJobsQuery q;
  q.tenant = "t";
  auto listed = loop.storage->ListJobs(q)->jobs;
  REQUIRE(listed.size() == 1);
  REQUIRE(listed[0].job.id() == submitted->id());
  auto events = loop.Events(submitted->id());
  REQUIRE(!events.empty());
  CHECK(events[0].state() == v1::JOB_STATE_QUEUED);
  // A restarted coordinator runs that job and nothing else.
  loop.RestartManager();
  REQUIRE(loop.manager->ResumeUnfinished().ok());
  CHECK(UnfinishedIds(loop, "t") == std::vector<std::string>{submitted->id()});
  CHECK(loop.WaitDone(submitted->id(), absl::Seconds(30)).state() == v1::JOB_STATE_DONE);
}

TEST_CASE("loop: a disk that fills mid-run and is freed within the retry window: the job goes on") {
  DiskFillsMidRun run(/*retry_seconds=*/60);
  FullDisk& disk = run.disk;
  Loop& loop = *run.loop;
  const v1::Job& job = run.job;
  absl::SleepFor(absl::Milliseconds(500));  // the baseline's writes fail meanwhile
  CHECK(IsUnfinishedJobState(loop.storage->GetJob(job.id())->job.state()));
  REQUIRE(disk.Free().ok());
  v1::Job done = loop.WaitDone(job.id(), absl::Seconds(20));
  REQUIRE(done.state() == v1::JOB_STATE_DONE);
  CHECK(done.error().empty());
  CHECK(done.result().best_candidate_id() != "");
  CHECK(loop.Counter("kagent_storage_failures_total", "operation", "step") >= 1);
  // The job's log says what happened, without the database's path.
  bool said = false;
  for (const auto& e : loop.Events(job.id())) {
    if (e.type() != v1::JOB_EVENT_LOG || !absl::StrContains(e.message(), "storage error")) continue;
    said = true;
    CHECK(absl::StrContains(e.message(), "database or disk is full"));
    CHECK_FALSE(absl::StrContains(e.message(), disk.path()));
  }
  CHECK(said);
}

TEST_CASE("loop: a disk that stays full past the retry window: the job fails, and its "
          "failure is stored once space returns") {
  DiskFillsMidRun run(/*retry_seconds=*/0.3);
  FullDisk& disk = run.disk;
  Loop& loop = *run.loop;
  const v1::Job& job = run.job;
  absl::SleepFor(absl::Milliseconds(1500));  // past the window: storing FAILED is retried
  if (disk.mounted()) {
    // Nothing changes while the disk is full: what GetJob shows is what is stored.
    CHECK(loop.storage->GetJob(job.id())->job.state() == v1::JOB_STATE_BASELINE);
  }
  REQUIRE(disk.Free().ok());
  v1::Job failed = loop.WaitDone(job.id(), absl::Seconds(20));
  REQUIRE(failed.state() == v1::JOB_STATE_FAILED);
  INFO(failed.error());
  CHECK(absl::StartsWith(failed.error(), "storage error: sqlite: database or disk is full"));
  CHECK_FALSE(absl::StrContains(failed.error(), "budget"));
  CHECK_FALSE(absl::StrContains(failed.error(), disk.path()));
  auto events = loop.Events(job.id());
  REQUIRE(!events.empty());
  CHECK(events.back().type() == v1::JOB_EVENT_JOB_FINISHED);
  CHECK(events.back().state() == v1::JOB_STATE_FAILED);
  CHECK(events.back().message() == failed.error());
  // A restarted coordinator does not run it again.
  loop.RestartManager();
  REQUIRE(loop.manager->ResumeUnfinished().ok());
  CHECK(UnfinishedIds(loop, "t").empty());
  CHECK(loop.manager->running_jobs() == 0);
}

TEST_CASE("job service: a storage error reaches the client without the database's path") {
  FullDisk disk;
  SayHowTheDiskIsFull(disk);
  Loop loop(disk.path());
  disk.Attach(loop.storage.get());
  REQUIRE(disk.Fill().ok());
  JobServiceImpl service(JobServiceLimits(), loop.storage.get(), loop.manager.get(),
                         loop.scheduler.get(), nullptr);
  grpc::ServerContext context;
  v1::SubmitJobRequest request;
  request.mutable_problem()->set_name("p");
  request.mutable_problem()->set_source(kProblem);
  v1::SubmitJobResponse response;
  grpc::Status status = service.SubmitJob(&context, &request, &response);
  INFO(status.error_message());
  REQUIRE(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(absl::StrContains(status.error_message(), "database or disk is full"));
  CHECK_FALSE(absl::StrContains(status.error_message(), disk.path()));
  CHECK_FALSE(absl::StrContains(status.error_message(), ".db"));
  // The server keeps the full detail for its log.
  v1::Job j = FullDiskJob();
  j.set_id("job-direct");
  j.set_state(v1::JOB_STATE_QUEUED);
  absl::StatusOr<CreateJobResult> direct = loop.storage->CreateJob(j, "");
  REQUIRE(direct.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(absl::StrContains(direct.status().message(), disk.path()));
}

// The loop persists a finished job's state a moment before it appends JOB_FINISHED (two
// writes); a watch that sees the job finished in between waits for the event instead of
// ending the stream without it (seen once in the end-to-end CPU job: a client read every
// event but the last).
TEST_CASE("job service: a watch of a job just seen finished still gets its JOB_FINISHED") {
  Loop loop;
  JobServiceImpl service(JobServiceLimits(), loop.storage.get(), loop.manager.get(),
                         loop.scheduler.get(), nullptr);
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  REQUIRE(server != nullptr);
  std::unique_ptr<v1::JobService::Stub> stub =
      v1::JobService::NewStub(server->InProcessChannel(grpc::ChannelArguments()));
  v1::Job j = FullDiskJob();
  j.set_id("job-finishing");
  j.set_tenant(kDefaultTenant);
  j.set_state(v1::JOB_STATE_DONE);
  REQUIRE(loop.storage->CreateJob(j, "").ok());
  v1::JobEvent log;
  log.set_type(v1::JOB_EVENT_LOG);
  log.set_message("final run");
  REQUIRE(loop.manager->Emit(j.id(), log).ok());
  std::thread finisher([&] {
    absl::SleepFor(absl::Milliseconds(1500));  // the watch has seen DONE and no event by now
    v1::JobEvent finished;
    finished.set_type(v1::JOB_EVENT_JOB_FINISHED);
    finished.set_state(v1::JOB_STATE_DONE);
    CHECK(loop.manager->Emit(j.id(), finished).ok());
  });
  grpc::ClientContext context;
  v1::WatchJobRequest request;
  request.set_job_id(j.id());
  request.set_from_sequence(1);
  std::unique_ptr<grpc::ClientReader<v1::JobEvent>> reader = stub->WatchJob(&context, request);
  std::vector<v1::JobEvent> got;
  for (v1::JobEvent e; reader->Read(&e);) got.push_back(e);
  grpc::Status status = reader->Finish();
  finisher.join();
  CHECK(status.ok());
  REQUIRE(got.size() == 2);
  CHECK(got.back().type() == v1::JOB_EVENT_JOB_FINISHED);
  server->Shutdown();
}

TEST_CASE("job service: config.llm_agents must be agents the server offers, agreeing with the brain") {
  v1::SubmitJobRequest r;
  r.mutable_problem()->set_name("p");
  r.mutable_problem()->set_source(kProblem);
  JobServiceLimits limits;
  limits.brains = {"heuristic", "llm"};
  limits.llm_agents = {"plan", "reflect", "rewrite"};
  auto with = [&](std::vector<std::string> agents, const std::string& brain) {
    v1::SubmitJobRequest x = r;
    for (const std::string& a : agents) x.mutable_config()->add_llm_agents(a);
    x.mutable_config()->set_brain(brain);
    return ValidateSubmit(x, limits);
  };
  CHECK(with({}, "").ok());  // no choice: the server's set
  CHECK(with({}, "llm").ok());
  CHECK(with({"reflect", "plan"}, "").ok());
  CHECK(with({"plan"}, "heuristic").ok());
  CHECK(with({"rewrite", "reflect"}, "llm").ok());
  absl::Status s = with({"reflect", "narrate"}, "");
  CHECK(absl::IsInvalidArgument(s));
  CHECK(s.message() == "config.llm_agents: 'narrate' is not an LLM agent of this server; it "
                       "offers: plan, reflect, rewrite");
  s = with({"plan", "plan"}, "");
  CHECK(absl::IsInvalidArgument(s));
  CHECK(s.message() == "config.llm_agents lists 'plan' twice");
  s = with({"rewrite"}, "");
  CHECK(absl::IsInvalidArgument(s));
  CHECK_THAT(std::string(s.message()),
             Catch::StartsWith("config.llm_agents lists rewrite, but config.brain is heuristic"));
  CHECK_THAT(std::string(s.message()), Catch::Contains("known: heuristic, llm"));
  s = with({"reflect"}, "llm");
  CHECK(absl::IsInvalidArgument(s));
  CHECK_THAT(std::string(s.message()),
             Catch::StartsWith("config.brain 'llm' is an LLM brain, but config.llm_agents leaves "
                               "out rewrite"));
  // A server without LLM agents offers none.
  limits.llm_agents.clear();
  s = with({"plan"}, "");
  CHECK(s.message() == "config.llm_agents: 'plan' is not an LLM agent of this server; it offers: "
                       "none (no agent asks an LLM here)");
}

TEST_CASE("coordinator options: --offered-llm-agents names known agents once") {
  CHECK(*ParseOfferedLlmAgents("") == std::set<std::string>{});
  CHECK(*ParseOfferedLlmAgents(" reflect, plan ") == std::set<std::string>{"plan", "reflect"});
  CHECK(*ParseOfferedLlmAgents(kAllLlmAgents) ==
        std::set<std::string>{"narrate", "plan", "prescribe", "reflect", "rewrite"});
  absl::StatusOr<std::set<std::string>> bad = ParseOfferedLlmAgents("plan,dream");
  CHECK(absl::IsInvalidArgument(bad.status()));
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("unknown agent 'dream'"));
  CHECK(absl::IsInvalidArgument(ParseOfferedLlmAgents("plan,plan").status()));
}

TEST_CASE("job service: contradictory or empty settings are refused, and nothing is stored") {
  Loop loop;
  JobServiceImpl service(JobServiceLimits(), loop.storage.get(), loop.manager.get(),
                         loop.scheduler.get(), nullptr);
  v1::SubmitJobRequest good;
  good.mutable_problem()->set_name("p");
  good.mutable_problem()->set_source(kProblem);
  good.mutable_start_kernel()->set_source(kStart);
  good.mutable_start_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  auto refused = [&](const v1::SubmitJobRequest& request) {
    grpc::ServerContext context;
    v1::SubmitJobResponse response;
    grpc::Status status = service.SubmitJob(&context, &request, &response);
    ListJobsQuery q;
    q.tenant = kDefaultTenant;
    CHECK(loop.storage->ListJobs(q)->jobs.empty());
    CHECK(response.job().id().empty());
    return status;
  };
  {
    v1::SubmitJobRequest r = good;
    r.mutable_config()->set_strategy(v1::SEARCH_STRATEGY_GREEDY);
    r.mutable_config()->set_beam_width(4);
    grpc::Status s = refused(r);
    INFO(s.error_message());
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StrContains(s.error_message(), "config.strategy GREEDY"));
    CHECK(absl::StrContains(s.error_message(), "config.beam_width is 4"));
  }
  for (const char* source : {"", " \n\t \n"}) {
    v1::SubmitJobRequest r = good;
    r.mutable_start_kernel()->set_source(source);
    grpc::Status s = refused(r);
    INFO(s.error_message());
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(s.error_message() ==
          "start_kernel.source is empty: give the kernel's source, or leave start_kernel out to "
          "let the brain write the first kernel");
  }
  // GREEDY with beam width 1 given, or none, is accepted: the job keeps one kernel a round.
  JobServiceLimits limits;
  for (bool explicit_width : {true, false}) {
    v1::SubmitJobRequest r = good;
    r.mutable_config()->set_strategy(v1::SEARCH_STRATEGY_GREEDY);
    if (explicit_width) r.mutable_config()->set_beam_width(1);
    CHECK(ValidateSubmit(r, limits).ok());
    CHECK(loop.manager->EffectiveConfig(r.config()).beam_width() == 1);
  }
  // BEAM with any width in range stays as given.
  v1::SubmitJobRequest beam = good;
  beam.mutable_config()->set_strategy(v1::SEARCH_STRATEGY_BEAM);
  beam.mutable_config()->set_beam_width(4);
  CHECK(ValidateSubmit(beam, limits).ok());
  CHECK(loop.manager->EffectiveConfig(beam.config()).beam_width() == 4);
}

}  // namespace
}  // namespace kagent::testing
