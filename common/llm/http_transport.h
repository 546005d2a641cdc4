// The HTTP seam: one request (a POST, or a GET for the endpoint probe), one response.
// CurlTransport is the libcurl implementation.
//
// Thread-safety: Post() may be called from many threads at once (each call uses its own
// curl easy handle).
#ifndef KAGENT_COMMON_LLM_HTTP_TRANSPORT_H_
#define KAGENT_COMMON_LLM_HTTP_TRANSPORT_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kagent::llm {

struct HttpRequest {
  // "POST" (with `body`) or "GET" (no body).
  std::string method = "POST";
  std::string url;
  // Header name/value pairs, sent as given. Values may hold secrets: never log them.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Whole-request timeout and connect timeout. Must be positive.
  absl::Duration timeout = absl::Seconds(60);
  absl::Duration connect_timeout = absl::Seconds(10);
};

struct HttpResponse {
  int status = 0;
  // Header names lower-cased; the last value wins for repeated names.
  std::map<std::string, std::string> headers;
  std::string body;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Any HTTP status is a successful transport result. Errors:
  //   DEADLINE_EXCEEDED  the timeout (or connect timeout) expired
  //   UNAVAILABLE        connection refused/reset, nothing received, truncated body
  //   INVALID_ARGUMENT   malformed URL
  //   INTERNAL           the body exceeded the size cap, or anything else libcurl reports
  // Sends `request` with its method (the name is the common case's).
  virtual absl::StatusOr<HttpResponse> Post(const HttpRequest& request) = 0;
};

// libcurl. Follows no redirects; bypasses proxies for loopback hosts (other proxy
// settings come from the usual environment variables). Bodies over `max_body_bytes`
// are refused.
class CurlTransport : public HttpTransport {
 public:
  explicit CurlTransport(size_t max_body_bytes = 64 << 20);
  absl::StatusOr<HttpResponse> Post(const HttpRequest& request) override;

 private:
  const size_t max_body_bytes_;
};

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_HTTP_TRANSPORT_H_
