// BenchmarkServiceImpl over gRPC on loopback, with a scripted Harness: prepare runs before
// (and without) the GPU slot, a final prepare result never takes it, gpu_seconds is the
// held time only, busy time comes from the meter over exactly that window; Screen and
// ReleaseJob; idempotence; the metrics.
#include <catch2/catch.hpp>

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "services/benchmark/benchmark_service.h"

namespace kagent {
namespace {

struct Event {
  std::string what;    // "prepare", "measure", "screen"
  std::string task;
  bool slot_busy = false;  // whether the GPU slot was held when the call began
  std::string handle;
};

class ScriptedHarness final : public Harness {
 public:
  explicit ScriptedHarness(GpuSlot* slot) : slot_(slot) {}

  absl::Duration prepare_time = absl::ZeroDuration();
  absl::Duration measure_time = absl::ZeroDuration();
  std::optional<v1::Measurement> final_at_prepare;

  PrepareResult Prepare(const v1::MeasureRequest& r, const CancelToken* cancel) override {
    Record({"prepare", r.task_id(), slot_->busy(), ""});
    const absl::Duration take = prepare_time;
    absl::Time start = absl::Now();
    while (absl::Now() - start < take && !(cancel && cancel->cancelled())) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    PrepareResult p;
    p.seconds = absl::ToDoubleSeconds(absl::Now() - start);
    p.final = final_at_prepare;
    if (!p.final) p.handle = "handle-" + r.task_id();
    return p;
  }
  v1::Measurement Measure(const v1::MeasureRequest& r, const std::string& handle,
                          const CancelToken* cancel) override {
    Record({"measure", r.task_id(), slot_->busy(), handle});
    absl::SleepFor(measure_time);
    v1::Measurement m;
    m.set_verdict(v1::VERDICT_CORRECT);
    m.mutable_candidate()->set_median_ms(2.5);
    return m;
  }
  PrepareResult PrepareScreen(const v1::ScreenRequest& r, const CancelToken* cancel) override {
    Record({"prepare screen", r.task_id(), slot_->busy(), ""});
    PrepareResult p;
    p.seconds = 0.01;
    p.handle = "screen-" + r.task_id();
    return p;
  }
  absl::StatusOr<v1::ScreenResponse> Screen(const v1::ScreenRequest& r, const std::string& handle,
                                            const CancelToken* cancel) override {
    Record({"screen", r.task_id(), slot_->busy(), handle});
    absl::SleepFor(measure_time);
    v1::ScreenResponse resp;
    for (int i = 0; i < r.kernels_size(); ++i) {
      v1::ScreenResult* x = resp.add_results();
      x->set_index(i);
      x->set_ok(true);
      x->set_median_ms(1 + i);
    }
    return resp;
  }
  absl::StatusOr<bool> ReleaseJob(const std::string& job_id) override {
    Record({"release", job_id, false, ""});
    return job_id == "held";
  }
  void ReleasePrepared(const std::string& handle) override {
    Record({"release prepared", handle, slot_->busy(), handle});
  }

  std::vector<Event> events() {
    absl::MutexLock lock(&mu_);
    return events_;
  }
  int count(const std::string& what) {
    int n = 0;
    for (const Event& e : events()) n += e.what == what ? 1 : 0;
    return n;
  }

