// Decoding stored rows into messages, shared by the Storage backends: a row's `data`
// column holds a serialized kagent.v1 message, and bytes that do not parse mean the
// database is corrupt (DATA_LOSS), whichever backend read them.
//
// Pure functions: thread-safe, no state.
#ifndef KAGENT_COMMON_STORAGE_RECORDS_H_
#define KAGENT_COMMON_STORAGE_RECORDS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/storage/storage.h"

namespace kagent::storage {

// Parses `bytes` as a Message. DATA_LOSS naming `what` (e.g. "job event") and the
// message type when they do not parse.
template <typename Message>
absl::StatusOr<Message> ParseStored(const std::string& bytes, absl::string_view what) {
  Message message;
  if (!message.ParseFromString(bytes)) {
    return absl::DataLossError(absl::StrCat("stored ", what, " does not parse as ",
                                            Message::descriptor()->full_name(),
                                            "; the database is corrupt"));
  }
  return message;
}

// A jobs row: its `data` and `revision` columns.
inline absl::StatusOr<StoredJob> ParseStoredJob(const std::string& data, int64_t revision) {
  StoredJob stored;
  absl::StatusOr<v1::Job> job = ParseStored<v1::Job>(data, "job");
  if (!job.ok()) return job.status();
  stored.job = *std::move(job);
  stored.revision = revision;
  return stored;
}

}  // namespace kagent::storage

#endif  // KAGENT_COMMON_STORAGE_RECORDS_H_
