// LLM usage (kagent.v1.LlmUsage) carried beside an error.
//
// A service reports the LLM usage of a request in its response; but a request that
// fails (RESOURCE_EXHAUSTED when a budget runs out half-way, in particular) has no
// response, and the calls it made before failing still cost tokens. So the usage rides
// on the absl::Status as a payload inside a process, and in the binary trailing metadata
// "kagent-llm-usage-bin" (a serialized LlmUsage) between processes:
//
//   server:  absl::Status s = DoWork(...);          // AttachLlmUsage(usage, &s) on error
//            AddLlmUsageTrailer(s, server_context);  // at the gRPC edge
//   client:  s = AttachLlmUsageFromTrailer(client_context, s);
//            if (auto u = LlmUsageOf(s)) ...         // charge the job
//
// Pure functions; thread-safe.
#ifndef KAGENT_COMMON_LLM_USAGE_STATUS_H_
#define KAGENT_COMMON_LLM_USAGE_STATUS_H_

#include <memory>
#include <optional>

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/llm/accounting.h"
#include "kagent/v1/common.pb.h"

namespace kagent::llm {

// The meter of one request that may carry what is left of its job's LLM budget
// (`llm_tokens_left` / `llm_cost_usd_left`, optional fields, as DiagnoseRequest,
// PrescribeRequest and ReflectRequest have), labelled with the job and `what` the request
// is for (e.g. "prescription").
template <typename Request>
std::unique_ptr<UsageMeter> RequestMeter(const Request& request, absl::string_view what) {
  MeterLimits limits;
  if (request.has_llm_tokens_left()) limits.max_tokens = request.llm_tokens_left();
  if (request.has_llm_cost_usd_left()) limits.max_cost_usd = request.llm_cost_usd_left();
  return std::make_unique<UsageMeter>(
      limits, absl::StrCat("job ", request.job_id().empty() ? "(none)" : request.job_id(),
                           " (what its budget had left for this ", what, ")"));
}

// The trailer key (binary: gRPC base64-encodes it on the wire).
inline constexpr char kLlmUsageTrailer[] = "kagent-llm-usage-bin";
// The absl::Status payload's type URL.
inline constexpr char kLlmUsagePayloadUrl[] = "type.googleapis.com/kagent.v1.LlmUsage";

// True when `usage` has no call, token or cost.
bool IsEmpty(const v1::LlmUsage& usage);

// The proto form of a meter's totals (calls, tokens, cost; `refused` has no field).
// Inline: callers need not link kagent_llm_usage for it.
inline v1::LlmUsage ToLlmUsage(const UsageTotals& totals) {
  v1::LlmUsage usage;
  usage.set_calls(totals.calls);
  usage.set_input_tokens(totals.input_tokens);
  usage.set_output_tokens(totals.output_tokens);
  usage.set_cost_usd(totals.cost_usd);
  return usage;
}

// Adds `from` into `into` (every field).
void AddLlmUsage(const v1::LlmUsage& from, v1::LlmUsage* into);

// Attaches `usage` to a non-OK `status` (replacing an earlier one). Nothing for an OK
// status (the response carries the usage then) or an empty usage.
void AttachLlmUsage(const v1::LlmUsage& usage, absl::Status* status);

// The usage attached to `status`, if any (and if it parses).
std::optional<v1::LlmUsage> LlmUsageOf(const absl::Status& status);

// Server side: when `status` carries usage, adds it as the trailer. Call before the
// handler returns. `context` must not be null.
void AddLlmUsageTrailer(const absl::Status& status, grpc::ServerContext* context);

// Client side, after the call returned `status`: attaches the usage of the server's
// trailer (when there is one and `status` is not OK) and returns the status.
absl::Status AttachLlmUsageFromTrailer(const grpc::ClientContext& context, absl::Status status);

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_USAGE_STATUS_H_
