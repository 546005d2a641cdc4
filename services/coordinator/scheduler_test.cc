// Scheduler tests with fake GPU workers: at most tasks_per_worker tasks per GPU at a time
// (one with 1), fairness across jobs, tasks moving off a dead worker, idempotent results
// (screens too), no-worker failure, ReleaseJob to every live worker, INFRA_ERROR verdicts
// retried on another worker (or a lone worker again), counted, stored once spent.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "prometheus/registry.h"

#include "common/storage/sqlite_storage.h"
#include "services/coordinator/coordinator_setup.h"
#include "services/coordinator/scheduler.h"
#include "services/coordinator/testing_fakes.h"

namespace kagent {
namespace {

using testing::FakeGpu;
using testing::FakeWorkerFactory;

v1::Measurement Correct(double ms) {
  v1::Measurement m;
  m.set_verdict(v1::VERDICT_CORRECT);
  m.mutable_candidate()->set_median_ms(ms);
  return m;
}

GpuTask MeasureTask(const std::string& job, const std::string& id) {
  GpuTask t;
  t.kind = GpuTask::Kind::kMeasure;
  t.job_id = job;
  t.task_id = id;
  t.measure.mutable_kernel()->set_source("k");
  return t;
}

GpuTask ScreenTask(const std::string& job, const std::string& id, int kernels) {
  GpuTask t;
  t.kind = GpuTask::Kind::kScreen;
  t.job_id = job;
  t.task_id = id;
  t.screen.set_task_id(id);
  t.screen.set_job_id(job);
  for (int i = 0; i < kernels; ++i) t.screen.add_kernels()->set_source(absl::StrCat("k", i));
  return t;
}

// Runs `tasks` at once, each on its own thread; every one must succeed.
void RunAll(Scheduler& s, std::vector<GpuTask>& tasks) {
  std::vector<std::future<absl::StatusOr<GpuTaskResult>>> fs;
  for (auto& t : tasks) fs.push_back(std::async(std::launch::async, [&s, &t] { return s.Run(t, nullptr); }));
  for (auto& f : fs) REQUIRE(f.get().ok());
}

// Polls `done` for up to 5 s.
template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return done();
}

v1::Measurement Infra(const std::string& reason) {
  v1::Measurement m;
  m.set_verdict(v1::VERDICT_INFRA_ERROR);
  m.mutable_correctness()->set_reason(reason);
  return m;
}

// The value of counter `name` with labels `labels` (all of them), 0 when absent.
double CounterValue(prometheus::Registry& registry, const std::string& name,
                    const std::map<std::string, std::string>& labels) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& metric : family.metric) {
      std::map<std::string, std::string> got;
      for (const auto& l : metric.label) got[l.name] = l.value;
      if (got == labels) return metric.counter.value;
    }
  }
  return 0;
}

std::vector<std::string> Released(FakeGpu& g) {
  absl::MutexLock lock(&g.mu);
  return g.released_jobs;
}

struct Fixture {
  Fixture() {
    storage = *SqliteStorage::Open({.path = ":memory:"});
    for (const char* job : {"j1", "j2"}) {
      v1::Job j;
      j.set_id(job);
      j.set_tenant("t");
      j.set_state(v1::JOB_STATE_QUEUED);
      REQUIRE(storage->CreateJob(j, "").ok());
    }
    a.measure = b.measure = [](const std::string&) { return Correct(1.0); };
    factory.gpus["a:1"] = &a;
    factory.gpus["b:1"] = &b;
  }
  std::unique_ptr<SqliteStorage> storage;
  FakeGpu a, b;
  FakeWorkerFactory factory;
};

