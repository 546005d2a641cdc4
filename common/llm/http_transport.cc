#include "common/llm/http_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace kagent::llm {
namespace {

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Exchange {
  HttpResponse* response;
  size_t max_body_bytes;
  bool overflow = false;
};

size_t WriteBody(char* data, size_t size, size_t nmemb, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t n = size * nmemb;
  if (ex->response->body.size() + n > ex->max_body_bytes) {
    ex->overflow = true;
    return 0;  // aborts the transfer with CURLE_WRITE_ERROR
  }
  ex->response->body.append(data, n);
  return n;
}

size_t WriteHeader(char* data, size_t size, size_t nmemb, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t n = size * nmemb;
  absl::string_view line(data, n);
  if (absl::StartsWith(line, "HTTP/")) {
    // A new status line (e.g. after "100 Continue"): start the header set afresh.
    ex->response->headers.clear();
    return n;
  }
  const size_t colon = line.find(':');
  if (colon != absl::string_view::npos) {
    std::string name = absl::AsciiStrToLower(absl::StripAsciiWhitespace(line.substr(0, colon)));
    ex->response->headers[name] =
        std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  }
  return n;
}

// Loopback never goes through a proxy; other NO_PROXY entries are kept.
std::string NoProxyList() {
  std::string list = "localhost,127.0.0.1,::1";
  for (const char* var : {"NO_PROXY", "no_proxy"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') {
      absl::StrAppend(&list, ",", v);
      break;
    }
  }
  return list;
}

long ToMillis(absl::Duration d) {
  return static_cast<long>(std::max<int64_t>(1, absl::ToInt64Milliseconds(d)));
}

}  // namespace

CurlTransport::CurlTransport(size_t max_body_bytes) : max_body_bytes_(max_body_bytes) {
  GlobalInitOnce();
}

absl::StatusOr<HttpResponse> CurlTransport::Post(const HttpRequest& request) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(),
                                                           &curl_easy_cleanup);
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");

  curl_slist* raw_headers = nullptr;
  for (const auto& [name, value] : request.headers) {
    raw_headers = curl_slist_append(raw_headers, absl::StrCat(name, ": ", value).c_str());
  }
  // No "Expect: 100-continue" round trip for large bodies.
  raw_headers = curl_slist_append(raw_headers, "Expect:");
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(raw_headers,
                                                                      &curl_slist_free_all);
  HttpResponse response;
  Exchange ex{&response, max_body_bytes_};
  char errbuf[CURL_ERROR_SIZE] = {0};
  const std::string no_proxy = NoProxyList();

  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
  if (request.method == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else if (request.method == "POST") {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unsupported HTTP method ", request.method));
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ToMillis(request.timeout));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   ToMillis(std::min(request.connect_timeout, request.timeout)));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_NOPROXY, no_proxy.c_str());
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &WriteBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &ex);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &WriteHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &ex);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);

  const CURLcode rc = curl_easy_perform(h);
  if (rc != CURLE_OK) {
    // The URL may carry credentials in theory; report only the host-free curl message.
    const std::string detail =
        absl::StrCat(curl_easy_strerror(rc), errbuf[0] != '\0' ? ": " : "", errbuf);
    switch (rc) {
      case CURLE_OPERATION_TIMEDOUT:
        return absl::DeadlineExceededError(absl::StrCat("HTTP request timed out: ", detail));
      case CURLE_COULDNT_CONNECT:
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_RESOLVE_PROXY:
      case CURLE_SEND_ERROR:
      case CURLE_RECV_ERROR:
      case CURLE_GOT_NOTHING:
      case CURLE_PARTIAL_FILE:
      case CURLE_SSL_CONNECT_ERROR:
      case CURLE_HTTP2:
      case CURLE_HTTP2_STREAM:
        return absl::UnavailableError(absl::StrCat("HTTP transport failed: ", detail));
      case CURLE_URL_MALFORMAT:
      case CURLE_UNSUPPORTED_PROTOCOL:
        return absl::InvalidArgumentError(absl::StrCat("bad provider URL: ", detail));
      case CURLE_WRITE_ERROR:
        if (ex.overflow) {
          return absl::InternalError(
              absl::StrCat("HTTP response body exceeds ", max_body_bytes_, " bytes"));
        }
        return absl::InternalError(absl::StrCat("HTTP transport failed: ", detail));
      default:
        return absl::InternalError(absl::StrCat("HTTP transport failed: ", detail));
    }
  }
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  response.status = static_cast<int>(status);
  return response;
}

}  // namespace kagent::llm
