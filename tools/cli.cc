#include "tools/cli.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/client.h"
#include "common/file_io.h"
#include "common/grpc_status.h"
#include "common/options.h"
#include "common/proto_json.h"
#include "engines/llm/llm_agents.h"
#include "kagent/v1/job_service.grpc.pb.h"
#include "kernel_model/gpu_spec.h"
#include "tools/ablation_arms.h"
#include "tools/bench.h"
#include "tools/enum_names.h"
#include "tools/package.h"
#include "tools/report.h"

namespace kagent::cli {
namespace {

namespace fs = std::filesystem;

struct Flags {
  std::string server = "127.0.0.1:50051";
  std::string token;
  std::string tls_ca;
  std::string kernel;
  std::string name;
  std::string strategy;
  std::string brain;
  std::string llm_agents;
  std::string ablation;
  std::string state;
  std::string reason;
  std::string kernel_out;
  int rounds = 0, beam = 0, beam_width = 0, fixes_per_kernel = 0, workers = 0, limit = 50;
  int64_t from = 0;
  int64_t llm_tokens = 0;
  int64_t sweep_seed = 0;
  double llm_cost_usd = 0;
  double target_efficiency = 0;
  bool watch = false;
  bool package = false;
  double timeout_seconds = 30;
};

constexpr char kUsage[] =
    "usage: kagent [--server ADDR] [--token TOKEN] COMMAND ...\n"
    "  submit PROBLEM.py [--kernel KERNEL.py] [--rounds N] [--beam-width K]\n"
    "                    [--fixes-per-kernel M | --workers W]\n"
    "                    [--strategy beam|greedy] [--brain NAME] [--name NAME] [--watch]\n"
    "                    [--target-efficiency PCT]   stop at this % of the roofline\n"
    "                    [--llm-tokens N] [--llm-cost-usd USD]   the job's LLM budget\n"
    "                    [--llm-agents A,B]   the agents on the LLM for this job (rewrite,\n"
    "                    prescribe, reflect, plan, narrate; default the server's)\n"
    "                    [--ablation ARM] [--sweep-seed N]   a search-efficiency arm: none,\n"
    "                    no-counters, no-reflexion, blind-sweep (docs/loop.md, Ablations)\n"
    "  watch JOB [--from N]       live progress until the job ends\n"
    "  get JOB [--kernel-out F]   result table; --kernel-out writes the best kernel\n"
    "  list [--state S] [--limit N]\n"
    "  cancel JOB [--reason TEXT]\n"
    "  export JOB DIR             JSON, kernel files and report.html\n"
    "  export JOB DIR --package   the best kernel as a Python package (a torch custom op)\n"
    "  bench DIR --out OUTDIR [--rounds N] [--beam-width K] [--fixes-per-kernel M] [--only P]\n"
    "            [--concurrency N] [--without-start]   run a suite (docs/benchmarks.md)\n"
    "            [--ablation ARM] [--sweep-seed N] [--max-gpu-seconds S]   one arm of the\n"
    "            search-efficiency comparison; bench --compare --out OUTDIR RESULTS.json...\n"
    "            compares the arms\n"
    "--server defaults to $KAGENT_SERVER, else 127.0.0.1:50051; --token to $KAGENT_TOKEN.\n"
    "--beam-width K (also --beam K): kernels kept per round; --fixes-per-kernel M: fixes tried on\n"
    "each, K x M candidates a round; both 1..16, default the server's (2, 2 as shipped).\n"
    "--workers W: W candidates per round in all, i.e. W/K fixes for each of the K beam kernels;\n"
    "W must be a multiple of K, and K given (--beam-width, or 1 under --strategy greedy).\n"
    "--strategy greedy keeps one kernel a round (K = 1): a --beam-width other than 1 with it is\n"
    "refused. --kernel FILE must not be empty; leave it out to let the brain write the first.\n";



class Client {
 public:
  Client(const Flags& f, std::ostream& err) : flags_(f), err_(err) {}

