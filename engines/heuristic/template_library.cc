#include "engines/heuristic/template_library.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace kagent {

// Defined in the generated templates_embedded.cc: (file name, contents) of every file
// under engines/heuristic/templates ("partials/<name>.py" for the partials).
const std::vector<std::pair<const char*, const char*>>& EmbeddedTemplateFiles();

namespace {

// ordered_json: TemplateInfo::params keep the JSON file's order (json would sort them).
using json = nlohmann::ordered_json;

std::string JsonScalarText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return absl::StrCat(v.get<double>());
  return v.dump();
}

bool IsPow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

absl::StatusOr<TemplateInfo> ParseMeta(const std::string& file, const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": not a JSON object"));
  }
  TemplateInfo t;
  auto str = [&](const char* key, std::string* out) -> absl::Status {
    if (!j.contains(key) || !j[key].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": missing string \"", key, "\""));
    }
    *out = j[key].get<std::string>();
    return absl::OkStatus();
  };
  KAGENT_RETURN_IF_ERROR(str("id", &t.id));
  KAGENT_RETURN_IF_ERROR(str("op_class", &t.op_class));
  if (j.contains("language")) {
    KAGENT_RETURN_IF_ERROR(str("language", &t.language));
    if (t.language != "triton" && t.language != "cuda") {
      return absl::InvalidArgumentError(absl::StrCat(
          file, ": language must be \"triton\" or \"cuda\", got \"", t.language, "\""));
    }
  }
  KAGENT_RETURN_IF_ERROR(str("title", &t.title));
  KAGENT_RETURN_IF_ERROR(str("architecture", &t.architecture));
  for (const char* key : {"dtypes", "conditions"}) {
    if (!j.contains(key) || !j[key].is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": missing array \"", key, "\""));
    }
  }
  for (const auto& v : j["dtypes"]) t.dtypes.push_back(v.get<std::string>());
  for (const auto& v : j["conditions"]) t.conditions.push_back(v.get<std::string>());
  if (j.contains("max_tile_elements")) t.max_tile_elements = j["max_tile_elements"].get<int64_t>();
  if (!j.contains("params") || !j["params"].is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": missing object \"params\""));
  }
  for (auto it = j["params"].begin(); it != j["params"].end(); ++it) {
    const json& p = it.value();
    TemplateParam param;
    param.name = it.key();
    param.kind = p.value("kind", "");
    param.type = p.value("type", "");
    param.doc = p.value("doc", "");
    if (param.kind != "knob" && param.kind != "shape") {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": param ", param.name, ": kind must be knob or shape"));
    }
    if (param.type == "pow2" || param.type == "int") {
      if (!p.contains("min") || !p.contains("max")) {
        return absl::InvalidArgumentError(
            absl::StrCat(file, ": param ", param.name, ": int params need min and max"));
      }
      param.min = p["min"].get<int64_t>();
      param.max = p["max"].get<int64_t>();
    } else if (param.type == "choice") {
      if (!p.contains("allowed") || !p["allowed"].is_array()) {
        return absl::InvalidArgumentError(
            absl::StrCat(file, ": param ", param.name, ": choice params need allowed"));
      }
      for (const auto& v : p["allowed"]) param.allowed.push_back(JsonScalarText(v));
    } else if (param.type != "float") {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": param ", param.name, ": unknown type '", param.type, "'"));
    }
    if (!p.contains("default")) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": param ", param.name, ": no default"));
    }
    std::string def = JsonScalarText(p["default"]);
    auto checked = TemplateLibrary::CheckValue(param, def);
    if (!checked.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": default of ", param.name, ": ",
                                                     checked.status().message()));
    }
    param.default_value = *checked;
    t.params.push_back(std::move(param));
  }
  return t;
}

// Names of every {{NAME}} in `text`.
std::vector<std::string> Placeholders(absl::string_view text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = text.find("{{", pos)) != absl::string_view::npos) {
    size_t end = text.find("}}", pos + 2);
    if (end == absl::string_view::npos) break;
    out.emplace_back(text.substr(pos + 2, end - pos - 2));
    pos = end + 2;
  }
  return out;
}

constexpr absl::string_view kPartialDir = "partials/";

struct Include {
  absl::string_view indent;
  absl::string_view name;
};

// `line` as an include: spaces, `{{>`, optional spaces, a name of letters, digits and
// underscores, optional spaces, `}}`, nothing after. nullopt for any other line.
std::optional<Include> ParseInclude(absl::string_view line) {
  size_t start = line.find_first_not_of(' ');
  if (start == absl::string_view::npos) return std::nullopt;
  absl::string_view name = line.substr(start);
  if (!absl::ConsumePrefix(&name, "{{>") || !absl::ConsumeSuffix(&name, "}}")) {
    return std::nullopt;
  }
  while (absl::ConsumePrefix(&name, " ")) {
  }
  while (absl::ConsumeSuffix(&name, " ")) {
  }
  if (name.empty()) return std::nullopt;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return std::nullopt;
  }
  return Include{line.substr(0, start), name};
}

