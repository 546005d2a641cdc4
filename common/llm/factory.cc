#include "common/llm/factory.h"

#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/llm/api_key.h"
#include "common/llm/http_llm_client.h"
#include "common/logging.h"
#include "common/status.h"

namespace kagent::llm {
namespace {

using nlohmann::json;

// Field readers that never throw; each names the key path in its error.
class Reader {
 public:
  Reader(const json& obj, std::string path) : obj_(obj), path_(std::move(path)) {}

  absl::Status CheckKeys(std::initializer_list<const char*> allowed) const {
    if (!obj_.is_object()) return absl::InvalidArgumentError(absl::StrCat(Where(), " must be an object"));
    std::set<std::string> ok(allowed.begin(), allowed.end());
    for (auto it = obj_.begin(); it != obj_.end(); ++it) {
      if (!ok.count(it.key())) {
        return absl::InvalidArgumentError(absl::StrCat("unknown LLM config key ",
                                                       Name(it.key()), "; known keys: ",
                                                       absl::StrJoin(ok, ", ")));
      }
    }
    return absl::OkStatus();
  }
  absl::Status String(const char* key, std::string* out) const {
    if (!obj_.contains(key)) return absl::OkStatus();
    const json& v = obj_[key];
    if (!v.is_string()) return Bad(key, "a string");
    *out = v.get<std::string>();
    return absl::OkStatus();
  }
  absl::Status Number(const char* key, double* out, double min) const {
    if (!obj_.contains(key)) return absl::OkStatus();
    const json& v = obj_[key];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < min) {
      return Bad(key, absl::StrCat("a number >= ", min));
    }
    *out = v.get<double>();
    return absl::OkStatus();
  }
  absl::Status Int(const char* key, int64_t* out, int64_t min) const {
    if (!obj_.contains(key)) return absl::OkStatus();
    const json& v = obj_[key];
    if (!v.is_number_integer() || v.get<int64_t>() < min) {
      return Bad(key, absl::StrCat("an integer >= ", min));
    }
    *out = v.get<int64_t>();
    return absl::OkStatus();
  }
  absl::Status Int(const char* key, int* out, int min) const {
    int64_t v = *out;
    if (absl::Status s = Int(key, &v, int64_t{min}); !s.ok()) return s;
    *out = static_cast<int>(v);
    return absl::OkStatus();
  }
  absl::Status Bool(const char* key, bool* out) const {
    if (!obj_.contains(key)) return absl::OkStatus();
    const json& v = obj_[key];
    if (!v.is_boolean()) return Bad(key, "true or false");
    *out = v.get<bool>();
    return absl::OkStatus();
  }
  absl::Status Seconds(const char* key, absl::Duration* out, double min) const {
    double s = absl::ToDoubleSeconds(*out);
    if (absl::Status st = Number(key, &s, min); !st.ok()) return st;
    *out = absl::Seconds(s);
    return absl::OkStatus();
  }
  bool Has(const char* key) const { return obj_.contains(key); }
  Reader Child(const char* key) const { return Reader(obj_[key], Name(key)); }
  std::string Name(const std::string& key) const {
    return path_.empty() ? key : absl::StrCat(path_, ".", key);
  }

 private:
  std::string Where() const { return path_.empty() ? "the LLM config" : path_; }
  absl::Status Bad(const char* key, absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("LLM config key ", Name(key), " must be ", what));
  }
  const json& obj_;
  std::string path_;
};

absl::Status ReadBudget(const Reader& r, Budget* budget) {
  KAGENT_RETURN_IF_ERROR(r.CheckKeys({"max_tokens", "max_cost_usd"}));
  KAGENT_RETURN_IF_ERROR(r.Int("max_tokens", &budget->max_tokens, int64_t{0}));
  KAGENT_RETURN_IF_ERROR(r.Number("max_cost_usd", &budget->max_cost_usd, 0));
  return absl::OkStatus();
}

