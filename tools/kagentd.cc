// kagentd: every kagent service in one process — the embedded default.
//
// One public gRPC server (the coordinator's JobService) on --listen; the judge, analyzer,
// orchestrator and optimization manager on an internal server (--internal-listen,
// loopback with a free port by default) that the coordinator calls over real gRPC,
// exactly as it would call them on other hosts; and one GPU worker (BenchmarkService +
// ProfilerService) per local GPU, each on its own server (--worker-listen: the first
// worker's address, port+i for worker i; loopback, free ports by default), pinned to its
// GPU. The start line on stdout names every port: port, metrics_port, internal_port and
// worker_ports (one per worker, in order). The internal servers accept only the internal
// token when auth is on (kagentd makes one when a tokens file is given without it). With no GPU (or --gpus=cpu), one worker runs candidates on the
// CPU under Triton's interpreter: correctness is real, timings are plumbing only.
// --llm-config makes the agents --llm-agents names ask the LLM (docs/llm.md): by default
// all of them, the optimization manager's brain, the analyzer's prescriptions, the
// orchestrator's reflexions and round plans and the judge's narrative.
#include <signal.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/install_paths.h"
#include "common/logging.h"
#include "common/service_main.h"
#include "common/llm/accounting.h"
#include "common/llm/circuit_breaker.h"
#include "common/llm/llm_metrics.h"
#include "common/subprocess/subprocess.h"
#include "common/llm/endpoint_probe.h"
#include "engines/llm/llm_agents.h"
#include "engines/llm/llm_brain.h"
#include "services/analyzer/analyzer_setup.h"
#include "services/benchmark/worker_setup.h"
#include "services/profiler/profiler_service.h"
#include "services/coordinator/coordinator_setup.h"
#include "services/judge/judge_setup.h"
#include "services/optimization_manager/optimization_manager_setup.h"
#include "services/orchestrator/orchestrator_setup.h"

namespace kagent {
namespace {

// Splits "host:port" (the port last, so "[::1]:0" works); the port is in [0, 65535].
absl::StatusOr<std::pair<std::string, int>> ParseListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("not host:port: ", listen));
  }
  return std::make_pair(listen.substr(0, colon), port);
}

// The address this process dials to reach its own server on `host`:`port`.
std::string DialAddress(const std::string& host, int port) {
  bool any = host == "0.0.0.0" || host == "[::]" || host == "::";
  return absl::StrCat(any ? "127.0.0.1" : host, ":", port);
}

struct DaemonOptions {
  std::string gpus = "auto";  // auto | cpu | none | 0,1,...
  std::string python;
  std::string harness_dir;
  std::string cupti_lib;
  std::string ncu = "ncu";
  std::string profiler_backend = "auto";
  std::string optimization_db;
  std::string internal_listen = "127.0.0.1:0";  // the internal services' server
  std::string worker_listen = "127.0.0.1:0";    // the first worker's server; port+i for worker i
  HarnessServerFlags harness_server;  // the workers' harness servers
  SandboxFlags sandbox;               // the workers' candidate sandbox
  std::string llm_agents = kAllLlmAgents;  // which agents ask the LLM (--llm-config)

