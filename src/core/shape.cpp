#include "osprey/shape.h"

#include <string>

#include "osprey/errors.h"

namespace osprey {

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const int64_t> dims) : rank_(static_cast<int>(dims.size())) {
  if (rank_ <= kInlineRank) {
    for (int i = 0; i < rank_; ++i) inline_[i] = dims[static_cast<std::size_t>(i)];
  } else {
    heap_.assign(dims.begin(), dims.end());
  }
  int64_t elements = 1;
  for (int64_t d : dims) {
    if (d < 0) throw InvalidArgumentError("Shape dimensions must be >= 0, got " + to_string());
    if (__builtin_mul_overflow(elements, d, &elements)) {
      throw InvalidArgumentError("Shape " + to_string() + " has more elements than a tensor can hold (2^63)");
    }
  }
}

int Shape::index_of(int i) const {
  const int j = i < 0 ? i + rank_ : i;
  if (j < 0 || j >= rank_) {
    throw InvalidArgumentError("Dimension index " + std::to_string(i) + " out of range for shape " + to_string());
  }
  return j;
}

int64_t Shape::operator[](int i) const { return data()[index_of(i)]; }

Shape Shape::with_dim(int i, int64_t size) const {
  const int j = index_of(i);
  if (size < 0) throw InvalidArgumentError("Shape dimensions must be >= 0, got " + std::to_string(size));
  Shape out = *this;
  (out.rank_ <= kInlineRank ? out.inline_ : out.heap_.data())[j] = size;
  return Shape(out.dims());  // checked like any shape: the new element count must fit
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims()) n *= d;
  return n;
}

static std::string join_dims(std::span<const int64_t> dims, bool none_first) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += (none_first && i == 0) ? "None" : std::to_string(dims[i]);
  }
  if (dims.size() == 1) s += ",";
  return s + ")";
}

std::string Shape::to_string() const { return join_dims(dims(), false); }
std::string Shape::to_keras_string() const { return join_dims(dims(), true); }

}  // namespace osprey
