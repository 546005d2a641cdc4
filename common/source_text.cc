#include "common/source_text.h"

#include "absl/strings/string_view.h"

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
  const size_t n = source.size();
  size_t i = 0;
  char quote = 0;
  bool triple = false;
  while (i < n) {
    char c = source[i];
    if (quote == 0) {
      if (c == '#') {
        while (i < n && source[i] != '\n') ++i;
        continue;
      }
      if (c == '\n') {
        flush();
        ++i;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        pending_space = true;
        ++i;
        continue;
      }
      if (c == '"' || c == '\'') {
        quote = c;
        triple = i + 2 < n && source[i + 1] == c && source[i + 2] == c;
        put(absl::string_view(source).substr(i, triple ? 3 : 1));
        i += triple ? 3 : 1;
        continue;
      }
      put(absl::string_view(&source[i], 1));
      ++i;
      continue;
    }
    // Inside a string: copied verbatim.
    if (c == '\\' && i + 1 < n) {
      line.append(source, i, 2);
      i += 2;
      continue;
    }
    if (c == quote && (!triple || (i + 2 < n && source[i + 1] == c && source[i + 2] == c))) {
      line.append(source, i, triple ? 3 : 1);
      i += triple ? 3 : 1;
      quote = 0;
      continue;
    }
    if (c == '\n' && !triple) {  // unterminated: end at the line
      quote = 0;
      flush();
      ++i;
      continue;
    }
    line.push_back(c);
    ++i;
  }
  flush();
  return out;
}

}  // namespace kagent
