// Element-wise arithmetic, matmul, reductions, casts and gathers: forward through dispatch, backward as ops.
#include <fmt/format.h>

#include "ops/attrs.h"
#include "ops/broadcast.h"
#include "ops/gradient_recorder.h"
#include "ops/kernel.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::ops {

Tensor cast(const Tensor& x, DType dtype) {
  Tensor in[1] = {x};
  auto& dev = place(OpId::Cast, "Cast", in);
  Tensor out = Tensor::empty(x.shape(), dtype, &dev);
  CastAttrs a{dtype};
  run(OpId::Cast, dev, in, {&out, 1}, &a);
  if (is_floating(dtype) && is_floating(x.dtype())) {  // a float variable read in half precision gets float grads
    const DType from = x.dtype();
    maybe_record("Cast", in, {&out, 1}, [from] {
      // A gradient already in the source's dtype (a half op's float32 parameter gradient) passes through.
      return BackwardFn([from](const std::vector<Tensor>& g) {
        return std::vector<Tensor>{g[0].dtype() == from ? g[0] : cast(g[0], from)};
      });
    });
  }
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const int r = a.shape().rank();
  if (!((r == 2 || r == 3) && b.shape().rank() == r)) {
    throw InvalidArgumentError(fmt::format("matmul expects two 2-D tensors or two 3-D tensors (batch, rows, cols), "
                                           "got shapes {} and {}",
                                           a.shape().to_string(), b.shape().to_string()));
  }
  const int o = r - 2;  // the batch axis comes first
  const int64_t m = ta ? a.shape()[o + 1] : a.shape()[o], k = ta ? a.shape()[o] : a.shape()[o + 1];
  const int64_t kb = tb ? b.shape()[o + 1] : b.shape()[o], n = tb ? b.shape()[o] : b.shape()[o + 1];
  if (k != kb || (r == 3 && a.shape()[0] != b.shape()[0])) {
    throw InvalidArgumentError(fmt::format("Matrix size-incompatible: In[0]: {}, In[1]: {} (transpose_a={}, "
                                           "transpose_b={})",
                                           a.shape().to_string(), b.shape().to_string(), ta, tb));
  }
  if ((is_half(a.dtype()) || is_half(b.dtype())) && a.dtype() != b.dtype()) {
    throw InvalidArgumentError(fmt::format("matmul: operands of {} and {}; cast one side first", dtype_name(a.dtype()),
                                           dtype_name(b.dtype())));
  }
  const Shape out_shape = r == 2 ? Shape{m, n} : Shape{a.shape()[0], m, n};
  Tensor in[2] = {a, b};
  auto& dev = place(OpId::MatMul, r == 2 ? "MatMul" : "BatchMatMulV2", in);
  // Half operands give a half product (float32 accumulation inside); every other dtype a float32 one.
  Tensor out = Tensor::empty(out_shape, is_half(a.dtype()) ? a.dtype() : DType::float32, &dev);
  MatMulAttrs attrs{ta, tb};
  run(OpId::MatMul, dev, in, {&out, 1}, &attrs);
  maybe_record(r == 2 ? "MatMul" : "BatchMatMulV2", in, {&out, 1}, [&] {
    const bool need_a = active_recorder()->should_record(std::span<const Tensor>(in, 1));
    const bool need_b = active_recorder()->should_record(std::span<const Tensor>(in + 1, 1));
    return BackwardFn([a = in[0], b = in[1], ta, tb, need_a, need_b](const std::vector<Tensor>& g) {
      Tensor da = !need_a ? Tensor() : ta ? matmul(b, g[0], tb, true) : matmul(g[0], b, false, !tb);
      Tensor db = !need_b ? Tensor() : tb ? matmul(g[0], a, true, ta) : matmul(a, g[0], !ta, false);
      return std::vector<Tensor>{da, db};
    });
  });
  return out;
}

static Tensor unary(const Tensor& x, UnaryKind kind, const char* name);

