// kagent-loadtest: a bounded load and soak benchmark of the public JobService on loopback.
//
// Starts kagentd (--kagentd PATH: the CPU worker, auth on with a two-tenant tokens file, a
// fresh SQLite database in a temporary folder) or targets one that runs (--server with
// --tokens-file and --pid). --clients threads, alternating between the two tenants, each on
// its own connection, call GetJob / ListJobs / ListCandidates / WatchJob / SubmitJob in a
// fixed mix for --duration-seconds; SubmitJob is bounded per tenant (at most one every
// --submit-interval-seconds), and the jobs run for real on the server's worker. A few GetJob
// calls ask for the other tenant's jobs and must get NOT_FOUND.
//
// Prints requests per second, p50/p99/max latency per RPC, the status codes per RPC, the
// submitted jobs' final states, and the server's resident memory (VmRSS in
// /proc/PID/status, sampled every 5 s: start, after the first minute, end, max, growth), as
// a table and then one JSON line starting with {"loadtest":.
//
// Exit status 0 when every RPC got answers (at least one OK each), every status code was
// an expected one (OK; RESOURCE_EXHAUSTED for SubmitJob: the tenant's quota of unfinished
// jobs; NOT_FOUND for the other tenant's jobs), no other tenant's job was ever returned and
// the server stayed up; 1 otherwise (the reasons are printed); 2 for bad flags or a server
// that would not start. No speed thresholds.
//
// WatchJob's latency is the time to its first event; the client then cancels the stream
// (a finished job's stream would end by itself, a running job's would not).
#include <signal.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/client.h"
#include "common/file_io.h"
#include "common/grpc_status.h"
#include "common/options.h"
#include "kagent/v1/job_service.grpc.pb.h"
#include "tools/enum_names.h"
#include "tools/loadtest_server.h"

namespace kagent {
namespace {

// --- the RPCs of the mix ---

enum Rpc { kGetJob, kListJobs, kListCandidates, kWatchJob, kSubmitJob, kGetOtherTenant, kNumRpcs };
constexpr const char* kRpcNames[kNumRpcs] = {"GetJob",   "ListJobs",  "ListCandidates",
                                             "WatchJob", "SubmitJob", "GetJob(other tenant)"};
// Relative weights of the mix; SubmitJob is further bounded by the per-tenant interval.
constexpr int kWeights[kNumRpcs] = {35, 20, 20, 10, 10, 5};

bool ExpectedCode(Rpc rpc, grpc::StatusCode code) {
  switch (rpc) {
    case kSubmitJob:
      return code == grpc::StatusCode::OK || code == grpc::StatusCode::RESOURCE_EXHAUSTED;
    case kGetOtherTenant:
      return code == grpc::StatusCode::NOT_FOUND;
    default:
      return code == grpc::StatusCode::OK;
  }
}

struct Flags {
  std::string kagentd;
  std::vector<std::string> kagentd_args;
  std::string server;
  std::string tokens_file;
  int64_t pid = 0;
  double duration_seconds = 600;
  int clients = 16;
  double rate = 0;
  double submit_interval_seconds = 30;
  int max_active_jobs_per_tenant = 4;
  std::string problem_dir = "examples/matvec_small";
  int job_rounds = 1;
  double call_timeout_seconds = 30;
  double start_timeout_seconds = 180;
  std::string work_dir;
  bool keep_work_dir = false;

