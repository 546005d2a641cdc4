#include "common/client_message.h"

#include "absl/strings/cord.h"
#include "absl/types/optional.h"

namespace kagent {
namespace {

constexpr absl::string_view kClientMessageUrl = "type.kagent.dev/client-message";

}  // namespace

absl::Status WithClientMessage(absl::Status status, absl::string_view client_message) {
  if (status.ok()) return status;
  status.SetPayload(kClientMessageUrl, absl::Cord(client_message));
  return status;
}

bool HasClientMessage(const absl::Status& status) {
  return status.GetPayload(kClientMessageUrl).has_value();
}

std::string ClientMessage(const absl::Status& status) {
  absl::optional<absl::Cord> client = status.GetPayload(kClientMessageUrl);
  if (client.has_value()) return std::string(*client);
  return std::string(status.message());
}

}  // namespace kagent
