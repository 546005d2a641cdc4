// Test doubles for the profiler: a CommandRunner that plays the parts of ncu, the harness
// and the CUPTI tracer by writing recorded outputs where the real tools would, and
// fixture helpers. Test-only; thread-safe (a mutex guards the recorded calls).
#ifndef KAGENT_SERVICES_PROFILER_TESTING_FAKE_RUNNER_H_
#define KAGENT_SERVICES_PROFILER_TESTING_FAKE_RUNNER_H_

#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernel_model/testing/gpu_info.h"
#include "services/profiler/command_runner.h"

namespace kagent::testing {

// Reads tests/fixtures/ncu/<name>; empty string when missing.
inline std::string ReadFixture(const std::string& name) {
  std::ifstream file(std::string(KAGENT_FIXTURE_DIR) + "/" + name, std::ios::binary);
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

// A CUPTI trace of one kernel of 8 ns inside one profiled window.
inline constexpr char kOneKernelCuptiTrace[] =
    R"({"type":"marker","name":"profile_begin","ts_ns":10})"
    "\n"
    R"({"type":"kernel","name":"k","start_ns":12,"end_ns":20,"stream":7,"device":0,"grid":[2,1,1],"block":[64,1,1],"correlation":2})"
    "\n"
    R"({"type":"marker","name":"profile_end","ts_ns":30})"
    "\n";

inline std::string ArgAfter(const std::vector<std::string>& argv, const std::string& flag) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag) return argv[i + 1];
  }
  return "";
}

inline void WriteText(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
}

class FakeRunner : public CommandRunner {
 public:
  // What the fake tools produce.
  bool ncu_available = true;
  std::string ncu_csv;          // written to --log-file
  std::string harness_result = R"({"ok":true,"verdict":"","reason":"","kernels_launched":[]})";
  std::string gpuinfo_json;     // written to --out for gpuinfo; empty: gpuinfo fails
  std::string cupti_trace;      // written to $KAGENT_CUPTI_OUT
  SubprocessResult result = [] {
    SubprocessResult r;
    r.exited = true;
    r.exit_code = 0;
    return r;
  }();

  std::set<std::string> missing_programs;  // CanRun says no for these
  // Called at the start of every Run (e.g. to look at the run's files while they exist).
  std::function<void(const SubprocessOptions&)> on_run;

  bool CanRun(const std::string& program) override {
    if (missing_programs.count(program) != 0) return false;
    return program.find("ncu") == std::string::npos || ncu_available;
  }

  absl::StatusOr<SubprocessResult> Run(const SubprocessOptions& options) override {
    if (on_run) on_run(options);
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back(options);
    }
    const bool gpuinfo =
        std::find(options.argv.begin(), options.argv.end(), "gpuinfo") != options.argv.end();
    if (gpuinfo) {
      SubprocessResult r = result;
      if (gpuinfo_json.empty()) {
        r.exit_code = 1;
        return r;
      }
      WriteText(ArgAfter(options.argv, "--out"), gpuinfo_json);
      SubprocessResult ok;
      ok.exited = true;
      ok.exit_code = 0;
      return ok;
    }
    if (std::string req = ArgAfter(options.argv, "--request"); !req.empty()) {
      std::ifstream in(req, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(text.str());
    }
    if (std::string log = ArgAfter(options.argv, "--log-file"); !log.empty()) {
      WriteText(log, ncu_csv);
    }
    if (std::string out = ArgAfter(options.argv, "--out"); !out.empty()) {
      WriteText(out, harness_result);
    }
    if (auto it = options.env.find("KAGENT_CUPTI_OUT");
        it != options.env.end() && !cupti_trace.empty()) {
      WriteText(it->second, cupti_trace);
    }
    return result;
  }

  std::vector<SubprocessOptions> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  // The harness request files (--request) of the runs so far, as they were when run.
  std::vector<std::string> harness_requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  std::mutex mu_;
  std::vector<SubprocessOptions> calls_;
  std::vector<std::string> requests_;
};

}  // namespace kagent::testing

#endif  // KAGENT_SERVICES_PROFILER_TESTING_FAKE_RUNNER_H_
