// keras::ops::einsum for one or two operands: labels summed out where only one operand has them, the rest as one
// batched matmul (batch labels, the first operand's free labels, the contracted ones, the second's free labels).
#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"

namespace osprey::keras::ops {

namespace core = osprey::ops;

namespace {

struct Operand {
  std::string labels;
  Tensor t;
};

[[noreturn]] void bad(const std::string& subscripts, const std::string& why) {
  throw InvalidArgumentError(fmt::format("einsum('{}'): {}", subscripts, why));
}

// x's axes summed where its label is not in `keep`, and the label dropped.
Operand sum_out(Operand x, const std::string& keep) {
  std::vector<int> axes;
  std::string rest;
  for (std::size_t i = 0; i < x.labels.size(); ++i) {
    if (keep.find(x.labels[i]) == std::string::npos) axes.push_back(static_cast<int>(i));
    else rest += x.labels[i];
  }
  if (axes.empty()) return x;
  return {rest, core::reduce_axes(x.t, core::ReduceOp::sum, axes, false)};
}

// x's axes put in the order of `order` (a permutation of its labels).
Tensor arranged(const Operand& x, const std::string& order) {
  std::vector<int> perm;
  bool identity = true;
  for (std::size_t i = 0; i < order.size(); ++i) {
    perm.push_back(static_cast<int>(x.labels.find(order[i])));
    identity = identity && perm.back() == static_cast<int>(i);
  }
  return identity ? x.t : core::transpose(x.t, perm);
}

int64_t extent(const std::map<char, int64_t>& size, const std::string& labels) {
  int64_t p = 1;
  for (char c : labels) p *= size.at(c);
  return p;
}

}  // namespace

Tensor einsum(const std::string& subscripts, const std::vector<Tensor>& operands) {
  std::string spec;
  for (char c : subscripts) {
    if (c != ' ') spec += c;
  }
  if (spec.find("...") != std::string::npos) bad(subscripts, "ellipses are not supported");
  const auto arrow = spec.find("->");
  const std::string lhs = spec.substr(0, arrow);
  std::vector<std::string> inputs;
  for (std::size_t at = 0;;) {
    const auto comma = lhs.find(',', at);
    inputs.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (inputs.size() != operands.size()) {
    bad(subscripts, fmt::format("{} operand subscripts for {} operands", inputs.size(), operands.size()));
  }
  if (inputs.size() < 1 || inputs.size() > 2) bad(subscripts, "one or two operands are supported");
  std::map<char, int64_t> size;
  std::map<char, int> count;
  for (std::size_t o = 0; o < inputs.size(); ++o) {
    const std::string& in = inputs[o];
    if (static_cast<int>(in.size()) != operands[o].shape().rank()) {
      bad(subscripts, fmt::format("operand {} has rank {} but {} subscripts", o, operands[o].shape().rank(), in.size()));
    }
    for (std::size_t i = 0; i < in.size(); ++i) {
      const char c = in[i];
      if (!std::isalpha(static_cast<unsigned char>(c))) bad(subscripts, fmt::format("'{}' is not a label", c));
      if (in.find(c) != i) bad(subscripts, fmt::format("label '{}' repeats within operand {} (diagonals are not supported)", c, o));
      const int64_t d = operands[o].shape()[static_cast<int>(i)];
      auto [it, fresh] = size.emplace(c, d);
      if (!fresh && it->second != d) {
        bad(subscripts, fmt::format("label '{}' is {} in one operand and {} in another", c, it->second, d));
      }
      ++count[c];
    }
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = spec.substr(arrow + 2);
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (!size.count(out[i])) bad(subscripts, fmt::format("output label '{}' is in no operand", out[i]));
      if (out.find(out[i]) != i) bad(subscripts, fmt::format("output label '{}' repeats", out[i]));
    }
  } else {
    for (const auto& [c, n] : count) {
      if (n == 1) out += c;  // NumPy's implicit output: the labels seen once, in alphabetical order
    }
  }

  if (inputs.size() == 1) {
    const Operand x = sum_out({inputs[0], operands[0]}, out);
    return arranged(x, out);
  }
  // Labels only one operand has and the output lacks are summed out first.
  Operand a = sum_out({inputs[0], operands[0]}, out + inputs[1]);
  Operand b = sum_out({inputs[1], operands[1]}, out + inputs[0]);
  std::string batch, free_a, free_b, contracted;
  for (char c : a.labels) {
    const bool in_b = b.labels.find(c) != std::string::npos, in_out = out.find(c) != std::string::npos;
    if (in_b && in_out) batch += c;
    else if (in_b) contracted += c;
    else free_a += c;
  }
  for (char c : b.labels) {
    if (a.labels.find(c) == std::string::npos) free_b += c;
  }
  const int64_t nb = extent(size, batch), m = extent(size, free_a), k = extent(size, contracted),
                n = extent(size, free_b);
  const DType t = a.t.dtype();
  Tensor ta = arranged(a, batch + free_a + contracted), tb = arranged(b, batch + contracted + free_b);
  if (ta.dtype() != DType::float32) ta = core::cast(ta, DType::float32);
  if (tb.dtype() != DType::float32) tb = core::cast(tb, DType::float32);
  Tensor product = core::matmul(core::reshape(ta, {nb, m, k}), core::reshape(tb, {nb, k, n}));
  const std::string labels = batch + free_a + free_b;
  std::vector<int64_t> dims;
  for (char c : labels) dims.push_back(size.at(c));
  Tensor result = arranged({labels, core::reshape(product, Shape(dims))}, out);
  return t == DType::float32 ? result : core::cast(result, t);
}

}  // namespace osprey::keras::ops
