#include "tools/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/client.h"
#include "common/file_io.h"
#include "common/grpc_status.h"
#include "common/options.h"
#include "common/status.h"
#include "kagent/v1/job_service.grpc.pb.h"
#include "kernel_model/speedup_text.h"
#include "tools/ablation_arms.h"
#include "tools/bench_curves.h"

namespace kagent::cli {
namespace {

namespace fs = std::filesystem;
constexpr char kStartSuffix[] = "_start.py";

constexpr char kUsage[] =
    "usage: kagent bench DIR --out OUTDIR [--server ADDR] [--token T] [--rounds N]\n"
    "                    [--beam-width K] [--fixes-per-kernel M] [--only PATTERN]\n"
    "                    [--concurrency N] [--poll-seconds S] [--run-id ID] [--brain NAME]\n"
    "                    [--without-start] [--ablation ARM] [--sweep-seed N]\n"
    "                    [--max-gpu-seconds S] [--plateau-rounds N]\n"
    "Submits every DIR/NAME.py defining class Model (KernelBench format) as a job, with\n"
    "DIR/NAME_start.py as its starting kernel when there is one (else the brain writes the\n"
    "first kernel), waits for all, and writes OUTDIR/results.json, OUTDIR/results.md and\n"
    "OUTDIR/trajectory.svg. --without-start submits every problem without its starting\n"
    "kernel: the brain writes each first kernel (\"start\" is then that kernel).\n"
    "--beam-width K (kernels kept per round) and --fixes-per-kernel M (fixes tried on each,\n"
    "so K x M candidates a round) are 1..16; without them, the server's defaults\n"
    "(2 and 2 as shipped).\n"
    "--ablation ARM runs every job as one arm of the search-efficiency comparison: full (the\n"
    "default), no-counters, no-reflexion, greedy (one worker: beam width 1, one fix a round)\n"
    "or blind-sweep (random moves of the brain, seeded by --sweep-seed N, default 0);\n"
    "--max-gpu-seconds S gives every job the same GPU-time budget, --plateau-rounds N (1..100)\n"
    "its plateau rule (docs/benchmarks.md).\n"
    "\n"
    "usage: kagent bench --merge --out OUTDIR RESULTS.json [RESULTS.json ...]\n"
    "Needs no server: combines the results.json of several runs (e.g. a suite measured in\n"
    "slices under different --run-id) into OUTDIR/results.json, results.md and trajectory.svg.\n"
    "Later files win: each problem keeps the row of the last file that has it finished (DONE),\n"
    "else of the last file that has it; each row names its run (the file's run_id, else its\n"
    "path). No DIR and no job flags with --merge.\n"
    "\n"
    "usage: kagent bench --compare --out OUTDIR RESULTS.json [RESULTS.json ...]\n"
    "Needs no server: compares runs of the same suite as arms (each file one --ablation arm)\n"
    "at equal GPU-seconds per problem: OUTDIR/compare.md, compare.json, compare_rounds.svg\n"
    "and compare_gpu.svg.\n";


// Whether `source` defines a class Model at the start of a line (KernelBench's reference).
bool IsKernelBenchProblem(absl::string_view source) {
  for (absl::string_view line : absl::StrSplit(source, '\n')) {
    if (absl::StartsWith(line, "class Model(") || absl::StartsWith(line, "class Model:")) {
      return true;
    }
  }
  return false;
}

bool Finished(v1::JobState s) {
  return s == v1::JOB_STATE_DONE || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_CANCELLED;
}

// results.json, results.md, trajectory.svg and gpu_curve.svg under `dir`, each replaced
// whole.
absl::Status WriteResults(const std::string& dir, const std::vector<BenchRow>& rows,
                          const BenchSummary& sum, const std::string& settings_json,
                          const std::string& markdown_header) {
  KAGENT_RETURN_IF_ERROR(WriteFileAtomically((fs::path(dir) / "results.json").string(),
                                             RenderBenchJson(rows, sum, settings_json)));
  KAGENT_RETURN_IF_ERROR(WriteFileAtomically((fs::path(dir) / "results.md").string(),
                                             RenderBenchMarkdown(rows, sum, markdown_header)));
  KAGENT_RETURN_IF_ERROR(WriteFileAtomically((fs::path(dir) / "trajectory.svg").string(),
                                             RenderTrajectorySvg(rows)));
  return WriteFileAtomically((fs::path(dir) / "gpu_curve.svg").string(), RenderGpuCurveSvg(rows));
}

}  // namespace

absl::StatusOr<std::vector<BenchProblem>> FindBenchProblems(const std::string& dir,
                                                            const std::string& only) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat(dir, " is not a directory"));
  }
  std::vector<BenchProblem> found;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string file = entry.path().filename().string();
    // Every NAME.py but the starting kernels; NAME_start.py goes with its NAME.py.
    if (!entry.is_regular_file() || !absl::EndsWith(file, ".py") ||
        absl::EndsWith(file, kStartSuffix)) {
      continue;
    }
    std::string name = file.substr(0, file.size() - 3);
    if (name.empty()) continue;
    if (!only.empty()) {
      bool match = false;
      for (absl::string_view pat : absl::StrSplit(only, ',', absl::SkipEmpty())) {
        match = match || absl::StrContains(name, pat);
      }
      if (!match) continue;
    }
    // A KernelBench problem defines class Model; any other .py (a test, a helper) is not one.
    absl::StatusOr<std::string> source = ReadFile(entry.path().string());
    if (!source.ok()) return absl::InternalError(source.status().message());
    if (!IsKernelBenchProblem(*source)) continue;
    fs::path start = fs::path(dir) / (name + kStartSuffix);
    std::error_code start_ec;
    found.push_back({name, entry.path().string(),
                     fs::is_regular_file(start, start_ec) ? start.string() : std::string()});
  }
  if (ec) return absl::InternalError(absl::StrCat("cannot list ", dir, ": ", ec.message()));
  std::sort(found.begin(), found.end(),
            [](const BenchProblem& a, const BenchProblem& b) { return a.name < b.name; });
  return found;
}

