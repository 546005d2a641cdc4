#include "tools/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_format.h"
#include "common/client.h"
#include "common/options.h"
#include "kagent/v1/job_service.grpc.pb.h"

namespace kagent::cli {
namespace {

namespace fs = std::filesystem;
constexpr char kStartSuffix[] = "_start.py";

constexpr char kUsage[] =
    "usage: kagent bench DIR --out OUTDIR [--server ADDR] [--token T] [--rounds N]\n"
    "                    [--beam-width K] [--fixes-per-kernel M] [--only PATTERN]\n"
    "                    [--concurrency N] [--poll-seconds S] [--run-id ID] [--brain NAME]\n"
    "                    [--without-start]\n"
    "Submits every DIR/NAME_start.py (with DIR/NAME.py) as a job, waits for all, and writes\n"
    "OUTDIR/results.json, OUTDIR/results.md and OUTDIR/trajectory.svg. --without-start\n"
    "submits the same problems without their starting kernels: the brain writes each first\n"
    "kernel (\"start\" is then that kernel).\n"
    "--beam-width K (kernels kept per round) and --fixes-per-kernel M (fixes tried on each,\n"
    "so K x M candidates a round) are 1..16; without them, the server's defaults\n"
    "(2 and 2 as shipped).\n"
    "\n"
    "usage: kagent bench --merge --out OUTDIR RESULTS.json [RESULTS.json ...]\n"
    "Needs no server: combines the results.json of several runs (e.g. a suite measured in\n"
    "slices under different --run-id) into OUTDIR/results.json, results.md and trajectory.svg.\n"
    "Later files win: each problem keeps the row of the last file that has it; each row names\n"
    "its run (the file's run_id, else its path). No DIR and no job flags with --merge.\n";

std::string StateName(v1::JobState s) {
  std::string n = v1::JobState_Name(s);
  return n.rfind("JOB_STATE_", 0) == 0 ? n.substr(10) : n;
}

bool Finished(v1::JobState s) {
  return s == v1::JOB_STATE_DONE || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_CANCELLED;
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

bool WriteFile(const fs::path& path, const std::string& body) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!(f << body)) return false;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  return !ec;
}

std::string Ms(double v) { return v > 0 ? absl::StrFormat("%.3f", v) : "-"; }
std::string X(double v) { return v > 0 ? absl::StrFormat("%.2fx", v) : "-"; }
std::string Pct(double v) { return v > 0 ? absl::StrFormat("%.0f%%", v) : "-"; }
double Ratio(double num, double den) { return num > 0 && den > 0 ? num / den : 0; }

// Markdown table cells must not break the row.
std::string Cell(std::string s) {
  for (char& c : s) {
    if (c == '|' || c == '\n' || c == '\r') c = ' ';
  }
  if (s.size() > 120) s = s.substr(0, 117) + "...";
  return s;
}

std::string Esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

}  // namespace

absl::StatusOr<std::vector<BenchProblem>> FindBenchProblems(const std::string& dir,
                                                            const std::string& only) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat(dir, " is not a directory"));
  }
  std::vector<BenchProblem> found;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string file = entry.path().filename().string();
    if (!entry.is_regular_file() || !absl::EndsWith(file, kStartSuffix)) continue;
    std::string name = file.substr(0, file.size() - (sizeof(kStartSuffix) - 1));
    if (name.empty()) continue;
    fs::path ref = fs::path(dir) / (name + ".py");
    std::error_code ref_ec;
    if (!fs::is_regular_file(ref, ref_ec)) continue;
    if (!only.empty()) {
      bool match = false;
      for (absl::string_view pat : absl::StrSplit(only, ',', absl::SkipEmpty())) {
        match = match || absl::StrContains(name, pat);
      }
      if (!match) continue;
    }
    found.push_back({name, ref.string(), entry.path().string()});
  }
  if (ec) return absl::InternalError(absl::StrCat("cannot list ", dir, ": ", ec.message()));
  std::sort(found.begin(), found.end(),
            [](const BenchProblem& a, const BenchProblem& b) { return a.name < b.name; });
  return found;
}

BenchRow RowFromJob(const std::string& name, const v1::Job& job) {
  BenchRow r;
  r.name = name;
  r.job_id = job.id();
  r.state = StateName(job.state());
  r.error = job.error();
  r.rounds = job.current_round();
  r.gpu_seconds = job.gpu_seconds_used();
  const v1::JobResult& res = job.result();
  r.stop_reason = res.stop_reason();
  const v1::Measurement& best = res.best_measurement();
  const v1::Measurement& base = job.baseline();
  if (!res.best_candidate_id().empty() && best.candidate().median_ms() > 0) {
    r.best_ms = best.candidate().median_ms();
    r.start_ms = best.reference_kernel().median_ms() > 0 ? best.reference_kernel().median_ms()
                                                         : base.candidate().median_ms();
    r.eager_ms = best.eager().median_ms() > 0 ? best.eager().median_ms() : base.eager().median_ms();
    r.compile_ms =
        best.compiled().median_ms() > 0 ? best.compiled().median_ms() : base.compiled().median_ms();
    r.speedup_vs_start = res.speedup_vs_start() > 0 ? res.speedup_vs_start() : Ratio(r.start_ms, r.best_ms);
    r.speedup_vs_eager = res.speedup_vs_eager() > 0 ? res.speedup_vs_eager() : Ratio(r.eager_ms, r.best_ms);
    r.speedup_vs_compile =
        res.speedup_vs_compile() > 0 ? res.speedup_vs_compile() : Ratio(r.compile_ms, r.best_ms);
    r.roofline_pct = res.roofline_efficiency_pct();
    r.ai_roofline_pct = res.roofline_bound_pct();
  } else if (base.candidate().median_ms() > 0) {
    // No improved kernel: the starting kernel is the best there is.
    r.start_ms = r.best_ms = base.candidate().median_ms();
    r.eager_ms = base.eager().median_ms();
    r.compile_ms = base.compiled().median_ms();
    r.speedup_vs_start = 1.0;
    r.speedup_vs_eager = Ratio(r.eager_ms, r.best_ms);
    r.speedup_vs_compile = Ratio(r.compile_ms, r.best_ms);
  } else {
    r.eager_ms = base.eager().median_ms();
    r.compile_ms = base.compiled().median_ms();
  }
  for (const auto& t : res.trajectory()) {
    r.trajectory.emplace_back(t.round(), t.best_speedup_vs_start());
  }
  std::sort(r.trajectory.begin(), r.trajectory.end());
  return r;
}

