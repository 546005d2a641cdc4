#include "common/proto_json.h"

#include <google/protobuf/util/json_util.h>

namespace kagent {

std::string ToPrettyJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

}  // namespace kagent