namespace {

// Per problem, what the bench knows while it runs.
struct Slot {
  BenchProblem problem;
  BenchRow row;
  bool submitted = false;
  bool finished = false;
  int poll_failures = 0;
  std::string last_seen;  // "STATE round" of the last progress line
};

constexpr int kMaxPollFailures = 60;

// The results.json files of --merge and --compare (`mode` names the flag in messages), all
// read before anything is written, so OUTDIR may hold one of the inputs; then OUTDIR made.
// False (a message on `err`) when one is missing, unreadable or not a results.json, or
// OUTDIR cannot be made.
bool ReadRunFiles(const BenchFlags& f, const char* mode, std::vector<BenchRunFile>* files,
                  std::ostream& err) {
  for (const auto& path : f.merge_files) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      err << "kagent bench: " << mode << " takes results.json files, not a suite DIR: " << path
          << " is a directory\n";
      return false;
    }
    if (!fs::exists(path, ec)) {
      err << "kagent bench: " << path << ": no such file\n";
      return false;
    }
    BenchRunFile file;
    file.path = path;
    absl::StatusOr<std::string> text = ReadFile(path);
    if (!text.ok()) {
      err << "kagent bench: " << text.status().message() << "\n";
      return false;
    }
    auto rows = ParseBenchJson(*text, path, &file.settings_json);
    if (!rows.ok()) {
      err << "kagent bench: " << rows.status().message() << "\n";
      return false;
    }
    file.rows = *std::move(rows);
    files->push_back(std::move(file));
  }
  std::error_code ec;
  fs::create_directories(f.out_dir, ec);
  if (ec) {
    err << "kagent bench: cannot create " << f.out_dir << ": " << ec.message() << "\n";
    return false;
  }
  return true;
}

