#include "engines/heuristic/knob_tuner.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/python_source.h"
#include "common/status.h"

namespace kagent {
namespace {

// Where an integer knob's value lives in the source.
struct ValueSite {
  size_t begin = 0, end = 0;   // of the integer literal
  int64_t value = 0;
  std::string where;
};

// Resolves an expression to an integer literal's site: a literal, a variable assigned
// a literal (or min/max(literal, ...)) before `limit`.
std::optional<ValueSite> ResolveInt(const std::string& mask, absl::string_view src, size_t b,
                                    size_t e, size_t limit, int depth = 0);

// `min(<int>, ...)` / `max(<int>, ...)` in [b, e): the literal's site, named after `name`.
std::optional<ValueSite> ResolveMinMax(const std::string& mask, absl::string_view src, size_t b,
                                       size_t e, absl::string_view name) {
  absl::string_view rhs = src.substr(b, e - b);
  if (!absl::StartsWith(rhs, "min(") && !absl::StartsWith(rhs, "max(")) return std::nullopt;
  size_t open = b + 3;
  size_t close = MatchBracket(mask, open);
  if (close == std::string::npos) return std::nullopt;
  auto pieces = SplitTopLevel(mask, open + 1, close);
  size_t pb = pieces[0].first, pe = pieces[0].second;
  Trim(mask, &pb, &pe);
  if (auto v = ParseIntLiteral(src.substr(pb, pe - pb))) {
    return ValueSite{pb, pe, *v, absl::StrCat("variable ", name, " (", rhs.substr(0, 3), " bound)")};
  }
  return std::nullopt;
}

std::optional<ValueSite> ResolveInt(const std::string& mask, absl::string_view src, size_t b,
                                    size_t e, size_t limit, int depth) {
  absl::string_view text = src.substr(b, e - b);
  if (auto v = ParseIntLiteral(text)) return ValueSite{b, e, *v, "literal"};
  std::string t(absl::StripAsciiWhitespace(text));
  if (depth < 2 && !t.empty() && std::all_of(t.begin(), t.end(), IsIdentChar) &&
      !std::isdigit(static_cast<unsigned char>(t[0]))) {
    Assignment a = LastAssignment(mask, t, limit);
    if (!a.found) return std::nullopt;
    auto inner = ResolveInt(mask, src, a.rhs_begin, a.rhs_end, a.rhs_begin, depth + 1);
    if (inner) {
      inner->where = absl::StrCat("variable ", t);
      return inner;
    }
    return ResolveMinMax(mask, src, a.rhs_begin, a.rhs_end, t);
  }
  return std::nullopt;
}

bool IsPow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
int64_t Pow2Floor(int64_t v) {
  int64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}
int64_t Pow2Ceil(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

constexpr int64_t kTritonDefaultWarps = 4;
constexpr int64_t kTritonDefaultStages = 3;

// Where `knob` lives for the primary launch, per the rules in the header.
struct KnobLocation {
  std::optional<ValueSite> site;
  const LaunchSite* launch = nullptr;
  bool insert_keyword = false;   // num_warps / num_stages to add
  int64_t implicit_value = 0;
  std::string grid_name;         // the name a grid must use to follow the knob
};

absl::StatusOr<KnobLocation> Locate(absl::string_view source, const std::string& mask,
                                    const TritonSourceInfo& info, absl::string_view knob) {
  KnobLocation loc;
  bool launch_knob = knob == "num_warps" || knob == "num_stages" || knob == "num_ctas";
  for (const LaunchSite& site : info.launches) {
    const LaunchArg* arg = site.Keyword(knob);
    if (arg == nullptr) continue;
    const JitKernel* k = info.Kernel(site.kernel);
    if (k != nullptr && k->autotuned) {
      return absl::FailedPreconditionError(absl::StrCat(
          "kernel ", site.kernel, " is @triton.autotune'd: its configs own ", knob));
    }
    loc.launch = &site;
    loc.site = ResolveInt(mask, source, arg->value_begin, arg->value_end, site.offset);
    if (!loc.site) {
      return absl::FailedPreconditionError(absl::StrCat(
          knob, "=", arg->value, " at the launch of ", site.kernel,
          " is not an integer literal nor a variable assigned one"));
    }
    if (loc.site->where == "literal") {
      loc.site->where = absl::StrCat("launch keyword of ", site.kernel);
      loc.grid_name = std::string(knob);
    } else {
      loc.grid_name = std::string(absl::StripAsciiWhitespace(arg->value));
    }
    return loc;
  }
  // A constexpr default in a launched kernel's signature.
  for (const LaunchSite& site : info.launches) {
    const JitKernel* k = info.Kernel(site.kernel);
    if (k == nullptr) continue;
    for (const KernelParam& p : k->params) {
      if (p.name != knob || p.default_text.empty()) continue;
      if (k->autotuned) {
        return absl::FailedPreconditionError(absl::StrCat(
            "kernel ", k->name, " is @triton.autotune'd: its configs own ", knob));
      }
      auto v = ParseIntLiteral(p.default_text);
      if (!v) {
        return absl::FailedPreconditionError(
            absl::StrCat(knob, " default '", p.default_text, "' is not an integer literal"));
      }
      loc.launch = &site;
      loc.grid_name = std::string(knob);
      loc.site = ValueSite{p.default_begin, p.default_end, *v,
                           absl::StrCat("constexpr default in ", k->name)};
      return loc;
    }
  }
  // A plain variable named like the knob, assigned before the primary launch (e.g.
  // SPLIT_K = 4 used by the grid and the host code).
  if (!launch_knob) {
    const LaunchSite& primary = info.launches.front();
    Assignment a = LastAssignment(mask, knob, primary.offset);
    if (a.found) {
      auto site = ResolveInt(mask, source, a.rhs_begin, a.rhs_end, a.rhs_begin);
      if (!site) site = ResolveMinMax(mask, source, a.rhs_begin, a.rhs_end, knob);
      if (!site) {
        absl::string_view rhs = source.substr(a.rhs_begin, a.rhs_end - a.rhs_begin);
        return absl::FailedPreconditionError(absl::StrCat(
            knob, " = ", rhs, " is not an integer literal (nor min/max of one)"));
      }
      site->where = absl::StrCat("variable ", knob);
      loc.launch = &primary;
      loc.grid_name = std::string(knob);
      loc.site = site;
      return loc;
    }
  }
  if (launch_knob && knob != "num_ctas") {
    const LaunchSite& primary = info.launches.front();
    const JitKernel* k = info.Kernel(primary.kernel);
    if (k != nullptr && k->autotuned) {
      return absl::FailedPreconditionError(absl::StrCat(
          "kernel ", primary.kernel, " is @triton.autotune'd: its configs own ", knob));
    }
    loc.launch = &primary;
    loc.insert_keyword = true;
    loc.implicit_value = knob == "num_warps" ? kTritonDefaultWarps : kTritonDefaultStages;
    return loc;
  }
  return absl::NotFoundError(absl::StrCat("knob ", knob,
                                          " is neither a launch keyword nor a constexpr "
                                          "parameter with a default"));
}

// A literal launch keyword used for the grid too would leave the grid stale.
absl::Status CheckGrid(absl::string_view source, const std::string& mask,
                       const LaunchSite& site, const std::string& knob, int64_t old_value) {
  std::string grid = site.grid;
  std::string g(absl::StripAsciiWhitespace(grid));
  if (!g.empty() && std::all_of(g.begin(), g.end(), IsIdentChar)) {
    Assignment a = LastAssignment(mask, g, site.offset);
    if (a.found) grid = std::string(source.substr(a.rhs_begin, a.rhs_end - a.rhs_begin));
  }
  if (absl::StrContains(grid, knob)) return absl::OkStatus();  // meta['BLOCK_M'] etc.
  std::string lit = std::to_string(old_value);
  std::string gm = MaskPythonSource(grid);
  if (!FindWord(gm, lit).empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the grid `", grid, "` uses the literal ", lit, " that ", knob,
        " also has; changing ", knob, " alone would break the grid (make the grid use ",
        knob, ")"));
  }
  return absl::OkStatus();
}

// The choice param of the source's template that `knob` names, case-insensitively
// (input_precision -> INPUT_PRECISION), or null: no library, no template header, or no
// such choice param (then the knob takes the integer path).
const TemplateParam* ChoiceParam(absl::string_view knob, const TritonSourceInfo& info,
                                 const TemplateLibrary* library) {
  if (library == nullptr || info.template_id.empty()) return nullptr;
  const TemplateInfo* t = library->Find(info.template_id);
  if (t == nullptr) return nullptr;
  const TemplateParam* exact = t->FindParam(knob);
  if (exact != nullptr && exact->type != "choice") return nullptr;
  for (const TemplateParam& p : t->params) {
    if (p.type == "choice" && absl::EqualsIgnoreCase(p.name, knob)) return &p;
  }
  return nullptr;
}

// Rewrites a choice knob's string literal in *source (see the header).
absl::Status ApplyChoice(const TemplateParam& param, absl::string_view change,
                         const TritonSourceInfo& info, std::string* source, KnobEdit* edit) {
  const std::string value(absl::StripAsciiWhitespace(change));
  if (value.empty()) return absl::InvalidArgumentError("empty knob change");
  if (std::find(param.allowed.begin(), param.allowed.end(), value) == param.allowed.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        param.name, " is a choice of template ", info.template_id, ": '", value,
        "' is not one of its values (allowed: ", absl::StrJoin(param.allowed, ", "), ")"));
  }
  for (const LaunchSite& site : info.launches) {
    const LaunchArg* arg = site.Keyword(param.name);
    if (arg == nullptr) continue;
    const JitKernel* k = info.Kernel(site.kernel);
    if (k != nullptr && k->autotuned) {
      return absl::FailedPreconditionError(absl::StrCat(
          "kernel ", site.kernel, " is @triton.autotune'd: its configs own ", param.name));
    }
    std::optional<absl::string_view> old_text = StringLiteralContent(arg->value);
    if (!old_text) {
      return absl::FailedPreconditionError(absl::StrCat(
          param.name, "=", arg->value, " at the launch of ", site.kernel,
          " is not a string literal"));
    }
    if (*old_text == value) {
      return absl::FailedPreconditionError(absl::StrCat(
          param.name, " stays at '", value, "' under '", change, "' (allowed: ",
          absl::StrJoin(param.allowed, ", "), ")"));
    }
    const char quote = arg->value.front();
    if (value.find_first_of(std::string{quote, '\\', '\n'}) != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          param.name, ": '", value, "' cannot be written inside a ", std::string(1, quote),
          "-quoted literal"));
    }
    edit->knob = param.name;
    edit->old_text = std::string(*old_text);
    edit->new_text = value;
    edit->where = absl::StrCat("launch keyword of ", site.kernel);
    source->replace(arg->value_begin + 1, arg->value.size() - 2, value);
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat("knob ", param.name, " (a choice of template ",
                                          info.template_id,
                                          ") is not a launch keyword of this kernel"));
}

