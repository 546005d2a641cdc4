// PrescriptionRanker: the interface through which the analyzer asks an agent to rank
// the optimization database's candidates for a diagnosis.
//
// The analyzer (services/analyzer) first lets the prescriber (kernel_model/prescriber.h)
// match, score and filter the database's patterns: the job's avoid-list and the
// contradiction filter are applied there, deterministically. A ranker then orders (and
// may narrow) those candidates, writing its own rationale and expected effect, and may
// choose other values for the knobs a candidate already changes. Whatever it returns
// names only the candidates it was given; the analyzer refuses anything else and falls
// back to the prescriber's own ranking for that call. The LLM implementation is
// engines/llm/llm_prescriber.h; without one the prescriber's ranking is the answer.
//
// Thread-safety: implementations must be thread-safe (one instance serves concurrent
// calls). Arguments are borrowed for the duration of the call only.
#ifndef KAGENT_ENGINES_PRESCRIPTION_RANKER_H_
#define KAGENT_ENGINES_PRESCRIPTION_RANKER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kagent/v1/analyzer_service.pb.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

struct RankedPrescriptions {
  // Best first; each a copy of one candidate (pattern_id, title, fix, expected speedup,
  // risks, template switch kept), with the ranker's rationale, expected effect and knob
  // values.
  std::vector<kagent::v1::Prescription> prescriptions;
  std::string model;   // the model asked (empty: the configuration's default)
  std::string prompt;  // the conversation sent, with role headers
  std::string reply;   // the reply used
};

class PrescriptionRanker {
 public:
  virtual ~PrescriptionRanker() = default;
  // Ranks `candidates` (the prescriber's, best first, never empty) for `request`, at
  // most `max_results`. An error makes the analyzer return the prescriber's ranking; a
  // failed call should carry its prompt and replies (llm::AttachLlmTranscript) so the
  // record keeps them.
  virtual absl::StatusOr<RankedPrescriptions> Rank(
      const kagent::v1::PrescribeRequest& request,
      const std::vector<kagent::v1::Prescription>& candidates, int max_results) = 0;
  // For logs and AgentExchange.brain ("llm:openai", ...).
  virtual std::string Name() const = 0;
};

}  // namespace kagent

#endif  // KAGENT_ENGINES_PRESCRIPTION_RANKER_H_