  void Register(OptionSet& o) {
    o.AddString("gpus", &gpus,
                "GPU workers: auto (every visible GPU, else one CPU worker), cpu, none, or a "
                "list of device indices like 0,1");
    o.AddString("python", &python, "Python with torch and triton (default .venv/bin/python)");
    o.AddString("harness-dir", &harness_dir, "folder holding the kagent_harness package");
    o.AddString("cupti-lib", &cupti_lib, "libkagent_cupti.so (default: found in the build)");
    o.AddString("ncu", &ncu, "Nsight Compute CLI for the profiler");
    o.AddString("profiler-backend", &profiler_backend,
                kProfilerBackendHelp);
    o.AddString("optimization-db", &optimization_db, "optimization database file");
    o.AddString("internal-listen", &internal_listen,
                "host:port of the internal services' server (judge, analyzer, orchestrator, "
                "optimization manager); port 0 picks one");
    o.AddString("worker-listen", &worker_listen,
                "host:port of the first GPU worker's server; worker i listens on port+i "
                "(port 0: each picks one)");
    o.AddString("llm-agents", &llm_agents,
                "with --llm-config, the agents that ask the LLM, each optionally with its own "
                "model: rewrite, prescribe, reflect, plan, narrate (e.g. rewrite,prescribe=qwen-small; "
                "rewrite=model-a|model-b spreads a round's rewrites over both)");
    harness_server.Register(o);
    sandbox.Register(o);
    o.AddValidator([this]() -> absl::Status {
      if (absl::Status s = ParseLlmAgents(llm_agents).status(); !s.ok()) return s;
      if (absl::Status s = ParseProfilerBackend(profiler_backend).status(); !s.ok()) return s;
      for (const std::string* listen : {&internal_listen, &worker_listen}) {
        if (!ParseListen(*listen).ok()) {
          return absl::InvalidArgumentError(
              "--internal-listen and --worker-listen must be host:port with port in [0, 65535]");
        }
      }
      if (gpus == "auto" || gpus == "cpu" || gpus == "none") return absl::OkStatus();
      for (absl::string_view g : absl::StrSplit(gpus, ',')) {
        int i;
        if (!absl::SimpleAtoi(g, &i) || i < 0 || i > 63) {
          return absl::InvalidArgumentError("--gpus must be auto, cpu, none or indices like 0,1");
        }
      }
      return absl::OkStatus();
    });
  }
};

// How many CUDA devices the harness's Python sees (0 when none or torch is missing).
int CountCudaDevices(const std::string& python) {
  SubprocessOptions so;
  so.argv = {python, "-c", "import torch; print(torch.cuda.device_count())"};
  so.inherit_env = true;
  so.timeout = absl::Seconds(120);
  absl::StatusOr<SubprocessResult> r = RunSubprocess(so);
  int n = 0;
  if (r.ok() && r->ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(r->stdout_data), &n)) return n;
  KLOG(WARNING) << "could not count CUDA devices with " << python << ": "
                << (r.ok() ? r->Describe() + " " + r->stderr_data.substr(0, 300) : r.status().ToString());
  return 0;
}

// A loopback server with its own context (internal services, one per GPU worker).
struct Side {
  ServerOptions options;
  ServiceContext ctx;
  std::unique_ptr<ServiceHost> host;
};

absl::StatusOr<std::unique_ptr<Side>> MakeSide(const ServerOptions& main, Metrics* metrics,
                                               const Authenticator* auth, std::string listen) {
  auto side = std::make_unique<Side>();
  side->options = main;
  side->options.listen = std::move(listen);
  auto host = ServiceHost::Create(side->options, metrics);
  if (!host.ok()) return host.status();
  side->host = *std::move(host);
  side->ctx.server_options = &side->options;
  side->ctx.metrics = metrics;
  side->ctx.host = side->host.get();
  side->ctx.auth = auth;
  return side;
}

void RunStopHooks(ServiceContext& ctx) {
  for (auto it = ctx.stop_hooks_.rbegin(); it != ctx.stop_hooks_.rend(); ++it) (*it)();
}

