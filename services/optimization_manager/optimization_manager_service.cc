#include "services/optimization_manager/optimization_manager_service.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/grpc_status.h"
#include "common/llm/accounting.h"
#include "common/llm/endpoint_failure.h"
#include "common/llm/transcript_status.h"
#include "common/llm/usage_status.h"
#include "common/source_text.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/subprocess/subprocess.h"

namespace kagent {
namespace {

using kagent::v1::GeneratedKernel;
using kagent::v1::GenerateRequest;
using kagent::v1::GenerateResponse;

// Reads the candidate on stdin; exit 0 when it parses and has ModelNew and a kernel of its
// own (a jit function, or a __global__ function in a string: CUDA C++ for load_inline, as
// the harness finds its own kernels), else exit 1 with one line on stdout saying why.
constexpr char kCheckScript[] = R"py(
import ast, re, sys
src = sys.stdin.read()
try:
    tree = ast.parse(src)
except SyntaxError as e:
    print(f"syntax error at line {e.lineno}: {e.msg}")
    sys.exit(1)
def is_jit(d):
    if isinstance(d, ast.Call):
        d = d.func
    name = ast.unparse(d) if hasattr(ast, "unparse") else ""
    return name.split(".")[-1] in ("jit",)
has_model = any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body)
has_jit = any(isinstance(n, ast.FunctionDef) and any(is_jit(d) for d in n.decorator_list)
              for n in ast.walk(tree))
if not has_model:
    print("no top-level class ModelNew")
    sys.exit(1)
GLOBAL = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:static\s+)?void\s+[A-Za-z_]")
has_cuda = any(isinstance(n, ast.Constant) and isinstance(n.value, str) and GLOBAL.search(n.value)
               for n in ast.walk(tree))
if not has_jit and not has_cuda:
    print("no @triton.jit function (or __global__ kernel in a CUDA source string)")
    sys.exit(1)
)py";

}  // namespace

PythonSourceChecker::PythonSourceChecker(std::string python, absl::Duration timeout)
    : python_(std::move(python)), timeout_(timeout) {}

absl::Status PythonSourceChecker::Check(const std::string& source) {
  SubprocessOptions opts;
  opts.argv = {python_, "-I", "-c", kCheckScript};
  opts.inherit_env = true;
  opts.stdin_data = source;
  opts.timeout = timeout_;
  opts.max_output_bytes = 64 << 10;
  opts.rlimit_as_bytes = int64_t{4} << 30;
  absl::StatusOr<SubprocessResult> r = RunSubprocess(opts);
  if (!r.ok()) {
    return absl::UnavailableError(absl::StrCat("source check could not run ", python_, ": ",
                                               r.status().message()));
  }
  if (r->ok()) return absl::OkStatus();
  if (r->exited && r->exit_code == 1) {
    return absl::InvalidArgumentError(
        std::string(absl::StripAsciiWhitespace(r->stdout_data)));
  }
  return absl::UnavailableError(absl::StrCat("source check failed: ", r->Describe(), ": ",
                                             absl::StripAsciiWhitespace(r->stderr_data)));
}


OptimizationManagerServiceImpl::OptimizationManagerServiceImpl(
    OptimizationManagerOptions options, KernelBrain* brain, const Authenticator* auth)
    : OptimizationManagerServiceImpl(
          options, brain, auth,
          options.check_sources
              ? std::make_unique<PythonSourceChecker>(options.python, options.check_timeout)
              : nullptr) {}

OptimizationManagerServiceImpl::OptimizationManagerServiceImpl(
    OptimizationManagerOptions options, KernelBrain* brain, const Authenticator* auth,
    std::unique_ptr<SourceChecker> checker)
    : options_(std::move(options)), brain_(brain), auth_(auth), checker_(std::move(checker)) {
  KAGENT_CHECK(brain_ != nullptr) << "the optimization manager needs a brain";
  options_.max_parallel_workers = std::max(1, options_.max_parallel_workers);
}