  bool Connect() {
    ChannelOptions co;
    co.tls_ca = flags_.tls_ca;
    auto ch = MakeChannel(flags_.server, co);
    if (!ch.ok()) {
      err_ << "kagent: " << ch.status().message() << "\n";
      return false;
    }
    stub_ = v1::JobService::NewStub(*ch);
    return true;
  }
  std::unique_ptr<grpc::ClientContext> Ctx(bool streaming = false) {
    CallOptions o;
    o.token = flags_.token;
    o.timeout = streaming ? absl::Hours(24 * 7) : absl::Seconds(flags_.timeout_seconds);
    return MakeClientContext(o);
  }
  // Prints a failed call; returns the exit code (1).
  int Fail(const grpc::Status& s) {
    err_ << "kagent: " << GrpcCodeName(s.error_code()) << ": " << s.error_message() << "\n";
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
      err_ << "  (is the server running at " << flags_.server << "? set --server or KAGENT_SERVER)\n";
    }
    return 1;
  }
  v1::JobService::Stub* stub() { return stub_.get(); }
  // GetJob of `job_id` into `out`.
  grpc::Status GetJob(const std::string& job_id, v1::GetJobResponse* out) {
    v1::GetJobRequest req;
    req.set_job_id(job_id);
    auto ctx = Ctx();
    return stub_->GetJob(ctx.get(), req, out);
  }

 private:
  const Flags& flags_;
  std::ostream& err_;
  std::unique_ptr<v1::JobService::Stub> stub_;
};

}  // namespace

absl::Status SetAblation(absl::string_view arm, bool seed_given, int64_t seed,
                         v1::JobConfig* config) {
  v1::Ablation ablation = v1::ABLATION_NONE;
  if (!AblationOfArm(arm, &ablation) || absl::AsciiStrToLower(arm) == "full") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--ablation must be none, no-counters, no-reflexion or blind-sweep (got '", arm,
        "'); the greedy arm is --strategy greedy --fixes-per-kernel 1"));
  }
  if (absl::Status seed_ok = CheckSweepSeed(ablation, seed_given, seed); !seed_ok.ok()) {
    return seed_ok;
  }
  config->set_ablation(ablation);
  if (seed_given) config->set_sweep_seed(static_cast<uint64_t>(seed));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ParseJobLlmAgents(absl::string_view flag) {
  std::vector<std::string> agents;
  for (absl::string_view raw : absl::StrSplit(flag, ',')) {
    std::string agent(absl::StripAsciiWhitespace(raw));
    if (agent.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--llm-agents '", flag, "' has an empty entry: list agents, e.g. reflect,plan"));
    }
    if (agent.find('=') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--llm-agents: '", agent, "': a job names agents only; their models are the server's"));
    }
    if (absl::Status known = CheckLlmAgentName(agent, "--llm-agents"); !known.ok()) return known;
    if (std::find(agents.begin(), agents.end(), agent) != agents.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--llm-agents: agent '", agent, "' is listed twice"));
    }
    agents.push_back(std::move(agent));
  }
  return agents;
}

