#include "common/llm/usage_status.h"

#include <string>
#include <utility>

#include "absl/strings/cord.h"

namespace kagent::llm {

bool IsEmpty(const v1::LlmUsage& usage) {
  return usage.calls() == 0 && usage.input_tokens() == 0 && usage.output_tokens() == 0 &&
         usage.cost_usd() == 0;
}

void AddLlmUsage(const v1::LlmUsage& from, v1::LlmUsage* into) {
  into->set_calls(into->calls() + from.calls());
  into->set_input_tokens(into->input_tokens() + from.input_tokens());
  into->set_output_tokens(into->output_tokens() + from.output_tokens());
  into->set_cost_usd(into->cost_usd() + from.cost_usd());
}

void AttachLlmUsage(const v1::LlmUsage& usage, absl::Status* status) {
  if (status->ok() || IsEmpty(usage)) return;
  status->SetPayload(kLlmUsagePayloadUrl, absl::Cord(usage.SerializeAsString()));
}

std::optional<v1::LlmUsage> LlmUsageOf(const absl::Status& status) {
  auto payload = status.GetPayload(kLlmUsagePayloadUrl);  // absl::optional<absl::Cord>
  if (!payload.has_value()) return std::nullopt;
  v1::LlmUsage usage;
  if (!usage.ParseFromString(std::string(*payload))) return std::nullopt;
  return usage;
}

void AddLlmUsageTrailer(const absl::Status& status, grpc::ServerContext* context) {
  std::optional<v1::LlmUsage> usage = LlmUsageOf(status);
  if (!usage.has_value()) return;
  context->AddTrailingMetadata(kLlmUsageTrailer, usage->SerializeAsString());
}

absl::Status AttachLlmUsageFromTrailer(const grpc::ClientContext& context, absl::Status status) {
  if (status.ok()) return status;
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find(kLlmUsageTrailer);
  if (it == trailers.end()) return status;
  v1::LlmUsage usage;
  if (usage.ParseFromArray(it->second.data(), static_cast<int>(it->second.size()))) {
    AttachLlmUsage(usage, &status);
  }
  return status;
}

}  // namespace kagent::llm
