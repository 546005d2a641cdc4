#include "services/profiler/ncu_csv.h"

#include <cmath>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "kernel_model/metric_names.h"

namespace kagent {
namespace {

// Columns describing the machine or the profiler rather than the kernel.
constexpr absl::string_view kSkippedPrefixes[] = {
    "device__attribute_", "nvlink__", "numa__", "c2clink__", "profiler__",
};

bool IsMetricColumn(absl::string_view name) {
  if (name.find("__") == absl::string_view::npos) return false;
  for (absl::string_view prefix : kSkippedPrefixes) {
    if (absl::StartsWith(name, prefix)) return false;
  }
  return true;
}

// Splits CSV starting at `text`; lines starting with "==" at a record boundary are ncu
// log lines and go to `log` (when non-null) instead of becoming records.
std::vector<std::vector<std::string>> SplitCsvImpl(absl::string_view text,
                                                   std::vector<std::string>* log) {
  std::vector<std::vector<std::string>> records;
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    // At a record boundary.
    if (text.substr(i, 2) == "==") {
      size_t end = text.find('\n', i);
      if (end == absl::string_view::npos) end = n;
      if (log != nullptr) {
        log->push_back(std::string(absl::StripTrailingAsciiWhitespace(text.substr(i, end - i))));
      }
      i = end + 1;
      continue;
    }
    std::vector<std::string> record;
    std::string field;
    bool in_quotes = false;
    bool record_done = false;
    while (i < n && !record_done) {
      char c = text[i];
      if (in_quotes) {
        if (c == '"') {
          if (i + 1 < n && text[i + 1] == '"') {
            field.push_back('"');
            i += 2;
            continue;
          }
          in_quotes = false;
          ++i;
          continue;
        }
        field.push_back(c);
        ++i;
        continue;
      }
      switch (c) {
        case '"':
          in_quotes = true;
          ++i;
          break;
        case ',':
          record.push_back(std::move(field));
          field.clear();
          ++i;
          break;
        case '\r':
          ++i;
          break;
        case '\n':
          record_done = true;
          ++i;
          break;
        default:
          field.push_back(c);
          ++i;
      }
    }
    record.push_back(std::move(field));
    if (record.size() == 1 && record[0].empty()) continue;  // blank line
    records.push_back(std::move(record));
  }
  return records;
}

struct PrefixedUnit {
  double factor;
  absl::string_view rest;
};

// Strips a decimal prefix (K, M, G, T) followed by a lowercase unit word ("Kbyte",
// "Ginst"), or a binary one (Ki, Mi, Gi, Ti) before "byte" ("Mibyte").
PrefixedUnit StripPrefix(absl::string_view unit) {
  static const std::pair<absl::string_view, double> kBinary[] = {
      {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0}};
  static const std::pair<absl::string_view, double> kDecimal[] = {
      {"K", 1e3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}};
  for (const auto& [prefix, factor] : kBinary) {
    if (absl::StartsWith(unit, prefix)) {
      absl::string_view rest = unit.substr(prefix.size());
      if (rest == "byte" || rest == "bytes") return {factor, rest};
    }
  }
  for (const auto& [prefix, factor] : kDecimal) {
    if (unit.size() > prefix.size() && absl::StartsWith(unit, prefix) &&
        absl::ascii_islower(unit[prefix.size()])) {
      return {factor, unit.substr(prefix.size())};
    }
  }
  return {1.0, unit};
}

// Time units in nanoseconds; 0 when `unit` is not a time unit.
double TimeUnitNs(absl::string_view unit) {
  static const std::map<absl::string_view, double> kTime = {
      {"ns", 1.0},     {"nsecond", 1.0}, {"nsec", 1.0},    {"us", 1e3},  {"usecond", 1e3},
      {"usec", 1e3},   {"ms", 1e6},      {"msecond", 1e6}, {"msec", 1e6}, {"s", 1e9},
      {"second", 1e9}, {"sec", 1e9},
  };
  auto it = kTime.find(unit);
  return it == kTime.end() ? 0.0 : it->second;
}

UnitConversion ConvertSimpleUnit(absl::string_view unit) {
  if (unit.empty()) return {1.0, ""};
  if (unit == "%") return {1.0, "%"};
  if (double ns = TimeUnitNs(unit); ns > 0) return {ns, "ns"};
  std::string lower = absl::AsciiStrToLower(unit);
  if (lower == "hz") return {1.0, "Hz"};
  if (lower == "khz") return {1e3, "Hz"};
  if (lower == "mhz") return {1e6, "Hz"};
  if (lower == "ghz") return {1e9, "Hz"};
  if (unit == "B" || unit == "byte" || unit == "bytes") return {1.0, "bytes"};
  if (unit == "KB") return {1e3, "bytes"};
  if (unit == "MB") return {1e6, "bytes"};
  if (unit == "GB") return {1e9, "bytes"};
  if (unit == "KiB") return {1024.0, "bytes"};
  if (unit == "MiB") return {1048576.0, "bytes"};
  if (unit == "GiB") return {1073741824.0, "bytes"};
  PrefixedUnit prefixed = StripPrefix(unit);
  if (prefixed.rest == "byte" || prefixed.rest == "bytes") return {prefixed.factor, "bytes"};
  return {prefixed.factor, std::string(prefixed.rest)};
}

}  // namespace

std::vector<std::vector<std::string>> SplitCsv(absl::string_view text) {
  return SplitCsvImpl(text, nullptr);
}

