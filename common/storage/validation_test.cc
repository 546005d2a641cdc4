#include "common/storage/validation.h"

#include <catch2/catch.hpp>

#include <string>

#include "absl/strings/match.h"

namespace kagent::storage {
namespace {

bool Invalid(const absl::Status& status, absl::string_view needle) {
  return status.code() == absl::StatusCode::kInvalidArgument &&
         absl::StrContains(status.message(), needle);
}

TEST_CASE("validation: identifiers", "[storage][validation]") {
  CHECK(ValidateIdentifier("job.id", "job-1_a.b:c").ok());
  CHECK(ValidateIdentifier("job.id", std::string(kMaxStorageIdBytes, 'x')).ok());
  CHECK(Invalid(ValidateIdentifier("job.id", ""), "job.id is required"));
  CHECK(Invalid(ValidateIdentifier("job.id", std::string(kMaxStorageIdBytes + 1, 'x')),
                "129 bytes; the limit is 128"));
  CHECK(Invalid(ValidateIdentifier("job.id", "a b"), "0x20 at offset 1"));
  CHECK(Invalid(ValidateIdentifier("job.id", "caf\xc3\xa9"), "0xc3 at offset 3"));
  CHECK(Invalid(ValidateIdentifier("x", std::string("a\0b", 3)), "0x00"));
}

TEST_CASE("validation: names are UTF-8 without control characters", "[storage][validation]") {
  CHECK(ValidateName("artifact.name", "round-1/r\xc3\xa9sum\xc3\xa9 \xf0\x9f\x9a\x80.txt", 512).ok());
  CHECK(Invalid(ValidateName("artifact.name", "", 512), "required"));
  CHECK(Invalid(ValidateName("artifact.name", "a\tb", 512), "control byte 0x09"));
  CHECK(Invalid(ValidateName("artifact.name", "a\x7f", 512), "control byte 0x7f"));
  CHECK(Invalid(ValidateName("artifact.name", "abc", 2), "the limit is 2"));
  // Ill-formed UTF-8: a lone continuation byte, a truncated sequence, an overlong form,
  // a surrogate, a code point past U+10FFFF, and 0xff.
  for (const char* bad : {"a\x80", "a\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                          "\xff", "\xe2\x82"}) {
    INFO(bad);
    CHECK(Invalid(ValidateName("artifact.name", bad, 512), "not valid UTF-8"));
  }
  CHECK(ValidateUtf8("x", "\xf4\x8f\xbf\xbf").ok());  // U+10FFFF
  CHECK(ValidateUtf8("x", "\xed\x9f\xbf").ok());      // U+D7FF
}

TEST_CASE("validation: sizes and limits", "[storage][validation]") {
  CHECK(ValidateSize("artifact", 10, 10).ok());
  absl::Status over = ValidateSize("artifact \"a\" content", 11, 10);
  CHECK(over.code() == absl::StatusCode::kResourceExhausted);
  CHECK(absl::StrContains(over.message(), "artifact \"a\" content is 11 bytes; the limit is 10"));
  CHECK(*NormalizeLimit("limit", 0, 50, 500) == 50);
  CHECK(*NormalizeLimit("limit", 500, 50, 500) == 500);
  CHECK(Invalid(NormalizeLimit("limit", 501, 50, 500).status(), "limit is 501; use 1..500"));
  CHECK(Invalid(NormalizeLimit("limit", -1, 50, 500).status(), "limit is -1"));
}

TEST_CASE("validation: page tokens are bound to their query", "[storage][validation]") {
  ListJobsQuery query{.tenant = "tenant|with|bars", .state = v1::JOB_STATE_DONE, .page_size = 5};
  query.page_token = EncodeJobPageToken(query, 1234);
  CHECK(*DecodeJobPageToken(query) == 1234);
  CHECK(*ValidateListJobsQuery(query) == 5);

  ListJobsQuery other_tenant = query;
  other_tenant.tenant = "tenant";
  CHECK(Invalid(DecodeJobPageToken(other_tenant).status(), "different tenant or state"));
  ListJobsQuery other_state = query;
  other_state.state = v1::JOB_STATE_QUEUED;
  CHECK(Invalid(DecodeJobPageToken(other_state).status(), "different tenant or state"));
  ListJobsQuery garbage = query;
  garbage.page_token = "%%%";
  CHECK(Invalid(DecodeJobPageToken(garbage).status(), "page_token"));
  garbage.page_token = "";
  CHECK(ValidateListJobsQuery(garbage).ok());
}

TEST_CASE("validation: error messages quote values safely and briefly", "[storage][validation]") {
  CHECK(QuoteValue("a\nb") == "\"a\\nb\"");
  const std::string quoted = QuoteValue(std::string(1000, 'z'));
  CHECK(quoted.size() < 100);
  CHECK(absl::StrContains(quoted, "(1000 bytes)"));
  CHECK(JobNotFound("job-9").code() == absl::StatusCode::kNotFound);
  CHECK(absl::StrContains(JobNotFound("job-9").message(), "\"job-9\" not found"));
}

}  // namespace
}  // namespace kagent::storage
