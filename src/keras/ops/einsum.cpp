// keras::ops::einsum over any number of operands: an ellipsis becomes fresh labels (its axes broadcast between the
// operands, as TensorFlow's), a label repeated within an operand takes the diagonal, labels summed out where only
// one operand has them and nothing later needs them; two operands are one batched matmul (batch labels, the first
// operand's free labels, the contracted ones, the second's free labels), more are contracted pairwise from the left
// (NumPy's order without `optimize`).
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

// x's diagonal over each label it repeats (NumPy's "ii->i", "iij->ij"): x times an identity over the two axes,
// summed over the second, so that the gradient is the same ops'.
Operand diagonal(Operand x) {
  for (std::size_t q = 1; q < x.labels.size(); ++q) {
    const auto p = x.labels.find(x.labels[q]);
    if (p == q) continue;
    const int64_t d = x.t.shape()[static_cast<int>(q)];
    std::vector<int64_t> dims(x.labels.size(), 1);
    dims[p] = dims[q] = d;
    std::vector<float> eye(static_cast<std::size_t>(d * d), 0.0f);
    for (int64_t i = 0; i < d; ++i) eye[static_cast<std::size_t>(i * d + i)] = 1.0f;
    Tensor mask = Tensor::from_vector(eye, Shape(dims));
    if (x.t.dtype() != DType::float32) mask = core::cast(mask, x.t.dtype());
    x.t = core::reduce_axes(core::mul(x.t, mask), core::ReduceOp::sum, {static_cast<int>(q)}, false);
    x.labels.erase(q, 1);
    --q;
  }
  return x;
}

int64_t extent(const std::map<char, int64_t>& size, const std::string& labels) {
  int64_t p = 1;
  for (char c : labels) p *= size.at(c);
  return p;
}

// a and b contracted, keeping the labels in `keep` (the output's and the later operands'): the labels both have
// and `keep` lacks are summed over in one batched matmul. The result's labels: the shared kept ones, a's own, b's
// own.
Operand contract(Operand a, Operand b, const std::string& keep, const std::map<char, int64_t>& size) {
  a = sum_out(std::move(a), keep + b.labels);  // labels only one operand has and nothing later needs
  b = sum_out(std::move(b), keep + a.labels);
  std::string batch, free_a, free_b, contracted;
  for (char c : a.labels) {
    const bool in_b = b.labels.find(c) != std::string::npos, kept = keep.find(c) != std::string::npos;
    if (in_b && kept) batch += c;
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
  product = core::reshape(product, Shape(dims));
  return {labels, t == DType::float32 ? product : core::cast(product, t)};
}

}  // namespace

Tensor einsum(const std::string& subscripts, const std::vector<Tensor>& operands) {
  std::string spec;
  for (char c : subscripts) {
    if (c != ' ') spec += c;
  }
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
  if (inputs.empty() || operands.empty()) bad(subscripts, "no operands");
  // An ellipsis stands for the axes the labels do not name: they become fresh labels, the last ones of a shorter
  // ellipsis lined up with the last ones of a longer one (broadcasting, right-aligned).
  const auto ellipsis_at = [&](const std::string& s, const std::string& what) {
    const auto e = s.find("...");
    if (e != std::string::npos && s.find("...", e + 1) != std::string::npos) {
      bad(subscripts, fmt::format("{} has more than one ellipsis", what));
    }
    if (s.find('.') != e || (e != std::string::npos && s.find('.', e + 3) != std::string::npos)) {
      bad(subscripts, fmt::format("{} has a '.' outside an ellipsis", what));
    }
    return e;
  };
  std::vector<int> ellipsis_rank(inputs.size(), 0);
  int widest = 0;
  for (std::size_t o = 0; o < inputs.size(); ++o) {
    const auto e = ellipsis_at(inputs[o], fmt::format("operand {}", o));
    if (e == std::string::npos) continue;
    const int named = static_cast<int>(inputs[o].size()) - 3, rank = operands[o].shape().rank();
    if (rank < named) {
      bad(subscripts, fmt::format("operand {} has rank {} but {} subscripts besides its ellipsis", o, rank, named));
    }
    ellipsis_rank[o] = rank - named;
    widest = std::max(widest, ellipsis_rank[o]);
  }
  std::string fresh;
  for (char c : std::string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")) {
    if (static_cast<int>(fresh.size()) < widest && spec.find(c) == std::string::npos) fresh += c;
  }
  if (static_cast<int>(fresh.size()) < widest) bad(subscripts, "too many axes under the ellipsis");
  for (std::size_t o = 0; o < inputs.size(); ++o) {
    const auto e = inputs[o].find("...");
    if (e != std::string::npos) inputs[o].replace(e, 3, fresh.substr(fresh.size() - ellipsis_rank[o]));
  }
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
      const int64_t d = operands[o].shape()[static_cast<int>(i)];
      auto [it, first] = size.emplace(c, d);
      const bool broadcast = fresh.find(c) != std::string::npos;  // an ellipsis axis: 1 stretches to the other
      if (!first && it->second != d) {
        if (in.find(c) != i) {
          bad(subscripts, fmt::format("label '{}' repeats within operand {} with sizes {} and {}", c, o, it->second, d));
        }
        if (!broadcast || (it->second != 1 && d != 1)) {
          if (broadcast) {
            std::string shapes;
            for (const Tensor& x : operands) shapes += (shapes.empty() ? "" : " and ") + x.shape().to_string();
            bad(subscripts, fmt::format("the ellipsis axes of the operands, shapes {}, do not broadcast", shapes));
          }
          bad(subscripts, fmt::format("label '{}' is {} in one operand and {} in another", c, it->second, d));
        }
        it->second = std::max(it->second, d);
      }
      ++count[c];
    }
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = spec.substr(arrow + 2);
    const auto e = ellipsis_at(out, "the output");
    if (e != std::string::npos) {
      out.replace(e, 3, fresh);
    } else if (widest > 0) {
      bad(subscripts, fmt::format("the output has no ellipsis for the {} axes under the operands' ellipsis", widest));
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (!size.count(out[i])) bad(subscripts, fmt::format("output label '{}' is in no operand", out[i]));
      if (out.find(out[i]) != i) bad(subscripts, fmt::format("output label '{}' repeats", out[i]));
    }
  } else {
    out = fresh;  // NumPy's implicit output: the ellipsis axes, then the labels seen once in alphabetical order
    for (const auto& [c, n] : count) {
      if (n == 1 && fresh.find(c) == std::string::npos) out += c;
    }
  }
  // Each operand's diagonals, and its ellipsis axes of size 1 stretched to the other operand's.
  std::vector<Operand> ready;
  for (std::size_t o = 0; o < inputs.size(); ++o) {
    Operand x = diagonal({inputs[o], operands[o]});
    std::vector<int64_t> dims;
    bool stretch = false;
    for (char c : x.labels) {
      dims.push_back(size.at(c));
      stretch = stretch || x.t.shape()[static_cast<int>(dims.size() - 1)] != dims.back();
    }
    if (stretch) x.t = core::broadcast_to(x.t, Shape(dims));
    ready.push_back(std::move(x));
  }

  if (inputs.size() == 1) return arranged(sum_out(ready[0], out), out);
  Operand acc = ready[0];
  for (std::size_t o = 1; o < ready.size(); ++o) {
    std::string keep = out;
    for (std::size_t later = o + 1; later < ready.size(); ++later) keep += ready[later].labels;
    acc = contract(std::move(acc), ready[o], keep, size);
  }
  return arranged(sum_out(acc, out), out);
}

}  // namespace osprey::keras::ops
