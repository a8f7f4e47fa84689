// The image ops over channels-last tensors: convolutions, pooling, resizing and projective transforms. Shapes are
// checked here (the same errors on every backend), the kernels run through dispatch, gradients as the backprop ops.
#include <fmt/format.h>

#include "ops/attrs.h"
#include "ops/gradient_recorder.h"
#include "ops/kernel.h"
#include "ops/resample_tables.h"
#include "ops/transform_taps.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::ops {

static_assert(static_cast<int>(FillMode::nearest) == static_cast<int>(detail::FillMode::nearest) &&
              static_cast<int>(FillMode::constant) == static_cast<int>(detail::FillMode::constant));

namespace {

std::string list(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

// The spatial rank of x (rank - 2), checked against the parameter lists of `op`.
int spatial_rank(const char* op, const Shape& x, std::initializer_list<const std::vector<int64_t>*> lists) {
  const int r = x.rank() - 2;
  if (r < 1 || r > kMaxConvRank) {
    throw InvalidArgumentError(fmt::format("{}: the input must have rank 3, 4 or 5 (batch, spatial axes, channels); "
                                           "got shape {}",
                                           op, x.to_string()));
  }
  for (const auto* l : lists) {
    if (static_cast<int>(l->size()) != r) {
      throw InvalidArgumentError(fmt::format("{}: {} spatial axes in input {}, but a parameter list has {} entries "
                                             "({})",
                                             op, r, x.to_string(), l->size(), list(*l)));
    }
  }
  return r;
}

// Output extent of one axis, or -1 when the (dilated) window is larger than the padded input.
int64_t out_extent(int64_t in, int64_t window, int64_t stride, int64_t dilation, int64_t before, int64_t after) {
  const int64_t span = (window - 1) * dilation + 1;
  const int64_t padded = in + before + after;
  return padded < span ? -1 : (padded - span) / stride + 1;
}

void check_positive(const char* op, const char* what, const std::vector<int64_t>& v, int64_t min) {
  for (int64_t e : v) {
    if (e < min) throw InvalidArgumentError(fmt::format("{}: {} must be >= {}; got {}", op, what, min, list(v)));
  }
}

ConvAttrs conv_attrs(const char* op, const Shape& x, const Shape& k, const ConvParams& p, bool has_bias) {
  const int r = spatial_rank(op, x, {&p.strides, &p.dilation, &p.pad_before, &p.pad_after});
  check_positive(op, "strides", p.strides, 1);
  check_positive(op, "dilation rates", p.dilation, 1);
  check_positive(op, "paddings", p.pad_before, 0);
  check_positive(op, "paddings", p.pad_after, 0);
  if (k.rank() != r + 2) {
    throw InvalidArgumentError(fmt::format("{}: the kernel must have rank {} (window..., in channels / groups, out "
                                           "channels) for input {}; got {}",
                                           op, r + 2, x.to_string(), k.to_string()));
  }
  const int64_t cin = x[-1], cout = k[-1], g = p.groups;
  if (g < 1 || cin % g != 0 || cout % g != 0 || k[-2] * g != cin) {
    throw InvalidArgumentError(fmt::format("{}: input channels {} and output channels {} must both divide into "
                                           "groups={}, and the kernel {} must have {} / groups input channels",
                                           op, cin, cout, g, k.to_string(), cin));
  }
  ConvAttrs a{r, {}, {}, {}, {}, g, has_bias, Activation::linear};
  for (int i = 0; i < r; ++i) {
    a.strides[i] = p.strides[i];
    a.dilation[i] = p.dilation[i];
    a.pad_before[i] = p.pad_before[i];
    a.pad_after[i] = p.pad_after[i];
    if (k[i] < 1) throw InvalidArgumentError(fmt::format("{}: the kernel {} has an empty window", op, k.to_string()));
  }
  return a;
}

// The convolution's output shape for an input of spatial extents `in`.
Shape conv_output(const char* op, const Shape& x, const Shape& k, const ConvAttrs& a) {
  std::vector<int64_t> dims{x[0]};
  for (int i = 0; i < a.rank; ++i) {
    const int64_t o = out_extent(x[i + 1], k[i], a.strides[i], a.dilation[i], a.pad_before[i], a.pad_after[i]);
    if (o < 1) {
      throw InvalidArgumentError(fmt::format("{}: the kernel window {} (dilation {}) is larger than spatial axis {} of "
                                             "the input {} padded by {} + {}",
                                             op, k[i], a.dilation[i], i + 1, x.to_string(), a.pad_before[i],
                                             a.pad_after[i]));
    }
    dims.push_back(o);
  }
  dims.push_back(k[-1]);
  return Shape(dims);
}

// d kernel (and d bias) of the convolution of x that gave dy.
std::vector<Tensor> conv_backprop_filter(const Tensor& x, const Tensor& dy, const Shape& kernel_shape,
                                         const ConvAttrs& attrs, bool with_bias) {
  Tensor in[2] = {x, dy};
  auto& dev = place(OpId::ConvBackpropFilter, "Conv2DBackpropFilter", in);
  // A bfloat16 convolution's kernel and bias gradients in float32 (its variables' dtype), as Dense's.
  const DType params = dy.dtype() == DType::float16 ? DType::float16 : DType::float32;
  Tensor outs[2] = {Tensor::empty(kernel_shape, params, &dev),
                    with_bias ? Tensor::empty({kernel_shape[-1]}, params, &dev) : Tensor()};
  ConvAttrs a = attrs;
  a.has_bias = with_bias;
  a.activation = Activation::linear;
  run(OpId::ConvBackpropFilter, dev, in, outs, &a);
  return {outs[0], outs[1]};
}

Tensor backprop_input(const Tensor& dy, const Tensor& kernel, const Shape& x_shape, const ConvAttrs& attrs);

Tensor conv_forward(const Tensor& x, const Tensor& kernel, const Tensor& bias, const ConvAttrs& attrs) {
  const Shape out_shape = conv_output("Conv", x.shape(), kernel.shape(), attrs);
  Tensor in[3] = {x, kernel, bias};
  auto& dev = place(OpId::Conv, "Conv2D", in);
  Tensor out = Tensor::empty(out_shape, is_half(x.dtype()) ? x.dtype() : DType::float32, &dev);
  run(OpId::Conv, dev, in, {&out, 1}, &attrs);
  maybe_record("Conv2D", std::span<const Tensor>(in, attrs.has_bias ? 3 : 2), {&out, 1}, [&] {
    const bool need_dx = active_recorder()->should_record(std::span<const Tensor>(in, 1));
    // A fused activation's gradient from the output (the op holds no pre-activation copy).
    const Tensor y = attrs.activation == Activation::linear ? Tensor() : out;
    return BackwardFn([x = in[0], w = in[1], y, attrs, need_dx](const std::vector<Tensor>& g) {
      const Tensor dz = activation_grad(g[0], y, Tensor(), attrs.activation);
      auto dw = conv_backprop_filter(x, dz, w.shape(), attrs, attrs.has_bias);
      Tensor dx = need_dx ? backprop_input(dz, w, x.shape(), attrs) : Tensor();
      return attrs.has_bias ? std::vector<Tensor>{dx, dw[0], dw[1]} : std::vector<Tensor>{dx, dw[0]};
    });
  });
  return out;
}

Tensor backprop_input(const Tensor& dy, const Tensor& kernel, const Shape& x_shape, const ConvAttrs& attrs) {
  Tensor in[2] = {dy, kernel};
  auto& dev = place(OpId::ConvBackpropInput, "Conv2DBackpropInput", in);
  Tensor out = Tensor::empty(x_shape, is_half(dy.dtype()) ? dy.dtype() : DType::float32, &dev);
  ConvAttrs a = attrs;
  a.has_bias = false;
  a.activation = Activation::linear;
  run(OpId::ConvBackpropInput, dev, in, {&out, 1}, &a);
  maybe_record("Conv2DBackpropInput", in, {&out, 1}, [&] {
    return BackwardFn([dy = in[0], w = in[1], a](const std::vector<Tensor>& g) {
      // dx = conv^T(dy, w): d dy = conv(g, w), d w = the filter gradient of conv(g, w) against dy.
      return std::vector<Tensor>{conv_forward(g[0], w, Tensor(), a),
                                 conv_backprop_filter(g[0], dy, w.shape(), a, false)[0]};
    });
  });
  return out;
}

void check_float32(const char* op, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) {
    if (t->defined() && t->dtype() != DType::float32) {
      throw InvalidArgumentError(fmt::format("{}: expects float32 tensors, got {} {}", op, dtype_name(t->dtype()),
                                             t->shape().to_string()));
    }
  }
}

// float32 tensors, or tensors of one half type (mixed precision's compute dtype).
void check_conv_dtypes(const char* op, std::initializer_list<const Tensor*> ts) {
  const DType first = (*ts.begin())->dtype();
  if (!is_half(first)) return check_float32(op, ts);
  for (const Tensor* t : ts) {
    if (t->defined() && t->dtype() != first) {
      throw InvalidArgumentError(fmt::format("{}: expects tensors of one dtype, got {} and {} {}: cast them first", op,
                                             dtype_name(first), dtype_name(t->dtype()), t->shape().to_string()));
    }
  }
}

}  // namespace