double GeometricMean(const std::vector<double>& values) {
  double log_sum = 0;
  int n = 0;
  for (double v : values) {
    if (v > 0 && std::isfinite(v)) {
      log_sum += std::log(v);
      ++n;
    }
  }
  return n == 0 ? 0 : std::exp(log_sum / n);
}

// "Clearly faster": beyond the run-to-run noise of a median (docs/measurement.md).
constexpr double kClearMargin = 1.02;

BenchSummary Summarize(const std::vector<BenchRow>& rows) {
  BenchSummary s;
  s.problems = static_cast<int>(rows.size());
  std::vector<double> vs_start, vs_eager, vs_compile;
  double roof_sum = 0, ai_sum = 0;
  int roof_n = 0, ai_n = 0;
  for (const auto& r : rows) {
    if (r.state == "DONE") ++s.done;
    if (r.state == "FAILED" || r.state == "CANCELLED" || r.state == "SUBMIT_ERROR") ++s.failed;
    vs_start.push_back(r.speedup_vs_start);
    vs_eager.push_back(r.speedup_vs_eager);
    vs_compile.push_back(r.speedup_vs_compile);
    if (r.speedup_vs_compile > 0) {
      ++s.compared_with_compile;
      if (r.speedup_vs_compile > 1.0) ++s.faster_than_compile;
      if (r.speedup_vs_compile > kClearMargin) ++s.clearly_faster_than_compile;
    }
    if (r.roofline_pct > 0) {
      roof_sum += r.roofline_pct;
      ++roof_n;
    }
    if (r.ai_roofline_pct > 0) {
      ai_sum += r.ai_roofline_pct;
      ++ai_n;
    }
    s.gpu_seconds += r.gpu_seconds;
  }
  s.geomean_vs_start = GeometricMean(vs_start);
  s.geomean_vs_eager = GeometricMean(vs_eager);
  s.geomean_vs_compile = GeometricMean(vs_compile);
  s.mean_roofline_pct = roof_n > 0 ? roof_sum / roof_n : 0;
  s.mean_ai_roofline_pct = ai_n > 0 ? ai_sum / ai_n : 0;
  return s;
}

std::vector<double> SuiteTrajectory(const std::vector<BenchRow>& rows) {
  int max_round = 0;
  for (const auto& r : rows) {
    for (const auto& [round, sp] : r.trajectory) max_round = std::max(max_round, round);
  }
  std::vector<double> out;
  if (rows.empty()) return out;
  for (int round = 0; round <= max_round; ++round) {
    std::vector<double> at;
    for (const auto& r : rows) {
      double v = 1.0;
      for (const auto& [rr, sp] : r.trajectory) {
        if (rr <= round && sp > 0) v = sp;
      }
      at.push_back(v);
    }
    out.push_back(GeometricMean(at));
  }
  return out;
}

