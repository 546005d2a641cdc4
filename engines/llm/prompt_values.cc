#include "engines/llm/prompt_values.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "kernel_model/categories.h"
#include "kernel_model/gpu_spec.h"

namespace kagent::llm_engine {
namespace {

std::string Shape(const kagent::v1::TensorInfo& t) {
  std::string s = absl::StrCat("[", absl::StrJoin(t.shape(), ", "), "]");
  if (!t.dtype().empty()) absl::StrAppend(&s, " ", t.dtype());
  return s;
}

std::string Tensors(const google::protobuf::RepeatedPtrField<kagent::v1::TensorInfo>& ts) {
  if (ts.empty()) return "none";
  std::vector<std::string> parts;
  for (const auto& t : ts) parts.push_back(Shape(t));
  return absl::StrJoin(parts, ", ");
}

// True when the line (indentation removed) is a decorator naming triton.jit or jit.
bool IsJitDecorator(absl::string_view line) {
  line = absl::StripLeadingAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&line, "@")) return false;
  line = absl::StripLeadingAsciiWhitespace(line);
  absl::string_view name = line.substr(0, line.find_first_of("( \t#"));
  return name == "jit" || absl::EndsWith(name, ".jit");
}

bool IsModelNewClass(absl::string_view line) {
  // Top level: no indentation.
  if (!absl::ConsumePrefix(&line, "class")) return false;
  if (line.empty() || (line[0] != ' ' && line[0] != '\t')) return false;
  line = absl::StripLeadingAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&line, "ModelNew")) return false;
  line = absl::StripLeadingAsciiWhitespace(line);
  return !line.empty() && (line[0] == '(' || line[0] == ':');
}

// ", with dim=1, keepdim=0": the op's recorded numeric arguments (OpRecord.scalars) by
// name, sorted, integers without a decimal point; then its string arguments
// (OpRecord.strings) quoted, e.g. approximate='tanh'; empty when none were recorded.
std::string Scalars(const kagent::v1::OpRecord& op) {
  if (op.scalars().empty() && op.strings().empty()) return "";
  std::vector<std::pair<std::string, double>> kv(op.scalars().begin(), op.scalars().end());
  std::sort(kv.begin(), kv.end());
  std::vector<std::string> parts;
  for (const auto& [name, v] : kv) {
    parts.push_back(v == static_cast<double>(static_cast<int64_t>(v)) && std::abs(v) < 1e15
                        ? absl::StrCat(name, "=", static_cast<int64_t>(v))
                        : absl::StrFormat("%s=%.6g", name, v));
  }
  std::vector<std::pair<std::string, std::string>> sv(op.strings().begin(), op.strings().end());
  std::sort(sv.begin(), sv.end());
  for (const auto& [name, v] : sv) parts.push_back(absl::StrCat(name, "='", v, "'"));
  return absl::StrCat(", with ", absl::StrJoin(parts, ", "));
}

}  // namespace

std::string FormatNumber(double value) { return absl::StrFormat("%.6g", value); }

std::string DescribeGpu(const kagent::v1::GpuSpec* gpu) {
  if (gpu == nullptr || gpu->name().empty()) return "an NVIDIA GPU (details not given)";
  if (gpu->arch() == "cpu") {
    return "an NVIDIA GPU; note that this job has no GPU: its worker runs kernels under "
           "Triton's CPU interpreter (TRITON_INTERPRET=1), so the timings given come from "
           "the interpreter and do not rank kernels as a GPU would";
  }
  std::vector<std::string> facts;
  if (!gpu->arch().empty()) facts.push_back(gpu->arch());
  if (gpu->sm_count() > 0) facts.push_back(absl::StrCat(gpu->sm_count(), " SMs"));
  if (gpu->peak_dram_bytes_per_second() > 0) {
    facts.push_back(absl::StrFormat("%.2f TB/s DRAM", gpu->peak_dram_bytes_per_second() / 1e12));
  }
  if (gpu->l2_bytes() > 0) {
    facts.push_back(absl::StrFormat("%d MiB L2", static_cast<int>(gpu->l2_bytes() >> 20)));
  }
  std::vector<std::pair<std::string, double>> flops(gpu->peak_flops().begin(),
                                                    gpu->peak_flops().end());
  std::sort(flops.begin(), flops.end());
  for (const auto& [dtype, value] : flops) {
    if (value > 0) facts.push_back(absl::StrFormat("peak %.1f TFLOP/s %s", value / 1e12, dtype));
  }
  if (facts.empty()) return gpu->name();
  return absl::StrCat(gpu->name(), " (", absl::StrJoin(facts, ", "), ")");
}

