#include "engines/heuristic/template_variants.h"

#include <cstdint>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/source_text.h"

namespace kagent {
namespace {

bool IsIntegerKnob(const TemplateParam& p) {
  return p.kind == "knob" && (p.type == "pow2" || p.type == "int");
}

bool IsTile(const TemplateParam& p) {
  return absl::StartsWith(p.name, "BLOCK") || absl::StartsWith(p.name, "SPLIT");
}

std::optional<int64_t> IntValue(const std::map<std::string, std::string>& params,
                                const std::string& name) {
  auto it = params.find(name);
  int64_t v = 0;
  if (it == params.end() || !absl::SimpleAtoi(it->second, &v)) return std::nullopt;
  return v;
}

// `v` one step up or down: num_stages by one, every other knob by a factor of two.
int64_t Step(const TemplateParam& p, int64_t v, bool up) {
  if (p.name == "num_stages") return up ? v + 1 : v - 1;
  return up ? v * 2 : v / 2;
}

struct Candidate {
  const TemplateParam* param;
  bool up;
};

}  // namespace

std::vector<TemplateVariant> TemplateVariants(const TemplateLibrary& library,
                                              const TemplateInfo& info,
                                              const std::map<std::string, std::string>& params,
                                              const std::map<std::string, std::string>* from,
                                              bool tiles, const std::vector<std::string>& exclude,
                                              int max_variants) {
  std::vector<TemplateVariant> out;
  if (max_variants <= 0) return out;
  absl::StatusOr<std::string> kernel = library.Render(info.id, params);
  if (!kernel.ok()) return out;

  // The moved knobs with the way each moved, and the knobs that only follow the rules.
  std::vector<Candidate> moved;
  const TemplateParam* warps = nullptr;
  const TemplateParam* stages = nullptr;
  std::vector<const TemplateParam*> tile_knobs;
  for (const TemplateParam& p : info.params) {
    if (!IsIntegerKnob(p)) continue;
    std::optional<int64_t> now = IntValue(params, p.name);
    if (!now.has_value()) continue;
    std::optional<int64_t> before = from != nullptr ? IntValue(*from, p.name) : std::nullopt;
    if (before.has_value() && *before != *now) {
      moved.push_back({&p, *now > *before});
    } else if (p.name == "num_warps") {
      warps = &p;
    } else if (p.name == "num_stages") {
      stages = &p;
    } else if (tiles && IsTile(p)) {
      tile_knobs.push_back(&p);
    }
  }
  std::vector<Candidate> order;
  for (const Candidate& m : moved) order.push_back(m);
  for (const TemplateParam* p : {warps, stages}) {
    if (p != nullptr) order.push_back({p, true});
  }
  for (const TemplateParam* p : tile_knobs) order.push_back({p, false});
  for (const TemplateParam* p : {warps, stages}) {
    if (p != nullptr) order.push_back({p, false});
  }
  for (const Candidate& m : moved) order.push_back({m.param, !m.up});
  for (const TemplateParam* p : tile_knobs) order.push_back({p, true});

  std::set<std::string> seen = {NormalizeSource(*kernel)};
  for (const std::string& s : exclude) seen.insert(NormalizeSource(s));
  for (const Candidate& c : order) {
    if (static_cast<int>(out.size()) >= max_variants) break;
    const int64_t now = *IntValue(params, c.param->name);
    const int64_t next = Step(*c.param, now, c.up);
    std::map<std::string, std::string> moved_params = params;
    moved_params[c.param->name] = std::to_string(next);
    absl::StatusOr<std::string> source = library.Render(info.id, moved_params);
    if (!source.ok()) continue;  // out of bounds, not a power of two, tile too large
    if (!seen.insert(NormalizeSource(*source)).second) continue;
    out.push_back({*std::move(source), absl::StrCat(c.param->name, " ", now, " -> ", next)});
  }
  return out;
}

}  // namespace kagent