// The autotuned kernel whose configs own `knob`, or null: a launched autotuned kernel
// whose configs set it (or that has a constexpr parameter of that name: its configs
// cannot be read, and the error says why), or for num_warps / num_stages the primary
// launch's kernel when it is autotuned.
const JitKernel* AutotuneOwner(const TritonSourceInfo& info, absl::string_view knob) {
  const bool launch_knob = knob == "num_warps" || knob == "num_stages";
  for (const LaunchSite& site : info.launches) {
    const JitKernel* k = info.Kernel(site.kernel);
    if (k == nullptr || !k->autotuned) continue;
    if (launch_knob) {
      if (&site == &info.launches.front()) return k;
      continue;
    }
    for (const AutotuneConfig& c : k->configs) {
      if (c.values.count(std::string(knob))) return k;
    }
    for (const KernelParam& p : k->params) {
      if (p.constexpr_ && p.name == knob) return k;
    }
  }
  return nullptr;
}

// Adds the configs that `changes` make of `kernel`'s (see the header) to *source.
absl::Status ApplyAutotune(const JitKernel& kernel,
                           const std::map<std::string, std::string>& changes,
                           const TritonSourceInfo& info, const TemplateLibrary* library,
                           std::string* source, std::vector<KnobEdit>* edits) {
  if (!kernel.configs_problem.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "kernel ", kernel.name, " is @triton.autotune'd and its configs cannot be edited: ",
        kernel.configs_problem));
  }
  // Each config's values, num_warps / num_stages at Triton's defaults where not written,
  // so that two configs that launch alike compare equal.
  std::vector<std::map<std::string, int64_t>> present;
  for (const AutotuneConfig& c : kernel.configs) {
    std::map<std::string, int64_t> v = {{"num_warps", kTritonDefaultWarps},
                                        {"num_stages", kTritonDefaultStages}};
    for (const auto& [name, value] : c.values) v[name] = value.value;
    present.push_back(std::move(v));
  }
  std::map<std::string, KnobEdit> first;  // per knob, from the first config it changed
  std::vector<std::string> added;
  std::vector<std::string> unchanged;
  for (size_t i = 0; i < kernel.configs.size(); ++i) {
    const AutotuneConfig& c = kernel.configs[i];
    std::map<std::string, int64_t> values = present[i];
    // Literal replacements and keyword insertions, as (offset in the call, erase, text).
    std::vector<std::tuple<size_t, size_t, std::string>> patch;
    bool applicable = true, changed = false;
    for (const auto& [knob, change] : changes) {
      auto it = c.values.find(knob);
      int64_t current = 0;
      if (it != c.values.end()) {
        current = it->second.value;
      } else if (knob == "num_warps" || knob == "num_stages") {
        current = knob == "num_warps" ? kTritonDefaultWarps : kTritonDefaultStages;
      } else {
        applicable = false;
        break;
      }
      std::string note;
      KAGENT_ASSIGN_OR_RETURN(int64_t next,
                              ApplyChange(current, change, BoundsFor(knob, info, library), &note));
      if (next == current) continue;
      changed = true;
      values[knob] = next;
      if (it != c.values.end()) {
        patch.emplace_back(it->second.begin - c.begin, it->second.end - it->second.begin,
                           std::to_string(next));
      } else {
        patch.emplace_back(c.end - 1 - c.begin, 0, absl::StrCat(", ", knob, "=", next));
      }
      if (!first.count(knob)) {
        KnobEdit e;
        e.knob = knob;
        e.old_value = current;
        e.new_value = next;
        e.note = note;
        first[knob] = std::move(e);
      }
    }
    if (!applicable) continue;
    if (!changed || std::find(present.begin(), present.end(), values) != present.end()) {
      unchanged.push_back(std::to_string(i + 1));
      continue;
    }
    present.push_back(values);
    std::string text = source->substr(c.begin, c.end - c.begin);
    std::sort(patch.begin(), patch.end(),
              [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
    for (const auto& [at, erase, with] : patch) text.replace(at, erase, with);
    added.push_back(std::move(text));
  }
  std::vector<std::string> knobs;
  for (const auto& [knob, change] : changes) knobs.push_back(absl::StrCat(knob, " ", change));
  if (added.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "kernel ", kernel.name, " is @triton.autotune'd: '", absl::StrJoin(knobs, ", "),
        "' gives no config it does not have (",
        unchanged.empty() ? "no config sets every knob changed"
                          : absl::StrCat("bounds or duplicates for configs ",
                                         absl::StrJoin(unchanged, ", ")),
        ")"));
  }
  // After the last config: on lines of their own when it has its line to itself (up to
  // a comma and a comment, which stay with it), else inline after it.
  const AutotuneConfig& last = kernel.configs.back();
  const std::string mask = MaskPythonSource(*source);
  size_t line = source->rfind('\n', last.begin);
  line = line == std::string::npos ? 0 : line + 1;
  const std::string lead = source->substr(line, last.begin - line);
  size_t eol = mask.find('\n', last.end);
  if (eol == std::string::npos) eol = mask.size();
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(
      absl::string_view(mask).substr(last.end, eol - last.end));
  const bool comma = absl::ConsumePrefix(&rest, ",");
  const bool own_line = absl::StripLeadingAsciiWhitespace(lead).empty() &&
                        absl::StripAsciiWhitespace(rest).empty();
  if (own_line) {
    std::string insert;
    for (const std::string& text : added) absl::StrAppend(&insert, "\n", lead, text, ",");
    source->insert(eol, insert);
    if (!comma) source->insert(last.end, ",");
  } else {
    std::string insert;
    for (const std::string& text : added) absl::StrAppend(&insert, ", ", text);
    source->insert(last.end, insert);
  }
  for (auto& [knob, e] : first) {
    e.where = absl::StrCat("autotune configs of ", kernel.name, " (", added.size(),
                           added.size() == 1 ? " config" : " configs", " added; the autotuner "
                           "picks among ", kernel.configs.size() + added.size(), ")");
    edits->push_back(std::move(e));
  }
  return absl::OkStatus();
}

}  // namespace