// The gradients of the trigonometric, hyperbolic, rounding and log1p/expm1 functions (TensorFlow's: floor, ceil and
// round pass none, a zero gradient here).
static Tensor math_gradient(UnaryKind kind, const Tensor& x, const Tensor& y, const Tensor& g) {
  const Tensor one = Tensor::scalar(1.0, x.dtype());
  switch (kind) {
    case UnaryKind::sin: return mul(g, cos(x));
    case UnaryKind::cos: return neg(mul(g, sin(x)));
    case UnaryKind::tan: return mul(g, add(one, square(y)));
    case UnaryKind::asin: return div(g, sqrt(sub(one, square(x))));
    case UnaryKind::acos: return neg(div(g, sqrt(sub(one, square(x)))));
    case UnaryKind::atan: return div(g, add(one, square(x)));
    case UnaryKind::sinh: return mul(g, cosh(x));
    case UnaryKind::cosh: return mul(g, sinh(x));
    case UnaryKind::asinh: return div(g, sqrt(add(square(x), one)));
    case UnaryKind::acosh: return div(g, sqrt(sub(square(x), one)));
    case UnaryKind::atanh: return div(g, sub(one, square(x)));
    case UnaryKind::log1p: return div(g, add(x, one));
    case UnaryKind::expm1: return mul(g, add(y, one));
    case UnaryKind::erf: return mul(g, mul(exp(neg(square(x))), Tensor::scalar(1.1283791670955126, x.dtype())));  // 2/√π
    default: return mul(g, Tensor::scalar(0.0, x.dtype()));  // floor, ceil, round
  }
}

static Tensor unary(const Tensor& x, UnaryKind kind, const char* name) {
  if (!is_floating(x.dtype())) {  // before placement: the same error on every device
    throw InvalidArgumentError(fmt::format("{} takes a float tensor, got {} of shape {}; cast it first "
                                           "(ops::cast(x, DType::float32)) or use keras::ops, which promotes",
                                           name, dtype_name(x.dtype()), x.shape().to_string()));
  }
  Tensor in[1] = {x};
  auto& dev = place(OpId::Unary, name, in);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), &dev);
  UnaryAttrs attrs{kind};
  run(OpId::Unary, dev, in, {&out, 1}, &attrs);
  maybe_record(name, in, {&out, 1}, [&] {
    return BackwardFn([x = in[0], y = out, kind](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      switch (kind) {
        case UnaryKind::neg: return {neg(g[0])};
        case UnaryKind::exp: return {mul(g[0], y)};
        case UnaryKind::log: return {div(g[0], x)};
        case UnaryKind::sqrt: return {div(g[0], mul(y, Tensor::scalar(2.0, x.dtype())))};
        case UnaryKind::square: return {mul(g[0], mul(x, Tensor::scalar(2.0, x.dtype())))};
        case UnaryKind::abs: return {mul(g[0], div(x, maximum(abs(x), Tensor::scalar(1e-30, x.dtype()))))};
        default: return {math_gradient(kind, x, y, g[0])};
      }
    });
  });
  return out;
}

Tensor neg(const Tensor& x) { return unary(x, UnaryKind::neg, "Neg"); }
Tensor exp(const Tensor& x) { return unary(x, UnaryKind::exp, "Exp"); }
Tensor log(const Tensor& x) { return unary(x, UnaryKind::log, "Log"); }
Tensor sqrt(const Tensor& x) { return unary(x, UnaryKind::sqrt, "Sqrt"); }
Tensor square(const Tensor& x) { return unary(x, UnaryKind::square, "Square"); }
Tensor abs(const Tensor& x) { return unary(x, UnaryKind::abs, "Abs"); }
Tensor sin(const Tensor& x) { return unary(x, UnaryKind::sin, "Sin"); }
Tensor cos(const Tensor& x) { return unary(x, UnaryKind::cos, "Cos"); }
Tensor tan(const Tensor& x) { return unary(x, UnaryKind::tan, "Tan"); }
Tensor asin(const Tensor& x) { return unary(x, UnaryKind::asin, "Asin"); }
Tensor acos(const Tensor& x) { return unary(x, UnaryKind::acos, "Acos"); }
Tensor atan(const Tensor& x) { return unary(x, UnaryKind::atan, "Atan"); }
Tensor sinh(const Tensor& x) { return unary(x, UnaryKind::sinh, "Sinh"); }
Tensor cosh(const Tensor& x) { return unary(x, UnaryKind::cosh, "Cosh"); }
Tensor asinh(const Tensor& x) { return unary(x, UnaryKind::asinh, "Asinh"); }
Tensor acosh(const Tensor& x) { return unary(x, UnaryKind::acosh, "Acosh"); }
Tensor atanh(const Tensor& x) { return unary(x, UnaryKind::atanh, "Atanh"); }
Tensor floor(const Tensor& x) { return unary(x, UnaryKind::floor, "Floor"); }
Tensor ceil(const Tensor& x) { return unary(x, UnaryKind::ceil, "Ceil"); }
Tensor round(const Tensor& x) { return unary(x, UnaryKind::round, "Round"); }
Tensor log1p(const Tensor& x) { return unary(x, UnaryKind::log1p, "Log1p"); }
Tensor expm1(const Tensor& x) { return unary(x, UnaryKind::expm1, "Expm1"); }
Tensor erf(const Tensor& x) { return unary(x, UnaryKind::erf, "Erf"); }