// `kagent bench --compare`: each file one arm (bench_curves.h).
int RunCompare(const BenchFlags& f, std::ostream& out, std::ostream& err) {
  std::vector<BenchRunFile> files;
  if (!ReadRunFiles(f, "--compare", &files, err)) return 2;
  const std::vector<BenchArm> arms = ArmsOf(files);
  for (const auto& [name, body] : {std::pair<const char*, std::string>{"compare.md", RenderCompareMarkdown(arms)},
                                   {"compare.json", RenderCompareJson(arms)},
                                   {"compare_rounds.svg", RenderCompareRoundsSvg(arms)},
                                   {"compare_gpu.svg", RenderCompareGpuSvg(arms)}}) {
    absl::Status written = WriteFileAtomically((fs::path(f.out_dir) / name).string(), body);
    if (!written.ok()) {
      err << "kagent bench: " << written.message() << "\n";
      return 2;
    }
  }
  const std::vector<EqualBudgetRow> eq = EqualBudgetRows(arms);
  for (size_t i = 0; i < arms.size(); ++i) {
    std::vector<double> at;
    for (const EqualBudgetRow& e : eq) at.push_back(e.best_so_far[i]);
    out << absl::StrFormat("  %d. %s: %zu problems; at equal GPU-seconds (%zu problems) "
                           "geometric mean %.2fx\n",
                           static_cast<int>(i + 1), arms[i].label, arms[i].rows.size(),
                           eq.size(), GeometricMean(at));
  }
  out << "compared: " << (fs::path(f.out_dir) / "compare.md").string() << "\n";
  return 0;
}

// `kagent bench --merge`.
int RunMerge(const BenchFlags& f, std::ostream& out, std::ostream& err) {
  std::vector<BenchRunFile> files;
  if (!ReadRunFiles(f, "--merge", &files, err)) return 2;
  std::vector<BenchRow> rows = MergeBenchRows(files);
  BenchSummary sum = Summarize(rows);
  absl::Status written = WriteResults(f.out_dir, rows, sum, MergedSettingsJson(files, rows),
                                      MergedMarkdownHeader(files, rows));
  if (!written.ok()) {
    err << "kagent bench: " << written.message() << "\n";
    return 2;
  }
  const std::vector<std::string> labels = BenchRunLabels(files);
  for (size_t i = 0; i < files.size(); ++i) {
    out << absl::StrFormat("  %d. %s: %zu problems\n", static_cast<int>(i + 1), labels[i],
                           files[i].rows.size());
  }
  out << absl::StrFormat("merged %zu runs: %d problems, %d DONE; %s\n", files.size(),
                         sum.problems, sum.done, SummaryLine(sum));
  out << "throughput: " << ThroughputLine(sum) << "\n";
  out << "kernelbench: " << CoverageLine(sum.coverage) << "\n";
  out << "results: " << (fs::path(f.out_dir) / "results.md").string() << "\n";
  return 0;
}

}  // namespace