std::string RenderBenchMarkdown(const std::vector<BenchRow>& rows, const BenchSummary& s,
                                const std::string& header) {
  std::string o = absl::StrCat("# kagent bench results\n\n", header.empty() ? "" : header + "\n\n");
  o += "Times are medians in ms. The best kernel, the starting kernel, eager and torch.compile "
       "come from one final run that timed them side by side.\n\n";
  const bool with_run =
      std::any_of(rows.begin(), rows.end(), [](const BenchRow& r) { return !r.run.empty(); });
  o += absl::StrCat("| problem | ", with_run ? "run | " : "",
                    "state | start ms | eager ms | compile ms | best ms | vs start | vs eager | "
                    "vs compile | roofline | AI roofline | rounds | GPU-s | notes |\n");
  o += absl::StrCat("|---|", with_run ? "---|" : "",
                    "---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
  for (const auto& r : rows) {
    std::string notes = !r.error.empty() ? r.error : r.stop_reason;
    std::string first = with_run ? absl::StrCat(Cell(r.name), " | ", Cell(r.run)) : Cell(r.name);
    o += absl::StrFormat("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %.1f | %s |\n",
                         first, r.state, Ms(r.start_ms), Ms(r.eager_ms), Ms(r.compile_ms),
                         Ms(r.best_ms), X(r.speedup_vs_start), X(r.speedup_vs_eager),
                         X(r.speedup_vs_compile), Pct(r.roofline_pct), Pct(r.ai_roofline_pct),
                         r.rounds, r.gpu_seconds, Cell(notes));
  }
  o += "\n## Summary\n\n";
  o += absl::StrFormat("- problems: %d (%d done, %d failed or not submitted)\n", s.problems, s.done,
                       s.failed);
  o += absl::StrFormat("- geometric-mean speedup over the starting kernels: %s\n", X(s.geomean_vs_start));
  o += absl::StrFormat("- geometric-mean speedup over eager PyTorch: %s\n", X(s.geomean_vs_eager));
  o += absl::StrFormat("- geometric-mean speedup over torch.compile: %s\n", X(s.geomean_vs_compile));
  auto share = [&](int n) {
    return s.compared_with_compile > 0
               ? absl::StrFormat("%.0f%%", 100.0 * n / s.compared_with_compile)
               : std::string("-");
  };
  o += absl::StrFormat("- faster than torch.compile: %d of %d (%s); by more than 2%%: %d (%s)\n",
                       s.faster_than_compile, s.compared_with_compile,
                       share(s.faster_than_compile), s.clearly_faster_than_compile,
                       share(s.clearly_faster_than_compile));
  o += absl::StrFormat("- mean roofline efficiency of the final kernels: %s\n", Pct(s.mean_roofline_pct));
  o += absl::StrFormat("- mean arithmetic-intensity roofline of the final kernels (where known): %s\n",
                       Pct(s.mean_ai_roofline_pct));
  o += absl::StrFormat("- GPU time: %.1f GPU-s\n", s.gpu_seconds);
  o += "\n![best-so-far speedup against rounds](trajectory.svg)\n";
  return o;
}

std::string RenderBenchJson(const std::vector<BenchRow>& rows, const BenchSummary& s,
                            const std::string& settings_json) {
  nlohmann::json j;
  j["settings"] = nlohmann::json::parse(settings_json.empty() ? "{}" : settings_json, nullptr,
                                        /*allow_exceptions=*/false);
  if (j["settings"].is_discarded()) j["settings"] = nlohmann::json::object();
  j["summary"] = {{"problems", s.problems},
                  {"done", s.done},
                  {"failed", s.failed},
                  {"geomean_speedup_vs_start", s.geomean_vs_start},
                  {"geomean_speedup_vs_eager", s.geomean_vs_eager},
                  {"geomean_speedup_vs_compile", s.geomean_vs_compile},
                  {"faster_than_compile", s.faster_than_compile},
                  {"clearly_faster_than_compile", s.clearly_faster_than_compile},
                  {"compared_with_compile", s.compared_with_compile},
                  {"mean_roofline_efficiency_pct", s.mean_roofline_pct},
                  {"mean_roofline_bound_pct", s.mean_ai_roofline_pct},
                  {"gpu_seconds", s.gpu_seconds}};
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json traj = nlohmann::json::array();
    for (const auto& [round, sp] : r.trajectory) {
      traj.push_back({{"round", round}, {"best_speedup_vs_start", sp}});
    }
    arr.push_back({{"name", r.name},
                   {"run", r.run},
                   {"job_id", r.job_id},
                   {"state", r.state},
                   {"error", r.error},
                   {"stop_reason", r.stop_reason},
                   {"start_ms", r.start_ms},
                   {"eager_ms", r.eager_ms},
                   {"compile_ms", r.compile_ms},
                   {"best_ms", r.best_ms},
                   {"speedup_vs_start", r.speedup_vs_start},
                   {"speedup_vs_eager", r.speedup_vs_eager},
                   {"speedup_vs_compile", r.speedup_vs_compile},
                   {"roofline_efficiency_pct", r.roofline_pct},
                   {"roofline_bound_pct", r.ai_roofline_pct},
                   {"rounds", r.rounds},
                   {"gpu_seconds", r.gpu_seconds},
                   {"trajectory", traj}});
  }
  j["problems"] = arr;
  j["suite_trajectory"] = SuiteTrajectory(rows);
  return j.dump(2) + "\n";
}

absl::StatusOr<std::vector<BenchRow>> ParseBenchJson(const std::string& text,
                                                     const std::string& source,
                                                     std::string* settings_json) {
  const std::string where = source.empty() ? std::string("results.json") : source;
  auto bad = [&](const std::string& field, const std::string& what) {
    return absl::InvalidArgumentError(
        field.empty() ? absl::StrCat(where, ": ", what) : absl::StrCat(where, ": ", field, ": ", what));
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return bad("", absl::StrCat("not valid JSON (", e.what(), ")"));
  }
  if (!j.is_object()) return bad("", "not a results.json (expected a JSON object)");
  if (!j.contains("problems")) return bad("problems", "missing (not a results.json)");
  if (!j["problems"].is_array()) return bad("problems", "expected an array");
  nlohmann::json settings = nlohmann::json::object();
  if (j.contains("settings")) {
    if (!j["settings"].is_object()) return bad("settings", "expected an object");
    settings = j["settings"];
  }
  std::vector<BenchRow> rows;
  std::map<std::string, size_t> seen;
  const nlohmann::json& problems = j["problems"];
  for (size_t i = 0; i < problems.size(); ++i) {
    const nlohmann::json& p = problems[i];
    const std::string at = absl::StrCat("problems[", i, "]");
    if (!p.is_object()) return bad(at, "expected an object");
    absl::Status st;
    auto str = [&](const char* key, bool required, std::string* dst) {
      if (!st.ok()) return;
      auto it = p.find(key);
      if (it == p.end()) {
        if (required) st = bad(absl::StrCat(at, ".", key), "missing");
        return;
      }
      if (!it->is_string()) {
        st = bad(absl::StrCat(at, ".", key), "expected a string");
        return;
      }
      *dst = it->get<std::string>();
    };
    auto num = [&](const char* key, bool required, double* dst) {
      if (!st.ok()) return;
      auto it = p.find(key);
      if (it == p.end()) {
        if (required) st = bad(absl::StrCat(at, ".", key), "missing");
        return;
      }
      if (it->is_null()) {  // NaN or infinity as RenderBenchJson writes them
        *dst = 0;
        return;
      }
      if (!it->is_number()) {
        st = bad(absl::StrCat(at, ".", key), "expected a number");
        return;
      }
      *dst = it->get<double>();
    };
    BenchRow r;
    str("name", true, &r.name);
    str("state", true, &r.state);
    str("run", false, &r.run);
    str("job_id", false, &r.job_id);
    str("error", false, &r.error);
    str("stop_reason", false, &r.stop_reason);
    num("start_ms", true, &r.start_ms);
    num("eager_ms", true, &r.eager_ms);
    num("compile_ms", true, &r.compile_ms);
    num("best_ms", true, &r.best_ms);
    num("speedup_vs_start", true, &r.speedup_vs_start);
    num("speedup_vs_eager", true, &r.speedup_vs_eager);
    num("speedup_vs_compile", true, &r.speedup_vs_compile);
    num("roofline_efficiency_pct", false, &r.roofline_pct);
    num("roofline_bound_pct", false, &r.ai_roofline_pct);
    num("gpu_seconds", false, &r.gpu_seconds);
    if (!st.ok()) return st;
    if (r.name.empty()) return bad(absl::StrCat(at, ".name"), "empty");
    if (auto it = p.find("rounds"); it != p.end()) {
      if (!it->is_number_integer()) return bad(absl::StrCat(at, ".rounds"), "expected an integer");
      r.rounds = it->get<int>();
    }
    if (auto it = p.find("trajectory"); it != p.end()) {
      if (!it->is_array()) return bad(absl::StrCat(at, ".trajectory"), "expected an array");
      for (size_t k = 0; k < it->size(); ++k) {
        const nlohmann::json& t = (*it)[k];
        const std::string tat = absl::StrCat(at, ".trajectory[", k, "]");
        if (!t.is_object() || !t.contains("round") || !t["round"].is_number_integer()) {
          return bad(absl::StrCat(tat, ".round"), "expected an integer");
        }
        double sp = 0;
        if (t.contains("best_speedup_vs_start") && t["best_speedup_vs_start"].is_number()) {
          sp = t["best_speedup_vs_start"].get<double>();
        } else if (!t.contains("best_speedup_vs_start") || !t["best_speedup_vs_start"].is_null()) {
          return bad(absl::StrCat(tat, ".best_speedup_vs_start"), "expected a number");
        }
        r.trajectory.emplace_back(t["round"].get<int>(), sp);
      }
      std::sort(r.trajectory.begin(), r.trajectory.end());
    }
    if (!seen.emplace(r.name, i).second) {
      return bad(absl::StrCat(at, ".name"),
                 absl::StrCat("'", r.name, "' already in problems[", seen[r.name], "]"));
    }
    rows.push_back(std::move(r));
  }
  if (settings_json != nullptr) *settings_json = settings.dump();
  return rows;
}