static Broadcast broadcast_of(const Tensor& a, const Tensor& b) {
  if (a.shape() == b.shape()) return Broadcast::same;
  if (b.num_elements() == 1 && b.shape().rank() <= a.shape().rank()) return Broadcast::scalar_b;
  if (a.num_elements() == 1 && a.shape().rank() <= b.shape().rank()) return Broadcast::scalar_a;
  if (b.shape().rank() == 1 && a.shape().rank() >= 1 && b.shape()[0] == a.shape()[-1]) return Broadcast::row_b;
  return Broadcast::general;
}

// The gradient of a broadcast operand: summed back down to its own shape.
static Tensor unbroadcast(const Tensor& g, const Tensor& like) {
  if (!g.defined() || g.shape() == like.shape()) return g;
  if (like.num_elements() == 1) return reduce_sum(g).reshape(like.shape());
  if (like.shape().rank() == 1 && g.shape().rank() >= 1 && g.shape()[-1] == like.shape()[0]) {
    return reduce_sum(g.reshape({g.num_elements() / like.num_elements(), like.num_elements()}), 0);
  }
  return reduce_axes(g, ReduceOp::sum, broadcast_axes(like.shape(), g.shape()), false).reshape(like.shape());
}

static Tensor binary(const Tensor& a, const Tensor& b, BinaryKind kind, const char* name) {
  if (a.dtype() != b.dtype()) {
    throw InvalidArgumentError(fmt::format("{}: dtypes differ ({} vs {}); cast one side first", name,
                                           dtype_name(a.dtype()), dtype_name(b.dtype())));
  }
  if (a.dtype() == DType::bool_) {
    throw InvalidArgumentError(fmt::format("{} is not defined for bool tensors; use logical_and/logical_or or cast "
                                           "to a number first", name));
  }
  if ((kind == BinaryKind::pow || kind == BinaryKind::nextafter) && a.dtype() != DType::float32 &&
      a.dtype() != DType::float64) {
    throw InvalidArgumentError(fmt::format("{} needs float32 or float64 tensors, got {}", name, dtype_name(a.dtype())));
  }
  BinaryAttrs attrs{kind, broadcast_of(a, b), {}};
  Shape out_shape = attrs.broadcast == Broadcast::scalar_a ? b.shape() : a.shape();
  if (attrs.broadcast == Broadcast::general) {
    out_shape = broadcast_shapes(a.shape(), b.shape());
    attrs.geometry = strided_geometry(out_shape, {&a.shape(), &b.shape()});
  }
  Tensor in[2] = {a, b};
  auto& dev = place(OpId::Binary, name, in);
  Tensor out = Tensor::empty(out_shape, a.dtype(), &dev);
  run(OpId::Binary, dev, in, {&out, 1}, &attrs);
  maybe_record(name, in, {&out, 1}, [&] {
    return BackwardFn([a = in[0], b = in[1], y = out, kind](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      const Tensor& go = g[0];
      switch (kind) {
        case BinaryKind::add: return {unbroadcast(go, a), unbroadcast(go, b)};
        case BinaryKind::sub: return {unbroadcast(go, a), unbroadcast(neg(go), b)};
        case BinaryKind::mul: return {unbroadcast(mul(go, b), a), unbroadcast(mul(go, a), b)};
        case BinaryKind::div:
          return {unbroadcast(div(go, b), a), unbroadcast(neg(div(mul(go, div(a, b)), b)), b)};
        case BinaryKind::maximum: {
          Tensor ga = mul(go, binary(a, b, BinaryKind::greater_equal, "GreaterEqual"));  // ties go to a
          return {unbroadcast(ga, a), unbroadcast(sub(go, ga), b)};
        }
        case BinaryKind::minimum: {
          Tensor ga = mul(go, binary(b, a, BinaryKind::greater_equal, "GreaterEqual"));  // a <= b: ties go to a
          return {unbroadcast(ga, a), unbroadcast(sub(go, ga), b)};
        }
        case BinaryKind::pow: {
          // d/da = b·a^(b−1); d/db = log(a)·a^b where a > 0, else 0 (TensorFlow's).
          const Tensor one = Tensor::scalar(1.0, a.dtype()), zero = Tensor::scalar(0.0, a.dtype());
          Tensor ga = mul(go, mul(b, pow(a, sub(b, one))));
          const Tensor positive = compare(a, zero, CompareKind::greater);
          Tensor safe_a = where(positive, a, Tensor::ones(a.shape(), a.dtype()));
          Tensor gb = mul(go, where(positive, mul(log(safe_a), y), zero));
          return {unbroadcast(ga, a), unbroadcast(gb, b)};
        }
        case BinaryKind::nextafter:  // TensorFlow's NextAfter gradient: x1's passes through, x2 gets none
          return {unbroadcast(go, a), unbroadcast(mul(go, Tensor::scalar(0.0, go.dtype())), b)};
        case BinaryKind::greater_equal: return {Tensor(), Tensor()};
      }
      return {Tensor(), Tensor()};
    });
  });
  return out;
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryKind::add, "AddV2"); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryKind::sub, "Sub"); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryKind::mul, "Mul"); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryKind::div, "RealDiv"); }
Tensor greater_equal(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryKind::greater_equal, "GreaterEqual"); }

