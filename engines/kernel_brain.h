// KernelBrain: the interface through which the optimization manager asks for kernels.
//
// A brain writes candidate kernels: a first correct kernel for a problem that arrives
// without one, and a new kernel that applies one prescribed fix to a parent kernel. The
// embedded implementation is kagent::HeuristicBrain (engines/heuristic); an LLM-backed
// brain implements the same interface.
//
// Thread-safety: implementations must allow concurrent calls from many threads (the
// optimization manager runs a round's assignments in parallel on one brain instance).
// Requests are borrowed for the duration of the call only.
#ifndef KAGENT_ENGINES_KERNEL_BRAIN_H_
#define KAGENT_ENGINES_KERNEL_BRAIN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

// What a brain returns: the kernel and what it expects from it.
struct BrainResult {
  kagent::v1::KernelSource kernel;
  // What the change should do and why, in numbers where the brain has them (e.g. "grid
  // grows from 64 to 2048 programs on 132 SMs"), so that a reflexion can judge it.
  std::string expected_effect;
  // The moves made, one short line each (e.g. "BLOCK_M 32 -> 16 (launch kwarg)").
  std::vector<std::string> moves;
  // Non-empty when the prescribed move could not be made on the parent and the brain made
  // another move instead: why the prescribed one did not apply (e.g. "the kernel has no
  // input_precision knob"). `moves` and `expected_effect` then describe the move made.
  std::string fallback;
  // The brain's own expected speedup of the moves made (> 1), when it has one; 0 means
  // the prescription's expected_speedup stands. Set with `fallback`.
  double expected_speedup = 0;
  // The prompt and reply when an LLM was used; empty otherwise.
  std::string prompt;
  std::string reply;
  // Alternatives to `kernel` for the same fix, which the caller may screen together with
  // it (time them all in one sandboxed process, then send only the fastest through the
  // full correctness gate and timing). Each is a complete candidate source (defines
  // ModelNew, same language as `kernel`); none is `kernel` itself and no two are the same
  // (after NormalizeSource). Ordered by the brain's own preference. A brain fills them
  // only with code it can vouch for like its own kernel: the heuristic brain with renders
  // of its own templates at neighbouring knob values, and only when `kernel` is itself
  // such a render, never around a user's kernel (untrusted code is not screened in bulk).
  // Empty when the brain has none (always, for LLM brains).
  std::vector<kagent::v1::KernelSource> variants;
};

// A repair turn: the parent is a kernel that failed the correctness gate with this
// verdict and error, and the fix is the one it was written for.
struct RepairRequest {
  std::string verdict;
  std::string error;
  int attempt = 1;
};

struct FirstKernelRequest {
  const kagent::v1::Problem* problem = nullptr;           // required
  const kagent::v1::OpSignature* signature = nullptr;     // required
  const kagent::v1::GpuSpec* gpu = nullptr;               // may be null: generic defaults
};

struct FixRequest {
  const kagent::v1::KernelSource* parent = nullptr;         // required
  const kagent::v1::Prescription* prescription = nullptr;   // required
  const kagent::v1::Problem* problem = nullptr;             // may be null
  const kagent::v1::OpSignature* signature = nullptr;       // may be null (no template moves)
  const kagent::v1::GpuSpec* gpu = nullptr;                 // may be null
  const kagent::v1::BottleneckReport* report = nullptr;     // may be null
  const kagent::v1::Measurement* measurement = nullptr;    // the parent's; may be null
  const kagent::v1::HardwareMetrics* metrics = nullptr;    // the parent's; may be null
  const std::vector<kagent::v1::Reflexion>* memory = nullptr;  // may be null
  // Which of the brain's alternatives to take when the prescription leaves the move open
  // (no knob_changes and no template_switch): workers of one round pass distinct values
  // so they get distinct fixes. 0 is the brain's first choice.
  int alternative = 0;
  // Which of the diagnosis's moves to take when the prescribed move cannot be made here
  // (the fallback): the optimization manager passes the assignment's index among the
  // assignments of the same parent, so that fallbacks of one round differ.
  int fallback_alternative = 0;
  // The assignment's worker index in the round: a brain asking several models spreads a
  // round's candidates over them by it.
  int worker_index = 0;
  // Set for a repair turn (may be null): a brain that writes code repairs the parent.
  const RepairRequest* repair = nullptr;
};

class KernelBrain {
 public:
  virtual ~KernelBrain() = default;

  // A short stable name ("heuristic", "openai:gpt-...").
  virtual std::string name() const = 0;

  // Writes a first correct kernel for the problem. Errors: INVALID_ARGUMENT for a
  // malformed request; UNIMPLEMENTED when the op class has no kernel family;
  // FAILED_PRECONDITION when the family's conditions of use do not hold (message says
  // which).
  virtual absl::StatusOr<BrainResult> FirstKernel(const FirstKernelRequest& request) = 0;

  // Applies the prescription to the parent kernel. Errors: INVALID_ARGUMENT for a
  // malformed request or knob change; FAILED_PRECONDITION when the fix cannot apply
  // (knob already at its bound, template conditions not met, autotuned knob, ...);
  // NOT_FOUND when a named knob or template does not exist.
  virtual absl::StatusOr<BrainResult> ApplyFix(const FixRequest& request) = 0;
};

}  // namespace kagent

#endif  // KAGENT_ENGINES_KERNEL_BRAIN_H_
