// LlmKernelBrain: a KernelBrain that asks a language model for kernels.
//
// FirstKernel renders the "first_kernel" prompt template and ApplyFix the
// "rewrite_kernel" one, or "repair_kernel" for a repair turn (FixRequest.repair: the
// parent failed the gate) (prompts/, documented in docs/llm.md), under the "system" prompt,
// and asks for one JSON object through llm::ChatForJson:
//   {"explanation": "...", "code": "<the complete Python file>"}
// ("code" is required; "explanation" becomes the expected effect, or "expected_effect"
// and "expected_speedup" when an overriding template asks for them). Broken or
// incomplete JSON is asked again by ChatForJson (max_json_attempts replies). The code
// must then pass ValidateKernelSource (a top-level class ModelNew and a @triton.jit
// function); when it does not, the brain appends the reply and a message naming the
// problem and asks again, up to max_source_retries times, then fails with
// FAILED_PRECONDITION.
//
// The client is the stack from llm::MakeLlmStack, so retries, the circuit breaker,
// cassettes, and accounting with budgets apply to every call. Accounting keys: the job
// id and tenant of the calling thread's LogContext (common/logging.h), which the
// optimization manager sets for each worker. The client's errors are returned with
// their code: RESOURCE_EXHAUSTED (a job or tenant budget is spent) in particular, which
// the optimization manager turns into the RPC's status so the coordinator ends the job.
//
// Every result carries the prompt (the whole conversation of the last request, with
// role headers) and the reply's text, which the optimization manager stores as the
// GeneratedKernel's prompt and reply.
//
// Thread-safe: immutable after construction; the client and the prompt library are
// thread-safe. Requests are borrowed for the duration of a call.
#ifndef KAGENT_ENGINES_LLM_LLM_BRAIN_H_
#define KAGENT_ENGINES_LLM_LLM_BRAIN_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include <prometheus/registry.h>

#include "common/llm/factory.h"
#include "common/llm/llm_client.h"
#include "common/llm/prompt_templates.h"
#include "engines/kernel_brain.h"

namespace kagent {

struct LlmBrainOptions {
  // KernelBrain::name(): the value of GenerateRequest.brain / JobConfig.brain that
  // selects this brain. Also the kernels' origin ("brain:<name>").
  std::string name = "llm";
  // Empty / 0 / unset: the client's configured model, max_tokens and temperature.
  std::string model{};
  // Several models for diversity in a round (overrides `model` when not empty): a
  // rewrite asks models[worker_index % size], a first kernel models[0]. With two or
  // more, each kernel records the model that wrote it: origin "brain:<name>/<model>" and
  // its move line ends with " (model <model>)".
  std::vector<std::string> models{};
  int max_tokens = 0;
  std::optional<double> temperature{};
  // Replies ChatForJson may request per question (>= 1).
  int max_json_attempts = 2;
  // Further questions when the code fails ValidateKernelSource (>= 0).
  int max_source_retries = 1;
};

class LlmKernelBrain : public KernelBrain {
 public:
  // `client` and `prompts` must not be null.
  LlmKernelBrain(std::shared_ptr<llm::LlmClient> client,
                 std::shared_ptr<const llm::PromptLibrary> prompts, LlmBrainOptions options);

  std::string name() const override { return options_.name; }

  // INVALID_ARGUMENT without a problem source or op signature; the client's errors
  // (see llm_client.h); INTERNAL when no reply held usable JSON; FAILED_PRECONDITION
  // when the code still fails validation after the re-asks.
  absl::StatusOr<BrainResult> FirstKernel(const FirstKernelRequest& request) override;

  // INVALID_ARGUMENT without a parent source or prescription; otherwise as FirstKernel.
  absl::StatusOr<BrainResult> ApplyFix(const FixRequest& request) override;

  const LlmBrainOptions& options() const { return options_; }

 private:
  // A repair turn (request.repair set): renders "repair_kernel" with the failed parent,
  // its verdict and error, and the fix it was written for.
  absl::StatusOr<BrainResult> Repair(const FixRequest& request, const std::string& title);
  // Renders `template_name`, asks, validates, re-asks; fills kernel, prompt, reply and
  // expected effect. `move` is the BrainResult's one move line.
  absl::StatusOr<BrainResult> Generate(absl::string_view template_name,
                                       const llm::PromptValues& values, std::string move,
                                       int worker_index);

  const std::shared_ptr<llm::LlmClient> client_;
  const std::shared_ptr<const llm::PromptLibrary> prompts_;
  const LlmBrainOptions options_;
};

// Reads and parses an LLM configuration file (the JSON that llm::ParseLlmConfigJson
// accepts). NOT_FOUND / INTERNAL when it cannot be read; INVALID_ARGUMENT prefixed with
// the path when it does not parse.
absl::StatusOr<llm::LlmConfig> LoadLlmConfigFile(const std::string& path);

// A service's LLM stack from the configuration file at `path`: LoadLlmConfigFile, then
// llm::MakeLlmStack with `deps`, whose metrics default to kagent_llm_* on `registry` (may
// be null: none). The stack's errors are prefixed with "<what> from <path>: " (e.g. "LLM
// narrator from /etc/kagent/llm.json: ...").
struct ConfiguredLlm {
  llm::LlmConfig config;
  llm::LlmStack stack;
};
absl::StatusOr<ConfiguredLlm> LoadLlmStack(const std::string& path, llm::LlmDeps deps,
                                           prometheus::Registry* registry, absl::string_view what);

}  // namespace kagent

#endif  // KAGENT_ENGINES_LLM_LLM_BRAIN_H_
