// The HTML report of a job: summary with every speedup (each a ratio from one run), the
// job's GPU counters (GPU-seconds, the GPU-busy share, candidates measured and per
// GPU-minute, variants screened), the
// best kernel and its lineage, a round-by-round chart of the best-so-far speedup, a
// roofline chart, per-shape results, and every candidate with its verdict and reflexion.
// Self-contained (inline SVG and CSS, no scripts, nothing fetched).
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
