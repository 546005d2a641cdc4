// Record/replay of LLM calls ("cassettes") for reproducible runs.
//
// A cassette is a JSON-lines file; each line is one call:
//   {"version":1,"hash":"<sha256>","request":{...normalized...},
//    "response":{"content":...,"model":...,"stop_reason":...,
//                "usage":{"input_tokens":N,"output_tokens":N}}}
// or, for a call that failed, "error":{"code":"UNAVAILABLE","message":...} in place of
// "response". The normalized request holds only what determines the reply (model,
// system, messages, max_tokens, temperature, with the client's defaults filled in); no
// keys, no job ids, no timeouts. Its hash is the SHA-256 of its compact JSON (sorted keys).
//
// Record mode calls the inner client and appends a line per call (the file is created
// when missing, appended to otherwise: delete it to start afresh). Replay mode never
// contacts the network: it serves the recorded outcome for the request's hash, the
// recorded ones in order when the same request was recorded several times (the last one
// repeats), and NOT_FOUND naming the hash on a miss.
//
// Thread-safe.
#ifndef KAGENT_COMMON_LLM_CASSETTE_H_
#define KAGENT_COMMON_LLM_CASSETTE_H_

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/llm/llm_client.h"
#include "nlohmann/json.hpp"

namespace kagent::llm {

enum class CassetteMode { kOff, kRecord, kReplay };

// "off" (or ""), "record", "replay".
absl::StatusOr<CassetteMode> ParseCassetteMode(absl::string_view text);
absl::string_view CassetteModeName(CassetteMode mode);

// The client defaults that fill in a request's unset fields before it is hashed, so a
// request hashes the same whether it names the default model or leaves it empty.
struct RequestDefaults {
  std::string model{};
  int max_tokens = 0;
  std::optional<double> temperature = std::nullopt;
};

nlohmann::json NormalizeRequest(const ChatRequest& request, const RequestDefaults& defaults);
// SHA-256 hex of NormalizeRequest(...).dump().
std::string RequestHash(const ChatRequest& request, const RequestDefaults& defaults);

class CassetteLlmClient : public LlmClient {
 public:
  // Record mode over `inner`. IO error when `path` cannot be opened for appending.
  static absl::StatusOr<std::unique_ptr<CassetteLlmClient>> Record(
      std::shared_ptr<LlmClient> inner, std::string path, RequestDefaults defaults);
  // Replay mode. NOT_FOUND when `path` does not exist; INVALID_ARGUMENT (with the line
  // number) when a line is not a cassette entry.
  static absl::StatusOr<std::unique_ptr<CassetteLlmClient>> Replay(std::string path,
                                                                   RequestDefaults defaults);
  ~CassetteLlmClient() override;

  absl::StatusOr<ChatResponse> Chat(const ChatRequest& request) override;

  CassetteMode mode() const { return mode_; }
  // Replay: entries loaded. Record: entries written by this client.
  size_t size();

 private:
  struct Entry {
    absl::Status status;  // OK: `response` holds the reply
    ChatResponse response;
  };
  struct Recorded {
    std::vector<Entry> entries;
    size_t next = 0;
  };
  CassetteLlmClient(CassetteMode mode, std::shared_ptr<LlmClient> inner, std::string path,
                    RequestDefaults defaults);

  const CassetteMode mode_;
  const std::shared_ptr<LlmClient> inner_;
  const std::string path_;
  const RequestDefaults defaults_;
  absl::Mutex mu_;
  std::FILE* out_ ABSL_GUARDED_BY(mu_) = nullptr;  // record mode
  size_t written_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, Recorded> replay_ ABSL_GUARDED_BY(mu_);
  size_t loaded_ = 0;
};

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_CASSETTE_H_