absl::StatusOr<BenchFlags> ParseBenchFlags(const std::vector<std::string>& args) {
  BenchFlags f;
  OptionSet o("kagent");
  o.AddString("server", &f.server, "coordinator address");
  o.AddString("token", &f.token, "bearer token", /*secret=*/true);
  o.AddString("tls-ca", &f.tls_ca, "CA (PEM) to verify the server; enables TLS");
  o.AddString("out", &f.out_dir, "where results.json, results.md and trajectory.svg go");
  o.AddString("only", &f.only,
              "only problems whose name contains this (several: comma-separated, any)");
  o.AddString("run-id", &f.run_id, "makes submissions idempotent: rerun with it to resume");
  o.AddString("brain", &f.brain, "brain for every job (default: the server's)");
  o.AddBool("without-start", &f.without_start,
            "submit without the starting kernels (the brain writes the first kernel)");
  o.AddBool("merge", &f.merge,
            "combine the results.json files given (later files win) instead of running jobs");
  o.AddBool("compare", &f.compare,
            "compare the results.json files given, one arm each, instead of running jobs");
  o.AddString("ablation", &f.ablation,
              "the arm every job runs: full, no-counters, no-reflexion, greedy, blind-sweep");
  o.AddInt("sweep-seed", &f.sweep_seed, "the blind sweep's seed (--ablation blind-sweep)");
  o.AddDouble("max-gpu-seconds", &f.max_gpu_seconds, "GPU-time budget of every job");
  o.AddInt("plateau-rounds", &f.plateau_rounds,
           "stop a job after this many rounds without a gain above 1%, 1..100 (default: the "
           "server's)");
  o.AddInt("rounds", &f.rounds, "round budget per job (default: the server's)");
  o.AddInt("beam-width", &f.beam_width, "beam width K of every job, 1..16 (default: the server's)");
  o.AddInt("fixes-per-kernel", &f.fixes_per_kernel,
           "fixes tried on each beam kernel per round, 1..16 (default: the server's)");
  o.AddInt("concurrency", &f.concurrency, "at most this many unfinished jobs at a time");
  o.AddDouble("poll-seconds", &f.poll_seconds, "seconds between GetJob polls");
  o.AddDouble("timeout-seconds", &f.timeout_seconds, "deadline of each unary call");
  std::vector<const char*> argv;
  argv.push_back("kagent");
  for (const auto& a : args) argv.push_back(a.c_str());
  absl::Status parsed = o.Parse(static_cast<int>(argv.size()), argv.data());
  if (o.help_requested()) {
    f.help = true;
    return f;
  }
  if (!parsed.ok()) return parsed;
  if (f.merge && f.compare) {
    return absl::InvalidArgumentError("--merge and --compare cannot be used together");
  }
  if (f.merge || f.compare) {
    const std::string mode = f.merge ? "--merge" : "--compare";
    if (f.out_dir.empty()) return absl::InvalidArgumentError(mode + " needs --out OUTDIR");
    if (o.positional().empty()) {
      return absl::InvalidArgumentError(mode + " needs at least one RESULTS.json");
    }
    // Flags that shape jobs do nothing here; refuse them rather than ignore them (--only
    // does not filter the merged rows).
    for (const char* name : {"only", "run-id", "rounds", "beam-width", "fixes-per-kernel", "brain",
                             "without-start", "concurrency", "ablation", "sweep-seed",
                             "max-gpu-seconds", "plateau-rounds"}) {
      if (o.SourceOf(name) == "flag") {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " runs jobs; it cannot be used with ", mode));
      }
    }
    f.merge_files = o.positional();
    return f;
  }
  if (o.positional().size() != 1 || f.out_dir.empty()) {
    return absl::InvalidArgumentError("expected one DIR and --out OUTDIR");
  }
  f.dir = o.positional()[0];
  if (f.concurrency < 1 || f.poll_seconds <= 0) {
    return absl::InvalidArgumentError("--concurrency must be >= 1, --poll-seconds > 0");
  }
  // Given: 1..1000, as the job's budget allows (a 0 was once taken as the server's default
  // without a word). Not given: 0, the server's default.
  if (o.SourceOf("rounds") != "default" && (f.rounds < 1 || f.rounds > 1000)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--rounds must be 1..1000 (got ", f.rounds, "); leave it out for the server's default"));
  }
  // Given (on the command line, in the environment or a config file): 1..16, as JobConfig
  // allows. Not given: 0, the server's default.
  for (auto [name, value] : {std::pair<const char*, int*>{"beam-width", &f.beam_width},
                             std::pair<const char*, int*>{"fixes-per-kernel", &f.fixes_per_kernel}}) {
    if (o.SourceOf(name) == "default") {
      *value = 0;
    } else if (*value < 1 || *value > 16) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " must be 1..16 (got ", *value, ")"));
    }
  }
  const std::vector<std::string>& arms = BenchArmNames();
  if (!f.ablation.empty() && std::find(arms.begin(), arms.end(), f.ablation) == arms.end()) {
    return absl::InvalidArgumentError(absl::StrCat("--ablation must be one of ",
                                                   absl::StrJoin(arms, ", "), " (got '",
                                                   f.ablation, "')"));
  }
  if (f.ablation == "greedy" && ((f.beam_width != 0 && f.beam_width != 1) ||
                                 (f.fixes_per_kernel != 0 && f.fixes_per_kernel != 1))) {
    return absl::InvalidArgumentError(
        "--ablation greedy is one worker (beam width 1, one fix a round): leave --beam-width "
        "and --fixes-per-kernel out");
  }
  if (absl::Status seed_ok = CheckSweepSeed(
          f.ablation == "blind-sweep" ? v1::ABLATION_BLIND_SWEEP : v1::ABLATION_NONE,
          o.SourceOf("sweep-seed") != "default", f.sweep_seed);
      !seed_ok.ok()) {
    return seed_ok;
  }
  if (o.SourceOf("max-gpu-seconds") != "default" &&
      !(f.max_gpu_seconds >= 1 && f.max_gpu_seconds <= 1e7)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-gpu-seconds must be 1..1e7 (got ", f.max_gpu_seconds, ")"));
  }
  if (o.SourceOf("plateau-rounds") == "default") {
    f.plateau_rounds = 0;
  } else if (f.plateau_rounds < 1 || f.plateau_rounds > 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("--plateau-rounds must be 1..100 (got ", f.plateau_rounds, ")"));
  }
  return f;
}

