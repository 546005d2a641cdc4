// `kagent bench`: runs a suite of problems (problems/) as jobs and reports the results;
// or, with --merge, combines the results.json files of several runs into one table.
//
//   kagent bench DIR --out OUTDIR [--server ADDR] [--token T] [--rounds N]
//                    [--beam-width K] [--fixes-per-kernel M] [--only PATTERN]
//                    [--concurrency N] [--poll-seconds S] [--run-id ID] [--brain NAME]
//                    [--without-start]
//   kagent bench --merge --out OUTDIR RESULTS.json [RESULTS.json ...]
//
// Every DIR/NAME.py that defines `class Model` (KernelBench format: Model, get_inputs,
// get_init_inputs; other .py files, e.g. a test file, are skipped) is one problem. When
// DIR/NAME_start.py exists it is the problem's starting kernel; without one (a plain
// KernelBench folder such as its level1/) the job is submitted without a starting kernel
// and the brain writes the first (nothing is written into DIR). Each is submitted to
// JobService as a job named NAME; at most --concurrency jobs are unfinished at a time (the
// coordinator queues GPU work, so this only bounds what the bench holds open). The bench
// polls GetJob until every job has finished, printing a line whenever a job changes state
// or round, and writes, after every finished job and at the end:
//   OUTDIR/results.json   every row, the summary, and the command's settings
//   OUTDIR/results.md     the Markdown table and the summary
// Besides the speedups, each row and the summary give the measurement throughput:
// candidates measured per GPU-minute (Job.candidates_measured over Job.gpu_seconds_used
// in minutes), the GPU-busy fraction (Job.gpu_busy_seconds_used over gpu_seconds_used;
// "n/a" when no busy time was reported: a CPU worker, or a worker without NVML) and the
// kernel variants screened (Job.variants_screened).
// The summary also gives KernelBench's figures (BenchSummary): coverage (problems with a
// verified kernel of all problems), the geometric means against torch.compile and against
// the best PyTorch baseline (per problem the faster of eager and torch.compile), the fast_p
// counts, the problems that fell back to PyTorch (the job's recommendation kept eager or
// torch.compile: kernel_model/recommendation.h) and the same per op class.
//   OUTDIR/trajectory.svg best-so-far speedup over the starting kernel against rounds
//   OUTDIR/gpu_curve.svg  the same against the GPU-seconds each job had used (bench_curves.h)
// results.md and results.json also give the stop-rule account (bench_curves.h): how many
// jobs each rule stopped, and at most how many GPU-seconds the plateau and roofline rules
// saved.
//
// --ablation ARM runs every job as one arm of the search-efficiency comparison
// (BenchArmNames; docs/benchmarks.md, "Does the guidance pay?"); --sweep-seed seeds the
// blind sweep; --max-gpu-seconds gives every job the same GPU-time budget (and
// --plateau-rounds a plateau rule of its own, so that the budget can be what stops it). The arm is named
// in results.md's header and results.json's settings, and its jobs are other jobs than
// the full loop's under the same --run-id.
//
//   kagent bench --compare --out OUTDIR RESULTS.json [RESULTS.json ...]
// needs no server: each file is one arm (its settings.ablation); it writes
// OUTDIR/compare.md, compare.json, compare_rounds.svg and compare_gpu.svg (bench_curves.h:
// the arms at equal GPU-seconds per problem, their curves and stop rules).
// --run-id makes submissions idempotent (key "bench:ID:NAME"): rerunning with the same id
// after an interruption picks the same jobs up instead of starting new ones.
//
// --rounds, --beam-width, --fixes-per-kernel and --brain go into every job's JobConfig
// (BenchJobConfig); without them the server's defaults apply. Given, --rounds is 1..1000
// and --beam-width and --fixes-per-kernel 1..16; any other value is refused.
//
// --merge needs no server. It reads the results.json files given (the positional
// arguments; there is no DIR in this mode, and a directory given is a usage error) in
// order; a later file's row for a problem replaces an earlier one, so each problem keeps
// the row of the LATEST run that measured it, and rows are ordered by problem name. Each
// row records its run (BenchRow::run: the file's settings.run_id, or the file's path when
// it has none, BenchRunLabels; a row that already names its run, from a merged file, keeps
// it). It writes
// the same three files to OUTDIR, the summary recomputed over the merged rows, the
// settings {"merged_from": [each file's settings plus "file", "problems", "kept"]}.
// Flags that shape jobs (--only, --run-id, --rounds, --beam-width, --fixes-per-kernel,
// --brain, --without-start, --concurrency) are usage errors with --merge.
//
// Exit codes: 0 every job DONE (--merge: the files were written, whatever the rows'
// states); 1 the server could not be reached or refused the caller; 2 bad usage (no
// problems found, missing --out, a flag out of range; --merge: no files, a file missing,
// unreadable or not a results.json, OUTDIR not writable); 3 some job FAILED, was CANCELLED
// or could not be submitted.
//
// The formatting, parsing and merging functions below are pure (no I/O, no server) so
// tests can call them; they live in tools/bench_results.cc, the runner in tools/bench.cc.
// Thread-compatible: nothing here holds shared state.
#ifndef KAGENT_TOOLS_BENCH_H_
#define KAGENT_TOOLS_BENCH_H_

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kagent/v1/common.pb.h"

