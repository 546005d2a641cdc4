#include "common/llm/provider_protocol.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace kagent::llm {
namespace {

using nlohmann::json;

constexpr size_t kMaxErrorChars = 600;

std::string Snippet(absl::string_view body) {
  std::string s(body.substr(0, kMaxErrorChars));
  if (body.size() > kMaxErrorChars) s += "...";
  return s;
}

// Parses without throwing; a discarded value means "not JSON".
json ParseJson(absl::string_view body) {
  return json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
}

// Reads an integer field that may be absent or null.
int64_t IntField(const json& obj, const char* key) {
  if (!obj.is_object()) return 0;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return 0;
  return it->get<int64_t>();
}

std::string StringField(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

// The message of an error body's "error" field: {"error":{"type":T,"message":M}} gives
// "T: M" (M without a type; OpenAI, llama.cpp, Anthropic), {"error":"M"} gives M (some
// OpenAI-compatible servers); "" otherwise.
std::string ErrorFieldMessage(const json& j) {
  if (!j.is_object()) return "";
  auto err = j.find("error");
  if (err == j.end()) return "";
  if (err->is_string()) return err->get<std::string>();
  if (!err->is_object()) return "";
  std::string msg = StringField(*err, "message");
  std::string type = StringField(*err, "type");
  if (msg.empty()) return "";
  return type.empty() ? msg : absl::StrCat(type, ": ", msg);
}

void AddSampling(const ChatRequest& request, json* body) {
  if (!request.model.empty()) (*body)["model"] = request.model;
  if (request.max_tokens > 0) (*body)["max_tokens"] = request.max_tokens;
  if (request.temperature.has_value() && std::isfinite(*request.temperature)) {
    (*body)["temperature"] = *request.temperature;
  }
}

absl::Status CheckMessages(const ChatRequest& request) {
  if (request.messages.empty()) {
    return absl::InvalidArgumentError("chat request has no messages");
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------
class OpenAiProtocol : public ProviderProtocol {
 public:
  absl::string_view name() const override { return "openai"; }
  absl::string_view path() const override { return "/v1/chat/completions"; }

  std::vector<std::pair<std::string, std::string>> Headers(
      absl::string_view api_key) const override {
    std::vector<std::pair<std::string, std::string>> h = {
        {"Content-Type", "application/json"}, {"Accept", "application/json"}};
    if (!api_key.empty()) h.emplace_back("Authorization", absl::StrCat("Bearer ", api_key));
    return h;
  }

  absl::StatusOr<std::string> EncodeRequest(const ChatRequest& request) const override {
    if (absl::Status s = CheckMessages(request); !s.ok()) return s;
    json body = json::object();
    AddSampling(request, &body);
    json messages = json::array();
    if (!request.system.empty()) {
      messages.push_back({{"role", "system"}, {"content", request.system}});
    }
    for (const ChatMessage& m : request.messages) {
      messages.push_back({{"role", std::string(RoleName(m.role))}, {"content", m.content}});
    }
    body["messages"] = std::move(messages);
    body["stream"] = false;
    return body.dump(-1, ' ', false, json::error_handler_t::replace);
  }

  absl::StatusOr<ChatResponse> DecodeResponse(absl::string_view body) const override {
    json j = ParseJson(body);
    if (!j.is_object()) {
      return absl::InternalError(
          absl::StrCat("openai: response body is not a JSON object: ", Snippet(body)));
    }
    auto choices = j.find("choices");
    if (choices == j.end() || !choices->is_array() || choices->empty() ||
        !(*choices)[0].is_object()) {
      return absl::InternalError(
          absl::StrCat("openai: response has no choices: ", Snippet(body)));
    }
    const json& choice = (*choices)[0];
    auto message = choice.find("message");
    if (message == choice.end() || !message->is_object()) {
      return absl::InternalError(
          absl::StrCat("openai: choices[0] has no message: ", Snippet(body)));
    }
    ChatResponse out;
    auto content = message->find("content");
    if (content != message->end() && content->is_string()) {
      out.content = content->get<std::string>();
    } else if (content != message->end() && content->is_array()) {
      // Some servers return content parts: [{"type":"text","text":"..."}].
      for (const json& part : *content) out.content += StringField(part, "text");
    } else if (content != message->end() && !content->is_null()) {
      return absl::InternalError("openai: choices[0].message.content is not text");
    }
    // vLLM and SGLang with a reasoning parser: the thinking apart from the answer
    // (`reasoning_content`; newer vLLM also `reasoning`).
    out.reasoning = StringField(*message, "reasoning_content");
    if (out.reasoning.empty()) out.reasoning = StringField(*message, "reasoning");
    out.stop_reason = StringField(choice, "finish_reason");
    out.model = StringField(j, "model");
    auto usage = j.find("usage");
    if (usage != j.end()) {
      out.usage.input_tokens = IntField(*usage, "prompt_tokens");
      out.usage.output_tokens = IntField(*usage, "completion_tokens");
    }
    return out;
  }

  std::string DecodeErrorMessage(absl::string_view body) const override {
    json j = ParseJson(body);
    std::string msg = ErrorFieldMessage(j);
    if (msg.empty() && j.is_object()) {
      // vLLM: {"object":"error","message":...,"type":...}.
      msg = StringField(j, "message");
    }
    return msg.empty() ? Snippet(body) : msg;
  }
};

// ---------------------------------------------------------------------------------------
class AnthropicProtocol : public ProviderProtocol {
 public:
  explicit AnthropicProtocol(std::string version) : version_(std::move(version)) {}
  absl::string_view name() const override { return "anthropic"; }
  absl::string_view path() const override { return "/v1/messages"; }

  std::vector<std::pair<std::string, std::string>> Headers(
      absl::string_view api_key) const override {
    std::vector<std::pair<std::string, std::string>> h = {
        {"Content-Type", "application/json"},
        {"Accept", "application/json"},
        {"anthropic-version", version_}};
    if (!api_key.empty()) h.emplace_back("x-api-key", std::string(api_key));
    return h;
  }

  absl::StatusOr<std::string> EncodeRequest(const ChatRequest& request) const override {
    if (absl::Status s = CheckMessages(request); !s.ok()) return s;
    if (request.messages.front().role != Role::kUser) {
      return absl::InvalidArgumentError("anthropic: the first message must come from the user");
    }
    if (request.max_tokens <= 0) {
      return absl::InvalidArgumentError("anthropic: max_tokens is required");
    }
    json body = json::object();
    AddSampling(request, &body);
    if (!request.system.empty()) body["system"] = request.system;
    json messages = json::array();
    for (const ChatMessage& m : request.messages) {
      messages.push_back({{"role", std::string(RoleName(m.role))}, {"content", m.content}});
    }
    body["messages"] = std::move(messages);
    return body.dump(-1, ' ', false, json::error_handler_t::replace);
  }

  absl::StatusOr<ChatResponse> DecodeResponse(absl::string_view body) const override {
    json j = ParseJson(body);
    if (!j.is_object()) {
      return absl::InternalError(
          absl::StrCat("anthropic: response body is not a JSON object: ", Snippet(body)));
    }
    if (StringField(j, "type") == "error") {
      return absl::InternalError(
          absl::StrCat("anthropic: error body with a 2xx status: ", DecodeErrorMessage(body)));
    }
    auto content = j.find("content");
    if (content == j.end() || !content->is_array()) {
      return absl::InternalError(
          absl::StrCat("anthropic: response has no content array: ", Snippet(body)));
    }
    ChatResponse out;
    for (const json& block : *content) {
      const std::string type = StringField(block, "type");
      if (type == "text") out.content += StringField(block, "text");
      if (type == "thinking") out.reasoning += StringField(block, "thinking");
    }
    out.stop_reason = StringField(j, "stop_reason");
    out.model = StringField(j, "model");
    auto usage = j.find("usage");
    if (usage != j.end()) {
      out.usage.input_tokens = IntField(*usage, "input_tokens");
      out.usage.output_tokens = IntField(*usage, "output_tokens");
    }
    return out;
  }

  std::string DecodeErrorMessage(absl::string_view body) const override {
    std::string msg = ErrorFieldMessage(ParseJson(body));
    return msg.empty() ? Snippet(body) : msg;
  }

 private:
  const std::string version_;
};

}  // namespace

std::unique_ptr<ProviderProtocol> MakeOpenAiProtocol() {
  return std::make_unique<OpenAiProtocol>();
}

std::unique_ptr<ProviderProtocol> MakeAnthropicProtocol(std::string anthropic_version) {
  return std::make_unique<AnthropicProtocol>(std::move(anthropic_version));
}

absl::string_view RoleName(Role role) {
  return role == Role::kAssistant ? "assistant" : "user";
}

}  // namespace kagent::llm
