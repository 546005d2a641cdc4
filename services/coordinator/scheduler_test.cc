// Scheduler tests with fake GPU workers: one task per GPU at a time, fairness across
// jobs, tasks moving off a dead worker, idempotent results, no-worker failure.
#include <catch2/catch.hpp>

#include <future>
#include <vector>

#include "common/storage/sqlite_storage.h"
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

TEST_CASE("scheduler: never two tasks on one GPU, all GPUs used") {
  Fixture f;
  SchedulerOptions o;
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

TEST_CASE("scheduler: fair across jobs") {
  Fixture f;
  f.a.delay = absl::Milliseconds(20);
  Scheduler s(SchedulerOptions(), f.storage.get(), &f.factory, nullptr);
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

TEST_CASE("scheduler: invalid registrations are rejected") {
  Fixture f;
  Scheduler s(SchedulerOptions(), f.storage.get(), &f.factory, nullptr);
  CHECK(s.RegisterWorker("", "a:1", {}, true).code() == absl::StatusCode::kInvalidArgument);
  CHECK(s.RegisterWorker("w", "nocolon", {}, true).code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kagent