namespace {

int Watch(Client& c, const std::string& job_id, int64_t from, std::ostream& out) {
  v1::WatchJobRequest req;
  req.set_job_id(job_id);
  req.set_from_sequence(from);
  auto ctx = c.Ctx(/*streaming=*/true);
  auto reader = c.stub()->WatchJob(ctx.get(), req);
  WatchPrinter printer(out, isatty(STDOUT_FILENO) && &out == &std::cout);
  v1::JobEvent e;
  while (reader->Read(&e)) printer.Print(e);
  printer.Finish();
  grpc::Status s = reader->Finish();
  if (!s.ok()) return c.Fail(s);
  v1::JobState final_state = printer.final_state();
  if (final_state == v1::JOB_STATE_UNSPECIFIED) {
    // Resumed past the end: read the state.
    v1::GetJobResponse r;
    if (c.GetJob(job_id, &r).ok()) final_state = r.job().state();
  }
  // A DONE job's line says what to deploy (from the stored result).
  v1::GetJobResponse done;
  const bool have_job = final_state == v1::JOB_STATE_DONE && c.GetJob(job_id, &done).ok();
  out << WatchFinishLine(job_id, final_state, have_job ? &done.job() : nullptr) << "\n";
  return final_state == v1::JOB_STATE_DONE ? 0 : 3;
}

int Export(Client& c, const std::string& job_id, const std::string& dir, std::ostream& out,
           std::ostream& err) {
  v1::GetJobResponse job;
  grpc::Status s = c.GetJob(job_id, &job);
  if (!s.ok()) return c.Fail(s);
  v1::ListCandidatesRequest lc;
  lc.set_job_id(job_id);
  lc.set_include_source(true);
  v1::ListCandidatesResponse cands;
  auto ctx2 = c.Ctx();
  s = c.stub()->ListCandidates(ctx2.get(), lc, &cands);
  if (!s.ok()) return c.Fail(s);
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "kernels", ec);
  if (ec) {
    err << "kagent: cannot create " << dir << ": " << ec.message() << "\n";
    return 1;
  }
  // A file that cannot be written is reported and the others are still exported.
  int failed = 0;
  auto write = [&](const fs::path& p, const std::string& body) {
    fs::create_directories(p.parent_path(), ec);
    absl::Status written = WriteFileAtomically(p.string(), body);
    if (!written.ok()) {
      err << "kagent: " << written.message() << "\n";
      ++failed;
    }
    return written.ok();
  };
  int files = 0;
  files += write(fs::path(dir) / "job.json", ToPrettyJson(job.job()));
  files += write(fs::path(dir) / "candidates.json", ToPrettyJson(cands));
  std::vector<v1::Candidate> cv(cands.candidates().begin(), cands.candidates().end());
  std::vector<v1::Reflexion> rv(cands.reflexions().begin(), cands.reflexions().end());
  for (const auto& cand : cv) {
    if (!cand.kernel().source().empty()) {
      files += write(fs::path(dir) / "kernels" / (cand.id() + ".py"), cand.kernel().source());
    }
  }
  if (!job.job().result().best_kernel().source().empty()) {
    files += write(fs::path(dir) / "best_kernel.py", job.job().result().best_kernel().source());
  }
  // Every stored artifact (plans, metrics, reports, reflexions, prompts and replies).
  v1::GetArtifactsRequest ga;
  ga.set_job_id(job_id);
  v1::GetArtifactsResponse arts;
  auto ctx3 = c.Ctx();
  s = c.stub()->GetArtifacts(ctx3.get(), ga, &arts);
  if (s.ok()) {
    for (const auto& a : arts.artifacts()) {
      fs::path p = fs::path(dir) / "artifacts" / a.name();
      if (p.lexically_normal().string().find("..") != std::string::npos) continue;
      files += write(p, a.content());
    }
  } else {
    err << "kagent: artifacts not exported: " << s.error_message() << "\n";
  }
  files += write(fs::path(dir) / "report.html", RenderHtmlReport(job.job(), cv, rv));
  out << "exported " << files << " files to " << dir << " (open " << (fs::path(dir) / "report.html").string()
      << ")\n";
  if (failed > 0) {
    err << "kagent: " << failed << " files could not be written\n";
    return 1;
  }
  return 0;
}

// `kagent export JOB DIR --package`: the best kernel as a Python package in DIR.
int ExportPackage(Client& c, const std::string& job_id, const std::string& dir, std::ostream& out,
                  std::ostream& err) {
  v1::GetJobResponse job;
  grpc::Status s = c.GetJob(job_id, &job);
  if (!s.ok()) return c.Fail(s);
  absl::StatusOr<PythonPackage> package = RenderPythonPackage(job.job());
  if (!package.ok()) {
    err << "kagent: " << package.status().message() << "\n";
    return 1;
  }
  for (const PackageFile& file : package->files) {
    fs::path p = fs::path(dir) / file.path;
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    absl::Status written = WriteFileAtomically(p.string(), file.contents);
    if (!written.ok()) {
      err << "kagent: " << written.message() << "\n";
      return 1;
    }
  }
  const std::string folder = (fs::path(dir) / package->name).string();
  const bool cpu = MeasuredOnCpuWorker(job.job().result().best_measurement());
  out << "wrote package " << package->name << " to " << folder << "\n"
      << "  test it:  " << (cpu ? "TRITON_INTERPRET=1 " : "") << "python -m pytest " << folder
      << "\n  use it:   import " << package->name << " (with " << dir
      << " on sys.path); README.md says how\n"
      << "  next job: kagent submit PROBLEM.py --kernel " << (fs::path(folder) / "kernel.py").string()
      << "\n";
  return 0;
}

}  // namespace