std::string SummarizeOps(const kagent::v1::OpSignature* sig) {
  if (sig == nullptr || (sig->ops().empty() && sig->op_class().empty())) {
    return "nothing recorded";
  }
  std::string out;
  if (!sig->op_class().empty()) absl::StrAppend(&out, "op class: ", sig->op_class(), "\n");
  if (sig->flops() > 0) absl::StrAppend(&out, "FLOPs: ", FormatNumber(sig->flops()), "\n");
  if (sig->min_bytes() > 0) {
    absl::StrAppend(&out, "minimum bytes moved: ", FormatNumber(sig->min_bytes()), "\n");
  }
  constexpr int kMaxOps = 40;
  int n = 0;
  for (const auto& op : sig->ops()) {
    if (n++ == kMaxOps) {
      absl::StrAppend(&out, "... and ", sig->ops_size() - kMaxOps, " more ops\n");
      break;
    }
    absl::StrAppend(&out, "- ", op.op(), ": inputs ", Tensors(op.inputs()), " -> outputs ",
                    Tensors(op.outputs()), Scalars(op), "\n");
  }
  return std::string(absl::StripTrailingAsciiWhitespace(out));
}

std::string DescribeMeasurement(const kagent::v1::Measurement* m) {
  if (m == nullptr || m->candidate().median_ms() <= 0) {
    return "The current kernel's time was not given.";
  }
  const double mine = m->candidate().median_ms();
  std::string out = absl::StrFormat("current kernel: %s ms median", FormatNumber(mine));
  auto compare = [&](const kagent::v1::TimingStats& t, absl::string_view name) {
    if (t.median_ms() <= 0) return;
    const double ratio = t.median_ms() / mine;
    absl::StrAppend(&out, absl::StrFormat("\n%s: %s ms median (the current kernel is %.2fx %s)",
                                          name, FormatNumber(t.median_ms()),
                                          ratio >= 1 ? ratio : 1 / ratio,
                                          ratio >= 1 ? absl::StrCat("faster than ", name)
                                                     : absl::StrCat("slower than ", name)));
  };
  compare(m->eager(), "eager PyTorch");
  compare(m->compiled(), "torch.compile");
  if (MeasuredOnCpuWorker(*m)) {
    absl::StrAppend(&out, "\n(these times come from Triton's CPU interpreter, not a GPU: they "
                          "do not rank kernels as a GPU would)");
  } else if (!m->gpu_name().empty()) {
    absl::StrAppend(&out, "\n(measured on ", m->gpu_name(), ")");
  }
  return out;
}

std::string DescribeReport(const kagent::v1::BottleneckReport* report) {
  if (report == nullptr || report->primary() == kagent::v1::BOTTLENECK_CATEGORY_UNSPECIFIED) {
    return "No profile diagnosis was given for this kernel; rely on the fix's rationale.";
  }
  std::string out = absl::StrCat("category: ", CategoryName(report->primary()));
  if (report->secondary() != kagent::v1::BOTTLENECK_CATEGORY_UNSPECIFIED) {
    absl::StrAppend(&out, " (secondary: ", CategoryName(report->secondary()), ")");
  }
  absl::StrAppend(&out, "\n");
  if (!report->limiter().empty()) absl::StrAppend(&out, "limiter: ", report->limiter(), "\n");
  absl::StrAppend(&out, absl::StrFormat("roofline efficiency: %.1f%%, headroom: %.1f%%\n",
                                        report->efficiency_pct(), report->headroom_pct()));
  if (!report->dominant_kernel().empty()) {
    absl::StrAppend(&out, absl::StrFormat("dominant kernel: %s (%.0f%% of GPU time)\n",
                                          report->dominant_kernel(),
                                          100.0 * report->dominant_kernel_share()));
  }
  if (!report->summary().empty()) absl::StrAppend(&out, "summary: ", report->summary(), "\n");
  if (!report->root_causes().empty()) absl::StrAppend(&out, "root causes:\n");
  for (const auto& rc : report->root_causes()) {
    absl::StrAppend(&out, "- ", rc.cause(), "\n");
    for (const auto& e : rc.evidence()) {
      absl::StrAppend(&out, "  * ", e.metric(), " = ", FormatNumber(e.value()),
                      e.unit().empty() ? "" : absl::StrCat(" ", e.unit()),
                      e.meaning().empty() ? "" : absl::StrCat(": ", e.meaning()), "\n");
    }
  }
  if (!report->narrative().empty()) absl::StrAppend(&out, "narrative: ", report->narrative());
  return std::string(absl::StripTrailingAsciiWhitespace(out));
}