Tensor reshape(const Tensor& x, const Shape& shape) {
  Tensor out = x.reshape(shape);  // a view: no kernel, but the tape must connect it to x
  Tensor in[1] = {x};
  maybe_record("Reshape", in, {&out, 1}, [&] {
    return BackwardFn([from = x.shape()](const std::vector<Tensor>& g) { return std::vector<Tensor>{reshape(g[0], from)}; });
  });
  return out;
}
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryKind::maximum, "Maximum"); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryKind::minimum, "Minimum"); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryKind::pow, "Pow"); }
Tensor nextafter(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryKind::nextafter, "NextAfter"); }

static Tensor reduce(const Tensor& x, ReduceKind kind, const char* name) {
  Shape out_shape;
  if (kind == ReduceKind::sum_axis0 || kind == ReduceKind::sum_axis1) {
    if (x.shape().rank() != 2) {
      throw InvalidArgumentError(fmt::format("{} over an axis needs a 2-D tensor, got shape {}", name,
                                             x.shape().to_string()));
    }
    out_shape = Shape{kind == ReduceKind::sum_axis0 ? x.shape()[1] : x.shape()[0]};
  }
  Tensor in[1] = {x};
  auto& dev = place(OpId::Reduce, name, in);
  Tensor out = Tensor::empty(out_shape, is_half(x.dtype()) ? x.dtype() : DType::float32, &dev);
  ReduceAttrs attrs{kind};
  run(OpId::Reduce, dev, in, {&out, 1}, &attrs);
  maybe_record(name, in, {&out, 1}, [&] {
    return BackwardFn([shape = x.shape(), kind, dt = x.dtype()](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      const DType gt = is_half(dt) ? dt : DType::float32;  // the reduction's output dtype, and its gradient's
      Tensor ones = Tensor::ones(shape, gt);
      switch (kind) {
        case ReduceKind::sum_all: return {mul(ones, g[0])};
        case ReduceKind::mean_all:
          return {mul(ones, div(g[0], Tensor::scalar(static_cast<double>(std::max<int64_t>(shape.num_elements(), 1)), gt)))};
        case ReduceKind::sum_axis0: return {mul(ones, g[0])};
        case ReduceKind::sum_axis1:
          return {matmul(g[0].reshape({shape[0], 1}), Tensor::ones({1, shape[1]}, gt))};
      }
      return {Tensor()};
    });
  });
  return out;
}

