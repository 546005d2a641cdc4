// KernelBench's figures for `kagent bench` (tools/bench.h): coverage, the geometric means
// against torch.compile and the best PyTorch baseline, fast_p, the problems that fell back
// to PyTorch, for the suite and per op class. Pure: no I/O.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bench.h"

namespace kagent::cli {
namespace {

constexpr char kNotRecognized[] = "(not recognized)";

std::string X(double v) { return v > 0 ? absl::StrFormat("%.2fx", v) : "-"; }

std::string Share(int n, int of) {
  return of > 0 ? absl::StrFormat("%d (%.0f%%)", n, 100.0 * n / of) : absl::StrCat(n);
}

// "0", "0.5", "1": p as KernelBench writes it in fast_p.
std::string P(double p) { return absl::StrFormat("%g", p); }

// A markdown table of `rows`' figures, one line each, the first column headed `what`;
// "" when there are none.
std::string CoverageTable(const std::string& what, const std::vector<BenchCoverage>& rows) {
  if (rows.empty()) return "";
  std::string o = absl::StrCat("\n| ", what, " | problems | verified | vs compile | vs best PyTorch |");
  for (int i = 0; i < kFastPCount; ++i) absl::StrAppend(&o, " fast_", P(kFastP[i]), " |");
  o += " kept PyTorch |\n|---|---:|---:|---:|---:|";
  for (int i = 0; i < kFastPCount; ++i) o += "---:|";
  o += "---:|\n";
  for (const BenchCoverage& c : rows) {
    o += absl::StrFormat("| %s | %d | %d | %s | %s |", c.op_class, c.problems, c.verified,
                         X(c.geomean_vs_compile), X(c.geomean_vs_baseline));
    for (int i = 0; i < kFastPCount; ++i) absl::StrAppend(&o, " ", c.fast_p[i], " |");
    absl::StrAppend(&o, " ", c.fell_back, " |\n");
  }
  return o;
}

}  // namespace

double SpeedupVsBestBaseline(const BenchRow& row) {
  double base = 0;
  for (double ms : {row.eager_ms, row.compile_ms}) {
    if (ms > 0 && (base <= 0 || ms < base)) base = ms;
  }
  return base > 0 && row.best_ms > 0 ? base / row.best_ms : 0;
}

bool HasVerifiedKernel(const BenchRow& row) { return row.state == "DONE" && row.best_ms > 0; }

BenchCoverage Coverage(const std::vector<BenchRow>& rows) {
  BenchCoverage c;
  c.problems = static_cast<int>(rows.size());
  std::vector<double> vs_compile, vs_baseline;
  for (const BenchRow& r : rows) {
    if (!HasVerifiedKernel(r)) continue;
    ++c.verified;
    vs_compile.push_back(r.speedup_vs_compile);
    const double vs_base = SpeedupVsBestBaseline(r);
    vs_baseline.push_back(vs_base);
    for (int i = 0; i < kFastPCount; ++i) {
      if (vs_base > kFastP[i]) ++c.fast_p[i];
    }
    if (r.deploy == "eager" || r.deploy == "torch.compile") ++c.fell_back;
  }
  c.geomean_vs_compile = GeometricMean(vs_compile);
  c.geomean_vs_baseline = GeometricMean(vs_baseline);
  return c;
}

namespace {

// The figures of each group, in the map's (name) order, each named by its group.
std::vector<BenchCoverage> CoverageOfGroups(
    const std::map<std::string, std::vector<BenchRow>>& groups) {
  std::vector<BenchCoverage> out;
  for (const auto& [name, members] : groups) {
    out.push_back(Coverage(members));
    out.back().op_class = name;
  }
  return out;
}

}  // namespace

std::vector<BenchCoverage> CoverageByConvClass(const std::vector<BenchRow>& rows) {
  std::map<std::string, std::vector<BenchRow>> by_class;
  for (const BenchRow& r : rows) {
    if (!r.conv_class.empty()) {
      by_class[r.conv_class].push_back(r);
    } else if (r.op_class == "conv") {
      by_class["conv (class not recorded)"].push_back(r);
    }
  }
  return CoverageOfGroups(by_class);
}

std::vector<BenchCoverage> CoverageByOpClass(const std::vector<BenchRow>& rows) {
  std::map<std::string, std::vector<BenchRow>> by_class;
  std::vector<BenchRow> unrecognized;
  for (const BenchRow& r : rows) {
    (r.op_class.empty() ? unrecognized : by_class[r.op_class]).push_back(r);
  }
  std::vector<BenchCoverage> out = CoverageOfGroups(by_class);
  if (!unrecognized.empty()) {
    out.push_back(Coverage(unrecognized));
    out.back().op_class = kNotRecognized;
  }
  return out;
}

std::string CoverageLine(const BenchCoverage& c) {
  std::string fast;
  for (int i = 0; i < kFastPCount; ++i) {
    absl::StrAppend(&fast, i > 0 ? ", " : "", "fast_", P(kFastP[i]), " ", c.fast_p[i]);
  }
  return absl::StrFormat(
      "coverage %d of %d (%s); geometric mean %s vs torch.compile, %s vs the best PyTorch "
      "baseline; %s of %d; %d fell back to PyTorch",
      c.verified, c.problems,
      c.problems > 0 ? absl::StrFormat("%.0f%%", 100.0 * c.verified / c.problems)
                     : std::string("-"),
      X(c.geomean_vs_compile), X(c.geomean_vs_baseline), fast, c.problems, c.fell_back);
}

std::string RenderCoverageMarkdown(const BenchCoverage& s,
                                   const std::vector<BenchCoverage>& by_class,
                                   const std::vector<BenchCoverage>& by_conv_class) {
  std::string o = "\n## KernelBench figures\n\n";
  o += absl::StrFormat("- coverage: a verified kernel for %d of %d problems (%s)\n", s.verified,
                       s.problems,
                       s.problems > 0 ? absl::StrFormat("%.0f%%", 100.0 * s.verified / s.problems)
                                      : std::string("-"));
  o += absl::StrFormat(
      "- geometric mean over the verified problems: %s vs torch.compile, %s vs the best PyTorch "
      "baseline (per problem the faster of eager and torch.compile)\n",
      X(s.geomean_vs_compile), X(s.geomean_vs_baseline));
  o += "- fast_p (correct, and speedup over the best PyTorch baseline > p; of all problems):";
  for (int i = 0; i < kFastPCount; ++i) {
    absl::StrAppend(&o, i > 0 ? "," : "", " fast_", P(kFastP[i]), " ",
                    Share(s.fast_p[i], s.problems));
  }
  o += "\n";
  o += absl::StrFormat(
      "- fell back to PyTorch (no kernel beat eager and torch.compile in its final run, so the "
      "job recommends keeping PyTorch): %d of the %d verified\n",
      s.fell_back, s.verified);
  o += CoverageTable("op class", by_class);
  if (!by_conv_class.empty()) {
    o += "\nThe convolutions by class:\n";
    o += CoverageTable("conv class", by_conv_class);
  }
  return o;
}

}  // namespace kagent::cli
