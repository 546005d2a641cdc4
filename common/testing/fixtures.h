// Test helpers: locate the source tree and load protobuf-JSON fixtures from it.
// For tests only (linked into test executables).
#ifndef KAGENT_COMMON_TESTING_FIXTURES_H_
#define KAGENT_COMMON_TESTING_FIXTURES_H_

#include <string>

#include <google/protobuf/message.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kagent::testing {

// The repository root: $KAGENT_SOURCE_DIR (set by CTest), else the directory the build
// was configured from.
std::string SourceDir();

// Reads a whole file.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// Parses the protobuf-JSON file at `relative_path` (from SourceDir()) into `message`.
absl::Status LoadJsonFixture(const std::string& relative_path, google::protobuf::Message* message);

}  // namespace kagent::testing

#endif  // KAGENT_COMMON_TESTING_FIXTURES_H_
