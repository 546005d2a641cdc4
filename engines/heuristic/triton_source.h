// The Triton source reader: the @triton.jit kernels of a Python source (their parameters,
// tl.constexpr ones and their defaults, whether they call tl.dot, their @triton.autotune
// configs), the launch sites `kernel[grid](..., BLOCK_M=32, num_warps=4)` of those
// kernels, and the template id of a rendered template (first line
// `# kagent-template: <id>`). Every offset is a byte offset into the source parsed; the
// knob tuner (knob_tuner.h) rewrites the source at them.
//
// A kernel is a `def` after a `@triton.jit`, `@tl.jit` or `@jit` decorator; it is
// autotuned when a @triton.autotune decorator sits between the previous `def` and its own.
// Its configs are read when they are a list literal in the decorator (configs=... or the
// first positional argument) or a name assigned one before it, of
// triton.Config({...}, num_warps=.., num_stages=..) (or Config(...)) calls; the integer
// meta-parameters of each config's dict and its integer num_warps / num_stages are kept
// with their literals' offsets. Otherwise JitKernel::configs_problem says why not. A launch
// site is a kernel's name followed by `[grid](args)`, comments and string literals aside
// (common/python_source.h lexes the source).
//
// Pure functions; thread-safe.
#ifndef KAGENT_ENGINES_HEURISTIC_TRITON_SOURCE_H_
#define KAGENT_ENGINES_HEURISTIC_TRITON_SOURCE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kagent {

struct KernelParam {
  std::string name;
  bool constexpr_ = false;
  std::string default_text;       // empty when none
  size_t default_begin = 0;       // offsets of default_text in the source
  size_t default_end = 0;
};

// One triton.Config(...) of an autotuned kernel's configs list: its integer
// meta-parameters and num_warps / num_stages (those written), each with its literal.
struct AutotuneConfig {
  struct Value {
    int64_t value = 0;
    size_t begin = 0, end = 0;    // of the integer literal in the source
  };
  size_t begin = 0, end = 0;      // the whole call, `triton.Config(...)`
  std::map<std::string, Value> values;
};

struct JitKernel {
  std::string name;
  std::vector<KernelParam> params;
  bool autotuned = false;
  bool uses_dot = false;
  size_t def_offset = 0;
  // Autotuned kernels: the configs in list order, or why they could not be read.
  std::vector<AutotuneConfig> configs;
  std::string configs_problem;
};

struct LaunchArg {
  std::string name;               // keyword, empty for positional
  std::string value;              // trimmed text (a string literal with its quotes)
  size_t value_begin = 0;
  size_t value_end = 0;
};

struct LaunchSite {
  std::string kernel;
  std::string grid;               // the text between [ and ]
  size_t offset = 0;              // of the kernel name
  size_t close_paren = 0;         // offset of the launch's closing ')'
  std::vector<LaunchArg> args;

  const LaunchArg* Keyword(absl::string_view name) const;
};

struct TritonSourceInfo {
  std::vector<JitKernel> kernels;
  std::vector<LaunchSite> launches;   // in source order
  std::string template_id;            // from "# kagent-template: <id>", else empty

  const JitKernel* Kernel(absl::string_view name) const;
};

// Parses the Python source. INVALID_ARGUMENT when there is no @triton.jit kernel or no
// launch site of one.
absl::StatusOr<TritonSourceInfo> ParseTritonSource(absl::string_view source);

}  // namespace kagent

#endif  // KAGENT_ENGINES_HEURISTIC_TRITON_SOURCE_H_
