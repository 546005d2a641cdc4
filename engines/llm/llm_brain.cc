#include "engines/llm/llm_brain.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/llm/endpoint_failure.h"
#include "common/llm/llm_metrics.h"
#include "common/llm/structured_output.h"
#include "common/llm/transcript_status.h"
#include "common/logging.h"
#include "common/status.h"
#include "engines/llm/agent_call.h"
#include "engines/llm/prompt_values.h"

namespace kagent {
namespace {

using llm::ChatRequest;
using llm::Role;
using llm_engine::Transcript;

std::string StringField(const nlohmann::json& value, const char* key) {
  auto it = value.find(key);
  if (it == value.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

}  // namespace

LlmKernelBrain::LlmKernelBrain(std::shared_ptr<llm::LlmClient> client,
                               std::shared_ptr<const llm::PromptLibrary> prompts,
                               LlmBrainOptions options)
    : client_(std::move(client)), prompts_(std::move(prompts)), options_(std::move(options)) {
  KAGENT_CHECK(client_ != nullptr) << "LlmKernelBrain needs a client";
  KAGENT_CHECK(prompts_ != nullptr) << "LlmKernelBrain needs a prompt library";
}

absl::StatusOr<BrainResult> LlmKernelBrain::FirstKernel(const FirstKernelRequest& request) {
  if (request.problem == nullptr || request.problem->source().empty()) {
    return absl::InvalidArgumentError("a first kernel needs the problem's source");
  }
  if (request.signature == nullptr) {
    return absl::InvalidArgumentError("a first kernel needs the problem's op signature");
  }
  llm::PromptValues values = {
      {"gpu", llm_engine::DescribeGpu(request.gpu)},
      {"problem_source", request.problem->source()},
      {"op_summary", llm_engine::SummarizeOps(request.signature)},
  };
  return Generate("first_kernel", values, absl::StrCat("first kernel written by ", options_.name),
                  /*worker_index=*/0);
}

absl::StatusOr<BrainResult> LlmKernelBrain::ApplyFix(const FixRequest& request) {
  if (request.parent == nullptr || request.parent->source().empty()) {
    return absl::InvalidArgumentError("a fix needs the parent kernel's source");
  }
  if (request.prescription == nullptr) {
    return absl::InvalidArgumentError("a fix needs a prescription");
  }
  const auto& p = *request.prescription;
  std::string title = !p.title().empty()       ? p.title()
                      : !p.pattern_id().empty() ? p.pattern_id()
                                                : std::string("the prescribed fix");
  if (request.repair != nullptr) return Repair(request, title);
  const std::vector<std::string> knobs = llm_engine::KernelKnobs(request.parent->source());
  std::string diagnosis = llm_engine::DescribeReport(request.report);
  if (std::string roofline = llm_engine::DescribeRoofline(request.metrics, request.gpu);
      !roofline.empty()) {
    absl::StrAppend(&diagnosis, "\n", roofline);
  }
  llm::PromptValues values = {
      {"gpu", llm_engine::DescribeGpu(request.gpu)},
      {"problem_source", request.problem != nullptr && !request.problem->source().empty()
                             ? request.problem->source()
                             : std::string("# (the reference was not given)")},
      {"kernel_source", request.parent->source()},
      {"kernel_knobs", llm_engine::DescribeKnobs(knobs)},
      {"measured", llm_engine::DescribeMeasurement(request.measurement)},
      {"diagnosis", diagnosis},
      {"fix_title", title},
      {"fix_description", llm_engine::DescribeFix(p, request.alternative, &knobs)},
      {"lessons", llm_engine::FormatLessons(request.memory)},
  };
  std::string move = absl::StrCat(options_.name, " rewrite: ", title);
  if (request.alternative > 0) absl::StrAppend(&move, " (variant ", request.alternative + 1, ")");
  absl::StatusOr<BrainResult> result =
      Generate("rewrite_kernel", values, std::move(move), request.worker_index);
  if (!result.ok()) return result;
  // The model's own omission is not the pattern's failure: recorded as another move made
  // (a fallback), the reflexion judges the rewrite and keeps the pattern off the
  // avoid-list.
  if (std::optional<std::string> unapplied = llm_engine::UnappliedFix(
          p, request.parent->source(), result->kernel.source())) {
    KLOG(INFO).With("brain", options_.name) << *unapplied;
    result->fallback = *std::move(unapplied);
  }
  return result;
}

absl::StatusOr<BrainResult> LlmKernelBrain::Repair(const FixRequest& request,
                                                   const std::string& title) {
  const RepairRequest& repair = *request.repair;
  llm::PromptValues values = {
      {"gpu", llm_engine::DescribeGpu(request.gpu)},
      {"attempt", absl::StrCat(repair.attempt)},
      {"problem_source", request.problem != nullptr && !request.problem->source().empty()
                             ? request.problem->source()
                             : std::string("# (the reference was not given)")},
      {"fix_title", title},
      {"fix_description", llm_engine::DescribeFix(*request.prescription, 0)},
      {"kernel_source", request.parent->source()},
      {"verdict", repair.verdict.empty() ? std::string("(not given)") : repair.verdict},
      {"error", repair.error.empty() ? std::string("(no message)") : repair.error},
  };
  return Generate("repair_kernel", values,
                  absl::StrCat(options_.name, " repair ", repair.attempt, ": ", title),
                  request.worker_index);
}

absl::StatusOr<BrainResult> LlmKernelBrain::Generate(absl::string_view template_name,
                                                     const llm::PromptValues& values,
                                                     std::string move, int worker_index) {
  KAGENT_ASSIGN_OR_RETURN(std::string system, prompts_->Render("system", {}));
  KAGENT_ASSIGN_OR_RETURN(std::string prompt, prompts_->Render(template_name, values));
  ChatRequest request;
  request.system = std::move(system);
  request.messages.push_back({Role::kUser, std::move(prompt)});
  request.model = options_.model;
  const size_t n_models = options_.models.size();
  if (n_models > 0) {
    request.model = options_.models[static_cast<size_t>(std::max(0, worker_index)) % n_models];
  }
  if (n_models > 1) absl::StrAppend(&move, " (model ", request.model, ")");
  request.max_tokens = options_.max_tokens;
  request.temperature = options_.temperature;
  const LogContext& log = CurrentLogContext();
  request.job_id = log.job_id;
  request.tenant = log.tenant;

  llm::StructuredChatOptions json_options{
      .required_keys = {"code"}, .max_attempts = std::max(1, options_.max_json_attempts)};
  // Models often answer with the file in a ```python block instead of the JSON asked for.
  json_options.fallback = [](absl::string_view reply) -> std::optional<nlohmann::json> {
    std::optional<llm_engine::FencedKernel> fenced = llm_engine::FindFencedKernel(reply);
    if (!fenced.has_value()) return std::nullopt;
    return nlohmann::json{{"code", fenced->code}, {"explanation", fenced->explanation}};
  };
  // Every reply of every question, for the record of a call that ends without a kernel.
  std::vector<std::string> replies;
  json_options.replies = &replies;
  auto with_transcript = [&](absl::Status failed) {
    llm::AttachLlmTranscript({Transcript(request), llm_engine::JoinReplies(replies)}, &failed);
    return failed;
  };
  const int questions = 1 + std::max(0, options_.max_source_retries);
  std::string last_problem;
  for (int q = 1; q <= questions; ++q) {
    absl::StatusOr<llm::StructuredChatResult> answer =
        llm::ChatForJson(*client_, request, json_options);
    if (!answer.ok()) {
      // Keep the code and the payloads: RESOURCE_EXHAUSTED must reach the optimization
      // manager as it is, and an endpoint's failure marked, with its Retry-After.
      absl::Status failed = answer.status();
      llm::MarkEndpointFailure(&failed);
      return with_transcript(llm::PrefixMessage(
          absl::StrCat(options_.name, " brain (", template_name, "): "), failed));
    }
    const nlohmann::json& value = answer->value;
    const std::string& reply = answer->response.content;
    absl::Status problem;
    std::string code;
    if (!value.at("code").is_string()) {
      problem = absl::InvalidArgumentError("\"code\" must be a string holding the Python file");
    } else {
      code = llm_engine::StripCodeFences(value.at("code").get<std::string>());
      problem = llm_engine::ValidateKernelSource(code);
    }
    if (problem.ok()) {
      BrainResult result;
      result.kernel.set_language(kagent::v1::KERNEL_LANGUAGE_TRITON);
      result.kernel.set_source(std::move(code));
      result.kernel.set_origin(n_models > 1 ? absl::StrCat("brain:", options_.name, "/", request.model)
                                            : absl::StrCat("brain:", options_.name));
      result.expected_effect = StringField(value, "expected_effect");
      if (result.expected_effect.empty()) result.expected_effect = StringField(value, "explanation");
      auto speedup = value.find("expected_speedup");
      if (speedup != value.end() && speedup->is_number() && speedup->get<double>() > 0) {
        absl::StrAppend(&result.expected_effect, result.expected_effect.empty() ? "" : " ",
                        "(expected speedup ", llm_engine::FormatNumber(speedup->get<double>()),
                        "x)");
      }
      result.moves.push_back(std::move(move));
      result.prompt = Transcript(request);
      result.reply = reply;
      KLOG(INFO).With("brain", options_.name).With("template", template_name)
              .With("questions", q).With("replies", answer->attempts)
          << "llm kernel generated";
      return result;
    }
    last_problem = std::string(problem.message());
    KLOG(INFO).With("brain", options_.name).With("question", q)
        << "llm kernel rejected: " << last_problem;
    if (q == questions) break;
    request.messages.push_back({Role::kAssistant, llm::StripThinking(reply)});
    request.messages.push_back(
        {Role::kUser,
         absl::StrCat("Your code cannot be used: ", last_problem,
                      ". Fix it and reply again with exactly one JSON object with the keys "
                      "explanation and code, where code is the complete Python file defining "
                      "`class ModelNew(nn.Module)` whose hot path runs in your own "
                      "@triton.jit kernels.")});
  }
  return with_transcript(absl::FailedPreconditionError(
      absl::StrCat(options_.name, " brain (", template_name,
                   "): the model's code is unusable after ", questions,
                   " questions: ", last_problem)));
}

absl::StatusOr<llm::LlmConfig> LoadLlmConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open LLM config ", path));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::InternalError(absl::StrCat("cannot read LLM config ", path));
  absl::StatusOr<llm::LlmConfig> config = llm::ParseLlmConfigJson(text.str());
  if (!config.ok()) {
    return absl::Status(config.status().code(),
                        absl::StrCat("LLM config ", path, ": ", config.status().message()));
  }
  return config;
}

absl::StatusOr<ConfiguredLlm> LoadLlmStack(const std::string& path, llm::LlmDeps deps,
                                           prometheus::Registry* registry, absl::string_view what) {
  KAGENT_ASSIGN_OR_RETURN(llm::LlmConfig config, LoadLlmConfigFile(path));
  if (deps.metrics == nullptr && registry != nullptr) {  // kagent_llm_* on /metrics
    deps.metrics = std::make_shared<llm::LlmMetrics>(*registry);
  }
  absl::StatusOr<llm::LlmStack> stack = llm::MakeLlmStack(config, deps);
  if (!stack.ok()) {
    return absl::Status(stack.status().code(),
                        absl::StrCat(what, " from ", path, ": ", stack.status().message()));
  }
  return ConfiguredLlm{std::move(config), *std::move(stack)};
}

}  // namespace kagent
