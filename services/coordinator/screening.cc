#include "services/coordinator/screening.h"

#include <cstdint>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/source_text.h"

namespace kagent {
namespace {

// FNV-1a, 64 bits: stable across builds and platforms (std::hash is not).
uint64_t Fnv1a(uint64_t h, const std::string& bytes) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string Shorten(std::string s, size_t max) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

std::string Plural(int n) { return n == 1 ? "variant" : "variants"; }

}  // namespace

std::vector<v1::KernelSource> ScreenKernels(
    const v1::KernelSource& generated,
    const google::protobuf::RepeatedPtrField<v1::KernelSource>& variants) {
  std::vector<v1::KernelSource> out;
  out.push_back(generated);
  for (const v1::KernelSource& v : variants) {
    if (static_cast<int>(out.size()) >= kMaxScreenKernels) break;
    out.push_back(v);
  }
  return out;
}

std::string ScreenTaskId(const std::string& job_id, int round, int worker_index,
                         const std::vector<v1::KernelSource>& kernels) {
  uint64_t h = 14695981039346656037ULL;
  for (const v1::KernelSource& k : kernels) {
    h = Fnv1a(h, absl::StrCat(static_cast<int>(k.language()), ":", k.source().size(), ":"));
    h = Fnv1a(h, k.source());
  }
  return absl::StrFormat("%s/r%d/w%d/screen/%016x", job_id, round, worker_index, h);
}

v1::ScreenRequest MakeScreenRequest(const std::string& task_id, const std::string& job_id,
                                    const v1::Problem& problem,
                                    const std::vector<v1::KernelSource>& kernels) {
  v1::ScreenRequest r;
  r.set_task_id(task_id);
  r.set_job_id(job_id);
  *r.mutable_problem() = problem;
  for (const v1::KernelSource& k : kernels) *r.add_kernels() = k;
  return r;
}

ScreenChoice ChooseScreened(const std::string& label, const std::vector<v1::KernelSource>& kernels,
                            const v1::ScreenResponse& response, const std::string& parent_source) {
  const int n = static_cast<int>(kernels.size());
  const std::string parent = parent_source.empty() ? "" : NormalizeSource(parent_source);
  ScreenChoice choice;
  std::set<int> seen;
  std::vector<std::string> failures;
  int parent_copies = 0;
  for (const v1::ScreenResult& r : response.results()) {
    if (r.index() < 0 || r.index() >= n || !seen.insert(r.index()).second) continue;
    if (!r.ok() || r.median_ms() <= 0) {
      if (failures.size() < 3) {
        failures.push_back(absl::StrCat(
            "#", r.index(), ": ", Shorten(r.reason().empty() ? "failed" : r.reason(), 120)));
      }
      continue;
    }
    // The kernel as generated (#0) is what a failed screen measures anyway; a variant
    // that is the parent again would be measured for nothing.
    if (r.index() > 0 && !parent.empty() &&
        NormalizeSource(kernels[r.index()].source()) == parent) {
      ++parent_copies;
      continue;
    }
    if (choice.index < 0 || r.median_ms() < choice.median_ms) {
      choice.index = r.index();
      choice.median_ms = r.median_ms();
    }
  }
  const std::string skipped =
      parent_copies == 0
          ? ""
          : absl::StrCat("; ", parent_copies, parent_copies == 1 ? " variant is" : " variants are",
                         " the parent kernel itself, not chosen");
  if (choice.index >= 0) {
    choice.message = absl::StrFormat(
        "%s: screened %d %s: #%d%s fastest %.3f ms (screen, not a measurement)%s; measuring it",
        label, n, Plural(n), choice.index, choice.index == 0 ? " (the kernel as generated)" : "",
        choice.median_ms, skipped);
  } else {
    std::string why;
    for (const std::string& f : failures) absl::StrAppend(&why, why.empty() ? "" : "; ", f);
    if (why.empty()) why = "no result";
    choice.message = absl::StrFormat(
        "%s: screened %d %s, none passed (%s)%s; measuring the kernel as generated", label, n,
        Plural(n), why, skipped);
  }
  return choice;
}

std::string ScreenFailedMessage(const std::string& label, int kernels, const absl::Status& status) {
  return absl::StrFormat("%s: the screen of %d %s failed (%s: %s); measuring the kernel as generated",
                         label, kernels, Plural(kernels), absl::StatusCodeToString(status.code()),
                         Shorten(std::string(status.message()), 300));
}

std::string ScreenArtifactJson(const std::string& task_id,
                               const std::vector<v1::KernelSource>& kernels,
                               const v1::ScreenResponse* response, const absl::Status& status,
                               const ScreenChoice& choice) {
  nlohmann::json j;
  j["note"] = "a screen ranks variants of one kernel by a short timing loop after one "
              "correctness check; it is not a measurement (the chosen kernel's measurement "
              "is measurement.json)";
  j["task_id"] = task_id;
  nlohmann::json ks = nlohmann::json::array();
  for (size_t i = 0; i < kernels.size(); ++i) {
    nlohmann::json k = {{"index", i},
                        {"origin", kernels[i].origin()},
                        {"language", v1::KernelLanguage_Name(kernels[i].language())}};
    if (response != nullptr) {
      for (const v1::ScreenResult& r : response->results()) {
        if (r.index() != static_cast<int>(i)) continue;
        k["ok"] = r.ok();
        if (!r.reason().empty()) k["reason"] = r.reason();
        if (r.ok()) k["median_ms"] = r.median_ms();
        break;
      }
    }
    ks.push_back(std::move(k));
  }
  j["kernels"] = std::move(ks);
  if (response != nullptr) {
    j["gpu_seconds"] = response->gpu_seconds();
    j["gpu_busy_seconds"] = response->gpu_busy_seconds();
    j["worker_id"] = response->worker_id();
    j["log"] = response->log();
  } else {
    j["error"] = absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message());
  }
  j["chosen_index"] = choice.index;
  if (choice.index >= 0) j["chosen_screen_median_ms"] = choice.median_ms;
  j["message"] = choice.message;
  return j.dump(2) + "\n";
}

}  // namespace kagent