  void Register(OptionSet& o) {
    o.AddString("kagentd", &kagentd, "kagentd binary to start (CPU worker, auth on); or use --server");
    o.AddStringList("kagentd-arg", &kagentd_args, "an extra flag for the kagentd it starts (repeatable)");
    o.AddString("server", &server, "host:port of a running kagentd (needs --tokens-file, --pid)");
    o.AddString("tokens-file", &tokens_file, "with --server: the server's tokens file (first two tenants used)");
    o.AddInt("pid", &pid, "with --server: the server's process id (for its memory)");
    o.AddDouble("duration-seconds", &duration_seconds, "how long the load runs (default 10 minutes)");
    o.AddInt("clients", &clients, "concurrent clients (threads, one connection each), split over 2 tenants");
    o.AddDouble("rate", &rate,
                "target requests per second of all clients together (paced per client); 0: each "
                "client calls as fast as it gets answers");
    o.AddDouble("submit-interval-seconds", &submit_interval_seconds,
                "per tenant, at most one SubmitJob every this many seconds");
    o.AddInt("max-active-jobs-per-tenant", &max_active_jobs_per_tenant,
             "passed to the kagentd it starts: unfinished jobs a tenant may have (beyond: RESOURCE_EXHAUSTED)");
    o.AddString("problem-dir", &problem_dir, "folder with problem.py and start_kernel.py for SubmitJob");
    o.AddInt("job-rounds", &job_rounds, "rounds of each submitted job (beam 1, 1 fix per kernel)");
    o.AddDouble("call-timeout-seconds", &call_timeout_seconds, "deadline of each call");
    o.AddDouble("start-timeout-seconds", &start_timeout_seconds, "how long kagentd may take to start");
    o.AddString("work-dir", &work_dir, "folder for the started kagentd's database, tokens and log (default: a new temporary one)");
    o.AddBool("keep-work-dir", &keep_work_dir, "keep the work folder at the end");
    o.AddValidator([this]() -> absl::Status {
      if (kagentd.empty() == server.empty()) {
        return absl::InvalidArgumentError("give exactly one of --kagentd and --server");
      }
      if (!server.empty() && (tokens_file.empty() || pid <= 0)) {
        return absl::InvalidArgumentError("--server needs --tokens-file and --pid");
      }
      if (!(duration_seconds > 0) || duration_seconds > 7 * 24 * 3600) {
        return absl::InvalidArgumentError("--duration-seconds must be in (0, 604800]");
      }
      if (clients < 2 || clients > 1024) return absl::InvalidArgumentError("--clients must be in [2, 1024]");
      if (!(rate >= 0)) return absl::InvalidArgumentError("--rate must be 0 or positive");
      if (!(submit_interval_seconds >= 0.1)) {
        return absl::InvalidArgumentError("--submit-interval-seconds must be at least 0.1");
      }
      if (job_rounds < 1 || job_rounds > 100) return absl::InvalidArgumentError("--job-rounds must be in [1, 100]");
      if (!(call_timeout_seconds > 0)) return absl::InvalidArgumentError("--call-timeout-seconds must be positive");
      return absl::OkStatus();
    });
  }
};

// --- shared state of the run ---

struct Tenant {
  std::string name;
  std::string token;
  absl::Mutex mu;
  std::vector<std::string> jobs ABSL_GUARDED_BY(mu);  // ids this tenant submitted or listed
  absl::Time next_submit ABSL_GUARDED_BY(mu) = absl::InfinitePast();

  std::string RandomJob(std::mt19937_64& rng) {
    absl::MutexLock l(&mu);
    if (jobs.empty()) return "";
    return jobs[std::uniform_int_distribution<size_t>(0, jobs.size() - 1)(rng)];
  }
  void AddJob(const std::string& id) {
    absl::MutexLock l(&mu);
    if (std::find(jobs.begin(), jobs.end(), id) == jobs.end()) jobs.push_back(id);
  }
  // True when this tenant may submit now (and books the slot).
  bool TakeSubmitSlot(absl::Duration interval) {
    absl::MutexLock l(&mu);
    absl::Time now = absl::Now();
    if (now < next_submit) return false;
    next_submit = now + interval;
    return true;
  }
};

// One client's results; merged after the run (no locking on the hot path).
struct Stats {
  std::vector<double> ms[kNumRpcs];
  std::map<grpc::StatusCode, int64_t> codes[kNumRpcs];
  int64_t leaks = 0;  // another tenant's job returned
  std::vector<std::string> unexpected;  // a few examples: "RPC CODE: message"