std::vector<std::string> BenchRunLabels(const std::vector<BenchRunFile>& files) {
  std::vector<std::string> ids;
  std::map<std::string, int> uses;
  for (const auto& f : files) {
    nlohmann::json s = nlohmann::json::parse(f.settings_json.empty() ? "{}" : f.settings_json,
                                             nullptr, /*allow_exceptions=*/false);
    std::string id;
    if (s.is_object() && s.contains("run_id") && s["run_id"].is_string()) {
      id = s["run_id"].get<std::string>();
    }
    ids.push_back(id);
    if (!id.empty()) ++uses[id];
  }
  std::vector<std::string> labels;
  for (size_t i = 0; i < files.size(); ++i) {
    if (ids[i].empty()) {
      labels.push_back(files[i].path);
    } else if (uses[ids[i]] > 1) {
      labels.push_back(absl::StrCat(ids[i], " (", files[i].path, ")"));
    } else {
      labels.push_back(ids[i]);
    }
  }
  return labels;
}

std::vector<BenchRow> MergeBenchRows(const std::vector<BenchRunFile>& files) {
  std::map<std::string, BenchRow> by_name;
  const std::vector<std::string> labels = BenchRunLabels(files);
  for (size_t i = 0; i < files.size(); ++i) {
    for (const auto& r : files[i].rows) {
      BenchRow row = r;
      if (row.run.empty()) row.run = labels[i];
      by_name[row.name] = std::move(row);
    }
  }
  std::vector<BenchRow> out;
  out.reserve(by_name.size());
  for (auto& [name, row] : by_name) out.push_back(std::move(row));
  return out;
}

namespace {

// How many of `file`'s rows survived into `merged`: the merged row of each of its problems
// is this file's when they are the same row (the later files replaced the others).
int KeptRows(const std::vector<BenchRunFile>& files, size_t index, const std::vector<BenchRow>& merged) {
  int kept = 0;
  for (const auto& r : files[index].rows) {
    bool later = false;
    for (size_t k = index + 1; k < files.size() && !later; ++k) {
      for (const auto& o : files[k].rows) later = later || o.name == r.name;
    }
    if (!later && std::any_of(merged.begin(), merged.end(), [&](const BenchRow& m) { return m.name == r.name; })) {
      ++kept;
    }
  }
  return kept;
}

nlohmann::json SettingsObject(const std::string& settings_json) {
  nlohmann::json s = nlohmann::json::parse(settings_json.empty() ? "{}" : settings_json, nullptr,
                                           /*allow_exceptions=*/false);
  return s.is_object() ? s : nlohmann::json::object();
}

}  // namespace

std::string MergedSettingsJson(const std::vector<BenchRunFile>& files,
                               const std::vector<BenchRow>& merged) {
  nlohmann::json from = nlohmann::json::array();
  for (size_t i = 0; i < files.size(); ++i) {
    nlohmann::json s = SettingsObject(files[i].settings_json);
    s["file"] = files[i].path;
    s["problems"] = files[i].rows.size();
    s["kept"] = KeptRows(files, i, merged);
    from.push_back(std::move(s));
  }
  nlohmann::json settings = {{"merged_from", from}};
  return settings.dump();
}

