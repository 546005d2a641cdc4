#include "services/profiler/ncu_backend.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/status.h"

namespace kagent {
namespace {

std::string Tail(absl::string_view text, size_t n) {
  if (text.size() <= n) return std::string(text);
  return absl::StrCat("...", text.substr(text.size() - n));
}

}  // namespace

absl::StatusOr<std::string> ReadFileBounded(const std::string& path, size_t limit) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::string data(limit, '\0');
  file.read(data.data(), static_cast<std::streamsize>(limit));
  data.resize(static_cast<size_t>(file.gcount()));
  if (file.bad()) return absl::InternalError(absl::StrCat("cannot read ", path));
  return data;
}

std::vector<std::string> BuildNcuArgv(const NcuBackendOptions& options,
                                      const HarnessCommand& harness,
                                      const std::string& request_path,
                                      const std::string& result_path,
                                      const std::string& log_path) {
  std::vector<std::string> argv = {options.ncu_path,
                                   "--csv",
                                   "--page",
                                   "raw",
                                   "--print-units",
                                   "base",
                                   "--clock-control",
                                   "none",
                                   "--nvtx",
                                   "--nvtx-include",
                                   absl::StrCat(kNvtxRange, "/"),
                                   "--metrics",
                                   absl::StrJoin(options.metrics, ","),
                                   "--target-processes",
                                   "all",
                                   "--log-file",
                                   log_path};
  for (std::string& arg :
       HarnessArgv(harness.python, "profile", {"--request", request_path, "--out", result_path})) {
    argv.push_back(std::move(arg));
  }
  return argv;
}

SubprocessOptions HarnessSubprocessOptions(const HarnessCommand& harness, const ProfileRun& run,
                                           std::vector<std::string> argv) {
  SubprocessOptions options;
  options.argv = std::move(argv);
  options.inherit_env = true;
  if (!harness.pythonpath.empty()) {
    const char* existing = std::getenv("PYTHONPATH");
    options.env["PYTHONPATH"] = existing != nullptr && *existing != '\0'
                                    ? absl::StrCat(harness.pythonpath, ":", existing)
                                    : harness.pythonpath;
  }
  if (!harness.cuda_visible_devices.empty()) {
    options.env["CUDA_VISIBLE_DEVICES"] = harness.cuda_visible_devices;
  }
  for (const auto& [key, value] : harness.extra_env) options.env[key] = value;
  options.working_dir = run.work_dir;
  options.env["TMPDIR"] = run.work_dir;
  options.private_temp_dir = false;  // run.work_dir is the caller's private temp dir
  options.timeout = run.timeout;
  options.cancel = run.cancel;
  options.rlimit_as_bytes = harness.rlimit_as_bytes;
  options.max_output_bytes = size_t{1} << 20;
  return options;
}

absl::StatusOr<HarnessProfileResult> ReadProfiledHarnessResult(const std::string& result_path) {
  HarnessProfileResult harness;
  if (absl::StatusOr<std::string> text = ReadFileBounded(result_path, size_t{16} << 20);
      text.ok()) {
    if (absl::StatusOr<HarnessProfileResult> parsed = ParseHarnessProfileResult(*text);
        parsed.ok()) {
      harness = *std::move(parsed);
      if (!harness.ok) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the candidate failed under the profiler: ",
            harness.verdict.empty() ? "ERROR" : harness.verdict, ": ", harness.reason));
      }
    }
  }
  return harness;
}

absl::StatusOr<SubprocessResult> RunHarnessProfileProcess(CommandRunner* runner,
                                                          SubprocessOptions options,
                                                          const ProfileRun& run) {
  if (run.gate == nullptr) return runner->Run(options);
  const std::string gate_dir = absl::StrCat(run.work_dir, "/gate");
  if (::mkdir(gate_dir.c_str(), 0700) != 0) {
    return absl::InternalError(absl::StrCat("cannot create ", gate_dir, ": ", std::strerror(errno)));
  }
  if (run.run_as && ::chown(gate_dir.c_str(), run.run_as->uid, run.run_as->gid) != 0) {
    return absl::InternalError(absl::StrCat("cannot give ", gate_dir, " to ", run.run_as->name,
                                            ": ", std::strerror(errno)));
  }
  return RunGatedHarness(runner, std::move(options), gate_dir, run.gate, run.timeout, run.cancel,
                         run.gate_info);
}

absl::Status NcuFailureStatus(const SubprocessResult& result, absl::string_view ncu_log,
                              absl::Duration timeout) {
  const std::string all = absl::StrCat(ncu_log, "\n", result.stdout_data, "\n",
                                       result.stderr_data);
  if (absl::StrContains(all, "ERR_NVGPUCTRPERM")) {
    return absl::PermissionDeniedError(
        "ncu may not read the GPU performance counters (ERR_NVGPUCTRPERM; a root worker runs "
        "ncu as the candidate sandbox's user): allow all users by setting the nvidia module "
        "option "
        "NVreg_RestrictProfilingToAdminUsers=0 (e.g. 'options nvidia "
        "NVreg_RestrictProfilingToAdminUsers=0' in /etc/modprobe.d/, then reload the driver)");
  }
  if (result.timed_out) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "ncu profiling timed out after %.1f s (ncu replays every kernel once per metric "
        "pass; raise timeout_seconds or profile a smaller problem). Output tail: %s",
        absl::ToDoubleSeconds(timeout), Tail(result.stderr_data, 400)));
  }
  if (result.cancelled) return absl::CancelledError("profiling cancelled");
  std::vector<std::string> errors;
  std::istringstream lines{std::string(ncu_log)};
  for (std::string line; std::getline(lines, line);) {
    if (absl::StartsWith(line, "==ERROR==")) errors.push_back(line);
  }
  if (!result.exited || (result.exit_code != 0 && !errors.empty())) {
    return absl::InternalError(absl::StrCat(
        "ncu failed (", result.Describe(), ")",
        errors.empty() ? "" : absl::StrCat(": ", absl::StrJoin(errors, "; ")),
        ". stderr tail: ", Tail(result.stderr_data, 600)));
  }
  return absl::OkStatus();
}