namespace kagent::cli {

// One problem of a suite: NAME (the reference file's stem) and its files.
struct BenchProblem {
  std::string name;
  std::string problem_path;  // DIR/NAME.py
  std::string start_path;    // DIR/NAME_start.py; empty when there is none
};

// The problems of `dir` (every NAME.py defining `class Model`, with NAME_start.py when it
// exists), sorted by name; `only` (empty: all) keeps those whose name contains it, or any
// of its comma-separated parts. NOT_FOUND when `dir` is not a directory; a `_start.py`
// without its reference is skipped; INTERNAL when a .py file cannot be read.
absl::StatusOr<std::vector<BenchProblem>> FindBenchProblems(const std::string& dir,
                                                            const std::string& only);

// One problem's results. Times are medians in milliseconds; 0 means "not measured".
struct BenchRow {
  std::string name;
  std::string job_id;
  std::string state;  // DONE, FAILED, CANCELLED, QUEUED, ..., or SUBMIT_ERROR
  std::string error;  // the job's error, or why it could not be submitted
  double start_ms = 0;
  double eager_ms = 0;
  double compile_ms = 0;
  double best_ms = 0;
  double speedup_vs_start = 0;  // 0: unknown
  double speedup_vs_eager = 0;
  double speedup_vs_compile = 0;
  // The best kernel's roofline figures (JobResult): SOL, the larger of compute and memory
  // speed of light; and the arithmetic-intensity roofline (useful work against the roofline
  // at the op's intensity), the figure the stop rule uses when known. 0: unknown.
  double roofline_pct = 0;
  double ai_roofline_pct = 0;
  int rounds = 0;
  double gpu_seconds = 0;       // Job.gpu_seconds_used: the time its GPU work held a GPU
  double gpu_busy_seconds = 0;  // Job.gpu_busy_seconds_used: of it, kernels running (NVML)
  // Measured on the CPU worker (Triton's interpreter, kernel_model/gpu_spec.h's
  // MeasuredOnCpuWorker): gpu_seconds are the worker's slot seconds, not a GPU's.
  bool cpu_worker = false;
  int64_t candidates_measured = 0;  // Job.candidates_measured
  int64_t variants_screened = 0;    // Job.variants_screened
  std::string stop_reason;
  // The run that measured the row (--merge: the source file's run id or path); empty for
  // a row of the current run.
  std::string run;
  // (round, best-so-far speedup over the starting kernel), in round order.
  std::vector<std::pair<int, double>> trajectory;
  // (GPU-seconds the job had used when the round closed, best-so-far speedup), in round
  // order: the rounds that recorded it (RoundSummary.gpu_seconds_used > 0; none in jobs
  // stored before it existed).
  std::vector<std::pair<double, double>> gpu_trajectory;
  // The job's round budget (JobConfig.budget.max_rounds); 0 when unknown.
  int max_rounds = 0;
  // The op class the job recognized (JobResult.op_class, else recognized from a stored op
  // signature); "" when none.
  std::string op_class;
  // For a convolution, its class (kernel_model/op_recognition.h ConvClass: "conv2d",
  // "conv2d depthwise", "conv1d transposed grouped", ...) from a stored op signature; ""
  // otherwise.
  std::string conv_class;
  // What the job recommends deploying (kernel_model/recommendation.h DeployKey: "kernel",
  // "eager", "torch.compile"); "" without a final run.
  std::string deploy;
};

// A row's best kernel against the best PyTorch baseline of its run: the faster of eager
// and torch.compile (the one timed, when only one was) over the best kernel's time; 0 when
// unknown.
double SpeedupVsBestBaseline(const BenchRow& row);

// Whether the row's job finished with a verified kernel (DONE, with a best time).
bool HasVerifiedKernel(const BenchRow& row);

// KernelBench's fast_p thresholds: fast_p counts the problems whose kernel is correct
// (HasVerifiedKernel) and whose speedup over the best PyTorch baseline is greater than p
// (KernelBench: speedup = baseline time / kernel time, fast_p = correct and speedup > p,
// over all problems; fast_0 is the correct share, fast_1 the correct-and-faster share).
inline constexpr double kFastP[] = {0, 0.5, 1};
inline constexpr int kFastPCount = 3;

// KernelBench's figures over some rows (a suite, or one op class of it).
struct BenchCoverage {
  // "" for the whole suite; "(not recognized)" for rows without one; the convolution class
  // in CoverageByConvClass's figures.
  std::string op_class;
  int problems = 0;
  int verified = 0;      // HasVerifiedKernel
  double geomean_vs_compile = 0;   // over verified rows with a known ratio
  double geomean_vs_baseline = 0;  // SpeedupVsBestBaseline, over verified rows
  int fast_p[kFastPCount] = {0, 0, 0};
  int fell_back = 0;     // verified rows whose job recommends eager or torch.compile
};

// The figures of `rows` (op_class left empty).
BenchCoverage Coverage(const std::vector<BenchRow>& rows);

// The figures per op class, ordered by class name (rows without a class under
// "(not recognized)", last).
std::vector<BenchCoverage> CoverageByOpClass(const std::vector<BenchRow>& rows);

// The figures per convolution class (BenchRow::conv_class, in op_class), ordered by class
// name, over the rows of op class "conv" (those without a class, e.g. merged from a file
// written before it existed, under "conv (class not recorded)"); empty when there are none.
std::vector<BenchCoverage> CoverageByConvClass(const std::vector<BenchRow>& rows);

// The figures in one line, printed at the end of a run and a merge: "coverage 8 of 10
// (80%); geometric mean 1.12x vs torch.compile, 1.05x vs the best PyTorch baseline; fast_0
// 8, fast_0.5 7, fast_1 5 of 10; 3 fell back to PyTorch".
std::string CoverageLine(const BenchCoverage& coverage);

// results.md's KernelBench section: coverage, the geometric means, fast_p, the fallbacks,
// a table per op class and, when there are convolutions, one per convolution class.
std::string RenderCoverageMarkdown(const BenchCoverage& suite,
                                   const std::vector<BenchCoverage>& by_class,
                                   const std::vector<BenchCoverage>& by_conv_class = {});

// The row for `job`. The best kernel's final measurement (best, starting kernel, eager and
// torch.compile timed side by side) is preferred; without one (e.g. a job that failed
// after its baseline) the baseline's times are used and the best is the starting kernel.
BenchRow RowFromJob(const std::string& name, const v1::Job& job);

// Suite-level figures. Means and counts are over the finished rows (state DONE) whose
// ratio is known (> 0); gpu_seconds is over every row.
struct BenchSummary {
  int problems = 0;
  int done = 0;
  int failed = 0;  // FAILED, CANCELLED or SUBMIT_ERROR
  double geomean_vs_start = 0;
  double geomean_vs_eager = 0;
  double geomean_vs_compile = 0;
  double mean_roofline_pct = 0;     // over rows with a roofline figure
  double mean_ai_roofline_pct = 0;  // over rows with an arithmetic-intensity roofline
  int faster_than_compile = 0;   // speedup_vs_compile > 1
  // speedup_vs_compile > 1.02: faster by more than a median's run-to-run noise; a 1.001x
  // counts above and is a tie in practice.
  int clearly_faster_than_compile = 0;
  int compared_with_compile = 0; // rows with a known speedup_vs_compile
  double gpu_seconds = 0;
  // Throughput, over every row like gpu_seconds: candidates measured, variants screened,
  // candidates per GPU-minute (their sum over gpu_seconds). The busy fraction is over the
  // rows that report busy time (busy_rows of them): their busy over their held seconds,
  // so a row from a CPU worker or an older run does not dilute it; 0 when none ("n/a").
  int64_t candidates_measured = 0;
  int64_t variants_screened = 0;
  double candidates_per_gpu_minute = 0;
  double gpu_busy_seconds = 0;
  double gpu_busy_fraction = 0;
  int busy_rows = 0;
  int cpu_worker_rows = 0;  // rows measured on the CPU worker (BenchRow::cpu_worker)
  // KernelBench's figures, for the suite and per op class (Coverage, CoverageByOpClass).
  BenchCoverage coverage;
  std::vector<BenchCoverage> by_op_class;
  std::vector<BenchCoverage> by_conv_class;  // CoverageByConvClass
};

// "worker" when every row of `s` ran on the CPU worker (the held time is a CPU worker's
// slot, as `kagent get` and the report say), else "GPU": the unit of the summary's
// "-s" and "per -minute" figures.
std::string HeldTimeUnit(const BenchSummary& s);

// The geometric mean of the positive values; 0 when there are none.
double GeometricMean(const std::vector<double>& values);

// Candidates measured per GPU-minute: candidates / (gpu_seconds / 60); 0 when either is
// not positive (unknown).
double CandidatesPerGpuMinute(int64_t candidates, double gpu_seconds);
// The share of the held GPU time the GPU was busy: busy / held, in [0, 1] as reported; 0
// when either is not positive (unknown: no NVML figure, "n/a").
double GpuBusyFraction(double busy_seconds, double held_seconds);
// Their cells: "12.34" (or "-" when unknown) and "87%" (or "n/a" when unknown).
std::string FormatPerGpuMinute(double v);
std::string FormatBusyFraction(double v);

BenchSummary Summarize(const std::vector<BenchRow>& rows);

// The suite's best-so-far speedup over the starting kernel after each round 0..R (R the
// largest round of any row): per row the latest trajectory point at or before the round
// (1.0 before its first), combined by geometric mean. Rows without a trajectory count 1.0.
std::vector<double> SuiteTrajectory(const std::vector<BenchRow>& rows);

// results.md: a header line, the per-problem table and the summary. A "run" column
// (after "problem") is added only when some row's `run` is non-empty.
std::string RenderBenchMarkdown(const std::vector<BenchRow>& rows, const BenchSummary& summary,
                                const std::string& header);

// results.json: {"settings": settings_json, "summary": {...}, "problems": [...],
// "suite_trajectory": [...]}. `settings_json` must be a JSON object (may be "{}").
std::string RenderBenchJson(const std::vector<BenchRow>& rows, const BenchSummary& summary,
                            const std::string& settings_json);

// The inverse of RenderBenchJson: the rows of a results.json, and its "settings" object
// (serialized) in `*settings_json` when not null. Required per problem: "name" (a
// non-empty string, unique in the file), "state" (a string) and the numbers start_ms,
// eager_ms, compile_ms, best_ms, speedup_vs_start, speedup_vs_eager, speedup_vs_compile;
// the other fields are optional (files from before they existed still parse: gpu_trajectory,
// an array of {gpu_seconds, best_speedup_vs_start}, and max_rounds among them) but must have
// the right type when present (a number may be null: RenderBenchJson writes NaN so; read as
// 0; candidates_measured, variants_screened and rounds must be integers; op_class,
// conv_class and deploy strings; cpu_worker a boolean, false when absent). The derived candidates_per_gpu_minute, gpu_busy_fraction and
// speedup_vs_best_baseline are not read: they are recomputed. "settings" must be an
// object when present ({} when absent). "summary" (with its "kernelbench" and
// "by_op_class" and "by_conv_class" figures) and "suite_trajectory" are not read: they are recomputed from the
// rows. INVALID_ARGUMENT
// naming `source` (the file, for messages) and the field, e.g.
// "a/results.json: problems[3].best_ms: expected a number".
absl::StatusOr<std::vector<BenchRow>> ParseBenchJson(const std::string& text,
                                                     const std::string& source,
                                                     std::string* settings_json);

// One results.json read for --merge.
struct BenchRunFile {
  std::string path;           // as given on the command line
  std::string settings_json;  // its "settings" object
  std::vector<BenchRow> rows;
};

// The run each file's rows are labelled with: its settings' run_id, or its path when it
// has none; when several files share a run id, "ID (PATH)" for each of them, so that every
// row still leads to one file.
std::vector<std::string> BenchRunLabels(const std::vector<BenchRunFile>& files);

// The merged rows: per problem name, the row of the last file that has it finished (state
// DONE), else of the last file that has it at all (a later unfinished job does not hide an
// earlier result), labelled with that file's BenchRunLabels entry unless it already names
// its run; ordered by name.
std::vector<BenchRow> MergeBenchRows(const std::vector<BenchRunFile>& files);

// The merge's "settings": {"merged_from": [per file, in order: its settings plus "file"
// (the path), "problems" (its rows) and "kept" (its rows in `merged`)]}.
std::string MergedSettingsJson(const std::vector<BenchRunFile>& files,
                               const std::vector<BenchRow>& merged);

// results.md's header for a merge: how many runs, each in order (label, file, rows, kept,
// its round/beam settings), and why rows from different runs can sit in one table.
std::string MergedMarkdownHeader(const std::vector<BenchRunFile>& files,
                                 const std::vector<BenchRow>& merged);

// trajectory.svg: one thin line per problem and a bold line for the suite's geometric mean,
// speedup over the starting kernel (y, log scale) against rounds (x). Self-contained SVG.
std::string RenderTrajectorySvg(const std::vector<BenchRow>& rows);

// The table's cell format for a time: "1.234" (ms); "-" when unknown (<= 0).
std::string FormatMs(double v);

// Text made safe for a Markdown table cell: no '|' or line breaks, at most 120 characters.
std::string MarkdownCell(std::string s);

// The summary in one line, as the bench prints it at the end: "geometric mean 1.23x vs
// start, ... faster than torch.compile on 25 of 44 (by more than 2%: 14)".
std::string SummaryLine(const BenchSummary& summary);

// The throughput in one line, printed after SummaryLine: "120 candidates measured in
// 600.0 GPU-s: 12.00 per GPU-minute; GPU busy 71% (40 problems with NVML figures); 300
// variants screened".
std::string ThroughputLine(const BenchSummary& summary);

// `kagent bench`'s flags (ParseBenchFlags).
struct BenchFlags {
  std::string dir;  // the suite: the one positional argument
  std::string server = "127.0.0.1:50051";
  std::string token;
  std::string tls_ca;
  std::string out_dir;
  std::string only;
  std::string run_id;
  std::string brain;             // empty: the server's
  int rounds = 0;                // 0: the server's default
  int beam_width = 0;            // 0: not given (the server's default); else 1..16
  int fixes_per_kernel = 0;      // 0: not given (the server's default); else 1..16
  int concurrency = 8;
  double poll_seconds = 10;
  double timeout_seconds = 30;
  bool without_start = false;    // submit without the starting kernels: the brain writes each
  // --ablation: the arm every job runs (BenchArmNames); "" is the full loop, as "full".
  std::string ablation;
  int64_t sweep_seed = -1;       // --sweep-seed (blind-sweep only); -1: not given
  double max_gpu_seconds = 0;    // --max-gpu-seconds: each job's GPU-time budget; 0: none
  int plateau_rounds = 0;        // --plateau-rounds: each job's plateau rule, 1..100; 0: the server's
  bool merge = false;            // --merge: combine results.json files, no server
  bool compare = false;          // --compare: compare results.json files as arms, no server
  std::vector<std::string> merge_files;  // --merge / --compare: the positional RESULTS.json files
  bool help = false;             // --help: nothing else was checked
};

// Parses `kagent bench`'s arguments (without the "bench" word). INVALID_ARGUMENT, with a
// message naming the flag, for a usage error: an unknown flag, not exactly one DIR, no
// --out, --concurrency < 1, --poll-seconds <= 0, --rounds < 0, or --beam-width /
// --fixes-per-kernel given outside 1..16; an --ablation not in BenchArmNames, --beam-width
// or --fixes-per-kernel other than 1 with --ablation greedy, --sweep-seed (>= 0) without
// --ablation blind-sweep, --max-gpu-seconds given outside 1..1e7, --plateau-rounds given
// outside 1..100. With --merge or
// --compare (not both): no --out, no RESULTS.json, or a job flag given on the command
// line (the positionals go to merge_files, `dir` stays empty). Does not look at the file
// system.
absl::StatusOr<BenchFlags> ParseBenchFlags(const std::vector<std::string>& args);

// The arms --ablation accepts, in the order docs/benchmarks.md lists them: "full" (the
// full loop, JobConfig.ablation left out), "no-counters" (ABLATION_NO_COUNTERS),
// "no-reflexion" (ABLATION_NO_REFLEXION), "greedy" (strategy GREEDY with one fix a round:
// one worker), "blind-sweep" (ABLATION_BLIND_SWEEP).
const std::vector<std::string>& BenchArmNames();

// The JobConfig every job of the run is submitted with: only what the flags set (the
// arm's ablation, or for "greedy" strategy GREEDY and fixes_per_kernel 1; sweep_seed;
// budget.max_gpu_seconds; plateau_rounds).
v1::JobConfig BenchJobConfig(const BenchFlags& flags);

// results.json's "settings" object (a JSON object; the token is left out): dir, server,
// rounds, beam_width, fixes_per_kernel (0: the server's default), only, brain, run_id,
// concurrency, ablation ("full" without --ablation), sweep_seed (null when not given),
// max_gpu_seconds (0: none), plateau_rounds (0: the server's).
std::string BenchSettingsJson(const BenchFlags& flags);

// Runs `kagent bench` (args without the "bench" word itself); writes progress to `out`.
int RunBench(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// For tools/cli.cc: when the command word (the first argument that is not a flag or a
// flag's value) is "bench", runs RunBench on the other arguments and returns its exit code;
// otherwise returns -1 and does nothing.
int RunBenchIfCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace kagent::cli

#endif  // KAGENT_TOOLS_BENCH_H_