std::string MergedMarkdownHeader(const std::vector<BenchRunFile>& files,
                                 const std::vector<BenchRow>& merged) {
  std::string o = absl::StrFormat(
      "A merge of %d runs (`kagent bench --merge`); for each problem, the row of the latest run "
      "below that measured it (the \"run\" column says which):\n\n",
      static_cast<int>(files.size()));
  const std::vector<std::string> labels = BenchRunLabels(files);
  for (size_t i = 0; i < files.size(); ++i) {
    nlohmann::json s = SettingsObject(files[i].settings_json);
    std::string how;
    auto int_of = [&](const char* key) {
      return s.contains(key) && s[key].is_number_integer() ? s[key].get<int>() : 0;
    };
    if (int_of("rounds") > 0) absl::StrAppend(&how, ", --rounds ", int_of("rounds"));
    if (int_of("beam_width") > 0) absl::StrAppend(&how, ", --beam-width ", int_of("beam_width"));
    if (int_of("fixes_per_kernel") > 0) {
      absl::StrAppend(&how, ", --fixes-per-kernel ", int_of("fixes_per_kernel"));
    }
    if (s.contains("brain") && s["brain"].is_string() && !s["brain"].get<std::string>().empty()) {
      absl::StrAppend(&how, ", --brain ", s["brain"].get<std::string>());
    }
    if (s.contains("without_start") && s["without_start"].is_boolean() && s["without_start"].get<bool>()) {
      absl::StrAppend(&how, ", --without-start");
    }
    if (s.contains("merged_from")) absl::StrAppend(&how, ", itself a merge");
    o += absl::StrFormat("%d. `%s`: %s, %d problems, %d kept%s\n", static_cast<int>(i + 1),
                         Cell(labels[i]), Cell(files[i].path),
                         static_cast<int>(files[i].rows.size()), KeptRows(files, i, merged), how);
  }
  o += "\nEach row's ratios come from its own job (start, eager, torch.compile and best timed side "
       "by side in that job), so rows from different runs are each self-consistent; the summary's "
       "means and counts are over the merged rows, which may come from different sessions, GPUs or "
       "brain versions.";
  return o;
}

std::string RenderTrajectorySvg(const std::vector<BenchRow>& rows) {
  constexpr double kW = 720, kH = 420, kLeft = 64, kRight = 24, kTop = 40, kBottom = 52;
  std::vector<double> suite = SuiteTrajectory(rows);
  int max_round = std::max(1, static_cast<int>(suite.size()) - 1);
  double y_max = 2.0, y_min = 1.0;
  for (const auto& r : rows) {
    for (const auto& [round, sp] : r.trajectory) {
      if (sp > 0) {
        y_max = std::max(y_max, sp);
        y_min = std::min(y_min, sp);
      }
    }
  }
  // Log scale between powers of two that enclose the data.
  double lo = std::pow(2.0, std::floor(std::log2(y_min)));
  double hi = std::pow(2.0, std::ceil(std::log2(y_max)));
  if (hi <= lo) hi = lo * 2;
  auto px = [&](double round) { return kLeft + (kW - kLeft - kRight) * round / max_round; };
  auto py = [&](double v) {
    double t = (std::log2(v) - std::log2(lo)) / (std::log2(hi) - std::log2(lo));
    return kH - kBottom - (kH - kTop - kBottom) * t;
  };
  std::string o = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"22\" font-size=\"15\">Best-so-far speedup over the starting kernel "
      "(%d problems)</text>\n",
      kW, kH, kW, kH, kLeft, static_cast<int>(rows.size()));
  // Grid: horizontal lines at powers of two, vertical at each round (thinned when many).
  for (double v = lo; v <= hi * 1.0001; v *= 2) {
    o += absl::StrFormat(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%gx</text>\n",
        kLeft, py(v), kW - kRight, py(v), kLeft - 6, py(v) + 4, v);
  }
  int step = std::max(1, max_round / 10);
  for (int round = 0; round <= max_round; round += step) {
    o += absl::StrFormat(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n",
        px(round), kTop, px(round), kH - kBottom, px(round), kH - kBottom + 16, round);
  }
  o += absl::StrFormat(
      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">round</text>\n"
      "<text transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\">speedup vs "
      "start (log scale)</text>\n",
      (kLeft + kW - kRight) / 2, kH - 12, (kTop + kH - kBottom) / 2);
  // One thin step line per problem: 1.0 at round 0, then its best-so-far after each round.
  for (const auto& r : rows) {
    if (r.trajectory.empty()) continue;
    std::string pts = absl::StrFormat("%.1f,%.1f", px(0), py(1.0));
    double v = 1.0;
    for (const auto& [round, sp] : r.trajectory) {
      if (sp > 0) v = std::max(v, sp);
      pts += absl::StrFormat(" %.1f,%.1f", px(round), py(v));
    }
    o += absl::StrFormat(
        "<polyline fill=\"none\" stroke=\"#9ab\" stroke-width=\"1\" points=\"%s\"><title>%s</title>"
        "</polyline>\n",
        pts, Esc(r.name));
  }
  if (!suite.empty()) {
    std::string pts;
    for (size_t i = 0; i < suite.size(); ++i) {
      pts += absl::StrFormat("%s%.1f,%.1f", i ? " " : "", px(i), py(std::max(suite[i], lo)));
    }
    o += absl::StrFormat(
        "<polyline fill=\"none\" stroke=\"#c33\" stroke-width=\"3\" points=\"%s\">"
        "<title>geometric mean</title></polyline>\n",
        pts);
    o += absl::StrFormat(
        "<text x=\"%.1f\" y=\"%.1f\" fill=\"#c33\">geometric mean %.2fx</text>\n", kW - kRight - 150,
        kTop + 14, suite.back());
  }
  o += "</svg>\n";
  return o;
}