std::map<std::string, int64_t> CurrentKnobs(absl::string_view source,
                                            const TritonSourceInfo& info) {
  std::map<std::string, int64_t> out;
  std::string mask = MaskPythonSource(source);
  const LaunchSite& primary = info.launches.front();
  for (const LaunchArg& a : primary.args) {
    if (a.name.empty()) continue;
    if (auto s = ResolveInt(mask, source, a.value_begin, a.value_end, primary.offset)) {
      out[a.name] = s->value;
    }
  }
  if (const JitKernel* k = info.Kernel(primary.kernel)) {
    for (const KernelParam& p : k->params) {
      if (!p.constexpr_ || p.default_text.empty() || out.count(p.name)) continue;
      if (auto v = ParseIntLiteral(p.default_text)) out[p.name] = *v;
    }
  }
  out.emplace("num_warps", kTritonDefaultWarps);
  out.emplace("num_stages", kTritonDefaultStages);
  return out;
}

KnobBounds BoundsFor(absl::string_view knob, const TritonSourceInfo& info,
                     const TemplateLibrary* library) {
  if (library != nullptr && !info.template_id.empty()) {
    if (const TemplateInfo* t = library->Find(info.template_id)) {
      if (const TemplateParam* p = t->FindParam(knob)) {
        if (p->type == "pow2" || p->type == "int") return {p->min, p->max, p->type == "pow2"};
      }
    }
  }
  bool dot = false;
  for (const JitKernel& k : info.kernels) dot |= k.uses_dot;
  if (knob == "num_warps") return {1, 32, true};
  if (knob == "num_stages") return {1, 8, false};
  if (absl::StartsWith(knob, "BLOCK") || absl::EndsWith(knob, "_SIZE") ||
      absl::StartsWith(knob, "TILE")) {
    return dot ? KnobBounds{16, 256, true} : KnobBounds{1, 65536, true};
  }
  if (absl::StartsWith(knob, "SPLIT") || absl::StartsWith(knob, "GROUP")) return {1, 4096, false};
  return {1, 1 << 20, false};
}