std::vector<std::string> KernelKnobs(absl::string_view source) {
  std::vector<std::string> knobs;
  auto add = [&knobs](absl::string_view name) {
    if (std::find(knobs.begin(), knobs.end(), name) == knobs.end()) knobs.emplace_back(name);
  };
  // The parameter lists of the functions under a jit decorator (a list may span lines).
  bool after_jit = false;
  size_t line_start = 0;
  while (line_start < source.size()) {
    size_t eol = source.find('\n', line_start);
    if (eol == absl::string_view::npos) eol = source.size();
    absl::string_view line = source.substr(line_start, eol - line_start);
    absl::string_view stripped = absl::StripLeadingAsciiWhitespace(line);
    if (IsJitDecorator(line)) {
      after_jit = true;
    } else if (after_jit && absl::StartsWith(stripped, "def ")) {
      after_jit = false;
      const size_t open = source.find('(', line_start);
      size_t close = open;
      for (int depth = 0; close < source.size(); ++close) {
        if (source[close] == '(' || source[close] == '[') ++depth;
        if ((source[close] == ')' || source[close] == ']') && --depth == 0) break;
      }
      if (open == absl::string_view::npos || close >= source.size()) break;
      for (absl::string_view param :
           absl::StrSplit(source.substr(open + 1, close - open - 1), ',')) {
        const size_t colon = param.find(':');
        if (colon == absl::string_view::npos) continue;
        absl::string_view type = absl::StripAsciiWhitespace(param.substr(colon + 1));
        type = type.substr(0, type.find('='));
        if (absl::StripAsciiWhitespace(type) != "tl.constexpr" &&
            absl::StripAsciiWhitespace(type) != "triton.language.constexpr" &&
            absl::StripAsciiWhitespace(type) != "constexpr") {
          continue;
        }
        // The name, without a comment line above it.
        absl::string_view name = absl::StripAsciiWhitespace(param.substr(0, colon));
        const size_t nl = name.rfind('\n');
        if (nl != absl::string_view::npos) name = absl::StripAsciiWhitespace(name.substr(nl + 1));
        if (!name.empty()) add(name);
      }
      eol = std::max(eol, source.find('\n', close));
      if (eol == absl::string_view::npos) eol = source.size();
    } else if (!stripped.empty() && stripped[0] != '@' && stripped[0] != '#') {
      after_jit = false;
    }
    line_start = eol + 1;
  }
  for (absl::string_view meta : {"num_warps", "num_stages"}) {
    for (size_t at = source.find(meta); at != absl::string_view::npos;
         at = source.find(meta, at + 1)) {
      const bool word_start = at == 0 || !(std::isalnum(static_cast<unsigned char>(source[at - 1])) ||
                                           source[at - 1] == '_');
      absl::string_view rest = absl::StripLeadingAsciiWhitespace(source.substr(at + meta.size()));
      if (word_start && absl::StartsWith(rest, "=") && !absl::StartsWith(rest, "==")) {
        add(meta);
        break;
      }
    }
  }
  return knobs;
}

