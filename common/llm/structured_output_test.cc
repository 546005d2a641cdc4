// JSON extraction from model replies, and the re-ask loop.
#include "common/llm/structured_output.h"

#include <catch2/catch.hpp>

#include <deque>

#include "absl/strings/match.h"

namespace kagent::llm {
namespace {

nlohmann::json Extract(absl::string_view text) {
  auto r = ExtractJsonObject(text);
  INFO(text);
  REQUIRE(r.ok());
  return r->value;
}

TEST_CASE("plain, fenced and prose-wrapped objects", "[structured]") {
  CHECK(Extract(R"({"a": 1})")["a"] == 1);
  CHECK(Extract("```json\n{\"a\": 2}\n```")["a"] == 2);
  CHECK(Extract("Sure! Here is the plan:\n```\n{\"a\": 3}\n```\nHope it helps.")["a"] == 3);
  CHECK(Extract("The answer is {\"a\": 4, \"b\": {\"c\": [1, 2]}} as requested.")["b"]["c"][1] == 2);
  // A fence holding something else comes first; the JSON fence is found after it.
  CHECK(Extract("```python\nx = {1: 2}\n```\n```json\n{\"a\": 5}\n```")["a"] == 5);
  // Braces inside strings do not confuse the matcher.
  CHECK(Extract(R"(x {"code": "if (a) { b(); }", "n": 1} y)")["code"] == "if (a) { b(); }");
  // A stray brace in prose before the object.
  CHECK(Extract("Use {braces} wisely: {\"a\": 6}")["a"] == 6);
}

TEST_CASE("trailing commas and // comments are repaired", "[structured]") {
  auto r = ExtractJsonObject(R"({
    "a": 1,  // the first
    "b": [1, 2, 3,],
    /* block */ "url": "http://example.com/x",
  })");
  REQUIRE(r.ok());
  CHECK(r->repaired);
  CHECK_FALSE(r->truncated);
  CHECK(r->value["a"] == 1);
  CHECK(r->value["b"].size() == 3);
  CHECK(r->value["url"] == "http://example.com/x");  // "//" inside a string is kept
}

TEST_CASE("raw newlines inside strings are escaped", "[structured]") {
  auto r = ExtractJsonObject("{\"code\": \"def f():\n\treturn 1\n\"}");
  REQUIRE(r.ok());
  CHECK(r->value["code"] == "def f():\n\treturn 1\n");
}

TEST_CASE("truncated objects are cut back to the last complete member", "[structured]") {
  SECTION("inside a string value: the partial string is dropped") {
    auto r = ExtractJsonObject(R"({"title": "Tile the loop", "code": "import triton\ndef ke)");
    REQUIRE(r.ok());
    CHECK(r->truncated);
    CHECK(r->value == nlohmann::json{{"title", "Tile the loop"}});
  }
  SECTION("inside a nested array") {
    auto r = ExtractJsonObject("```json\n{\"a\": 1, \"items\": [{\"x\": 1}, {\"x\": 2}, {\"x\"");
    REQUIRE(r.ok());
    CHECK(r->value["a"] == 1);
    CHECK(r->value["items"] == nlohmann::json::parse(R"([{"x":1},{"x":2},{}])"));
  }
  SECTION("a number at the very end may be partial: dropped") {
    auto r = ExtractJsonObject(R"({"a": "x", "b": 12)");
    REQUIRE(r.ok());
    CHECK(r->value == nlohmann::json{{"a", "x"}});
  }
  SECTION("only the closing brace is missing") {
    auto r = ExtractJsonObject(R"({"a": "x", "b": [1, 2]  )");
    REQUIRE(r.ok());
    CHECK(r->value["b"].size() == 2);
  }
}

TEST_CASE("replies without a usable object are INVALID_ARGUMENT", "[structured]") {
  CHECK(absl::IsInvalidArgument(ExtractJsonObject("I cannot help with that.").status()));
  CHECK(absl::IsInvalidArgument(ExtractJsonObject("[1, 2, 3]").status()));
  auto bad = ExtractJsonObject(R"({"a": tru})");
  CHECK(absl::IsInvalidArgument(bad.status()));
  CHECK(absl::StrContains(bad.status().message(), "no valid JSON object"));
}

TEST_CASE("required keys are validated", "[structured]") {
  nlohmann::json v = {{"a", 1}, {"b", nullptr}};
  CHECK(ValidateRequiredKeys(v, {"a", "b"}).ok());
  absl::Status s = ValidateRequiredKeys(v, {"a", "c", "d"});
  CHECK(absl::IsInvalidArgument(s));
  CHECK(absl::StrContains(s.message(), "c, d"));
}

TEST_CASE("the object with the required keys wins over earlier ones", "[structured]") {
  const std::string reply =
      "The old config was {\"BLOCK\": 1024}; an example: ```json\n{\"note\": \"x\"}\n```\n"
      "My answer:\n```json\n{\"explanation\": \"wider\", \"code\": \"k = {1: 2}\"}\n```";
  auto with_keys = ExtractJsonObject(reply, {"explanation", "code"});
  REQUIRE(with_keys.ok());
  CHECK(with_keys->value["code"] == "k = {1: 2}");
  // Without required keys the first object is the answer, as before.
  CHECK(Extract(reply).contains("note"));
  // None has the keys: the first object, and the caller names what it lacks.
  auto none = ExtractJsonObject("{\"a\": 1} and {\"b\": 2}", {"code"});
  REQUIRE(none.ok());
  CHECK(none->value == nlohmann::json{{"a", 1}});
  // An object's members are not objects of their own: {"code": ...} nested inside an
  // object without the keys does not win over a later top-level one.
  auto nested = ExtractJsonObject(
      "{\"meta\": {\"code\": \"inner\"}} then {\"code\": \"outer\"}", {"code"});
  REQUIRE(nested.ok());
  CHECK(nested->value["code"] == "outer");
}

TEST_CASE("<think> blocks are stripped before parsing", "[structured]") {
  CHECK(StripThinking("<think>maybe {\"a\": 0}?</think>\n{\"a\": 1}") == "\n{\"a\": 1}");
  CHECK(StripThinking("x<think>one</think>y<think>two</think>z") == "xyz");
  // The template opened the block in the prompt: only its end is in the reply.
  CHECK(StripThinking("reasoning {\"a\": 0}</think>{\"a\": 2}") == "{\"a\": 2}");
  // Cut off while thinking: no answer at all.
  CHECK(StripThinking("ok <think>still going {\"a\": 0}") == "ok ");
  CHECK(StripThinking("no thinking {\"a\": 3}") == "no thinking {\"a\": 3}");
  // The JSON inside the reasoning is never the answer.
  CHECK(Extract("<think>Draft: {\"code\": \"bad\"}</think>{\"code\": \"good\"}")["code"] ==
        "good");
  CHECK(absl::IsInvalidArgument(ExtractJsonObject("<think>{\"code\": \"bad\"}").status()));
}

// Replies from a script; records each request it got.
class ScriptedClient : public LlmClient {
 public:
  explicit ScriptedClient(std::deque<absl::StatusOr<std::string>> replies)
      : replies_(std::move(replies)) {}
  absl::StatusOr<ChatResponse> Chat(const ChatRequest& request) override {
    requests.push_back(request);
    if (replies_.empty()) return absl::InternalError("script exhausted");
    auto next = std::move(replies_.front());
    replies_.pop_front();
    if (!next.ok()) return next.status();
    ChatResponse r;
    r.content = *next;
    r.usage = {.input_tokens = 10, .output_tokens = 5};
    return r;
  }
  std::vector<ChatRequest> requests;

