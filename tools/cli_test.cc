// CLI tests that need no server: usage errors and the HTML report.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "common/testing/fixtures.h"
#include "tools/cli.h"
#include "tools/report.h"

namespace kagent {
namespace {

int RunCli(std::vector<std::string> args, std::string* out, std::string* err) {
  std::ostringstream o, e;
  int rc = cli::Run(args, o, e);
  *out = o.str();
  *err = e.str();
  return rc;
}

TEST_CASE("cli: usage errors exit 2 with a message") {
  std::string out, err;
  CHECK(RunCli({}, &out, &err) == 2);
  CHECK(err.find("usage") != std::string::npos);
  CHECK(RunCli({"frobnicate"}, &out, &err) == 2);
  CHECK(err.find("unknown command") != std::string::npos);
  CHECK(RunCli({"get"}, &out, &err) == 2);
  CHECK(RunCli({"submit", "/nonexistent/problem.py"}, &out, &err) == 2);
  CHECK(err.find("cannot read") != std::string::npos);
  CHECK(RunCli({"list", "--state", "sleeping"}, &out, &err) == 2);
  CHECK(RunCli({"--bogus", "list"}, &out, &err) == 2);
  CHECK(RunCli({"--help"}, &out, &err) == 0);
  CHECK(out.find("submit PROBLEM.py") != std::string::npos);
}

TEST_CASE("cli: submit's --beam-width and --fixes-per-kernel are 1..16") {
  std::string problem = std::filesystem::temp_directory_path() /
                        ("kagent_cli_test_problem_" + std::to_string(::getpid()) + ".py");
  std::ofstream(problem) << "class Model: pass\n";
  std::string out, err;
  for (const char* flag : {"--beam-width", "--beam", "--fixes-per-kernel"}) {
    for (const char* v : {"0", "17"}) {
      INFO(flag << " " << v);
      CHECK(RunCli({"submit", problem, flag, v}, &out, &err) == 2);
      CHECK(err.find("must be 1..16") != std::string::npos);
    }
  }
  CHECK(RunCli({"submit", problem, "--beam", "2", "--beam-width", "2"}, &out, &err) == 2);
  CHECK(err.find("not both") != std::string::npos);
  CHECK(RunCli({"submit", problem, "--fixes-per-kernel", "2", "--workers", "4"}, &out, &err) == 2);
  CHECK(err.find("not both") != std::string::npos);
  // In range: past the checks, to the (absent) server.
  CHECK(RunCli({"--server", "127.0.0.1:1", "--timeout-seconds", "2", "submit", problem,
                "--beam-width", "16", "--fixes-per-kernel", "1"},
               &out, &err) == 1);
  CHECK(err.find("UNAVAILABLE") != std::string::npos);
  CHECK(RunCli({"--help"}, &out, &err) == 0);
  CHECK(out.find("--fixes-per-kernel") != std::string::npos);
  std::filesystem::remove(problem);
}

TEST_CASE("cli: submit --workers is split over the beam exactly, or refused, never rounded") {
  std::string problem = std::filesystem::temp_directory_path() /
                        ("kagent_cli_test_workers_" + std::to_string(::getpid()) + ".py");
  std::ofstream(problem) << "class Model: pass\n";
  std::string out, err;
  // Once stored as 2 fixes on each of K = 2 kernels: 4 candidates for 3 workers.
  CHECK(RunCli({"submit", problem, "--beam-width", "2", "--workers", "3"}, &out, &err) == 2);
  CHECK(err == "kagent: --workers 3 is not a multiple of the beam width 2: a round has K x M "
               "candidates; give --workers 2 or 4, or --fixes-per-kernel M\n");
  CHECK(RunCli({"submit", problem, "--beam-width", "4", "--workers", "2"}, &out, &err) == 2);
  CHECK(absl::StrContains(err, "give --workers 4, or --fixes-per-kernel M"));
  // Once split over an assumed K = 2 whatever the server's default or the strategy.
  CHECK(RunCli({"submit", problem, "--workers", "4"}, &out, &err) == 2);
  CHECK(absl::StrContains(err, "give --beam-width K with it (or --strategy greedy, where K is 1)"));
  CHECK(RunCli({"submit", problem, "--beam-width", "1", "--workers", "17"}, &out, &err) == 2);
  CHECK(absl::StrContains(err, "17 fixes for each; at most 16"));
  CHECK(RunCli({"submit", problem, "--beam-width", "2", "--workers", "0"}, &out, &err) == 2);
  CHECK(err == "kagent: --workers must be >= 1\n");
  // Accepted: past the checks, to the (absent) server. Greedy is K = 1: 3 workers are 3
  // fixes on its one kernel.
  for (std::vector<std::string> ok : {std::vector<std::string>{"--strategy", "greedy", "--workers", "3"},
                                      {"--beam-width", "2", "--workers", "4"}}) {
    std::vector<std::string> args = {"--server", "127.0.0.1:1", "--timeout-seconds", "2", "submit",
                                     problem};
    args.insert(args.end(), ok.begin(), ok.end());
    CHECK(RunCli(args, &out, &err) == 1);
    CHECK(absl::StrContains(err, "UNAVAILABLE"));
  }
  std::filesystem::remove(problem);
}

TEST_CASE("cli: get shows the LLM tokens and cost a job used, and its LLM budget") {
  v1::Job job;
  job.set_id("job-7");
  job.set_state(v1::JOB_STATE_ROUNDS);
  job.mutable_config()->mutable_budget()->set_max_rounds(5);
  std::ostringstream plain;
  cli::PrintJob(job, plain);
  CHECK(plain.str().find("llm ") == std::string::npos);  // no LLM, no budget: no line

  job.set_llm_tokens_used(12345);
  job.set_llm_cost_usd(0.5);
  std::ostringstream used;
  cli::PrintJob(job, used);
  CHECK(used.str().find("llm        12345 tokens, $0.5000\n") != std::string::npos);

  job.mutable_config()->mutable_budget()->set_max_llm_tokens(50000);
  job.mutable_config()->mutable_budget()->set_max_llm_cost_usd(2);
  std::ostringstream budget;
  cli::PrintJob(job, budget);
  CHECK(budget.str().find("llm        12345 tokens, $0.5000  (budget 50000 tokens $2.0000)\n") !=
        std::string::npos);
}

TEST_CASE("cli: submit --llm-agents names the job's LLM agents, and get shows them") {
  absl::StatusOr<std::vector<std::string>> agents = cli::ParseJobLlmAgents(" reflect ,plan");
  REQUIRE(agents.ok());
  CHECK(*agents == std::vector<std::string>{"reflect", "plan"});
  for (const auto& [flag, says] : std::vector<std::pair<std::string, std::string>>{
           {"reflect,,plan", "has an empty entry"},
           {"", "has an empty entry"},
           {"prescribe=qwen", "their models are the server's"},
           {"reflect,dream", "unknown agent 'dream'; the agents are rewrite,prescribe,reflect,plan,narrate"},
           {"plan,plan", "agent 'plan' is listed twice"}}) {
    INFO(flag);
    absl::StatusOr<std::vector<std::string>> bad = cli::ParseJobLlmAgents(flag);
    CHECK(absl::IsInvalidArgument(bad.status()));
    CHECK_THAT(std::string(bad.status().message()), Catch::Contains(says));
  }
  // A bad value is a usage error before any server is asked.
  std::string problem = std::filesystem::temp_directory_path() /
                        ("kagent_cli_test_agents_" + std::to_string(::getpid()) + ".py");
  std::ofstream(problem) << "class Model: pass\n";
  std::string out, err;
  CHECK(RunCli({"--server", "127.0.0.1:1", "submit", problem, "--llm-agents", "reflect,dream"}, &out,
               &err) == 2);
  CHECK_THAT(err, Catch::Contains("unknown agent 'dream'"));
  std::filesystem::remove(problem);

  v1::Job job;
  job.set_id("job-8");
  std::ostringstream none;
  cli::PrintJob(job, none);
  CHECK(none.str().find("llm agents") == std::string::npos);
  job.mutable_config()->add_llm_agents("reflect");
  job.mutable_config()->add_llm_agents("plan");
  std::ostringstream chosen;
  cli::PrintJob(job, chosen);
  CHECK_THAT(chosen.str(), Catch::Contains("llm agents reflect, plan  (the others heuristic)\n"));
}

TEST_CASE("cli: submit --ablation and --sweep-seed set the job's arm, or are refused") {
  v1::JobConfig cfg;
  REQUIRE(cli::SetAblation("blind-sweep", true, 7, &cfg).ok());
  CHECK(cfg.ablation() == v1::ABLATION_BLIND_SWEEP);
  CHECK(cfg.has_sweep_seed());
  CHECK(cfg.sweep_seed() == 7);
  v1::JobConfig plain;
  REQUIRE(cli::SetAblation("No-Counters", false, 0, &plain).ok());
  CHECK(plain.ablation() == v1::ABLATION_NO_COUNTERS);
  CHECK_FALSE(plain.has_sweep_seed());
  REQUIRE(cli::SetAblation("no-reflexion", false, 0, &plain).ok());
  CHECK(plain.ablation() == v1::ABLATION_NO_REFLEXION);
  REQUIRE(cli::SetAblation("", false, 0, &plain).ok());
  CHECK(plain.ablation() == v1::ABLATION_NONE);
  for (const auto& [arm, seed_given, seed, says] :
       std::vector<std::tuple<std::string, bool, int64_t, std::string>>{
           {"greedy", false, 0, "the greedy arm is --strategy greedy --fixes-per-kernel 1"},
           {"full-ish", false, 0, "none, no-counters, no-reflexion or blind-sweep (got 'full-ish')"},
           {"no-counters", true, 3, "give it with --ablation blind-sweep"},
           {"blind-sweep", true, -1, "--sweep-seed must be >= 0 (got -1)"}}) {
    INFO(arm);
    v1::JobConfig untouched;
    absl::Status bad = cli::SetAblation(arm, seed_given, seed, &untouched);
    CHECK(absl::IsInvalidArgument(bad));
    CHECK_THAT(std::string(bad.message()), Catch::Contains(says));
    CHECK(untouched.ablation() == v1::ABLATION_NONE);
    CHECK_FALSE(untouched.has_sweep_seed());
  }
  // A bad value is a usage error before any server is asked.
  std::string problem = std::filesystem::temp_directory_path() /
                        ("kagent_cli_test_ablation_" + std::to_string(::getpid()) + ".py");
  std::ofstream(problem) << "class Model: pass\n";
  std::string out, err;
  CHECK(RunCli({"--server", "127.0.0.1:1", "submit", problem, "--sweep-seed", "4"}, &out, &err) == 2);
  CHECK_THAT(err, Catch::Contains("--sweep-seed seeds the blind sweep"));
  std::filesystem::remove(problem);
}

TEST_CASE("cli: get shows the GPU busy share, candidates per GPU-minute and variants screened") {
  v1::Job job;
  job.set_id("job-9");
  job.set_state(v1::JOB_STATE_DONE);
  job.set_gpu_seconds_used(240);
  job.set_candidates_measured(20);
  std::ostringstream cpu;
  cli::PrintJob(job, cpu);
  CHECK(cpu.str().find("gpu time   240.0 GPU-seconds, GPU busy n/a\n") != std::string::npos);
  CHECK(cpu.str().find("measured   20 candidates, 5.00 per GPU-minute; 0 variants screened\n") !=
        std::string::npos);
  job.set_gpu_busy_seconds_used(180);
  job.set_variants_screened(64);
  std::ostringstream gpu;
  cli::PrintJob(job, gpu);
  CHECK(gpu.str().find("gpu time   240.0 GPU-seconds, GPU busy 75%\n") != std::string::npos);
  CHECK(gpu.str().find("measured   20 candidates, 5.00 per GPU-minute; 64 variants screened\n") !=
        std::string::npos);
  std::string html = RenderHtmlReport(job, {}, {});
  CHECK(html.find("<tr><th>GPU busy</th><td>75%") != std::string::npos);
  CHECK(html.find("<tr><th>candidates measured</th><td>20 (5.00 per GPU-minute)</td></tr>") !=
        std::string::npos);
  CHECK(html.find("<tr><th>variants screened</th><td>64</td></tr>") != std::string::npos);
}

TEST_CASE("cli: get shows both roofline figures of the best kernel") {
  v1::Job job;
  job.set_id("job-8");
  job.set_state(v1::JOB_STATE_DONE);
  job.mutable_result()->set_best_candidate_id("job-8-c0");
  job.mutable_result()->set_roofline_efficiency_pct(99.4);
  std::ostringstream unknown;
  cli::PrintJob(job, unknown);
  CHECK(unknown.str().find("  roofline        99.4%") != std::string::npos);
  CHECK(unknown.str().find("  AI roofline     n/a  (the op signature gave no FLOPs and bytes)") != std::string::npos);

  job.mutable_result()->set_roofline_bound_pct(46);
  std::ostringstream known;
  cli::PrintJob(job, known);
  CHECK(known.str().find("  AI roofline     46.0%") != std::string::npos);
}

// A finished job whose best kernel `best_id` descends from the starting kernel job-9-c0.
v1::Job FinishedJob(const std::string& best_id) {
  v1::Job job;
  job.set_id("job-9");
  job.set_state(v1::JOB_STATE_DONE);
  job.mutable_baseline()->set_verdict(v1::VERDICT_CORRECT);
  job.mutable_baseline()->mutable_candidate()->set_median_ms(2.5);
  v1::JobResult* r = job.mutable_result();
  r->set_best_candidate_id(best_id);
  r->add_lineage("job-9-c0");
  if (best_id != "job-9-c0") r->add_lineage(best_id);
  return job;
}

TEST_CASE("cli: get shows the final run's harness warnings, one line each") {
  v1::Job job = FinishedJob("job-9-c0");
  std::ostringstream none;
  cli::PrintJob(job, none);
  CHECK(none.str().find("warning") == std::string::npos);
  v1::Measurement* b = job.mutable_result()->mutable_best_measurement();
  b->add_checks("gate: 11 trials passed");
  b->add_warnings("trial scale10 (wide): within it of the float64 reference");
  b->add_warnings("the starting kernel is wrong on the timing inputs (not timed)");
  std::ostringstream two;
  cli::PrintJob(job, two);
  INFO(two.str());
  CHECK(two.str().find("  warning         trial scale10 (wide): within it of the float64 "
                       "reference\n  warning         the starting kernel is wrong") !=
        std::string::npos);
  CHECK(two.str().find("11 trials") == std::string::npos);  // checks are not warnings
}

TEST_CASE("cli: get never shows a 0 ms starting kernel or a made-up ratio") {
  // The best is the starting kernel: its final figures are its baseline run's, which
  // timed no reference kernel beside it.
  v1::Job start = FinishedJob("job-9-c0");
  start.mutable_result()->mutable_best_measurement()->mutable_candidate()->set_median_ms(2.5);
  start.mutable_result()->set_speedup_vs_start(1.0);
  std::ostringstream same;
  cli::PrintJob(start, same);
  INFO(same.str());
  CHECK(same.str().find("  starting kernel the best kernel is the starting kernel: no candidate "
                        "beat it\n") != std::string::npos);
  // No other line about the starting kernel, and no ratio against itself.
  CHECK(same.str().find("  starting kernel ") == same.str().rfind("  starting kernel "));
  CHECK(same.str().find("1.00x") == std::string::npos);

  // A descendant won: the start's median comes from the final run that timed both.
  v1::Job better = FinishedJob("job-9-c7");
  v1::Measurement* b = better.mutable_result()->mutable_best_measurement();
  b->mutable_candidate()->set_median_ms(1.25);
  b->mutable_reference_kernel()->set_median_ms(2.4);
  better.mutable_result()->set_speedup_vs_start(1.92);
  std::ostringstream won;
  cli::PrintJob(better, won);
  INFO(won.str());
  CHECK(won.str().find("  starting kernel     2.4000 ms  -> 1.92x faster\n") != std::string::npos);

  // Without the start in the final run, the baseline run's median stands in.
  b->clear_reference_kernel();
  std::ostringstream from_baseline;
  cli::PrintJob(better, from_baseline);
  CHECK(from_baseline.str().find("  starting kernel     2.5000 ms  -> 1.92x faster\n") !=
        std::string::npos);
}

TEST_CASE("cli: get's round table lines up: header, separator and rows share the columns") {
  v1::Job job = FinishedJob("job-9-c7");
  for (int round = 1; round <= 2; ++round) {
    v1::RoundSummary* t = job.mutable_result()->add_trajectory();
    t->set_round(round);
    t->set_best_median_ms(2.0 / round);
    t->set_best_speedup_vs_start(1.25 * round);
    t->set_correct(3);
    t->set_candidates(4);
  }
  std::ostringstream printed;
  cli::PrintJob(job, printed);
  std::istringstream lines(printed.str());
  std::vector<std::string> table;
  bool in_table = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" round |") == 0) in_table = true;
    if (in_table && line.empty()) break;
    if (in_table) table.push_back(line);
  }
  INFO(printed.str());
  REQUIRE(table.size() == 4);  // header, separator, two rows
  // Where each column starts: the positions of the '|' (header, rows) or '+' (separator).
  auto borders = [](const std::string& line, char c) {
    std::vector<size_t> at;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == c) at.push_back(i);
    }
    return at;
  };
  const std::vector<size_t> columns = borders(table[0], '|');
  REQUIRE(columns.size() == 3);
  CHECK(borders(table[1], '+') == columns);
  CHECK(table[1].size() == table[0].size());
  CHECK(table[1].find_first_not_of("-+") == std::string::npos);
  CHECK(borders(table[2], '|') == columns);
  CHECK(borders(table[3], '|') == columns);
  CHECK(table[2] == "     1 |     2.0000 |    1.25x | 3/4");
}