TEST_CASE("scheduler: with one task per worker, never two tasks on one GPU, all GPUs used") {
  Fixture f;
  SchedulerOptions o;
  o.tasks_per_worker = 1;
  Scheduler s(o, f.storage.get(), &f.factory, nullptr);
  REQUIRE(s.RegisterWorker("wa", "a:1", {}, true).ok());
  REQUIRE(s.RegisterWorker("wb", "b:1", {}, true).ok());
  std::vector<std::future<absl::StatusOr<GpuTaskResult>>> fs;
  std::vector<GpuTask> tasks;
  for (int i = 0; i < 12; ++i) tasks.push_back(MeasureTask(i % 2 ? "j1" : "j2", "t" + std::to_string(i)));
  for (auto& t : tasks) fs.push_back(std::async(std::launch::async, [&s, &t] { return s.Run(t, nullptr); }));
  for (auto& f2 : fs) REQUIRE(f2.get().ok());
  CHECK(f.a.max_in_flight == 1);
  CHECK(f.b.max_in_flight == 1);
  CHECK(f.a.calls > 0);
  CHECK(f.b.calls > 0);
  CHECK(f.a.calls + f.b.calls == 12);
}

TEST_CASE("scheduler: a stored task result is reused, not re-run") {
  Fixture f;
  Scheduler s(SchedulerOptions(), f.storage.get(), &f.factory, nullptr);
  REQUIRE(s.RegisterWorker("wa", "a:1", {}, true).ok());
  GpuTask t = MeasureTask("j1", "same-task");
  auto r1 = s.Run(t, nullptr);
  REQUIRE(r1.ok());
  auto r2 = s.Run(t, nullptr);
  REQUIRE(r2.ok());
  CHECK(r2->from_storage);
  CHECK(f.a.calls == 1);
  CHECK(r2->measure.measurement().candidate().median_ms() == 1.0);
}

TEST_CASE("scheduler: a task on a dead worker moves to another") {
  Fixture f;
  f.a.dead = true;
  Scheduler s(SchedulerOptions(), f.storage.get(), &f.factory, nullptr);
  REQUIRE(s.RegisterWorker("wa", "a:1", {}, true).ok());
  REQUIRE(s.RegisterWorker("wb", "b:1", {}, true).ok());
  for (int i = 0; i < 4; ++i) {
    auto r = s.Run(MeasureTask("j1", "x" + std::to_string(i)), nullptr);
    REQUIRE(r.ok());
    CHECK(r->worker_id == "wb");
  }
}

TEST_CASE("scheduler: no live worker fails with a clear reason instead of hanging") {
  Fixture f;
  SchedulerOptions o;
  o.no_worker_timeout = absl::Milliseconds(300);
  Scheduler s(o, f.storage.get(), &f.factory, nullptr);
  auto r = s.Run(MeasureTask("j1", "lonely"), nullptr);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kUnavailable);
  CHECK(r.status().message().find("no GPU worker") != std::string::npos);
}

TEST_CASE("scheduler: two tasks per worker: two in flight on one GPU, never three") {
  Fixture f;
  f.a.delay = absl::Milliseconds(40);
  SchedulerOptions o;
  o.tasks_per_worker = 2;
  Scheduler s(o, f.storage.get(), &f.factory, nullptr);
  REQUIRE(s.RegisterWorker("wa", "a:1", {}, true).ok());
  std::vector<GpuTask> tasks;
  for (int i = 0; i < 10; ++i) tasks.push_back(MeasureTask(i % 2 ? "j1" : "j2", "d" + std::to_string(i)));
  // While they run, the scheduler's own count never passes the depth either.
  std::atomic<bool> running{true};
  std::atomic<int> max_reported{0};
  std::thread watch([&] {
    while (running) {
      for (const WorkerInfo& w : s.Workers()) max_reported = std::max(max_reported.load(), w.in_flight);
      absl::SleepFor(absl::Milliseconds(2));
    }
  });
  RunAll(s, tasks);
  running = false;
  watch.join();
  CHECK(f.a.max_in_flight == 2);
  CHECK(f.a.calls == 10);
  CHECK(max_reported <= 2);
  CHECK(max_reported >= 1);
  std::vector<WorkerInfo> workers = s.Workers();
  REQUIRE(workers.size() == 1);
  CHECK(workers[0].in_flight == 0);
  CHECK_FALSE(workers[0].busy());
  CHECK(workers[0].tasks_done == 10);
}

