#include "kernel_model/ncu_metrics.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status.h"

namespace kagent {
namespace ncu_metrics_internal {
extern const char kNcuMetricsTsv[];
}  // namespace ncu_metrics_internal

namespace {

bool ParseArch(absl::string_view arch, int* min_cc, int* max_cc) {
  *min_cc = 0;
  *max_cc = 0;
  if (arch == "all") return true;
  size_t dash = arch.find('-');
  if (dash == absl::string_view::npos) {
    if (!absl::SimpleAtoi(arch, min_cc)) return false;
    *max_cc = *min_cc;
    return true;
  }
  absl::string_view lo = arch.substr(0, dash);
  absl::string_view hi = arch.substr(dash + 1);
  if (!absl::SimpleAtoi(lo, min_cc)) return false;
  if (!hi.empty() && !absl::SimpleAtoi(hi, max_cc)) return false;
  return true;
}

}  // namespace

NcuMetricTableParse ParseNcuMetricTable(absl::string_view tsv) {
  NcuMetricTableParse parse;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(tsv, '\n')) {
    ++line_number;
    line = absl::StripTrailingAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, '\t');
    if (fields.size() != 5) {
      parse.error = absl::StrCat("line ", line_number, ": expected 5 tab-separated fields, got ",
                                 fields.size());
      return parse;
    }
    NcuMetricInfo info;
    info.name = std::string(fields[0]);
    if (fields[1] == "sum") {
      info.aggregation = MetricAggregation::kSum;
    } else if (fields[1] == "wmean") {
      info.aggregation = MetricAggregation::kDurationWeightedMean;
    } else {
      parse.error = absl::StrCat("line ", line_number, ": aggregation must be sum or wmean");
      return parse;
    }
    if (!ParseArch(fields[2], &info.min_cc, &info.max_cc)) {
      parse.error = absl::StrCat("line ", line_number, ": bad arch '", fields[2], "'");
      return parse;
    }
    info.unit = std::string(fields[3]);
    info.meaning = std::string(fields[4]);
    parse.rows.push_back(std::move(info));
  }
  return parse;
}

const std::vector<NcuMetricInfo>& NcuMetricTable() {
  static const std::vector<NcuMetricInfo>* table = [] {
    NcuMetricTableParse parse = ParseNcuMetricTable(ncu_metrics_internal::kNcuMetricsTsv);
    KAGENT_CHECK(parse.error.empty()) << "ncu_metrics.tsv: " << parse.error;
    return new std::vector<NcuMetricInfo>(std::move(parse.rows));
  }();
  return *table;
}

std::vector<std::string> NcuMetricsForArch(int cc) {
  std::vector<std::string> names;
  for (const NcuMetricInfo& info : NcuMetricTable()) {
    if (info.AppliesTo(cc)) names.push_back(info.name);
  }
  return names;
}

const NcuMetricInfo* FindNcuMetric(absl::string_view name) {
  for (const NcuMetricInfo& info : NcuMetricTable()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

MetricAggregation AggregationFor(absl::string_view name) {
  if (const NcuMetricInfo* info = FindNcuMetric(name)) return info->aggregation;
  if (absl::EndsWith(name, ".sum") && !absl::StartsWith(name, "launch__")) {
    return MetricAggregation::kSum;
  }
  return MetricAggregation::kDurationWeightedMean;
}

int ParseComputeCapability(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  absl::ConsumePrefix(&text, "sm_");
  absl::ConsumePrefix(&text, "sm");
  int major = 0;
  int minor = 0;
  size_t dot = text.find('.');
  if (dot != absl::string_view::npos) {
    if (!absl::SimpleAtoi(text.substr(0, dot), &major) ||
        !absl::SimpleAtoi(text.substr(dot + 1), &minor)) {
      return 0;
    }
    return major * 10 + minor;
  }
  int value = 0;
  if (!absl::SimpleAtoi(text, &value)) {
    // "90a" and the like: the leading digits.
    size_t digits = 0;
    while (digits < text.size() && absl::ascii_isdigit(text[digits])) ++digits;
    if (digits == 0 || !absl::SimpleAtoi(text.substr(0, digits), &value)) return 0;
  }
  return value;
}

}  // namespace kagent