namespace {

std::string GrpcCodeName(grpc::StatusCode c) {
  static const char* kNames[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
                                 "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                                 "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
                                 "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  int i = static_cast<int>(c);
  return i >= 0 && i <= 16 ? kNames[i] : "UNKNOWN";
}

// Per problem, what the bench knows while it runs.
struct Slot {
  BenchProblem problem;
  BenchRow row;
  bool submitted = false;
  bool finished = false;
  int poll_failures = 0;
  std::string last_seen;  // "STATE round" of the last progress line
};

constexpr int kMaxPollFailures = 60;

// `kagent bench --merge`: reads every file before writing anything, so OUTDIR may hold one
// of the inputs.
int RunMerge(const BenchFlags& f, std::ostream& out, std::ostream& err) {
  std::vector<BenchRunFile> files;
  for (const auto& path : f.merge_files) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      err << "kagent bench: --merge takes results.json files, not a suite DIR: " << path
          << " is a directory\n";
      return 2;
    }
    if (!fs::exists(path, ec)) {
      err << "kagent bench: " << path << ": no such file\n";
      return 2;
    }
    BenchRunFile file;
    file.path = path;
    std::string text;
    if (!ReadFile(path, &text)) {
      err << "kagent bench: " << path << ": cannot read\n";
      return 2;
    }
    auto rows = ParseBenchJson(text, path, &file.settings_json);
    if (!rows.ok()) {
      err << "kagent bench: " << rows.status().message() << "\n";
      return 2;
    }
    file.rows = *std::move(rows);
    files.push_back(std::move(file));
  }
  std::vector<BenchRow> rows = MergeBenchRows(files);
  BenchSummary sum = Summarize(rows);
  std::error_code ec;
  fs::create_directories(f.out_dir, ec);
  if (ec) {
    err << "kagent bench: cannot create " << f.out_dir << ": " << ec.message() << "\n";
    return 2;
  }
  bool ok = WriteFile(fs::path(f.out_dir) / "results.json",
                      RenderBenchJson(rows, sum, MergedSettingsJson(files, rows))) &&
            WriteFile(fs::path(f.out_dir) / "results.md",
                      RenderBenchMarkdown(rows, sum, MergedMarkdownHeader(files, rows))) &&
            WriteFile(fs::path(f.out_dir) / "trajectory.svg", RenderTrajectorySvg(rows));
  if (!ok) {
    err << "kagent bench: cannot write results under " << f.out_dir << "\n";
    return 2;
  }
  const std::vector<std::string> labels = BenchRunLabels(files);
  for (size_t i = 0; i < files.size(); ++i) {
    out << absl::StrFormat("  %d. %s: %zu problems\n", static_cast<int>(i + 1), labels[i],
                           files[i].rows.size());
  }
  out << absl::StrFormat(
      "merged %zu runs: %d problems, %d DONE; geometric mean %s vs start, %s vs eager, %s vs "
      "torch.compile; faster than torch.compile on %d of %d (by more than 2%%: %d)\n",
      files.size(), sum.problems, sum.done, X(sum.geomean_vs_start), X(sum.geomean_vs_eager),
      X(sum.geomean_vs_compile), sum.faster_than_compile, sum.compared_with_compile,
      sum.clearly_faster_than_compile);
  out << "results: " << (fs::path(f.out_dir) / "results.md").string() << "\n";
  return 0;
}

}  // namespace

absl::StatusOr<BenchFlags> ParseBenchFlags(const std::vector<std::string>& args) {
  BenchFlags f;
  OptionSet o("kagent");
  o.AddString("server", &f.server, "coordinator address");
  o.AddString("token", &f.token, "bearer token", /*secret=*/true);
  o.AddString("tls-ca", &f.tls_ca, "CA (PEM) to verify the server; enables TLS");
  o.AddString("out", &f.out_dir, "where results.json, results.md and trajectory.svg go");
  o.AddString("only", &f.only,
              "only problems whose name contains this (several: comma-separated, any)");
  o.AddString("run-id", &f.run_id, "makes submissions idempotent: rerun with it to resume");
  o.AddString("brain", &f.brain, "brain for every job (default: the server's)");
  o.AddBool("without-start", &f.without_start,
            "submit without the starting kernels (the brain writes the first kernel)");
  o.AddBool("merge", &f.merge,
            "combine the results.json files given (later files win) instead of running jobs");
  o.AddInt("rounds", &f.rounds, "round budget per job (default: the server's)");
  o.AddInt("beam-width", &f.beam_width, "beam width K of every job, 1..16 (default: the server's)");
  o.AddInt("fixes-per-kernel", &f.fixes_per_kernel,
           "fixes tried on each beam kernel per round, 1..16 (default: the server's)");
  o.AddInt("concurrency", &f.concurrency, "at most this many unfinished jobs at a time");
  o.AddDouble("poll-seconds", &f.poll_seconds, "seconds between GetJob polls");
  o.AddDouble("timeout-seconds", &f.timeout_seconds, "deadline of each unary call");
  std::vector<const char*> argv;
  argv.push_back("kagent");
  for (const auto& a : args) argv.push_back(a.c_str());
  absl::Status parsed = o.Parse(static_cast<int>(argv.size()), argv.data());
  if (o.help_requested()) {
    f.help = true;
    return f;
  }
  if (!parsed.ok()) return parsed;
  if (f.merge) {
    if (f.out_dir.empty()) return absl::InvalidArgumentError("--merge needs --out OUTDIR");
    if (o.positional().empty()) {
      return absl::InvalidArgumentError("--merge needs at least one RESULTS.json");
    }
    // Flags that shape jobs do nothing here; refuse them rather than ignore them (--only
    // does not filter the merged rows).
    for (const char* name : {"only", "run-id", "rounds", "beam-width", "fixes-per-kernel", "brain",
                             "without-start", "concurrency"}) {
      if (o.SourceOf(name) == "flag") {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " runs jobs; it cannot be used with --merge"));
      }
    }
    f.merge_files = o.positional();
    return f;
  }
  if (o.positional().size() != 1 || f.out_dir.empty()) {
    return absl::InvalidArgumentError("expected one DIR and --out OUTDIR");
  }
  f.dir = o.positional()[0];
  if (f.concurrency < 1 || f.poll_seconds <= 0 || f.rounds < 0) {
    return absl::InvalidArgumentError(
        "--concurrency must be >= 1, --poll-seconds > 0, --rounds >= 0");
  }
  // Given (on the command line, in the environment or a config file): 1..16, as JobConfig
  // allows. Not given: 0, the server's default.
  for (auto [name, value] : {std::pair<const char*, int*>{"beam-width", &f.beam_width},
                             std::pair<const char*, int*>{"fixes-per-kernel", &f.fixes_per_kernel}}) {
    if (o.SourceOf(name) == "default") {
      *value = 0;
    } else if (*value < 1 || *value > 16) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " must be 1..16 (got ", *value, ")"));
    }
  }
  return f;
}