// float64 keeps its dtype (and its gradient's) through the N-d reduction; the Reduce kernel sums in float32.
Tensor reduce_sum(const Tensor& x) {
  if (x.dtype() == DType::float64) return reduce_axes(x, ReduceOp::sum, {});
  return reduce(x, ReduceKind::sum_all, "Sum");
}
Tensor reduce_mean(const Tensor& x) {
  if (x.dtype() == DType::float64) {
    const double n = static_cast<double>(std::max<int64_t>(x.num_elements(), 1));  // empty: 0, as the kernel
    return div(reduce_axes(x, ReduceOp::sum, {}), Tensor::scalar(n, DType::float64));
  }
  return reduce(x, ReduceKind::mean_all, "Mean");
}
Tensor reduce_sum(const Tensor& x, int axis) {
  const int r = x.shape().rank();
  const int ax = axis < 0 ? axis + r : axis;
  if (r != 2 || (ax != 0 && ax != 1)) {
    throw InvalidArgumentError(fmt::format("reduce_sum: axis {} is not supported for shape {}; use 0 or 1 on 2-D tensors",
                                           axis, x.shape().to_string()));
  }
  if (x.dtype() == DType::float64) return reduce_axes(x, ReduceOp::sum, {ax});
  return reduce(x, ax == 0 ? ReduceKind::sum_axis0 : ReduceKind::sum_axis1, "Sum");
}
Tensor reduce_mean(const Tensor& x, int axis) {
  Tensor s = reduce_sum(x, axis);
  const int ax = axis < 0 ? axis + x.shape().rank() : axis;
  return div(s, Tensor::scalar(static_cast<double>(x.shape()[ax]), s.dtype()));
}

Tensor gather_rows(const Tensor& x, const Tensor& indices) {
  if (indices.dtype() != DType::int64 || indices.shape().rank() != 1 || x.shape().rank() < 1) {
    throw InvalidArgumentError(fmt::format("gather_rows needs 1-D int64 indices and x of rank >= 1, got {} {} and x {}",
                                           dtype_name(indices.dtype()), indices.shape().to_string(),
                                           x.shape().to_string()));
  }
  Tensor in[2] = {x, indices};
  auto& dev = place(OpId::GatherRows, "GatherV2", in);
  Tensor out = Tensor::empty(x.shape().with_dim(0, indices.shape()[0]), x.dtype(), &dev);
  run(OpId::GatherRows, dev, in, {&out, 1}, nullptr);
  maybe_record("GatherV2", in, {&out, 1}, [&] {
    return BackwardFn([indices, rows = x.shape()[0]](const std::vector<Tensor>& g) {
      // A half x's gradient is summed in float32, then rounded once.
      if (!is_half(g[0].dtype())) return std::vector<Tensor>{scatter_add_rows(g[0], indices, rows), Tensor()};
      return std::vector<Tensor>{cast(scatter_add_rows(cast(g[0], DType::float32), indices, rows), g[0].dtype()),
                                 Tensor()};
    });
  });
  return out;
}

Tensor scatter_add_rows(const Tensor& updates, const Tensor& indices, int64_t rows) {
  if (indices.dtype() != DType::int64 || indices.shape().rank() != 1 || updates.shape().rank() < 1 ||
      updates.shape()[0] != indices.shape()[0] || updates.dtype() != DType::float32 || rows < 0) {
    throw InvalidArgumentError(fmt::format("scatter_add_rows needs float32 updates (N, ...), 1-D int64 indices (N) and "
                                           "rows >= 0; got updates {} {}, indices {} {}, rows {}",
                                           dtype_name(updates.dtype()), updates.shape().to_string(),
                                           dtype_name(indices.dtype()), indices.shape().to_string(), rows));
  }
  Tensor in[2] = {updates, indices};
  auto& dev = place(OpId::ScatterAddRows, "ScatterAdd", in);
  Tensor out = Tensor::empty(updates.shape().with_dim(0, rows), DType::float32, &dev);
  run(OpId::ScatterAddRows, dev, in, {&out, 1}, nullptr);
  maybe_record("ScatterAdd", in, {&out, 1}, [&] {
    return BackwardFn([indices](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{gather_rows(g[0], indices), Tensor()};
    });
  });
  return out;
}

}  // namespace osprey::ops
