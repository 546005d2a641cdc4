#include "kernel_model/optimization_db.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/install_paths.h"
#include "kernel_model/categories.h"

namespace kagent {
namespace {

using nlohmann::json;

const std::vector<std::string>& KnownLimiters() {
  static const auto* limiters = new std::vector<std::string>{
      "registers", "shared_memory", "blocks_per_sm", "warps", "dram_bandwidth", "l2_bandwidth",
      "l1_bandwidth", "tensor_pipe", "fma_pipe", "launch_overhead", "grid_size",
      "long_scoreboard", "short_scoreboard", "barrier", "memory_throttle", "mio_throttle",
      "lg_throttle", "math_pipe_throttle", "wait", "not_selected", "no_instruction"};
  return *limiters;
}

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

bool IsKebabCase(const std::string& id) {
  if (id.empty() || !std::islower(static_cast<unsigned char>(id.front())) || id.back() == '-') {
    return false;
  }
  for (size_t i = 0; i < id.size(); ++i) {
    char c = id[i];
    bool ok = std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
              (c == '-' && id[i - 1] != '-');
    if (!ok) return false;
  }
  return true;
}

// Parses "sm_NN", "sm_NNa" or "sm_NN+" into the capability NN; false otherwise.
bool ParseArch(absl::string_view arch, int* capability, bool* or_newer) {
  if (!absl::StartsWith(arch, "sm_")) return false;
  arch.remove_prefix(3);
  *or_newer = absl::EndsWith(arch, "+");
  if (*or_newer) arch.remove_suffix(1);
  if (absl::EndsWith(arch, "a")) arch.remove_suffix(1);
  return !arch.empty() && absl::SimpleAtoi(arch, capability);
}

// Validation of one JSON document with precise error locations.
class Validator {
 public:
  explicit Validator(std::string origin) : origin_(std::move(origin)) {}

  absl::Status Error(const std::string& where, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(origin_, ": ", where, ": ", what));
  }