TEST_CASE("cli: submit --kernel with an empty file is an error, not a job without a start") {
  std::string dir = std::filesystem::temp_directory_path() /
                    ("kagent_cli_test_empty_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string problem = dir + "/problem.py", kernel = dir + "/kernel.py";
  std::ofstream(problem) << "class Model: pass\n";
  for (const char* contents : {"", " \n\n\t\n"}) {
    std::ofstream(kernel) << contents;
    std::string out, err;
    CHECK(RunCli({"--server", "127.0.0.1:1", "submit", problem, "--kernel", kernel}, &out, &err) ==
          2);
    CHECK(err == "kagent: --kernel " + kernel +
                     " is empty: give the kernel's source, or leave --kernel out to let the "
                     "brain write the first kernel\n");
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli: an unreachable server is UNAVAILABLE with a hint") {
  std::string out, err;
  int rc = RunCli({"--server", "127.0.0.1:1", "--timeout-seconds", "2", "list"}, &out, &err);
  CHECK(rc == 1);
  CHECK(err.find("UNAVAILABLE") != std::string::npos);
  CHECK(err.find("--server") != std::string::npos);
}

// The events of a recorded CPU job (tests/fixtures/jobs/), in order.
std::vector<v1::JobEvent> RecordedEvents() {
  absl::StatusOr<std::string> text = testing::ReadFileToString(
      testing::SourceDir() + "/tests/fixtures/jobs/cpu_relu_add.events.jsonl");
  REQUIRE(text.ok());
  std::vector<v1::JobEvent> events;
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    v1::JobEvent e;
    REQUIRE(google::protobuf::util::JsonStringToMessage(std::string(line), &e).ok());
    events.push_back(std::move(e));
  }
  return events;
}

TEST_CASE("cli: watch prints a recorded job's events, one line each") {
  std::vector<v1::JobEvent> events = RecordedEvents();
  REQUIRE(events.size() == 11);
  std::ostringstream out;
  cli::WatchPrinter printer(out, /*tty=*/false);
  for (const v1::JobEvent& e : events) printer.Print(e);
  printer.Finish();
  CHECK(printer.final_state() == v1::JOB_STATE_DONE);
  std::vector<std::string> lines = absl::StrSplit(out.str(), '\n');
  INFO(out.str());
  REQUIRE(lines.size() == 12);  // 11 and the empty string after the last newline
  CHECK(lines[0] == "#1 job queued");
  CHECK(lines[1] == "#2 measuring the starting kernel and baselines");
  // The baseline's candidate is named as the starting kernel; no trailing blanks.
  CHECK(lines[2] == "  job-0b44f594c78b-c0          CORRECT            4.0003 ms  starting kernel");
  CHECK(lines[5] == "#6 no profile of job-0b44f594c78b-c0: it ran on a CPU worker (Triton's "
                    "interpreter has no hardware counters); planning from the op class alone");
  CHECK(lines[7] ==
        "  job-0b44f594c78b-r1-w0       CORRECT            3.0501 ms  vectorize-global-access");
  CHECK(absl::StartsWith(lines[8], "    reflexion: Applied num_warps 4 -> 8"));
  CHECK(lines[9] == "#10 round 1: best 3.0501 ms (1.31x the start), 1/1 correct");
  CHECK(absl::StartsWith(lines[10], "#11 done (round budget spent (1 rounds)): best 3.0442 ms"));
  for (const std::string& line : lines) CHECK(line == absl::StripTrailingAsciiWhitespace(line));

  // On a terminal each line clears the bar and the bar is redrawn below it; the last bar
  // has the job's totals.
  std::ostringstream tty;
  cli::WatchPrinter on_tty(tty, /*tty=*/true);
  for (const v1::JobEvent& e : events) on_tty.Print(e);
  on_tty.Finish();
  CHECK(absl::EndsWith(tty.str(), "\r\033[K[##############################] round 1/1  best 1.14x  "
                                  "measured 2\n"));

  // Resumed from sequence 9: only what followed, and still the final state.
  std::ostringstream resumed;
  cli::WatchPrinter from9(resumed, /*tty=*/false);
  for (size_t i = 8; i < events.size(); ++i) from9.Print(events[i]);
  CHECK(absl::StartsWith(resumed.str(), "    reflexion: "));
  CHECK(from9.final_state() == v1::JOB_STATE_DONE);
}

TEST_CASE("cli: watch's last line says what to deploy for a DONE job") {
  v1::Job job;
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/jobs/cpu_relu_add.job.json", &job).ok());
  CHECK(cli::WatchFinishLine(job.id(), v1::JOB_STATE_DONE, &job) ==
        "job job-0b44f594c78b DONE: keep PyTorch's eager: fastest by 2161 % (over "
        "the kernel); timed on the CPU worker (Triton's interpreter), not on a GPU");
  // A stored recommendation is the one said.
  job.mutable_result()->mutable_recommendation()->set_deploy(v1::DEPLOY_KERNEL);
  job.mutable_result()->mutable_recommendation()->set_summary("deploy the kernel: fastest by 3.0 %");
  CHECK(cli::WatchFinishLine(job.id(), v1::JOB_STATE_DONE, &job) ==
        "job job-0b44f594c78b DONE: deploy the kernel: fastest by 3.0 %");
  // Not DONE, or the job not read: the state alone.
  CHECK(cli::WatchFinishLine("job-1", v1::JOB_STATE_FAILED, &job) == "job job-1 FAILED");
  CHECK(cli::WatchFinishLine("job-1", v1::JOB_STATE_DONE, nullptr) == "job job-1 DONE");
}

TEST_CASE("cli: get prints a recorded CPU job: slower as slower, no made-up roofline") {
  v1::Job job;
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/jobs/cpu_relu_add.job.json", &job).ok());
  std::ostringstream printed;
  cli::PrintJob(job, printed);
  const std::string out = printed.str();
  INFO(out);
  CHECK(absl::StrContains(out, "job        job-0b44f594c78b  (problem_relu_add)\n"));
  CHECK(absl::StrContains(out, "state      DONE  (round budget spent (1 rounds))\n"));
  CHECK(absl::StrContains(out, "     1 |     3.0501 |    1.31x | 1/1\n"));
  CHECK(absl::StrContains(out, "  best                3.0442 ms\n"));
  CHECK(absl::StrContains(out, "  timings         Triton's interpreter on the CPU: correctness is "
                               "real, these are not GPU times\n"));
  CHECK(absl::StrContains(out, "  starting kernel     3.4561 ms  -> 1.14x faster\n"));
  CHECK(absl::StrContains(out, "  eager PyTorch       0.1346 ms  -> 0.044x (22.61x slower)\n"));
  CHECK(absl::StrContains(out, "  torch.compile      12.9322 ms  -> 4.25x faster\n"));
  CHECK(absl::StrContains(out, "  roofline        n/a  (no hardware counters under Triton's "
                               "interpreter)\n"));
  CHECK(absl::StrContains(out, "  lineage: job-0b44f594c78b-c0 -> job-0b44f594c78b-r1-w0\n"));
  // A CPU worker's held time reads as the report says it, worker-seconds, not GPU time.
  CHECK(absl::StrContains(out, "worker time 34.0 worker-seconds (time the job held the CPU "
                               "worker's slot; no GPU was used)\n"));
  CHECK(absl::StrContains(out, " per worker-minute; "));
  CHECK_FALSE(absl::StrContains(out, "GPU-s"));
  // Slower than eager: keep eager, said with its margin over the kernel, the next fastest
  // (3.0442 / 0.1346 - 1 = 2161 %; torch.compile took 12.9322 ms).
  CHECK(absl::StrContains(out, "deploy     keep PyTorch's eager: fastest by 2161 % (over "
                               "the kernel); timed on the CPU worker (Triton's "
                               "interpreter), not on a GPU\n"));
}

TEST_CASE("cli: get prints a recorded H200 job: final-run times, slower as slower, n/a") {
  // A GPU job recorded on an H200 (tools/testdata/report/README.md says how); its export
  // has no events, so `watch` is tested on the CPU job only.
  v1::Job job;
  REQUIRE(testing::LoadJsonFixture("tools/testdata/report/gpu_h200_square_slower/job.json", &job)
              .ok());
  std::ostringstream printed;
  cli::PrintJob(job, printed);
  const std::string out = printed.str();
  INFO(out);
  CHECK(absl::StrContains(out, "job        job-ad861332d614  (01_matmul_square_fp32)\n"));
  CHECK(absl::StrContains(out, "state      DONE  (round budget spent (1 rounds))\n"));
  CHECK(absl::StrContains(out, "gpu time   19.0 GPU-seconds, GPU busy 52%\n"));
  CHECK(absl::StrContains(out, "start      CORRECT 3.2790 ms  (eager 2.6787 ms, torch.compile "
                               "2.6780 ms)\n"));
  CHECK(absl::StrContains(out, "     1 |     3.1780 |    1.03x | 3/3\n"));
  // The best kernel's block: every time from the one final run, the same as the report's.
  CHECK(absl::StrContains(out, "best kernel job-ad861332d614-r1-w0 (one final run, every time "
                               "side by side)\n"));
  CHECK(absl::StrContains(out, "  best                3.1776 ms\n"));
  CHECK(absl::StrContains(out, "  starting kernel     3.2776 ms  -> 1.03x faster\n"));
  CHECK(absl::StrContains(out, "  eager PyTorch       2.6776 ms  -> 0.84x (1.19x slower)\n"));
  CHECK(absl::StrContains(out, "  torch.compile       2.6790 ms  -> 0.84x (1.19x slower)\n"));
  CHECK(absl::StrContains(out, "  roofline        n/a  (the best kernel has no profile)\n"));
  CHECK(absl::StrContains(out, "  AI roofline     n/a  (the op signature gave no FLOPs and bytes)\n"));
  CHECK(absl::StrContains(out, "  lineage: job-ad861332d614-c0 -> job-ad861332d614-r1-w0\n"));
  CHECK_FALSE(absl::StrContains(out, "Triton's interpreter"));
  // Eager (2.6776 ms) edges torch.compile (2.6790 ms); the kernel (3.1776 ms) is slower.
  CHECK(absl::StrContains(out, "deploy     keep PyTorch's eager: fastest by 0.1 % (over "
                               "torch.compile); the kernel is 1.19x slower than eager\n"));

  // The other recorded H200 job: faster than everything, its AI roofline from the job.
  v1::Job fast;
  REQUIRE(testing::LoadJsonFixture("tools/testdata/report/gpu_h200_tall_skinny/job.json", &fast)
              .ok());
  std::ostringstream p2;
  cli::PrintJob(fast, p2);
  INFO(p2.str());
  CHECK(absl::StrContains(p2.str(), "  starting kernel     1.7725 ms  -> 1.13x faster\n"));
  CHECK(absl::StrContains(p2.str(), "  torch.compile       1.8036 ms  -> 1.15x faster\n"));
  CHECK(absl::StrContains(p2.str(), "  AI roofline     65.3%  (useful work vs the roofline at the "
                                    "op's arithmetic intensity)\n"));
  CHECK(absl::StrContains(p2.str(), "gpu time   17.1 GPU-seconds, GPU busy 45%\n"));
  CHECK(absl::StrContains(p2.str(), "deploy     deploy the kernel: fastest by "));
}

TEST_CASE("report: escapes text and holds every section") {
  CHECK(HtmlEscape("<a href=\"x\">&'") == "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  v1::Job job;
  job.set_id("job-1");
  job.mutable_problem()->set_name("matvec<script>");
  job.set_state(v1::JOB_STATE_DONE);
  auto* r = job.mutable_result();
  r->set_best_candidate_id("job-1-r1-w0");
  r->set_speedup_vs_start(2.5);
  r->mutable_best_kernel()->set_source("def f(): return 1 < 2");
  for (int i = 1; i <= 3; ++i) {
    auto* t = r->add_trajectory();
    t->set_round(i);
    t->set_best_speedup_vs_start(1.0 + i * 0.5);
  }
  r->add_lineage("job-1-c0");
  r->add_lineage("job-1-r1-w0");
  v1::Candidate c;
  c.set_id("job-1-r1-w0");
  c.mutable_measurement()->set_verdict(v1::VERDICT_CORRECT);
  c.mutable_metrics()->add_kernels();
  c.mutable_metrics()->set_roofline_efficiency_pct(88);
  std::string html = RenderHtmlReport(job, {c}, {});
  CHECK(html.find("matvec&lt;script&gt;") != std::string::npos);
  CHECK(html.find("<script>") == std::string::npos);
  CHECK(html.find("Best speedup by round") != std::string::npos);
  CHECK(html.find("<polyline") != std::string::npos);
  CHECK(html.find("Roofline") != std::string::npos);
  CHECK(html.find("2.50x") != std::string::npos);
  CHECK(html.find("1 &lt; 2") != std::string::npos);
}

}  // namespace
}  // namespace kagent