namespace {

// The settings of `knob` in `source`, in order: "NAME=64", "NAME: tl.constexpr = 64" and
// "'NAME': 64" as "64" (the value up to a comma, a bracket or the line's end, trimmed).
// Nullopt when a value is not a numeric literal (it cannot be compared as text).
std::optional<std::vector<std::string>> KnobSettings(absl::string_view source,
                                                     absl::string_view knob) {
  std::vector<std::string> values;
  auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = source.find(knob); at != absl::string_view::npos;
       at = source.find(knob, at + 1)) {
    if (at > 0 && is_word(source[at - 1])) continue;
    size_t i = at + knob.size();
    if (i < source.size() && is_word(source[i])) continue;
    if (i < source.size() && (source[i] == '\'' || source[i] == '"')) ++i;
    while (i < source.size() && (source[i] == ' ' || source[i] == '\t')) ++i;
    if (i >= source.size() || (source[i] != '=' && source[i] != ':')) continue;
    if (source[i] == '=' && i + 1 < source.size() && source[i + 1] == '=') continue;
    if (source[i] == ':') {
      // A constexpr annotation: its default, if any, is the setting.
      absl::string_view rest = source.substr(i + 1);
      rest = rest.substr(0, rest.find_first_of(",)\n"));
      const size_t eq = rest.find('=');
      if (absl::StrContains(rest, "constexpr")) {
        if (eq == absl::string_view::npos) continue;
        i += 1 + eq;
      }
    }
    absl::string_view value = source.substr(i + 1);
    value = absl::StripAsciiWhitespace(value.substr(0, value.find_first_of(",)}]\n#")));
    if (value.empty()) continue;
    double number = 0;
    if (!absl::SimpleAtod(value, &number)) return std::nullopt;
    values.emplace_back(value);
  }
  return values;
}

}  // namespace

std::optional<std::string> UnappliedKnobChanges(const kagent::v1::Prescription& prescription,
                                                absl::string_view parent,
                                                absl::string_view rewrite) {
  const std::vector<std::string> knobs = KernelKnobs(parent);
  std::vector<std::string> unchanged;
  for (const auto& [knob, change] : prescription.knob_changes()) {
    if (std::find(knobs.begin(), knobs.end(), knob) == knobs.end()) continue;
    std::optional<std::vector<std::string>> before = KnobSettings(parent, knob);
    std::optional<std::vector<std::string>> after = KnobSettings(rewrite, knob);
    if (!before.has_value() || !after.has_value() || before->empty()) return std::nullopt;
    if (*before != *after) return std::nullopt;  // this knob changed: applied
    unchanged.push_back(absl::StrCat(knob, " = ", absl::StrJoin(*before, ", ")));
  }
  if (unchanged.empty()) return std::nullopt;
  std::sort(unchanged.begin(), unchanged.end());
  return absl::StrCat("the rewrite left ", absl::StrJoin(unchanged, "; "),
                      " as the parent had it: the model did not apply the prescribed knob "
                      "change");
}

std::optional<std::string> UnappliedCodeMarkers(const kagent::v1::Prescription& prescription,
                                                absl::string_view parent,
                                                absl::string_view rewrite) {
  if (prescription.code_markers().empty()) return std::nullopt;
  // The code without its '#' comments: a construct named in a comment is not applied.
  auto code = [](absl::string_view source) {
    std::string out;
    for (absl::string_view line : absl::StrSplit(source, '\n')) {
      absl::StrAppend(&out, line.substr(0, line.find('#')), "\n");
    }
    return out;
  };
  const std::string before = code(parent), after = code(rewrite);
  for (const std::string& marker : prescription.code_markers()) {
    if (absl::StrContains(before, marker) || absl::StrContains(after, marker)) return std::nullopt;
  }
  return absl::StrCat("the rewrite still lacks ", absl::StrJoin(prescription.code_markers(), " or "),
                      ", which the fix names and the parent lacked: the model did not apply "
                      "the prescribed change");
}

std::optional<std::string> UnappliedFix(const kagent::v1::Prescription& prescription,
                                        absl::string_view parent, absl::string_view rewrite) {
  if (std::optional<std::string> knobs = UnappliedKnobChanges(prescription, parent, rewrite)) {
    return knobs;
  }
  return UnappliedCodeMarkers(prescription, parent, rewrite);
}

std::string DescribeKnobs(const std::vector<std::string>& knobs) {
  if (knobs.empty()) {
    return "none: the kernel has no tl.constexpr parameter and passes no num_warps or "
           "num_stages";
  }
  return absl::StrJoin(knobs, ", ");
}

