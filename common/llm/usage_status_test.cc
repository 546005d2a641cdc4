// LLM usage beside errors: the absl::Status payload (the gRPC trailer is exercised end to
// end by the optimization manager's tests in engines/llm).
#include "common/llm/usage_status.h"

#include <catch2/catch.hpp>

namespace kagent::llm {
namespace {

v1::LlmUsage Usage(int64_t calls, int64_t in, int64_t out, double cost) {
  v1::LlmUsage u;
  u.set_calls(calls);
  u.set_input_tokens(in);
  u.set_output_tokens(out);
  u.set_cost_usd(cost);
  return u;
}

TEST_CASE("LLM usage rides on an error status", "[usage_status]") {
  absl::Status s = absl::ResourceExhaustedError("budget spent");
  CHECK_FALSE(LlmUsageOf(s).has_value());
  AttachLlmUsage(Usage(3, 300, 60, 0.25), &s);
  std::optional<v1::LlmUsage> u = LlmUsageOf(s);
  REQUIRE(u.has_value());
  CHECK(u->calls() == 3);
  CHECK(u->input_tokens() == 300);
  CHECK(u->output_tokens() == 60);
  CHECK(u->cost_usd() == Approx(0.25));
  CHECK(s.code() == absl::StatusCode::kResourceExhausted);
  CHECK(s.message() == "budget spent");
  // A later attachment replaces the earlier one.
  AttachLlmUsage(Usage(1, 1, 1, 0), &s);
  CHECK(LlmUsageOf(s)->calls() == 1);
}

TEST_CASE("LLM usage is not attached to OK or with nothing used", "[usage_status]") {
  absl::Status ok = absl::OkStatus();
  AttachLlmUsage(Usage(1, 10, 10, 0), &ok);
  CHECK_FALSE(LlmUsageOf(ok).has_value());
  absl::Status err = absl::InternalError("x");
  AttachLlmUsage(v1::LlmUsage(), &err);
  CHECK_FALSE(LlmUsageOf(err).has_value());
  CHECK(IsEmpty(v1::LlmUsage()));
  CHECK_FALSE(IsEmpty(Usage(0, 0, 0, 0.01)));
}

TEST_CASE("LLM usage adds up field by field", "[usage_status]") {
  v1::LlmUsage total = Usage(1, 100, 20, 0.5);
  AddLlmUsage(Usage(2, 50, 5, 0.25), &total);
  CHECK(total.calls() == 3);
  CHECK(total.input_tokens() == 150);
  CHECK(total.output_tokens() == 25);
  CHECK(total.cost_usd() == Approx(0.75));
}

}  // namespace
}  // namespace kagent::llm
