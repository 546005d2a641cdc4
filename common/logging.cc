#include "common/logging.h"

#include <atomic>
#include <chrono>
#include <iostream>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace kagent {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mu;  // guards g_service, g_sink and the output stream
std::string g_service = "kagent";
std::function<void(const std::string&)> g_sink;
thread_local LogContext t_context;

}  // namespace

bool ParseLogLevel(absl::string_view text, LogLevel* level) {
  std::string t = absl::AsciiStrToLower(text);
  if (t == "debug") *level = LogLevel::kDebug;
  else if (t == "info") *level = LogLevel::kInfo;
  else if (t == "warning" || t == "warn") *level = LogLevel::kWarning;
  else if (t == "error") *level = LogLevel::kError;
  else return false;
  return true;
}

absl::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "info";
}

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

void SetLogService(absl::string_view service) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_service = std::string(service);
}

void SetLogSink(std::function<void(const std::string&)> sink) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_sink = std::move(sink);
}

LogScope::LogScope(LogContext context) : saved_(t_context) {
  if (context.job_id.empty()) context.job_id = saved_.job_id;
  if (context.request_id.empty()) context.request_id = saved_.request_id;
  if (context.tenant.empty()) context.tenant = saved_.tenant;
  t_context = std::move(context);
}
LogScope::~LogScope() { t_context = saved_; }

const LogContext& CurrentLogContext() { return t_context; }

LogMessage::LogMessage(LogLevel level, const char* file, int line)
    : level_(level), file_(file), line_(line) {}

LogMessage& LogMessage::With(absl::string_view key, absl::string_view value) {
  string_fields_[std::string(key)] = std::string(value);
  return *this;
}
LogMessage& LogMessage::With(absl::string_view key, double value) {
  number_fields_[std::string(key)] = value;
  return *this;
}

LogMessage::~LogMessage() {
  nlohmann::json j;
  j["ts"] = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
  j["level"] = std::string(LogLevelName(level_));
  absl::string_view file(file_);
  size_t slash = file.rfind('/');
  if (slash != absl::string_view::npos) file.remove_prefix(slash + 1);
  j["src"] = std::string(file) + ":" + std::to_string(line_);
  j["msg"] = stream_.str();
  if (!t_context.job_id.empty()) j["job_id"] = t_context.job_id;
  if (!t_context.request_id.empty()) j["request_id"] = t_context.request_id;
  if (!t_context.tenant.empty()) j["tenant"] = t_context.tenant;
  for (const auto& [k, v] : string_fields_) j[k] = v;
  for (const auto& [k, v] : number_fields_) j[k] = v;
  std::lock_guard<std::mutex> lock(g_mu);
  j["service"] = g_service;
  std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (g_sink) {
    g_sink(line);
  } else {
    std::cerr << line << '\n' << std::flush;
  }
}

}  // namespace kagent
