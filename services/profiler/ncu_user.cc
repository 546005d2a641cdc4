#include "services/profiler/ncu_user.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kagent {

absl::StatusOr<NcuUser> LookUpUser(const std::string& name) {
  struct passwd pw;
  struct passwd* found = nullptr;
  std::string buf(16384, '\0');
  uint32_t uid = 0;
  int err = absl::SimpleAtoi(name, &uid)
                ? getpwuid_r(uid, &pw, buf.data(), buf.size(), &found)
                : getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found);
  if (err != 0 || found == nullptr) {
    return absl::NotFoundError(absl::StrCat("no user '", name, "' on this machine",
                                            err != 0 ? absl::StrCat(": ", std::strerror(err))
                                                     : std::string()));
  }
  return NcuUser{pw.pw_uid, pw.pw_gid, pw.pw_name};
}

absl::StatusOr<std::optional<NcuUser>> NcuUserForSandbox() {
  if (geteuid() != 0) return std::optional<NcuUser>();
  const char* env = std::getenv("KAGENT_CHILD_USER");
  std::string name = env != nullptr && *env != '\0' ? env : "nobody";
  absl::StatusOr<NcuUser> user = LookUpUser(name);
  if (!user.ok()) {
    return absl::NotFoundError(absl::StrCat(
        "the candidate sandbox's user, which ncu must run as: ", user.status().message(),
        " (set KAGENT_CHILD_USER to an unprivileged user that exists)"));
  }
  if (user->uid == 0) return std::optional<NcuUser>();
  return std::optional<NcuUser>(*user);
}

std::vector<std::string> RunAsUser(const NcuUser& user, std::vector<std::string> argv) {
  std::vector<std::string> out = {"setpriv", absl::StrCat("--reuid=", user.uid),
                                  absl::StrCat("--regid=", user.gid), "--clear-groups", "--"};
  out.insert(out.end(), std::make_move_iterator(argv.begin()),
             std::make_move_iterator(argv.end()));
  return out;
}

absl::StatusOr<std::string> MakeUserRunDir(const std::string& parent, const NcuUser& user) {
  std::string tmpl = absl::StrCat(parent, "/kagent-ncu-XXXXXX");
  if (mkdtemp(tmpl.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("cannot create a directory in ", parent, ": ",
                                            std::strerror(errno)));
  }
  if (chown(tmpl.c_str(), user.uid, user.gid) != 0) {
    int e = errno;
    rmdir(tmpl.c_str());
    return absl::InternalError(absl::StrCat("cannot give ", tmpl, " to ", user.name, ": ",
                                            std::strerror(e)));
  }
  return tmpl;
}

}  // namespace kagent