UserRunDir::~UserRunDir() {
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

absl::Status UserRunDir::Move(CommandRunner* runner, const std::optional<NcuUser>& user,
                              ProfileRun* run) {
  if (!user) return absl::OkStatus();
  if (!runner->CanRun("setpriv")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the profile must run as the candidate sandbox's user (", user->name,
        ") and setpriv is not on PATH (Debian: apt-get install util-linux)"));
  }
  KAGENT_ASSIGN_OR_RETURN(dir_, MakeUserRunDir(kNcuTempDir, *user));
  const std::string request = absl::StrCat(dir_, "/request.json");
  std::error_code ec;
  std::filesystem::copy_file(run->request_path, request, ec);
  if (ec || ::chown(request.c_str(), user->uid, user->gid) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot hand the request to ", user->name, " in ", dir_));
  }
  run->work_dir = dir_;
  run->request_path = request;
  run->run_as = user;
  return absl::OkStatus();
}

absl::StatusOr<NcuProfile> RunNcuProfile(CommandRunner* runner, const NcuBackendOptions& options,
                                         const HarnessCommand& harness, const ProfileRun& caller_run) {
  if (!runner->CanRun(options.ncu_path)) {
    return absl::FailedPreconditionError(kNcuMissingMessage);
  }
  ProfileRun run = caller_run;
  // One ncu run at a time on this host (ncu_host_lock.h); the wait comes out of the run's
  // time, which is what is left of the caller's deadline.
  NcuHostLock host_lock(options.lock_path);
  KAGENT_RETURN_IF_ERROR(host_lock.Acquire(run.timeout, run.cancel));
  run.timeout -= host_lock.waited();
  if (host_lock.waited() >= absl::Milliseconds(100)) {
    KLOG(INFO) << "waited " << absl::FormatDuration(host_lock.waited())
               << " for another ncu run on this host";
  }
  UserRunDir user_dir;
  KAGENT_RETURN_IF_ERROR(user_dir.Move(runner, options.run_as, &run));
  const std::string log_path = absl::StrCat(run.work_dir, "/ncu.csv");
  const std::string result_path = absl::StrCat(run.work_dir, "/result.json");
  std::vector<std::string> argv =
      BuildNcuArgv(options, harness, run.request_path, result_path, log_path);
  if (options.run_as) argv = RunAsUser(*options.run_as, std::move(argv));
  SubprocessOptions subprocess = HarnessSubprocessOptions(harness, run, std::move(argv));
  // ncu's frontend and its library injected into the candidate's process meet in the
  // frontend's temp dir (its NVIDIA-treetracker-* directory, usable by the frontend's
  // user only: hence run_as). The candidate runs sandboxed and sees the host's /tmp in
  // profile mode (python/kagent_harness/bwrap.py, PROFILER_SHARED), not the caller's
  // private work dir, so TMPDIR is /tmp. The harness hides its own files' directories
  // from the candidate (cli.py).
  subprocess.env["TMPDIR"] = kNcuTempDir;
  if (options.run_as) subprocess.env["HOME"] = run.work_dir;
  KLOG(INFO) << "profiling under ncu with " << options.metrics.size() << " metrics"
             << (options.run_as ? absl::StrCat(", as ", options.run_as->name) : std::string());
  absl::StatusOr<SubprocessResult> result =
      RunHarnessProfileProcess(runner, std::move(subprocess), run);
  if (!result.ok()) {
    if (result.status().code() == absl::StatusCode::kNotFound) {
      return absl::FailedPreconditionError(kNcuMissingMessage);
    }
    return result.status();
  }
  std::string ncu_log = ReadFileBounded(log_path, size_t{64} << 20).value_or("");
  KAGENT_RETURN_IF_ERROR(NcuFailureStatus(*result, ncu_log, run.timeout));

  NcuProfile profile;
  KAGENT_ASSIGN_OR_RETURN(profile.harness, ReadProfiledHarnessResult(result_path));
  KAGENT_ASSIGN_OR_RETURN(profile.report, ParseNcuCsv(ncu_log));
  if (profile.report.kernels.empty()) {
    if (!result->ok()) {
      return absl::InternalError(absl::StrCat("ncu run failed (", result->Describe(),
                                              "), no kernels profiled. stderr tail: ",
                                              Tail(result->stderr_data, 600)));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "no kernels captured: the candidate launched no GPU kernel inside the NVTX range '",
        kNvtxRange, "' (does ModelNew.forward run its own kernels on the GPU?)"));
  }
  std::set<std::string> present;
  for (const auto& kernel : profile.report.kernels) {
    for (const auto& [name, value] : kernel.values()) present.insert(name);
  }
  for (const std::string& name : options.metrics) {
    if (!present.count(name)) profile.missing_metrics.push_back(name);
  }
  if (!profile.missing_metrics.empty()) {
    KLOG(WARNING) << "ncu did not report " << profile.missing_metrics.size()
                  << " requested metrics: " << absl::StrJoin(profile.missing_metrics, ", ");
  }
  profile.raw_csv = std::move(ncu_log);
  return profile;
}

}  // namespace kagent
