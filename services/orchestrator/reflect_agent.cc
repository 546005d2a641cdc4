#include "services/orchestrator/reflect_agent.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/llm/transcript_status.h"
#include "common/logging.h"
#include "common/status.h"
#include "engines/llm_agent_choice.h"

namespace kagent {

std::vector<v1::Prescription> NextCandidates(const Prescriber* prescriber,
                                             const v1::ReflectRequest& request, int limit) {
  std::vector<v1::Prescription> out;
  if (prescriber == nullptr) return out;
  v1::PrescribeRequest p;
  *p.mutable_report() = request.parent().report();
  if (!request.gpu().arch().empty()) *p.mutable_gpu() = request.gpu();
  const std::string& attempt_op = request.attempt().measurement().op_signature().op_class();
  p.set_op_class(!attempt_op.empty() ? attempt_op
                                     : request.parent().measurement().op_signature().op_class());
  absl::StatusOr<std::vector<PatternMatch>> matches = prescriber->Match(p);
  if (!matches.ok()) return out;
  for (const PatternMatch& m : prescriber->Filter(*matches, {}, limit)) {
    out.push_back(Prescriber::ToPrescription(m));
  }
  return out;
}

v1::Reflexion MergeDraft(const v1::Reflexion& facts, const ReflexionDraft& draft,
                         const std::string& pattern_id) {
  v1::Reflexion r = facts;
  std::string lesson = draft.expected_vs_actual;
  if (!draft.lessons.empty()) {
    absl::StrAppend(&lesson, lesson.empty() ? "" : " ", "Lessons: ", absl::StrJoin(draft.lessons, "; "), ".");
  }
  if (!draft.avoid.empty()) {
    absl::StrAppend(&lesson, lesson.empty() ? "" : " ", "Avoid: ", absl::StrJoin(draft.avoid, "; "), ".");
  }
  if (draft.diagnosis_correct != facts.diagnosis_correct()) {
    absl::StrAppend(&lesson, lesson.empty() ? "" : " ", "The model judges the diagnosis ",
                    draft.diagnosis_correct ? "right" : "wrong", "; the rules' check says ",
                    facts.diagnosis_correct() ? "right" : "wrong", ".");
  }
  auto avoided = std::find(r.avoid_patterns().begin(), r.avoid_patterns().end(), pattern_id);
  if (draft.blame == Blame::kRewrite && !pattern_id.empty() && avoided != r.avoid_patterns().end()) {
    r.mutable_avoid_patterns()->erase(avoided);
    absl::StrAppend(&lesson, lesson.empty() ? "" : " ", "Blamed on the rewrite, not the pattern: ",
                    pattern_id, " stays off the avoid-list.");
  } else if (draft.blame == Blame::kPattern) {
    absl::StrAppend(&lesson, lesson.empty() ? "" : " ", "Blamed on the pattern.");
  }
  absl::StrAppend(&lesson, lesson.empty() ? "" : " ", "Measured: ", facts.lesson());
  r.set_lesson(std::move(lesson));
  if (!draft.try_next.empty()) {
    r.clear_try_patterns();
    for (const std::string& id : draft.try_next) {
      if (id != pattern_id || draft.blame == Blame::kRewrite || facts.fix_effective()) r.add_try_patterns(id);
    }
  }
  return r;
}

absl::StatusOr<v1::ReflectResponse> ReflectAgent::Reflect(const v1::ReflectRequest& request) {
  KAGENT_ASSIGN_OR_RETURN(v1::ReflectResponse response, heuristic_.Reflect(request));
  const v1::Candidate& parent = request.parent();
  bool parent_ok = parent.measurement().verdict() == v1::VERDICT_CORRECT &&
                   parent.measurement().candidate().median_ms() > 0;
  // A duplicate was never measured and an infrastructure error is not the kernel's:
  // neither says anything about the fix for a model to judge.
  const v1::Verdict verdict = request.attempt().measurement().verdict();
  // A job that chose its agents without "reflect" keeps the heuristic reflexion.
  if (writer_ == nullptr || !JobWantsLlmAgent(request.llm_agents(), "reflect") || !parent_ok ||
      verdict == v1::VERDICT_DUPLICATE || verdict == v1::VERDICT_INFRA_ERROR) {
    return response;
  }
  std::vector<v1::Reflexion> memory(request.memory().begin(), request.memory().end());
  ReflexionInput input;
  input.round = request.attempt().round();
  input.parent = &parent;
  input.attempt = &request.attempt();
  input.gpu = request.gpu().arch().empty() ? nullptr : &request.gpu();
  input.facts = &response.reflexion();
  input.memory = &memory;
  input.next_candidates = NextCandidates(prescriber_.get(), request, kNextCandidates);
  v1::AgentExchange* exchange = response.mutable_exchange();
  exchange->set_agent("reflect");
  exchange->set_brain(writer_->Name());
  absl::StatusOr<ReflexionDraft> draft = writer_->Write(input);
  if (!draft.ok()) {
    KLOG(WARNING).With("agent", writer_->Name())
        << "reflect agent failed, keeping the heuristic reflexion: " << absl::StatusCodeToString(draft.status().code()) << ": " << draft.status().message();
    llm::RecordAgentFallback(draft.status(), exchange);
    return response;
  }
  const std::string& pattern = response.reflexion().pattern_id();
  *response.mutable_reflexion() = MergeDraft(response.reflexion(), *draft, pattern);
  exchange->set_model(draft->model);
  exchange->set_prompt(std::move(draft->prompt));
  exchange->set_reply(std::move(draft->reply));
  return response;
}

}  // namespace kagent