absl::StatusOr<int64_t> ApplyChange(int64_t current, absl::string_view change,
                                    const KnobBounds& bounds, std::string* note) {
  std::string c(absl::StripAsciiWhitespace(change));
  if (c.empty()) return absl::InvalidArgumentError("empty knob change");
  char op = c[0];
  double value = 0;
  int64_t result = 0;
  bool relative = op == 'x' || op == 'X' || op == '*' || op == '/' || op == '+' || op == '-';
  if (relative) {
    if (!absl::SimpleAtod(c.substr(1), &value) || !std::isfinite(value) || value <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("malformed knob change '", c,
                                                     "' (want N, xN, /N, +N or -N)"));
    }
    switch (op) {
      case '/':
        result = static_cast<int64_t>(std::floor(current / value));
        break;
      case '+':
        result = current + static_cast<int64_t>(value);
        break;
      case '-':
        result = current - static_cast<int64_t>(value);
        break;
      default:
        result = static_cast<int64_t>(std::llround(current * value));
    }
  } else {
    if (!absl::SimpleAtoi(c, &result)) {
      return absl::InvalidArgumentError(absl::StrCat("malformed knob change '", c,
                                                     "' (want N, xN, /N, +N or -N)"));
    }
  }
  std::string notes;
  if (bounds.pow2 && !IsPow2(result)) {
    int64_t r = result;
    if (result <= 0) {
      r = 1;
    } else if (op == '+') {
      r = Pow2Ceil(result);
    } else if (op == '-' || op == '/') {
      r = Pow2Floor(result);
    } else {
      int64_t lo = Pow2Floor(result), hi = Pow2Ceil(result);
      r = (result - lo) <= (hi - result) ? lo : hi;
    }
    absl::StrAppend(&notes, "rounded ", result, " to the power of two ", r);
    result = r;
  }
  if (result < bounds.min || result > bounds.max) {
    int64_t r = std::clamp(result, bounds.min, bounds.max);
    absl::StrAppend(&notes, notes.empty() ? "" : "; ", "clamped ", result, " to ", r,
                    " (bounds [", bounds.min, ", ", bounds.max, "])");
    result = r;
  }
  if (note != nullptr) *note = notes;
  return result;
}