 private:
  void Record(Event e) {
    absl::MutexLock lock(&mu_);
    events_.push_back(std::move(e));
  }
  GpuSlot* slot_;
  absl::Mutex mu_;
  std::vector<Event> events_ ABSL_GUARDED_BY(mu_);
};

// Busy for half of every window, and remembers the windows it was asked about.
class HalfBusyMeter final : public GpuBusyMeter {
 public:
  double BusySeconds(absl::Time from, absl::Time to) override {
    absl::MutexLock lock(&mu_);
    windows_.push_back({from, to});
    return absl::ToDoubleSeconds(to - from) / 2;
  }
  std::vector<std::pair<absl::Time, absl::Time>> windows() {
    absl::MutexLock lock(&mu_);
    return windows_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::pair<absl::Time, absl::Time>> windows_ ABSL_GUARDED_BY(mu_);
};

struct Fixture {
  explicit Fixture(const Authenticator* auth = nullptr)
      : harness(&slot),
        service(Options(), &harness, &slot, &meter, Gpu(), auth, &registry) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
    REQUIRE(server != nullptr);
    stub = v1::BenchmarkService::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  }
  ~Fixture() { server->Shutdown(); }
  static BenchmarkServiceOptions Options() {
    BenchmarkServiceOptions o;
    o.worker_id = "worker-7";
    o.gpu_index = 7;
    return o;
  }
  static v1::GpuSpec Gpu() {
    v1::GpuSpec g;
    g.set_name("test gpu");
    return g;
  }
  grpc::Status Measure(const v1::MeasureRequest& r, v1::MeasureResponse* out,
                       absl::Duration deadline = absl::Seconds(30)) {
    grpc::ClientContext c;
    c.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    return stub->Measure(&c, r, out);
  }
  grpc::Status Screen(const v1::ScreenRequest& r, v1::ScreenResponse* out,
                      absl::Duration deadline = absl::Seconds(30)) {
    grpc::ClientContext c;
    c.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    return stub->Screen(&c, r, out);
  }
  // The value of a counter or histogram sum/count of this service's registry.
  double Metric(const std::string& name, const std::string& verdict = "") {
    for (const auto& family : registry.Collect()) {
      if (family.name != name) continue;
      double total = 0;
      for (const auto& m : family.metric) {
        bool match = verdict.empty();
        for (const auto& l : m.label) match = match || (l.name == "verdict" && l.value == verdict);
        if (!match) continue;
        total += family.type == prometheus::MetricType::Histogram
                     ? static_cast<double>(m.histogram.sample_count)
                     : m.counter.value;
      }
      return total;
    }
    return -1;
  }

  prometheus::Registry registry;
  GpuSlot slot;
  ScriptedHarness harness;
  HalfBusyMeter meter;
  BenchmarkServiceImpl service;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<v1::BenchmarkService::Stub> stub;
};

v1::MeasureRequest Request(const std::string& task) {
  v1::MeasureRequest r;
  r.set_task_id(task);
  r.set_job_id("job-1");
  r.mutable_problem()->set_source("class Model: pass");
  r.mutable_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  r.mutable_kernel()->set_source("class ModelNew: pass");
  return r;
}

v1::ScreenRequest ScreenRequest(const std::string& task, int kernels) {
  v1::ScreenRequest r;
  r.set_task_id(task);
  r.set_job_id("job-1");
  r.mutable_problem()->set_source("class Model: pass");
  for (int i = 0; i < kernels; ++i) {
    v1::KernelSource* k = r.add_kernels();
    k->set_language(v1::KERNEL_LANGUAGE_TRITON);
    k->set_source("class ModelNew: pass  # " + std::to_string(i));
  }
  return r;
}

TEST_CASE("benchmark service: prepare runs without the GPU, then the measure holds it",
          "[benchmark_service]") {
  Fixture f;
  f.harness.prepare_time = absl::Milliseconds(300);
  f.harness.measure_time = absl::Milliseconds(200);
  // Another task holds the GPU: the candidate still prepares meanwhile.
  REQUIRE(f.slot.Acquire("other-job", absl::InfiniteFuture(), nullptr).ok());
  v1::MeasureResponse resp;
  auto call = std::async(std::launch::async, [&] { return f.Measure(Request("t1"), &resp); });
  absl::Time until = absl::Now() + absl::Seconds(10);
  while (f.harness.count("prepare") == 0 && absl::Now() < until) absl::SleepFor(absl::Milliseconds(10));
  REQUIRE(f.harness.count("prepare") == 1);
  absl::SleepFor(absl::Milliseconds(500));  // prepared by now; waiting for the slot
  CHECK(f.harness.count("measure") == 0);
  CHECK(f.slot.queue_depth() == 1);
  absl::Time released = absl::Now();
  f.slot.Release();
  grpc::Status s = call.get();
  REQUIRE(s.ok());
  std::vector<Event> ev = f.harness.events();
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].what == "prepare");
  CHECK(ev[1].what == "measure");
  CHECK(ev[1].slot_busy);                  // measured holding the slot
  CHECK(ev[1].handle == "handle-t1");      // with the prepared process
  const v1::Measurement& m = resp.measurement();
  CHECK(m.verdict() == v1::VERDICT_CORRECT);
  // gpu_seconds is the held time: the measure's 200 ms, not the prepare's 300 ms.
  CHECK(m.gpu_seconds() >= 0.2);
  CHECK(m.gpu_seconds() < 0.45);
  CHECK(m.prepare_seconds() >= 0.3);
  CHECK(m.gpu_busy_seconds() == Approx(m.gpu_seconds() / 2));
  CHECK(m.worker_id() == "worker-7");
  CHECK(m.gpu_index() == 7);
  CHECK(m.gpu_name() == "test gpu");
  // The meter was asked about exactly the held window, which began after the release.
  auto windows = f.meter.windows();
  REQUIRE(windows.size() == 1);
  CHECK(windows[0].first >= released);
  CHECK(absl::ToDoubleSeconds(windows[0].second - windows[0].first) == Approx(m.gpu_seconds()));
  CHECK(f.Metric("kagent_benchmark_candidates_measured_total") == 1);
  CHECK(f.Metric("kagent_benchmark_gpu_held_seconds_total") == Approx(m.gpu_seconds()));
  CHECK(f.Metric("kagent_benchmark_gpu_busy_seconds_total") == Approx(m.gpu_busy_seconds()));
  CHECK(f.Metric("kagent_benchmark_prepare_seconds") == 1);
  CHECK(f.Metric("kagent_benchmark_measurements_total", "VERDICT_CORRECT") == 1);
}

