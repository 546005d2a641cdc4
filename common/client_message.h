// Statuses whose message carries server-only detail.
//
// Some errors are worth logging in full but must not reach a client as they are: a
// storage failure names the database file or the PostgreSQL server. Such a status keeps
// its full message (for the log) and carries, as a payload, the message a client may see
// instead. ToGrpcStatus (common/grpc_status.h), the one place where statuses leave for a
// client, answers with that message and logs the full one; code that copies a status's
// message into something a client reads (a job's error, an event) uses ClientMessage().
//
// Payloads survive copying a status, not building a new one from its message: wrap with
// WithClientMessage again when rewording such a status.
//
// Pure functions: thread-safe.
#ifndef KAGENT_COMMON_CLIENT_MESSAGE_H_
#define KAGENT_COMMON_CLIENT_MESSAGE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace kagent {

// `status` (not OK) with `client_message` as what a client may see of it. OK stays OK.
absl::Status WithClientMessage(absl::Status status, absl::string_view client_message);

// True when `status` carries a client message (WithClientMessage).
bool HasClientMessage(const absl::Status& status);

// What a client may see of `status`'s message: its client message when it has one, else
// its message.
std::string ClientMessage(const absl::Status& status);

}  // namespace kagent

#endif  // KAGENT_COMMON_CLIENT_MESSAGE_H_