// The template `info` (its source as read) with every include line replaced by the
// partial's lines, each prefixed with the include's indentation (empty lines stay empty).
absl::StatusOr<std::string> ExpandIncludes(const TemplateInfo& info, absl::string_view source,
                                           const std::map<std::string, std::string>& partials) {
  const std::string file = absl::StrCat(info.id, ".py");
  std::vector<absl::string_view> lines = absl::StrSplit(source, '\n');
  std::string out;
  out.reserve(source.size());
  for (size_t n = 0; n < lines.size(); ++n) {
    const absl::string_view line = lines[n];
    const bool last = n + 1 == lines.size();
    std::optional<Include> inc = ParseInclude(line);
    if (!inc.has_value()) {
      if (absl::StrContains(line, "{{>")) {
        return absl::InvalidArgumentError(
            absl::StrCat(file, ":", n + 1, ": malformed include '", line,
                         "': an include is a line of its own, indentation then {{> name}}"));
      }
      out.append(line.data(), line.size());
      if (!last) out.push_back('\n');
      continue;
    }
    auto partial = partials.find(std::string(inc->name));
    if (partial == partials.end()) {
      return absl::InvalidArgumentError(absl::StrCat(file, ":", n + 1, ": unknown partial '",
                                                     inc->name, "' (no ", kPartialDir,
                                                     inc->name, ".py)"));
    }
    absl::string_view body = partial->second;
    const std::string where =
        absl::StrCat(file, ":", n + 1, ": partial '", inc->name, "' (", kPartialDir, inc->name,
                     ".py)");
    if (absl::StrContains(body, "{{>")) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " includes a partial: partials cannot include partials"));
    }
    if (body.empty()) return absl::InvalidArgumentError(absl::StrCat(where, " is empty"));
    for (const std::string& ph : Placeholders(body)) {
      if (info.FindParam(ph) == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": placeholder {{", ph, "}} has no param in ", info.id, ".json"));
      }
    }
    absl::ConsumeSuffix(&body, "\n");
    for (absl::string_view partial_line : absl::StrSplit(body, '\n')) {
      if (!partial_line.empty()) {
        out.append(inc->indent.data(), inc->indent.size());
        out.append(partial_line.data(), partial_line.size());
      }
      out.push_back('\n');
    }
    if (last) out.pop_back();  // the include line ended the file without a newline
  }
  return out;
}

// A template's text cut at its placeholders: literals[0] names[0] literals[1] ...
// names[n-1] literals[n].
struct Segments {
  std::vector<absl::string_view> literals;
  std::vector<std::string> names;
};

Segments SplitPlaceholders(absl::string_view src) {
  Segments s;
  size_t pos = 0;
  while (true) {
    size_t open = src.find("{{", pos);
    size_t close = open == absl::string_view::npos ? open : src.find("}}", open + 2);
    if (close == absl::string_view::npos) break;
    s.literals.push_back(src.substr(pos, open - pos));
    s.names.emplace_back(src.substr(open + 2, close - open - 2));
    pos = close + 2;
  }
  s.literals.push_back(src.substr(pos));
  return s;
}

// Matches `source` against a template's segments, binding each placeholder to the text
// it stands for. A value never spans lines and must be its param's normalized text
// (what Render writes); each candidate end of a value is tried in order (backtracking),
// within a budget of steps.
class RenderMatcher {
 public:
  RenderMatcher(const TemplateInfo& info, const Segments& segs, absl::string_view source)
      : info_(info), segs_(segs), source_(source) {}

  bool Match(size_t i, size_t pos) {
    if (++steps_ > kMaxSteps) return false;
    absl::string_view lit = segs_.literals[i];
    if (source_.substr(pos, lit.size()) != lit) return false;
    pos += lit.size();
    if (i == segs_.names.size()) return pos == source_.size();
    const std::string& name = segs_.names[i];
    if (auto bound = values_.find(name); bound != values_.end()) {
      if (source_.substr(pos, bound->second.size()) != bound->second) return false;
      return Match(i + 1, pos + bound->second.size());
    }
    const TemplateParam* param = info_.FindParam(name);
    if (param == nullptr) return false;
    size_t line_end = source_.find('\n', pos);
    if (line_end == absl::string_view::npos) line_end = source_.size();
    absl::string_view next = segs_.literals[i + 1];
    for (size_t end = pos; end <= line_end; ++end) {
      if (source_.substr(end, next.size()) != next) continue;
      absl::string_view value = source_.substr(pos, end - pos);
      absl::StatusOr<std::string> normal = TemplateLibrary::CheckValue(*param, value);
      if (!normal.ok() || *normal != value) continue;
      values_[name] = std::string(value);
      if (Match(i + 1, end)) return true;
      values_.erase(name);
      if (steps_ > kMaxSteps) return false;
    }
    return false;
  }

