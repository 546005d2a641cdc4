#include "engines/llm/agent_call.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/llm/endpoint_failure.h"
#include "common/llm/structured_output.h"
#include "common/llm/transcript_status.h"
#include "common/logging.h"

namespace kagent::llm_engine {

std::string Transcript(const llm::ChatRequest& request) {
  std::string out;
  if (!request.system.empty()) absl::StrAppend(&out, "[system]\n", request.system, "\n\n");
  for (size_t i = 0; i < request.messages.size(); ++i) {
    const llm::ChatMessage& m = request.messages[i];
    absl::StrAppend(&out, i == 0 ? "" : "\n\n", "[", llm::RoleName(m.role), "]\n", m.content);
  }
  return out;
}

std::string JoinReplies(const std::vector<std::string>& replies) {
  std::string all;
  for (size_t i = 0; i < replies.size(); ++i) {
    absl::StrAppend(&all, i == 0 ? "" : "\n\n",
                    replies.size() > 1 ? absl::StrCat("[reply ", i + 1, "]\n") : "", replies[i]);
  }
  return all;
}

absl::StatusOr<AgentAnswer> AskAgent(llm::LlmClient& client, const llm::PromptLibrary& prompts,
                                     absl::string_view agent, absl::string_view template_name,
                                     const llm::PromptValues& values,
                                     const std::vector<std::string>& required_keys,
                                     const AgentOptions& options) {
  const std::string prefix = absl::StrCat(options.name, " ", agent, ": ");
  absl::StatusOr<std::string> system = prompts.Render("system", {});
  if (!system.ok()) return llm::PrefixMessage(prefix, system.status());
  absl::StatusOr<std::string> prompt = prompts.Render(template_name, values);
  if (!prompt.ok()) return llm::PrefixMessage(prefix, prompt.status());
  llm::ChatRequest request;
  request.system = *std::move(system);
  request.messages.push_back({llm::Role::kUser, *std::move(prompt)});
  request.model = options.model;
  request.max_tokens = options.max_tokens;
  request.temperature = options.temperature;
  const LogContext& log = CurrentLogContext();
  request.job_id = log.job_id;
  request.tenant = log.tenant;

  std::vector<std::string> replies;
  absl::StatusOr<llm::StructuredChatResult> answer = llm::ChatForJson(
      client, request,
      {.required_keys = required_keys,
       .max_attempts = std::max(1, options.max_json_attempts),
       .replies = &replies});
  if (!answer.ok()) {
    absl::Status failed = answer.status();
    llm::MarkEndpointFailure(&failed);
    failed = llm::PrefixMessage(prefix, failed);
    llm::AttachLlmTranscript({Transcript(request), JoinReplies(replies)}, &failed);
    return failed;
  }
  KLOG(INFO).With("agent", std::string(agent)).With("replies", answer->attempts)
      << options.name << " " << agent << " answered";
  return AgentAnswer{.value = std::move(answer->value),
                     .prompt = Transcript(request),
                     .reply = answer->response.content};
}

absl::Status RefuseReply(const AgentAnswer& answer, absl::string_view agent,
                         const AgentOptions& options, absl::string_view why) {
  absl::Status refused = absl::InternalError(
      absl::StrCat(options.name, " ", agent, ": the reply was refused: ", why));
  llm::AttachLlmTranscript({answer.prompt, answer.reply}, &refused);
  return refused;
}

}  // namespace kagent::llm_engine
