#include "common/file_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace kagent {
namespace {

std::string Reason(int err) { return err != 0 ? std::strerror(err) : "I/O error"; }

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", Reason(errno)));
  }
  std::string data;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0) data.append(buffer, n);
  const bool failed = std::ferror(f) != 0;  // a directory opens, then fails its read (EISDIR)
  const int err = errno;
  std::fclose(f);
  if (failed) return absl::InternalError(absl::StrCat("cannot read ", path, ": ", Reason(err)));
  return data;
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view data) {
  const std::string tmp = path + ".tmp";
  errno = 0;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (out) out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (out) out.close();
    if (!out) {
      int err = errno;
      std::remove(tmp.c_str());
      return absl::InternalError(absl::StrCat("cannot write ", path, ": ", Reason(err)));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot write ", path, ": ", Reason(err)));
  }
  return absl::OkStatus();
}

}  // namespace kagent