  const std::map<std::string, std::string>& values() const { return values_; }
  bool exhausted() const { return steps_ > kMaxSteps; }

 private:
  static constexpr int kMaxSteps = 100000;
  const TemplateInfo& info_;
  const Segments& segs_;
  absl::string_view source_;
  std::map<std::string, std::string> values_;
  int steps_ = 0;
};

}  // namespace

std::string FloatText(double d) {
  char buf[64];
  const bool plain = std::abs(d) >= 1e-4 && std::abs(d) < 1e16;
  int prec = 1;
  for (; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  // More digits keep the value; %g drops the exponent once they cover it.
  for (++prec; plain && std::strchr(buf, 'e') != nullptr && prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, d);
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

const TemplateParam* TemplateInfo::FindParam(absl::string_view name) const {
  for (const TemplateParam& p : params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

absl::StatusOr<std::string> TemplateLibrary::CheckValue(const TemplateParam& param,
                                                        absl::string_view value) {
  if (param.type == "pow2" || param.type == "int") {
    int64_t v = 0;
    if (!absl::SimpleAtoi(value, &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(param.name, "=", value, " is not an integer"));
    }
    if (v < param.min || v > param.max) {
      return absl::InvalidArgumentError(absl::StrCat(param.name, "=", v, " outside [",
                                                     param.min, ", ", param.max, "]"));
    }
    if (param.type == "pow2" && !IsPow2(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(param.name, "=", v, " is not a power of two"));
    }
    return std::to_string(v);
  }
  if (param.type == "float") {
    double d = 0;
    if (!absl::SimpleAtod(value, &d) || !std::isfinite(d)) {
      return absl::InvalidArgumentError(
          absl::StrCat(param.name, "=", value, " is not a finite number"));
    }
    return FloatText(d);
  }
  for (const std::string& a : param.allowed) {
    if (a == value) return a;
  }
  return absl::InvalidArgumentError(absl::StrCat(param.name, "=", value, " not one of {",
                                                 absl::StrJoin(param.allowed, ", "), "}"));
}

absl::StatusOr<std::shared_ptr<const TemplateLibrary>> TemplateLibrary::FromFiles(
    const std::map<std::string, std::string>& files) {
  auto lib = std::make_shared<TemplateLibrary>();
  std::map<std::string, std::string> partials;  // name -> text
  for (const auto& [name, text] : files) {
    absl::string_view partial = name;
    if (absl::ConsumePrefix(&partial, kPartialDir) && absl::ConsumeSuffix(&partial, ".py")) {
      partials.emplace(std::string(partial), text);
    }
  }
  for (const auto& [name, text] : files) {
    // Templates are top-level: nothing under partials/ is one.
    if (!absl::EndsWith(name, ".json") || absl::StrContains(name, "/")) continue;
    std::string id = name.substr(0, name.size() - 5);
    KAGENT_ASSIGN_OR_RETURN(TemplateInfo info, ParseMeta(name, text));
    if (info.id != id) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": id \"", info.id, "\" does not match the file name"));
    }
    auto py = files.find(id + ".py");
    if (py == files.end()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": no ", id, ".py beside it"));
    }
    KAGENT_ASSIGN_OR_RETURN(info.source, ExpandIncludes(info, py->second, partials));
    for (const std::string& ph : Placeholders(info.source)) {
      if (info.FindParam(ph) == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(id, ".py: placeholder {{", ph, "}} has no param in ", name));
      }
    }
    lib->templates_.emplace(id, std::move(info));
  }
  return std::shared_ptr<const TemplateLibrary>(std::move(lib));
}

absl::StatusOr<std::shared_ptr<const TemplateLibrary>> TemplateLibrary::Embedded() {
  std::map<std::string, std::string> files;
  for (const auto& [name, text] : EmbeddedTemplateFiles()) files.emplace(name, text);
  return FromFiles(files);
}

