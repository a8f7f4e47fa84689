// keras::ops's convolution and pooling functions (keras.ops.conv, depthwise_conv, max_pool, average_pool) on
// osprey::ops's convolution and pooling ops, with TensorFlow's "valid"/"same" padding and either data format.
#include <fmt/format.h>

#include "keras/ops/common.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/convolutional.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"

namespace osprey::keras::ops {

namespace core = osprey::ops;
namespace conv_detail = osprey::keras::layers::detail;

namespace {

// The spatial rank of a (batch, spatial..., channels) input: 1, 2 or 3.
int spatial_rank(const Tensor& x, const char* op) {
  const int r = x.shape().rank() - 2;
  if (r < 1 || r > 3) {
    throw InvalidArgumentError(fmt::format("{}: inputs of shape {} (rank {}); 1-D to 3-D inputs are (batch, "
                                           "spatial..., channels), rank 3 to 5",
                                           op, x.shape().to_string(), x.shape().rank()));
  }
  return r;
}

// One value for every spatial axis, or one per axis; each >= 1.
std::vector<int64_t> per_axis(const std::vector<int64_t>& v, int rank, const char* op, const char* what) {
  if (v.size() != 1 && v.size() != static_cast<std::size_t>(rank)) {
    throw ValueError(fmt::format("{}: {} has {} values for {} spatial axes; give one, or one per axis", op, what,
                                 v.size(), rank));
  }
  std::vector<int64_t> out;
  for (int i = 0; i < rank; ++i) {
    const int64_t e = v.size() == 1 ? v[0] : v[static_cast<std::size_t>(i)];
    if (e < 1) throw ValueError(fmt::format("{}: {} must be >= 1, got {}", op, what, e));
    out.push_back(e);
  }
  return out;
}

void check_padding(const std::string& padding, const char* op) {
  if (padding != "valid" && padding != "same") {
    throw ValueError(fmt::format("{}: padding must be 'valid' or 'same', got '{}'", op, padding));
  }
}

bool channels_first(const std::string& data_format, const char* op) {
  conv_detail::check_data_format(data_format, op);
  return data_format == "channels_first";
}

Tensor to_last(const Tensor& x, bool first, int rank) {
  return first ? core::transpose(x, conv_detail::to_channels_last(rank)) : x;
}
Tensor from_last(const Tensor& y, bool first, int rank) {
  return first ? core::transpose(y, conv_detail::to_channels_first(rank)) : y;
}

// inputs (channels last) and a kernel (window..., in / groups, out) with TensorFlow's padding.
Tensor convolve(const Tensor& x, const Tensor& kernel, int rank, const std::vector<int64_t>& strides,
                const std::string& padding, const std::vector<int64_t>& dilation, int64_t groups) {
  core::ConvParams p{strides, dilation, {}, {}, groups};
  for (int i = 0; i < rank; ++i) {
    const auto u = static_cast<std::size_t>(i);
    const auto [before, after] =
        conv_detail::axis_padding(padding, x.shape()[i + 1], kernel.shape()[i], strides[u], dilation[u]);
    p.pad_before.push_back(before);
    p.pad_after.push_back(after);
  }
  return core::conv(x, kernel, Tensor(), p);
}

// Inputs and kernel in one float dtype (Keras's result type; integers as float32).
std::pair<Tensor, Tensor> promoted_pair(const Tensor& x, const Tensor& k) {
  const DType f = detail::float_of(result_type(x, k));
  return {cast(x, f), cast(k, f)};
}

Tensor pool(core::PoolKind kind, const char* op, const Tensor& inputs, const std::vector<int64_t>& pool_size,
            const std::optional<std::vector<int64_t>>& strides, const std::string& padding,
            const std::string& data_format) {
  const bool first = channels_first(data_format, op);
  const int rank = spatial_rank(inputs, op);
  check_padding(padding, op);
  const std::vector<int64_t> window = per_axis(pool_size, rank, op, "pool_size");
  const std::vector<int64_t> step = strides ? per_axis(*strides, rank, op, "strides") : window;
  const Tensor x = to_last(detail::floating(inputs), first, rank);
  core::PoolParams p{kind, window, step, {}, {}};
  for (int i = 0; i < rank; ++i) {
    const auto u = static_cast<std::size_t>(i);
    const auto [before, after] = conv_detail::axis_padding(padding, x.shape()[i + 1], window[u], step[u], 1);
    p.pad_before.push_back(before);
    p.pad_after.push_back(after);
  }
  return from_last(core::pool(x, p), first, rank);
}

}  // namespace

Tensor conv(const Tensor& inputs, const Tensor& kernel, const std::vector<int64_t>& strides,
            const std::string& padding, const std::string& data_format, const std::vector<int64_t>& dilation_rate) {
  const bool first = channels_first(data_format, "conv");
  const int rank = spatial_rank(inputs, "conv");
  check_padding(padding, "conv");
  if (kernel.shape().rank() != rank + 2) {
    throw InvalidArgumentError(fmt::format("conv: a kernel of shape {} for {}-D inputs; it is (window..., in_channels "
                                           "/ groups, out_channels), rank {}",
                                           kernel.shape().to_string(), rank, rank + 2));
  }
  auto [x, k] = promoted_pair(to_last(inputs, first, rank), kernel);
  const int64_t in = x.shape()[-1], per_group = k.shape()[-2];
  if (per_group < 1 || in % per_group != 0) {
    throw InvalidArgumentError(fmt::format("conv: inputs have {} channels, the kernel of shape {} takes {} per group; "
                                           "the channels must be a multiple of it",
                                           in, kernel.shape().to_string(), per_group));
  }
  const Tensor y = convolve(x, k, rank, per_axis(strides, rank, "conv", "strides"), padding,
                            per_axis(dilation_rate, rank, "conv", "dilation_rate"), in / per_group);
  return from_last(y, first, rank);
}

Tensor depthwise_conv(const Tensor& inputs, const Tensor& kernel, const std::vector<int64_t>& strides,
                      const std::string& padding, const std::string& data_format,
                      const std::vector<int64_t>& dilation_rate) {
  const bool first = channels_first(data_format, "depthwise_conv");
  const int rank = spatial_rank(inputs, "depthwise_conv");
  check_padding(padding, "depthwise_conv");
  auto [x, k] = promoted_pair(to_last(inputs, first, rank), kernel);
  const int64_t in = x.shape()[-1];
  if (k.shape().rank() != rank + 2 || k.shape()[-2] != in) {
    throw InvalidArgumentError(fmt::format("depthwise_conv: a kernel of shape {} for inputs of {} channels; it is "
                                           "(window..., {}, channel_multiplier)",
                                           kernel.shape().to_string(), in, in));
  }
  // (window..., in, multiplier) as a grouped kernel (window..., 1, in·multiplier): output channel c·m + q.
  std::vector<int64_t> dims = k.shape().dims_vector();
  dims[dims.size() - 1] *= in;
  dims[dims.size() - 2] = 1;
  const Tensor y = convolve(x, core::reshape(k, Shape(dims)), rank, per_axis(strides, rank, "depthwise_conv", "strides"),
                            padding, per_axis(dilation_rate, rank, "depthwise_conv", "dilation_rate"), in);
  return from_last(y, first, rank);
}

Tensor separable_conv(const Tensor& inputs, const Tensor& depthwise_kernel, const Tensor& pointwise_kernel,
                      const std::vector<int64_t>& strides, const std::string& padding, const std::string& data_format,
                      const std::vector<int64_t>& dilation_rate) {
  const Tensor d = depthwise_conv(inputs, depthwise_kernel, strides, padding, data_format, dilation_rate);
  return conv(d, pointwise_kernel, {1}, "valid", data_format, {1});
}

Tensor conv_transpose(const Tensor& inputs, const Tensor& kernel, const std::vector<int64_t>& strides,
                      const std::string& padding, const std::optional<std::vector<int64_t>>& output_padding,
                      const std::string& data_format, const std::vector<int64_t>& dilation_rate) {
  const char* op = "conv_transpose";
  const bool first = channels_first(data_format, op);
  const int rank = spatial_rank(inputs, op);
  check_padding(padding, op);
  auto [x, k] = promoted_pair(to_last(inputs, first, rank), kernel);
  if (k.shape().rank() != rank + 2 || k.shape()[-1] != x.shape()[-1]) {
    throw InvalidArgumentError(fmt::format("{}: a kernel of shape {} for inputs of {} channels; it is (window..., "
                                           "out_channels, {})",
                                           op, kernel.shape().to_string(), x.shape()[-1], x.shape()[-1]));
  }
  const auto step = per_axis(strides, rank, op, "strides"), dilation = per_axis(dilation_rate, rank, op, "dilation_rate");
  std::vector<int64_t> extra;
  if (output_padding) {
    if (output_padding->size() != 1 && output_padding->size() != static_cast<std::size_t>(rank)) {
      throw ValueError(fmt::format("{}: output_padding has {} values for {} spatial axes", op, output_padding->size(),
                                   rank));
    }
    for (int i = 0; i < rank; ++i) {
      const int64_t e = output_padding->size() == 1 ? (*output_padding)[0] : (*output_padding)[static_cast<std::size_t>(i)];
      if (e < 0 || e >= step[static_cast<std::size_t>(i)]) {
        throw ValueError(fmt::format("{}: output_padding {} must be in [0, stride {})", op, e, step[static_cast<std::size_t>(i)]));
      }
      extra.push_back(e);
    }
  }
  // The forward convolution this transposes: from the output extents back to the input's, TensorFlow's padding.
  core::ConvParams p;
  std::vector<int64_t> out;
  for (int i = 0; i < rank; ++i) {
    const auto u = static_cast<std::size_t>(i);
    const int64_t o = conv_detail::deconv_output_length(x.shape()[i + 1], k.shape()[i], step[u], dilation[u], padding,
                                                        extra.empty() ? -1 : extra[u]);
    if (o < 1) throw InvalidArgumentError(fmt::format("{}: the output would be empty along spatial axis {}", op, i));
    const auto [before, after] = conv_detail::axis_padding(padding, o, k.shape()[i], step[u], dilation[u]);
    out.push_back(o);
    p.strides.push_back(step[u]);
    p.dilation.push_back(dilation[u]);
    p.pad_before.push_back(before);
    p.pad_after.push_back(after);
  }
  return from_last(core::conv_backprop_input(x, k, out, p), first, rank);
}

Tensor max_pool(const Tensor& inputs, const std::vector<int64_t>& pool_size,
                const std::optional<std::vector<int64_t>>& strides, const std::string& padding,
                const std::string& data_format) {
  return pool(core::PoolKind::max, "max_pool", inputs, pool_size, strides, padding, data_format);
}

Tensor average_pool(const Tensor& inputs, const std::vector<int64_t>& pool_size,
                    const std::optional<std::vector<int64_t>>& strides, const std::string& padding,
                    const std::string& data_format) {
  return pool(core::PoolKind::average, "average_pool", inputs, pool_size, strides, padding, data_format);
}

namespace {

// Keras's adaptive pooling (its TensorFlow backend's "two-pool gather"): output i of an axis of length L pools
// [floor(i·L/O), ceil((i+1)·L/O)), a window of ceil(L/O) or one more elements; both window sizes pool the axis with
// stride 1, and each output gathers its window's result. One axis at a time (max and mean are separable).
Tensor adaptive_pool(core::PoolKind kind, const char* op, const Tensor& inputs, const std::vector<int64_t>& output_size,
                     const std::string& data_format) {
  const int rank = spatial_rank(inputs, op);
  const std::vector<int64_t> out = per_axis(output_size, rank, op, "output_size");
  const bool first = channels_first(data_format, op);
  Tensor x = to_last(detail::floating(inputs), first, rank);
  for (int i = 0; i < rank; ++i) {
    const int axis = i + 1;
    const int64_t len = x.shape()[axis], o = out[static_cast<std::size_t>(i)];
    if (len < 1) {
      throw ValueError(fmt::format("{}: spatial axis {} of the input {} is empty", op, i, inputs.shape().to_string()));
    }
    if (len == o) continue;
    const int64_t small = (len + o - 1) / o, big = small + 1;
    auto pooled = [&](int64_t window) {
      core::PoolParams p{kind, std::vector<int64_t>(static_cast<std::size_t>(rank), 1),
                         std::vector<int64_t>(static_cast<std::size_t>(rank), 1),
                         std::vector<int64_t>(static_cast<std::size_t>(rank), 0),
                         std::vector<int64_t>(static_cast<std::size_t>(rank), 0)};
      p.window[static_cast<std::size_t>(i)] = window;
      return core::pool(x, p);
    };
    const Tensor small_pool = pooled(small);
    const int64_t small_count = len - small + 1;
    std::vector<int64_t> index;
    bool any_big = false;
    for (int64_t j = 0; j < o; ++j) {
      const int64_t start = j * len / o, end = ((j + 1) * len + o - 1) / o;
      const bool is_big = end - start == big;
      any_big = any_big || is_big;
      index.push_back(is_big ? small_count + start : start);
    }
    const Tensor both = any_big ? core::concat({small_pool, pooled(big)}, axis) : small_pool;
    x = take(both, detail::index_vector(index), axis);
  }
  return from_last(x, first, rank);
}

}  // namespace

Tensor adaptive_average_pool(const Tensor& inputs, const std::vector<int64_t>& output_size,
                             const std::string& data_format) {
  return adaptive_pool(core::PoolKind::average, "adaptive_average_pool", inputs, output_size, data_format);
}

Tensor adaptive_max_pool(const Tensor& inputs, const std::vector<int64_t>& output_size, const std::string& data_format) {
  return adaptive_pool(core::PoolKind::max, "adaptive_max_pool", inputs, output_size, data_format);
}

}  // namespace osprey::keras::ops
