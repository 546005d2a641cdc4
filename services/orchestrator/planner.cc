#include "services/orchestrator/planner.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kagent {

absl::StatusOr<std::vector<PlanOption>> PlanOptions(const v1::PlanRoundRequest& r) {
  if (r.beam_size() == 0) return absl::InvalidArgumentError("beam must hold at least one kernel");
  if (r.fixes_per_kernel() < 1 || r.fixes_per_kernel() > 16) {
    return absl::InvalidArgumentError("fixes_per_kernel must be in [1, 16]");
  }
  std::set<std::string> avoid(r.avoid_patterns().begin(), r.avoid_patterns().end());
  std::set<std::string> boost;
  std::set<std::pair<std::string, std::string>> tried;  // (parent, pattern)
  for (const v1::Reflexion& m : r.memory()) {
    for (const auto& p : m.avoid_patterns()) avoid.insert(p);
    for (const auto& p : m.try_patterns()) boost.insert(p);
    if (!m.pattern_id().empty()) tried.insert({m.parent_id(), m.pattern_id()});
  }
  // A pattern that helped is worth trying again on the new best kernel: un-avoid it.
  for (const v1::Reflexion& m : r.memory()) {
    if (m.fix_effective()) avoid.erase(m.pattern_id());
  }
  std::vector<PlanOption> options;
  for (const v1::BeamEntry& entry : r.beam()) {
    const std::string& parent = entry.kernel_id();
    if (parent.empty()) return absl::InvalidArgumentError("every beam kernel needs an id");
    std::vector<const v1::Prescription*> ranked;
    for (const auto& p : entry.prescriptions()) ranked.push_back(&p);
    std::stable_sort(ranked.begin(), ranked.end(), [&](auto* a, auto* b) {
      return boost.count(a->pattern_id()) > boost.count(b->pattern_id());
    });
    std::set<std::string> given;
    for (const v1::Prescription* p : ranked) {
      const std::string& id = p->pattern_id();
      PlanOption& o = options.emplace_back();
      o.parent_kernel_id = parent;
      o.prescription = *p;
      if (avoid.count(id)) {
        o.excluded = "on the avoid-list";
      } else if (tried.count({parent, id})) {
        o.excluded = "already tried on this kernel";
      } else if (!given.insert(id).second) {
        o.excluded = "listed twice for this kernel";
      }
    }
  }
  return options;
}

absl::StatusOr<v1::RoundPlan> PlanRound(const v1::PlanRoundRequest& r) {
  absl::StatusOr<std::vector<PlanOption>> options = PlanOptions(r);
  if (!options.ok()) return options.status();
  v1::RoundPlan plan;
  plan.set_round(r.round());
  int worker = 0;
  std::vector<std::string> notes;
  auto o = options->begin();
  for (const v1::BeamEntry& entry : r.beam()) {
    const std::string& parent = entry.kernel_id();
    int taken = 0, skipped = 0;
    // PlanOptions gives each beam entry's prescriptions, in order, one option each.
    for (int i = 0; i < entry.prescriptions_size(); ++i, ++o) {
      if (taken >= r.fixes_per_kernel()) continue;
      if (!o->excluded.empty()) {
        ++skipped;
        continue;
      }
      v1::Assignment* a = plan.add_assignments();
      a->set_parent_kernel_id(parent);
      *a->mutable_prescription() = o->prescription;
      a->set_worker_index(worker++);
      ++taken;
    }
    notes.push_back(absl::StrCat(parent, ": ", taken, " fix(es)",
                                 skipped ? absl::StrCat(", ", skipped, " skipped (avoid-list, memory or already tried)") : ""));
  }
  plan.set_rationale(absl::StrJoin(notes, "; "));
  return plan;
}

}  // namespace kagent
