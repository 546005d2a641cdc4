#include "common/llm/http_llm_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/llm/api_key.h"
#include "common/llm/endpoint_failure.h"
#include "common/logging.h"

namespace kagent::llm {

std::string NormalizeBaseUrl(absl::string_view base_url) {
  std::string url(base_url);
  while (absl::EndsWith(url, "/")) url.pop_back();
  if (absl::EndsWith(url, "/v1")) url.resize(url.size() - 3);
  return url;
}

HttpLlmClient::HttpLlmClient(HttpLlmClientOptions options,
                             std::unique_ptr<ProviderProtocol> protocol, HttpLlmClientDeps deps)
    : options_(std::move(options)),
      protocol_(std::move(protocol)),
      endpoint_(absl::StrCat(NormalizeBaseUrl(options_.base_url), protocol_->path())),
      transport_(std::move(deps.transport)),
      breaker_(std::move(deps.breaker)),
      clock_(deps.clock != nullptr ? deps.clock : RealClock()),
      uniform01_(std::move(deps.uniform01)) {
  if (transport_ == nullptr) transport_ = std::make_shared<CurlTransport>();
  if (breaker_ == nullptr) {
    breaker_ = std::make_shared<CircuitBreaker>(endpoint_, options_.breaker, clock_);
  }
}

double HttpLlmClient::Uniform01() {
  if (uniform01_) return uniform01_();
  absl::MutexLock lock(&rng_mu_);
  return absl::Uniform(rng_, 0.0, 1.0);
}

HttpLlmClient::Attempt HttpLlmClient::RunAttempt(const std::string& body,
                                                 absl::Duration timeout) {
  HttpRequest http;
  http.url = endpoint_;
  http.headers = protocol_->Headers(options_.api_key);
  http.body = body;
  http.timeout = timeout;
  http.connect_timeout = options_.connect_timeout;

  Attempt attempt;
  absl::StatusOr<HttpResponse> response = transport_->Post(http);
  if (!response.ok()) {
    attempt.retryable = IsRetryableTransportError(response.status());
    attempt.endpoint_failure = attempt.retryable;
    switch (response.status().code()) {
      case absl::StatusCode::kDeadlineExceeded:
        attempt.outcome = LlmOutcome::kTimeout;
        break;
      case absl::StatusCode::kUnavailable:
        attempt.outcome = LlmOutcome::kConnectionError;
        break;
      default:
        attempt.outcome = OutcomeOfCode(response.status().code());
    }
    attempt.result = absl::Status(
        response.status().code(),
        absl::StrCat(protocol_->name(), " ", endpoint_, ": ", response.status().message()));
    return attempt;
  }
  attempt.http_status = response->status;
  if (response->status >= 200 && response->status < 300) {
    attempt.result = protocol_->DecodeResponse(response->body);
    if (!attempt.result.ok()) attempt.outcome = LlmOutcome::kBadResponse;
    return attempt;
  }
  attempt.retryable = IsRetryableHttpStatus(response->status);
  attempt.outcome = OutcomeOfHttpStatus(response->status);
  // 429 means "busy", not "broken": it does not count against the breaker.
  attempt.endpoint_failure = response->status >= 500;
  if (auto it = response->headers.find("retry-after"); it != response->headers.end()) {
    attempt.retry_after = ParseRetryAfter(it->second, clock_->Now());
  }
  attempt.result = absl::Status(
      HttpStatusToCode(response->status),
      absl::StrCat(protocol_->name(), " HTTP ", response->status, " from ", endpoint_, ": ",
                   protocol_->DecodeErrorMessage(response->body)));
  return attempt;
}

absl::StatusOr<ChatResponse> HttpLlmClient::Chat(const ChatRequest& request) {
  LlmOutcome outcome = LlmOutcome::kOk;
  int attempts = 0;
  absl::StatusOr<ChatResponse> result = ChatWithRetries(request, &outcome, &attempts);
  if (!result.ok()) {
    absl::Status status = result.status();
    AttachLlmFailure(outcome, attempts, &status);
    return status;
  }
  return result;
}

absl::StatusOr<ChatResponse> HttpLlmClient::ChatWithRetries(const ChatRequest& request,
                                                            LlmOutcome* outcome,
                                                            int* attempts_made) {
  ChatRequest resolved = request;
  if (resolved.model.empty()) resolved.model = options_.model;
  if (resolved.max_tokens <= 0) resolved.max_tokens = options_.default_max_tokens;
  if (!resolved.temperature.has_value()) resolved.temperature = options_.default_temperature;
  if (resolved.model.empty()) {
    *outcome = LlmOutcome::kInvalidRequest;
    return absl::InvalidArgumentError("chat request names no model and none is configured");
  }
  absl::StatusOr<std::string> body = protocol_->EncodeRequest(resolved);
  if (!body.ok()) {
    *outcome = OutcomeOfCode(body.status().code());
    return body.status();
  }

  LogScope scope({.job_id = request.job_id, .request_id = "", .tenant = request.tenant});
  const absl::Duration per_attempt =
      request.timeout > absl::ZeroDuration() ? request.timeout : options_.timeout;
  const RetryPolicy& policy = options_.retry;
  const int max_attempts = std::max(1, policy.max_attempts);
  const absl::Time start = clock_->Now();
  const absl::Time deadline = start + policy.total_timeout;
  absl::Status last_error;
  // The last failed attempt's Retry-After, which the call did not wait for (over the cap,
  // or no attempt left): attached to the error for a caller that can wait longer.
  std::optional<absl::Duration> last_retry_after;
  *attempts_made = 0;

  for (int n = 1; n <= max_attempts; ++n) {
    if (absl::Status allowed = breaker_->Allow(); !allowed.ok()) {
      *outcome = LlmOutcome::kCircuitOpen;
      if (last_error.ok()) return allowed;
      return absl::Status(allowed.code(), absl::StrCat(allowed.message(), " (last error: ",
                                                       last_error.message(), ")"));
    }
    const absl::Duration left = deadline - clock_->Now();
    if (left <= absl::ZeroDuration()) {
      breaker_->RecordNeutral();
      break;
    }
    Attempt attempt = RunAttempt(*body, std::min(per_attempt, left));
    *attempts_made = n;
    *outcome = attempt.outcome;
    if (attempt.result.ok()) {
      breaker_->RecordSuccess();
      ChatResponse& out = *attempt.result;
      if (out.model.empty()) out.model = resolved.model;
      out.attempts = n;
      KLOG(INFO)
          .With("provider", protocol_->name())
          .With("model", out.model)
          .With("attempts", n)
          .With("input_tokens", static_cast<double>(out.usage.input_tokens))
          .With("output_tokens", static_cast<double>(out.usage.output_tokens))
          .With("latency_seconds", absl::ToDoubleSeconds(clock_->Now() - start))
          << "llm call succeeded";
      return attempt.result;
    }
    if (attempt.endpoint_failure) {
      breaker_->RecordFailure();
    } else {
      breaker_->RecordNeutral();
    }
    last_error = absl::Status(attempt.result.status().code(),
                              RedactSecret(attempt.result.status().message(), options_.api_key));
    last_retry_after = attempt.retry_after;
    if (!attempt.retryable || n == max_attempts) break;

    absl::Duration delay = BackoffDelay(policy, n, Uniform01());
    if (attempt.retry_after.has_value()) {
      if (*attempt.retry_after > policy.max_retry_after) {
        last_error = absl::Status(
            last_error.code(),
            absl::StrCat(last_error.message(), " (Retry-After ",
                         absl::FormatDuration(*attempt.retry_after), " exceeds the cap of ",
                         absl::FormatDuration(policy.max_retry_after), ")"));
        break;
      }
      delay = std::max(delay, *attempt.retry_after);
    }
    if (clock_->Now() + delay >= deadline) {
      last_error = absl::Status(
          last_error.code(), absl::StrCat(last_error.message(), " (no time left to retry within ",
                                          absl::FormatDuration(policy.total_timeout), ")"));
      break;
    }
    KLOG(WARNING)
        .With("provider", protocol_->name())
        .With("attempt", n)
        .With("http_status", attempt.http_status)
        .With("retry_in_seconds", absl::ToDoubleSeconds(delay))
        << "llm call failed, retrying: " << last_error.message();
    clock_->SleepFor(delay);
  }
  if (last_error.ok()) {
    *outcome = LlmOutcome::kTimeout;
    last_error = absl::DeadlineExceededError(
        absl::StrCat(protocol_->name(), " ", endpoint_, ": total timeout of ",
                     absl::FormatDuration(policy.total_timeout), " spent"));
  }
  if (*attempts_made > 1) {
    last_error = absl::Status(last_error.code(), absl::StrCat(last_error.message(), " (after ",
                                                              *attempts_made, " attempts)"));
  }
  if (last_retry_after.has_value()) AttachRetryAfter(*last_retry_after, &last_error);
  KLOG(WARNING).With("provider", protocol_->name()) << "llm call failed: "
                                                    << last_error.message();
  return last_error;
}

std::unique_ptr<LlmClient> MakeOpenAiClient(HttpLlmClientOptions options,
                                            HttpLlmClientDeps deps) {
  return std::make_unique<HttpLlmClient>(std::move(options), MakeOpenAiProtocol(),
                                         std::move(deps));
}

std::unique_ptr<LlmClient> MakeAnthropicClient(HttpLlmClientOptions options,
                                               HttpLlmClientDeps deps,
                                               std::string anthropic_version) {
  return std::make_unique<HttpLlmClient>(
      std::move(options), MakeAnthropicProtocol(std::move(anthropic_version)), std::move(deps));
}

}  // namespace kagent::llm