grpc::Status OptimizationManagerServiceImpl::Generate(grpc::ServerContext* context,
                                                      const GenerateRequest* request,
                                                      GenerateResponse* response) {
  KAGENT_AUTHENTICATE_INTERNAL(caller, auth_, context);
  LogScope scope({.job_id = request->job_id(), .request_id = caller.request_id,
                  .tenant = caller.tenant});
  absl::Status status = DoGenerate(*request, response);
  llm::AddLlmUsageTrailer(status, context);
  return ToGrpcStatus(status);
}

absl::Status OptimizationManagerServiceImpl::DoGenerate(const GenerateRequest& request,
                                                        GenerateResponse* response) {
  if (!request.brain().empty() && request.brain() != brain_->name()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "brain '", request.brain(), "' is not served here (this manager runs '",
        brain_->name(), "')"));
  }
  const auto& assignments = request.plan().assignments();
  if (assignments.size() > options_.max_assignments) {
    return absl::InvalidArgumentError(absl::StrCat("plan has ", assignments.size(),
                                                   " assignments; at most ",
                                                   options_.max_assignments));
  }
  const bool first_kernel = assignments.empty() && request.parents().empty();
  if (first_kernel) {
    if (request.problem().source().empty()) {
      return absl::InvalidArgumentError("a first-kernel request needs problem.source");
    }
    if (request.op_signature().ops().empty()) {
      return absl::InvalidArgumentError(
          "a first-kernel request needs the problem's op_signature (no ops given)");
    }
  }
  for (int i = 0; i < assignments.size(); ++i) {
    const auto& a = assignments[i];
    auto it = request.parents().find(a.parent_kernel_id());
    if (it == request.parents().end()) {
      return absl::InvalidArgumentError(absl::StrCat("assignment ", i, ": parent '",
                                                     a.parent_kernel_id(),
                                                     "' is not in parents"));
    }
    if (it->second.source().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("parent '", a.parent_kernel_id(), "' has an empty source"));
    }
  }

  // Work items: one per assignment, or the single first-kernel item.
  const int count = first_kernel ? 1 : assignments.size();
  std::vector<GeneratedKernel> results(count);
  std::vector<int> alternatives(count, 0);
  std::vector<int> fallback_alternatives(count, 0);
  {
    std::map<std::string, int> open_moves;  // parent -> assignments without explicit move
    std::map<std::string, int> per_parent;  // parent -> assignments so far
    for (int i = 0; i < assignments.size(); ++i) {
      const auto& p = assignments[i].prescription();
      if (p.knob_changes().empty() && p.template_switch().empty()) {
        alternatives[i] = open_moves[assignments[i].parent_kernel_id() + "\n" + p.pattern_id()]++;
      }
      fallback_alternatives[i] = per_parent[assignments[i].parent_kernel_id()]++;
    }
  }
  std::vector<kagent::v1::Reflexion> memory(request.memory().begin(), request.memory().end());
  // What is left of the job's LLM budget bounds this request's LLM calls; the meter also
  // counts them for the reply.
  llm::MeterLimits limits;
  if (request.has_llm_tokens_left()) limits.max_tokens = request.llm_tokens_left();
  if (request.has_llm_cost_usd_left()) limits.max_cost_usd = request.llm_cost_usd_left();
  llm::UsageMeter meter(limits, absl::StrCat("job ", request.job_id().empty() ? "(none)"
                                                                               : request.job_id(),
                                             " (what its budget had left for this request)"));
  // A spent LLM budget (RESOURCE_EXHAUSTED from the brain) is the RPC's status, not a
  // per-kernel error: the coordinator ends the job cleanly on it. Workers not yet started
  // when it happens are skipped.
  std::atomic<bool> budget_spent{false};
  std::vector<absl::Status> brain_errors(count);
  auto work = [&](int i) {
    GeneratedKernel& out = results[i];
    if (budget_spent.load()) return;
    absl::StatusOr<BrainResult> r;
    if (first_kernel) {
      out.mutable_assignment()->set_worker_index(0);
      FirstKernelRequest fk{&request.problem(), &request.op_signature(),
                            request.has_gpu() ? &request.gpu() : nullptr};
      r = brain_->FirstKernel(fk);
    } else {
      const auto& a = assignments[i];
      *out.mutable_assignment() = a;
      FixRequest fr;
      fr.parent = &request.parents().at(a.parent_kernel_id());
      if (auto rep = request.parent_reports().find(a.parent_kernel_id());
          rep != request.parent_reports().end()) {
        fr.report = &rep->second;
      }
      if (auto m = request.parent_measurements().find(a.parent_kernel_id());
          m != request.parent_measurements().end()) {
        fr.measurement = &m->second;
      }
      if (auto hm = request.parent_metrics().find(a.parent_kernel_id());
          hm != request.parent_metrics().end()) {
        fr.metrics = &hm->second;
      }
      fr.prescription = &a.prescription();
      fr.problem = &request.problem();
      fr.signature = &request.op_signature();
      fr.gpu = request.has_gpu() ? &request.gpu() : nullptr;
      fr.memory = &memory;
      fr.alternative = alternatives[i];
      fr.fallback_alternative = fallback_alternatives[i];
      fr.worker_index = a.worker_index();
      RepairRequest repair;
      if (auto rp = request.repairs().find(a.parent_kernel_id()); rp != request.repairs().end()) {
        repair = {rp->second.verdict(), rp->second.error(), rp->second.attempt()};
        fr.repair = &repair;
      }
      r = brain_->ApplyFix(fr);
    }
    if (!r.ok()) {
      if (absl::IsResourceExhausted(r.status())) {
        budget_spent.store(true);
        brain_errors[i] = r.status();
      }
      const std::string status = absl::StrCat(absl::StatusCodeToString(r.status().code()), ": ",
                                              r.status().message());
      out.set_error(absl::StrCat("generation failed: ", status));
      // What the model was asked and answered, kept for the record though no kernel came
      // of it (unusable replies).
      if (std::optional<llm::LlmTranscript> t = llm::LlmTranscriptOf(r.status())) {
        out.set_prompt(std::move(t->prompt));
        out.set_reply(std::move(t->reply));
      }
      // The endpoint's failure (down, the model not served, the key refused): flagged so
      // the coordinator holds it against the endpoint, not the fix.
      if (const llm::EndpointFailure f = llm::EndpointFailureOf(r.status());
          f != llm::EndpointFailure::kNone) {
        kagent::v1::LlmEndpointFailure* ef = out.mutable_endpoint_failure();
        ef->set_message(status);
        ef->set_permanent(f == llm::EndpointFailure::kPermanent);
        if (std::optional<absl::Duration> after = llm::RetryAfterOf(r.status())) {
          ef->set_retry_after_seconds(absl::ToDoubleSeconds(*after));
        }
        KLOG(WARNING).With("worker", out.assignment().worker_index())
            << "the LLM endpoint failed: " << status;
      }
      return;
    }
    // Kept also when the compile check below rejects the kernel.
    out.set_prompt(r->prompt);
    out.set_reply(r->reply);
    if (checker_ != nullptr) {
      absl::Status check = checker_->Check(r->kernel.source());
      if (!check.ok()) {
        out.set_error(absl::StrCat("compile check failed: ", check.message()));
        return;
      }
    }
    *out.mutable_kernel() = r->kernel;
    // The variants (the brain's alternatives for the screen) pass the same check; one
    // that fails is left out, the kernel stands.
    for (kagent::v1::KernelSource& v : r->variants) {
      if (checker_ != nullptr) {
        absl::Status check = checker_->Check(v.source());
        if (!check.ok()) {
          KLOG(WARNING).With("worker", out.assignment().worker_index())
              << "variant left out: compile check failed: " << check.message();
          continue;
        }
      }
      *out.add_variants() = std::move(v);
    }
    std::string moves;
    for (const std::string& m : r->moves) absl::StrAppend(&moves, moves.empty() ? "" : "\n", m);
    // The expected effect travels in the assignment's prescription so the reflexion
    // compares against what this kernel was meant to do.
    kagent::v1::Prescription* rx = out.mutable_assignment()->mutable_prescription();
    if (!r->expected_effect.empty()) rx->set_expected_effect(r->expected_effect);
    if (!r->fallback.empty()) {
      // Another move than the prescribed one: the record names the move made, its
      // expected speedup and why, so the reflexion judges that move, not the pattern.
      rx->set_fallback(r->fallback);
      rx->set_fix(moves);
      rx->set_expected_speedup(r->expected_speedup > 0 ? r->expected_speedup : 1.0);
    } else if (!moves.empty()) {
      rx->set_fix(rx->fix().empty() ? moves : absl::StrCat(rx->fix(), "\n", moves));
    }
  };

  const int threads = std::min(count, options_.max_parallel_workers);
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  pool.reserve(threads);
  // The workers log, and a brain accounts its LLM calls, under the caller's job and tenant.
  LogContext log_context = CurrentLogContext();
  if (log_context.job_id.empty()) log_context.job_id = request.job_id();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&]() {
      LogScope scope(log_context);
      llm::ScopedUsageMeter metered(&meter);
      for (int i = next++; i < count; i = next++) work(i);
    });
  }
  for (std::thread& t : pool) t.join();
  const llm::UsageTotals used = meter.Totals();
  *response->mutable_llm_usage() = llm::ToLlmUsage(used);
  for (const absl::Status& e : brain_errors) {
    if (!e.ok()) {
      KLOG(WARNING).With("llm_tokens", used.tokens()).With("llm_cost_usd", used.cost_usd)
          << "brain budget spent: " << e.ToString();
      absl::Status spent = e;
      llm::AttachLlmUsage(response->llm_usage(), &spent);  // the caller gets no response, only the status
      return spent;
    }
  }

  // Duplicates: same as the parent, or as an earlier assignment's kernel.
  std::map<std::string, int> seen;
  for (int i = 0; i < count; ++i) {
    GeneratedKernel& g = results[i];
    if (!g.has_kernel()) continue;
    std::string norm = NormalizeSource(g.kernel().source());
    if (!first_kernel) {
      const auto& parent = request.parents().at(g.assignment().parent_kernel_id());
      if (NormalizeSource(parent.source()) == norm) {
        g.clear_kernel();
        g.clear_variants();
        g.set_duplicate(true);
        g.set_error("duplicate: the fix left the parent kernel unchanged");
        continue;
      }
    }
    auto [it, inserted] = seen.emplace(norm, i);
    if (!inserted) {
      g.clear_kernel();
      g.clear_variants();
      g.set_duplicate(true);
      g.set_error(absl::StrCat("duplicate: same kernel as assignment ", it->second,
                               " (worker ", results[it->second].assignment().worker_index(),
                               ")"));
    }
  }
  // Variants: none that is a parent, a kernel of this response or an earlier variant
  // (in plan order), so no source is screened or measured twice in a round.
  std::set<std::string> taken;
  for (const auto& [id, parent] : request.parents()) taken.insert(NormalizeSource(parent.source()));
  for (const auto& [norm, i] : seen) taken.insert(norm);
  int variants = 0;
  for (GeneratedKernel& g : results) {
    google::protobuf::RepeatedPtrField<kagent::v1::KernelSource> kept;
    for (kagent::v1::KernelSource& v : *g.mutable_variants()) {
      if (taken.insert(NormalizeSource(v.source())).second) *kept.Add() = std::move(v);
    }
    g.mutable_variants()->Swap(&kept);
    variants += g.variants_size();
  }
  int ok = 0;
  for (GeneratedKernel& g : results) {
    ok += g.has_kernel();
    *response->add_kernels() = std::move(g);
  }
  KLOG(INFO).With("generated", ok).With("requested", count).With("variants", variants)
          .With("llm_tokens", used.tokens()).With("llm_cost_usd", used.cost_usd)
      << (first_kernel ? "first kernel" : "round generated");
  return absl::OkStatus();
}

}  // namespace kagent