TEST_CASE("scheduler: free task slots go to the least loaded worker first") {
  Fixture f;
  f.a.delay = f.b.delay = absl::Milliseconds(150);
  SchedulerOptions o;
  o.tasks_per_worker = 2;
  Scheduler s(o, f.storage.get(), &f.factory, nullptr);
  REQUIRE(s.RegisterWorker("wa", "a:1", {}, true).ok());
  REQUIRE(s.RegisterWorker("wb", "b:1", {}, true).ok());
  std::vector<GpuTask> tasks = {MeasureTask("j1", "s1"), MeasureTask("j1", "s2")};
  RunAll(s, tasks);
  CHECK(f.a.calls == 1);  // not both on the first worker
  CHECK(f.b.calls == 1);
}

TEST_CASE("scheduler: equally idle workers take turns") {
  // One task at a time, each finished before the next: both workers idle every time,
  // and the tie goes to the worker after the last one granted, not always the first.
  Fixture f;
  SchedulerOptions o;
  o.tasks_per_worker = 2;
  Scheduler s(o, f.storage.get(), &f.factory, nullptr);
  REQUIRE(s.RegisterWorker("wa", "a:1", {}, true).ok());
  REQUIRE(s.RegisterWorker("wb", "b:1", {}, true).ok());
  for (int i = 0; i < 4; ++i) {
    GpuTask t = MeasureTask("j1", "turn" + std::to_string(i));
    REQUIRE(s.Run(t, nullptr).ok());
  }
  CHECK(f.a.calls == 2);
  CHECK(f.b.calls == 2);
}

TEST_CASE("scheduler: busy time counts the wall time a worker had tasks, not their sum") {
  Fixture f;
  f.a.delay = absl::Milliseconds(300);
  SchedulerOptions o;
  o.tasks_per_worker = 2;
  Scheduler s(o, f.storage.get(), &f.factory, nullptr);
  REQUIRE(s.RegisterWorker("wa", "a:1", {}, true).ok());
  std::vector<GpuTask> tasks = {MeasureTask("j1", "b1"), MeasureTask("j2", "b2")};
  RunAll(s, tasks);
  REQUIRE(f.a.max_in_flight == 2);  // the two ran side by side
  std::vector<WorkerInfo> w = s.Workers();
  REQUIRE(w.size() == 1);
  CHECK(w[0].busy_seconds >= 0.29);
  CHECK(w[0].busy_seconds < 0.55);  // the sum of the two tasks would be >= 0.6
}

TEST_CASE("scheduler: fair across jobs") {
  Fixture f;
  f.a.delay = absl::Milliseconds(20);
  SchedulerOptions o;
  o.tasks_per_worker = 1;  // as before the depth existed
  Scheduler s(o, f.storage.get(), &f.factory, nullptr);
  REQUIRE(s.RegisterWorker("wa", "a:1", {}, true).ok());
  // j1 queues 6 tasks first, then j2 queues 1: j2's task must not wait for all of j1's.
  std::vector<GpuTask> t1;
  for (int i = 0; i < 6; ++i) t1.push_back(MeasureTask("j1", "f1-" + std::to_string(i)));
  std::vector<std::future<absl::Time>> fs;
  for (auto& t : t1) {
    fs.push_back(std::async(std::launch::async, [&s, &t] {
      (void)s.Run(t, nullptr);
      return absl::Now();
    }));
  }
  absl::SleepFor(absl::Milliseconds(30));
  GpuTask t2 = MeasureTask("j2", "f2");
  (void)s.Run(t2, nullptr);
  absl::Time j2_done = absl::Now();
  int j1_after = 0;
  for (auto& f2 : fs) j1_after += f2.get() > j2_done ? 1 : 0;
  CHECK(j1_after >= 3);  // j2 overtook most of j1's queue
}