namespace {

// A rendered template's max_tile_elements (the product of its BLOCK_* knobs, as
// TemplateLibrary::Render bounds it) after edits that grow a BLOCK_* knob:
// FAILED_PRECONDITION when the tile now exceeds it. BLOCK_* knobs the primary launch does
// not show are left out of the product.
absl::Status CheckTile(const TuneResult& result, const TemplateLibrary* library) {
  if (library == nullptr) return absl::OkStatus();
  const KnobEdit* grown = nullptr;
  for (const KnobEdit& e : result.edits) {
    if (!e.is_choice() && absl::StartsWith(e.knob, "BLOCK") && e.new_value > e.old_value) {
      grown = &e;
    }
  }
  if (grown == nullptr) return absl::OkStatus();
  KAGENT_ASSIGN_OR_RETURN(TritonSourceInfo info, ParseTritonSource(result.source));
  const TemplateInfo* t = info.template_id.empty() ? nullptr : library->Find(info.template_id);
  if (t == nullptr || t->max_tile_elements <= 0) return absl::OkStatus();
  const std::map<std::string, int64_t> knobs = CurrentKnobs(result.source, info);
  int64_t tile = 1;
  for (const TemplateParam& p : t->params) {
    auto it = knobs.find(p.name);
    if (p.kind != "knob" || !absl::StartsWith(p.name, "BLOCK") || it == knobs.end()) continue;
    tile = it->second > 0 && tile > t->max_tile_elements / it->second ? t->max_tile_elements + 1
                                                                        : tile * it->second;
  }
  if (tile <= t->max_tile_elements) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      grown->knob, " ", grown->old_value, " -> ", grown->new_value, " makes a tile of more than ",
      t->max_tile_elements, " elements (product of BLOCK_*), the bound of template ", t->id));
}

