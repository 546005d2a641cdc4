// The Triton source reader: see triton_source.h.
#include "engines/heuristic/triton_source.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/python_source.h"

namespace kagent {
namespace {

// Reads the configs of the @triton.autotune decorator at `mark` into k->configs, or says
// in k->configs_problem why they cannot be edited. `comments_masked`: the source with
// only its comments blanked (string keys are trimmed on it).
void ParseAutotuneConfigs(absl::string_view source, const std::string& mask,
                          const std::string& comments_masked, size_t mark, JitKernel* k) {
  auto fail = [&](std::string why) { k->configs_problem = std::move(why); };
  size_t open = mark + std::string("autotune").size();
  while (open < mask.size() && mask[open] == ' ') ++open;
  size_t close = open < mask.size() && mask[open] == '(' ? MatchBracket(mask, open)
                                                           : std::string::npos;
  if (close == std::string::npos) return fail("the autotune decorator has no argument list");
  // configs=..., else the first positional argument.
  size_t vb = std::string::npos, ve = 0;
  int positional = 0;
  for (auto [b, e] : SplitTopLevel(mask, open + 1, close)) {
    Trim(mask, &b, &e);
    if (b >= e) continue;
    size_t q = 0, v = 0;
    const bool keyword = KeywordArgument(mask, b, e, &q, &v);
    if (keyword && source.substr(b, q - b) == "configs") {
      vb = v, ve = e;
    } else if (!keyword && positional++ == 0) {
      vb = b, ve = e;
    }
  }
  if (vb == std::string::npos) return fail("the autotune decorator names no configs");
  Trim(mask, &vb, &ve);
  std::string name(source.substr(vb, ve - vb));
  if (!name.empty() && std::all_of(name.begin(), name.end(), IsIdentChar)) {
    Assignment a = LastAssignment(mask, name, mark);
    if (!a.found) return fail(absl::StrCat("configs `", name, "` is not assigned in the source"));
    vb = a.rhs_begin, ve = a.rhs_end;
    // A list literal may span lines: its end is its closing bracket.
    size_t bracket = vb < mask.size() && mask[vb] == '[' ? MatchBracket(mask, vb)
                                                         : std::string::npos;
    if (bracket != std::string::npos) ve = bracket + 1;
  }
  if (vb >= mask.size() || mask[vb] != '[' || MatchBracket(mask, vb) == std::string::npos ||
      MatchBracket(mask, vb) + 1 != ve) {
    return fail(absl::StrCat("configs `", source.substr(vb, std::min<size_t>(ve - vb, 40)),
                             "` is not a list literal of triton.Config"));
  }
  for (auto [b, e] : SplitTopLevel(mask, vb + 1, ve - 1)) {
    Trim(mask, &b, &e);
    if (b >= e) continue;
    size_t paren = mask.find('(', b);
    absl::string_view callee =
        paren < e ? absl::StripAsciiWhitespace(source.substr(b, paren - b)) : "";
    if ((callee != "triton.Config" && callee != "Config") || MatchBracket(mask, paren) + 1 != e) {
      return fail(absl::StrCat("config `", source.substr(b, std::min<size_t>(e - b, 40)),
                               "` is not a triton.Config(...) call"));
    }
    AutotuneConfig config;
    config.begin = b;
    config.end = e;
    int arg_index = 0;
    for (auto [ab, ae] : SplitTopLevel(mask, paren + 1, e - 1)) {
      Trim(mask, &ab, &ae);
      if (ab >= ae) continue;
      size_t q = 0, v = 0;
      const bool keyword = KeywordArgument(mask, ab, ae, &q, &v);
      std::string key = keyword ? std::string(source.substr(ab, q - ab)) : "";
      size_t xb = keyword ? v : ab, xe = ae;
      Trim(mask, &xb, &xe);
      bool meta = keyword ? key == "kwargs" : arg_index++ == 0;
      if (meta) {
        if (mask[xb] != '{' || MatchBracket(mask, xb) + 1 != xe) {
          return fail("a triton.Config's meta-parameters are not a dict literal");
        }
        for (auto [db, de] : SplitTopLevel(mask, xb + 1, xe - 1)) {
          Trim(comments_masked, &db, &de);
          if (db >= de) continue;
          size_t colon = mask.find(':', db);
          if (colon >= de) return fail("a triton.Config's dict entry has no ':'");
          size_t kb = db, ke = colon, lb = colon + 1, le = de;
          Trim(comments_masked, &kb, &ke);
          Trim(mask, &lb, &le);
          std::optional<absl::string_view> meta_name =
              StringLiteralContent(source.substr(kb, ke - kb));
          std::optional<int64_t> v = ParseIntLiteral(source.substr(lb, le - lb));
          if (meta_name && v) config.values[std::string(*meta_name)] = {*v, lb, le};
        }
      } else if (key == "num_warps" || key == "num_stages") {
        if (std::optional<int64_t> v = ParseIntLiteral(source.substr(xb, xe - xb))) {
          config.values[key] = {*v, xb, xe};
        }
      }
    }
    k->configs.push_back(std::move(config));
  }
  if (k->configs.empty()) return fail("the autotune configs list is empty");
}

}  // namespace

const LaunchArg* LaunchSite::Keyword(absl::string_view name) const {
  for (const LaunchArg& a : args) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

const JitKernel* TritonSourceInfo::Kernel(absl::string_view name) const {
  for (const JitKernel& k : kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

absl::StatusOr<TritonSourceInfo> ParseTritonSource(absl::string_view source) {
  TritonSourceInfo info;
  std::string mask = MaskPythonSource(source);
  // Launch arguments are trimmed on this one, so a string literal value (blank in `mask`)
  // is kept: INPUT_PRECISION="ieee".
  const std::string comments_masked = MaskPythonSource(source, /*blank_strings=*/false);
  {
    absl::string_view first = source.substr(0, source.find('\n'));
    if (absl::ConsumePrefix(&first, "# kagent-template:")) {
      info.template_id = std::string(absl::StripAsciiWhitespace(first));
    }
  }
  // Decorated kernels: the next `def` after each triton.jit / @jit.
  std::vector<size_t> jit_marks = FindWord(mask, "jit");
  std::vector<size_t> autotune_marks = FindWord(mask, "autotune");
  std::set<size_t> defs_seen;
  for (size_t mark : jit_marks) {
    size_t line = mask.rfind('\n', mark);
    line = line == std::string::npos ? 0 : line + 1;
    absl::string_view prefix(mask.data() + line, mark - line);
    prefix = absl::StripLeadingAsciiWhitespace(prefix);
    if (prefix != "@" && prefix != "@triton." && prefix != "@tl.") continue;
    size_t def = mask.find("def ", mark);
    if (def == std::string::npos || defs_seen.count(def)) continue;
    defs_seen.insert(def);
    JitKernel k;
    k.def_offset = def;
    size_t nb = def + 4;
    while (nb < mask.size() && mask[nb] == ' ') ++nb;
    size_t ne = nb;
    while (ne < mask.size() && IsIdentChar(mask[ne])) ++ne;
    k.name = std::string(source.substr(nb, ne - nb));
    size_t open = mask.find('(', ne);
    size_t close = open == std::string::npos ? open : MatchBracket(mask, open);
    if (close == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("kernel ", k.name, ": unbalanced parameters"));
    }
    for (auto [b, e] : SplitTopLevel(mask, open + 1, close)) {
      Trim(mask, &b, &e);
      if (b >= e) continue;
      KernelParam p;
      size_t i = b;
      while (i < e && IsIdentChar(mask[i])) ++i;
      p.name = std::string(source.substr(b, i - b));
      absl::string_view rest(mask.data() + i, e - i);
      size_t eq = std::string::npos;
      int depth = 0;
      for (size_t j = i; j < e; ++j) {
        char c = mask[j];
        if (c == '(' || c == '[') ++depth;
        if (c == ')' || c == ']') --depth;
        if (c == '=' && depth == 0) {
          eq = j;
          break;
        }
      }
      absl::string_view annotation = rest.substr(0, eq == std::string::npos ? rest.size() : eq - i);
      p.constexpr_ = absl::StrContains(annotation, "constexpr");
      if (eq != std::string::npos) {
        size_t db = eq + 1, de = e;
        Trim(mask, &db, &de);
        p.default_text = std::string(source.substr(db, de - db));
        p.default_begin = db;
        p.default_end = de;
      }
      k.params.push_back(std::move(p));
    }
    size_t body_end = FunctionEnd(mask, def);
    absl::string_view body(mask.data() + def, body_end - def);
    k.uses_dot = absl::StrContains(body, "tl.dot(") || absl::StrContains(body, ".dot(");
    // Autotuned when an autotune decorator sits between the previous def and this one.
    size_t prev_def = def == 0 ? std::string::npos : mask.rfind("def ", def - 1);
    for (size_t a : autotune_marks) {
      if (a < def && (prev_def == std::string::npos || a > prev_def)) {
        k.autotuned = true;
        ParseAutotuneConfigs(source, mask, comments_masked, a, &k);
      }
    }
    info.kernels.push_back(std::move(k));
  }
  if (info.kernels.empty()) {
    return absl::InvalidArgumentError("no @triton.jit kernel in the source");
  }
  for (const JitKernel& k : info.kernels) {
    for (size_t pos : FindWord(mask, k.name)) {
      size_t i = pos + k.name.size();
      while (i < mask.size() && (mask[i] == ' ' || mask[i] == '\t')) ++i;
      if (i >= mask.size() || mask[i] != '[') continue;
      size_t gclose = MatchBracket(mask, i);
      if (gclose == std::string::npos) continue;
      size_t j = gclose + 1;
      while (j < mask.size() && std::isspace(static_cast<unsigned char>(mask[j]))) ++j;
      if (j >= mask.size() || mask[j] != '(') continue;
      size_t close = MatchBracket(mask, j);
      if (close == std::string::npos) continue;
      LaunchSite site;
      site.kernel = k.name;
      site.offset = pos;
      site.close_paren = close;
      size_t gb = i + 1, ge = gclose;
      Trim(mask, &gb, &ge);
      site.grid = std::string(source.substr(gb, ge - gb));
      for (auto [b, e] : SplitTopLevel(mask, j + 1, close)) {
        Trim(comments_masked, &b, &e);
        if (b >= e) continue;
        LaunchArg arg;
        size_t q = 0, v = 0;
        if (KeywordArgument(mask, b, e, &q, &v)) {
          arg.name = std::string(source.substr(b, q - b));
          b = v;
          Trim(comments_masked, &b, &e);
        }
        arg.value = std::string(source.substr(b, e - b));
        arg.value_begin = b;
        arg.value_end = e;
        site.args.push_back(std::move(arg));
      }
      info.launches.push_back(std::move(site));
    }
  }
  std::sort(info.launches.begin(), info.launches.end(),
            [](const LaunchSite& a, const LaunchSite& b) { return a.offset < b.offset; });
  if (info.launches.empty()) {
    return absl::InvalidArgumentError("no launch site `kernel[grid](...)` of a @triton.jit kernel");
  }
  return info;
}

}  // namespace kagent
