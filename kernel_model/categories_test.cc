#include "kernel_model/categories.h"

#include <catch2/catch.hpp>

namespace kagent {
namespace {

TEST_CASE("category names round-trip", "[categories]") {
  for (int c = 1; c <= 7; ++c) {
    auto category = static_cast<kagent::v1::BottleneckCategory>(c);
    auto parsed = ParseCategoryName(CategoryName(category));
    REQUIRE(parsed.has_value());
    CHECK(*parsed == category);
  }
  CHECK(!ParseCategoryName("fast").has_value());
}

}  // namespace
}  // namespace kagent
