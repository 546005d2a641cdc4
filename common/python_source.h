// The project's one lexer of Python source text: where its comments and string literals
// are (CommentsAndStrings), a masked copy with them blanked (MaskPythonSource), and the
// scans that work on a masked copy: matching brackets, splitting at top-level commas,
// finding a word, an assignment or the end of a function. NormalizeSource (source_text.h)
// and the Triton source reader (engines/heuristic/triton_source.h) both lex with it.
//
// It is a lexer, not a parser: string prefixes (r"", f"", b"") are not special (a
// backslash always escapes the next character), and a '#' outside a string literal always
// starts a comment. Offsets are byte offsets into the source given.
//
// Pure functions; thread-safe.
#ifndef KAGENT_COMMON_PYTHON_SOURCE_H_
#define KAGENT_COMMON_PYTHON_SOURCE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace kagent {

// A comment or a string literal of Python source, as [begin, end) offsets.
//  - A comment runs from its '#' to the end of its line, the newline excluded.
//  - A string literal runs from its opening quote through its closing one: '...' and
//    "..." end at the next unescaped same quote or, unterminated, before the end of their
//    line; '''...''' and """...""" at the next unescaped same triple quote, else at the end
//    of the source. A backslash escapes the next character, a newline included (a
//    backslash-newline continues a one-line string).
struct SourceSpan {
  enum Kind { kComment, kString };
  Kind kind = kComment;
  size_t begin = 0;
  size_t end = 0;
};

// The comments and string literals of `source`, in order, not overlapping.
std::vector<SourceSpan> CommentsAndStrings(absl::string_view source);

// `source` with its comments and string literals blanked to spaces (same length, every
// newline kept, those inside string literals too), so brackets and commas can be matched on
// it. With blank_strings false only the comments are blanked: string literals stay, e.g.
// to trim around a literal value.
std::string MaskPythonSource(absl::string_view source, bool blank_strings = true);

// A letter, a digit or '_'.
bool IsIdentChar(char c);

// The offset of the bracket ('(', '[' or '{', any of the three counted alike) closing the
// one at `open` in `mask`, or npos.
size_t MatchBracket(const std::string& mask, size_t open);

// The top-level comma-separated pieces of mask[begin, end) as [b, e) ranges (one piece,
// possibly empty, when there is no top-level comma).
std::vector<std::pair<size_t, size_t>> SplitTopLevel(const std::string& mask, size_t begin,
                                                     size_t end);

// Whether the call argument mask[b, e) (trimmed) is a keyword argument `name = value`
// (spaces around '=' allowed, `==` is no keyword): then *name_end is the end of the name
// and *value_begin the offset just past the '='.
bool KeywordArgument(const std::string& mask, size_t b, size_t e, size_t* name_end,
                     size_t* value_begin);

// Narrows [*b, *e) past the whitespace of `mask` at both ends.
void Trim(const std::string& mask, size_t* b, size_t* e);

// The offsets (from `from` on) of every occurrence of `word` in `mask` at word boundaries.
std::vector<size_t> FindWord(const std::string& mask, absl::string_view word, size_t from = 0);

// The end of the function body whose `def` is at def_offset: the start of the next line
// that begins at column 0 with something other than whitespace (decorators or
// statements), or the end of the mask.
size_t FunctionEnd(const std::string& mask, size_t def_offset);

// The right-hand side of the last `name = <rhs>` statement (at the start of its line,
// not `==`) that starts before `limit`: [rhs_begin, rhs_end) trimmed, up to the end of
// its line.
struct Assignment {
  size_t rhs_begin = 0, rhs_end = 0;
  bool found = false;
};
Assignment LastAssignment(const std::string& mask, absl::string_view name, size_t limit);

// A decimal integer literal (digits and '_', surrounding whitespace allowed), or nullopt.
std::optional<int64_t> ParseIntLiteral(absl::string_view text);

// The content of a one-line quoted string literal ('...' or "..." without escapes or
// prefixes), or nullopt.
std::optional<absl::string_view> StringLiteralContent(absl::string_view value);

}  // namespace kagent

#endif  // KAGENT_COMMON_PYTHON_SOURCE_H_
