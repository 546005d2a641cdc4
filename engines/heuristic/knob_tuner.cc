#include "engines/heuristic/knob_tuner.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status.h"

namespace kagent {
namespace {

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The source with comments and string literals blanked out (same length, newlines
// kept), so brackets and commas can be matched on it. With blank_strings false only the
// comments are blanked: string literals stay, e.g. to trim around a literal value.
std::string MaskSource(absl::string_view src, bool blank_strings = true) {
  std::string m(src);
  size_t i = 0, n = src.size();
  while (i < n) {
    char c = src[i];
    if (c == '#') {
      while (i < n && src[i] != '\n') m[i++] = ' ';
      continue;
    }
    if (c == '"' || c == '\'') {
      bool triple = i + 2 < n && src[i + 1] == c && src[i + 2] == c;
      size_t start = i;
      i += triple ? 3 : 1;
      while (i < n) {
        if (src[i] == '\\') {
          i += 2;
          continue;
        }
        if (triple) {
          if (i + 2 < n && src[i] == c && src[i + 1] == c && src[i + 2] == c) {
            i += 3;
            break;
          }
        } else if (src[i] == c || src[i] == '\n') {
          ++i;
          break;
        }
        ++i;
      }
      i = std::min(i, n);
      for (size_t k = start; k < i && blank_strings; ++k) {
        if (m[k] != '\n') m[k] = ' ';
      }
      continue;
    }
    ++i;
  }
  return m;
}

// Index of the bracket closing the one at `open`, or npos.
size_t MatchBracket(const std::string& mask, size_t open) {
  int depth = 0;
  for (size_t i = open; i < mask.size(); ++i) {
    char c = mask[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') {
      if (--depth == 0) return i;
    }
  }
  return std::string::npos;
}

// Top-level comma-separated pieces of mask[begin, end) as [b, e) ranges.
std::vector<std::pair<size_t, size_t>> SplitTopLevel(const std::string& mask, size_t begin,
                                                     size_t end) {
  std::vector<std::pair<size_t, size_t>> out;
  int depth = 0;
  size_t start = begin;
  for (size_t i = begin; i < end; ++i) {
    char c = mask[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back({start, i});
      start = i + 1;
    }
  }
  out.push_back({start, end});
  return out;
}

void Trim(const std::string& mask, size_t* b, size_t* e) {
  while (*b < *e && std::isspace(static_cast<unsigned char>(mask[*b]))) ++*b;
  while (*e > *b && std::isspace(static_cast<unsigned char>(mask[*e - 1]))) --*e;
}

std::optional<int64_t> ParseIntLiteral(absl::string_view text) {
  std::string t(absl::StripAsciiWhitespace(text));
  t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
  int64_t v = 0;
  if (t.empty() || !std::all_of(t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return std::nullopt;
  if (!absl::SimpleAtoi(t, &v)) return std::nullopt;
  return v;
}

// The content of a one-line quoted string literal ('...' or "..." without escapes or
// prefixes), or nullopt.
std::optional<absl::string_view> StringLiteralContent(absl::string_view value) {
  if (value.size() < 2) return std::nullopt;
  const char q = value.front();
  if ((q != '"' && q != '\'') || value.back() != q) return std::nullopt;
  absl::string_view content = value.substr(1, value.size() - 2);
  if (content.find_first_of(std::string{q, '\\', '\n'}) != absl::string_view::npos) {
    return std::nullopt;
  }
  return content;
}

// Finds every identifier `word` in mask at a word boundary.
std::vector<size_t> FindWord(const std::string& mask, absl::string_view word, size_t from = 0) {
  std::vector<size_t> out;
  size_t pos = from;
  while ((pos = mask.find(word.data(), pos, word.size())) != std::string::npos) {
    bool left = pos == 0 || !IsIdentChar(mask[pos - 1]);
    bool right = pos + word.size() >= mask.size() || !IsIdentChar(mask[pos + word.size()]);
    if (left && right) out.push_back(pos);
    pos += word.size();
  }
  return out;
}

// The end of the function body starting at def_offset: the next non-blank line that
// starts at column 0 (decorators or statements), or the end of the source.
size_t FunctionEnd(const std::string& mask, size_t def_offset) {
  size_t pos = mask.find('\n', def_offset);
  while (pos != std::string::npos && pos + 1 < mask.size()) {
    char c = mask[pos + 1];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return pos + 1;
    pos = mask.find('\n', pos + 1);
  }
  return mask.size();
}

// The value range of the last `name = <rhs>` assignment that starts before `limit`.
struct Assignment {
  size_t rhs_begin = 0, rhs_end = 0;
  bool found = false;
};

Assignment LastAssignment(const std::string& mask, absl::string_view name, size_t limit) {
  Assignment best;
  for (size_t pos : FindWord(mask, name)) {
    if (pos >= limit) break;
    size_t line = mask.rfind('\n', pos);
    line = line == std::string::npos ? 0 : line + 1;
    bool only_space = true;
    for (size_t k = line; k < pos; ++k) only_space &= mask[k] == ' ' || mask[k] == '\t';
    if (!only_space) continue;
    size_t k = pos + name.size();
    while (k < mask.size() && (mask[k] == ' ' || mask[k] == '\t')) ++k;
    if (k + 1 >= mask.size() || mask[k] != '=' || mask[k + 1] == '=') continue;
    size_t b = k + 1;
    size_t e = mask.find('\n', b);
    if (e == std::string::npos) e = mask.size();
    Trim(mask, &b, &e);
    best = {b, e, true};
  }
  return best;
}

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
    size_t q = b;
    while (q < e && IsIdentChar(mask[q])) ++q;
    size_t r = q;
    while (r < e && mask[r] == ' ') ++r;
    bool keyword = q > b && r < e && mask[r] == '=' && (r + 1 >= e || mask[r + 1] != '=');
    if (keyword && source.substr(b, q - b) == "configs") {
      vb = r + 1, ve = e;
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
      size_t q = ab;
      while (q < ae && IsIdentChar(mask[q])) ++q;
      size_t r = q;
      while (r < ae && mask[r] == ' ') ++r;
      bool keyword = q > ab && r < ae && mask[r] == '=' && (r + 1 >= ae || mask[r + 1] != '=');
      std::string key = keyword ? std::string(source.substr(ab, q - ab)) : "";
      size_t xb = keyword ? r + 1 : ab, xe = ae;
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
  std::string mask = MaskSource(source);
  // Launch arguments are trimmed on this one, so a string literal value (blank in `mask`)
  // is kept: INPUT_PRECISION="ieee".
  const std::string comments_masked = MaskSource(source, /*blank_strings=*/false);
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
        size_t q = b;
        while (q < e && IsIdentChar(mask[q])) ++q;
        size_t r = q;
        while (r < e && mask[r] == ' ') ++r;
        if (q > b && r < e && mask[r] == '=' && (r + 1 >= e || mask[r + 1] != '=')) {
          arg.name = std::string(source.substr(b, q - b));
          b = r + 1;
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

namespace {

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
  std::string gm = MaskSource(grid);
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
  const std::string mask = MaskSource(*source);
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
  std::string mask = MaskSource(source);
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

}  // namespace

absl::StatusOr<TuneResult> ApplyKnobChanges(absl::string_view source,
                                            const std::map<std::string, std::string>& changes,
                                            const TemplateLibrary* library) {
  TuneResult result;
  result.source = std::string(source);
  if (changes.empty()) return absl::InvalidArgumentError("no knob changes given");
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
  for (const auto& [knob, change] : rest) {
    KAGENT_ASSIGN_OR_RETURN(TritonSourceInfo info, ParseTritonSource(result.source));
    if (const TemplateParam* choice = ChoiceParam(knob, info, library)) {
      KnobEdit edit;
      KAGENT_RETURN_IF_ERROR(ApplyChoice(*choice, change, info, &result.source, &edit));
      result.edits.push_back(std::move(edit));
      continue;
    }
    std::string mask = MaskSource(result.source);
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
    result.edits.push_back(std::move(edit));
  }
  KAGENT_RETURN_IF_ERROR(CheckTile(result, library));
  return result;
}

}  // namespace kagent
