#include "engines/llm/llm_reflector.h"

#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/status.h"
#include "engines/llm/prompt_values.h"

namespace kagent {
namespace {

using kagent::v1::Candidate;
using kagent::v1::Reflexion;

constexpr char kAgent[] = "reflect";
constexpr size_t kMaxLogChars = 2000;

std::string Ms(double ms) { return absl::StrCat(llm_engine::FormatNumber(ms), " ms"); }

// A list of strings, or an error naming the key; absent is empty.
absl::StatusOr<std::vector<std::string>> Strings(const nlohmann::json& value, const char* key) {
  std::vector<std::string> out;
  auto it = value.find(key);
  if (it == value.end() || it->is_null()) return out;
  if (!it->is_array()) return absl::InvalidArgumentError(absl::StrCat("\"", key, "\" is not a list"));
  for (const nlohmann::json& item : *it) {
    if (!item.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat("\"", key, "\" holds something other than strings"));
    }
    if (!item.get<std::string>().empty()) out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace

std::string DescribeAttemptResult(const Candidate& parent, const Candidate& attempt,
                                  const Reflexion& facts) {
  const auto& am = attempt.measurement();
  std::string out = absl::StrCat("verdict: ", v1::Verdict_Name(am.verdict()));
  if (am.verdict() != v1::VERDICT_CORRECT) {
    if (!am.correctness().reason().empty()) {
      absl::StrAppend(&out, "\nthe gate's reason: ", am.correctness().reason());
    }
    if (!am.log().empty()) {
      std::string log = am.log().size() > kMaxLogChars ? am.log().substr(am.log().size() - kMaxLogChars)
                                                       : am.log();
      absl::StrAppend(&out, "\nthe harness's log (tail):\n", log);
    }
  } else {
    absl::StrAppend(&out, "\nparent median ", Ms(parent.measurement().candidate().median_ms()),
                    ", attempt median ", Ms(am.candidate().median_ms()), "; speedup over the parent ",
                    llm_engine::FormatNumber(facts.actual_speedup()), "x");
    absl::StrAppend(&out, "\nthe attempt: ", llm_engine::DescribeMeasurement(&am));
  }
  if (facts.expected_speedup() > 0) {
    absl::StrAppend(&out, "\nexpected speedup ", llm_engine::FormatNumber(facts.expected_speedup()), "x");
  }
  absl::StrAppend(&out, "\nthe fix was ", facts.fix_effective() ? "effective" : "not effective",
                  " (a speedup beyond the measurement noise)");
  if (!attempt.prescription().fallback().empty()) {
    absl::StrAppend(&out, "\nthe rewrite did not make the prescribed change: ",
                    attempt.prescription().fallback());
  }
  absl::StrAppend(&out, "\nthe rules' reading: ", facts.lesson());
  return out;
}

LlmReflexionWriter::LlmReflexionWriter(std::shared_ptr<llm::LlmClient> client,
                                       std::shared_ptr<const llm::PromptLibrary> prompts,
                                       llm_engine::AgentOptions options)
    : client_(std::move(client)), prompts_(std::move(prompts)), options_(std::move(options)) {
  KAGENT_CHECK(client_ != nullptr) << "LlmReflexionWriter needs a client";
  KAGENT_CHECK(prompts_ != nullptr) << "LlmReflexionWriter needs a prompt library";
}

absl::StatusOr<ReflexionDraft> LlmReflexionWriter::Write(const ReflexionInput& input) {
  if (input.attempt == nullptr || input.parent == nullptr || input.facts == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(options_.name, " reflect: an attempt, its parent and the facts are required"));
  }
  const Candidate& parent = *input.parent;
  const Candidate& attempt = *input.attempt;
  const Reflexion& facts = *input.facts;
  const v1::Prescription& p = attempt.prescription();
  std::string fix = !p.title().empty() ? p.title() : !p.pattern_id().empty() ? p.pattern_id()
                                                                           : std::string("(no fix named)");
  if (!p.pattern_id().empty() && p.pattern_id() != fix) absl::StrAppend(&fix, " (pattern ", p.pattern_id(), ")");
  absl::StrAppend(&fix, "\n", llm_engine::DescribeFix(p, 0));
  std::string expected = p.expected_effect().empty() ? std::string("not stated") : p.expected_effect();
  if (facts.expected_speedup() > 0) {
    absl::StrAppend(&expected, " (expected speedup ", llm_engine::FormatNumber(facts.expected_speedup()), "x)");
  }
  std::set<std::string> allowed;
  std::string next;
  for (const v1::Prescription& c : input.next_candidates) {
    if (!allowed.insert(c.pattern_id()).second) continue;
    absl::StrAppend(&next, next.empty() ? "" : "\n", "- ", c.pattern_id(), ": ",
                    c.title().empty() ? c.pattern_id() : c.title());
  }
  llm::PromptValues values = {
      {"round", absl::StrCat(input.round)},
      {"diagnosis", llm_engine::DescribeReport(parent.has_report() ? &parent.report() : nullptr)},
      {"fix", fix},
      {"expected_effect", expected},
      {"result", DescribeAttemptResult(parent, attempt, facts)},
      {"attempt_source", attempt.kernel().source().empty() ? std::string("# (no source)")
                                                           : attempt.kernel().source()},
      {"next_patterns", next.empty() ? std::string("(none: leave try_next empty)") : next},
      {"history", llm_engine::FormatLessons(input.memory)},
  };
  KAGENT_ASSIGN_OR_RETURN(
      llm_engine::AgentAnswer answer,
      llm_engine::AskAgent(*client_, *prompts_, kAgent, "reflect", values,
                           {"fix_worked", "blame", "expected_vs_actual"}, options_));
  auto refuse = [&](absl::string_view why) {
    return llm_engine::RefuseReply(answer, kAgent, options_, why);
  };
  const nlohmann::json& v = answer.value;
  if (!v.at("fix_worked").is_boolean()) return refuse("\"fix_worked\" is not true or false");
  if (v.at("fix_worked").get<bool>() != facts.fix_effective()) {
    return refuse(absl::StrCat("it says the fix ", v.at("fix_worked").get<bool>() ? "worked" : "failed",
                               ", but the measurement says it was ",
                               facts.fix_effective() ? "effective" : "not effective", " (",
                               v1::Verdict_Name(attempt.measurement().verdict()), ", ",
                               llm_engine::FormatNumber(facts.actual_speedup()), "x)"));
  }
  ReflexionDraft draft;
  const std::string blame = v.at("blame").is_string() ? v.at("blame").get<std::string>() : "";
  if (blame == "pattern") {
    draft.blame = Blame::kPattern;
  } else if (blame == "rewrite") {
    draft.blame = Blame::kRewrite;
  } else if (blame != "none") {
    return refuse("\"blame\" is not one of \"pattern\", \"rewrite\", \"none\"");
  }
  if (!v.at("expected_vs_actual").is_string()) return refuse("\"expected_vs_actual\" is not a string");
  draft.expected_vs_actual = v.at("expected_vs_actual").get<std::string>();
  auto diagnosis = v.find("diagnosis_correct");
  if (diagnosis != v.end() && !diagnosis->is_boolean() && !diagnosis->is_null()) {
    return refuse("\"diagnosis_correct\" is not true or false");
  }
  draft.diagnosis_correct = diagnosis != v.end() && diagnosis->is_boolean() ? diagnosis->get<bool>()
                                                                            : facts.diagnosis_correct();
  for (const auto& [key, target] : {std::pair{"lessons", &draft.lessons},
                                    std::pair{"avoid", &draft.avoid},
                                    std::pair{"try_next", &draft.try_next}}) {
    absl::StatusOr<std::vector<std::string>> list = Strings(v, key);
    if (!list.ok()) return refuse(list.status().message());
    *target = *std::move(list);
  }
  for (const std::string& id : draft.try_next) {
    if (!allowed.count(id)) {
      return refuse(absl::StrCat("try_next names '", id, "', which is not among the database's candidates (",
                                 allowed.empty() ? std::string("none") : absl::StrJoin(allowed, ", "), ")"));
    }
  }
  draft.model = options_.model;
  draft.prompt = std::move(answer.prompt);
  draft.reply = std::move(answer.reply);
  return draft;
}

}  // namespace kagent
