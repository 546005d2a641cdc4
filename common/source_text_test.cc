// NormalizeSource on tricky inputs: the optimization manager's and the coordinator's
// duplicate detection compare its results, so they are pinned exactly.
#include "common/source_text.h"

#include <catch2/catch.hpp>

#include <string>

namespace kagent {
namespace {

TEST_CASE("NormalizeSource: comments, blank lines and whitespace runs go, code stays") {
  CHECK(NormalizeSource("x  =  1   # c\n\n\ny = '#  k'\n") == "x = 1\ny = '#  k'\n");
  // Indentation, trailing whitespace, tabs and carriage returns are whitespace runs.
  CHECK(NormalizeSource("def f():\n    return  1  \n") == "def f():\nreturn 1\n");
  CHECK(NormalizeSource("a\t\tb\r\nc") == "a b\nc\n");
  CHECK(NormalizeSource("f ( a , b )") == "f ( a , b )\n");
  CHECK(NormalizeSource("# only a comment\n   \n") == "");
  CHECK(NormalizeSource("") == "");
  CHECK(NormalizeSource("x = \"a\"#c\ny") == "x = \"a\"\ny\n");
}

TEST_CASE("NormalizeSource: string literals are copied verbatim") {
  // '#' inside a string is no comment; a comment after the string goes.
  CHECK(NormalizeSource("s = \"a # not a comment\"  # real\n") ==
        "s = \"a # not a comment\"\n");
  CHECK(NormalizeSource("s = \"a   b\"\n") == "s = \"a   b\"\n");
  CHECK(NormalizeSource("y = '#  k'\n") != NormalizeSource("y = '# k'\n"));
  CHECK(NormalizeSource("x = '' + \"\"  # c\n") == "x = '' + \"\"\n");
  // Escapes: an escaped quote does not end the string, an escaped backslash does not
  // escape the quote after it.
  CHECK(NormalizeSource("s = 'it\\'s # x'  # c\n") == "s = 'it\\'s # x'\n");
  CHECK(NormalizeSource("s = \"a\\\\\"  # c\n") == "s = \"a\\\\\"\n");
  // A backslash-newline inside a one-line string continues it.
  CHECK(NormalizeSource("s = 'a\\\n  b'  # c\n") == "s = 'a\\\n  b'\n");
  // A backslash at the very end of the source.
  CHECK(NormalizeSource("s = 'abc\\") == "s = 'abc\\\n");
}

TEST_CASE("NormalizeSource: triple-quoted strings keep their lines, quotes and comments") {
  CHECK(NormalizeSource("\"\"\"doc\n\n  # kept\n  x\"\"\"\nx = 1  # c\n") ==
        "\"\"\"doc\n\n  # kept\n  x\"\"\"\nx = 1\n");
  CHECK(NormalizeSource("s = '''a ' b '' c'''  # c\n") == "s = '''a ' b '' c'''\n");
  CHECK(NormalizeSource("s = \"\"\"a \\\"\"\" b\"\"\"\n") == "s = \"\"\"a \\\"\"\" b\"\"\"\n");
  // Unterminated: runs to the end of the source.
  CHECK(NormalizeSource("s = '''a\n  # b\n") == "s = '''a\n  # b\n\n");
}

TEST_CASE("NormalizeSource: an unterminated one-line string ends at its line") {
  CHECK(NormalizeSource("s = 'abc\nx  =  1 # c\n") == "s = 'abc\nx = 1\n");
  CHECK(NormalizeSource("s = \"abc   # d\n") == "s = \"abc   # d\n");
}

}  // namespace
}  // namespace kagent
