#include "services/coordinator/beam.h"

#include <algorithm>
#include <set>

#include "common/source_text.h"

namespace kagent {

namespace {

double MedianMs(const v1::Candidate& c) { return c.measurement().candidate().median_ms(); }

}  // namespace

BeamUpdate UpdateBeam(const std::vector<v1::Candidate>& beam,
                      const std::vector<v1::Candidate>& measured, const BeamProgress& before,
                      const BeamSettings& settings) {
  std::vector<const v1::Candidate*> pool;
  for (const v1::Candidate& c : beam) pool.push_back(&c);
  for (const v1::Candidate& c : measured) {
    if (c.measurement().verdict() == v1::VERDICT_CORRECT && MedianMs(c) > 0) pool.push_back(&c);
  }
  std::stable_sort(pool.begin(), pool.end(), [](const v1::Candidate* a, const v1::Candidate* b) {
    return MedianMs(*a) < MedianMs(*b);
  });
  BeamUpdate out;
  std::set<std::string> seen;
  for (const v1::Candidate* c : pool) {
    if (static_cast<int>(out.beam_ids.size()) >= settings.width) break;
    if (!seen.insert(NormalizeSource(c->kernel().source())).second) continue;
    out.beam_ids.push_back(c->id());
  }
  const double old_best = before.best_median_ms;
  const double new_best = pool.empty() ? old_best : MedianMs(*pool.front());
  out.improved = new_best > 0 && old_best / new_best - 1 > settings.improvement_threshold;
  out.progress.rounds_without_improvement =
      out.improved ? 0 : before.rounds_without_improvement + 1;
  out.progress.best_median_ms = new_best > 0 && new_best < old_best ? new_best : old_best;
  return out;
}

}  // namespace kagent
