// Round planner tests: different fixes per worker, avoid-list and memory respected.
#include <catch2/catch.hpp>

#include <set>

#include "services/orchestrator/planner.h"

namespace kagent {
namespace {

v1::PlanRoundRequest TwoKernelBeam() {
  v1::PlanRoundRequest r;
  r.set_round(2);
  r.set_fixes_per_kernel(2);
  for (const char* id : {"k1", "k2"}) {
    v1::BeamEntry* e = r.add_beam();
    e->set_kernel_id(id);
    for (const char* p : {"a", "b", "c", "d"}) e->add_prescriptions()->set_pattern_id(p);
  }
  return r;
}

TEST_CASE("planner: K x M assignments, distinct fixes per parent, numbered workers") {
  auto plan = PlanRound(TwoKernelBeam());
  REQUIRE(plan.ok());
  REQUIRE(plan->assignments_size() == 4);
  std::set<std::pair<std::string, std::string>> seen;
  for (int i = 0; i < 4; ++i) {
    const auto& a = plan->assignments(i);
    CHECK(a.worker_index() == i);
    CHECK(seen.insert({a.parent_kernel_id(), a.prescription().pattern_id()}).second);
  }
  CHECK(plan->assignments(0).prescription().pattern_id() == "a");
  CHECK(plan->assignments(1).prescription().pattern_id() == "b");
}

TEST_CASE("planner: avoid-list, memory avoid and tried pairs are skipped, try-patterns first") {
  v1::PlanRoundRequest r = TwoKernelBeam();
  r.add_avoid_patterns("a");
  v1::Reflexion* m1 = r.add_memory();
  m1->set_parent_id("k1");
  m1->set_pattern_id("b");  // b already tried on k1
  v1::Reflexion* m2 = r.add_memory();
  m2->add_try_patterns("d");
  auto plan = PlanRound(r);
  REQUIRE(plan.ok());
  std::vector<std::string> k1, k2;
  for (const auto& a : plan->assignments()) {
    (a.parent_kernel_id() == "k1" ? k1 : k2).push_back(a.prescription().pattern_id());
  }
  CHECK(k1 == std::vector<std::string>{"d", "c"});
  CHECK(k2 == std::vector<std::string>{"d", "b"});
}

TEST_CASE("planner: bad requests") {
  v1::PlanRoundRequest r;
  r.set_fixes_per_kernel(2);
  CHECK(PlanRound(r).status().code() == absl::StatusCode::kInvalidArgument);
  r = TwoKernelBeam();
  r.set_fixes_per_kernel(0);
  CHECK(PlanRound(r).status().code() == absl::StatusCode::kInvalidArgument);
  r = TwoKernelBeam();
  r.mutable_beam(0)->clear_kernel_id();
  CHECK(PlanRound(r).status().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kagent