std::string DescribeRoofline(const kagent::v1::HardwareMetrics* m,
                             const kagent::v1::GpuSpec* gpu) {
  if (m == nullptr) return "";
  std::string out;
  if (m->compute_sol_pct() > 0 || m->memory_sol_pct() > 0) {
    absl::StrAppend(&out, absl::StrFormat("speed of light: compute %.1f%%, memory %.1f%% of peak\n",
                                          m->compute_sol_pct(), m->memory_sol_pct()));
  }
  if (m->arithmetic_intensity() > 0) {
    absl::StrAppend(&out, "arithmetic intensity: ", FormatNumber(m->arithmetic_intensity()),
                    " FLOP/byte");
    if (gpu != nullptr && gpu->peak_dram_bytes_per_second() > 0) {
      std::vector<std::pair<std::string, double>> flops(gpu->peak_flops().begin(),
                                                        gpu->peak_flops().end());
      std::sort(flops.begin(), flops.end());
      std::vector<std::string> ridges;
      for (const auto& [dtype, peak] : flops) {
        if (peak <= 0) continue;
        ridges.push_back(absl::StrFormat("%s %s", dtype,
                                         FormatNumber(peak / gpu->peak_dram_bytes_per_second())));
      }
      if (!ridges.empty()) {
        absl::StrAppend(&out, " (ridge points, FLOP/byte: ", absl::StrJoin(ridges, ", "), ")");
      }
    }
    absl::StrAppend(&out, "\n");
    absl::StrAppend(&out, absl::StrFormat("achieved: %.3g TFLOP/s, %.3g TB/s\n",
                                          m->achieved_flops() / 1e12,
                                          m->achieved_bytes_per_second() / 1e12));
    absl::StrAppend(&out, absl::StrFormat("of the roofline at this intensity: %.1f%%\n",
                                          m->roofline_bound_pct()));
  }
  return std::string(absl::StripTrailingAsciiWhitespace(out));
}

std::string DescribeFix(const kagent::v1::Prescription& p, int alternative,
                        const std::vector<std::string>* kernel_knobs) {
  std::string out;
  if (!p.pattern_id().empty()) absl::StrAppend(&out, "pattern: ", p.pattern_id(), "\n");
  if (!p.fix().empty()) absl::StrAppend(&out, "fix: ", p.fix(), "\n");
  if (!p.rationale().empty()) absl::StrAppend(&out, "rationale: ", p.rationale(), "\n");
  if (!p.expected_effect().empty()) {
    absl::StrAppend(&out, "expected effect: ", p.expected_effect(), "\n");
  }
  if (p.expected_speedup() > 0) {
    absl::StrAppend(&out, "expected speedup: ", FormatNumber(p.expected_speedup()), "x\n");
  }
  if (!p.knob_changes().empty()) {
    // Sorted for a stable prompt (and a stable cassette hash).
    std::vector<std::pair<std::string, std::string>> knobs(p.knob_changes().begin(),
                                                           p.knob_changes().end());
    std::sort(knobs.begin(), knobs.end());
    std::vector<std::string> parts;
    for (const auto& [k, v] : knobs) parts.push_back(absl::StrCat(k, " = ", v));
    absl::StrAppend(&out, "knob changes: ", absl::StrJoin(parts, ", "), "\n");
    if (kernel_knobs != nullptr) {
      std::vector<std::string> missing;
      for (const auto& [k, v] : knobs) {
        if (std::find(kernel_knobs->begin(), kernel_knobs->end(), k) == kernel_knobs->end()) {
          missing.push_back(k);
        }
      }
      if (!missing.empty()) {
        absl::StrAppend(
            &out, "the current kernel has no ", absl::StrJoin(missing, ", "),
            ": make the change's intent with the knobs it has (",
            DescribeKnobs(*kernel_knobs),
            "), or introduce the parameter where the kernel's structure needs it\n");
      }
    }
  }
  if (!p.template_switch().empty()) {
    absl::StrAppend(&out, "switch to the kernel structure: ", p.template_switch(), "\n");
  }
  for (const auto& r : p.risks()) absl::StrAppend(&out, "known risk: ", r, "\n");
  if (alternative > 0) {
    absl::StrAppend(&out, "variant ", alternative + 1,
                    ": other workers apply this same fix in parallel; choose a different way "
                    "to apply it (other tile sizes, warps or stages) than the most obvious "
                    "one, so that the candidates differ.\n");
  }
  if (out.empty()) return "(no details given)";
  return std::string(absl::StripTrailingAsciiWhitespace(out));
}

