// OptimizationManagerServiceImpl: runs a round plan's assignments in parallel; each asks
// the brain for a new kernel (apply prescription F to parent kernel K) and checks that
// the result compiles (a Python syntax check in a child process, plus: it defines
// ModelNew and at least one @triton.jit function).
//
// Generate semantics:
//   * An empty plan with no parents means "write a first kernel": one GeneratedKernel
//     (assignment with worker_index 0) from KernelBrain::FirstKernel. The request then
//     needs the problem and its op signature.
//   * Otherwise every assignment names a parent in `parents` (INVALID_ARGUMENT when not);
//     the response has one GeneratedKernel per assignment, in plan order, with `error`
//     set (and no kernel) when generation or the compile check failed.
//   * Workers of one round get different fixes: a result whose normalized source
//     (comments, blank lines and whitespace runs removed) equals its parent's, or an
//     earlier assignment's in plan order, is reported as an error on the later one.
//   * Variants: the brain's BrainResult::variants (alternatives to the kernel for the
//     same fix, which the coordinator screens with it; the heuristic brain's renders of
//     its own templates, none from an LLM brain or around a user's kernel) go into
//     GeneratedKernel.variants in the brain's order. Each passes the same compile check
//     as the kernel; one that fails is left out (logged), the kernel stands. A variant
//     whose normalized source equals a parent's, any kernel of the response or an
//     earlier variant (plan order) is left out too, and a result with an error has none.
//   * Assignments that share a parent and leave the move open (no knob_changes, no
//     template_switch) get successive `alternative`s so the brain picks distinct moves.
//     Every assignment also gets its index among the assignments of its parent as
//     `fallback_alternative`: when the prescribed move cannot be made, the brain's
//     fallback then differs from earlier assignments' fallbacks.
//   * A result with `fallback` set (the brain made another move than the prescribed
//     one): the assignment's prescription gets `fallback`, its fix is the moves made
//     (not the pattern's text) and its expected_speedup the brain's (1.0 when it has
//     none), so the reflexion judges the move made.
//   * `brain` must be empty or the configured brain's name (FAILED_PRECONDITION else).
//   * LLM budget: `llm_tokens_left` / `llm_cost_usd_left`, when set, bound the LLM calls
//     of this request (an llm::UsageMeter, made current on every worker thread, which the
//     AccountingLlmClient of an LLM brain consults beside the Accountant's budgets). A
//     spent budget (RESOURCE_EXHAUSTED from the brain) is the RPC's status, not a
//     per-kernel error; workers not yet started are skipped. The LLM usage of the request
//     is returned in `llm_usage`, and with RESOURCE_EXHAUSTED as the status's payload
//     and the "kagent-llm-usage-bin" trailer (common/llm/usage_status.h).
//
// Thread-safety: the service is safe for concurrent RPCs. The brain and the checker must
// be thread-safe and outlive the service; `auth` may be null (auth off).
#ifndef KAGENT_SERVICES_OPTIMIZATION_MANAGER_OPTIMIZATION_MANAGER_SERVICE_H_
#define KAGENT_SERVICES_OPTIMIZATION_MANAGER_OPTIMIZATION_MANAGER_SERVICE_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/auth.h"
#include "common/source_text.h"
#include "engines/kernel_brain.h"
#include "kagent/v1/optimization_manager_service.grpc.pb.h"

namespace kagent {

// Checks that a candidate source compiles far enough to be worth measuring.
class SourceChecker {
 public:
  virtual ~SourceChecker() = default;
  // OK, or INVALID_ARGUMENT with the reason (syntax error with its line, no ModelNew,
  // no @triton.jit function or __global__ kernel); UNAVAILABLE when the checker itself could not run.
  virtual absl::Status Check(const std::string& source) = 0;
};

// Runs `python -c <script>` with the source on stdin: ast.parse, then looks for a
// top-level `class ModelNew` and a kernel of the candidate's own: a function decorated
// with triton.jit / jit (possibly under triton.autotune / triton.heuristics), or a
// `__global__` function in a string constant (CUDA C++ built with load_inline, as the
// harness's kagent_harness.kernels finds own kernels). Thread-safe.
class PythonSourceChecker : public SourceChecker {
 public:
  // `python`: the interpreter (absolute path or a name on PATH).
  explicit PythonSourceChecker(std::string python,
                               absl::Duration timeout = absl::Seconds(30));
  absl::Status Check(const std::string& source) override;

 private:
  std::string python_;
  absl::Duration timeout_;
};

struct OptimizationManagerOptions {
  int max_parallel_workers = 4;   // threads per Generate call (bounded pool)
  int max_assignments = 256;      // larger plans are INVALID_ARGUMENT
  bool check_sources = true;      // run the SourceChecker on every generated kernel
  // The interpreter of the default checker (PythonSourceChecker).
  std::string python = "python3";
  absl::Duration check_timeout = absl::Seconds(30);
};

class OptimizationManagerServiceImpl final
    : public kagent::v1::OptimizationManagerService::Service {
 public:
  // `brain` is borrowed and must outlive the service; `auth` may be null (auth off).
  // Checks sources with a PythonSourceChecker(options.python) when check_sources.
  OptimizationManagerServiceImpl(OptimizationManagerOptions options, KernelBrain* brain,
                                 const Authenticator* auth);
  // The same with another checker (tests); null disables checking.
  OptimizationManagerServiceImpl(OptimizationManagerOptions options, KernelBrain* brain,
                                 const Authenticator* auth,
                                 std::unique_ptr<SourceChecker> checker);

  grpc::Status Generate(grpc::ServerContext* context,
                        const kagent::v1::GenerateRequest* request,
                        kagent::v1::GenerateResponse* response) override;

  // The logic behind Generate, without the gRPC edge (tests, kagentd in-process calls).
  absl::Status DoGenerate(const kagent::v1::GenerateRequest& request,
                          kagent::v1::GenerateResponse* response);

 private:
  OptimizationManagerOptions options_;
  KernelBrain* brain_;
  const Authenticator* auth_;
  std::unique_ptr<SourceChecker> checker_;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_OPTIMIZATION_MANAGER_OPTIMIZATION_MANAGER_SERVICE_H_