Tensor conv(const Tensor& x, const Tensor& kernel, const Tensor& bias, const ConvParams& params) {
  check_conv_dtypes("Conv", {&x, &kernel, &bias});
  ConvAttrs attrs = conv_attrs("Conv", x.shape(), kernel.shape(), params, bias.defined());
  if (!fusable_after_op(params.activation)) {
    throw InvalidArgumentError(fmt::format("Conv: activation '{}' cannot be fused into the convolution (its gradient "
                                           "needs more than the output): apply it after ops::conv",
                                           activation_name(params.activation)));
  }
  attrs.activation = params.activation;
  if (bias.defined() && (bias.shape().rank() != 1 || bias.shape()[0] != kernel.shape()[-1])) {
    throw InvalidArgumentError(fmt::format("Conv: bias of shape {} does not match kernel of shape {}",
                                           bias.shape().to_string(), kernel.shape().to_string()));
  }
  return conv_forward(x, kernel, bias, attrs);
}

Tensor conv_backprop_input(const Tensor& dy, const Tensor& kernel, const std::vector<int64_t>& input_spatial,
                           const ConvParams& params) {
  check_conv_dtypes("Conv2DBackpropInput", {&dy, &kernel});
  const Shape& k = kernel.shape();
  if (static_cast<int>(input_spatial.size()) != dy.shape().rank() - 2 || k.rank() != dy.shape().rank()) {
    throw InvalidArgumentError(fmt::format("Conv2DBackpropInput: input spatial shape {} does not fit dy {} and kernel "
                                           "{}",
                                           list(input_spatial), dy.shape().to_string(), k.to_string()));
  }
  std::vector<int64_t> xd{dy.shape()[0]};
  xd.insert(xd.end(), input_spatial.begin(), input_spatial.end());
  xd.push_back(k[-2] * params.groups);
  const Shape x_shape(xd);
  const ConvAttrs attrs = conv_attrs("Conv2DBackpropInput", x_shape, k, params, false);
  const Shape expect = conv_output("Conv2DBackpropInput", x_shape, k, attrs);
  if (expect != dy.shape()) {
    throw InvalidArgumentError(fmt::format("Conv2DBackpropInput: dy {} is not the shape {} that the convolution of an "
                                           "input {} with kernel {} gives",
                                           dy.shape().to_string(), expect.to_string(), x_shape.to_string(),
                                           k.to_string()));
  }
  return backprop_input(dy, kernel, x_shape, attrs);
}

