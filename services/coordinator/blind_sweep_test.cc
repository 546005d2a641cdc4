#include "services/coordinator/blind_sweep.h"

#include <set>

#include <catch2/catch.hpp>

namespace kagent {
namespace {

TEST_CASE("blind sweep plan: K x M seeded assignments, the same for the same seed") {
  const v1::RoundPlan a = BlindSweepPlan({"k0", "k1"}, 3, 2, 42);
  const v1::RoundPlan b = BlindSweepPlan({"k0", "k1"}, 3, 2, 42);
  REQUIRE(a.assignments_size() == 6);
  CHECK(a.SerializeAsString() == b.SerializeAsString());
  CHECK(a.round() == 2);
  std::set<uint64_t> seeds;
  for (int i = 0; i < a.assignments_size(); ++i) {
    const v1::Assignment& x = a.assignments(i);
    CHECK(x.worker_index() == i);
    CHECK(x.parent_kernel_id() == (i < 3 ? "k0" : "k1"));
    CHECK(x.prescription().pattern_id() == kBlindSweepPattern);
    CHECK(x.prescription().knob_changes().empty());
    CHECK(x.prescription().template_switch().empty());
    REQUIRE(x.prescription().has_blind_seed());
    CHECK(x.prescription().blind_seed() == BlindMoveSeed(42, 2, i));
    seeds.insert(x.prescription().blind_seed());
  }
  CHECK(seeds.size() == 6);
}

TEST_CASE("blind sweep plan: another sweep seed or round draws other seeds") {
  std::set<uint64_t> seeds;
  for (uint64_t sweep : {0, 1, 2}) {
    for (int round = 1; round <= 3; ++round) {
      for (int w = 0; w < 4; ++w) seeds.insert(BlindMoveSeed(sweep, round, w));
    }
  }
  CHECK(seeds.size() == 3 * 3 * 4);
  CHECK(BlindSweepPlan({}, 2, 1, 0).assignments_size() == 0);
}

}  // namespace
}  // namespace kagent
