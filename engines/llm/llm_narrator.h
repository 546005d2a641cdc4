// LlmNarrator: the judge's narrative seam (engines/judge_narrator.h) over a language
// model.
//
// Renders the "judge_narrative" prompt template (docs/llm.md) with the judge's report and
// the diagnosed kernel's metrics, and asks as the agent "narrate" (llm_engine::AskAgent)
// for
//   {"narrative": "...", "additional_causes": [{"metric", "value", "explanation"}]}
// ("narrative" is required; "additional_causes" may be absent or empty). Each cause
// becomes a RootCause whose evidence cites the metric and value; causes without a metric
// name or a numeric value are left out here, and the judge's ValidateNarrative then
// drops every citation that is not in the profile or does not match a measured value
// within 1%. The category and the rules' evidence never depend on this class.
//
// The result carries the conversation sent and the reply (NarrativeResult.prompt, .reply)
// for the job's record. Accounting keys are the calling thread's LogContext (the judge's
// Diagnose sets the job and tenant). Any error (budget spent, provider down, unusable
// reply) is returned with the exchange attached (llm::LlmTranscriptOf); the judge then
// falls back to the heuristic narrative.
//
// Thread-safe: immutable after construction; the client is thread-safe.
#ifndef KAGENT_ENGINES_LLM_LLM_NARRATOR_H_
#define KAGENT_ENGINES_LLM_LLM_NARRATOR_H_

#include <memory>
#include <optional>
#include <string>

#include "common/llm/llm_client.h"
#include "common/llm/prompt_templates.h"
#include "engines/judge_narrator.h"

namespace kagent {

struct LlmNarratorOptions {
  // JudgeNarrator::Name(), for logs ("llm:openai", ...).
  std::string name = "llm";
  // {{gpu}} when the judge's request gives no GpuSpec: the deployment names its GPU here.
  std::string gpu = "the profiled NVIDIA GPU";
  // Empty / 0 / unset: the client's configured defaults.
  std::string model{};
  int max_tokens = 0;
  std::optional<double> temperature{};
  // Replies the agent may request for one usable object (>= 1).
  int max_json_attempts = 2;
  // Metrics listed in the prompt at most (the diagnosed kernel's, sorted by name).
  int max_metrics = 200;
};

class LlmNarrator : public JudgeNarrator {
 public:
  // `client` and `prompts` must not be null.
  LlmNarrator(std::shared_ptr<llm::LlmClient> client,
              std::shared_ptr<const llm::PromptLibrary> prompts, LlmNarratorOptions options);

  // {{gpu}}: `gpu`'s name and ceilings when given, else `options.gpu`.
  absl::StatusOr<NarrativeResult> Narrate(const kagent::v1::BottleneckReport& report,
                                          const kagent::v1::HardwareMetrics& metrics,
                                          const kagent::v1::GpuSpec* gpu) override;
  // Renders the same template saying plainly that no hardware counters exist and why,
  // with the op class and `kernel.facts` as the only values to cite; {{gpu}} is the
  // kernel's GPU spec when given, the CPU worker's words when it ran on one, else
  // `options.gpu`.
  absl::StatusOr<NarrativeResult> NarrateWithoutProfile(const kagent::v1::BottleneckReport& report,
                                                        const UnprofiledKernel& kernel) override;
  std::string Name() const override { return options_.name; }

 private:
  // Asks with the rendered "judge_narrative" and reads the reply.
  absl::StatusOr<NarrativeResult> Ask(const llm::PromptValues& values);

  const std::shared_ptr<llm::LlmClient> client_;
  const std::shared_ptr<const llm::PromptLibrary> prompts_;
  const LlmNarratorOptions options_;
};

// {{metrics}} for the narrative prompt: "name = value" lines of the diagnosed kernel
// (the report's dominant kernel when the profile has it, else the aggregate), then the
// profile's SOL summary fields. At most `max_metrics` kernel metrics, sorted by name.
std::string FormatMetricsForPrompt(const kagent::v1::BottleneckReport& report,
                                   const kagent::v1::HardwareMetrics& metrics, int max_metrics);

}  // namespace kagent

#endif  // KAGENT_ENGINES_LLM_LLM_NARRATOR_H_
