#include "common/storage/sql_driver.h"

#include <utility>

#include "common/status.h"

namespace kagent::storage {

SqlParams& SqlParams::Int(int64_t value) {
  values_.push_back(Value{Type::kInt, value, std::string()});
  return *this;
}

SqlParams& SqlParams::Text(absl::string_view value) {
  values_.push_back(Value{Type::kText, 0, std::string(value)});
  return *this;
}

SqlParams& SqlParams::Blob(absl::string_view value) {
  values_.push_back(Value{Type::kBlob, 0, std::string(value)});
  return *this;
}

SqlParams& SqlParams::NullText() {
  values_.push_back(Value{Type::kNullText, 0, std::string()});
  return *this;
}

int64_t SqlRows::Int(int row, int column) const {
  const Cell& cell = rows_[row][column];
  if (cell.null) return 0;
  KAGENT_CHECK(cell.is_integer) << "column " << column << " is not an integer";
  return cell.integer;
}

}  // namespace kagent::storage
