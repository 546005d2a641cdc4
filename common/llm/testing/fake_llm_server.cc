#include "common/llm/testing/fake_llm_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace kagent::llm::testing {
namespace {

using nlohmann::json;

ScriptedResponse JsonResponse(int status, const json& body) {
  ScriptedResponse r;
  r.status = status;
  r.body = body.dump();
  return r;
}

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 411: return "Length Required";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 529: return "Overloaded";
    default: return "Status";
  }
}

bool SendAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Reads one request; false when the connection ended or the request is malformed.
bool ReadRequest(int fd, ReceivedRequest* out) {
  std::string buf;
  char chunk[8192];
  size_t header_end = std::string::npos;
  while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
    const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || buf.size() > (1 << 20)) return false;
    buf.append(chunk, static_cast<size_t>(n));
  }
  std::vector<absl::string_view> lines =
      absl::StrSplit(absl::string_view(buf).substr(0, header_end), "\r\n");
  std::vector<absl::string_view> first = absl::StrSplit(lines[0], ' ');
  if (first.size() != 3) return false;
  out->method = std::string(first[0]);
  out->path = std::string(first[1]);
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos) continue;
    out->headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
  }
  size_t length = 0;
  if (auto it = out->headers.find("content-length"); it != out->headers.end()) {
    if (!absl::SimpleAtoi(it->second, &length)) return false;
  }
  if (auto it = out->headers.find("expect"); it != out->headers.end() &&
                                             absl::EqualsIgnoreCase(it->second, "100-continue")) {
    SendAll(fd, "HTTP/1.1 100 Continue\r\n\r\n");
  }
  out->body = buf.substr(header_end + 4);
  while (out->body.size() < length) {
    const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out->body.append(chunk, static_cast<size_t>(n));
  }
  out->body.resize(length);
  out->received = absl::Now();
  return true;
}

}  // namespace

json ReceivedRequest::Json() const {
  return json::parse(body, nullptr, /*allow_exceptions=*/false);
}

std::string ReceivedRequest::Header(absl::string_view name) const {
  auto it = headers.find(absl::AsciiStrToLower(name));
  return it == headers.end() ? "" : it->second;
}

ScriptedResponse OpenAiReply(absl::string_view content, int64_t prompt_tokens,
                             int64_t completion_tokens, absl::string_view model,
                             absl::string_view finish_reason) {
  return JsonResponse(
      200, {{"id", "chatcmpl-test"},
            {"object", "chat.completion"},
            {"created", 1700000000},
            {"model", std::string(model)},
            {"choices",
             json::array({{{"index", 0},
                           {"message", {{"role", "assistant"}, {"content", std::string(content)}}},
                           {"finish_reason", std::string(finish_reason)}}})},
            {"usage",
             {{"prompt_tokens", prompt_tokens},
              {"completion_tokens", completion_tokens},
              {"total_tokens", prompt_tokens + completion_tokens}}}});
}

ScriptedResponse OpenAiError(int status, absl::string_view message, absl::string_view type) {
  return JsonResponse(status, {{"error",
                                {{"message", std::string(message)},
                                 {"type", std::string(type)},
                                 {"param", nullptr},
                                 {"code", nullptr}}}});
}

ScriptedResponse AnthropicReply(absl::string_view content, int64_t input_tokens,
                                int64_t output_tokens, absl::string_view model,
                                absl::string_view stop_reason) {
  return JsonResponse(
      200, {{"id", "msg_test"},
            {"type", "message"},
            {"role", "assistant"},
            {"model", std::string(model)},
            {"content", json::array({{{"type", "text"}, {"text", std::string(content)}}})},
            {"stop_reason", std::string(stop_reason)},
            {"stop_sequence", nullptr},
            {"usage", {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}}}});
}

ScriptedResponse AnthropicError(int status, absl::string_view type, absl::string_view message) {
  return JsonResponse(status, {{"type", "error"},
                               {"error", {{"type", std::string(type)},
                                          {"message", std::string(message)}}}});
}

ScriptedResponse ModelList(WireFormat format, const std::vector<std::string>& ids) {
  json data = json::array();
  for (const std::string& id : ids) {
    if (format == WireFormat::kOpenAi) {
      data.push_back({{"id", id}, {"object", "model"}, {"created", 1700000000},
                      {"owned_by", "vllm"}, {"max_model_len", 32768}});
    } else {
      data.push_back({{"type", "model"}, {"id", id}, {"display_name", id},
                      {"created_at", "2025-09-29T00:00:00Z"}});
    }
  }
  if (format == WireFormat::kOpenAi) return JsonResponse(200, {{"object", "list"}, {"data", data}});
  return JsonResponse(200, {{"data", data},
                            {"has_more", false},
                            {"first_id", ids.empty() ? json(nullptr) : json(ids.front())},
                            {"last_id", ids.empty() ? json(nullptr) : json(ids.back())}});
}

