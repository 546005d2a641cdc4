// The beam update (beam.h): which kernels the next round starts from, the best median and
// the plateau count.
#include "services/coordinator/beam.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kagent {
namespace {

v1::Candidate Kernel(const std::string& id, double median_ms,
                     v1::Verdict verdict = v1::VERDICT_CORRECT, std::string source = "") {
  v1::Candidate c;
  c.set_id(id);
  c.mutable_kernel()->set_source(source.empty() ? absl::StrCat("def k_", id, "(): pass\n")
                                                : source);
  c.mutable_measurement()->set_verdict(verdict);
  c.mutable_measurement()->mutable_candidate()->set_median_ms(median_ms);
  return c;
}

using Ids = std::vector<std::string>;

TEST_CASE("beam: a faster correct candidate enters ahead of the beam") {
  BeamUpdate u = UpdateBeam({Kernel("start", 2.0)}, {Kernel("a", 1.0)},
                            {.best_median_ms = 2.0, .rounds_without_improvement = 1},
                            {.width = 2, .improvement_threshold = 0.01});
  CHECK(u.beam_ids == Ids{"a", "start"});
  CHECK(u.improved);
  CHECK(u.progress.best_median_ms == 1.0);
  CHECK(u.progress.rounds_without_improvement == 0);
}

TEST_CASE("beam: slower candidates do not push out faster beam kernels") {
  BeamUpdate u = UpdateBeam({Kernel("b0", 1.0), Kernel("b1", 1.5)},
                            {Kernel("slow1", 3.0), Kernel("slow2", 2.0)},
                            {.best_median_ms = 1.0, .rounds_without_improvement = 0},
                            {.width = 2, .improvement_threshold = 0.01});
  CHECK(u.beam_ids == Ids{"b0", "b1"});
  CHECK(!u.improved);
  CHECK(u.progress.best_median_ms == 1.0);
  CHECK(u.progress.rounds_without_improvement == 1);
}

TEST_CASE("beam: a slower candidate fills a free place when the beam is narrower than K") {
  BeamUpdate u = UpdateBeam({Kernel("start", 1.0)}, {Kernel("slow", 2.0)},
                            {.best_median_ms = 1.0}, {.width = 3});
  CHECK(u.beam_ids == Ids{"start", "slow"});
}

TEST_CASE("beam: ties keep the beam's kernel first, then candidates in order") {
  BeamUpdate u = UpdateBeam({Kernel("b", 1.0)}, {Kernel("x", 1.0), Kernel("y", 1.0)},
                            {.best_median_ms = 1.0}, {.width = 2});
  CHECK(u.beam_ids == Ids{"b", "x"});
  CHECK(!u.improved);  // no gain at all
  CHECK(u.progress.rounds_without_improvement == 1);
}

TEST_CASE("beam: at most K kernels, the fastest") {
  std::vector<v1::Candidate> measured;
  for (int i = 0; i < 6; ++i) measured.push_back(Kernel(absl::StrCat("w", i), 6.0 - i));
  for (int k : {1, 2, 4}) {
    BeamUpdate u = UpdateBeam({Kernel("start", 10.0)}, measured, {.best_median_ms = 10.0},
                              {.width = k});
    REQUIRE(static_cast<int>(u.beam_ids.size()) == k);
    CHECK(u.beam_ids.front() == "w5");
    CHECK(u.beam_ids.back() == absl::StrCat("w", 6 - k));
  }
}

TEST_CASE("beam: the greedy strategy (K = 1) keeps only the fastest") {
  BeamUpdate u = UpdateBeam({Kernel("start", 2.0)}, {Kernel("a", 1.5), Kernel("b", 1.2)},
                            {.best_median_ms = 2.0}, {.width = 1});
  CHECK(u.beam_ids == Ids{"b"});
  CHECK(u.progress.best_median_ms == 1.2);
  SECTION("and keeps its kernel when nothing is faster") {
    BeamUpdate same = UpdateBeam({Kernel("b", 1.2)}, {Kernel("c", 1.3)},
                                 {.best_median_ms = 1.2, .rounds_without_improvement = 1},
                                 {.width = 1});
    CHECK(same.beam_ids == Ids{"b"});
    CHECK(same.progress.rounds_without_improvement == 2);
  }
}

TEST_CASE("beam: only correct candidates with a median enter") {
  std::vector<v1::Candidate> measured = {
      Kernel("wrong", 0.1, v1::VERDICT_INCORRECT),
      Kernel("compile", 0.1, v1::VERDICT_COMPILE_ERROR),
      Kernel("infra", 0.1, v1::VERDICT_INFRA_ERROR),
      Kernel("untimed", 0, v1::VERDICT_CORRECT),
  };
  BeamUpdate u = UpdateBeam({Kernel("start", 1.0)}, measured,
                            {.best_median_ms = 1.0, .rounds_without_improvement = 0},
                            {.width = 4});
  CHECK(u.beam_ids == Ids{"start"});
  CHECK(!u.improved);
  CHECK(u.progress.best_median_ms == 1.0);
  CHECK(u.progress.rounds_without_improvement == 1);
}

TEST_CASE("beam: the same kernel enters once, at its fastest") {
  const std::string src = "def k():\n    return 1\n";
  const std::string same_src = "def k():   # a comment\n\n    return 1\n";
  BeamUpdate u = UpdateBeam({Kernel("start", 2.0, v1::VERDICT_CORRECT, src)},
                            {Kernel("copy", 1.0, v1::VERDICT_CORRECT, same_src),
                             Kernel("other", 1.5)},
                            {.best_median_ms = 2.0}, {.width = 3});
  CHECK(u.beam_ids == Ids{"copy", "other"});
}

TEST_CASE("beam: a gain within the threshold is no improvement, but the best still moves") {
  BeamUpdate u = UpdateBeam({Kernel("start", 1.0)}, {Kernel("a", 0.995)},
                            {.best_median_ms = 1.0, .rounds_without_improvement = 1},
                            {.width = 2, .improvement_threshold = 0.01});
  CHECK(u.beam_ids == Ids{"a", "start"});
  CHECK(!u.improved);
  CHECK(u.progress.rounds_without_improvement == 2);
  CHECK(u.progress.best_median_ms == 0.995);
}

TEST_CASE("beam: an empty round keeps the beam and counts toward the plateau") {
  BeamUpdate u = UpdateBeam({Kernel("b0", 1.0), Kernel("b1", 1.1)}, {},
                            {.best_median_ms = 1.0, .rounds_without_improvement = 0},
                            {.width = 2});
  CHECK(u.beam_ids == Ids{"b0", "b1"});
  CHECK(u.progress.rounds_without_improvement == 1);
  CHECK(u.progress.best_median_ms == 1.0);
}

}  // namespace
}  // namespace kagent