TEST_CASE("scheduler: fair across jobs with two tasks per worker") {
  Fixture f;
  f.a.delay = absl::Milliseconds(20);
  SchedulerOptions o;
  o.tasks_per_worker = 2;
  Scheduler s(o, f.storage.get(), &f.factory, nullptr);
  REQUIRE(s.RegisterWorker("wa", "a:1", {}, true).ok());
  // j1 queues 12 tasks first (two start at once), then j2 queues 1: j2 takes the next
  // free slot instead of waiting for j1's queue.
  std::vector<GpuTask> t1;
  for (int i = 0; i < 12; ++i) t1.push_back(MeasureTask("j1", "g1-" + std::to_string(i)));
  std::vector<std::future<absl::Time>> fs;
  for (auto& t : t1) {
    fs.push_back(std::async(std::launch::async, [&s, &t] {
      (void)s.Run(t, nullptr);
      return absl::Now();
    }));
  }
  absl::SleepFor(absl::Milliseconds(30));
  GpuTask t2 = MeasureTask("j2", "g2");
  REQUIRE(s.Run(t2, nullptr).ok());
  absl::Time j2_done = absl::Now();
  int j1_after = 0;
  for (auto& f2 : fs) j1_after += f2.get() > j2_done ? 1 : 0;
  CHECK(j1_after >= 5);  // j2 overtook most of j1's queue
  CHECK(f.a.max_in_flight == 2);
}

TEST_CASE("scheduler: a screen is a GPU task like the others, its stored result reused") {
  Fixture f;
  f.a.dead = true;  // a transport failure moves it to another worker, as a measurement
  SchedulerOptions o;
  Scheduler s(o, f.storage.get(), &f.factory, nullptr);
  REQUIRE(s.RegisterWorker("wa", "a:1", {}, true).ok());
  REQUIRE(s.RegisterWorker("wb", "b:1", {}, true).ok());
  GpuTask t = ScreenTask("j1", "j1/r1/w0/screen/abc", 3);
  auto r1 = s.Run(t, nullptr);
  REQUIRE(r1.ok());
  CHECK_FALSE(r1->from_storage);
  CHECK(r1->worker_id == "wb");
  REQUIRE(r1->screen.results_size() == 3);
  CHECK(r1->screen.results(2).ok());
  CHECK(r1->screen.gpu_seconds() == Approx(0.05));
  const int calls = f.b.screen_calls;
  CHECK(calls == 1);
  // Again (e.g. a resumed job): answered from storage, not screened again.
  auto r2 = s.Run(t, nullptr);
  REQUIRE(r2.ok());
  CHECK(r2->from_storage);
  CHECK(f.b.screen_calls == 1);
  CHECK(r2->screen.SerializeAsString() == r1->screen.SerializeAsString());
  // A measurement's stored result is not a screen's: the kinds keep their own ids.
  GpuTask m = MeasureTask("j1", "j1/r1/w0");
  auto r3 = s.Run(m, nullptr);
  REQUIRE(r3.ok());
  CHECK_FALSE(r3->from_storage);
  CHECK(r3->measure.measurement().candidate().median_ms() == 1.0);
}

TEST_CASE("scheduler: a worker that cannot screen fails the screen, and stays in rotation") {
  Fixture f;
  f.a.screen_error = absl::UnimplementedError("unknown method Screen");
  Scheduler s(SchedulerOptions(), f.storage.get(), &f.factory, nullptr);
  REQUIRE(s.RegisterWorker("wa", "a:1", {}, true).ok());
  auto r = s.Run(ScreenTask("j1", "old-worker-screen", 2), nullptr);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kUnimplemented);
  CHECK(f.a.screen_calls == 1);  // not retried: not a transport failure
  auto m = s.Run(MeasureTask("j1", "after-screen"), nullptr);
  REQUIRE(m.ok());
  CHECK(m->worker_id == "wa");
}