const std::vector<std::string>& BenchArmNames() {
  static const std::vector<std::string> kArms = {"full", "no-counters", "no-reflexion", "greedy",
                                                 "blind-sweep"};
  return kArms;
}

v1::JobConfig BenchJobConfig(const BenchFlags& f) {
  v1::JobConfig cfg;
  if (f.rounds > 0) cfg.mutable_budget()->set_max_rounds(f.rounds);
  if (f.beam_width > 0) cfg.set_beam_width(f.beam_width);
  if (f.fixes_per_kernel > 0) cfg.set_fixes_per_kernel(f.fixes_per_kernel);
  if (!f.brain.empty()) cfg.set_brain(f.brain);
  v1::Ablation ablation = v1::ABLATION_NONE;
  if (AblationOfArm(f.ablation, &ablation)) cfg.set_ablation(ablation);
  if (ablation == v1::ABLATION_BLIND_SWEEP && f.sweep_seed >= 0) {
    cfg.set_sweep_seed(static_cast<uint64_t>(f.sweep_seed));
  }
  if (f.ablation == "greedy") {  // one worker: one kernel kept, one fix tried a round
    cfg.set_strategy(v1::SEARCH_STRATEGY_GREEDY);
    cfg.set_fixes_per_kernel(1);
  }
  if (f.max_gpu_seconds > 0) cfg.mutable_budget()->set_max_gpu_seconds(f.max_gpu_seconds);
  if (f.plateau_rounds > 0) cfg.set_plateau_rounds(f.plateau_rounds);
  return cfg;
}

std::string BenchSettingsJson(const BenchFlags& f) {
  nlohmann::json settings = {{"dir", f.dir},
                             {"server", f.server},
                             {"rounds", f.rounds},
                             {"beam_width", f.beam_width},
                             {"fixes_per_kernel", f.fixes_per_kernel},
                             {"only", f.only},
                             {"brain", f.brain},
                             {"run_id", f.run_id},
                             {"without_start", f.without_start},
                             {"concurrency", f.concurrency},
                             {"ablation", f.ablation.empty() ? "full" : f.ablation},
                             {"sweep_seed", f.sweep_seed >= 0 ? nlohmann::json(f.sweep_seed)
                                                              : nlohmann::json(nullptr)},
                             {"max_gpu_seconds", f.max_gpu_seconds},
                             {"plateau_rounds", f.plateau_rounds}};
  return settings.dump();
}

