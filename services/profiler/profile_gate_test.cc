#include "services/profiler/profile_gate.h"

#include <sys/stat.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <memory>
#include <thread>
#include <string>


namespace kagent {
namespace {

// A gate that records what it was asked and answers `answer` after `delay`.
class RecordingGate final : public ProfileGpuGate {
 public:
  RecordingGate(std::string ready_path, absl::Status answer,
                absl::Duration delay = absl::ZeroDuration())
      : ready_path_(std::move(ready_path)), answer_(std::move(answer)), delay_(delay) {}

  absl::Status Acquire(const CancelToken*) override {
    struct stat st;
    ready_seen_at_acquire = ::stat(ready_path_.c_str(), &st) == 0;
    ++acquired;
    absl::SleepFor(delay_);
    held_from_ = absl::Now();
    return answer_;
  }
  void Release() override {
    ++released;
    held_seconds = absl::ToDoubleSeconds(absl::Now() - held_from_);
  }

  int acquired = 0;
  int released = 0;
  double held_seconds = 0;  // from the last Acquire's return to its Release
  bool ready_seen_at_acquire = false;

 private:
  const std::string ready_path_;
  const absl::Status answer_;
  const absl::Duration delay_;
  absl::Time held_from_;
};

// The real process path: /bin/sh plays the harness's side of gate.py's handshake (its
// argv ends with --gate-dir DIR, so DIR is $2). It writes `ran` only once it has `go`.
SubprocessOptions Harness(const std::string& script, const std::string& work) {
  SubprocessOptions o;
  o.argv = {"/bin/sh", "-c", script, "harness"};
  o.working_dir = work;
  o.private_temp_dir = false;
  return o;
}

constexpr char kHonest[] =
    "d=$2; : > $d/ready; "
    "while [ ! -e $d/go ]; do [ -e $d/stop ] && exit 3; sleep 0.01; done; "
    ": > $d/../ran; : > $d/done; sleep 0.5";

struct Dirs {
  std::unique_ptr<ScopedTempDir> work = *ScopedTempDir::Create("kagent-gate-test-");
  std::string gate() {
    std::string g = work->path() + "/gate";
    ::mkdir(g.c_str(), 0700);
    return g;
  }
  bool Exists(const std::string& name) {
    struct stat st;
    return ::stat((work->path() + "/" + name).c_str(), &st) == 0;
  }
};

TEST_CASE("A gated harness prepares, gets the GPU on ready and gives it back on done",
          "[profile_gate]") {
  Dirs d;
  const std::string gate_dir = d.gate();
  RecordingGate gate(gate_dir + "/ready", absl::OkStatus(), absl::Milliseconds(200));
  GatedRunInfo info;
  absl::StatusOr<SubprocessResult> r =
      RunGatedHarness(DefaultCommandRunner(), Harness(kHonest, d.work->path()), gate_dir, &gate,
                      absl::Seconds(30), nullptr, &info);
  REQUIRE(r.ok());
  CHECK(r->ok());
  CHECK(gate.acquired == 1);
  CHECK(gate.ready_seen_at_acquire);
  CHECK(gate.released == 1);
  CHECK(d.Exists("ran"));
  CHECK(d.Exists("gate/go"));
  CHECK(info.granted);
  // Released at `done`, before the process's last half second.
  CHECK(gate.held_seconds < 0.45);
  CHECK(r->wall_seconds > gate.held_seconds + 0.4);
  // The held time's parts, by the gate's clock: go to done is the shell's few steps.
  CHECK(info.gpu_part_seconds > 0);
  CHECK(info.gpu_part_seconds < 0.45);
  CHECK(info.grant_to_go_seconds >= 0);
  CHECK(info.release_seconds >= 0);
}

TEST_CASE("A gate that refuses stops the harness before it uses the GPU", "[profile_gate]") {
  Dirs d;
  const std::string gate_dir = d.gate();
  RecordingGate gate(gate_dir + "/ready", absl::DeadlineExceededError("slot not granted"));
  GatedRunInfo info;
  absl::StatusOr<SubprocessResult> r =
      RunGatedHarness(DefaultCommandRunner(), Harness(kHonest, d.work->path()), gate_dir, &gate,
                      absl::Seconds(30), nullptr, &info);
  CHECK(r.status().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(gate.acquired == 1);
  CHECK(gate.released == 0);
  CHECK(d.Exists("gate/stop"));
  CHECK_FALSE(d.Exists("ran"));
  CHECK_FALSE(info.granted);
}

TEST_CASE("A harness that ends before ready never takes the GPU", "[profile_gate]") {
  Dirs d;
  const std::string gate_dir = d.gate();
  RecordingGate gate(gate_dir + "/ready", absl::OkStatus());
  absl::StatusOr<SubprocessResult> r = RunGatedHarness(
      DefaultCommandRunner(), Harness("exit 4", d.work->path()), gate_dir, &gate,
      absl::Seconds(30), nullptr);
  REQUIRE(r.ok());
  CHECK(r->exited);
  CHECK(r->exit_code == 4);
  CHECK(gate.acquired == 0);
  CHECK(gate.released == 0);
}

TEST_CASE("The timeout bounds the preparation and the GPU part apart", "[profile_gate]") {
  SECTION("never ready") {
    Dirs d;
    const std::string gate_dir = d.gate();
    RecordingGate gate(gate_dir + "/ready", absl::OkStatus());
    absl::StatusOr<SubprocessResult> r = RunGatedHarness(
        DefaultCommandRunner(), Harness("sleep 30", d.work->path()), gate_dir, &gate,
        absl::Milliseconds(300), nullptr);
    REQUIRE(r.ok());
    CHECK(r->timed_out);
    CHECK_FALSE(r->cancelled);
    CHECK(r->wall_seconds < 10);
    CHECK(gate.acquired == 0);
  }
  SECTION("a slow wait for the gate does not count; a GPU part that never ends does") {
    Dirs d;
    const std::string gate_dir = d.gate();
    // The gate takes 0.5 s, more than the 0.3 s timeout; then the GPU part hangs.
    RecordingGate gate(gate_dir + "/ready", absl::OkStatus(), absl::Milliseconds(500));
    const char* hangs_on_gpu =
        "d=$2; : > $d/ready; while [ ! -e $d/go ]; do sleep 0.01; done; : > $d/../ran; "
        "sleep 30";
    absl::StatusOr<SubprocessResult> r = RunGatedHarness(
        DefaultCommandRunner(), Harness(hangs_on_gpu, d.work->path()), gate_dir, &gate,
        absl::Milliseconds(300), nullptr);
    REQUIRE(r.ok());
    CHECK(d.Exists("ran"));  // the wait for the gate did not time it out
    CHECK(r->timed_out);
    CHECK(gate.released == 1);
    CHECK(r->wall_seconds < 10);
  }
}

TEST_CASE("Cancelling a gated run kills the harness", "[profile_gate]") {
  Dirs d;
  const std::string gate_dir = d.gate();
  RecordingGate gate(gate_dir + "/ready", absl::OkStatus());
  CancelToken cancel;
  std::thread canceller([&] {
    absl::SleepFor(absl::Milliseconds(300));
    cancel.Cancel();
  });
  absl::StatusOr<SubprocessResult> r = RunGatedHarness(
      DefaultCommandRunner(), Harness("sleep 30", d.work->path()), gate_dir, &gate,
      absl::Seconds(60), &cancel);
  canceller.join();
  REQUIRE(r.ok());
  CHECK(r->cancelled);
  CHECK(r->wall_seconds < 10);
}

}  // namespace
}  // namespace kagent