absl::StatusOr<std::unique_ptr<FakeLlmServer>> FakeLlmServer::Start(WireFormat format) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string err = std::strerror(errno);
    ::close(fd);
    return absl::InternalError(absl::StrCat("bind/listen on 127.0.0.1:0: ", err));
  }
  std::unique_ptr<FakeLlmServer> server(new FakeLlmServer(format, fd, ntohs(addr.sin_port)));
  server->acceptor_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

FakeLlmServer::FakeLlmServer(WireFormat format, int listen_fd, int port)
    : format_(format), listen_fd_(listen_fd), port_(port) {
  default_ = format == WireFormat::kOpenAi
                 ? OpenAiError(500, "fake server: script exhausted", "server_error")
                 : AnthropicError(500, "api_error", "fake server: script exhausted");
}

FakeLlmServer::~FakeLlmServer() { Stop(); }

void FakeLlmServer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopping_ = true;
  }
  if (acceptor_.joinable()) acceptor_.join();
  ::close(listen_fd_);
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    threads.swap(connections_);
  }
  for (std::thread& t : threads) t.join();
  absl::MutexLock lock(&mu_);
  stopped_ = true;
}

std::string FakeLlmServer::base_url() const { return absl::StrCat("http://127.0.0.1:", port_); }

absl::string_view FakeLlmServer::api_path() const {
  return format_ == WireFormat::kOpenAi ? "/v1/chat/completions" : "/v1/messages";
}

void FakeLlmServer::Enqueue(ScriptedResponse response) {
  absl::MutexLock lock(&mu_);
  script_.push_back(std::move(response));
}

void FakeLlmServer::SetDefault(ScriptedResponse response) {
  absl::MutexLock lock(&mu_);
  default_ = std::move(response);
}

void FakeLlmServer::SetModelsResponse(ScriptedResponse response) {
  absl::MutexLock lock(&mu_);
  models_ = std::move(response);
}

std::vector<ReceivedRequest> FakeLlmServer::requests() {
  absl::MutexLock lock(&mu_);
  return requests_;
}

size_t FakeLlmServer::request_count() {
  absl::MutexLock lock(&mu_);
  return requests_.size();
}

size_t FakeLlmServer::script_left() {
  absl::MutexLock lock(&mu_);
  return script_.size();
}

bool FakeLlmServer::Sleep(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&stopping_), d);
  return !stopping_;
}

void FakeLlmServer::AcceptLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    pollfd p{listen_fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, 20);
    if (ready <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    absl::MutexLock lock(&mu_);
    connections_.emplace_back([this, fd] { Serve(fd); });
  }
}

ScriptedResponse FakeLlmServer::NextResponse(const ReceivedRequest& request) {
  absl::MutexLock lock(&mu_);
  requests_.push_back(request);
  if (request.method == "GET" && absl::StartsWith(request.path, "/v1/models") &&
      models_.has_value()) {
    return *models_;
  }
  if (request.method != "POST" || request.path != api_path()) {
    const std::string msg = absl::StrCat("fake server: no route for ", request.method, " ",
                                         request.path);
    return format_ == WireFormat::kOpenAi ? OpenAiError(404, msg, "not_found_error")
                                          : AnthropicError(404, "not_found_error", msg);
  }
  if (script_.empty()) return default_;
  ScriptedResponse r = std::move(script_.front());
  script_.pop_front();
  return r;
}

void FakeLlmServer::Serve(int fd) {
  ReceivedRequest request;
  if (!ReadRequest(fd, &request)) {
    ::close(fd);
    return;
  }
  const ScriptedResponse r = NextResponse(request);
  if (r.delay > absl::ZeroDuration() && !Sleep(r.delay)) {
    ::close(fd);
    return;
  }
  if (r.fault == ScriptedResponse::Fault::kCloseWithoutResponse) {
    ::close(fd);
    return;
  }
  std::string head = absl::StrCat("HTTP/1.1 ", r.status, " ", Reason(r.status), "\r\n",
                                  "Content-Type: application/json\r\n",
                                  "Content-Length: ", r.body.size(), "\r\n",
                                  "Connection: close\r\n");
  for (const auto& [name, value] : r.headers) absl::StrAppend(&head, name, ": ", value, "\r\n");
  head += "\r\n";
  if (SendAll(fd, head)) {
    if (r.fault == ScriptedResponse::Fault::kTruncateBody) {
      SendAll(fd, absl::string_view(r.body).substr(0, r.body.size() / 2));
    } else {
      SendAll(fd, r.body);
    }
  }
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

}  // namespace kagent::llm::testing
