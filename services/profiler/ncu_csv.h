// Parser for Nsight Compute's `--csv --page raw` output.
//
// The format (ncu 2025.3, recorded on the H200 in tests/fixtures/ncu/): any number of
// "==PROF==" / "==WARNING==" / program-output lines, then a header row of quoted column
// names starting with "ID", a units row (empty strings for the identity columns), then
// one row per profiled kernel. Identity columns: "ID", "Process ID", "Process Name",
// "Host Name", NVTX range columns, "Kernel Name", "Context", "Stream", "Block Size",
// "Grid Size", "Device", "CC"; every other column is a metric. Values may carry thousands
// separators ("1,962,024,147.73"), be "n/a", or be non-numeric launch attributes
// ("PolicySpread"): those are skipped.
//
// Units are converted to base units: time to ns, sizes to bytes (K/M/G/T = 10^3..10^12,
// Ki/Mi/Gi/Ti = 2^10..2^40), frequencies and per-time rates to per second; % and counts
// as they are.
//
// Thread-safe (pure functions).
#ifndef KAGENT_SERVICES_PROFILER_NCU_CSV_H_
#define KAGENT_SERVICES_PROFILER_NCU_CSV_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

struct NcuCsvReport {
  // One per data row, in ncu's order; `invocation` is the row index. `values` holds
  // every numeric metric column in base units (device__attribute_*, nvlink__*, numa__*,
  // c2clink__* and profiler__* columns are left out: they describe the machine or the
  // profiler, not the kernel).
  std::vector<kagent::v1::KernelMetrics> kernels;
  // The metric columns present in the header (filtered as above).
  std::vector<std::string> metric_columns;
  // Lines before the header ("==PROF== ...", "==WARNING== ...", "==ERROR== ...").
  std::vector<std::string> log_lines;
  // True when ncu said "No kernels were profiled".
  bool no_kernels_profiled = false;
};

// Parses ncu's output. A text with no header row parses to an empty report (no kernels)
// with its log lines; a header row with malformed rows is INVALID_ARGUMENT naming the row.
absl::StatusOr<NcuCsvReport> ParseNcuCsv(absl::string_view text);

// Splits CSV text into records of fields (RFC 4180: quoted fields may hold commas,
// doubled quotes and newlines). Exposed for tests.
std::vector<std::vector<std::string>> SplitCsv(absl::string_view text);

// "1,234,567.5" -> 1234567.5. Fails on "", "n/a", and non-numbers.
bool ParseNcuNumber(absl::string_view text, double* value);

// The factor that converts a value in `unit` to the base unit, and the base unit's name
// ("ns", "bytes", "Hz", "bytes/s", ...). Unknown units convert with factor 1, as is.
struct UnitConversion {
  double factor = 1;
  std::string base_unit;
};
UnitConversion ConvertNcuUnit(absl::string_view unit);

// "(128, 1, 1)" -> {128, 1, 1}. False when malformed.
bool ParseDim3(absl::string_view text, std::vector<int64_t>* dims);

}  // namespace kagent

#endif  // KAGENT_SERVICES_PROFILER_NCU_CSV_H_
