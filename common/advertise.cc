#include "common/advertise.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace kagent {

std::string DefaultAdvertiseAddress(absl::string_view listen, int port) {
  const size_t colon = listen.rfind(':');
  std::string host(colon == absl::string_view::npos ? listen : listen.substr(0, colon));
  if (host == "0.0.0.0" || host == "[::]" || host.empty()) {
    char name[256] = {0};
    gethostname(name, sizeof(name) - 1);
    host = name;
  }
  return absl::StrCat(host, ":", port);
}

}  // namespace kagent
