#include "common/source_text.h"

#include "absl/strings/string_view.h"
#include "common/python_source.h"

namespace kagent {

std::string NormalizeSource(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  std::string line;
  bool pending_space = false;  // whitespace seen outside strings since the last token
  auto put = [&](absl::string_view text) {
    if (pending_space && !line.empty()) line.push_back(' ');
    pending_space = false;
    line.append(text.data(), text.size());
  };
  auto flush = [&]() {
    if (!line.empty()) {
      out += line;
      out.push_back('\n');
    }
    line.clear();
    pending_space = false;
  };
  // Code up to `end`: newlines end lines, whitespace runs become one space.
  size_t i = 0;
  auto code = [&](size_t end) {
    for (; i < end; ++i) {
      const char c = source[i];
      if (c == '\n') {
        flush();
      } else if (c == ' ' || c == '\t' || c == '\r') {
        pending_space = true;
      } else {
        put(absl::string_view(&source[i], 1));
      }
    }
  };
  for (const SourceSpan& span : CommentsAndStrings(source)) {
    code(span.begin);
    // A comment is dropped; a string literal is copied verbatim.
    if (span.kind == SourceSpan::kString) {
      put(absl::string_view(source).substr(span.begin, span.end - span.begin));
    }
    i = span.end;
  }
  code(source.size());
  flush();
  return out;
}

}  // namespace kagent
