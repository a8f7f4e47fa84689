#include "osprey/shape.h"

#include <string>

#include "osprey/errors.h"

namespace osprey {

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::vector<int64_t>(dims)) {}

Shape::Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {
  for (int64_t d : dims_) {
    if (d < 0) throw InvalidArgumentError("Shape dimensions must be >= 0, got " + to_string());
  }
}

int64_t Shape::operator[](int i) const {
  int r = rank();
  int j = i < 0 ? i + r : i;
  if (j < 0 || j >= r) {
    throw InvalidArgumentError("Dimension index " + std::to_string(i) + " out of range for shape " + to_string());
  }
  return dims_[j];
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

static std::string join_dims(const std::vector<int64_t>& dims, bool none_first) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += (none_first && i == 0) ? "None" : std::to_string(dims[i]);
  }
  if (dims.size() == 1) s += ",";
  return s + ")";
}

std::string Shape::to_string() const { return join_dims(dims_, false); }
std::string Shape::to_keras_string() const { return join_dims(dims_, true); }

}  // namespace osprey