std::string FormatLessons(const std::vector<kagent::v1::Reflexion>* memory) {
  if (memory == nullptr || memory->empty()) return "none";
  constexpr size_t kMax = 20;
  const size_t first = memory->size() > kMax ? memory->size() - kMax : 0;
  std::string out;
  for (size_t i = first; i < memory->size(); ++i) {
    const auto& r = (*memory)[i];
    absl::StrAppend(&out, "- round ", r.round());
    if (!r.pattern_id().empty()) absl::StrAppend(&out, ", ", r.pattern_id());
    absl::StrAppend(&out, ": fix ", r.fix_effective() ? "worked" : "did not work");
    if (r.expected_speedup() > 0 || r.actual_speedup() > 0) {
      absl::StrAppend(&out, absl::StrFormat(" (expected %.2fx, measured %.2fx)",
                                            r.expected_speedup(), r.actual_speedup()));
    }
    if (!r.lesson().empty()) absl::StrAppend(&out, "; ", r.lesson());
    if (!r.avoid_patterns().empty()) {
      absl::StrAppend(&out, "; avoid: ", absl::StrJoin(r.avoid_patterns(), ", "));
    }
    if (!r.try_patterns().empty()) {
      absl::StrAppend(&out, "; try: ", absl::StrJoin(r.try_patterns(), ", "));
    }
    absl::StrAppend(&out, "\n");
  }
  return std::string(absl::StripTrailingAsciiWhitespace(out));
}

std::string StripCodeFences(absl::string_view code) {
  absl::string_view s = absl::StripAsciiWhitespace(code);
  if (!absl::StartsWith(s, "```")) return std::string(code);
  size_t eol = s.find('\n');
  if (eol == absl::string_view::npos) return std::string(code);
  s.remove_prefix(eol + 1);  // the opening fence and its language tag
  s = absl::StripTrailingAsciiWhitespace(s);
  if (absl::EndsWith(s, "```")) s.remove_suffix(3);
  return std::string(s);
}

std::optional<FencedKernel> FindFencedKernel(absl::string_view reply) {
  size_t pos = 0;
  while (true) {
    // A fence opens at the start of a line.
    size_t open = reply.find("```", pos);
    while (open != absl::string_view::npos && open > 0 && reply[open - 1] != '\n') {
      open = reply.find("```", open + 3);
    }
    if (open == absl::string_view::npos) return std::nullopt;
    const size_t eol = reply.find('\n', open + 3);
    if (eol == absl::string_view::npos) return std::nullopt;
    const size_t body = eol + 1;
    size_t close = reply.find("\n```", eol);
    const absl::string_view code =
        reply.substr(body, close == absl::string_view::npos ? absl::string_view::npos
                                                            : close + 1 - body);
    bool model_new = false;
    for (absl::string_view line : absl::StrSplit(code, '\n')) {
      model_new = model_new || IsModelNewClass(line);
    }
    if (model_new) {
      FencedKernel out;
      out.code = std::string(code);
      absl::string_view before = absl::StripAsciiWhitespace(reply.substr(0, open));
      absl::string_view after;
      if (close != absl::string_view::npos) {
        const size_t eol_after = reply.find('\n', close + 4);
        if (eol_after != absl::string_view::npos) {
          after = absl::StripAsciiWhitespace(reply.substr(eol_after));
        }
      }
      out.explanation = absl::StrCat(before, !before.empty() && !after.empty() ? "\n\n" : "",
                                     after);
      return out;
    }
    if (close == absl::string_view::npos) return std::nullopt;
    pos = close + 4;
  }
}

absl::Status ValidateKernelSource(absl::string_view source) {
  if (absl::StripAsciiWhitespace(source).empty()) {
    return absl::InvalidArgumentError("the code is empty");
  }
  bool model_new = false;
  bool jit = false;
  for (absl::string_view line : absl::StrSplit(source, '\n')) {
    model_new = model_new || IsModelNewClass(line);
    jit = jit || IsJitDecorator(line);
  }
  if (!model_new && !jit) {
    return absl::InvalidArgumentError(
        "the code defines no top-level `class ModelNew(nn.Module)` and no @triton.jit "
        "function");
  }
  if (!model_new) {
    return absl::InvalidArgumentError(
        "the code defines no top-level `class ModelNew(nn.Module)`");
  }
  if (!jit) {
    return absl::InvalidArgumentError(
        "the code has no @triton.jit function: the hot path must run in your own Triton "
        "kernel");
  }
  return absl::OkStatus();
}

}  // namespace kagent::llm_engine