Tensor pool(const Tensor& x, const PoolParams& p) {
  const char* op = p.kind == PoolKind::max ? "MaxPool" : "AvgPool";
  check_conv_dtypes(op, {&x});
  const int r = spatial_rank(op, x.shape(), {&p.window, &p.strides, &p.pad_before, &p.pad_after});
  check_positive(op, "the pool size", p.window, 1);
  check_positive(op, "strides", p.strides, 1);
  check_positive(op, "paddings", p.pad_before, 0);
  check_positive(op, "paddings", p.pad_after, 0);
  PoolAttrs a{r, p.kind, {}, {}, {}, {}};
  std::vector<int64_t> dims{x.shape()[0]};
  for (int i = 0; i < r; ++i) {
    a.window[i] = p.window[i];
    a.strides[i] = p.strides[i];
    a.pad_before[i] = p.pad_before[i];
    a.pad_after[i] = p.pad_after[i];
    if (p.pad_before[i] >= p.window[i] || p.pad_after[i] >= p.window[i]) {
      throw InvalidArgumentError(fmt::format("{}: padding {} + {} on spatial axis {} must be smaller than the window "
                                             "{}",
                                             op, p.pad_before[i], p.pad_after[i], i + 1, p.window[i]));
    }
    const int64_t o = out_extent(x.shape()[i + 1], p.window[i], p.strides[i], 1, p.pad_before[i], p.pad_after[i]);
    if (o < 1) {
      throw InvalidArgumentError(fmt::format("{}: the pool window {} is larger than spatial axis {} of the input {}",
                                             op, list(p.window), i + 1, x.shape().to_string()));
    }
    dims.push_back(o);
  }
  dims.push_back(x.shape()[-1]);
  Tensor in[1] = {x};
  auto& dev = place(OpId::Pool, op, in);
  Tensor out = Tensor::empty(Shape(dims), is_half(x.dtype()) ? x.dtype() : DType::float32, &dev);
  run(OpId::Pool, dev, in, {&out, 1}, &a);
  maybe_record(op, in, {&out, 1}, [&] {
    return BackwardFn([x = in[0], a](const std::vector<Tensor>& g) {
      Tensor gin[2] = {x, g[0]};
      auto& d = place(OpId::PoolGrad, a.kind == PoolKind::max ? "MaxPoolGrad" : "AvgPoolGrad", gin);
      Tensor dx = Tensor::empty(x.shape(), x.dtype(), &d);
      run(OpId::PoolGrad, d, gin, {&dx, 1}, &a);
      return std::vector<Tensor>{dx};
    });
  });
  return out;
}

