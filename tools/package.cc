#include "tools/package.h"

#include <cctype>
#include <optional>

#include <google/protobuf/util/time_util.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "kernel_model/recommendation.h"
#include "kernel_model/speedup_text.h"
#include "nlohmann/json.hpp"
#include "tools/enum_names.h"
#include "tools/package_python.h"

namespace kagent {
namespace {

// `text` as a Python identifier: lower case, every character but [a-z0-9_] as '_', and a
// leading '_' when it would start with a digit.
std::string Identifier(const std::string& text) {
  std::string id;
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    id += std::isalnum(u) != 0 && u < 128 ? static_cast<char>(std::tolower(u)) : '_';
  }
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0])) != 0) id = "_" + id;
  return id;
}

// A JSON string is a Python string literal too (its escapes are Python's).
std::string PythonString(const std::string& text) { return nlohmann::json(text).dump(); }

// Text safe inside a """docstring""".
std::string DocstringText(const std::string& text) {
  return absl::StrReplaceAll(text, {{"\\", "\\\\"}, {"\"\"\"", "\\\"\\\"\\\""}});
}

// "1.31x faster", "0.04x (25x slower)" (kernel_model/speedup_text.h); "n/a" without a ratio.
std::string Ratio(std::optional<double> r) { return FormatSpeedup(r.value_or(0)); }

std::string Ms(std::optional<double> ms) {
  return ms.has_value() && *ms > 0 ? absl::StrFormat("%.4f ms", *ms) : "n/a";
}