TEST_CASE("benchmark service: a verdict at prepare is the answer and never takes the GPU",
          "[benchmark_service]") {
  Fixture f;
  v1::Measurement compile_error;
  compile_error.set_verdict(v1::VERDICT_COMPILE_ERROR);
  compile_error.mutable_correctness()->set_reason("SyntaxError");
  f.harness.final_at_prepare = compile_error;
  f.harness.prepare_time = absl::Milliseconds(50);
  // The GPU is busy for the whole call: a call that waited for it would miss its deadline.
  REQUIRE(f.slot.Acquire("other-job", absl::InfiniteFuture(), nullptr).ok());
  v1::MeasureResponse resp;
  grpc::Status s = f.Measure(Request("t-bad"), &resp, absl::Seconds(5));
  f.slot.Release();
  INFO(s.error_message());
  REQUIRE(s.ok());
  const v1::Measurement& m = resp.measurement();
  CHECK(m.verdict() == v1::VERDICT_COMPILE_ERROR);
  CHECK(m.correctness().reason() == "SyntaxError");
  CHECK(m.gpu_seconds() == 0);
  CHECK(m.gpu_busy_seconds() == 0);
  CHECK(m.prepare_seconds() >= 0.05);
  CHECK(m.worker_id() == "worker-7");
  CHECK(f.harness.count("measure") == 0);
  CHECK(f.meter.windows().empty());
  CHECK(f.Metric("kagent_benchmark_candidates_measured_total") == 0);
  CHECK(f.Metric("kagent_benchmark_gpu_held_seconds_total") == 0);
  CHECK(f.Metric("kagent_benchmark_measurements_total", "VERDICT_COMPILE_ERROR") == 1);
}