// Rewrites, in the comments of `source`, each statement of an edited knob's old value
// ("BLOCK_K=512", "BLOCK_K = 512": the knob's exact name, then '=', then the old integer
// not followed by another digit or name character) to its new value, so a header comment
// such as "BLOCK_M=32 rows x BLOCK_K=512 columns" keeps saying what the code does. Other
// text of the comments, and string literals, are left as they are.
void UpdateComments(const std::vector<KnobEdit>& edits, std::string* source) {
  std::vector<SourceSpan> spans = CommentsAndStrings(*source);
  for (auto span = spans.rbegin(); span != spans.rend(); ++span) {
    if (span->kind != SourceSpan::kComment) continue;
    std::string text = source->substr(span->begin, span->end - span->begin);
    bool changed = false;
    for (const KnobEdit& e : edits) {
      const std::string old_value = std::to_string(e.old_value);
      const std::string new_value = std::to_string(e.new_value);
      for (size_t at = text.find(e.knob); at != std::string::npos; at = text.find(e.knob, at + 1)) {
        if (at > 0 && IsIdentChar(text[at - 1])) continue;
        size_t k = at + e.knob.size();
        while (k < text.size() && text[k] == ' ') ++k;
        if (k >= text.size() || text[k] != '=') continue;
        ++k;
        while (k < text.size() && text[k] == ' ') ++k;
        if (text.compare(k, old_value.size(), old_value) != 0) continue;
        size_t end = k + old_value.size();
        if (end < text.size() && IsIdentChar(text[end])) continue;
        text.replace(k, old_value.size(), new_value);
        changed = true;
      }
    }
    if (changed) source->replace(span->begin, span->end - span->begin, text);
  }
}

