// The Python source lexer: spans, masks and the scans on a mask.
#include "common/python_source.h"

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

namespace kagent {
namespace {

std::vector<std::string> Spans(const std::string& src) {
  std::vector<std::string> out;
  for (const SourceSpan& s : CommentsAndStrings(src)) {
    out.push_back(std::string(s.kind == SourceSpan::kComment ? "C:" : "S:") +
                  src.substr(s.begin, s.end - s.begin));
  }
  return out;
}

TEST_CASE("Python source: comments and string literals") {
  using V = std::vector<std::string>;
  CHECK(Spans("x = 1  # a 'c'\ny = \"# no\"\n") == V{"C:# a 'c'", "S:\"# no\""});
  CHECK(Spans("s = 'it\\'s'") == V{"S:'it\\'s'"});
  CHECK(Spans("s = \"a\\\\\" # c") == V{"S:\"a\\\\\"", "C:# c"});
  CHECK(Spans("d = '''a ' b\n# c'''  # d") == V{"S:'''a ' b\n# c'''", "C:# d"});
  CHECK(Spans("x = '' + \"\"") == V{"S:''", "S:\"\""});
  // Unterminated: a one-line string ends before its newline, a triple-quoted one at the
  // end; a backslash-newline continues a one-line string.
  CHECK(Spans("s = 'abc\nx = 1 # c") == V{"S:'abc", "C:# c"});
  CHECK(Spans("s = \"\"\"abc\n# c") == V{"S:\"\"\"abc\n# c"});
  CHECK(Spans("s = 'a\\\nb' #") == V{"S:'a\\\nb'", "C:#"});
  CHECK(Spans("s = 'abc\\") == V{"S:'abc\\"});
  CHECK(Spans("no comment") == V{});
}

TEST_CASE("Python source: masks keep length and newlines") {
  const std::string src = "f(a, 'x, (y') # z)\ng = \"\"\"1\n2\"\"\"\n";
  const std::string sp4(4, ' ');
  CHECK(MaskPythonSource(src) == "f(a, " + std::string(7, ' ') + ") " + sp4 + "\ng = " + sp4 +
                                     "\n" + sp4 + "\n");
  CHECK(MaskPythonSource(src, /*blank_strings=*/false) ==
        "f(a, 'x, (y') " + sp4 + "\ng = \"\"\"1\n2\"\"\"\n");
}

TEST_CASE("Python source: brackets, top-level pieces, words") {
  const std::string m = MaskPythonSource("k[(a, b)](x, f(y, z), w=[1, 2])  # (\n");
  CHECK(MatchBracket(m, 1) == 8);
  CHECK(MatchBracket(m, 9) == 30);
  CHECK(MatchBracket("f(a", 1) == std::string::npos);
  auto pieces = SplitTopLevel(m, 10, 30);
  REQUIRE(pieces.size() == 3);
  CHECK(m.substr(pieces[1].first, pieces[1].second - pieces[1].first) == " f(y, z)");
  size_t b = pieces[1].first, e = pieces[1].second;
  Trim(m, &b, &e);
  CHECK(m.substr(b, e - b) == "f(y, z)");
  CHECK(SplitTopLevel(m, 10, 10) == std::vector<std::pair<size_t, size_t>>{{10, 10}});
  CHECK(FindWord("BLOCK BLOCK_M xBLOCK BLOCK", "BLOCK") == std::vector<size_t>{0, 21});
  CHECK(FindWord("BLOCK BLOCK_M xBLOCK BLOCK", "BLOCK", 1) == std::vector<size_t>{21});
  size_t name_end = 0, value_begin = 0;
  const std::string args = "BLOCK_M =32, x == 1, 2, =3";
  REQUIRE(KeywordArgument(args, 0, 11, &name_end, &value_begin));
  CHECK(name_end == 7);
  CHECK(value_begin == 9);
  CHECK_FALSE(KeywordArgument(args, 13, 19, &name_end, &value_begin));
  CHECK_FALSE(KeywordArgument(args, 21, 22, &name_end, &value_begin));
  CHECK_FALSE(KeywordArgument(args, 24, 26, &name_end, &value_begin));
  CHECK(IsIdentChar('_'));
  CHECK(IsIdentChar('9'));
  CHECK_FALSE(IsIdentChar('.'));
}

TEST_CASE("Python source: function ends and assignments") {
  const std::string m =
      "def f(x):\n    y = 1\n\n    return y\n@jit\ndef g():\n    pass\n";
  CHECK(FunctionEnd(m, 0) == m.find("@jit"));
  CHECK(FunctionEnd(m, m.find("def g")) == m.size());
  const std::string a = "B = 32\nif B == 4:\n    B = min(64, n)\nx = f(B)\nB = 8\n";
  Assignment last = LastAssignment(a, "B", a.find("x = f"));
  REQUIRE(last.found);
  CHECK(a.substr(last.rhs_begin, last.rhs_end - last.rhs_begin) == "min(64, n)");
  CHECK_FALSE(LastAssignment(a, "B", 0).found);
  CHECK_FALSE(LastAssignment(a, "x", 0).found);
}

TEST_CASE("Python source: integer and string literals") {
  CHECK(ParseIntLiteral(" 1_024 ") == 1024);
  CHECK_FALSE(ParseIntLiteral("0x10").has_value());
  CHECK_FALSE(ParseIntLiteral("-1").has_value());
  CHECK_FALSE(ParseIntLiteral("").has_value());
  CHECK(StringLiteralContent("\"ieee\"") == "ieee");
  CHECK(StringLiteralContent("''") == "");
  CHECK_FALSE(StringLiteralContent("'a\\'b'").has_value());
  CHECK_FALSE(StringLiteralContent("'ieee\"").has_value());
  CHECK_FALSE(StringLiteralContent("ieee").has_value());
}

}  // namespace
}  // namespace kagent
