// Number formats of the judge's report text (causes and summary).
#ifndef KAGENT_SERVICES_JUDGE_REPORT_TEXT_H_
#define KAGENT_SERVICES_JUDGE_REPORT_TEXT_H_

#include <cmath>
#include <string>

#include "absl/strings/str_format.h"

namespace kagent::judge_text {

// 12.3%
inline std::string Pct(double v) { return absl::StrFormat("%.1f%%", v); }
// Integers as integers, large values in 4 significant digits, else 2 decimals.
inline std::string Num(double v) {
  if (std::fabs(v) >= 1e6) return absl::StrFormat("%.4g", v);
  if (v == std::floor(v)) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.2f", v);
}
// Nanoseconds as microseconds: 12.3 us
inline std::string Micros(double ns) { return absl::StrFormat("%.1f us", ns / 1000.0); }

}  // namespace kagent::judge_text

#endif  // KAGENT_SERVICES_JUDGE_REPORT_TEXT_H_