nlohmann::json OrNull(std::optional<double> v) {
  return v.has_value() && *v > 0 ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

struct Figures {
  std::string device;        // "cuda" or "cpu"
  std::string language;      // "triton" or "cuda"
  bool best_is_start = false;
  std::optional<double> median_ms, eager_ms, compile_ms, start_ms;
  std::optional<double> vs_eager, vs_compile, vs_start;
  std::string date;
  v1::Recommendation recommendation;  // what to deploy (RecommendationOf)
  nlohmann::ordered_json json;
};

Figures ComputeFigures(const v1::Job& job) {
  const v1::JobResult& r = job.result();
  const v1::Measurement& m = r.best_measurement();
  Figures f;
  f.device = m.gpu_name().rfind("cpu", 0) == 0 ? "cpu" : "cuda";
  f.language = r.best_kernel().language() == v1::KERNEL_LANGUAGE_CUDA ||
                       r.best_kernel().source().find("load_inline") != std::string::npos
                   ? "cuda"
                   : "triton";
  f.best_is_start = r.lineage_size() > 0 && r.lineage(0) == r.best_candidate_id();
  f.median_ms = m.candidate().median_ms();
  f.eager_ms = m.eager().median_ms();
  f.compile_ms = m.compiled().median_ms();
  f.vs_eager = r.speedup_vs_eager();
  f.vs_compile = r.speedup_vs_compile();
  if (!f.best_is_start) {
    // The final run timed the start beside the best; the baseline run's median stands in
    // should it not have (as `kagent get` shows it).
    f.start_ms = m.reference_kernel().median_ms() > 0 ? m.reference_kernel().median_ms()
                                                      : job.baseline().candidate().median_ms();
    f.vs_start = r.speedup_vs_start();
  }
  f.date = google::protobuf::util::TimeUtil::ToString(job.updated_at());
  f.recommendation = RecommendationOf(r);
  nlohmann::ordered_json& j = f.json;
  j["job_id"] = job.id();
  j["problem"] = job.problem().name();
  j["best_candidate_id"] = r.best_candidate_id();
  j["lineage"] = std::vector<std::string>(r.lineage().begin(), r.lineage().end());
  j["language"] = f.language;
  j["verdict"] = v1::Verdict_Name(m.verdict());
  j["gpu_name"] = m.gpu_name();
  j["device"] = f.device;
  j["timings"] = f.device == "cpu"
                     ? "Triton's interpreter on the CPU: the figures check correctness and say "
                       "nothing of GPU speed"
                     : "CUDA events on the GPU, one final run timing the best kernel, the "
                       "starting kernel, eager PyTorch and torch.compile side by side";
  j["date"] = f.date;
  j["median_ms"] = OrNull(f.median_ms);
  j["eager_ms"] = OrNull(f.eager_ms);
  j["compile_ms"] = OrNull(f.compile_ms);
  j["start_ms"] = OrNull(f.start_ms);
  j["speedup_vs_eager"] = OrNull(f.vs_eager);
  j["speedup_vs_compile"] = OrNull(f.vs_compile);
  j["speedup_vs_start"] = OrNull(f.vs_start);
  j["best_is_start"] = f.best_is_start;
  // What the job recommends, and what Model runs by default: "kernel", "eager" or
  // "torch.compile".
  j["deploy"] = DeployKey(f.recommendation.deploy());
  j["deploy_margin_pct"] = f.recommendation.margin_pct();
  j["recommendation"] = f.recommendation.summary();
  j["roofline_efficiency_pct"] = OrNull(r.roofline_efficiency_pct());
  j["roofline_bound_pct"] = OrNull(r.roofline_bound_pct());
  j["atol"] = job.problem().has_atol() ? nlohmann::json(job.problem().atol()) : nlohmann::json();
  j["rtol"] = job.problem().has_rtol() ? nlohmann::json(job.problem().rtol()) : nlohmann::json();
  return f;
}

// The figures as lines for people (README.md's list and the module's docstring).
std::string FigureLines(const v1::Job& job, const Figures& f) {
  std::string start = f.best_is_start
                          ? "the best kernel is the starting kernel (no candidate beat it)"
                          : absl::StrCat(Ratio(f.vs_start), " (start ", Ms(f.start_ms), ")");
  return absl::StrCat(
      "- job: ", job.id(), ", best kernel ", job.result().best_candidate_id(), " (",
      f.language == "cuda" ? "CUDA C++" : "Triton", "), ",
      VerdictName(job.result().best_measurement().verdict()), "\n",
      "- measured on: ", job.result().best_measurement().gpu_name(),
      f.device == "cpu" ? " (Triton's interpreter: correctness only, not GPU timings)" : "",
      ", ", f.date, "\n",                                         //
      "- median: ", Ms(f.median_ms), "\n",                        //
      "- vs eager PyTorch: ", Ratio(f.vs_eager), " (eager ", Ms(f.eager_ms), ")\n",
      "- vs torch.compile: ", Ratio(f.vs_compile), " (compiled ", Ms(f.compile_ms), ")\n",
      "- vs the starting kernel: ", start, "\n",
      "- deploy: ", f.recommendation.summary(), "\n");
}

// What Model runs by default, for people: the kernel, or the PyTorch path the job found
// faster (and how to run the kernel anyway).
std::string DeployText(const Figures& f) {
  if (!KeepsPyTorch(f.recommendation.deploy())) {
    return "Model runs the kernel on the inputs it was verified on (guard()), the problem's "
           "reference on any other.";
  }
  const std::string path = DeployName(f.recommendation.deploy());
  return absl::StrCat(
      "The job found PyTorch's ", path, " faster than the kernel, so Model runs the problem's "
      "reference ",
      f.recommendation.deploy() == v1::DEPLOY_TORCH_COMPILE ? "under torch.compile" : "eagerly",
      " by default (DEPLOY = \"", DeployKey(f.recommendation.deploy()),
      "\"); Model(*init_args, deploy=\"kernel\") runs the kernel on the inputs it was "
      "verified on.");
}

// How to use the package, each line after `indent`.
std::string Usage(const std::string& name, const std::string& indent) {
  return absl::StrCat(
      indent, "import ", name, "\n",                                                   //
      indent, "model = ", name, ".Model(*init_args)  # drop-in for the problem's Model\n",
      indent, "out = model(*inputs)  # the kernel on verified inputs, else the reference\n",
      indent, "out = ", name, ".functional(*inputs)  # the same, with get_init_inputs()\n",
      indent, "fast = torch.compile(model)  # the op has a fake implementation\n");
}

}  // namespace

std::string PythonPackageName(const std::string& problem_name) {
  return "kagent_" + Identifier(problem_name.empty() ? "kernel" : problem_name);
}

