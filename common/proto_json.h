// Protocol messages as the JSON people read: indented, proto field names (snake_case) as
// in the .proto files. For artifacts, exports and command output; not a wire format.
#ifndef KAGENT_COMMON_PROTO_JSON_H_
#define KAGENT_COMMON_PROTO_JSON_H_

#include <string>

#include <google/protobuf/message.h>

namespace kagent {

// `m` as indented JSON with its .proto field names; "" if protobuf refuses to print it
// (it does not for the project's messages). Thread-safe.
std::string ToPrettyJson(const google::protobuf::Message& m);

}  // namespace kagent

#endif  // KAGENT_COMMON_PROTO_JSON_H_