absl::Status Parse(const json& config, LlmConfig* c) {
  Reader r(config, "");
  KAGENT_RETURN_IF_ERROR(r.CheckKeys({"provider", "base_url", "model", "api_key_env", "api_key_file",
                              "anthropic_version", "max_tokens", "temperature", "timeout_s",
                              "connect_timeout_s", "retry", "breaker", "prices", "budgets",
                              "cassette", "prompts_dir", "probe"}));
  KAGENT_RETURN_IF_ERROR(r.String("provider", &c->provider));
  KAGENT_RETURN_IF_ERROR(r.String("base_url", &c->base_url));
  KAGENT_RETURN_IF_ERROR(r.String("model", &c->model));
  KAGENT_RETURN_IF_ERROR(r.String("api_key_env", &c->api_key_env));
  KAGENT_RETURN_IF_ERROR(r.String("api_key_file", &c->api_key_file));
  KAGENT_RETURN_IF_ERROR(r.String("anthropic_version", &c->anthropic_version));
  KAGENT_RETURN_IF_ERROR(r.Int("max_tokens", &c->max_tokens, 1));
  if (r.Has("temperature")) {
    double t = 0;
    KAGENT_RETURN_IF_ERROR(r.Number("temperature", &t, 0));
    c->temperature = t;
  }
  KAGENT_RETURN_IF_ERROR(r.Seconds("timeout_s", &c->timeout, 0.001));
  KAGENT_RETURN_IF_ERROR(r.Seconds("connect_timeout_s", &c->connect_timeout, 0.001));
  KAGENT_RETURN_IF_ERROR(r.String("prompts_dir", &c->prompts_dir));
  KAGENT_RETURN_IF_ERROR(r.Bool("probe", &c->probe));
  if (r.Has("retry")) {
    Reader q = r.Child("retry");
    KAGENT_RETURN_IF_ERROR(q.CheckKeys({"max_attempts", "initial_backoff_s", "max_backoff_s",
                                "multiplier", "total_timeout_s", "max_retry_after_s"}));
    KAGENT_RETURN_IF_ERROR(q.Int("max_attempts", &c->retry.max_attempts, 1));
    KAGENT_RETURN_IF_ERROR(q.Seconds("initial_backoff_s", &c->retry.initial_backoff, 0));
    KAGENT_RETURN_IF_ERROR(q.Seconds("max_backoff_s", &c->retry.max_backoff, 0));
    KAGENT_RETURN_IF_ERROR(q.Number("multiplier", &c->retry.multiplier, 1));
    KAGENT_RETURN_IF_ERROR(q.Seconds("total_timeout_s", &c->retry.total_timeout, 0.001));
    KAGENT_RETURN_IF_ERROR(q.Seconds("max_retry_after_s", &c->retry.max_retry_after, 0));
  }
  if (r.Has("breaker")) {
    Reader q = r.Child("breaker");
    KAGENT_RETURN_IF_ERROR(q.CheckKeys({"failure_threshold", "cooldown_s"}));
    KAGENT_RETURN_IF_ERROR(q.Int("failure_threshold", &c->breaker.failure_threshold, 0));
    KAGENT_RETURN_IF_ERROR(q.Seconds("cooldown_s", &c->breaker.cooldown, 0));
  }
  if (r.Has("prices")) {
    Reader q = r.Child("prices");
    KAGENT_RETURN_IF_ERROR(q.CheckKeys({"input_usd_per_mtok", "output_usd_per_mtok"}));
    KAGENT_RETURN_IF_ERROR(q.Number("input_usd_per_mtok", &c->prices.input_usd_per_mtok, 0));
    KAGENT_RETURN_IF_ERROR(q.Number("output_usd_per_mtok", &c->prices.output_usd_per_mtok, 0));
  }
  if (r.Has("budgets")) {
    Reader q = r.Child("budgets");
    KAGENT_RETURN_IF_ERROR(q.CheckKeys({"job", "tenant"}));
    if (q.Has("job")) KAGENT_RETURN_IF_ERROR(ReadBudget(q.Child("job"), &c->job_budget));
    if (q.Has("tenant")) KAGENT_RETURN_IF_ERROR(ReadBudget(q.Child("tenant"), &c->tenant_budget));
  }
  if (r.Has("cassette")) {
    Reader q = r.Child("cassette");
    KAGENT_RETURN_IF_ERROR(q.CheckKeys({"mode", "path"}));
    std::string mode;
    KAGENT_RETURN_IF_ERROR(q.String("mode", &mode));
    absl::StatusOr<CassetteMode> parsed = ParseCassetteMode(mode);
    if (!parsed.ok()) return parsed.status();
    c->cassette_mode = *parsed;
    KAGENT_RETURN_IF_ERROR(q.String("path", &c->cassette_path));
  }
  return ValidateLlmConfig(*c);
}

}  // namespace