v1::JobConfig BenchJobConfig(const BenchFlags& f) {
  v1::JobConfig cfg;
  if (f.rounds > 0) cfg.mutable_budget()->set_max_rounds(f.rounds);
  if (f.beam_width > 0) cfg.set_beam_width(f.beam_width);
  if (f.fixes_per_kernel > 0) cfg.set_fixes_per_kernel(f.fixes_per_kernel);
  if (!f.brain.empty()) cfg.set_brain(f.brain);
  return cfg;
}

std::string BenchSettingsJson(const BenchFlags& f) {
  nlohmann::json settings = {{"dir", f.dir},
                             {"server", f.server},
                             {"rounds", f.rounds},
                             {"beam_width", f.beam_width},
                             {"fixes_per_kernel", f.fixes_per_kernel},
                             {"only", f.only},
                             {"brain", f.brain},
                             {"run_id", f.run_id},
                             {"without_start", f.without_start},
                             {"concurrency", f.concurrency}};
  return settings.dump();
}

int RunBench(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<BenchFlags> parsed = ParseBenchFlags(args);
  if (!parsed.ok()) {
    err << "kagent bench: " << parsed.status().message() << "\n" << kUsage;
    return 2;
  }
  if (parsed->help) {
    out << kUsage;
    return 0;
  }
  const BenchFlags& f = *parsed;
  if (f.merge) return RunMerge(f, out, err);
  const std::string& dir = f.dir;
  auto problems = FindBenchProblems(dir, f.only);
  if (!problems.ok()) {
    err << "kagent bench: " << problems.status().message() << "\n";
    return 2;
  }
  if (problems->empty()) {
    err << "kagent bench: no NAME_start.py with a NAME.py in " << dir
        << (f.only.empty() ? "" : " matching --only " + f.only) << "\n";
    return 2;
  }
  std::error_code ec;
  fs::create_directories(f.out_dir, ec);
  if (ec) {
    err << "kagent bench: cannot create " << f.out_dir << ": " << ec.message() << "\n";
    return 2;
  }

  ChannelOptions co;
  co.tls_ca = f.tls_ca;
  auto channel = MakeChannel(f.server, co);
  if (!channel.ok()) {
    err << "kagent bench: " << channel.status().message() << "\n";
    return 1;
  }
  std::unique_ptr<v1::JobService::Stub> stub = v1::JobService::NewStub(*channel);
  auto ctx = [&] {
    CallOptions c;
    c.token = f.token;
    c.timeout = absl::Seconds(f.timeout_seconds);
    return MakeClientContext(c);
  };

  std::vector<Slot> slots;
  for (const auto& p : *problems) {
    Slot s;
    s.problem = p;
    s.row.name = p.name;
    s.row.state = "PENDING";
    slots.push_back(std::move(s));
  }
  const std::string settings = BenchSettingsJson(f);
  const v1::JobConfig config = BenchJobConfig(f);
  auto write_results = [&](bool final_write) {
    std::vector<BenchRow> rows;
    for (const auto& s : slots) rows.push_back(s.row);
    BenchSummary sum = Summarize(rows);
    std::string flags;
    if (f.rounds > 0) absl::StrAppend(&flags, " --rounds ", f.rounds);
    if (f.beam_width > 0) absl::StrAppend(&flags, " --beam-width ", f.beam_width);
    if (f.fixes_per_kernel > 0) absl::StrAppend(&flags, " --fixes-per-kernel ", f.fixes_per_kernel);
    if (f.without_start) absl::StrAppend(&flags, " --without-start");
    std::string header = absl::StrFormat("`kagent bench %s%s` against %s%s", dir, flags, f.server,
                                         final_write ? "" : " (partial: jobs still running)");
    bool ok = WriteFile(fs::path(f.out_dir) / "results.json", RenderBenchJson(rows, sum, settings)) &&
              WriteFile(fs::path(f.out_dir) / "results.md", RenderBenchMarkdown(rows, sum, header)) &&
              WriteFile(fs::path(f.out_dir) / "trajectory.svg", RenderTrajectorySvg(rows));
    if (!ok) err << "kagent bench: cannot write results under " << f.out_dir << "\n";
    return sum;
  };

  out << "kagent bench: " << slots.size() << " problems from " << dir << ", up to " << f.concurrency
      << " at a time\n";
  size_t next = 0, finished = 0;
  int in_flight = 0;
  while (finished < slots.size()) {
    // Submit up to the concurrency limit.
    while (next < slots.size() && in_flight < f.concurrency) {
      Slot& s = slots[next++];
      v1::SubmitJobRequest req;
      std::string src;
      if (!ReadFile(s.problem.problem_path, req.mutable_problem()->mutable_source()) ||
          (!f.without_start && !ReadFile(s.problem.start_path, &src))) {
        s.row.state = "SUBMIT_ERROR";
        s.row.error = "cannot read the problem's files";
        s.finished = true;
        ++finished;
        continue;
      }
      req.mutable_problem()->set_name(s.problem.name);
      if (!f.without_start) {
        req.mutable_start_kernel()->set_source(src);
        bool cuda = src.find("load_inline") != std::string::npos;
        req.mutable_start_kernel()->set_language(cuda ? v1::KERNEL_LANGUAGE_CUDA : v1::KERNEL_LANGUAGE_TRITON);
        req.mutable_start_kernel()->set_origin("bench:" + fs::path(s.problem.start_path).filename().string());
      }
      *req.mutable_config() = config;
      // A run without the starting kernels is other jobs than one with them.
      if (!f.run_id.empty()) {
        req.set_idempotency_key(absl::StrCat("bench:", f.run_id, ":", s.problem.name,
                                             f.without_start ? ":without-start" : ""));
      }
      v1::SubmitJobResponse resp;
      auto c = ctx();
      grpc::Status st = stub->SubmitJob(c.get(), req, &resp);
      if (!st.ok()) {
        if (st.error_code() == grpc::StatusCode::UNAVAILABLE ||
            st.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
            st.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
          err << "kagent bench: " << GrpcCodeName(st.error_code()) << ": " << st.error_message() << "\n";
          if (st.error_code() == grpc::StatusCode::UNAVAILABLE) {
            err << "  (is the server running at " << f.server << "? set --server or KAGENT_SERVER)\n";
          }
          write_results(false);
          return 1;
        }
        s.row.state = "SUBMIT_ERROR";
        s.row.error = absl::StrCat(GrpcCodeName(st.error_code()), ": ", st.error_message());
        s.finished = true;
        ++finished;
        out << absl::StrFormat("[%zu/%zu] %-36s not submitted: %s\n", finished, slots.size(),
                               s.problem.name, s.row.error);
        continue;
      }
      s.submitted = true;
      s.row = RowFromJob(s.problem.name, resp.job());
      ++in_flight;
      out << absl::StrFormat("        %-36s submitted as %s\n", s.problem.name, resp.job().id());
    }
    if (finished == slots.size()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(f.poll_seconds * 1000)));
    for (Slot& s : slots) {
      if (!s.submitted || s.finished) continue;
      v1::GetJobRequest g;
      g.set_job_id(s.row.job_id);
      v1::GetJobResponse resp;
      auto c = ctx();
      grpc::Status st = stub->GetJob(c.get(), g, &resp);
      if (!st.ok()) {
        ++s.poll_failures;
        if (s.poll_failures == 1 || s.poll_failures % 10 == 0) {
          err << "kagent bench: GetJob " << s.row.job_id << ": " << GrpcCodeName(st.error_code()) << ": "
              << st.error_message() << "\n";
        }
        if (s.poll_failures >= kMaxPollFailures || st.error_code() == grpc::StatusCode::NOT_FOUND) {
          s.row.state = "FAILED";
          s.row.error = absl::StrCat("lost track of the job: ", st.error_message());
          s.finished = true;
          ++finished;
          --in_flight;
          write_results(false);
        }
        continue;
      }
      s.poll_failures = 0;
      const v1::Job& job = resp.job();
      s.row = RowFromJob(s.problem.name, job);
      std::string seen = absl::StrCat(s.row.state, " ", job.current_round());
      bool done = Finished(job.state());
      if (done) {
        s.finished = true;
        ++finished;
        --in_flight;
      }
      if (seen != s.last_seen || done) {
        s.last_seen = seen;
        std::string what =
            done ? absl::StrFormat("%s  best %s ms  %s vs start, %s vs compile%s", s.row.state, Ms(s.row.best_ms),
                                   X(s.row.speedup_vs_start), X(s.row.speedup_vs_compile),
                                   s.row.error.empty() ? "" : "  (" + s.row.error + ")")
                 : absl::StrFormat("%s round %d/%d", s.row.state, job.current_round(),
                                   job.config().budget().max_rounds());
        out << absl::StrFormat("[%zu/%zu] %-36s %s\n", finished, slots.size(), s.problem.name, what);
      }
      if (done) write_results(false);
    }
    out << std::flush;
  }
  BenchSummary sum = write_results(true);
  out << absl::StrFormat(
      "done: %d of %d jobs DONE; geometric mean %s vs start, %s vs eager, %s vs torch.compile; "
      "faster than torch.compile on %d of %d (by more than 2%%: %d)\n",
      sum.done, sum.problems, X(sum.geomean_vs_start), X(sum.geomean_vs_eager), X(sum.geomean_vs_compile),
      sum.faster_than_compile, sum.compared_with_compile, sum.clearly_faster_than_compile);
  out << "results: " << (fs::path(f.out_dir) / "results.md").string() << "\n";
  return sum.done == sum.problems ? 0 : 3;
}

int RunBenchIfCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  // Flags of the kagent client that take no value; every other "--flag" without "=" takes
  // the next argument as its value.
  static const char* kNoValue[] = {"--help", "-h", "--h", "--watch"};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return -1;
    if (absl::StartsWith(a, "--") || a == "-h") {
      bool no_value = a.find('=') != std::string::npos ||
                      std::any_of(std::begin(kNoValue), std::end(kNoValue), [&](const char* n) { return a == n; });
      if (!no_value) ++i;
      continue;
    }
    if (a != "bench") return -1;
    std::vector<std::string> rest(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(i));
    rest.insert(rest.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
    return RunBench(rest, out, err);
  }
  return -1;
}

}  // namespace kagent::cli
