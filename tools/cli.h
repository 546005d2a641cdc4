// The kagent command-line client's commands, as a library so tests can run them.
//
//   kagent [--server ADDR] [--token TOKEN] COMMAND [ARGS] [FLAGS]
//     submit PROBLEM.py [--kernel KERNEL.py] [--rounds N] [--beam-width K]
//            [--fixes-per-kernel M | --workers W] [--strategy beam|greedy] [--brain NAME]
//            [--llm-agents A,B] [--ablation ARM] [--sweep-seed N] [--name NAME] [--watch]
//            (--beam K is --beam-width K; K and M are 1..16, else exit 2)
//     watch JOB [--from N]
//     get JOB [--kernel-out FILE]
//     list [--state STATE] [--limit N]
//     cancel JOB [--reason TEXT]
//     export JOB DIR [--package]   (--package: tools/package.h)
//     bench DIR --out OUTDIR [...]   (tools/bench.h)
//
// --server defaults to KAGENT_SERVER, else 127.0.0.1:50051; --token to KAGENT_TOKEN.
// Exit codes: 0 success; 1 the server answered an error; 2 bad usage; 3 the job ended
// FAILED or CANCELLED (submit --watch, watch).
#ifndef KAGENT_TOOLS_CLI_H_
#define KAGENT_TOOLS_CLI_H_

#include <iosfwd>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kagent/v1/common.pb.h"

namespace kagent::cli {

// submit --llm-agents' value as JobConfig.llm_agents: the agents in the given order.
// INVALID_ARGUMENT for an empty entry, an "agent=model" entry (a job does not choose
// models), an unknown agent (listing the agents) or one listed twice.
absl::StatusOr<std::vector<std::string>> ParseJobLlmAgents(absl::string_view flag);

// submit --ablation ARM (none, no-counters, no-reflexion, blind-sweep; case-insensitive;
// empty is none) and --sweep-seed (when `seed_given`) into `config`. INVALID_ARGUMENT for
// another arm (naming the four, and --strategy greedy for the greedy arm), a seed without
// blind-sweep, or a negative seed; `config` is then unchanged.
absl::Status SetAblation(absl::string_view arm, bool seed_given, int64_t seed,
                         v1::JobConfig* config);

// Runs one invocation; writes to `out` and `err`.
int Run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// What `kagent get` prints for a job: state, what to deploy (a job with a best kernel:
// kernel_model/recommendation.h), rounds, GPU time and the share of it the GPU was busy
// ("n/a" without NVML figures; on a CPU worker its worker-seconds instead, as the report
// says), candidates measured (and per GPU- or worker-minute) and
// variants screened, LLM usage (tokens and
// cost, with the job's LLM budget) when the job has used an LLM or set an LLM budget,
// the job's LLM agents when it chose them (JobConfig.llm_agents),
// the baseline, the trajectory and the best kernel (each speedup from its final run, as
// kernel_model/speedup_text.h's FormatSpeedup writes it; "n/a" for a roofline without
// hardware counters; a line saying so when the times are Triton's interpreter's on the CPU).
void PrintJob(const v1::Job& job, std::ostream& out);

// `kagent watch`'s last line: "job ID STATE", and for a DONE job (`job`, read after the
// stream ended; null when it could not be read) what to deploy:
// "job job-1 DONE: keep PyTorch's eager: fastest by 34 % (over the kernel)".
std::string WatchFinishLine(const std::string& job_id, v1::JobState state, const v1::Job* job);

// What `kagent watch` prints for a job's event stream: one line per event (a measured
// candidate as its id, verdict, median and the prescription it tried, or "starting
// kernel"; a reflexion; else the event's sequence number and message) and, on a
// terminal (`tty`), a progress bar redrawn below the lines. Not thread-safe; `out` must
// outlive it.
class WatchPrinter {
 public:
  WatchPrinter(std::ostream& out, bool tty);
  void Print(const v1::JobEvent& event);
  void Finish();  // the last progress bar, on a terminal
  // The state of the JOB_EVENT_JOB_FINISHED event seen; UNSPECIFIED before it.
  v1::JobState final_state() const { return final_state_; }

 private:
  std::string Bar() const;

  std::ostream& out_;
  const bool tty_;
  int total_ = 0, round_ = 0, measured_ = 0;
  double best_ = 0;
  v1::JobState final_state_ = v1::JOB_STATE_UNSPECIFIED;
};

}  // namespace kagent::cli

#endif  // KAGENT_TOOLS_CLI_H_