bool ParseNcuNumber(absl::string_view text, double* value) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return false;
  std::string digits;
  digits.reserve(text.size());
  for (char c : text) {
    if (c != ',') digits.push_back(c);
  }
  double parsed = 0;
  if (!absl::SimpleAtod(digits, &parsed) || !std::isfinite(parsed)) return false;
  // SimpleAtod accepts hex and "inf"-like spellings; ncu numbers are plain decimals.
  for (char c : digits) {
    if (!(absl::ascii_isdigit(c) || c == '.' || c == '-' || c == '+' || c == 'e' ||
          c == 'E')) {
      return false;
    }
  }
  *value = parsed;
  return true;
}

UnitConversion ConvertNcuUnit(absl::string_view unit) {
  unit = absl::StripAsciiWhitespace(unit);
  size_t slash = unit.find('/');
  if (slash == absl::string_view::npos) return ConvertSimpleUnit(unit);
  UnitConversion numerator = ConvertSimpleUnit(unit.substr(0, slash));
  absl::string_view denominator = unit.substr(slash + 1);
  if (double ns = TimeUnitNs(denominator); ns > 0) {
    // A rate: per second.
    return {numerator.factor * 1e9 / ns, absl::StrCat(numerator.base_unit, "/s")};
  }
  UnitConversion below = ConvertSimpleUnit(denominator);
  return {numerator.factor / below.factor,
          absl::StrCat(numerator.base_unit, "/", below.base_unit)};
}

bool ParseDim3(absl::string_view text, std::vector<int64_t>* dims) {
  text = absl::StripAsciiWhitespace(text);
  if (!absl::ConsumePrefix(&text, "(") || !absl::ConsumeSuffix(&text, ")")) return false;
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &value)) return false;
    out.push_back(value);
  }
  if (out.empty() || out.size() > 3) return false;
  while (out.size() < 3) out.push_back(1);
  *dims = std::move(out);
  return true;
}

absl::StatusOr<NcuCsvReport> ParseNcuCsv(absl::string_view text) {
  NcuCsvReport report;
  // The header row: the first line that starts with "ID",.
  size_t header = absl::string_view::npos;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == absl::string_view::npos) end = text.size();
    absl::string_view line = text.substr(pos, end - pos);
    if (absl::StartsWith(line, "\"ID\",")) {
      header = pos;
      break;
    }
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) report.log_lines.push_back(std::string(line));
    pos = end + 1;
  }
  std::vector<std::vector<std::string>> records;
  if (header != absl::string_view::npos) {
    records = SplitCsvImpl(text.substr(header), &report.log_lines);
  }
  for (const std::string& line : report.log_lines) {
    if (absl::StrContains(line, "No kernels were profiled")) report.no_kernels_profiled = true;
  }
  if (records.empty()) return report;

  const std::vector<std::string>& columns = records[0];
  std::map<std::string, size_t> index;
  for (size_t c = 0; c < columns.size(); ++c) index.emplace(columns[c], c);
  auto column = [&](absl::string_view name) -> int {
    auto it = index.find(std::string(name));
    return it == index.end() ? -1 : static_cast<int>(it->second);
  };
  const int id_col = column("ID");
  const int name_col = column("Kernel Name");
  const int grid_col = column("Grid Size");
  const int block_col = column("Block Size");
  if (name_col < 0) {
    return absl::InvalidArgumentError("ncu CSV header has no \"Kernel Name\" column");
  }

  size_t first_data = 1;
  std::vector<UnitConversion> units(columns.size());
  if (records.size() > 1 && records[1].size() == columns.size() &&
      records[1][static_cast<size_t>(id_col)].empty()) {
    for (size_t c = 0; c < columns.size(); ++c) units[c] = ConvertNcuUnit(records[1][c]);
    first_data = 2;
  }
  std::vector<size_t> metric_indices;
  for (size_t c = 0; c < columns.size(); ++c) {
    if (IsMetricColumn(columns[c])) {
      metric_indices.push_back(c);
      report.metric_columns.push_back(columns[c]);
    }
  }

  for (size_t r = first_data; r < records.size(); ++r) {
    const std::vector<std::string>& row = records[r];
    if (row.size() != columns.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ncu CSV data row ", r - first_data, " has ", row.size(), " fields; the header has ",
          columns.size()));
    }
    kagent::v1::KernelMetrics kernel;
    kernel.set_kernel_name(row[static_cast<size_t>(name_col)]);
    kernel.set_invocation(static_cast<int64_t>(report.kernels.size()));
    std::vector<int64_t> dims;
    if (grid_col >= 0 && ParseDim3(row[static_cast<size_t>(grid_col)], &dims)) {
      for (int64_t d : dims) kernel.add_grid(d);
    }
    if (block_col >= 0 && ParseDim3(row[static_cast<size_t>(block_col)], &dims)) {
      for (int64_t d : dims) kernel.add_block(d);
    }
    auto& values = *kernel.mutable_values();
    for (size_t c : metric_indices) {
      double value = 0;
      if (!ParseNcuNumber(row[c], &value)) continue;  // "n/a", "", attribute strings
      values[columns[c]] = value * units[c].factor;
    }
    auto duration = values.find(metric::kDuration);
    if (duration != values.end()) kernel.set_duration_ns(duration->second);
    report.kernels.push_back(std::move(kernel));
  }
  return report;
}

}  // namespace kagent
