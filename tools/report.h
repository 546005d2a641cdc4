// The HTML report of a job (docs/report.md): the job's counters, configuration, problem
// (op class, the reference's ops and shapes) and dates; the result table, whose every time
// and ratio comes from the final run (a ratio under 1 reads "0.80x (1.25x slower)", a
// missing time "n/a"); the lineage; the best-so-far speedup by round, with a sentence
// saying which runs its figures come from where they differ from the table's; the
// roofline against the GPU's ceilings (the spec table's entry for the device), with the
// starting and the best kernel placed by their profiles, or a sentence when nothing was
// profiled; per-shape results; every candidate with its verdict (duplicates grey) and
// reflexion; and the best kernel's source. A job that ran on a CPU worker (measurements
// whose gpu_name is "cpu": Triton's interpreter) gets a banner saying its times are not
// GPU times, and its counters read worker-seconds, not GPU-seconds.
// Self-contained (inline SVG and CSS, no scripts, nothing fetched); ids stay on one line.
// Pure functions; thread-safe.
#ifndef KAGENT_TOOLS_REPORT_H_
#define KAGENT_TOOLS_REPORT_H_

#include <string>
#include <vector>

#include "kagent/v1/common.pb.h"

namespace kagent {

std::string RenderHtmlReport(const v1::Job& job, const std::vector<v1::Candidate>& candidates,
                             const std::vector<v1::Reflexion>& reflexions);

// Escapes &, <, >, " and ' for HTML text and attributes.
std::string HtmlEscape(const std::string& text);

}  // namespace kagent

#endif  // KAGENT_TOOLS_REPORT_H_