TEST_CASE("benchmark service: a repeated task is measured once and a cancelled one is not kept",
          "[benchmark_service]") {
  Fixture f;
  f.harness.measure_time = absl::Milliseconds(200);
  v1::MeasureResponse a, b;
  auto first = std::async(std::launch::async, [&] { return f.Measure(Request("t1"), &a); });
  absl::SleepFor(absl::Milliseconds(50));
  REQUIRE(f.Measure(Request("t1"), &b).ok());  // waits for the first
  REQUIRE(first.get().ok());
  CHECK(f.harness.count("prepare") == 1);
  CHECK(f.harness.count("measure") == 1);
  CHECK(b.measurement().gpu_seconds() == a.measurement().gpu_seconds());

  // Cancelled while preparing: CANCELLED, no GPU, and a repeat runs again.
  f.harness.prepare_time = absl::Seconds(10);
  grpc::ClientContext c;
  v1::MeasureResponse r;
  auto cancelled = std::async(std::launch::async, [&] { return f.stub->Measure(&c, Request("t2"), &r); });
  absl::SleepFor(absl::Milliseconds(300));
  c.TryCancel();
  CHECK(cancelled.get().error_code() == grpc::StatusCode::CANCELLED);
  CHECK(f.harness.count("measure") == 1);
  // The prepare returns once it sees the cancel; its process is given back.
  for (int i = 0; i < 100 && f.harness.count("release prepared") == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  CHECK(f.harness.count("release prepared") == 1);
  f.harness.prepare_time = absl::ZeroDuration();
  absl::SleepFor(absl::Milliseconds(300));  // the server side has returned
  REQUIRE(f.Measure(Request("t2"), &r).ok());
  CHECK(f.harness.count("measure") == 2);
}

TEST_CASE("benchmark service: a prepared candidate that never gets the GPU is released",
          "[benchmark_service]") {
  Fixture f;
  // Another task holds the GPU past this one's deadline.
  // The slot stays held until the checks are done, so the measurement cannot run.
  REQUIRE(f.slot.Acquire("other-job", absl::InfiniteFuture(), nullptr).ok());
  v1::MeasureResponse r;
  grpc::Status st = f.Measure(Request("t-late"), &r, absl::Milliseconds(500));
  CHECK(st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server side gives up waiting at its own deadline (polled), then releases.
  for (int i = 0; i < 250 && f.harness.count("release prepared") == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  CHECK(f.harness.count("measure") == 0);
  CHECK(f.harness.count("release prepared") == 1);
  f.slot.Release();
}

TEST_CASE("benchmark service: a screen holds the GPU and reports it", "[benchmark_service]") {
  Fixture f;
  f.harness.measure_time = absl::Milliseconds(100);
  v1::ScreenResponse resp;
  grpc::Status s = f.Screen(ScreenRequest("s1", 3), &resp);
  INFO(s.error_message());
  REQUIRE(s.ok());
  REQUIRE(resp.results_size() == 3);
  CHECK(resp.results(2).median_ms() == 3);
  CHECK(resp.gpu_seconds() >= 0.1);
  CHECK(resp.gpu_busy_seconds() == Approx(resp.gpu_seconds() / 2));
  CHECK(resp.worker_id() == "worker-7");
  // Prepared on the CPU without the slot, then screened in the prepared process under it.
  auto ev = f.harness.events();
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].what == "prepare screen");
  CHECK_FALSE(ev[0].slot_busy);
  CHECK(ev[1].what == "screen");
  CHECK(ev[1].slot_busy);
  CHECK(ev[1].handle == "screen-s1");
  CHECK(f.Metric("kagent_benchmark_variants_screened_total") == 3);
  // Idempotent per task id, like Measure.
  v1::ScreenResponse again;
  REQUIRE(f.Screen(ScreenRequest("s1", 3), &again).ok());
  CHECK(f.harness.count("screen") == 1);
  CHECK(again.gpu_seconds() == resp.gpu_seconds());
  CHECK(f.Metric("kagent_benchmark_variants_screened_total") == 3);
}

TEST_CASE("benchmark service: a prepared screen that never gets the GPU is released",
          "[benchmark_service]") {
  Fixture f;
  REQUIRE(f.slot.Acquire("other-job", absl::InfiniteFuture(), nullptr).ok());
  v1::ScreenResponse r;
  grpc::Status st = f.Screen(ScreenRequest("s-late", 2), &r, absl::Milliseconds(500));
  CHECK(st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
  for (int i = 0; i < 250 && f.harness.count("release prepared") == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  CHECK(f.harness.count("screen") == 0);
  REQUIRE(f.harness.count("release prepared") == 1);
  for (const Event& e : f.harness.events()) {
    if (e.what == "release prepared") CHECK(e.handle == "screen-s-late");
  }
  f.slot.Release();
}

TEST_CASE("benchmark service: screen requests are validated, naming the field",
          "[benchmark_service]") {
  auto code = [](const v1::ScreenRequest& r) { return ValidateScreenRequest(r, 1 << 20); };
  CHECK(code(ScreenRequest("s", 1)).ok());
  CHECK(code(ScreenRequest("s", 32)).ok());
  CHECK(code(ScreenRequest("", 1)).code() == absl::StatusCode::kInvalidArgument);
  absl::Status none = code(ScreenRequest("s", 0));
  CHECK(none.code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(none.message(), "kernels"));
  CHECK(code(ScreenRequest("s", 33)).code() == absl::StatusCode::kResourceExhausted);
  v1::ScreenRequest r = ScreenRequest("s", 2);
  r.mutable_kernels(1)->set_language(v1::KERNEL_LANGUAGE_UNSPECIFIED);
  absl::Status lang = code(r);
  CHECK(lang.code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(lang.message(), "kernels[1].language"));
  r.mutable_kernels(1)->set_language(v1::KERNEL_LANGUAGE_CUDA);  // Triton only
  CHECK(absl::StrContains(code(r).message(), "kernels[1].language must be TRITON"));
  r = ScreenRequest("s", 2);
  r.mutable_kernels(0)->set_source("");
  CHECK(absl::StrContains(code(r).message(), "kernels[0].source"));
  r = ScreenRequest("s", 2);
  r.mutable_kernels(1)->set_source(std::string(2 << 20, 'x'));
  CHECK(code(r).code() == absl::StatusCode::kResourceExhausted);
  r = ScreenRequest("s", 1);
  r.mutable_problem()->clear_source();
  CHECK(absl::StrContains(code(r).message(), "problem.source"));
  r = ScreenRequest("s", 1);
  r.set_timing_reps(1001);
  CHECK(absl::StrContains(code(r).message(), "timing_reps"));
  r.set_timing_reps(1000);
  CHECK(code(r).ok());
  r.set_timeout_seconds(3601);
  CHECK(absl::StrContains(code(r).message(), "timeout_seconds"));

  // Through the RPC: the status reaches the caller and the harness is not called.
  Fixture f;
  v1::ScreenResponse resp;
  grpc::Status s = f.Screen(ScreenRequest("s", 33), &resp);
  CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(f.harness.count("screen") == 0);
}

TEST_CASE("benchmark service: ReleaseJob is OK whether or not the worker held the job",
          "[benchmark_service]") {
  Fixture f;
  auto release = [&](const std::string& job, v1::ReleaseJobResponse* out) {
    grpc::ClientContext c;
    v1::ReleaseJobRequest req;
    req.set_job_id(job);
    return f.stub->ReleaseJob(&c, req, out);
  };
  v1::ReleaseJobResponse r;
  REQUIRE(release("held", &r).ok());
  CHECK(r.released());
  REQUIRE(release("other", &r).ok());
  CHECK_FALSE(r.released());
  CHECK(release("", &r).error_code() == grpc::StatusCode::INVALID_ARGUMENT);

  // With auth on, only the cluster's internal token may release.
  Authenticator auth({{"tenant-token-0123456789", "tenant-a"}}, "internal-token-0123456789");
  Fixture g(&auth);
  grpc::ClientContext c;
  c.AddMetadata("authorization", "Bearer tenant-token-0123456789");
  v1::ReleaseJobRequest req;
  req.set_job_id("held");
  CHECK(g.stub->ReleaseJob(&c, req, &r).error_code() == grpc::StatusCode::PERMISSION_DENIED);
  grpc::ClientContext c2;
  c2.AddMetadata("authorization", "Bearer internal-token-0123456789");
  REQUIRE(g.stub->ReleaseJob(&c2, req, &r).ok());
  CHECK(r.released());
}

}  // namespace
}  // namespace kagent