absl::StatusOr<std::shared_ptr<const TemplateLibrary>> TemplateLibrary::FromDirectory(
    const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("template directory not found: ", dir));
  }
  std::map<std::string, std::string> files;
  auto read = [&files](const std::filesystem::path& path, const std::string& name) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    files.emplace(name, ss.str());
  };
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (!absl::EndsWith(name, ".json") && !absl::EndsWith(name, ".py")) continue;
    read(entry.path(), name);
  }
  const std::filesystem::path partial_dir = std::filesystem::path(dir) / "partials";
  if (std::filesystem::is_directory(partial_dir, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(partial_dir, ec)) {
      std::string name = entry.path().filename().string();
      if (!absl::EndsWith(name, ".py")) continue;
      read(entry.path(), absl::StrCat(kPartialDir, name));
    }
  }
  return FromFiles(files);
}

const TemplateInfo* TemplateLibrary::Find(absl::string_view id) const {
  auto it = templates_.find(std::string(id));
  return it == templates_.end() ? nullptr : &it->second;
}

std::vector<const TemplateInfo*> TemplateLibrary::ForOpClass(absl::string_view op_class) const {
  std::vector<const TemplateInfo*> out;
  for (const auto& [id, t] : templates_) {
    if (t.op_class == op_class) out.push_back(&t);
  }
  return out;
}

std::vector<std::string> TemplateLibrary::Ids() const {
  std::vector<std::string> out;
  for (const auto& [id, t] : templates_) out.push_back(id);
  return out;
}

absl::StatusOr<std::string> TemplateLibrary::Render(
    absl::string_view id, const std::map<std::string, std::string>& params) const {
  const TemplateInfo* t = Find(id);
  if (t == nullptr) {
    return absl::NotFoundError(absl::StrCat("no template '", id, "'; known: ",
                                            absl::StrJoin(Ids(), ", ")));
  }
  for (const auto& [name, value] : params) {
    if (t->FindParam(name) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("template ", id, " has no param ", name));
    }
  }
  std::map<std::string, std::string> values;
  int64_t tile = 1;
  for (const TemplateParam& p : t->params) {
    auto it = params.find(p.name);
    std::string v = p.default_value;
    if (it != params.end()) {
      KAGENT_ASSIGN_OR_RETURN(v, CheckValue(p, it->second));
    }
    if (p.kind == "knob" && absl::StartsWith(p.name, "BLOCK")) tile *= std::stoll(v);
    values[p.name] = v;
  }
  if (t->max_tile_elements > 0 && tile > t->max_tile_elements) {
    return absl::InvalidArgumentError(absl::StrCat("template ", id, ": tile of ", tile,
                                                   " elements (product of BLOCK_*) exceeds ",
                                                   t->max_tile_elements));
  }
  std::string out;
  out.reserve(t->source.size());
  absl::string_view src = t->source;
  size_t pos = 0;
  while (true) {
    size_t open = src.find("{{", pos);
    if (open == absl::string_view::npos) break;
    size_t close = src.find("}}", open + 2);
    if (close == absl::string_view::npos) break;
    out.append(src.data() + pos, open - pos);
    std::string name(src.substr(open + 2, close - open - 2));
    auto v = values.find(name);
    if (v == values.end()) {
      return absl::InvalidArgumentError(absl::StrCat("template ", id, ": unresolved {{", name, "}}"));
    }
    out.append(v->second);
    pos = close + 2;
  }
  out.append(src.data() + pos, src.size() - pos);
  return out;
}

absl::StatusOr<RenderMatch> TemplateLibrary::MatchRender(absl::string_view source) const {
  absl::string_view first = source.substr(0, source.find('\n'));
  if (!absl::ConsumePrefix(&first, "# kagent-template:")) {
    return absl::NotFoundError("the source does not start with a # kagent-template: line");
  }
  const std::string id(absl::StripAsciiWhitespace(first));
  const TemplateInfo* t = Find(id);
  if (t == nullptr) return absl::NotFoundError(absl::StrCat("no template '", id, "'"));
  const Segments segs = SplitPlaceholders(t->source);
  RenderMatcher matcher(*t, segs, source);
  if (!matcher.Match(0, 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a render of template ", id,
        matcher.exhausted() ? " (gave up matching: too ambiguous)" : ""));
  }
  RenderMatch m;
  m.info = t;
  for (const TemplateParam& p : t->params) {
    auto v = matcher.values().find(p.name);
    m.params[p.name] = v != matcher.values().end() ? v->second : p.default_value;
  }
  // The text matches; Render also checks what spans params (max_tile_elements).
  absl::StatusOr<std::string> again = Render(id, m.params);
  if (!again.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a render of template ", id, ": ", again.status().message()));
  }
  if (*again != source) {
    return absl::InvalidArgumentError(absl::StrCat("not a render of template ", id));
  }
  return m;
}

}  // namespace kagent