 private:
  std::deque<absl::StatusOr<std::string>> replies_;
};

ChatRequest Ask() {
  ChatRequest r;
  r.messages.push_back({Role::kUser, "Give me a plan as JSON."});
  return r;
}

TEST_CASE("ChatForJson asks again, saying what was wrong", "[structured]") {
  ScriptedClient client({std::string("I think the plan is good."),
                         std::string(R"({"plan": "tile"})"),
                         std::string("```json\n{\"plan\": \"tile\", \"risk\": \"low\",}\n```")});
  auto r = ChatForJson(client, Ask(), {.required_keys = {"plan", "risk"}, .max_attempts = 3});
  REQUIRE(r.ok());
  CHECK(r->attempts == 3);
  CHECK(r->value["risk"] == "low");
  CHECK(r->repaired);
  CHECK(r->usage.input_tokens == 30);
  REQUIRE(client.requests.size() == 3);
  // Second request: the original + the bad reply + a correction.
  const auto& second = client.requests[1].messages;
  REQUIRE(second.size() == 3);
  CHECK(second[1].role == Role::kAssistant);
  CHECK(second[1].content == "I think the plan is good.");
  CHECK(second[2].role == Role::kUser);
  CHECK(absl::StrContains(second[2].content, "no JSON object"));
  CHECK(absl::StrContains(second[2].content, "plan, risk"));
  // Third request names the missing key.
  CHECK(absl::StrContains(client.requests[2].messages.back().content, "lacks required keys: risk"));
}

TEST_CASE("ChatForJson gives up after max_attempts and passes client errors through",
          "[structured]") {
  ScriptedClient hopeless({std::string("no"), std::string("<think>x</think>still no")});
  std::vector<std::string> replies;
  auto r = ChatForJson(hopeless, Ask(),
                       {.required_keys = {"plan"}, .max_attempts = 2, .replies = &replies});
  CHECK(absl::IsInternal(r.status()));
  CHECK(absl::StrContains(r.status().message(), "after 2 attempts"));
  // The replies are kept for the record, as received.
  CHECK(replies == std::vector<std::string>{"no", "<think>x</think>still no"});

  ScriptedClient broke({absl::ResourceExhaustedError("budget spent")});
  auto e = ChatForJson(broke, Ask(), {.required_keys = {"plan"}});
  CHECK(absl::IsResourceExhausted(e.status()));
  CHECK(broke.requests.size() == 1);
}

TEST_CASE("ChatForJson: a reasoning reply needs no re-ask, and the history drops the reasoning",
          "[structured]") {
  ScriptedClient client({std::string("<think>{\"plan\": \"draft\"}</think>no JSON here"),
                         std::string("<think>hmm</think>{\"plan\": \"tile\"}")});
  auto r = ChatForJson(client, Ask(), {.required_keys = {"plan"}, .max_attempts = 2});
  REQUIRE(r.ok());
  CHECK(r->value["plan"] == "tile");
  CHECK(r->attempts == 2);
  // The re-ask carried the answer without its reasoning.
  CHECK(client.requests[1].messages[1].content == "no JSON here");
}

TEST_CASE("ChatForJson: the fallback accepts a reply in another shape", "[structured]") {
  auto fenced = [](absl::string_view reply) -> std::optional<nlohmann::json> {
    if (!absl::StrContains(reply, "```python")) return std::nullopt;
    return nlohmann::json{{"code", std::string(reply)}};
  };
  ScriptedClient client({std::string("<think>```python draft```</think>prose only"),
                         std::string("```python\nclass ModelNew: pass\n```")});
  auto r = ChatForJson(client, Ask(),
                       {.required_keys = {"code"}, .max_attempts = 2, .fallback = fenced});
  REQUIRE(r.ok());
  CHECK(r->attempts == 2);  // the fence inside the reasoning did not count
  CHECK(r->value["code"] == "```python\nclass ModelNew: pass\n```");
  // A JSON object with the keys is preferred over the fallback.
  ScriptedClient json_client({std::string("{\"code\": \"json\"} ```python\nx\n```")});
  auto j = ChatForJson(json_client, Ask(),
                       {.required_keys = {"code"}, .max_attempts = 1, .fallback = fenced});
  REQUIRE(j.ok());
  CHECK(j->value["code"] == "json");
}

}  // namespace
}  // namespace kagent::llm
