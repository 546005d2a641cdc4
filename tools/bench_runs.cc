// `kagent bench`'s earlier runs (tools/bench.h): results.json read back, and several runs
// merged into one table (--merge), each problem keeping its last finished row. Pure: the
// caller reads the files.
#include "tools/bench.h"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace kagent::cli {

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
    str("op_class", false, &r.op_class);
    str("conv_class", false, &r.conv_class);
    str("deploy", false, &r.deploy);
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
    num("gpu_busy_seconds", false, &r.gpu_busy_seconds);
    if (!st.ok()) return st;
    if (r.name.empty()) return bad(absl::StrCat(at, ".name"), "empty");
    if (auto it = p.find("cpu_worker"); it != p.end()) {
      if (!it->is_boolean()) return bad(absl::StrCat(at, ".cpu_worker"), "expected true or false");
      r.cpu_worker = it->get<bool>();
    }
    if (auto it = p.find("rounds"); it != p.end()) {
      if (!it->is_number_integer()) return bad(absl::StrCat(at, ".rounds"), "expected an integer");
      r.rounds = it->get<int>();
    }
    for (auto [key, dst] : {std::pair<const char*, int64_t*>{"candidates_measured", &r.candidates_measured},
                            {"variants_screened", &r.variants_screened}}) {
      auto it = p.find(key);
      if (it == p.end()) continue;
      if (!it->is_number_integer() || it->get<int64_t>() < 0) {
        return bad(absl::StrCat(at, ".", key), "expected a non-negative integer");
      }
      *dst = it->get<int64_t>();
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
    if (auto it = p.find("max_rounds"); it != p.end()) {
      if (!it->is_number_integer()) return bad(absl::StrCat(at, ".max_rounds"), "expected an integer");
      r.max_rounds = it->get<int>();
    }
    if (auto it = p.find("gpu_trajectory"); it != p.end()) {
      if (!it->is_array()) return bad(absl::StrCat(at, ".gpu_trajectory"), "expected an array");
      for (size_t k = 0; k < it->size(); ++k) {
        const nlohmann::json& t = (*it)[k];
        const std::string tat = absl::StrCat(at, ".gpu_trajectory[", k, "]");
        for (const char* key : {"gpu_seconds", "best_speedup_vs_start"}) {
          if (!t.is_object() || !t.contains(key) || !t[key].is_number()) {
            return bad(absl::StrCat(tat, ".", key), "expected a number");
          }
        }
        r.gpu_trajectory.emplace_back(t["gpu_seconds"].get<double>(),
                                      t["best_speedup_vs_start"].get<double>());
      }
      std::sort(r.gpu_trajectory.begin(), r.gpu_trajectory.end());
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

namespace {

// Per problem name, the index of the file whose row the merge keeps (see MergeBenchRows)
// and that row.
std::map<std::string, std::pair<size_t, const BenchRow*>> MergeWinners(
    const std::vector<BenchRunFile>& files) {
  std::map<std::string, std::pair<size_t, const BenchRow*>> win;
  for (size_t i = 0; i < files.size(); ++i) {
    for (const auto& r : files[i].rows) {
      auto it = win.find(r.name);
      if (it == win.end() || r.state == "DONE" || it->second.second->state != "DONE") {
        win[r.name] = {i, &r};
      }
    }
  }
  return win;
}

// How many of file `index`'s rows the merge kept.
int KeptRows(const std::vector<BenchRunFile>& files, size_t index) {
  int kept = 0;
  for (const auto& [name, w] : MergeWinners(files)) kept += w.first == index ? 1 : 0;
  return kept;
}

}  // namespace

std::vector<BenchRow> MergeBenchRows(const std::vector<BenchRunFile>& files) {
  const std::vector<std::string> labels = BenchRunLabels(files);
  std::vector<BenchRow> out;
  for (const auto& [name, w] : MergeWinners(files)) {
    BenchRow row = *w.second;
    if (row.run.empty()) row.run = labels[w.first];
    out.push_back(std::move(row));
  }
  return out;
}

namespace {

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
    s["kept"] = KeptRows(files, i);
    from.push_back(std::move(s));
  }
  nlohmann::json settings = {{"merged_from", from}};
  return settings.dump();
}

std::string MergedMarkdownHeader(const std::vector<BenchRunFile>& files,
                                 const std::vector<BenchRow>& merged) {
  std::string o = absl::StrFormat(
      "A merge of %d runs (`kagent bench --merge`); for each problem, the row of the latest run "
      "below that finished it, else of the latest that has it (the \"run\" column says "
      "which):\n\n",
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
    if (s.contains("ablation") && s["ablation"].is_string() && s["ablation"] != "full") {
      absl::StrAppend(&how, ", --ablation ", s["ablation"].get<std::string>());
    }
    if (s.contains("merged_from")) absl::StrAppend(&how, ", itself a merge");
    o += absl::StrFormat("%d. `%s`: %s, %d problems, %d kept%s\n", static_cast<int>(i + 1),
                         MarkdownCell(labels[i]), MarkdownCell(files[i].path),
                         static_cast<int>(files[i].rows.size()), KeptRows(files, i), how);
  }
  o += "\nEach row's ratios come from its own job (start, eager, torch.compile and best timed side "
       "by side in that job), so rows from different runs are each self-consistent; the summary's "
       "means and counts are over the merged rows, which may come from different sessions, GPUs or "
       "brain versions.";
  return o;
}

}  // namespace kagent::cli