  void Record(Rpc rpc, const grpc::Status& s, double millis) {
    ms[rpc].push_back(millis);
    ++codes[rpc][s.error_code()];
    if (!ExpectedCode(rpc, s.error_code()) && unexpected.size() < 5) {
      unexpected.push_back(absl::StrCat(kRpcNames[rpc], " ", GrpcCodeName(static_cast<int>(s.error_code())), ": ",
                                        s.error_message()));
    }
  }
  void Merge(const Stats& o) {
    for (int r = 0; r < kNumRpcs; ++r) {
      ms[r].insert(ms[r].end(), o.ms[r].begin(), o.ms[r].end());
      for (auto& [c, n] : o.codes[r]) codes[r][c] += n;
    }
    leaks += o.leaks;
    for (auto& u : o.unexpected) {
      if (unexpected.size() < 10) unexpected.push_back(u);
    }
  }
};

struct Run {
  const Flags* flags;
  std::string target;
  v1::SubmitJobRequest submit;  // problem and start kernel filled
  Tenant tenants[2];
  std::atomic<bool> stop{false};
  std::atomic<int64_t> submit_seq{0};
};

std::shared_ptr<grpc::Channel> OwnChannel(const std::string& target) {
  grpc::ChannelArguments args;
  // Each client its own connection, as separate client processes would have.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(16 << 20);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

double MillisSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void ClientLoop(Run* run, int index, Stats* stats) {
  Tenant& me = run->tenants[index % 2];
  Tenant& other = run->tenants[(index + 1) % 2];
  std::mt19937_64 rng(0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(index + 1));
  std::discrete_distribution<int> pick(std::begin(kWeights), std::end(kWeights));
  auto channel = OwnChannel(run->target);
  auto stub = v1::JobService::NewStub(channel);
  CallOptions co;
  co.token = me.token;
  co.timeout = absl::Seconds(run->flags->call_timeout_seconds);
  const absl::Duration submit_interval = absl::Seconds(run->flags->submit_interval_seconds);
  // With --rate, each client paces itself at its share; a client that falls behind does
  // not burst to catch up.
  const absl::Duration pace = run->flags->rate > 0
                                  ? absl::Seconds(run->flags->clients / run->flags->rate)
                                  : absl::ZeroDuration();
  absl::Time next_call = absl::Now() + pace * std::uniform_real_distribution<double>(0, 1)(rng);

  while (!run->stop.load(std::memory_order_relaxed)) {
    if (pace > absl::ZeroDuration()) {
      absl::Time now = absl::Now();
      if (next_call > now) absl::SleepFor(std::min(next_call - now, absl::Milliseconds(250)));
      if (absl::Now() < next_call) continue;  // re-check the stop flag at least every 250 ms
      next_call = std::max(next_call + pace, absl::Now());
    }
    Rpc rpc = static_cast<Rpc>(pick(rng));
    if (rpc == kSubmitJob && !me.TakeSubmitSlot(submit_interval)) rpc = kGetJob;
    std::string job;
    if (rpc == kGetJob || rpc == kListCandidates || rpc == kWatchJob) {
      job = me.RandomJob(rng);
      if (job.empty()) rpc = kListJobs;  // nothing to look at yet
    }
    if (rpc == kGetOtherTenant) {
      job = other.RandomJob(rng);
      if (job.empty()) rpc = kListJobs;
    }
    co.request_id = absl::StrCat("loadtest-", index, "-", stats->ms[rpc].size());
    auto ctx = MakeClientContext(co);
    auto t0 = std::chrono::steady_clock::now();
    grpc::Status s;
    switch (rpc) {
      case kGetJob:
      case kGetOtherTenant: {
        v1::GetJobRequest req;
        req.set_job_id(job);
        v1::GetJobResponse resp;
        s = stub->GetJob(ctx.get(), req, &resp);
        if (s.ok() && resp.job().tenant() != me.name) ++stats->leaks;
        break;
      }
      case kListJobs: {
        v1::ListJobsRequest req;
        req.set_page_size(20);
        v1::ListJobsResponse resp;
        s = stub->ListJobs(ctx.get(), req, &resp);
        for (const v1::Job& j : resp.jobs()) {
          if (j.tenant() != me.name) {
            ++stats->leaks;
          } else {
            me.AddJob(j.id());
          }
        }
        break;
      }
      case kListCandidates: {
        v1::ListCandidatesRequest req;
        req.set_job_id(job);
        v1::ListCandidatesResponse resp;
        s = stub->ListCandidates(ctx.get(), req, &resp);
        break;
      }
      case kWatchJob: {
        v1::WatchJobRequest req;
        req.set_job_id(job);
        auto reader = stub->WatchJob(ctx.get(), req);
        v1::JobEvent e;
        bool got = reader->Read(&e);
        double first_ms = MillisSince(t0);
        if (got) {
          if (e.job_id() != job) ++stats->leaks;
          ctx->TryCancel();
          while (reader->Read(&e)) {
          }
        }
        s = reader->Finish();
        // Our own cancel after the first event is the watch answered.
        if (got && s.error_code() == grpc::StatusCode::CANCELLED) s = grpc::Status::OK;
        if (got && s.ok()) {
          stats->Record(rpc, s, first_ms);
          continue;
        }
        break;
      }
      case kSubmitJob: {
        v1::SubmitJobRequest req = run->submit;
        req.mutable_problem()->set_name(
            absl::StrCat("loadtest_", me.name, "_", run->submit_seq.fetch_add(1)));
        v1::SubmitJobResponse resp;
        s = stub->SubmitJob(ctx.get(), req, &resp);
        if (s.ok()) {
          if (resp.job().tenant() != me.name) ++stats->leaks;
          me.AddJob(resp.job().id());
        }
        break;
      }
      case kNumRpcs:
        break;
    }
    stats->Record(rpc, s, MillisSince(t0));
  }
}

double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  k = std::clamp<size_t>(k, 1, v.size()) - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}



int Main(int argc, char** argv) {
  Flags flags;
  OptionSet options("kagent-loadtest");
  flags.Register(options);
  absl::Status ps = options.Parse(argc, argv);
  if (options.help_requested()) {
    std::cout << options.Usage();
    return 0;
  }
  if (!ps.ok()) {
    std::cerr << "kagent-loadtest: " << ps.message() << "\n";
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);

  Run run;
  run.flags = &flags;
  auto problem = ReadFile(flags.problem_dir + "/problem.py");
  auto kernel = ReadFile(flags.problem_dir + "/start_kernel.py");
  if (!problem.ok() || !kernel.ok()) {
    std::cerr << "kagent-loadtest: " << (problem.ok() ? kernel.status() : problem.status()).message() << "\n";
    return 2;
  }
  run.submit.mutable_problem()->set_source(*problem);
  run.submit.mutable_start_kernel()->set_source(*kernel);
  run.submit.mutable_start_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  run.submit.mutable_config()->mutable_budget()->set_max_rounds(flags.job_rounds);
  run.submit.mutable_config()->set_beam_width(1);
  run.submit.mutable_config()->set_fixes_per_kernel(1);

  // The server: started here, or the one named.
  ServerProcess child;
  int64_t pid = flags.pid;
  std::string work = flags.work_dir;
  bool made_work = false;
  std::string log;
  if (!flags.kagentd.empty()) {
    if (work.empty()) {
      std::string tmpl = (std::filesystem::temp_directory_path() / "kagent-loadtest-XXXXXX").string();
      if (mkdtemp(tmpl.data()) == nullptr) {
        std::cerr << "kagent-loadtest: mkdtemp: " << strerror(errno) << "\n";
        return 2;
      }
      work = tmpl;
      made_work = true;
    }
    std::filesystem::create_directories(work);
    run.tenants[0].name = "tenant-a";
    run.tenants[0].token = "loadtest-token-tenant-a-0123456789";
    run.tenants[1].name = "tenant-b";
    run.tenants[1].token = "loadtest-token-tenant-b-0123456789";
    std::ofstream(work + "/tokens") << run.tenants[0].token << " " << run.tenants[0].name << "\n"
                                    << run.tenants[1].token << " " << run.tenants[1].name << "\n";
    log = work + "/kagentd.log";
    std::vector<std::string> argv = {flags.kagentd, "--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
                                     "--gpus=cpu", "--db=" + work + "/kagent.db",
                                     "--tokens-file=" + work + "/tokens",
                                     absl::StrCat("--max-active-jobs-per-tenant=", flags.max_active_jobs_per_tenant)};
    argv.insert(argv.end(), flags.kagentd_args.begin(), flags.kagentd_args.end());
    std::cerr << "kagent-loadtest: starting " << absl::StrJoin(argv, " ") << "\n";
    auto ready = child.Start(argv, log, absl::Seconds(flags.start_timeout_seconds));
    if (!ready.ok()) {
      std::cerr << "kagent-loadtest: " << ready.status().message() << "\n";
      auto text = ReadFile(log);
      if (text.ok()) std::cerr << text->substr(text->size() > 4000 ? text->size() - 4000 : 0);
      return 2;
    }
    run.target = absl::StrCat("127.0.0.1:", (*ready)["port"].get<int>());
    pid = child.pid();
  } else {
    run.target = flags.server;
    auto text = ReadFile(flags.tokens_file);
    if (!text.ok()) {
      std::cerr << "kagent-loadtest: " << text.status().message() << "\n";
      return 2;
    }
    int n = 0;
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      std::vector<std::string> f = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
      if (f.size() < 2 || f[0][0] == '#') continue;
      run.tenants[n].token = f[0];
      run.tenants[n].name = f[1];
      if (++n == 2) break;
    }
    if (n < 2) {
      std::cerr << "kagent-loadtest: " << flags.tokens_file << " needs two tenants (TOKEN TENANT lines)\n";
      return 2;
    }
  }
  {
    auto ch = OwnChannel(run.target);
    absl::Status ws = WaitForChannel(ch.get(), absl::Seconds(30));
    if (!ws.ok()) {
      std::cerr << "kagent-loadtest: cannot reach " << run.target << ": " << ws.message() << "\n";
      return 2;
    }
  }

