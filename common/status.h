// Status helpers for absl::Status / absl::StatusOr.
//
// Abseil 20220623 ships no status macros; these are the project's. Use them inside
// functions returning absl::Status or absl::StatusOr<T>.
//
//   KAGENT_RETURN_IF_ERROR(DoThing());
//   KAGENT_ASSIGN_OR_RETURN(auto value, ComputeValue());
//   KAGENT_CHECK(ptr != nullptr) << "impossible";   // crashes loudly on broken invariants
#ifndef KAGENT_COMMON_STATUS_H_
#define KAGENT_COMMON_STATUS_H_

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define KAGENT_STATUS_CONCAT_INNER_(a, b) a##b
#define KAGENT_STATUS_CONCAT_(a, b) KAGENT_STATUS_CONCAT_INNER_(a, b)

#define KAGENT_RETURN_IF_ERROR(expr)                  \
  do {                                                \
    ::absl::Status kagent_status_ = (expr);           \
    if (!kagent_status_.ok()) return kagent_status_;  \
  } while (0)

#define KAGENT_ASSIGN_OR_RETURN(lhs, expr) \
  KAGENT_ASSIGN_OR_RETURN_IMPL_(KAGENT_STATUS_CONCAT_(kagent_statusor_, __LINE__), lhs, expr)

#define KAGENT_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

namespace kagent::internal {

// Streams a message, then aborts in its destructor. Used by KAGENT_CHECK.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition) {
    stream_ << file << ":" << line << ": check failed: " << condition << " ";
  }
  [[noreturn]] ~CheckFailure() {
    std::cerr << stream_.str() << std::endl;
    std::abort();
  }
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

}  // namespace kagent::internal

// Crashes with a message when `cond` is false. For impossible states only; bad input
// gets a Status. The switch makes the macro one statement, safe in an unbraced `if`.
#define KAGENT_CHECK(cond)   \
  switch (0)                 \
  case 0:                    \
  default:                   \
    if (cond) {              \
    } else                   \
      ::kagent::internal::CheckFailure(__FILE__, __LINE__, #cond).stream()

#define KAGENT_CHECK_OK(expr)                                                      \
  switch (0)                                                                       \
  case 0:                                                                          \
  default:                                                                         \
    if (::absl::Status kagent_check_status_ = (expr); kagent_check_status_.ok()) { \
    } else                                                                         \
      ::kagent::internal::CheckFailure(__FILE__, __LINE__, #expr).stream()         \
          << kagent_check_status_.ToString()

#endif  // KAGENT_COMMON_STATUS_H_
