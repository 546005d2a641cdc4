// The address a server tells its peers to reach it at, when no --advertise flag says.
#ifndef KAGENT_COMMON_ADVERTISE_H_
#define KAGENT_COMMON_ADVERTISE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace kagent {

// "HOST:PORT" from a --listen address ("host:port", "[::]:port", "0.0.0.0:port") and the
// port actually served: the listen host, or this machine's host name when the listen
// host is a wildcard (or empty).
std::string DefaultAdvertiseAddress(absl::string_view listen, int port);

}  // namespace kagent

#endif  // KAGENT_COMMON_ADVERTISE_H_
