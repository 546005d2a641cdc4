#include "engines/llm/llm_prescriber.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/status.h"
#include "engines/llm/prompt_values.h"

namespace kagent {
namespace {

using kagent::v1::Prescription;

constexpr char kAgent[] = "prescribe";

std::string KnobList(const Prescription& p) {
  std::map<std::string, std::string> sorted(p.knob_changes().begin(), p.knob_changes().end());
  std::vector<std::string> parts;
  for (const auto& [knob, value] : sorted) parts.push_back(absl::StrCat(knob, "=", value));
  return absl::StrJoin(parts, ", ");
}

std::string KnobNames(const Prescription& p) {
  std::set<std::string> names;
  for (const auto& [knob, value] : p.knob_changes()) names.insert(knob);
  return names.empty() ? std::string("none") : absl::StrJoin(names, ", ");
}

std::string StringOr(const nlohmann::json& entry, const char* key, const std::string& other) {
  auto it = entry.find(key);
  if (it == entry.end() || !it->is_string() || it->get<std::string>().empty()) return other;
  return it->get<std::string>();
}

}  // namespace

std::string DescribeCandidatePatterns(const std::vector<Prescription>& candidates) {
  std::string out;
  for (const Prescription& p : candidates) {
    std::vector<std::string> parts;
    if (!p.fix().empty()) parts.push_back(p.fix());
    if (p.expected_speedup() > 0) {
      parts.push_back(absl::StrCat("expected ", llm_engine::FormatNumber(p.expected_speedup()), "x"));
    }
    if (p.knob_changes_size() > 0) parts.push_back(absl::StrCat("knob changes ", KnobList(p)));
    if (!p.template_switch().empty()) parts.push_back(absl::StrCat("template switch ", p.template_switch()));
    if (!p.rationale().empty()) parts.push_back(absl::StrCat("matched because ", p.rationale()));
    absl::StrAppend(&out, out.empty() ? "" : "\n", "- ", p.pattern_id(), ": ",
                    p.title().empty() ? p.pattern_id() : p.title(),
                    parts.empty() ? "" : " - ", absl::StrJoin(parts, "; "));
  }
  return out.empty() ? "(none)" : out;
}

LlmPrescriber::LlmPrescriber(std::shared_ptr<llm::LlmClient> client,
                             std::shared_ptr<const llm::PromptLibrary> prompts,
                             llm_engine::AgentOptions options)
    : client_(std::move(client)), prompts_(std::move(prompts)), options_(std::move(options)) {
  KAGENT_CHECK(client_ != nullptr) << "LlmPrescriber needs a client";
  KAGENT_CHECK(prompts_ != nullptr) << "LlmPrescriber needs a prompt library";
}

absl::StatusOr<RankedPrescriptions> LlmPrescriber::Rank(const kagent::v1::PrescribeRequest& request,
                                                        const std::vector<Prescription>& candidates,
                                                        int max_results) {
  if (candidates.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(options_.name, " prescribe: no candidates to rank"));
  }
  std::vector<std::string> avoid(request.avoid_patterns().begin(), request.avoid_patterns().end());
  llm::PromptValues values = {
      {"gpu", llm_engine::DescribeGpu(request.has_gpu() ? &request.gpu() : nullptr)},
      {"op_class", request.op_class().empty() ? std::string("unknown") : request.op_class()},
      {"diagnosis", llm_engine::DescribeReport(request.has_report() ? &request.report() : nullptr)},
      {"kernel_source", request.kernel_source().empty()
                            ? std::string("# (the kernel's source was not given)")
                            : request.kernel_source()},
      {"candidate_patterns", DescribeCandidatePatterns(candidates)},
      {"avoid", avoid.empty() ? std::string("none") : absl::StrJoin(avoid, ", ")},
      {"max_prescriptions", absl::StrCat(max_results)},
  };
  KAGENT_ASSIGN_OR_RETURN(llm_engine::AgentAnswer answer,
                          llm_engine::AskAgent(*client_, *prompts_, kAgent, "prescribe", values,
                                               {"prescriptions"}, options_));
  auto refuse = [&](absl::string_view why) {
    return llm_engine::RefuseReply(answer, kAgent, options_, why);
  };
  std::map<std::string, const Prescription*> by_id;
  std::vector<std::string> ids;
  for (const Prescription& p : candidates) {
    by_id.emplace(p.pattern_id(), &p);
    ids.push_back(p.pattern_id());
  }
  const nlohmann::json& list = answer.value.at("prescriptions");
  if (!list.is_array() || list.empty()) return refuse("\"prescriptions\" is not a non-empty list");
  RankedPrescriptions ranked;
  std::set<std::string> seen;
  for (const nlohmann::json& entry : list) {
    if (static_cast<int>(ranked.prescriptions.size()) == max_results) break;
    if (!entry.is_object() || !entry.contains("pattern_id") || !entry["pattern_id"].is_string()) {
      return refuse("an entry has no \"pattern_id\" string");
    }
    const std::string id = entry["pattern_id"].get<std::string>();
    auto candidate = by_id.find(id);
    if (candidate == by_id.end()) {
      return refuse(absl::StrCat("pattern '", id, "' is not among the database's candidates (",
                                 absl::StrJoin(ids, ", "), ")"));
    }
    if (!seen.insert(id).second) continue;
    Prescription p = *candidate->second;
    if (auto knobs = entry.find("knob_changes"); knobs != entry.end() && !knobs->is_null()) {
      if (!knobs->is_object()) return refuse(absl::StrCat("knob_changes of '", id, "' is not an object"));
      for (const auto& [knob, value] : knobs->items()) {
        if (p.knob_changes().count(knob) == 0) {
          return refuse(absl::StrCat("pattern '", id, "' changes no knob '", knob,
                                     "' (it changes: ", KnobNames(*candidate->second), ")"));
        }
        std::string text;
        if (value.is_number()) {
          text = llm_engine::FormatNumber(value.get<double>());
        } else if (value.is_string() && !value.get<std::string>().empty()) {
          text = value.get<std::string>();
        } else {
          return refuse(absl::StrCat("knob '", knob, "' of '", id, "' is neither a number nor a string"));
        }
        (*p.mutable_knob_changes())[knob] = text;
      }
    }
    std::string rationale = StringOr(entry, "rationale", "");
    if (!rationale.empty()) {
      p.set_rationale(candidate->second->rationale().empty()
                          ? rationale
                          : absl::StrCat(rationale, " (database: ", candidate->second->rationale(), ")"));
    }
    p.set_expected_effect(StringOr(entry, "expected_effect", p.expected_effect()));
    ranked.prescriptions.push_back(std::move(p));
  }
  ranked.model = options_.model;
  ranked.prompt = std::move(answer.prompt);
  ranked.reply = std::move(answer.reply);
  return ranked;
}

}  // namespace kagent