  absl::Status CheckKeys(const json& object, const std::string& where,
                         const std::set<std::string>& required, const std::set<std::string>& optional) const {
    for (const auto& key : required) {
      if (!object.contains(key)) return Error(where, absl::StrCat("missing required field '", key, "'"));
    }
    for (const auto& [key, value] : object.items()) {
      if (!required.count(key) && !optional.count(key)) {
        std::set<std::string> all = required;
        all.insert(optional.begin(), optional.end());
        return Error(where, absl::StrCat("unknown field '", key, "' (expected one of: ",
                                         absl::StrJoin(all, ", "), ")"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status String(const json& value, const std::string& where, std::string* out,
                      bool allow_empty = false) const {
    if (!value.is_string()) return Error(where, absl::StrCat("must be a string, got ", value.type_name()));
    *out = value.get<std::string>();
    if (!allow_empty && out->empty()) return Error(where, "must not be empty");
    return absl::OkStatus();
  }

  absl::Status Number(const json& value, const std::string& where, double* out) const {
    if (!value.is_number()) return Error(where, absl::StrCat("must be a number, got ", value.type_name()));
    *out = value.get<double>();
    if (!std::isfinite(*out)) return Error(where, "must be finite");
    return absl::OkStatus();
  }

  absl::Status StringList(const json& value, const std::string& where, std::vector<std::string>* out,
                          bool allow_empty) const {
    if (!value.is_array()) return Error(where, absl::StrCat("must be a list of strings, got ", value.type_name()));
    if (!allow_empty && value.empty()) return Error(where, "must not be empty");
    for (size_t i = 0; i < value.size(); ++i) {
      std::string item;
      absl::Status s = String(value[i], absl::StrCat(where, "[", i, "]"), &item);
      if (!s.ok()) return s;
      out->push_back(std::move(item));
    }
    return absl::OkStatus();
  }

  absl::Status StringMap(const json& value, const std::string& where,
                         std::map<std::string, std::string>* out) const {
    if (!value.is_object()) return Error(where, absl::StrCat("must be an object, got ", value.type_name()));
    for (const auto& [key, item] : value.items()) {
      std::string text;
      absl::Status s = String(item, absl::StrCat(where, ".", key), &text);
      if (!s.ok()) return s;
      (*out)[key] = text;
    }
    return absl::OkStatus();
  }

 private:
  std::string origin_;
};

}  // namespace

bool MetricCondition::Holds(double measured) const {
  if (op == ">") return measured > value;
  if (op == ">=") return measured >= value;
  if (op == "<") return measured < value;
  if (op == "<=") return measured <= value;
  if (op == "==") return measured == value;
  if (op == "!=") return measured != value;
  return false;
}

const std::vector<std::string>& KnownOpClasses() {
  static const auto* classes = new std::vector<std::string>{
      "*", "gemm", "bmm", "matvec", "elementwise", "reduction", "softmax", "norm", "scan",
      "loss", "pooling", "conv", "attention", "transpose", "embedding"};
  return *classes;
}

absl::StatusOr<KnobDirection> ParseKnobChange(absl::string_view value) {
  if (value.empty()) return absl::InvalidArgumentError("empty knob change");
  const char first = value.front();
  absl::string_view rest = value.substr(1);
  double number = 0;
  if (first == 'x' || first == '/' || first == '+' || first == '-') {
    if (!absl::SimpleAtod(rest, &number) || !std::isfinite(number) || number <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "knob change '", value, "': '", std::string(1, first), "' must be followed by a positive number"));
    }
    if (first == 'x') {
      if (number == 1) return absl::InvalidArgumentError(absl::StrCat("knob change '", value, "' changes nothing"));
      return number > 1 ? KnobDirection::kUp : KnobDirection::kDown;
    }
    if (first == '/') {
      if (number == 1) return absl::InvalidArgumentError(absl::StrCat("knob change '", value, "' changes nothing"));
      return number > 1 ? KnobDirection::kDown : KnobDirection::kUp;
    }
    return first == '+' ? KnobDirection::kUp : KnobDirection::kDown;
  }
  // A literal: a number or an identifier.
  if (absl::SimpleAtod(value, &number)) return KnobDirection::kSet;
  for (char c : value) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
      return absl::InvalidArgumentError(absl::StrCat(
          "knob change '", value, "': expected xN, /N, +N, -N, a number or an identifier"));
    }
  }
  return KnobDirection::kSet;
}

bool KnobChangesContradict(absl::string_view a, absl::string_view b) {
  auto da = ParseKnobChange(a);
  auto db = ParseKnobChange(b);
  if (!da.ok() || !db.ok()) return false;
  if (*da == KnobDirection::kSet || *db == KnobDirection::kSet) {
    return *da == KnobDirection::kSet && *db == KnobDirection::kSet && a != b;
  }
  return *da != *db;
}

bool ArchMatches(absl::string_view pattern_arch, absl::string_view gpu_arch) {
  if (pattern_arch == "*") return true;
  int want = 0, have = 0;
  bool or_newer = false, ignored = false;
  if (!ParseArch(pattern_arch, &want, &or_newer) || !ParseArch(gpu_arch, &have, &ignored)) return false;
  return or_newer ? have >= want : have == want;
}

const Pattern* OptimizationDb::Find(absl::string_view id) const {
  for (const Pattern& p : patterns_) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

bool OptimizationDb::Conflict(const Pattern& a, const Pattern& b) const {
  return Contains(a.conflicts_with, b.id) || Contains(b.conflicts_with, a.id);
}

absl::StatusOr<OptimizationDb> OptimizationDb::LoadFromFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("optimization database ", path, ": cannot open"));
  std::ostringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

absl::StatusOr<OptimizationDb> OptimizationDb::Parse(absl::string_view json_text, absl::string_view origin) {
  Validator v{std::string(origin)};
  json doc;
  try {
    doc = json::parse(json_text.begin(), json_text.end());
  } catch (const json::exception& e) {
    return v.Error("JSON", e.what());
  }
  if (!doc.is_object()) return v.Error("top level", "must be an object");
  absl::Status s = v.CheckKeys(doc, "top level", {"version", "patterns", "knobs", "templates"}, {"description"});
  if (!s.ok()) return s;

  OptimizationDb db;
  if (!doc["version"].is_number_integer() || doc["version"].get<int64_t>() < 1) {
    return v.Error("version", "must be an integer >= 1");
  }
  db.version_ = static_cast<int>(doc["version"].get<int64_t>());
  if (s = v.StringMap(doc["knobs"], "knobs", &db.knobs_); !s.ok()) return s;
  if (s = v.StringMap(doc["templates"], "templates", &db.templates_); !s.ok()) return s;
  const json& patterns = doc["patterns"];
  if (!patterns.is_array() || patterns.empty()) return v.Error("patterns", "must be a non-empty list");

  std::set<std::string> ids;
  for (size_t i = 0; i < patterns.size(); ++i) {
    const json& p = patterns[i];
    std::string where = absl::StrCat("patterns[", i, "]");
    if (!p.is_object()) return v.Error(where, "must be an object");
    if (p.contains("id") && p["id"].is_string()) {
      where = absl::StrCat(where, " (id '", p["id"].get<std::string>(), "')");
    }
    s = v.CheckKeys(p, where,
                    {"id", "title", "preconditions", "fix", "rationale", "expected_effect",
                     "expected_speedup", "risks", "conflicts_with"},
                    {"knob_changes", "template_switch", "target", "code_markers"});
    if (!s.ok()) return s;
    Pattern out;
    if (s = v.String(p["id"], where + ".id", &out.id); !s.ok()) return s;
    if (!IsKebabCase(out.id)) return v.Error(where + ".id", "must be kebab-case ([a-z][a-z0-9-]*)");
    if (!ids.insert(out.id).second) return v.Error(where + ".id", "duplicate id");
    if (s = v.String(p["title"], where + ".title", &out.title); !s.ok()) return s;
    if (s = v.String(p["fix"], where + ".fix", &out.fix); !s.ok()) return s;
    if (s = v.String(p["rationale"], where + ".rationale", &out.rationale); !s.ok()) return s;
    if (s = v.String(p["expected_effect"], where + ".expected_effect", &out.expected_effect); !s.ok()) return s;
    if (s = v.Number(p["expected_speedup"], where + ".expected_speedup", &out.expected_speedup); !s.ok()) return s;
    if (out.expected_speedup < 1.0 || out.expected_speedup > 10.0) {
      return v.Error(where + ".expected_speedup", absl::StrCat("must be in [1, 10], got ", out.expected_speedup));
    }
    if (s = v.StringList(p["risks"], where + ".risks", &out.risks, /*allow_empty=*/true); !s.ok()) return s;
    if (s = v.StringList(p["conflicts_with"], where + ".conflicts_with", &out.conflicts_with, true); !s.ok()) {
      return s;
    }
    if (p.contains("code_markers")) {
      if (s = v.StringList(p["code_markers"], where + ".code_markers", &out.code_markers,
                           /*allow_empty=*/false);
          !s.ok()) {
        return s;
      }
      for (const std::string& marker : out.code_markers) {
        if (absl::StripAsciiWhitespace(marker).empty() || marker.find('\n') != std::string::npos ||
            marker.find('#') != std::string::npos) {
          return v.Error(where + ".code_markers",
                         absl::StrCat("'", marker, "' must be a code token: not blank, one line, no '#'"));
        }
      }
    }

    // Preconditions.
    const json& pre = p["preconditions"];
    const std::string pw = where + ".preconditions";
    if (!pre.is_object()) return v.Error(pw, "must be an object");
    s = v.CheckKeys(pre, pw, {"categories", "op_classes", "archs"}, {"metrics", "limiters", "min_tolerance"});
    if (!s.ok()) return s;
    if (pre.contains("min_tolerance")) {
      s = v.Number(pre["min_tolerance"], pw + ".min_tolerance", &out.preconditions.min_tolerance);
      if (!s.ok()) return s;
      if (out.preconditions.min_tolerance <= 0) return v.Error(pw + ".min_tolerance", "must be > 0");
    }
    std::vector<std::string> categories;
    if (s = v.StringList(pre["categories"], pw + ".categories", &categories, false); !s.ok()) return s;
    for (size_t c = 0; c < categories.size(); ++c) {
      if (categories[c] == "*") {
        out.preconditions.any_category = true;
        continue;
      }
      auto category = ParseCategoryName(categories[c]);
      if (!category) {
        return v.Error(absl::StrCat(pw, ".categories[", c, "]"),
                       absl::StrCat("unknown category '", categories[c],
                                    "' (expected *, memory-bound, compute-bound, latency-bound, "
                                    "occupancy-limited, launch-bound, grid-underfilled, at-roofline)"));
      }
      out.preconditions.categories.push_back(*category);
    }
    if (s = v.StringList(pre["op_classes"], pw + ".op_classes", &out.preconditions.op_classes, false); !s.ok()) {
      return s;
    }
    for (size_t c = 0; c < out.preconditions.op_classes.size(); ++c) {
      if (!Contains(KnownOpClasses(), out.preconditions.op_classes[c])) {
        return v.Error(absl::StrCat(pw, ".op_classes[", c, "]"),
                       absl::StrCat("unknown op class '", out.preconditions.op_classes[c], "' (expected one of: ",
                                    absl::StrJoin(KnownOpClasses(), ", "), ")"));
      }
    }
    if (s = v.StringList(pre["archs"], pw + ".archs", &out.preconditions.archs, false); !s.ok()) return s;
    for (size_t a = 0; a < out.preconditions.archs.size(); ++a) {
      int capability = 0;
      bool or_newer = false;
      const std::string& arch = out.preconditions.archs[a];
      if (arch != "*" && !ParseArch(arch, &capability, &or_newer)) {
        return v.Error(absl::StrCat(pw, ".archs[", a, "]"),
                       absl::StrCat("bad arch '", arch, "' (expected *, sm_NN or sm_NN+)"));
      }
    }
    if (pre.contains("limiters")) {
      if (s = v.StringList(pre["limiters"], pw + ".limiters", &out.preconditions.limiters, false); !s.ok()) return s;
      for (size_t l = 0; l < out.preconditions.limiters.size(); ++l) {
        if (!Contains(KnownLimiters(), out.preconditions.limiters[l])) {
          return v.Error(absl::StrCat(pw, ".limiters[", l, "]"),
                         absl::StrCat("unknown limiter '", out.preconditions.limiters[l], "' (expected one of: ",
                                      absl::StrJoin(KnownLimiters(), ", "), ")"));
        }
      }
    }
    if (pre.contains("metrics")) {
      const json& metrics = pre["metrics"];
      if (!metrics.is_array()) return v.Error(pw + ".metrics", "must be a list");
      for (size_t m = 0; m < metrics.size(); ++m) {
        const std::string mw = absl::StrCat(pw, ".metrics[", m, "]");
        const json& cond = metrics[m];
        if (!cond.is_object()) return v.Error(mw, "must be an object");
        if (s = v.CheckKeys(cond, mw, {"metric", "op", "value"}, {"required"}); !s.ok()) return s;
        MetricCondition mc;
        if (s = v.String(cond["metric"], mw + ".metric", &mc.metric); !s.ok()) return s;
        if (s = v.String(cond["op"], mw + ".op", &mc.op); !s.ok()) return s;
        static const std::vector<std::string> kOps = {">", ">=", "<", "<=", "==", "!="};
        if (!Contains(kOps, mc.op)) {
          return v.Error(mw + ".op", absl::StrCat("must be one of >, >=, <, <=, ==, != (got '", mc.op, "')"));
        }
        if (s = v.Number(cond["value"], mw + ".value", &mc.value); !s.ok()) return s;
        if (cond.contains("required")) {
          if (!cond["required"].is_boolean()) return v.Error(mw + ".required", "must be true or false");
          mc.required = cond["required"].get<bool>();
        }
        out.preconditions.metrics.push_back(std::move(mc));
      }
    }

    // The fix's actions.
    if (p.contains("knob_changes")) {
      if (s = v.StringMap(p["knob_changes"], where + ".knob_changes", &out.knob_changes); !s.ok()) return s;
      for (const auto& [knob, change] : out.knob_changes) {
        const std::string kw = absl::StrCat(where, ".knob_changes.", knob);
        if (!db.knobs_.count(knob)) return v.Error(kw, "unknown knob (declare it under top-level 'knobs')");
        if (auto d = ParseKnobChange(change); !d.ok()) return v.Error(kw, std::string(d.status().message()));
      }
    }
    if (p.contains("template_switch")) {
      if (s = v.String(p["template_switch"], where + ".template_switch", &out.template_switch); !s.ok()) return s;
      if (!db.templates_.count(out.template_switch)) {
        return v.Error(where + ".template_switch",
                       absl::StrCat("unknown template '", out.template_switch,
                                    "' (declare it under top-level 'templates')"));
      }
    }
    if (p.contains("target")) {
      const json& t = p["target"];
      const std::string tw = where + ".target";
      if (!t.is_object()) return v.Error(tw, "must be an object");
      if (s = v.CheckKeys(t, tw, {"metric", "direction"}, {}); !s.ok()) return s;
      PatternTarget target;
      std::string direction;
      if (s = v.String(t["metric"], tw + ".metric", &target.metric); !s.ok()) return s;
      if (s = v.String(t["direction"], tw + ".direction", &direction); !s.ok()) return s;
      if (direction != "up" && direction != "down") return v.Error(tw + ".direction", "must be 'up' or 'down'");
      target.up = direction == "up";
      out.target = std::move(target);
    }
    db.patterns_.push_back(std::move(out));
  }

  // Cross-references: conflicts must name other, existing patterns.
  for (size_t i = 0; i < db.patterns_.size(); ++i) {
    const Pattern& p = db.patterns_[i];
    for (size_t c = 0; c < p.conflicts_with.size(); ++c) {
      const std::string where = absl::StrCat("patterns[", i, "] (id '", p.id, "').conflicts_with[", c, "]");
      if (p.conflicts_with[c] == p.id) return v.Error(where, "a pattern cannot conflict with itself");
      if (!ids.count(p.conflicts_with[c])) {
        return v.Error(where, absl::StrCat("unknown pattern id '", p.conflicts_with[c], "'"));
      }
    }
  }
  return db;
}

std::string DefaultOptimizationDbPath() {
  constexpr char kDefaultPath[] = "data/optimization_db.json";
  std::string found = FindInstallFile(kDefaultPath);
  return found.empty() ? kDefaultPath : found;
}

absl::StatusOr<std::shared_ptr<const OptimizationDb>> SharedOptimizationDb(const std::string& path) {
  static absl::Mutex mu(absl::kConstInit);
  static auto* loaded = new std::map<std::string, std::shared_ptr<const OptimizationDb>>();
  absl::MutexLock lock(&mu);
  auto it = loaded->find(path);
  if (it != loaded->end()) return it->second;
  absl::StatusOr<OptimizationDb> db = OptimizationDb::LoadFromFile(path);
  if (!db.ok()) return db.status();
  auto shared = std::make_shared<const OptimizationDb>(*std::move(db));
  loaded->emplace(path, shared);
  return shared;
}

}  // namespace kagent