// Probes the endpoint for each model the agents other than "rewrite" use that the rewrite
// does not (the optimization manager probes the rewrite's when it sets up its brain):
// a model the endpoint does not serve refuses the start. Nothing with "probe": false or
// a replayed cassette.
absl::Status ProbeAgentModels(const llm::LlmConfig& config, const LlmAgents& agents) {
  if (!config.probe || config.cassette_mode == llm::CassetteMode::kReplay) return absl::OkStatus();
  auto model_of = [&](const std::string& agent) {
    std::string m = agents.Model(agent);
    return m.empty() ? config.model : m;
  };
  std::set<std::string> probed;  // the rewrite's, one or several separated by '|'
  if (agents.Uses("rewrite")) {
    for (absl::string_view m : absl::StrSplit(model_of("rewrite"), '|')) probed.insert(std::string(m));
  }
  for (const auto& [agent, unused] : agents.models) {
    if (agent == "rewrite" || !probed.insert(model_of(agent)).second) continue;
    llm::LlmConfig c = config;
    c.model = model_of(agent);
    if (absl::Status s = llm::ProbeLlmEndpoint(c); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("agent ", agent, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  BlockTerminationSignals();
  SetLogService("kagentd");
  ServerOptions so;
  so.listen = "127.0.0.1:50051";
  so.metrics_listen = "127.0.0.1:9464";
  CoordinatorOptions co;
  DaemonOptions dopts;
  OptimizationManagerSetupOptions mo;
  OptionSet options("kagentd");
  so.Register(options);
  co.Register(options);
  dopts.Register(options);
  mo.RegisterLlm(options);
  absl::Status parsed = options.Parse(argc, argv);
  if (options.help_requested()) {
    std::cout << options.Usage();
    return 0;
  }
  if (!parsed.ok()) {
    std::cerr << "kagentd: " << parsed.message() << "\n";
    return 2;
  }
  if (options.SourceOf("offered-llm-agents") != "default") {
    std::cerr << "kagentd: --offered-llm-agents is set from --llm-agents (with --llm-config); "
                 "give --llm-agents instead\n";
    return 2;
  }
  // The services call each other with the internal token; with auth on and none given,
  // make one for this process.
  if (!so.tokens_file.empty() && so.internal_token.empty()) {
    std::random_device rd;
    so.internal_token = absl::StrFormat("kagentd-%016x%016x", (uint64_t{rd()} << 32) | rd(),
                                        (uint64_t{rd()} << 32) | rd());
  }
  auto auth = MakeAuthenticator(so);
  if (!auth.ok()) {
    std::cerr << "kagentd: " << auth.status().message() << "\n";
    return 2;
  }
  options.LogEffective();
  auto metrics = Metrics::Create(so.metrics_listen);
  if (!metrics.ok()) {
    KLOG(ERROR) << metrics.status();
    return 1;
  }
  Metrics* m = metrics->get();
  const Authenticator* a = auth->get();

  // 1. The internal services.
  auto internal = MakeSide(so, m, a, dopts.internal_listen);
  if (!internal.ok()) {
    KLOG(ERROR) << internal.status();
    return 1;
  }
  Side& in = **internal;
  mo.python = dopts.python;
  // With --llm-config, the optimization manager serves the LLM brain and the judge
  // narrates through the same LLM; both draw on one Accountant (the configuration's
  // default budgets), one breaker registry and one set of kagent_llm_* metrics, so a
  // job's and a tenant's budgets cover both and an endpoint has one breaker.
  // --llm-agents says which agents ask the LLM (each with its model); the others keep
  // their heuristic brains.
  JudgeServerOptions jo;
  AnalyzerServerOptions ao;
  ao.optimization_db = dopts.optimization_db;
  OrchestratorOptions oo;
  oo.optimization_db = dopts.optimization_db;
  OptimizationManagerSetupOptions om = mo;
  if (!mo.llm_config.empty()) {
    absl::StatusOr<llm::LlmConfig> config = LoadLlmConfigFile(mo.llm_config);
    if (!config.ok()) {
      KLOG(ERROR) << config.status();
      return 1;
    }
    LlmAgents agents = *ParseLlmAgents(dopts.llm_agents);  // validated with the options
    if (absl::Status probed = ProbeAgentModels(*config, agents); !probed.ok()) {
      KLOG(ERROR) << "LLM agents from " << mo.llm_config << ": " << probed;
      return 1;
    }
    llm::LlmDeps deps;
    deps.accountant = std::make_shared<llm::Accountant>(config->job_budget, config->tenant_budget);
    deps.breakers = std::make_shared<llm::CircuitBreakerRegistry>();
    deps.metrics = std::make_shared<llm::LlmMetrics>(m->registry());
    om.llm_deps = jo.llm_deps = ao.llm_deps = oo.llm_deps = deps;
    if (!agents.Uses("rewrite")) om.llm_config.clear();
    om.llm_model = agents.Model("rewrite");
    if (agents.Uses("narrate")) jo.llm_config = mo.llm_config;
    jo.llm_model = agents.Model("narrate");
    if (agents.Uses("prescribe")) ao.llm_config = mo.llm_config;
    ao.llm_model = agents.Model("prescribe");
    if (agents.Uses("reflect") || agents.Uses("plan")) oo.llm_config = mo.llm_config;
    oo.llm_agents = dopts.llm_agents;
    // A job may choose among these (JobConfig.llm_agents).
    std::vector<std::string> offered;
    for (const auto& [agent, model] : agents.models) offered.push_back(agent);
    co.offered_llm_agents = absl::StrJoin(offered, ",");
    KLOG(INFO).With("agents", dopts.llm_agents) << "LLM agents";
  }
  absl::Status s = SetUpJudge(jo, in.ctx);
  if (s.ok()) s = SetUpAnalyzer(ao, in.ctx);
  if (s.ok()) s = SetUpOrchestrator(oo, in.ctx);
  if (s.ok()) s = SetUpOptimizationManager(om, in.ctx);
  if (s.ok()) s = in.host->Start();
  if (!s.ok()) {
    KLOG(ERROR) << "internal services failed to start: " << s;
    return 1;
  }
  std::string internal_addr = DialAddress(ParseListen(dopts.internal_listen)->first, in.host->port());

  // 2. GPU workers.
  std::vector<std::pair<std::string, std::string>> devices;  // (device, index)
  std::string python = dopts.python.empty() ? DefaultPython() : dopts.python;
  if (dopts.gpus == "auto") {
    int n = CountCudaDevices(python);
    for (int i = 0; i < n; ++i) devices.push_back({"cuda", std::to_string(i)});
    if (n == 0) {
      KLOG(WARNING) << "no CUDA GPU visible: running one CPU worker under Triton's interpreter "
                       "(correctness is checked for real; timings are not GPU timings)";
      devices.push_back({"cpu", "0"});
    }
  } else if (dopts.gpus == "cpu") {
    devices.push_back({"cpu", "0"});
  } else if (dopts.gpus != "none") {
    for (absl::string_view g : absl::StrSplit(dopts.gpus, ',')) devices.push_back({"cuda", std::string(g)});
  }
  // Every file this process holds secrets in is hidden from the workers' candidates: its
  // TLS key, tokens and config files, the coordinator's database, the LLM configuration
  // and the key file it names.
  std::vector<std::string> secret_files = SecretFiles(so, options.config_path());
  for (const std::string& f : DatabaseFiles(co.db)) secret_files.push_back(f);
  if (!mo.llm_config.empty()) {
    secret_files.push_back(mo.llm_config);
    absl::StatusOr<llm::LlmConfig> config = LoadLlmConfigFile(mo.llm_config);
    if (config.ok() && !config->api_key_file.empty()) secret_files.push_back(config->api_key_file);
  }
  std::vector<std::unique_ptr<Side>> workers;
  std::string static_workers;
  const int gpu_workers = static_cast<int>(std::count_if(
      devices.begin(), devices.end(), [](const auto& d) { return d.first == "cuda"; }));
  if (co.worker_tasks == 0) {  // auto: this host's cores over its GPU workers
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    co.worker_tasks = AutoWorkerTasks(cores, gpu_workers);
    KLOG(INFO) << "worker tasks: " << co.worker_tasks << " in flight per worker (auto: "
               << cores << " CPU cores, " << gpu_workers << " GPU worker(s))";
  }
  if (co.max_concurrent_jobs == 0) {  // auto: enough jobs to keep the workers' tasks fed
    co.max_concurrent_jobs = KagentdConcurrentJobs(co.worker_tasks, gpu_workers);
    KLOG(INFO) << "jobs running at once: " << co.max_concurrent_jobs << " (auto: "
               << co.worker_tasks << " tasks in flight on each of " << gpu_workers
               << " GPU worker(s))";
  }
  // Every task in flight but the one on the GPU prepares, and a prepared candidate the
  // harness server has no room for is compiled under the slot instead.
  if (dopts.harness_server.prepared_max > 0 &&
      dopts.harness_server.prepared_max < co.worker_tasks) {
    KLOG(INFO) << "--prepared-max raised from " << dopts.harness_server.prepared_max << " to "
               << co.worker_tasks << " (--worker-tasks)";
    dopts.harness_server.prepared_max = co.worker_tasks;
  }
  auto [worker_host, worker_port] = *ParseListen(dopts.worker_listen);
  for (const auto& [device, index] : devices) {
    int port = worker_port == 0 ? 0 : worker_port + static_cast<int>(workers.size());
    if (port > 65535) {
      KLOG(ERROR) << "--worker-listen: worker " << workers.size() << " would need port " << port;
      return 1;
    }
    auto side = MakeSide(so, m, a, absl::StrCat(worker_host, ":", port));
    if (!side.ok()) {
      KLOG(ERROR) << side.status();
      return 1;
    }
    WorkerOptions wo;
    wo.device = device;
    (void)absl::SimpleAtoi(index, &wo.gpu);
    wo.python = dopts.python;
    wo.harness_dir = dopts.harness_dir;
    wo.cupti_lib = dopts.cupti_lib;
    wo.ncu = dopts.ncu;
    wo.profiler_backend = dopts.profiler_backend;
    wo.harness_server = dopts.harness_server;
    wo.sandbox = dopts.sandbox;
    wo.secret_files = secret_files;
    ResolveWorkerPaths(wo);
    s = SetUpWorker(wo, (*side)->ctx);
    if (s.ok()) s = (*side)->host->Start();
    if (!s.ok()) {
      KLOG(ERROR) << "GPU worker " << wo.worker_id << " failed to start: " << s;
      return 1;
    }
    absl::StrAppend(&static_workers, static_workers.empty() ? "" : ",", wo.worker_id, "=",
                    DialAddress(worker_host, (*side)->host->port()));
    workers.push_back(*std::move(side));
  }
  // Their harness servers start at once; each must come up (in required sandbox mode, a
  // host that cannot sandbox makes it exit saying why: kagentd then stops with that).
  for (auto& w : workers) {
    for (auto& hook : w->ctx.start_hooks_) {
      absl::Status hs = hook();
      if (!hs.ok()) {
        KLOG(ERROR) << "GPU worker failed to start: " << hs;
        std::cerr << "kagentd: a GPU worker failed to start: " << hs.message() << "\n";
        for (auto& x : workers) RunStopHooks(x->ctx);
        RunStopHooks(in.ctx);
        return 1;
      }
    }
  }
  if (workers.empty()) {
    KLOG(WARNING) << "no GPU workers (--gpus=none): jobs wait for workers to register";
  }

  // 3. The coordinator on the public server.
  auto host = ServiceHost::Create(so, m);
  if (!host.ok()) {
    KLOG(ERROR) << host.status();
    return 1;
  }
  ServiceContext ctx;
  ctx.server_options = &so;
  ctx.metrics = m;
  ctx.host = host->get();
  ctx.auth = a;
  if (!static_workers.empty()) {
    co.workers = co.workers.empty() ? static_workers : co.workers + "," + static_workers;
  }
  s = SetUpCoordinator(co, ctx, internal_addr, nullptr);
  if (s.ok()) s = (*host)->Start();
  if (!s.ok()) {
    KLOG(ERROR) << "coordinator failed to start: " << s;
    return 1;
  }
  for (auto& hook : ctx.start_hooks_) {
    absl::Status hs = hook();
    if (!hs.ok()) KLOG(ERROR) << "start hook failed: " << hs;
  }
  std::string worker_ports;
  for (const auto& w : workers) {
    absl::StrAppend(&worker_ports, worker_ports.empty() ? "" : ",", w->host->port());
  }
  std::cout << "{\"service\":\"kagentd\",\"port\":" << (*host)->port() << ",\"metrics_port\":" << m->port()
            << ",\"internal_port\":" << in.host->port() << ",\"worker_ports\":[" << worker_ports
            << "],\"workers\":" << workers.size() << "}" << std::endl;
  KLOG(INFO) << "kagentd ready on " << so.listen << " with " << workers.size() << " worker(s)";

  WaitForTerminationSignal();
  // One bound for the whole process, as for one server: every server turns NOT_SERVING
  // at once, calls in flight anywhere get --drain-seconds, then what still runs gets
  // --shutdown-grace-seconds, one deadline for all the servers. The coordinator stops
  // first (its stop hook cancels the jobs' calls), the services it calls after it.
  KLOG(INFO) << "draining: readiness NOT_SERVING";
  (*host)->SetReady(false);
  for (auto& w : workers) w->host->SetReady(false);
  in.host->SetReady(false);
  (*host)->WaitForInFlight(absl::Now() + absl::Seconds(so.drain_seconds));
  const absl::Time stop_by = absl::Now() + absl::Seconds(so.shutdown_grace_seconds);
  (*host)->ShutdownBy(stop_by);
  RunStopHooks(ctx);
  for (auto& w : workers) {
    w->host->ShutdownBy(stop_by);
    RunStopHooks(w->ctx);
  }
  in.host->ShutdownBy(stop_by);
  RunStopHooks(in.ctx);
  KLOG(INFO) << "kagentd stopped";
  return 0;
}

}  // namespace
}  // namespace kagent

int main(int argc, char** argv) { return kagent::Main(argc, argv); }
