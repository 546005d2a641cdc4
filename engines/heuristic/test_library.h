// The embedded template library for the heuristic brain's tests.
#ifndef KAGENT_ENGINES_HEURISTIC_TEST_LIBRARY_H_
#define KAGENT_ENGINES_HEURISTIC_TEST_LIBRARY_H_

#include <memory>

#include <catch2/catch.hpp>

#include "engines/heuristic/template_library.h"

namespace kagent::testing {

// TemplateLibrary::Embedded(), REQUIREd to load.
inline std::shared_ptr<const TemplateLibrary> EmbeddedLibrary() {
  auto lib = TemplateLibrary::Embedded();
  REQUIRE(lib.ok());
  return *lib;
}

}  // namespace kagent::testing

#endif  // KAGENT_ENGINES_HEURISTIC_TEST_LIBRARY_H_
