#include "common/llm/structured_output.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"

namespace kagent::llm {
namespace {

using nlohmann::json;

// Result of scanning one candidate that starts at a '{'.
struct Scan {
  std::string text;  // cleaned JSON text, closed when it was truncated
  bool repaired = false;
  bool truncated = false;
  size_t consumed = 0;  // input characters scanned, the closing '}' included
};

// Cleans the JSON object starting at text[0] == '{': drops // and /* */ comments and
// trailing commas, escapes raw control characters inside strings, stops after the
// matching '}', and, when the text ends first, cuts back to the last point where the
// object was complete and closes the open containers.
Scan CleanObject(absl::string_view text) {
  struct Frame {
    char closer;
    bool after_colon;  // objects: between ':' and the next ',' (value position)
  };
  Scan scan;
  std::string& out = scan.text;
  std::vector<Frame> stack;
  // The last safe cut: out's length and the stack at that point.
  size_t safe_len = 0;
  std::vector<Frame> safe_stack;
  auto mark_safe = [&] {
    safe_len = out.size();
    safe_stack = stack;
  };
  bool in_string = false;
  bool escape = false;
  bool pending_comma = false;

  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (in_string) {
      if (escape) {
        escape = false;
        out += c;
      } else if (c == '\\') {
        escape = true;
        out += c;
      } else if (c == '"') {
        in_string = false;
        out += c;
        const bool is_value =
            !stack.empty() && (stack.back().closer == ']' || stack.back().after_colon);
        if (is_value) mark_safe();
      } else if (c == '\n') {
        out += "\\n";
        scan.repaired = true;
      } else if (c == '\r') {
        out += "\\r";
        scan.repaired = true;
      } else if (c == '\t') {
        out += "\\t";
        scan.repaired = true;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        scan.repaired = true;  // other control characters are dropped
      } else {
        out += c;
      }
      ++i;
      continue;
    }
    // Comments.
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      const size_t eol = text.find('\n', i);
      i = eol == absl::string_view::npos ? text.size() : eol;
      scan.repaired = true;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const size_t end = text.find("*/", i + 2);
      i = end == absl::string_view::npos ? text.size() : end + 2;
      scan.repaired = true;
      continue;
    }
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      if (!pending_comma) out += c;
      ++i;
      continue;
    }
    if (pending_comma) {
      pending_comma = false;
      if (c == '}' || c == ']') {
        scan.repaired = true;  // trailing comma dropped
      } else {
        out += ',';
      }
    }
    ++i;
    switch (c) {
      case '"':
        in_string = true;
        out += c;
        break;
      case '{':
      case '[':
        stack.push_back({c == '{' ? '}' : ']', false});
        out += c;
        mark_safe();
        break;
      case '}':
      case ']':
        if (stack.empty() || stack.back().closer != c) {
          // Mismatched closer: give the text to the parser as it is; it will say why.
          out += c;
          scan.consumed = i;
          return scan;
        }
        stack.pop_back();
        out += c;
        if (stack.empty()) {  // the object is complete; ignore what follows
          scan.consumed = i;
          return scan;
        }
        mark_safe();
        break;
      case ',':
        mark_safe();  // everything before the comma is complete
        pending_comma = true;
        if (!stack.empty()) stack.back().after_colon = false;
        break;
      case ':':
        if (!stack.empty()) stack.back().after_colon = true;
        out += c;
        break;
      default:
        out += c;
        break;
    }
  }
  // Ran out of text inside the object: cut back and close.
  scan.consumed = text.size();
  scan.truncated = true;
  scan.repaired = true;
  out.resize(safe_len);
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n' || out.back() == '\r' ||
                          out.back() == '\t')) {
    out.pop_back();
  }
  for (auto it = safe_stack.rbegin(); it != safe_stack.rend(); ++it) out += it->closer;
  return scan;
}

// Candidate texts: each fenced block's body (an unclosed fence runs to the end), then the
// whole text.
std::vector<absl::string_view> Candidates(absl::string_view text) {
  std::vector<absl::string_view> out;
  size_t pos = 0;
  while (true) {
    const size_t open = text.find("```", pos);
    if (open == absl::string_view::npos) break;
    size_t body = text.find('\n', open + 3);
    if (body == absl::string_view::npos) break;
    ++body;
    const size_t close = text.find("```", body);
    out.push_back(text.substr(body, close == absl::string_view::npos ? absl::string_view::npos
                                                                     : close - body));
    if (close == absl::string_view::npos) break;
    pos = close + 3;
  }
  out.push_back(text);
  return out;
}

}  // namespace

absl::StatusOr<JsonExtraction> ExtractJsonObject(absl::string_view text) {
  return ExtractJsonObject(text, {});
}