namespace detail {

Tensor resample(const Tensor& x, int axis, const ResampleTable& table) {
  check_float32("Resample", {&x});
  const Shape& s = x.shape();
  if (axis < 0 || axis >= s.rank() || s[axis] != table.in) {
    throw InternalError(fmt::format("resample: a table for {} positions on axis {} of {}", table.in, axis,
                                    s.to_string()));
  }
  const ResampleAttrs attrs{axis, table.span};
  Tensor in[3] = {x, Tensor::from_vector(table.starts, Shape({table.out})),
                  Tensor::from_vector(table.weights, Shape({table.out * table.span}))};
  auto& dev = place(OpId::Resample, "Resample", in);
  Tensor out = Tensor::empty(s.with_dim(axis, table.out), DType::float32, &dev);
  run(OpId::Resample, dev, in, {&out, 1}, &attrs);
  maybe_record("Resample", {in, 1}, {&out, 1}, [&] {
    return BackwardFn([axis, back = transpose(table)](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{resample(g[0], axis, back)};
    });
  });
  return out;
}

}  // namespace detail

ResizeMethod resize_method(const std::string& name) {
  static const std::pair<const char*, ResizeMethod> kNames[] = {
      {"bilinear", ResizeMethod::bilinear}, {"nearest", ResizeMethod::nearest},
      {"bicubic", ResizeMethod::bicubic},   {"area", ResizeMethod::area},
      {"lanczos3", ResizeMethod::lanczos3}, {"lanczos5", ResizeMethod::lanczos5},
      {"gaussian", ResizeMethod::gaussian}, {"mitchellcubic", ResizeMethod::mitchellcubic}};
  for (const auto& [n, m] : kNames) {
    if (name == n) return m;
  }
  throw ValueError(fmt::format("Invalid value for argument `interpolation`: \"{}\"; expected one of \"bilinear\", "
                               "\"nearest\", \"bicubic\", \"area\", \"lanczos3\", \"lanczos5\", \"gaussian\", "
                               "\"mitchellcubic\"",
                               name));
}

