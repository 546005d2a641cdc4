// Test helper: the report's recorded jobs under tools/testdata/report/<name>/, each a
// job.json (v1::Job) and a candidates.json (v1::ListCandidatesResponse) as `kagent export`
// writes them. For tests only.
#ifndef KAGENT_TOOLS_REPORT_TESTDATA_H_
#define KAGENT_TOOLS_REPORT_TESTDATA_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/testing/fixtures.h"
#include "kagent/v1/job_service.pb.h"

namespace kagent::report_testdata {

struct RecordedJob {
  v1::Job job;
  std::vector<v1::Candidate> candidates;
  std::vector<v1::Reflexion> reflexions;
};

// Loads tools/testdata/report/<name>/; the error names the file that failed.
inline absl::StatusOr<RecordedJob> Load(const std::string& name) {
  const std::string dir = absl::StrCat("tools/testdata/report/", name, "/");
  RecordedJob r;
  KAGENT_RETURN_IF_ERROR(testing::LoadJsonFixture(dir + "job.json", &r.job));
  v1::ListCandidatesResponse cands;
  KAGENT_RETURN_IF_ERROR(testing::LoadJsonFixture(dir + "candidates.json", &cands));
  r.candidates.assign(cands.candidates().begin(), cands.candidates().end());
  r.reflexions.assign(cands.reflexions().begin(), cands.reflexions().end());
  return r;
}

}  // namespace kagent::report_testdata

#endif  // KAGENT_TOOLS_REPORT_TESTDATA_H_