TEST_CASE("scheduler: ReleaseJob reaches every live worker, off the caller's thread") {
  Fixture f;
  FakeGpu c;
  c.measure = f.a.measure;
  f.factory.gpus["c:1"] = &c;
  f.b.release_error = absl::UnavailableError("connection refused");
  SchedulerOptions o;
  o.no_worker_timeout = absl::Milliseconds(300);
  auto s = std::make_unique<Scheduler>(o, f.storage.get(), &f.factory, nullptr);
  REQUIRE(s->RegisterWorker("wa", "a:1", {}, true).ok());
  REQUIRE(s->RegisterWorker("wb", "b:1", {}, true).ok());
  REQUIRE(s->RegisterWorker("wc", "c:1", {}, false).ok());
  s->RemoveWorker("wc");  // no longer live: not called
  s->ReleaseJob("j1");
  CHECK(Eventually([&] { return Released(f.a).size() == 1 && Released(f.b).size() == 1; }));
  CHECK(Released(f.a) == std::vector<std::string>{"j1"});
  CHECK(Released(f.b) == std::vector<std::string>{"j1"});  // it failed there: logged, no retry
  CHECK(Released(c).empty());
  // The scheduler goes on serving after a failed release.
  REQUIRE(s->Run(MeasureTask("j2", "after-release"), nullptr).ok());
  // Releases still queued when the scheduler is destroyed are sent before it goes.
  s->ReleaseJob("j2");
  s->ReleaseJob("j3");
  s.reset();
  CHECK(Released(f.a) == std::vector<std::string>{"j1", "j2", "j3"});
}

TEST_CASE("scheduler: a worker re-registered at a new address keeps its tasks in flight") {
  Fixture f;
  f.a.delay = absl::Milliseconds(200);
  SchedulerOptions o;
  o.tasks_per_worker = 2;
  Scheduler s(o, f.storage.get(), &f.factory, nullptr);
  REQUIRE(s.RegisterWorker("w", "a:1", {}, false).ok());
  std::vector<GpuTask> tasks = {MeasureTask("j1", "m1"), MeasureTask("j1", "m2")};
  std::vector<std::future<absl::StatusOr<GpuTaskResult>>> fs;
  for (auto& t : tasks) fs.push_back(std::async(std::launch::async, [&s, &t] { return s.Run(t, nullptr); }));
  REQUIRE(Eventually([&] { return f.a.in_flight == 2; }));
  REQUIRE(s.RegisterWorker("w", "b:1", {}, false).ok());  // replaces the client under the calls
  std::vector<WorkerInfo> during = s.Workers();
  REQUIRE(during.size() == 1);
  CHECK(during[0].in_flight == 2);
  CHECK(during[0].address == "b:1");
  for (auto& fu : fs) REQUIRE(fu.get().ok());
  std::vector<WorkerInfo> after = s.Workers();
  CHECK(after[0].in_flight == 0);
  CHECK(after[0].tasks_done == 2);
  auto next = s.Run(MeasureTask("j1", "m3"), nullptr);
  REQUIRE(next.ok());
  CHECK(f.b.calls == 1);  // the new address serves the next task
}