int RunBench(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<BenchFlags> parsed = ParseBenchFlags(args);
  if (!parsed.ok()) {
    err << "kagent bench: " << parsed.status().message() << "\n" << kUsage;
    return 2;
  }
  if (parsed->help) {
    out << kUsage;
    return 0;
  }
  const BenchFlags& f = *parsed;
  if (f.merge) return RunMerge(f, out, err);
  if (f.compare) return RunCompare(f, out, err);
  const std::string& dir = f.dir;
  auto problems = FindBenchProblems(dir, f.only);
  if (!problems.ok()) {
    err << "kagent bench: " << problems.status().message() << "\n";
    return 2;
  }
  if (problems->empty()) {
    err << "kagent bench: no problem (a NAME.py defining class Model) in " << dir
        << (f.only.empty() ? "" : " matching --only " + f.only) << "\n";
    return 2;
  }
  std::error_code ec;
  fs::create_directories(f.out_dir, ec);
  if (ec) {
    err << "kagent bench: cannot create " << f.out_dir << ": " << ec.message() << "\n";
    return 2;
  }

  ChannelOptions co;
  co.tls_ca = f.tls_ca;
  auto channel = MakeChannel(f.server, co);
  if (!channel.ok()) {
    err << "kagent bench: " << channel.status().message() << "\n";
    return 1;
  }
  std::unique_ptr<v1::JobService::Stub> stub = v1::JobService::NewStub(*channel);
  auto ctx = [&] {
    CallOptions c;
    c.token = f.token;
    c.timeout = absl::Seconds(f.timeout_seconds);
    return MakeClientContext(c);
  };

  std::vector<Slot> slots;
  for (const auto& p : *problems) {
    Slot s;
    s.problem = p;
    s.row.name = p.name;
    s.row.state = "PENDING";
    slots.push_back(std::move(s));
  }
  const std::string settings = BenchSettingsJson(f);
  const v1::JobConfig config = BenchJobConfig(f);
  auto write_results = [&](bool final_write) {
    std::vector<BenchRow> rows;
    for (const auto& s : slots) rows.push_back(s.row);
    BenchSummary sum = Summarize(rows);
    std::string flags;
    if (f.rounds > 0) absl::StrAppend(&flags, " --rounds ", f.rounds);
    if (f.beam_width > 0) absl::StrAppend(&flags, " --beam-width ", f.beam_width);
    if (f.fixes_per_kernel > 0) absl::StrAppend(&flags, " --fixes-per-kernel ", f.fixes_per_kernel);
    if (f.without_start) absl::StrAppend(&flags, " --without-start");
    if (!f.ablation.empty()) absl::StrAppend(&flags, " --ablation ", f.ablation);
    if (f.sweep_seed >= 0) absl::StrAppend(&flags, " --sweep-seed ", f.sweep_seed);
    if (f.max_gpu_seconds > 0) absl::StrAppend(&flags, " --max-gpu-seconds ", f.max_gpu_seconds);
    if (f.plateau_rounds > 0) absl::StrAppend(&flags, " --plateau-rounds ", f.plateau_rounds);
    std::string header = absl::StrFormat("`kagent bench %s%s` against %s%s", dir, flags, f.server,
                                         final_write ? "" : " (partial: jobs still running)");
    if (!f.ablation.empty()) {
      absl::StrAppend(&header, "\n\nArm: **", f.ablation, "** (docs/loop.md, \"Ablations\"; "
                      "compare arms with `kagent bench --compare`).");
    }
    absl::Status written = WriteResults(f.out_dir, rows, sum, settings, header);
    if (!written.ok()) err << "kagent bench: " << written.message() << "\n";
    return sum;
  };

  const auto with_start = std::count_if(slots.begin(), slots.end(), [&](const Slot& s) {
    return !f.without_start && !s.problem.start_path.empty();
  });
  out << "kagent bench: " << slots.size() << " problems from " << dir << " (" << with_start
      << " with a starting kernel; the brain writes the others' first kernels), up to "
      << f.concurrency << " at a time\n";
  size_t next = 0, finished = 0;
  int in_flight = 0;
  while (finished < slots.size()) {
    // Submit up to the concurrency limit.
    while (next < slots.size() && in_flight < f.concurrency) {
      Slot& s = slots[next++];
      v1::SubmitJobRequest req;
      // Without a starting kernel (--without-start, or none in DIR) the brain writes it.
      const bool with_start_kernel = !f.without_start && !s.problem.start_path.empty();
      absl::StatusOr<std::string> problem_source = ReadFile(s.problem.problem_path);
      absl::StatusOr<std::string> start_source =
          with_start_kernel ? ReadFile(s.problem.start_path) : std::string();
      if (!problem_source.ok() || !start_source.ok()) {
        s.row.state = "SUBMIT_ERROR";
        s.row.error = std::string(
            (!problem_source.ok() ? problem_source.status() : start_source.status()).message());
        s.finished = true;
        ++finished;
        continue;
      }
      req.mutable_problem()->set_source(*std::move(problem_source));
      req.mutable_problem()->set_name(s.problem.name);
      if (with_start_kernel) {
        const std::string& src = *start_source;
        req.mutable_start_kernel()->set_source(src);
        bool cuda = src.find("load_inline") != std::string::npos;
        req.mutable_start_kernel()->set_language(cuda ? v1::KERNEL_LANGUAGE_CUDA : v1::KERNEL_LANGUAGE_TRITON);
        req.mutable_start_kernel()->set_origin("bench:" + fs::path(s.problem.start_path).filename().string());
      }
      *req.mutable_config() = config;
      // A run without the starting kernels is other jobs than one with them.
      if (!f.run_id.empty()) {
        // So is another arm's (the full loop's key is as before arms existed).
        req.set_idempotency_key(absl::StrCat(
            "bench:", f.run_id, ":", s.problem.name, with_start_kernel ? "" : ":without-start",
            f.ablation.empty() || f.ablation == "full" ? "" : ":" + f.ablation));
      }
      v1::SubmitJobResponse resp;
      auto c = ctx();
      grpc::Status st = stub->SubmitJob(c.get(), req, &resp);
      if (!st.ok()) {
        if (st.error_code() == grpc::StatusCode::UNAVAILABLE ||
            st.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
            st.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
          err << "kagent bench: " << GrpcCodeName(st.error_code()) << ": " << st.error_message() << "\n";
          if (st.error_code() == grpc::StatusCode::UNAVAILABLE) {
            err << "  (is the server running at " << f.server << "? set --server or KAGENT_SERVER)\n";
          }
          write_results(false);
          return 1;
        }
        s.row.state = "SUBMIT_ERROR";
        s.row.error = absl::StrCat(GrpcCodeName(st.error_code()), ": ", st.error_message());
        s.finished = true;
        ++finished;
        out << absl::StrFormat("[%zu/%zu] %-36s not submitted: %s\n", finished, slots.size(),
                               s.problem.name, s.row.error);
        continue;
      }
      s.submitted = true;
      s.row = RowFromJob(s.problem.name, resp.job());
      ++in_flight;
      out << absl::StrFormat("        %-36s submitted as %s\n", s.problem.name, resp.job().id());
    }
    if (finished == slots.size()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(f.poll_seconds * 1000)));
    for (Slot& s : slots) {
      if (!s.submitted || s.finished) continue;
      v1::GetJobRequest g;
      g.set_job_id(s.row.job_id);
      v1::GetJobResponse resp;
      auto c = ctx();
      grpc::Status st = stub->GetJob(c.get(), g, &resp);
      if (!st.ok()) {
        ++s.poll_failures;
        if (s.poll_failures == 1 || s.poll_failures % 10 == 0) {
          err << "kagent bench: GetJob " << s.row.job_id << ": " << GrpcCodeName(st.error_code()) << ": "
              << st.error_message() << "\n";
        }
        if (s.poll_failures >= kMaxPollFailures || st.error_code() == grpc::StatusCode::NOT_FOUND) {
          s.row.state = "FAILED";
          s.row.error = absl::StrCat("lost track of the job: ", st.error_message());
          s.finished = true;
          ++finished;
          --in_flight;
          write_results(false);
        }
        continue;
      }
      s.poll_failures = 0;
      const v1::Job& job = resp.job();
      s.row = RowFromJob(s.problem.name, job);
      std::string seen = absl::StrCat(s.row.state, " ", job.current_round());
      bool done = Finished(job.state());
      if (done) {
        s.finished = true;
        ++finished;
        --in_flight;
      }
      if (seen != s.last_seen || done) {
        s.last_seen = seen;
        std::string what =
            done ? absl::StrFormat("%s  best %s ms  %s, %s  deploy %s  %d measured, %s/%s-min, "
                                   "%s, %d screened%s",
                                   s.row.state, FormatMs(s.row.best_ms),
                                   FormatVersus(s.row.speedup_vs_start, "the start"),
                                   FormatVersus(s.row.speedup_vs_compile, "torch.compile"),
                                   s.row.deploy.empty() ? "-" : s.row.deploy,
                                   s.row.candidates_measured,
                                   FormatPerGpuMinute(CandidatesPerGpuMinute(s.row.candidates_measured,
                                                                             s.row.gpu_seconds)),
                                   s.row.cpu_worker ? "worker" : "GPU",
                                   s.row.cpu_worker
                                       ? std::string("CPU worker (no GPU)")
                                       : absl::StrCat("GPU busy ",
                                                      FormatBusyFraction(GpuBusyFraction(
                                                          s.row.gpu_busy_seconds, s.row.gpu_seconds))),
                                   s.row.variants_screened,
                                   s.row.error.empty() ? "" : "  (" + s.row.error + ")")
                 : absl::StrFormat("%s round %d/%d", s.row.state, job.current_round(),
                                   job.config().budget().max_rounds());
        out << absl::StrFormat("[%zu/%zu] %-36s %s\n", finished, slots.size(), s.problem.name, what);
      }
      if (done) write_results(false);
    }
    out << std::flush;
  }
  BenchSummary sum = write_results(true);
  out << absl::StrFormat("done: %d of %d jobs DONE; %s\n", sum.done, sum.problems,
                         SummaryLine(sum));
  out << "throughput: " << ThroughputLine(sum) << "\n";
  out << "kernelbench: " << CoverageLine(sum.coverage) << "\n";
  out << "results: " << (fs::path(f.out_dir) / "results.md").string() << "\n";
  return sum.done == sum.problems ? 0 : 3;
}

int RunBenchIfCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  // Flags of the kagent client that take no value; every other "--flag" without "=" takes
  // the next argument as its value.
  static const char* kNoValue[] = {"--help", "-h", "--h", "--watch"};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return -1;
    if (absl::StartsWith(a, "--") || a == "-h") {
      bool no_value = a.find('=') != std::string::npos ||
                      std::any_of(std::begin(kNoValue), std::end(kNoValue), [&](const char* n) { return a == n; });
      if (!no_value) ++i;
      continue;
    }
    if (a != "bench") return -1;
    std::vector<std::string> rest(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(i));
    rest.insert(rest.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
    return RunBench(rest, out, err);
  }
  return -1;
}

}  // namespace kagent::cli