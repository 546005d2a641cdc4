#include "common/llm/cassette.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/llm/sha256.h"
#include "common/logging.h"

namespace kagent::llm {
namespace {

using nlohmann::json;

constexpr int kCassetteVersion = 1;

std::optional<absl::StatusCode> CodeFromName(absl::string_view name) {
  for (int c = 0; c <= 16; ++c) {
    const auto code = static_cast<absl::StatusCode>(c);
    if (absl::StatusCodeToString(code) == name) return code;
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<CassetteMode> ParseCassetteMode(absl::string_view text) {
  const std::string t = absl::AsciiStrToLower(text);
  if (t.empty() || t == "off") return CassetteMode::kOff;
  if (t == "record") return CassetteMode::kRecord;
  if (t == "replay") return CassetteMode::kReplay;
  return absl::InvalidArgumentError(
      absl::StrCat("cassette mode must be off, record or replay, not \"", text, "\""));
}

absl::string_view CassetteModeName(CassetteMode mode) {
  switch (mode) {
    case CassetteMode::kOff: return "off";
    case CassetteMode::kRecord: return "record";
    case CassetteMode::kReplay: return "replay";
  }
  return "off";
}

json NormalizeRequest(const ChatRequest& request, const RequestDefaults& defaults) {
  json j = json::object();
  j["model"] = request.model.empty() ? defaults.model : request.model;
  j["system"] = request.system;
  json messages = json::array();
  for (const ChatMessage& m : request.messages) {
    messages.push_back({{"role", std::string(RoleName(m.role))}, {"content", m.content}});
  }
  j["messages"] = std::move(messages);
  j["max_tokens"] = request.max_tokens > 0 ? request.max_tokens : defaults.max_tokens;
  std::optional<double> t = request.temperature.has_value() ? request.temperature
                                                            : defaults.temperature;
  if (t.has_value() && std::isfinite(*t)) {
    // Rounded to 1e-6 so tiny float noise does not change the hash.
    j["temperature"] = std::round(*t * 1e6) / 1e6;
  } else {
    j["temperature"] = nullptr;
  }
  return j;
}

std::string RequestHash(const ChatRequest& request, const RequestDefaults& defaults) {
  return Sha256Hex(
      NormalizeRequest(request, defaults).dump(-1, ' ', false, json::error_handler_t::replace));
}

CassetteLlmClient::CassetteLlmClient(CassetteMode mode, std::shared_ptr<LlmClient> inner,
                                     std::string path, RequestDefaults defaults)
    : mode_(mode), inner_(std::move(inner)), path_(std::move(path)), defaults_(defaults) {}

CassetteLlmClient::~CassetteLlmClient() {
  absl::MutexLock lock(&mu_);
  if (out_ != nullptr) std::fclose(out_);
}

absl::StatusOr<std::unique_ptr<CassetteLlmClient>> CassetteLlmClient::Record(
    std::shared_ptr<LlmClient> inner, std::string path, RequestDefaults defaults) {
  if (inner == nullptr) return absl::InvalidArgumentError("cassette record needs a client");
  std::FILE* f = std::fopen(path.c_str(), "ab");
  if (f == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot open cassette ", path, " for appending: ", std::strerror(errno)));
  }
  std::unique_ptr<CassetteLlmClient> client(new CassetteLlmClient(
      CassetteMode::kRecord, std::move(inner), std::move(path), std::move(defaults)));
  absl::MutexLock lock(&client->mu_);
  client->out_ = f;
  return client;
}

absl::StatusOr<std::unique_ptr<CassetteLlmClient>> CassetteLlmClient::Replay(
    std::string path, RequestDefaults defaults) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read cassette ", path));
  std::unique_ptr<CassetteLlmClient> client(
      new CassetteLlmClient(CassetteMode::kReplay, nullptr, path, std::move(defaults)));
  absl::MutexLock lock(&client->mu_);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("cassette ", path, " line ", line_no, ": ", why));
    };
    if (!j.is_object() || !j.contains("hash") || !j["hash"].is_string()) {
      return bad("not a cassette entry (no \"hash\")");
    }
    Entry entry;
    try {
      if (j.contains("response") && j["response"].is_object()) {
        const json& r = j["response"];
        ChatResponse& out = entry.response;
        out.content = r.value("content", "");
        out.model = r.value("model", "");
        out.stop_reason = r.value("stop_reason", "");
        if (r.contains("usage") && r["usage"].is_object()) {
          out.usage.input_tokens = r["usage"].value("input_tokens", int64_t{0});
          out.usage.output_tokens = r["usage"].value("output_tokens", int64_t{0});
        }
        out.from_cassette = true;
      } else if (j.contains("error") && j["error"].is_object()) {
        const json& e = j["error"];
        auto code = CodeFromName(e.value("code", ""));
        if (!code.has_value() || *code == absl::StatusCode::kOk) {
          return bad("unknown error code");
        }
        entry.status = absl::Status(*code, e.value("message", ""));
      } else {
        return bad("neither \"response\" nor \"error\"");
      }
    } catch (const json::exception& e) {  // a field of the wrong type
      return bad(e.what());
    }
    client->replay_[j["hash"].get<std::string>()].entries.push_back(std::move(entry));
    ++client->loaded_;
  }
  KLOG(INFO).With("cassette", client->path_).With("entries", static_cast<double>(client->loaded_))
      << "llm cassette loaded for replay";
  return client;
}

size_t CassetteLlmClient::size() {
  absl::MutexLock lock(&mu_);
  return mode_ == CassetteMode::kReplay ? loaded_ : written_;
}

absl::StatusOr<ChatResponse> CassetteLlmClient::Chat(const ChatRequest& request) {
  const json normalized = NormalizeRequest(request, defaults_);
  const std::string hash =
      Sha256Hex(normalized.dump(-1, ' ', false, json::error_handler_t::replace));

  if (mode_ == CassetteMode::kReplay) {
    absl::MutexLock lock(&mu_);
    auto it = replay_.find(hash);
    if (it == replay_.end()) {
      return absl::NotFoundError(absl::StrCat(
          "cassette ", path_, " has no response for request ", hash, " (model ",
          normalized["model"].get<std::string>(), ", ", request.messages.size(),
          " messages); record it first"));
    }
    Recorded& rec = it->second;
    const Entry& entry = rec.entries[rec.next];
    if (rec.next + 1 < rec.entries.size()) ++rec.next;
    if (!entry.status.ok()) return entry.status;
    return entry.response;
  }

  absl::StatusOr<ChatResponse> result = inner_->Chat(request);
  json line = json::object();
  line["version"] = kCassetteVersion;
  line["hash"] = hash;
  line["request"] = normalized;
  if (result.ok()) {
    line["response"] = {
        {"content", result->content},
        {"model", result->model},
        {"stop_reason", result->stop_reason},
        {"usage",
         {{"input_tokens", result->usage.input_tokens},
          {"output_tokens", result->usage.output_tokens}}}};
  } else {
    line["error"] = {{"code", absl::StatusCodeToString(result.status().code())},
                     {"message", std::string(result.status().message())}};
  }
  const std::string text =
      line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  absl::MutexLock lock(&mu_);
  if (std::fwrite(text.data(), 1, text.size(), out_) != text.size() || std::fflush(out_) != 0) {
    KLOG(ERROR).With("cassette", path_) << "cannot append to cassette: " << std::strerror(errno);
  } else {
    ++written_;
  }
  return result;
}

}  // namespace kagent::llm