absl::Status ValidateLlmConfig(const LlmConfig& c) {
  if (c.provider != "openai" && c.provider != "anthropic") {
    return absl::InvalidArgumentError(absl::StrCat(
        "LLM config key provider must be \"openai\" or \"anthropic\", not \"", c.provider, "\""));
  }
  if (c.model.empty()) return absl::InvalidArgumentError("LLM config key model is required");
  if (c.cassette_mode != CassetteMode::kReplay && c.base_url.empty()) {
    return absl::InvalidArgumentError("LLM config key base_url is required");
  }
  if (c.cassette_mode != CassetteMode::kOff && c.cassette_path.empty()) {
    return absl::InvalidArgumentError(
        "LLM config key cassette.path is required when cassette.mode is record or replay");
  }
  if (c.max_tokens <= 0) return absl::InvalidArgumentError("LLM config key max_tokens must be > 0");
  if (c.retry.max_attempts < 1) {
    return absl::InvalidArgumentError("LLM config key retry.max_attempts must be >= 1");
  }
  return absl::OkStatus();
}

absl::StatusOr<LlmConfig> ParseLlmConfig(const json& config) {
  LlmConfig c;
  if (absl::Status s = Parse(config, &c); !s.ok()) return s;
  return c;
}

absl::StatusOr<LlmConfig> ParseLlmConfigJson(absl::string_view json_text) {
  const json j = json::parse(json_text.begin(), json_text.end(), nullptr,
                             /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (j.is_discarded()) return absl::InvalidArgumentError("the LLM config is not valid JSON");
  return ParseLlmConfig(j);
}

absl::StatusOr<LlmStack> MakeLlmStack(const LlmConfig& config, LlmDeps deps) {
  KAGENT_RETURN_IF_ERROR(ValidateLlmConfig(config));
  Clock* clock = deps.clock != nullptr ? deps.clock : RealClock();
  RequestDefaults defaults{config.model, config.max_tokens, config.temperature};

  std::shared_ptr<LlmClient> client;
  if (config.cassette_mode == CassetteMode::kReplay) {
    absl::StatusOr<std::unique_ptr<CassetteLlmClient>> replay =
        CassetteLlmClient::Replay(config.cassette_path, defaults);
    if (!replay.ok()) return replay.status();
    client = *std::move(replay);
  } else {
    absl::StatusOr<std::string> key =
        LoadApiKey(ApiKeySource{config.api_key_env, config.api_key_file});
    if (!key.ok()) return key.status();
    HttpLlmClientOptions options;
    options.base_url = config.base_url;
    options.model = config.model;
    options.api_key = *std::move(key);
    options.default_max_tokens = config.max_tokens;
    options.default_temperature = config.temperature;
    options.timeout = config.timeout;
    options.connect_timeout = config.connect_timeout;
    options.retry = config.retry;
    options.breaker = config.breaker;
    HttpLlmClientDeps http_deps;
    http_deps.transport = deps.transport;
    http_deps.clock = clock;
    std::unique_ptr<ProviderProtocol> protocol =
        config.provider == "anthropic" ? MakeAnthropicProtocol(config.anthropic_version)
                                       : MakeOpenAiProtocol();
    if (deps.breakers != nullptr) {
      http_deps.breaker = deps.breakers->Get(
          absl::StrCat(NormalizeBaseUrl(config.base_url), protocol->path()), config.breaker);
    }
    client = std::make_shared<HttpLlmClient>(std::move(options), std::move(protocol),
                                             std::move(http_deps));
    if (config.cassette_mode == CassetteMode::kRecord) {
      absl::StatusOr<std::unique_ptr<CassetteLlmClient>> record =
          CassetteLlmClient::Record(client, config.cassette_path, defaults);
      if (!record.ok()) return record.status();
      client = *std::move(record);
    }
  }
  LlmStack stack;
  stack.accountant = deps.accountant != nullptr
                         ? deps.accountant
                         : std::make_shared<Accountant>(config.job_budget, config.tenant_budget);
  stack.client = std::make_shared<AccountingLlmClient>(std::move(client), stack.accountant,
                                                       config.prices);
  if (deps.metrics != nullptr) {
    stack.client = std::make_shared<MetricsLlmClient>(std::move(stack.client), deps.metrics,
                                                      config.provider, clock);
  }
  stack.prompts = std::make_shared<PromptLibrary>(config.prompts_dir);
  KLOG(INFO)
      .With("provider", config.provider)
      .With("model", config.model)
      .With("cassette", CassetteModeName(config.cassette_mode))
      << "llm client ready";
  return stack;
}

}  // namespace kagent::llm