int Run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  // `bench` has flags of its own: it is dispatched before the others are parsed.
  if (int rc = RunBenchIfCommand(args, out, err); rc >= 0) return rc;
  Flags f;
  OptionSet o("kagent");
  o.AddString("server", &f.server, "coordinator address");
  o.AddString("token", &f.token, "bearer token", /*secret=*/true);
  o.AddString("tls-ca", &f.tls_ca, "CA (PEM) to verify the server; enables TLS");
  o.AddString("kernel", &f.kernel, "starting kernel file (submit)");
  o.AddString("name", &f.name, "problem name (submit; default: the file name)");
  o.AddString("strategy", &f.strategy, "beam or greedy (submit)");
  o.AddString("brain", &f.brain, "brain to use (submit)");
  o.AddString("llm-agents", &f.llm_agents,
              "the agents that ask the LLM for this job, comma-separated: rewrite, prescribe, "
              "reflect, plan, narrate; the others answer heuristically (submit; default: every "
              "agent the server has on the LLM)");
  o.AddString("ablation", &f.ablation,
              "the search-efficiency arm (submit): none, no-counters, no-reflexion, blind-sweep");
  o.AddInt("sweep-seed", &f.sweep_seed, "the blind sweep's seed, >= 0 (submit)");
  o.AddString("state", &f.state, "filter by state (list)");
  o.AddString("reason", &f.reason, "why (cancel)");
  o.AddString("kernel-out", &f.kernel_out, "write the best kernel here (get)");
  o.AddInt("rounds", &f.rounds, "round budget (submit)");
  o.AddInt("beam", &f.beam, "beam width K (submit; the older spelling of --beam-width)");
  o.AddInt("beam-width", &f.beam_width, "beam width K, 1..16 (submit)");
  o.AddInt("fixes-per-kernel", &f.fixes_per_kernel,
           "fixes tried on each beam kernel per round, 1..16 (submit)");
  o.AddInt("workers", &f.workers, "candidates per round, split over the beam (submit)");
  o.AddInt("limit", &f.limit, "page size (list)");
  o.AddInt("from", &f.from, "resume from this event sequence number (watch)");
  o.AddInt("llm-tokens", &f.llm_tokens, "LLM token budget of the job (submit)");
  o.AddDouble("llm-cost-usd", &f.llm_cost_usd, "LLM cost budget of the job in US dollars (submit)");
  o.AddDouble("target-efficiency", &f.target_efficiency,
              "stop once the best kernel reaches this percent of its arithmetic-intensity "
              "roofline, of speed of light where the op gives no FLOPs/bytes (submit; "
              "default the server's, 90)");
  o.AddBool("watch", &f.watch, "after submit, watch the job");
  o.AddBool("package", &f.package,
            "export the best kernel as a Python package (a torch.library custom op) (export)");
  o.AddDouble("timeout-seconds", &f.timeout_seconds, "deadline of each unary call");
  std::vector<const char*> argv;
  argv.push_back("kagent");
  for (const auto& a : args) argv.push_back(a.c_str());
  absl::Status parsed = o.Parse(static_cast<int>(argv.size()), argv.data());
  if (o.help_requested() || (parsed.ok() && o.positional().empty())) {
    (o.help_requested() ? out : err) << kUsage;
    return o.help_requested() ? 0 : 2;
  }
  if (!parsed.ok()) {
    err << "kagent: " << parsed.message() << "\n" << kUsage;
    return 2;
  }
  const std::vector<std::string>& pos = o.positional();
  const std::string& cmd = pos[0];
  auto need = [&](size_t n, const char* what) {
    if (pos.size() != n + 1) {
      err << "kagent " << cmd << ": expected " << what << "\n" << kUsage;
      return false;
    }
    return true;
  };
  Client c(f, err);
  if (cmd == "submit") {
    if (!need(1, "PROBLEM.py")) return 2;
    v1::SubmitJobRequest req;
    absl::StatusOr<std::string> problem = ReadFile(pos[1]);
    if (!problem.ok()) {
      err << "kagent: " << problem.status().message() << "\n";
      return 2;
    }
    req.mutable_problem()->set_source(*std::move(problem));
    std::string name = f.name.empty() ? fs::path(pos[1]).stem().string() : f.name;
    req.mutable_problem()->set_name(name);
    if (!f.kernel.empty()) {
      absl::StatusOr<std::string> kernel = ReadFile(f.kernel);
      if (!kernel.ok()) {
        err << "kagent: " << kernel.status().message() << "\n";
        return 2;
      }
      if (absl::StripAsciiWhitespace(*kernel).empty()) {
        err << "kagent: --kernel " << f.kernel
            << " is empty: give the kernel's source, or leave --kernel out to let the brain "
               "write the first kernel\n";
        return 2;
      }
      req.mutable_start_kernel()->set_source(*std::move(kernel));
      bool cuda = req.start_kernel().source().find("load_inline") != std::string::npos;
      req.mutable_start_kernel()->set_language(cuda ? v1::KERNEL_LANGUAGE_CUDA : v1::KERNEL_LANGUAGE_TRITON);
      req.mutable_start_kernel()->set_origin("user:" + fs::path(f.kernel).filename().string());
    }
    v1::JobConfig* cfg = req.mutable_config();
    if (o.SourceOf("rounds") != "default") cfg->mutable_budget()->set_max_rounds(f.rounds);
    auto given = [&](const char* name) { return o.SourceOf(name) != "default"; };
    if (given("beam") && given("beam-width")) {
      err << "kagent: give --beam-width or --beam (the same flag), not both\n";
      return 2;
    }
    if (given("fixes-per-kernel") && given("workers")) {
      err << "kagent: give --fixes-per-kernel or --workers, not both\n";
      return 2;
    }
    std::optional<int> beam_width;
    if (given("beam-width")) beam_width = f.beam_width;
    if (given("beam")) beam_width = f.beam;
    if (beam_width.has_value()) {
      if (*beam_width < 1 || *beam_width > 16) {
        err << "kagent: --beam-width must be 1..16 (got " << *beam_width << ")\n" << kUsage;
        return 2;
      }
      cfg->set_beam_width(*beam_width);
    }
    if (given("fixes-per-kernel")) {
      if (f.fixes_per_kernel < 1 || f.fixes_per_kernel > 16) {
        err << "kagent: --fixes-per-kernel must be 1..16 (got " << f.fixes_per_kernel << ")\n"
            << kUsage;
        return 2;
      }
      cfg->set_fixes_per_kernel(f.fixes_per_kernel);
    }
    if (!f.strategy.empty()) {
      std::string s = absl::AsciiStrToLower(f.strategy);
      if (s == "beam") cfg->set_strategy(v1::SEARCH_STRATEGY_BEAM);
      else if (s == "greedy") cfg->set_strategy(v1::SEARCH_STRATEGY_GREEDY);
      else {
        err << "kagent: --strategy must be beam or greedy\n";
        return 2;
      }
    }
    if (given("workers")) {
      // W candidates a round are K x M: W is split over K kernels exactly or refused,
      // never rounded to another count.
      if (f.workers < 1) {
        err << "kagent: --workers must be >= 1\n";
        return 2;
      }
      std::optional<int> k = beam_width;
      if (!k.has_value() && cfg->strategy() == v1::SEARCH_STRATEGY_GREEDY) k = 1;
      if (!k.has_value()) {
        err << "kagent: --workers " << f.workers
            << " is split over the beam's K kernels: give --beam-width K with it (or "
               "--strategy greedy, where K is 1); the server's default K is not known here\n";
        return 2;
      }
      if (f.workers % *k != 0) {
        int below = f.workers / *k * *k;
        err << "kagent: --workers " << f.workers << " is not a multiple of the beam width " << *k
            << ": a round has K x M candidates; give --workers "
            << (below > 0 ? absl::StrCat(below, " or ") : "") << below + *k
            << ", or --fixes-per-kernel M\n";
        return 2;
      }
      if (f.workers / *k > 16) {
        err << "kagent: --workers " << f.workers << " over " << *k << " beam kernels is "
            << f.workers / *k << " fixes for each; at most 16 (--fixes-per-kernel's range)\n";
        return 2;
      }
      cfg->set_fixes_per_kernel(f.workers / *k);
    }
    if (!f.brain.empty()) cfg->set_brain(f.brain);
    if (given("llm-agents")) {
      absl::StatusOr<std::vector<std::string>> agents = ParseJobLlmAgents(f.llm_agents);
      if (!agents.ok()) {
        err << "kagent: " << agents.status().message() << "\n";
        return 2;
      }
      for (const std::string& a : *agents) cfg->add_llm_agents(a);
    }
    if (given("ablation") || given("sweep-seed")) {
      absl::Status ablation = SetAblation(f.ablation, given("sweep-seed"), f.sweep_seed, cfg);
      if (!ablation.ok()) {
        err << "kagent: " << ablation.message() << "\n";
        return 2;
      }
    }
    if (o.SourceOf("target-efficiency") != "default") {
      cfg->set_target_efficiency_pct(f.target_efficiency);
    }
    if (o.SourceOf("llm-tokens") != "default") cfg->mutable_budget()->set_max_llm_tokens(f.llm_tokens);
    if (o.SourceOf("llm-cost-usd") != "default") {
      cfg->mutable_budget()->set_max_llm_cost_usd(f.llm_cost_usd);
    }
    if (!c.Connect()) return 1;
    v1::SubmitJobResponse resp;
    auto ctx = c.Ctx();
    grpc::Status s = c.stub()->SubmitJob(ctx.get(), req, &resp);
    if (!s.ok()) return c.Fail(s);
    out << "submitted " << resp.job().id() << " (" << name << ")\n";
    if (f.watch) return Watch(c, resp.job().id(), 0, out);
    out << "watch it with: kagent watch " << resp.job().id() << "\n";
    return 0;
  }
  if (cmd == "watch") {
    if (!need(1, "JOB")) return 2;
    if (!c.Connect()) return 1;
    return Watch(c, pos[1], f.from, out);
  }
  if (cmd == "get") {
    if (!need(1, "JOB")) return 2;
    if (!c.Connect()) return 1;
    v1::GetJobResponse resp;
    grpc::Status s = c.GetJob(pos[1], &resp);
    if (!s.ok()) return c.Fail(s);
    PrintJob(resp.job(), out);
    if (!f.kernel_out.empty()) {
      const std::string& src = resp.job().result().best_kernel().source();
      if (src.empty()) {
        err << "kagent: job has no best kernel yet\n";
        return 1;
      }
      absl::Status written = WriteFileAtomically(f.kernel_out, src);
      if (!written.ok()) {
        err << "kagent: " << written.message() << "\n";
        return 1;
      }
      out << "best kernel written to " << f.kernel_out << "\n";
    }
    return 0;
  }
  if (cmd == "list") {
    if (!need(0, "no arguments")) return 2;
    v1::ListJobsRequest req;
    req.set_page_size(f.limit);
    if (!f.state.empty()) {
      v1::JobState st;
      std::string name = "JOB_STATE_" + absl::AsciiStrToUpper(f.state);
      if (!v1::JobState_Parse(name, &st)) {
        err << "kagent: unknown --state " << f.state
            << " (queued, baseline, rounds, done, failed, cancelled)\n";
        return 2;
      }
      req.set_state(st);
    }
    if (!c.Connect()) return 1;
    v1::ListJobsResponse resp;
    auto ctx = c.Ctx();
    grpc::Status s = c.stub()->ListJobs(ctx.get(), req, &resp);
    if (!s.ok()) return c.Fail(s);
    out << absl::StrFormat("%-18s %-10s %-6s %-9s %s\n", "JOB", "STATE", "ROUND", "SPEEDUP", "PROBLEM");
    for (const auto& j : resp.jobs()) {
      out << absl::StrFormat("%-18s %-10s %-6d %-9s %s\n", j.id(), StateName(j.state()), j.current_round(),
                             j.result().speedup_vs_start() > 0
                                 ? absl::StrFormat("%.2fx", j.result().speedup_vs_start())
                                 : "-",
                             j.problem().name());
    }
    if (!resp.next_page_token().empty()) out << "(more: raise --limit)\n";
    return 0;
  }
  if (cmd == "cancel") {
    if (!need(1, "JOB")) return 2;
    if (!c.Connect()) return 1;
    v1::CancelJobRequest req;
    req.set_job_id(pos[1]);
    req.set_reason(f.reason);
    v1::CancelJobResponse resp;
    auto ctx = c.Ctx();
    grpc::Status s = c.stub()->CancelJob(ctx.get(), req, &resp);
    if (!s.ok()) return c.Fail(s);
    out << "job " << resp.job().id() << " " << StateName(resp.job().state()) << "\n";
    return 0;
  }
  if (cmd == "export") {
    if (!need(2, "JOB DIR")) return 2;
    if (!c.Connect()) return 1;
    if (f.package) return ExportPackage(c, pos[1], pos[2], out, err);
    return Export(c, pos[1], pos[2], out, err);
  }
  err << "kagent: unknown command '" << cmd << "'\n" << kUsage;
  return 2;
}

}  // namespace kagent::cli
