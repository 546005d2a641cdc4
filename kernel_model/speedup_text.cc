#include "kernel_model/speedup_text.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kagent {

std::string FormatRatio(double r) {
  if (r >= 100) return absl::StrFormat("%.0fx", r);
  if (r >= 0.1) return absl::StrFormat("%.2fx", r);
  return absl::StrFormat("%.2gx", r);
}

std::string FormatSpeedup(double r) {
  if (!(r > 0)) return "n/a";
  const std::string x = FormatRatio(r);
  if (x == "1.00x") return "1.00x (as fast)";
  if (r > 1) return absl::StrCat(x, " faster");
  return absl::StrCat(x, " (", FormatRatio(1 / r), " slower)");
}

std::string FormatVersus(double r, absl::string_view other) {
  if (!(r > 0)) return absl::StrCat("not compared with ", other);
  const std::string x = FormatRatio(r);
  if (x == "1.00x") return absl::StrCat("as fast as ", other);
  if (r > 1) return absl::StrCat(x, " faster than ", other);
  return absl::StrCat(FormatRatio(1 / r), " slower than ", other);
}

std::string FormatPercent(double pct) {
  return pct >= 10 ? absl::StrFormat("%.0f %%", pct) : absl::StrFormat("%.1f %%", pct);
}

}  // namespace kagent
