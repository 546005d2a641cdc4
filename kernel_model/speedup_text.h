// How every surface (the coordinator's events, `kagent get`, the HTML report, the exported
// package, the bench) writes a ratio of two times of one run, so that "slower" reads the
// same everywhere: a ratio below 1 is never shown alone ("0.01x") but with how many times
// slower it is.
//
// Thread-safe (pure functions).
#ifndef KAGENT_KERNEL_MODEL_SPEEDUP_TEXT_H_
#define KAGENT_KERNEL_MODEL_SPEEDUP_TEXT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace kagent {

// A ratio with the digits that keep it from reading 0: "2.01x", "338x" (>= 100), "0.003x"
// (< 0.1: two significant digits). Precondition: r > 0.
std::string FormatRatio(double r);

// A speedup r = other time / best time: "2.01x faster", "0.80x (1.25x slower)", "1.00x
// (as fast)" (when it rounds to 1.00x); "n/a" when r <= 0 (not measured).
std::string FormatSpeedup(double r);

// The same as a phrase against `other` (e.g. "eager", "torch.compile", "the start"):
// "2.01x faster than eager", "100x slower than eager", "as fast as eager"; "not compared
// with eager" when r <= 0.
std::string FormatVersus(double r, absl::string_view other);

// A margin in percent: "34 %" (>= 10), "4.2 %" (< 10).
std::string FormatPercent(double pct);

}  // namespace kagent

#endif  // KAGENT_KERNEL_MODEL_SPEEDUP_TEXT_H_