TEST_CASE("scheduler: invalid registrations are rejected") {
  Fixture f;
  Scheduler s(SchedulerOptions(), f.storage.get(), &f.factory, nullptr);
  CHECK(s.RegisterWorker("", "a:1", {}, true).code() == absl::StatusCode::kInvalidArgument);
  CHECK(s.RegisterWorker("w", "nocolon", {}, true).code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kagent

namespace kagent {
namespace {

TEST_CASE("scheduler: an INFRA_ERROR measurement runs again on another worker, the good result stored") {
  Fixture f;
  f.a.measure = [](const std::string&) { return Infra("harness failed (signal 9)"); };
  prometheus::Registry registry;
  Scheduler s(SchedulerOptions(), f.storage.get(), &f.factory, &registry);
  REQUIRE(s.RegisterWorker("wa", "a:1", {}, true).ok());
  REQUIRE(s.RegisterWorker("wb", "b:1", {}, true).ok());
  for (int i = 0; i < 4; ++i) {
    GpuTask t = MeasureTask("j1", "infra" + std::to_string(i));
    auto r = s.Run(t, nullptr);
    REQUIRE(r.ok());
    CHECK(r->measure.measurement().verdict() == v1::VERDICT_CORRECT);
    CHECK(r->worker_id == "wb");
    auto again = s.Run(t, nullptr);  // the stored answer is the good one
    REQUIRE(again.ok());
    CHECK(again->from_storage);
    CHECK(again->measure.measurement().verdict() == v1::VERDICT_CORRECT);
  }
  CHECK(f.a.calls >= 1);  // equally idle workers take turns: some tasks went to wa first
  CHECK(f.b.calls == 4);
  CHECK(CounterValue(registry, "kagent_gpu_task_infra_retries_total", {{"kind", "measure"}}) ==
        f.a.calls);
  CHECK(CounterValue(registry, "kagent_gpu_tasks_total", {{"kind", "measure"}, {"outcome", "ok"}}) == 4);
  // wa stays in rotation (its harness answered), with the failures counted.
  for (const WorkerInfo& w : s.Workers()) {
    CHECK(w.alive);
    if (w.id == "wa") CHECK(w.failures == f.a.calls);
  }
}

TEST_CASE("scheduler: an INFRA_ERROR retry waits for a busy worker that has not failed the task") {
  Fixture f;
  f.a.measure = [](const std::string&) { return Infra("harness server exited"); };
  f.b.delay = absl::Milliseconds(300);
  SchedulerOptions o;
  o.tasks_per_worker = 1;
  Scheduler s(o, f.storage.get(), &f.factory, nullptr);
  REQUIRE(s.RegisterWorker("wa", "a:1", {}, true).ok());
  REQUIRE(s.RegisterWorker("wb", "b:1", {}, true).ok());
  std::vector<GpuTask> tasks = {MeasureTask("j1", "p1"), MeasureTask("j2", "p2")};
  std::vector<std::future<absl::StatusOr<GpuTaskResult>>> fs;
  for (auto& t : tasks) fs.push_back(std::async(std::launch::async, [&s, &t] { return s.Run(t, nullptr); }));
  for (auto& fut : fs) {
    auto r = fut.get();
    REQUIRE(r.ok());
    CHECK(r->measure.measurement().verdict() == v1::VERDICT_CORRECT);
    CHECK(r->worker_id == "wb");
  }
  // One task met wa; its retry waited for wb instead of going back to the free wa.
  CHECK(f.a.calls == 1);
  CHECK(f.b.calls == 2);
}

TEST_CASE("scheduler: a lone worker runs an INFRA_ERROR task again itself") {
  Fixture f;
  std::atomic<int> n{0};
  f.a.measure = [&n](const std::string&) {
    return n++ == 0 ? Infra("the harness server closed the connection without an answer")
                    : Correct(2.0);
  };
  Scheduler s(SchedulerOptions(), f.storage.get(), &f.factory, nullptr);
  REQUIRE(s.RegisterWorker("wa", "a:1", {}, true).ok());
  auto r = s.Run(MeasureTask("j1", "lone"), nullptr);
  REQUIRE(r.ok());
  CHECK(r->measure.measurement().verdict() == v1::VERDICT_CORRECT);
  CHECK(r->measure.measurement().candidate().median_ms() == 2.0);
  CHECK(f.a.calls == 2);
}

TEST_CASE("scheduler: INFRA_ERROR on every attempt keeps the verdict, naming attempts and workers") {
  Fixture f;
  f.a.measure = [](const std::string&) { return Infra("harness failed (signal 9)"); };
  f.b.measure = f.a.measure;
  prometheus::Registry registry;
  SchedulerOptions o;
  o.max_attempts = 3;
  Scheduler s(o, f.storage.get(), &f.factory, &registry);
  REQUIRE(s.RegisterWorker("wa", "a:1", {}, true).ok());
  REQUIRE(s.RegisterWorker("wb", "b:1", {}, true).ok());
  GpuTask t = MeasureTask("j1", "doomed");
  auto r = s.Run(t, nullptr);
  REQUIRE(r.ok());
  const v1::Measurement& m = r->measure.measurement();
  CHECK(m.verdict() == v1::VERDICT_INFRA_ERROR);
  INFO(m.correctness().reason());
  CHECK(absl::StartsWith(m.correctness().reason(), "infrastructure failure on all 3 attempts (workers w"));
  CHECK(absl::StrContains(m.correctness().reason(), "wa"));
  CHECK(absl::StrContains(m.correctness().reason(), "wb"));
  CHECK(absl::EndsWith(m.correctness().reason(), "; last: harness failed (signal 9)"));
  CHECK(f.a.calls + f.b.calls == 3);
  CHECK(f.a.calls >= 1);  // the second attempt went to the worker that had not failed it
  CHECK(f.b.calls >= 1);
  CHECK(CounterValue(registry, "kagent_gpu_task_infra_retries_total", {{"kind", "measure"}}) == 2);
  CHECK(CounterValue(registry, "kagent_gpu_tasks_total",
                     {{"kind", "measure"}, {"outcome", "infra_error"}}) == 1);
  // Stored once spent: the same task is answered from storage, not run a fourth time.
  auto again = s.Run(t, nullptr);
  REQUIRE(again.ok());
  CHECK(again->from_storage);
  CHECK(again->measure.measurement().correctness().reason() == m.correctness().reason());
  CHECK(f.a.calls + f.b.calls == 3);
}

TEST_CASE("scheduler: a candidate's own verdicts are answers, not retried") {
  Fixture f;
  f.a.measure = [](const std::string&) {
    v1::Measurement m;
    m.set_verdict(v1::VERDICT_CRASH);
    m.mutable_correctness()->set_reason("killed by signal 9");
    return m;
  };
  Scheduler s(SchedulerOptions(), f.storage.get(), &f.factory, nullptr);
  REQUIRE(s.RegisterWorker("wa", "a:1", {}, true).ok());
  auto r = s.Run(MeasureTask("j1", "crash"), nullptr);
  REQUIRE(r.ok());
  CHECK(r->measure.measurement().verdict() == v1::VERDICT_CRASH);
  CHECK(f.a.calls == 1);
}

}  // namespace
}  // namespace kagent

namespace kagent {
namespace {

TEST_CASE("kagentd's jobs at once: two per GPU task in flight, at least 4") {
  CHECK(KagentdConcurrentJobs(16, 1) == 32);  // the lent one-GPU box
  CHECK(KagentdConcurrentJobs(8, 1) == 16);
  CHECK(KagentdConcurrentJobs(2, 1) == 4);
  CHECK(KagentdConcurrentJobs(1, 1) == 4);
  CHECK(KagentdConcurrentJobs(8, 0) == 4);   // a CPU worker only
  CHECK(KagentdConcurrentJobs(8, 8) == 128);
  CHECK(KagentdConcurrentJobs(8, 1000) == 1024);
}

TEST_CASE("worker tasks for a host: one per core of each GPU worker, 2..16") {
  CHECK(AutoWorkerTasks(16, 1) == 16);   // the lent one-GPU box
  CHECK(AutoWorkerTasks(32, 4) == 8);    // four GPUs on 32 cores
  CHECK(AutoWorkerTasks(128, 8) == 16);  // eight GPUs on 128 cores
  CHECK(AutoWorkerTasks(24, 16) == 2);
  CHECK(AutoWorkerTasks(256, 1) == kMaxTasksPerWorker);
  CHECK(AutoWorkerTasks(2, 1) == 2);    // never fewer than one preparing beside one held
  CHECK(AutoWorkerTasks(64, 0) == 2);   // a CPU worker shares its cores with measuring
}

}  // namespace
}  // namespace kagent
