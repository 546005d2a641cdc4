// A small leveled logger writing one JSON object per line to stderr (or a sink set by
// tests). Each line carries the time, level, message, source location, the service name
// set once at start, and the job id and request id of the current scope when set.
//
//   KLOG(INFO) << "job submitted";
//   LogScope scope({.job_id = job.id(), .request_id = rid});   // fields for this thread
//   KLOG(WARNING).With("worker", id) << "lease expired";
//
// Thread-safe. The level threshold and the service name are process-wide.
#ifndef KAGENT_COMMON_LOGGING_H_
#define KAGENT_COMMON_LOGGING_H_

#include <functional>
#include <map>
#include <sstream>
#include <string>

#include "absl/strings/string_view.h"

namespace kagent {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Parses "debug", "info", "warning"/"warn", "error" (case-insensitive).
bool ParseLogLevel(absl::string_view text, LogLevel* level);
absl::string_view LogLevelName(LogLevel level);

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
void SetLogService(absl::string_view service);
// Replaces the output (default: stderr). Pass nullptr to restore stderr. For tests.
void SetLogSink(std::function<void(const std::string& line)> sink);

// Fields attached to every log line written by this thread while the scope lives.
struct LogContext {
  std::string job_id;
  std::string request_id;
  std::string tenant;
};

class LogScope {
 public:
  explicit LogScope(LogContext context);
  ~LogScope();
  LogScope(const LogScope&) = delete;
  LogScope& operator=(const LogScope&) = delete;

 private:
  LogContext saved_;
};

const LogContext& CurrentLogContext();

// One log line under construction; written when destroyed.
class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  LogMessage& With(absl::string_view key, absl::string_view value);
  LogMessage& With(absl::string_view key, double value);
  std::ostream& stream() { return stream_; }
  template <typename T>
  LogMessage& operator<<(const T& v) {
    stream_ << v;
    return *this;
  }

 private:
  LogLevel level_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
  std::map<std::string, std::string> string_fields_;
  std::map<std::string, double> number_fields_;
};

// Turns `LogMessage << ...` into a void expression for KLOG's conditional.
struct LogVoidify {
  void operator&(const LogMessage&) {}
};

}  // namespace kagent

#define KAGENT_LOG_LEVEL_DEBUG ::kagent::LogLevel::kDebug
#define KAGENT_LOG_LEVEL_INFO ::kagent::LogLevel::kInfo
#define KAGENT_LOG_LEVEL_WARNING ::kagent::LogLevel::kWarning
#define KAGENT_LOG_LEVEL_ERROR ::kagent::LogLevel::kError

// An expression, so `if (x) KLOG(INFO) << ...; else ...` binds as written.
#define KLOG(level)                                                    \
  (KAGENT_LOG_LEVEL_##level < ::kagent::GetLogLevel())                 \
      ? (void)0                                                        \
      : ::kagent::LogVoidify() &                                       \
            ::kagent::LogMessage(KAGENT_LOG_LEVEL_##level, __FILE__, __LINE__)

#endif  // KAGENT_COMMON_LOGGING_H_
