#include "engines/llm/llm_planner.h"

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/logging.h"
#include "common/status.h"
#include "engines/llm/prompt_values.h"

namespace kagent {
namespace {

constexpr char kAgent[] = "plan";

// One offered fix on one line of {{beam}}.
std::string DescribeOption(const v1::Prescription& p) {
  std::string out = absl::StrCat("  - ", p.pattern_id(), ": ", p.title().empty() ? p.pattern_id() : p.title());
  if (p.expected_speedup() > 0) {
    absl::StrAppend(&out, "; expected ", llm_engine::FormatNumber(p.expected_speedup()), "x");
  }
  if (!p.expected_effect().empty()) absl::StrAppend(&out, "; ", p.expected_effect());
  if (!p.rationale().empty()) absl::StrAppend(&out, "; ", p.rationale());
  return out;
}

// A multi-line value under a two-space item: later lines indented by four.
std::string Indent(const std::string& text) {
  return absl::StrReplaceAll(absl::StripTrailingAsciiWhitespace(text), {{"\n", "\n    "}});
}

}  // namespace

LlmRoundPlanner::LlmRoundPlanner(std::shared_ptr<llm::LlmClient> client,
                                 std::shared_ptr<const llm::PromptLibrary> prompts,
                                 llm_engine::AgentOptions options)
    : client_(std::move(client)), prompts_(std::move(prompts)), options_(std::move(options)) {
  KAGENT_CHECK(client_ != nullptr) << "LlmRoundPlanner needs a client";
  KAGENT_CHECK(prompts_ != nullptr) << "LlmRoundPlanner needs a prompt library";
}

absl::StatusOr<RoundPlanDraft> LlmRoundPlanner::Plan(const RoundPlanInput& input) {
  if (input.request == nullptr || input.budget < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(options_.name, " plan: a request and a budget of at least 1 are required"));
  }
  const v1::PlanRoundRequest& request = *input.request;
  // Per kernel: the offered fixes' lines; and every pair by (parent, id).
  std::map<std::string, std::vector<std::string>> offered_lines;
  std::map<std::pair<std::string, std::string>, const PlanOption*> pairs;
  std::vector<std::string> excluded;
  for (const PlanOption& o : input.options) {
    const std::string& parent = o.parent_kernel_id;
    std::vector<std::string>& lines = offered_lines[parent];
    auto [it, fresh] = pairs.emplace(std::pair{parent, o.prescription.pattern_id()}, &o);
    if (!o.excluded.empty()) {
      if (fresh || !it->second->excluded.empty()) {
        excluded.push_back(absl::StrCat("- ", parent, " + ", o.prescription.pattern_id(), ": ", o.excluded));
      }
      continue;
    }
    it->second = &o;
    lines.push_back(DescribeOption(o.prescription));
  }
  std::string beam;
  int offered = 0;
  std::set<std::string> shown;
  int rank = 0;
  for (const v1::BeamEntry& entry : request.beam()) {
    const std::string& id = entry.kernel_id();
    if (!shown.insert(id).second) continue;
    const std::vector<std::string>& lines = offered_lines[id];
    offered += static_cast<int>(lines.size());
    ++rank;
    absl::StrAppend(
        &beam, rank > 1 ? "\n" : "", "kernel ", id, " (beam rank ", rank, "):\n  measured: ",
        Indent(llm_engine::DescribeMeasurement(entry.has_measurement() ? &entry.measurement() : nullptr)),
        "\n  diagnosis: ", Indent(llm_engine::DescribeReport(entry.has_report() ? &entry.report() : nullptr)),
        "\n  fixes offered:\n",
        lines.empty() ? std::string("  - (none)") : absl::StrJoin(lines, "\n"));
  }
  if (offered == 0) {
    return absl::InvalidArgumentError(absl::StrCat(options_.name, " plan: the rules offer no fix to plan"));
  }
  const std::vector<v1::Reflexion> memory(request.memory().begin(), request.memory().end());
  llm::PromptValues values = {
      {"round", absl::StrCat(request.round())},
      {"beam", beam},
      {"excluded", excluded.empty() ? std::string("none") : absl::StrJoin(excluded, "\n")},
      {"lessons", llm_engine::FormatLessons(&memory)},
      {"budget", absl::StrCat(input.budget)},
      {"fixes_per_kernel", absl::StrCat(request.fixes_per_kernel())},
  };
  KAGENT_ASSIGN_OR_RETURN(llm_engine::AgentAnswer answer,
                          llm_engine::AskAgent(*client_, *prompts_, kAgent, "plan_round", values,
                                               {"plan"}, options_));
  const nlohmann::json& list = answer.value.at("plan");
  if (!list.is_array()) {
    return llm_engine::RefuseReply(answer, kAgent, options_, "\"plan\" is not a list");
  }
  RoundPlanDraft draft;
  draft.plan.set_round(request.round());
  std::set<std::pair<std::string, std::string>> chosen;
  std::map<std::string, int> per_kernel;
  std::vector<std::string> reasons;
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& e = list[i];
    auto drop = [&](absl::string_view why) {
      draft.dropped.push_back(absl::StrCat("entry ", i + 1, ": ", why));
      KLOG(WARNING).With("agent", options_.name)
          << "plan agent: entry " << i + 1 << " of the reply dropped: " << why;
    };
    if (!e.is_object() || !e.contains("parent") || !e.contains("pattern") || !e.at("parent").is_string() ||
        !e.at("pattern").is_string()) {
      drop("not an object with string \"parent\" and \"pattern\"");
      continue;
    }
    const std::string parent = e.at("parent").get<std::string>();
    const std::string pattern = e.at("pattern").get<std::string>();
    const std::string pair = absl::StrCat(parent, " + ", pattern);
    auto found = pairs.find({parent, pattern});
    if (!offered_lines.count(parent)) {
      drop(absl::StrCat("'", parent, "' is not a kernel of the beam"));
    } else if (found == pairs.end()) {
      drop(absl::StrCat("'", pattern, "' is not among the fixes offered for ", parent));
    } else if (!found->second->excluded.empty()) {
      drop(absl::StrCat(pair, " is excluded: ", found->second->excluded));
    } else if (!chosen.insert({parent, pattern}).second) {
      drop(absl::StrCat(pair, " is named twice"));
    } else if (per_kernel[parent] >= request.fixes_per_kernel()) {
      drop(absl::StrCat(pair, " is past ", request.fixes_per_kernel(), " fix(es) for ", parent));
    } else if (draft.plan.assignments_size() >= input.budget) {
      drop(absl::StrCat(pair, " is past the budget of ", input.budget));
    } else {
      ++per_kernel[parent];
      v1::Assignment* a = draft.plan.add_assignments();
      a->set_parent_kernel_id(parent);
      *a->mutable_prescription() = found->second->prescription;
      a->set_worker_index(draft.plan.assignments_size() - 1);
      std::string reason = e.contains("reason") && e.at("reason").is_string() ? e.at("reason").get<std::string>() : "";
      reasons.push_back(absl::StrCat(pair, reason.empty() ? "" : ": ", reason));
    }
  }
  if (draft.plan.assignments_size() == 0) {
    return llm_engine::RefuseReply(
        answer, kAgent, options_,
        absl::StrCat("no entry of the plan is usable",
                     draft.dropped.empty() ? std::string(" (it is empty)")
                                           : absl::StrCat(" (", absl::StrJoin(draft.dropped, "; "), ")")));
  }
  std::string rationale = absl::StrCat("planned by ", options_.name, ": ", absl::StrJoin(reasons, "; "));
  if (!draft.dropped.empty()) {
    absl::StrAppend(&rationale, "; dropped: ", absl::StrJoin(draft.dropped, "; "));
  }
  draft.plan.set_rationale(std::move(rationale));
  draft.model = options_.model;
  draft.prompt = std::move(answer.prompt);
  draft.reply = std::move(answer.reply);
  return draft;
}

}  // namespace kagent
