// Which user Nsight Compute runs as. ncu's front end and the library it injects into
// every process of the run meet through a directory only the front end's user may use
// (NVIDIA-treetracker-* in its temp dir); a process of another user never connects and
// its first profiled kernel waits for ever (seen on the H200: a root front end, the
// candidate sandboxed as nobody). So a worker running as root runs ncu, and the harness
// under it, as the user the candidate sandbox drops to; a worker that is not root runs
// them as itself, as its candidates already are.
//
//   absl::StatusOr<std::optional<NcuUser>> user = NcuUserForSandbox();
//   options.run_as = *user;   // RunNcuProfile then prefixes ncu with setpriv
#ifndef KAGENT_SERVICES_PROFILER_NCU_USER_H_
#define KAGENT_SERVICES_PROFILER_NCU_USER_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kagent {

struct NcuUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
};

// The candidate sandbox's user when this process is root: $KAGENT_CHILD_USER (as the
// harness reads it), else "nobody"; nullopt when this process is not root or that user is
// root. NOT_FOUND when the user does not exist.
absl::StatusOr<std::optional<NcuUser>> NcuUserForSandbox();

// The user named `name` (a name or a numeric uid). NOT_FOUND when there is none.
absl::StatusOr<NcuUser> LookUpUser(const std::string& name);

// `argv` started as `user`: setpriv --reuid --regid --clear-groups -- argv...
std::vector<std::string> RunAsUser(const NcuUser& user, std::vector<std::string> argv);

// A new directory for one ncu run, made 0700 in `parent` and owned by `user`, that the
// user can reach (parent must be searchable by it, e.g. /tmp). INTERNAL on failure.
absl::StatusOr<std::string> MakeUserRunDir(const std::string& parent, const NcuUser& user);

}  // namespace kagent

#endif  // KAGENT_SERVICES_PROFILER_NCU_USER_H_
