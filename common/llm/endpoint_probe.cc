#include "common/llm/endpoint_probe.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/llm/api_key.h"
#include "common/llm/http_llm_client.h"
#include "common/llm/provider_protocol.h"
#include "common/logging.h"
#include "nlohmann/json.hpp"

namespace kagent::llm {
namespace {

constexpr char kSkip[] =
    "; set \"probe\": false in the LLM configuration for an endpoint without this route";

// The ids of a model list: {"data": [{"id": ...}, ...]} in every provider's shape.
std::optional<std::vector<std::string>> ModelIds(const std::string& body) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto data = j.find("data");
  if (data == j.end() || !data->is_array()) return std::nullopt;
  std::vector<std::string> ids;
  for (const nlohmann::json& m : *data) {
    if (!m.is_object()) continue;
    auto id = m.find("id");
    if (id != m.end() && id->is_string()) ids.push_back(id->get<std::string>());
  }
  return ids;
}

bool Serves(const LlmConfig& config, const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    if (id == config.model) return true;
    // Anthropic lists dated ids; the undated name is the alias of the newest.
    if (config.provider == "anthropic" && absl::StartsWith(id, absl::StrCat(config.model, "-"))) {
      return true;
    }
  }
  return false;
}

}  // namespace

absl::Status ProbeLlmEndpoint(const LlmConfig& config, std::shared_ptr<HttpTransport> transport) {
  absl::StatusOr<std::string> key =
      LoadApiKey(ApiKeySource{config.api_key_env, config.api_key_file});
  if (!key.ok()) return key.status();
  if (transport == nullptr) transport = std::make_shared<CurlTransport>();
  std::unique_ptr<ProviderProtocol> protocol =
      config.provider == "anthropic" ? MakeAnthropicProtocol(config.anthropic_version)
                                     : MakeOpenAiProtocol();
  const std::string url = absl::StrCat(NormalizeBaseUrl(config.base_url), "/v1/models");
  HttpRequest request;
  request.method = "GET";
  // Anthropic pages its list (20 by default).
  request.url = config.provider == "anthropic" ? absl::StrCat(url, "?limit=1000") : url;
  request.headers = protocol->Headers(*key);
  request.timeout = std::min(config.timeout, absl::Seconds(30));
  request.connect_timeout = config.connect_timeout;
  const std::string where = absl::StrCat("the LLM endpoint ", url);
  auto redact = [&](absl::string_view text) { return RedactSecret(text, *key); };

  absl::StatusOr<HttpResponse> response = transport->Post(request);
  if (!response.ok()) {
    return absl::UnavailableError(
        absl::StrCat(where, " is unreachable: ", redact(response.status().message())));
  }
  const int status = response->status;
  if (status < 200 || status >= 300) {
    const std::string message = redact(protocol->DecodeErrorMessage(response->body));
    const std::string said = absl::StrCat(" (HTTP ", status, "): ", message);
    if (status == 401) {
      return absl::UnauthenticatedError(absl::StrCat(where, " refused the key", said));
    }
    if (status == 403) {
      return absl::PermissionDeniedError(absl::StrCat(where, " refused the key", said));
    }
    if (status == 404 || status == 405) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, " has no GET /v1/models", said, kSkip));
    }
    return absl::UnavailableError(absl::StrCat(where, " answered GET /v1/models", said));
  }
  std::optional<std::vector<std::string>> ids = ModelIds(response->body);
  if (!ids.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat(where, " answered GET /v1/models with no model list", kSkip));
  }
  if (!Serves(config, *ids)) {
    constexpr size_t kShown = 20;
    std::vector<std::string> shown(ids->begin(), ids->begin() + std::min(ids->size(), kShown));
    return absl::NotFoundError(absl::StrCat(
        where, " does not serve model '", config.model, "'; it serves: ",
        ids->empty() ? "nothing" : absl::StrJoin(shown, ", "),
        ids->size() > kShown ? absl::StrCat(" and ", ids->size() - kShown, " more") : ""));
  }
  KLOG(INFO).With("provider", config.provider).With("model", config.model)
      << "the LLM endpoint " << url << " serves the model";
  return absl::OkStatus();
}

}  // namespace kagent::llm
