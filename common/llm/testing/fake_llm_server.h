// A real HTTP/1.1 server on 127.0.0.1 (port 0) that speaks an LLM provider's wire
// format with scripted behaviour, for loopback tests of the clients.
//
//   auto server = FakeLlmServer::Start(WireFormat::kOpenAi).value();
//   server->Enqueue(OpenAiError(429, "slow down").WithHeader("Retry-After", "1"));
//   server->Enqueue(OpenAiReply("hello"));
//   ... point a client at server->base_url() ...
//   server->requests()   // what arrived: method, path, headers, body
//
// Requests to the format's API path (POST /v1/chat/completions or /v1/messages) take the
// next scripted response, or the default one when the script is empty (a 500 error body
// saying so, unless SetDefault was called). GET /v1/models gets the response set with
// SetModelsResponse (e.g. ModelList), or 404 when none was set. Other paths get 404 in
// the format's error shape. Every request is recorded. Each connection is served on its own thread and
// closed after one response ("Connection: close").
//
// Faults: a delay before anything is sent (slow responses), a body cut short after the
// headers promised more (truncated responses), and closing without a response.
//
// Thread-safe. Stop() (or the destructor) wakes delayed responses and joins every thread.
#ifndef KAGENT_COMMON_LLM_TESTING_FAKE_LLM_SERVER_H_
#define KAGENT_COMMON_LLM_TESTING_FAKE_LLM_SERVER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace kagent::llm::testing {

enum class WireFormat { kOpenAi, kAnthropic };

struct ReceivedRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  absl::Time received;
  // The body parsed as JSON (a discarded value when it is not JSON).
  nlohmann::json Json() const;
  // The header's value, or "" when absent. `name` is matched case-insensitively.
  std::string Header(absl::string_view name) const;
};

struct ScriptedResponse {
  enum class Fault { kNone, kTruncateBody, kCloseWithoutResponse };
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  absl::Duration delay = absl::ZeroDuration();
  Fault fault = Fault::kNone;

  ScriptedResponse& WithHeader(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
    return *this;
  }
  ScriptedResponse& WithDelay(absl::Duration d) {
    delay = d;
    return *this;
  }
  ScriptedResponse& WithFault(Fault f) {
    fault = f;
    return *this;
  }
};

// Bodies in each provider's wire format.
ScriptedResponse OpenAiReply(absl::string_view content, int64_t prompt_tokens = 12,
                             int64_t completion_tokens = 7,
                             absl::string_view model = "test-model",
                             absl::string_view finish_reason = "stop");
ScriptedResponse OpenAiError(int status, absl::string_view message,
                             absl::string_view type = "invalid_request_error");
ScriptedResponse AnthropicReply(absl::string_view content, int64_t input_tokens = 12,
                                int64_t output_tokens = 7,
                                absl::string_view model = "test-model",
                                absl::string_view stop_reason = "end_turn");
ScriptedResponse AnthropicError(int status, absl::string_view type,
                                absl::string_view message);
// GET /v1/models: {"object":"list","data":[{"id","object":"model","owned_by"}...]}
// (OpenAI, vLLM, SGLang) or {"data":[{"type":"model","id","display_name"}...],
// "has_more":false} (Anthropic).
ScriptedResponse ModelList(WireFormat format, const std::vector<std::string>& ids);

class FakeLlmServer {
 public:
  static absl::StatusOr<std::unique_ptr<FakeLlmServer>> Start(WireFormat format);
  ~FakeLlmServer();
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  // Stops accepting, wakes delayed responses, joins all threads. Idempotent.
  void Stop();

  int port() const { return port_; }
  // "http://127.0.0.1:<port>"
  std::string base_url() const;
  // The API path of the format.
  absl::string_view api_path() const;

  // Appends to the script.
  void Enqueue(ScriptedResponse response);
  void SetDefault(ScriptedResponse response);
  // The answer to every GET /v1/models.
  void SetModelsResponse(ScriptedResponse response);
  std::vector<ReceivedRequest> requests();
  size_t request_count();
  size_t script_left();

 private:
  FakeLlmServer(WireFormat format, int listen_fd, int port);
  void AcceptLoop();
  void Serve(int fd);
  ScriptedResponse NextResponse(const ReceivedRequest& request);
  // Sleeps up to `d`, waking early on Stop(). False when stopped.
  bool Sleep(absl::Duration d);

  const WireFormat format_;
  const int listen_fd_;
  const int port_;
  std::thread acceptor_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<ScriptedResponse> script_ ABSL_GUARDED_BY(mu_);
  ScriptedResponse default_ ABSL_GUARDED_BY(mu_);
  std::optional<ScriptedResponse> models_ ABSL_GUARDED_BY(mu_);
  std::vector<ReceivedRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> connections_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kagent::llm::testing

#endif  // KAGENT_COMMON_LLM_TESTING_FAKE_LLM_SERVER_H_