// A render of a template in a language other than Triton (CUDA C++): its knobs are the
// template's knob params, moved in the params and rendered again (see the header).
absl::StatusOr<TuneResult> ApplyTemplateParamChanges(
    const TemplateLibrary& library, const RenderMatch& render,
    const std::map<std::string, std::string>& changes) {
  const TemplateInfo& t = *render.info;
  std::map<std::string, std::string> params = render.params;
  TuneResult result;
  for (const auto& [knob, change] : changes) {
    const TemplateParam* p = nullptr;
    std::vector<std::string> knobs;
    for (const TemplateParam& q : t.params) {
      if (q.kind != "knob") continue;
      knobs.push_back(q.name);
      if (absl::EqualsIgnoreCase(q.name, knob)) p = &q;
    }
    if (p == nullptr) {
      return absl::NotFoundError(absl::StrCat("knob ", knob, ": not a knob of ", t.language,
                                              " template ", t.id, " (its knobs: ",
                                              absl::StrJoin(knobs, ", "), ")"));
    }
    KnobEdit edit;
    edit.knob = p->name;
    edit.where = absl::StrCat("param of ", t.language, " template ", t.id);
    std::string& value = params[p->name];
    if (p->type == "choice") {
      KAGENT_ASSIGN_OR_RETURN(edit.new_text, TemplateLibrary::CheckValue(*p, change));
      edit.old_text = value;
      if (edit.new_text == value) {
        return absl::FailedPreconditionError(absl::StrCat(p->name, " stays at ", value));
      }
      value = edit.new_text;
    } else if (p->type == "pow2" || p->type == "int") {
      KnobBounds bounds{p->min, p->max, p->type == "pow2"};
      edit.old_value = std::stoll(value);
      KAGENT_ASSIGN_OR_RETURN(edit.new_value,
                              ApplyChange(edit.old_value, change, bounds, &edit.note));
      if (edit.new_value == edit.old_value) {
        return absl::FailedPreconditionError(absl::StrCat(
            p->name, " stays at ", value, " under '", change, "' (bounds [", p->min, ", ",
            p->max, "]", bounds.pow2 ? ", powers of two" : "", ")"));
      }
      value = std::to_string(edit.new_value);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("knob ", p->name, " of template ", t.id, " is a float: not tunable"));
    }
    result.edits.push_back(std::move(edit));
  }
  absl::StatusOr<std::string> source = library.Render(t.id, params);
  if (!source.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("template ", t.id, " does not render so: ", source.status().message()));
  }
  result.source = *std::move(source);
  return result;
}

}  // namespace

