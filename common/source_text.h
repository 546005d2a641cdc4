// Source text helpers shared by the optimization manager (duplicate kernels in one round)
// and the coordinator (distinct kernels in the beam).
#ifndef KAGENT_COMMON_SOURCE_TEXT_H_
#define KAGENT_COMMON_SOURCE_TEXT_H_

#include <string>

namespace kagent {

// Removes comments, blank lines, trailing whitespace and collapses whitespace runs
// outside string literals (both as python_source.h lexes them; a string literal is kept
// verbatim): two sources equal after this are the same kernel.
std::string NormalizeSource(const std::string& source);

}  // namespace kagent

#endif  // KAGENT_COMMON_SOURCE_TEXT_H_
