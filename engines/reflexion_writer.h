// ReflexionWriter: the interface through which the orchestrator asks an agent to reflect
// on one measured attempt.
//
// The orchestrator (services/orchestrator/reflect_agent.h) first writes the heuristic
// reflexion, whose measured facts are final: whether the fix was effective (the speedup
// against the noise), the speedups, whether the diagnosis' target metric moved, and
// whether the attempt's pattern goes on the avoid-list (a failure or a regression, never
// for a fallback move). A writer reads those facts and writes the judgement around them:
// what was expected against what happened, the lessons, what to try next (pattern ids
// among the candidates it was given) and whom to blame for a failure: the pattern, or the
// rewrite that implemented it badly. The orchestrator merges the draft into the facts:
// the model can only take the attempt's pattern off the avoid-list (blaming the
// rewrite), never put one on it. The LLM implementation is engines/llm/llm_reflector.h.
//
// Thread-safety: implementations must be thread-safe (one instance serves concurrent
// calls). Arguments are borrowed for the duration of the call only.
#ifndef KAGENT_ENGINES_REFLEXION_WRITER_H_
#define KAGENT_ENGINES_REFLEXION_WRITER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

struct ReflexionInput {
  int round = 0;
  const kagent::v1::Candidate* parent = nullptr;   // required, with a correct measurement
  const kagent::v1::Candidate* attempt = nullptr;  // required, measured (any verdict)
  const kagent::v1::GpuSpec* gpu = nullptr;        // may be null
  const kagent::v1::Reflexion* facts = nullptr;    // required: the heuristic reflexion
  const std::vector<kagent::v1::Reflexion>* memory = nullptr;  // earlier rounds; may be null
  // The database's patterns a draft may name in try_next (id and title), best first.
  std::vector<kagent::v1::Prescription> next_candidates;
};

// Whom a failed or slower attempt is to be blamed on.
enum class Blame {
  kNone,     // the fix worked, or nobody is to blame (noise)
  kPattern,  // the pattern does not suit this kernel
  kRewrite,  // the rewrite implemented the pattern badly (its own bug)
};

struct ReflexionDraft {
  bool diagnosis_correct = false;
  std::string expected_vs_actual;
  std::vector<std::string> lessons;
  std::vector<std::string> avoid;     // fixes or parameter choices not to repeat (prose)
  std::vector<std::string> try_next;  // pattern ids, each among next_candidates
  Blame blame = Blame::kNone;
  std::string model;   // the model asked (empty: the configuration's default)
  std::string prompt;  // the conversation sent, with role headers
  std::string reply;   // the reply used
};

class ReflexionWriter {
 public:
  virtual ~ReflexionWriter() = default;
  // A draft for `input`. An error makes the orchestrator keep the heuristic reflexion; a
  // failed call should carry its prompt and replies (llm::AttachLlmTranscript).
  virtual absl::StatusOr<ReflexionDraft> Write(const ReflexionInput& input) = 0;
  // For logs and AgentExchange.brain ("llm:openai", ...).
  virtual std::string Name() const = 0;
};

}  // namespace kagent

#endif  // KAGENT_ENGINES_REFLEXION_WRITER_H_