absl::StatusOr<PythonPackage> RenderPythonPackage(const v1::Job& job) {
  const v1::JobResult& r = job.result();
  if (job.state() != v1::JOB_STATE_DONE || r.best_kernel().source().empty() ||
      r.best_measurement().verdict() != v1::VERDICT_CORRECT) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job.id(), " is ", StateName(job.state()),
        r.best_kernel().source().empty() ? " without a best kernel" : "",
        ": a package holds the final, verified (CORRECT) best kernel of a DONE job"));
  }
  PythonPackage p;
  p.name = PythonPackageName(job.problem().name());
  Figures f = ComputeFigures(job);
  const std::string op_name =
      absl::StrCat("kagent_", Identifier(job.id()), "::", Identifier(job.problem().name()));
  const std::string figures = FigureLines(job, f);

  std::string module = absl::StrCat(
      "\"\"\"", DocstringText(job.problem().name()), ": the verified kernel of kagent job ",
      DocstringText(job.id()), " as a PyTorch op (", op_name, ").\n\n",
      DocstringText(figures), "\n", DocstringText(Usage(p.name, "    ")),
      "\n", DocstringText(DeployText(f)), "\n"
      "kernel.py is the kernel's own source: another job takes it as its starting kernel\n"
      "(kagent submit problem.py --kernel ", DocstringText(p.name), "/kernel.py).\n",
      "Generated by kagent export --package; figures.json holds the figures.\n\"\"\"\n\n",
      "import json as _json\nimport os as _os\n\n",                       //
      "JOB_ID = ", PythonString(job.id()), "\n",                         //
      "OP_NAME = ", PythonString(op_name), "\n",                         //
      "VERIFIED_DEVICE = ", PythonString(f.device), "  # cuda, or cpu (Triton's interpreter)\n",
      "LANGUAGE = ", PythonString(f.language), "  # triton, or cuda (load_inline)\n",
      "DEPLOY = ", PythonString(DeployKey(f.recommendation.deploy()).empty()
                                    ? "kernel"
                                    : DeployKey(f.recommendation.deploy())),
      "  # Model's default path: kernel, eager or torch.compile (the job's recommendation)\n",
      "with open(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "
      "\"figures.json\")) as _f:\n",
      "    FIGURES = _json.load(_f)\n\n", package_python::kModuleBody);

  std::string readme = absl::StrCat(
      "# ", p.name, "\n\n", "The best kernel of kagent job ", job.id(), " (problem ",
      job.problem().name(), "), registered as the PyTorch custom op `", op_name, "`.\n\n",
      figures, "\n", f.json["timings"].get<std::string>(), ".\n\n", "```python\n",
      Usage(p.name, ""), "```\n\n",
      DeployText(f), "\n\n",
      "The op runs the kernel only on the inputs it was verified on: the shapes, strides and "
      "dtypes of the problem's `get_inputs()`, on ", f.device == "cuda" ? "a CUDA device" : "the CPU under `TRITON_INTERPRET=1`",
      ", with no input needing a gradient; `guard(*inputs)` says which path a call takes, "
      "and every other input runs the problem's reference (`reference.py`).\n\n",
      "Tests (from the folder that holds this package): `",
      f.device == "cpu" ? "TRITON_INTERPRET=1 " : "", "python -m pytest ", p.name, "`.\n\n",
      "`kernel.py` is the kernel's source as the job verified it (a Python source defining "
      "`ModelNew`): another job takes it as its starting kernel,\n"
      "`kagent submit problem.py --kernel ", p.name, "/kernel.py`.\n");

  const std::string dir = p.name + "/";
  p.files.push_back({dir + "__init__.py", module});
  p.files.push_back({dir + "kernel.py", r.best_kernel().source()});
  p.files.push_back({dir + "reference.py", job.problem().source()});
  p.files.push_back({dir + "figures.json", f.json.dump(2) + "\n"});
  p.files.push_back({dir + "README.md", readme});
  p.files.push_back({dir + "test_package.py", package_python::kTestFile});
  return p;
}

}  // namespace kagent
