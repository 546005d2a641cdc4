// Whole-file reads and writes for small files (configs, certificates, sources, results).
#ifndef KAGENT_COMMON_FILE_IO_H_
#define KAGENT_COMMON_FILE_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kagent {

// The file's bytes. NOT_FOUND "cannot read PATH: REASON" when it cannot be opened (REASON
// from errno: "No such file or directory", "Permission denied", "Is a directory"), INTERNAL
// when reading fails part way.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Replaces the file's contents with `data`: writes PATH.tmp, then renames it over PATH, so
// a reader sees the old or the new file, never a part. INTERNAL "cannot write PATH: REASON"
// on failure (the .tmp file is removed).
absl::Status WriteFileAtomically(const std::string& path, absl::string_view data);

}  // namespace kagent

#endif  // KAGENT_COMMON_FILE_IO_H_