absl::StatusOr<JsonExtraction> ExtractJsonObject(absl::string_view text,
                                                 const std::vector<std::string>& required) {
  constexpr int kMaxFailedStarts = 16;  // '{' positions that did not parse, per candidate
  const std::string stripped = StripThinking(text);
  std::optional<JsonExtraction> first;
  std::optional<std::string> first_error;
  for (absl::string_view candidate : Candidates(stripped)) {
    size_t start = candidate.find('{');
    for (int failed = 0; start != absl::string_view::npos && failed < kMaxFailedStarts;) {
      Scan scan = CleanObject(candidate.substr(start));
      json value = json::parse(scan.text, nullptr, /*allow_exceptions=*/false);
      if (value.is_object()) {
        if (ValidateRequiredKeys(value, required).ok()) {
          return JsonExtraction{std::move(value), scan.repaired, scan.truncated};
        }
        if (!first.has_value()) {
          first = JsonExtraction{std::move(value), scan.repaired, scan.truncated};
        }
        // The next object starts after this one (its members are not candidates).
        start = candidate.find('{', start + std::max<size_t>(scan.consumed, 1));
        continue;
      }
      ++failed;
      if (!first_error.has_value()) {
        // Re-parse with exceptions for the message only; caught right here.
        try {
          const json reparsed = json::parse(scan.text);
          (void)reparsed;
          first_error = "the JSON value is not an object";
        } catch (const json::exception& e) {
          first_error = e.what();
        }
      }
      start = candidate.find('{', start + 1);
    }
  }
  if (first.has_value()) return *std::move(first);  // the caller reports the missing keys
  if (!first_error.has_value()) {
    return absl::InvalidArgumentError("the reply contains no JSON object");
  }
  return absl::InvalidArgumentError(
      absl::StrCat("the reply contains no valid JSON object: ", *first_error));
}

std::string StripThinking(absl::string_view text) {
  constexpr absl::string_view kOpen = "<think>";
  constexpr absl::string_view kClose = "</think>";
  std::string out;
  size_t pos = 0;
  const size_t first_open = text.find(kOpen);
  const size_t first_close = text.find(kClose);
  if (first_close != absl::string_view::npos &&
      (first_open == absl::string_view::npos || first_close < first_open)) {
    // The chat template opened the block in the prompt: only its end is in the reply.
    pos = first_close + kClose.size();
  }
  while (pos < text.size()) {
    const size_t open = text.find(kOpen, pos);
    if (open == absl::string_view::npos) {
      absl::StrAppend(&out, text.substr(pos));
      break;
    }
    absl::StrAppend(&out, text.substr(pos, open - pos));
    const size_t close = text.find(kClose, open + kOpen.size());
    if (close == absl::string_view::npos) break;  // cut off while thinking: no answer
    pos = close + kClose.size();
  }
  return out;
}

absl::Status ValidateRequiredKeys(const json& value, const std::vector<std::string>& required) {
  if (!value.is_object()) return absl::InvalidArgumentError("the JSON value is not an object");
  std::vector<std::string> missing;
  for (const std::string& key : required) {
    if (!value.contains(key)) missing.push_back(key);
  }
  if (missing.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("the JSON object lacks required keys: ", absl::StrJoin(missing, ", ")));
}

absl::StatusOr<StructuredChatResult> ChatForJson(LlmClient& client, const ChatRequest& request,
                                                 const StructuredChatOptions& options) {
  ChatRequest conversation = request;
  StructuredChatResult result;
  std::string last_reason;
  const int max_attempts = std::max(1, options.max_attempts);
  for (int n = 1; n <= max_attempts; ++n) {
    absl::StatusOr<ChatResponse> reply = client.Chat(conversation);
    if (!reply.ok()) return reply.status();
    if (options.replies != nullptr) options.replies->push_back(reply->content);
    result.attempts = n;
    result.usage.input_tokens += reply->usage.input_tokens;
    result.usage.output_tokens += reply->usage.output_tokens;

    absl::StatusOr<JsonExtraction> extracted =
        ExtractJsonObject(reply->content, options.required_keys);
    absl::Status problem = extracted.status();
    if (problem.ok()) problem = ValidateRequiredKeys(extracted->value, options.required_keys);
    if (!problem.ok() && options.fallback) {
      // A reply in another shape the caller accepts (e.g. a fenced code block).
      std::optional<json> value = options.fallback(StripThinking(reply->content));
      if (value.has_value() && ValidateRequiredKeys(*value, options.required_keys).ok()) {
        extracted = JsonExtraction{*std::move(value), false, false};
        problem = absl::OkStatus();
      }
    }
    if (problem.ok()) {
      result.value = std::move(extracted->value);
      result.repaired = extracted->repaired;
      result.truncated = extracted->truncated;
      result.response = *std::move(reply);
      return result;
    }
    last_reason = std::string(problem.message());
    const bool cut_off = (extracted.ok() && extracted->truncated) ||
                         reply->stop_reason == "length" || reply->stop_reason == "max_tokens";
    KLOG(INFO).With("attempt", n) << "llm reply is not usable JSON: " << last_reason;
    if (n == max_attempts) break;

    std::string follow_up =
        absl::StrCat("Your previous reply could not be used: ", last_reason, ".");
    if (cut_off) {
      absl::StrAppend(&follow_up,
                      " It was cut off before the JSON object ended; be more concise.");
    }
    absl::StrAppend(&follow_up,
                    " Reply with exactly one JSON object and nothing else: no prose, no code "
                    "fences, no comments");
    if (!options.required_keys.empty()) {
      absl::StrAppend(&follow_up, ", with the keys: ",
                      absl::StrJoin(options.required_keys, ", "));
    }
    follow_up += ".";
    // The reply without its reasoning, as chat templates drop it from the history.
    std::string answered = StripThinking(reply->content);
    conversation.messages.push_back(
        {Role::kAssistant, answered.empty() ? "(empty reply)" : std::move(answered)});
    conversation.messages.push_back({Role::kUser, std::move(follow_up)});
  }
  return absl::InternalError(absl::StrCat("no usable JSON reply after ", result.attempts,
                                          " attempts: ", last_reason));
}

}  // namespace kagent::llm