namespace {

void check_images(const char* op, const Tensor& x, int64_t height, int64_t width) {
  check_float32(op, {&x});
  const Shape& s = x.shape();
  if (s.rank() != 4 || height < 1 || width < 1 || height > (int64_t{1} << 24) || width > (int64_t{1} << 24)) {
    throw InvalidArgumentError(fmt::format("{}: expects images (batch, height, width, channels) and a target size "
                                           "in [1, 2^24]; got {} and {}x{}",
                                           op, s.to_string(), height, width));
  }
  if (s[1] == 0 || s[2] == 0) {
    throw InvalidArgumentError(fmt::format("{}: the images {} are empty", op, s.to_string()));
  }
}

// The rows' table, then the columns' (TensorFlow's order for ScaleAndTranslate and ResizeBicubic).
Tensor resample_2d(const Tensor& x, const detail::ResampleTable& rows, const detail::ResampleTable& cols) {
  return detail::resample(detail::resample(x, 1, rows), 2, cols);
}

}  // namespace

Tensor resize(const Tensor& x, int64_t height, int64_t width, ResizeMethod method, bool antialias) {
  check_images("resize", x, height, width);
  const Shape& s = x.shape();
  if (method != ResizeMethod::nearest && (antialias || method != ResizeMethod::bilinear)) {
    const bool aa = antialias && method != ResizeMethod::area;
    return resample_2d(x, detail::resize_table(method, aa, s[1], height), detail::resize_table(method, aa, s[2], width));
  }
  const char* name = method == ResizeMethod::bilinear ? "ResizeBilinear" : "ResizeNearestNeighbor";
  const ResizeAttrs attrs{method};
  Tensor in[1] = {x};
  auto& dev = place(OpId::Resize, name, in);
  Tensor out = Tensor::empty(Shape({s[0], height, width, s[3]}), DType::float32, &dev);
  run(OpId::Resize, dev, in, {&out, 1}, &attrs);
  maybe_record(name, in, {&out, 1}, [&] {
    return BackwardFn([shape = s, attrs](const std::vector<Tensor>& g) {
      Tensor gin[1] = {g[0]};
      auto& d = place(OpId::ResizeGrad, "ResizeGrad", gin);
      Tensor dx = Tensor::empty(shape, DType::float32, &d);
      run(OpId::ResizeGrad, d, gin, {&dx, 1}, &attrs);
      return std::vector<Tensor>{dx};
    });
  });
  return out;
}

Tensor scale_and_translate(const Tensor& images, int64_t height, int64_t width, std::pair<float, float> scale,
                           std::pair<float, float> translation, SamplingKernel kernel, bool antialias) {
  check_images("scale_and_translate", images, height, width);
  const Shape& s = images.shape();
  return resample_2d(images,
                     detail::scale_translate_table(kernel, antialias, s[1], height, scale.first, translation.first),
                     detail::scale_translate_table(kernel, antialias, s[2], width, scale.second, translation.second));
}

Tensor affine_transform(const Tensor& images, const Tensor& transforms, ResizeMethod interpolation, FillMode fill_mode,
                        double fill_value) {
  check_float32("ImageProjectiveTransformV3", {&images, &transforms});
  const Shape& s = images.shape();
  const Shape& t = transforms.shape();
  if (s.rank() != 4 || t.rank() != 2 || t[1] != 8 || (t[0] != 1 && t[0] != s[0])) {
    throw InvalidArgumentError(fmt::format("affine_transform: expects images (batch, height, width, channels) and "
                                           "transforms (batch or 1, 8); got {} and {}",
                                           s.to_string(), t.to_string()));
  }
  if (interpolation != ResizeMethod::bilinear && interpolation != ResizeMethod::nearest) {
    throw InvalidArgumentError("affine_transform: the interpolation must be bilinear or nearest");
  }
  const TransformAttrs attrs{interpolation, fill_mode, static_cast<float>(fill_value)};
  Tensor in[2] = {images, transforms};
  auto& dev = place(OpId::AffineTransform, "ImageProjectiveTransformV3", in);
  Tensor out = Tensor::empty(s, DType::float32, &dev);
  run(OpId::AffineTransform, dev, in, {&out, 1}, &attrs);
  return out;
}

}  // namespace osprey::ops
