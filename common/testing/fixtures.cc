#include "common/testing/fixtures.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"

namespace kagent::testing {

std::string SourceDir() {
  if (const char* dir = std::getenv("KAGENT_SOURCE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return KAGENT_SOURCE_DIR_DEFAULT;
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

absl::Status LoadJsonFixture(const std::string& relative_path, google::protobuf::Message* message) {
  const std::string path = absl::StrCat(SourceDir(), "/", relative_path);
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  auto status = google::protobuf::util::JsonStringToMessage(*text, message);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", status.ToString()));
  }
  return absl::OkStatus();
}

}  // namespace kagent::testing