absl::StatusOr<TuneResult> ApplyKnobChanges(absl::string_view source,
                                            const std::map<std::string, std::string>& changes,
                                            const TemplateLibrary* library) {
  TuneResult result;
  result.source = std::string(source);
  if (changes.empty()) return absl::InvalidArgumentError("no knob changes given");
  if (library != nullptr) {
    absl::StatusOr<RenderMatch> render = library->MatchRender(source);
    if (render.ok() && render->info->language != "triton") {
      return ApplyTemplateParamChanges(*library, *render, changes);
    }
  }
  // Knobs an autotuned kernel owns: its configs take all of them at once.
  std::map<std::string, std::string> rest;
  {
    KAGENT_ASSIGN_OR_RETURN(TritonSourceInfo info, ParseTritonSource(result.source));
    // Keyed by where the configs list ends (kernels sharing one list share its changes);
    // the last list first, so an insertion leaves the offsets before it valid.
    std::map<size_t, std::pair<const JitKernel*, std::map<std::string, std::string>>,
             std::greater<size_t>>
        owned;
    for (const auto& [knob, change] : changes) {
      if (ChoiceParam(knob, info, library) == nullptr) {
        if (const JitKernel* owner = AutotuneOwner(info, knob)) {
          size_t key = owner->configs.empty() ? owner->def_offset : owner->configs.back().end;
          owned[key].first = owner;
          owned[key].second[knob] = change;
          continue;
        }
      }
      rest[knob] = change;
    }
    for (const auto& [end, group] : owned) {
      KAGENT_RETURN_IF_ERROR(ApplyAutotune(*group.first, group.second, info, library,
                                           &result.source, &result.edits));
    }
  }
  std::vector<KnobEdit> values;  // the integer edits of a value in place (not autotune's)
  for (const auto& [knob, change] : rest) {
    KAGENT_ASSIGN_OR_RETURN(TritonSourceInfo info, ParseTritonSource(result.source));
    if (const TemplateParam* choice = ChoiceParam(knob, info, library)) {
      KnobEdit edit;
      KAGENT_RETURN_IF_ERROR(ApplyChoice(*choice, change, info, &result.source, &edit));
      result.edits.push_back(std::move(edit));
      continue;
    }
    std::string mask = MaskPythonSource(result.source);
    KAGENT_ASSIGN_OR_RETURN(KnobLocation loc, Locate(result.source, mask, info, knob));
    KnobBounds bounds = BoundsFor(knob, info, library);
    int64_t old_value = loc.site ? loc.site->value : loc.implicit_value;
    KnobEdit edit;
    edit.knob = knob;
    edit.old_value = old_value;
    KAGENT_ASSIGN_OR_RETURN(edit.new_value, ApplyChange(old_value, change, bounds, &edit.note));
    if (edit.new_value == old_value) {
      return absl::FailedPreconditionError(absl::StrCat(
          knob, " stays at ", old_value, " under '", change, "' (bounds [", bounds.min, ", ",
          bounds.max, "]", bounds.pow2 ? ", powers of two" : "", ")",
          edit.note.empty() ? "" : absl::StrCat("; ", edit.note)));
    }
    if (loc.insert_keyword) {
      size_t close = loc.launch->close_paren;
      size_t k = close;
      while (k > 0 && std::isspace(static_cast<unsigned char>(mask[k - 1]))) --k;
      bool comma = k > 0 && (mask[k - 1] == ',' || mask[k - 1] == '(');
      std::string text = absl::StrCat(comma ? " " : ", ", knob, "=", edit.new_value);
      result.source.insert(k, text);
      edit.where = absl::StrCat("added launch keyword of ", loc.launch->kernel,
                                " (Triton default was ", old_value, ")");
    } else {
      KAGENT_RETURN_IF_ERROR(
          CheckGrid(result.source, mask, *loc.launch, loc.grid_name, old_value));
      result.source.replace(loc.site->begin, loc.site->end - loc.site->begin,
                            std::to_string(edit.new_value));
      edit.where = loc.site->where;
    }
    values.push_back(edit);
    result.edits.push_back(std::move(edit));
  }
  UpdateComments(values, &result.source);
  KAGENT_RETURN_IF_ERROR(CheckTile(result, library));
  return result;
}

}  // namespace kagent
