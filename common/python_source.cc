#include "common/python_source.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"

namespace kagent {

std::vector<SourceSpan> CommentsAndStrings(absl::string_view src) {
  std::vector<SourceSpan> out;
  const size_t n = src.size();
  size_t i = 0;
  while (i < n) {
    const char c = src[i];
    if (c == '#') {
      const size_t start = i;
      while (i < n && src[i] != '\n') ++i;
      out.push_back({SourceSpan::kComment, start, i});
      continue;
    }
    if (c == '"' || c == '\'') {
      const bool triple = i + 2 < n && src[i + 1] == c && src[i + 2] == c;
      const size_t start = i;
      i += triple ? 3 : 1;
      while (i < n) {
        if (src[i] == '\\') {
          i += 2;
          continue;
        }
        if (triple) {
          if (i + 2 < n && src[i] == c && src[i + 1] == c && src[i + 2] == c) {
            i += 3;
            break;
          }
        } else if (src[i] == c) {
          ++i;
          break;
        } else if (src[i] == '\n') {  // unterminated: ends before its newline
          break;
        }
        ++i;
      }
      i = std::min(i, n);
      out.push_back({SourceSpan::kString, start, i});
      continue;
    }
    ++i;
  }
  return out;
}

std::string MaskPythonSource(absl::string_view src, bool blank_strings) {
  std::string m(src);
  for (const SourceSpan& span : CommentsAndStrings(src)) {
    if (span.kind == SourceSpan::kString && !blank_strings) continue;
    for (size_t k = span.begin; k < span.end; ++k) {
      if (m[k] != '\n') m[k] = ' ';
    }
  }
  return m;
}

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

size_t MatchBracket(const std::string& mask, size_t open) {
  int depth = 0;
  for (size_t i = open; i < mask.size(); ++i) {
    char c = mask[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') {
      if (--depth == 0) return i;
    }
  }
  return std::string::npos;
}

std::vector<std::pair<size_t, size_t>> SplitTopLevel(const std::string& mask, size_t begin,
                                                     size_t end) {
  std::vector<std::pair<size_t, size_t>> out;
  int depth = 0;
  size_t start = begin;
  for (size_t i = begin; i < end; ++i) {
    char c = mask[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back({start, i});
      start = i + 1;
    }
  }
  out.push_back({start, end});
  return out;
}

bool KeywordArgument(const std::string& mask, size_t b, size_t e, size_t* name_end,
                     size_t* value_begin) {
  size_t q = b;
  while (q < e && IsIdentChar(mask[q])) ++q;
  size_t r = q;
  while (r < e && mask[r] == ' ') ++r;
  if (!(q > b && r < e && mask[r] == '=' && (r + 1 >= e || mask[r + 1] != '='))) return false;
  *name_end = q;
  *value_begin = r + 1;
  return true;
}

void Trim(const std::string& mask, size_t* b, size_t* e) {
  while (*b < *e && std::isspace(static_cast<unsigned char>(mask[*b]))) ++*b;
  while (*e > *b && std::isspace(static_cast<unsigned char>(mask[*e - 1]))) --*e;
}

std::vector<size_t> FindWord(const std::string& mask, absl::string_view word, size_t from) {
  std::vector<size_t> out;
  size_t pos = from;
  while ((pos = mask.find(word.data(), pos, word.size())) != std::string::npos) {
    bool left = pos == 0 || !IsIdentChar(mask[pos - 1]);
    bool right = pos + word.size() >= mask.size() || !IsIdentChar(mask[pos + word.size()]);
    if (left && right) out.push_back(pos);
    pos += word.size();
  }
  return out;
}

size_t FunctionEnd(const std::string& mask, size_t def_offset) {
  size_t pos = mask.find('\n', def_offset);
  while (pos != std::string::npos && pos + 1 < mask.size()) {
    char c = mask[pos + 1];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return pos + 1;
    pos = mask.find('\n', pos + 1);
  }
  return mask.size();
}

Assignment LastAssignment(const std::string& mask, absl::string_view name, size_t limit) {
  Assignment best;
  for (size_t pos : FindWord(mask, name)) {
    if (pos >= limit) break;
    size_t line = mask.rfind('\n', pos);
    line = line == std::string::npos ? 0 : line + 1;
    bool only_space = true;
    for (size_t k = line; k < pos; ++k) only_space &= mask[k] == ' ' || mask[k] == '\t';
    if (!only_space) continue;
    size_t k = pos + name.size();
    while (k < mask.size() && (mask[k] == ' ' || mask[k] == '\t')) ++k;
    if (k + 1 >= mask.size() || mask[k] != '=' || mask[k + 1] == '=') continue;
    size_t b = k + 1;
    size_t e = mask.find('\n', b);
    if (e == std::string::npos) e = mask.size();
    Trim(mask, &b, &e);
    best = {b, e, true};
  }
  return best;
}

std::optional<int64_t> ParseIntLiteral(absl::string_view text) {
  std::string t(absl::StripAsciiWhitespace(text));
  t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
  int64_t v = 0;
  if (t.empty() || !std::all_of(t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return std::nullopt;
  if (!absl::SimpleAtoi(t, &v)) return std::nullopt;
  return v;
}

std::optional<absl::string_view> StringLiteralContent(absl::string_view value) {
  if (value.size() < 2) return std::nullopt;
  const char q = value.front();
  if ((q != '"' && q != '\'') || value.back() != q) return std::nullopt;
  absl::string_view content = value.substr(1, value.size() - 2);
  if (content.find_first_of(std::string{q, '\\', '\n'}) != absl::string_view::npos) {
    return std::nullopt;
  }
  return content;
}

}  // namespace kagent