  // Memory samples every 5 s while the load runs.
  struct Sample {
    double t;
    ProcSample p;
  };
  std::vector<Sample> samples;
  absl::Mutex samples_mu;
  const absl::Time t_start = absl::Now();
  samples.push_back({0, ReadProc(pid)});
  std::cerr << absl::StrFormat("kagent-loadtest: %d clients against %s (pid %d) for %.0f s\n",
                               flags.clients, run.target, pid, flags.duration_seconds);

  std::vector<Stats> stats(static_cast<size_t>(flags.clients));
  std::vector<std::thread> threads;
  for (int i = 0; i < flags.clients; ++i) {
    threads.emplace_back(ClientLoop, &run, i, &stats[static_cast<size_t>(i)]);
  }
  std::atomic<bool> sampler_stop{false};
  std::thread sampler([&] {
    absl::Time next = t_start + absl::Seconds(5);
    int64_t last_report = 0;
    while (!sampler_stop.load()) {
      absl::SleepFor(absl::Milliseconds(200));
      if (absl::Now() < next) continue;
      next += absl::Seconds(5);
      double t = absl::ToDoubleSeconds(absl::Now() - t_start);
      ProcSample p = ReadProc(pid);
      {
        absl::MutexLock l(&samples_mu);
        samples.push_back({t, p});
      }
      if (static_cast<int64_t>(t / 60) > last_report) {
        last_report = static_cast<int64_t>(t / 60);
        std::cerr << absl::StrFormat("kagent-loadtest: %4.0f s, server RSS %.1f MiB, %d threads\n", t,
                                     p.rss_mib, p.threads);
      }
    }
  });
  absl::Time end = t_start + absl::Seconds(flags.duration_seconds);
  bool died = false;
  while (absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(250));
    if (!flags.kagentd.empty() && !child.Alive()) {
      died = true;
      break;
    }
  }
  run.stop.store(true);
  for (auto& t : threads) t.join();
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - t_start);
  sampler_stop.store(true);
  sampler.join();
  ProcSample last = ReadProc(pid);
  {
    absl::MutexLock l(&samples_mu);
    samples.push_back({elapsed, last});
  }
  if (!flags.server.empty() && last.rss_mib < 0) died = true;

  Stats all;
  for (auto& s : stats) all.Merge(s);

  // The submitted jobs' states at the end.
  std::map<std::string, int64_t> states;
  int64_t jobs_total = 0;
  for (Tenant& t : run.tenants) {
    std::vector<std::string> ids;
    {
      absl::MutexLock l(&t.mu);
      ids = t.jobs;
    }
    auto stub = v1::JobService::NewStub(OwnChannel(run.target));
    CallOptions co;
    co.token = t.token;
    co.timeout = absl::Seconds(10);
    for (const std::string& id : ids) {
      v1::GetJobRequest req;
      req.set_job_id(id);
      v1::GetJobResponse resp;
      auto ctx = MakeClientContext(co);
      grpc::Status s = stub->GetJob(ctx.get(), req, &resp);
      ++states[s.ok() ? StateName(resp.job().state()) : std::string(GrpcCodeName(static_cast<int>(s.error_code())))];
      ++jobs_total;
    }
  }

  std::pair<double, int> stopped{0, 0};
  if (!flags.kagentd.empty() && !died) stopped = child.Stop(absl::Seconds(60));

  // --- report ---
  std::vector<std::string> failures;
  if (died) failures.push_back("the server died during the run");
  if (all.leaks > 0) failures.push_back(absl::StrCat(all.leaks, " answers carried another tenant's job"));
  nlohmann::json j;
  j["duration_seconds"] = elapsed;
  j["clients"] = flags.clients;
  j["tenants"] = 2;
  j["submit_interval_seconds"] = flags.submit_interval_seconds;
  j["rate_target"] = flags.rate;
  j["server"] = flags.kagentd.empty() ? flags.server : "kagentd --gpus=cpu (started)";
  int64_t total_calls = 0;
  std::ostringstream table;
  table << absl::StrFormat("%-22s %9s %9s %9s %9s %9s  %s\n", "rpc", "calls", "rps", "p50 ms", "p99 ms",
                           "max ms", "codes");
  for (int r = 0; r < kNumRpcs; ++r) {
    std::vector<double>& v = all.ms[r];
    int64_t n = static_cast<int64_t>(v.size());
    total_calls += n;
    double p50 = Percentile(v, 0.50), p99 = Percentile(v, 0.99);
    double mx = v.empty() ? 0 : *std::max_element(v.begin(), v.end());
    std::string codes;
    nlohmann::json jc = nlohmann::json::object();
    int64_t expected_answers = 0;
    for (auto& [c, k] : all.codes[r]) {
      absl::StrAppend(&codes, codes.empty() ? "" : " ", GrpcCodeName(static_cast<int>(c)), "=", k);
      jc[std::string(GrpcCodeName(static_cast<int>(c)))] = k;
      if (ExpectedCode(static_cast<Rpc>(r), c)) {
        if (c == grpc::StatusCode::OK || r == kGetOtherTenant) expected_answers += k;
      } else {
        failures.push_back(absl::StrCat(kRpcNames[r], " got ", GrpcCodeName(static_cast<int>(c)), " ", k, " times"));
      }
    }
    if (expected_answers == 0) {
      failures.push_back(absl::StrCat(kRpcNames[r], " never got an expected answer"));
    }
    table << absl::StrFormat("%-22s %9d %9.1f %9.2f %9.2f %9.2f  %s\n", kRpcNames[r], n,
                             static_cast<double>(n) / elapsed, p50, p99, mx, codes);
    j["rpcs"][kRpcNames[r]] = {{"calls", n},
                               {"rps", static_cast<double>(n) / elapsed},
                               {"p50_ms", p50},
                               {"p99_ms", p99},
                               {"max_ms", mx},
                               {"codes", jc}};
  }
  table << absl::StrFormat("%-22s %9d %9.1f\n", "total", total_calls,
                           static_cast<double>(total_calls) / elapsed);
  j["calls"] = total_calls;
  j["rps"] = static_cast<double>(total_calls) / elapsed;
  j["cross_tenant_leaks"] = all.leaks;
  j["jobs"]["submitted_or_listed"] = jobs_total;
  j["jobs"]["final_states"] = states;

  // Memory: start, after the first minute (or at 10% of a shorter run), end, max.
  double warm_t = std::min(60.0, elapsed / 10);
  ProcSample warm = samples.front().p;
  double rss_max = 0;
  for (auto& s : samples) {
    if (s.t <= warm_t + 2.5) warm = s.p;
    rss_max = std::max(rss_max, s.p.rss_mib);
  }
  const ProcSample& first = samples.front().p;
  j["server_rss_mib"] = {{"start", first.rss_mib},  {"after_warmup", warm.rss_mib},
                         {"warmup_seconds", warm_t}, {"end", last.rss_mib},
                         {"max", rss_max},          {"growth", last.rss_mib - first.rss_mib},
                         {"growth_after_warmup", last.rss_mib - warm.rss_mib}};
  j["server_threads"] = {{"start", first.threads}, {"end", last.threads}};
  j["server_fds"] = {{"start", first.fds}, {"end", last.fds}};
  if (!flags.kagentd.empty()) {
    j["server_stop"] = {{"seconds", stopped.first}, {"exit_status", stopped.second}};
  }
  j["ok"] = failures.empty();
  j["failures"] = failures;

  std::cout << absl::StrFormat(
      "kagent-loadtest: %.0f s, %d clients over 2 tenants, %s, SubmitJob at most every %.0f s per tenant\n",
      elapsed, flags.clients,
      flags.rate > 0 ? absl::StrFormat("paced at %.0f requests/s in all", flags.rate) : "unpaced",
      flags.submit_interval_seconds);
  std::cout << table.str();
  std::string st;
  for (auto& [k, n] : states) absl::StrAppend(&st, st.empty() ? "" : " ", k, "=", n);
  std::cout << "jobs at the end (" << jobs_total << "): " << st << "\n";
  std::cout << absl::StrFormat(
      "server RSS: start %.1f MiB, after %.0f s %.1f MiB, end %.1f MiB, max %.1f MiB; growth %+.1f MiB "
      "(%+.1f MiB after warm-up); threads %d -> %d; fds %d -> %d\n",
      first.rss_mib, warm_t, warm.rss_mib, last.rss_mib, rss_max, last.rss_mib - first.rss_mib,
      last.rss_mib - warm.rss_mib, first.threads, last.threads, first.fds, last.fds);
  if (!flags.kagentd.empty()) {
    std::cout << absl::StrFormat("server stop: SIGTERM to exit %.1f s, exit status %d\n", stopped.first,
                                 stopped.second);
  }
  std::cout << "cross-tenant answers: " << all.leaks << "\n";
  for (auto& u : all.unexpected) std::cout << "unexpected: " << u << "\n";
  for (auto& f : failures) std::cout << "FAIL: " << f << "\n";
  std::cout << nlohmann::json{{"loadtest", j}}.dump() << std::endl;

  if (!failures.empty() && !log.empty()) {
    auto text = ReadFile(log);
    if (text.ok()) std::cerr << "--- kagentd log (tail) ---\n" << text->substr(text->size() > 6000 ? text->size() - 6000 : 0);
  }
  if (made_work && !flags.keep_work_dir && failures.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(work, ec);
  } else if (!work.empty()) {
    std::cerr << "kagent-loadtest: work folder kept: " << work << "\n";
  }
  return failures.empty() ? 0 : 1;
}

}  // namespace
}  // namespace kagent

int main(int argc, char** argv) { return kagent::Main(argc, argv); }
