// keras.layers.EinsumDense for the equations that are one matrix product (MultiHeadAttention's projections among
// them): the input seen as (rows, contracted), the kernel as (contracted, new), one fused dense op.
#include <algorithm>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "keras/activations/activations.h"
#include "keras/layers/weight_rules.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/core.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

namespace {

struct Spec {
  std::string in, kernel, out;
};

Spec parse(const std::string& eq) {
  const auto comma = eq.find(','), arrow = eq.find("->");
  Spec s;
  if (comma != std::string::npos && arrow != std::string::npos && comma < arrow) {
    s = {eq.substr(0, comma), eq.substr(comma + 1, arrow - comma - 1), eq.substr(arrow + 2)};
  }
  auto letters = [](const std::string& x) {
    return !x.empty() && std::all_of(x.begin(), x.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
  };
  if (!letters(s.in) || !letters(s.kernel) || !letters(s.out)) {
    throw ValueError(fmt::format("EinsumDense: the equation '{}' is not of the form 'ab,bc->ac' (Osprey reads "
                                 "equations of letters only, without '...')",
                                 eq));
  }
  return s;
}

int64_t product(const std::vector<int64_t>& d, std::size_t b, std::size_t e) {
  return std::accumulate(d.begin() + static_cast<std::ptrdiff_t>(b), d.begin() + static_cast<std::ptrdiff_t>(e),
                         int64_t{1}, std::multiplies<>());
}

}  // namespace

EinsumDense::EinsumDense(std::string equation, std::vector<int64_t> output_shape, EinsumDenseOptions options)
    : Layer(options.name, "einsum_dense", options.dtype), equation_(std::move(equation)),
      partial_output_shape_(std::move(output_shape)), options_(std::move(options)) {
  const ActivationFn fn = ActivationFn::get(options_.activation);
  activation_ = fn.kernel;
  activation_name_ = fn.name;
  composite_ = fn.composite;
  const Spec s = parse(equation_);
  // kept letters: the output's prefix taken from the input; contracted: the rest of the input (the kernel's prefix).
  std::size_t k = 0;
  while (k < s.in.size() && k < s.out.size() && s.in[k] == s.out[k]) ++k;
  const std::string contracted = s.in.substr(k), added = s.out.substr(k);
  std::set<char> seen;
  bool ok = k >= 1 && !contracted.empty() && s.kernel == contracted + added;
  for (char c : s.in + added) ok = ok && seen.insert(c).second;  // each letter once
  if (!ok) {
    throw ValueError(fmt::format("EinsumDense: Osprey computes equations of the form '<kept><contracted>,"
                                 "<contracted><new>-><kept><new>' (one matrix product, e.g. 'abc,cde->abde'); got "
                                 "'{}'",
                                 equation_));
  }
  kept_ = static_cast<int>(k);
  if (static_cast<std::size_t>(partial_output_shape_.size()) + 1 != s.out.size()) {
    throw ValueError(fmt::format("EinsumDense: output_shape {} must give the {} output dimensions after the batch of "
                                 "'{}'",
                                 fmt::join(partial_output_shape_, ", "), s.out.size() - 1, equation_));
  }
  for (char c : options_.bias_axes) {
    if (s.out.find(c) == std::string::npos) {
      throw ValueError(fmt::format("Bias dimension '{}' was requested, but is not part of the output spec '{}'", c,
                                   s.out));
    }
  }
}

Shape EinsumDense::build(const Shape& input_shape) {
  const Spec s = parse(equation_);
  if (input_shape.rank() + 1 != static_cast<int>(s.in.size())) {
    throw ValueError(fmt::format("EinsumDense '{}': the equation '{}' takes inputs of rank {}, got shape (None, {})",
                                 name_, equation_, s.in.size(), fmt::join(input_shape.dims(), ", ")));
  }
  // The full output shape (batch excluded): kept dimensions from the input, new ones from output_shape.
  std::vector<int64_t> out;
  for (std::size_t i = 1; i < s.out.size(); ++i) {
    const int64_t given = partial_output_shape_[i - 1];
    if (static_cast<int>(i) < kept_) {
      if (given > 0 && given != input_shape[static_cast<int>(i) - 1]) {
        throw ValueError(fmt::format("Input shape and output shape do not match at shared dimension '{}'. Input shape "
                                     "is {}, and output shape is {}.",
                                     s.out[i], input_shape[static_cast<int>(i) - 1], given));
      }
      out.push_back(input_shape[static_cast<int>(i) - 1]);
    } else {
      if (given <= 0) {
        throw ValueError(fmt::format("EinsumDense '{}': output_shape must give the size of '{}' (not in the input)",
                                     name_, s.out[i]));
      }
      out.push_back(given);
    }
  }
  const auto in_dims = input_shape.dims();
  const std::vector<int64_t> in(in_dims.begin(), in_dims.end());
  const int64_t contracted = product(in, static_cast<std::size_t>(kept_ - 1), in.size());
  const int64_t added = product(out, static_cast<std::size_t>(kept_ - 1), out.size());
  std::vector<int64_t> kernel_shape(in.begin() + (kept_ - 1), in.end());
  kernel_shape.insert(kernel_shape.end(), out.begin() + (kept_ - 1), out.end());
  // Keras's bias: the output's letters from the first bias letter on, 1 where a letter is not a bias axis.
  std::vector<int64_t> bias_shape;
  if (!options_.bias_axes.empty()) {
    std::size_t first = s.out.size();
    for (char c : options_.bias_axes) first = std::min(first, s.out.find(c));
    for (std::size_t i = first; i < s.out.size(); ++i) {
      const bool on = options_.bias_axes.find(s.out[i]) != std::string::npos;
      if (!on || i == 0) {
        throw ValueError(fmt::format("EinsumDense '{}': bias_axes '{}' must be the trailing letters of the output "
                                     "'{}' (Osprey adds the bias as a row over them)",
                                     name_, options_.bias_axes, s.out));
      }
      bias_shape.push_back(out[i - 1]);
    }
  }
  if (built_) {
    if (kernel_->shape() != Shape(kernel_shape)) {
      throw ValueError(fmt::format("EinsumDense '{}' was built for a kernel of shape {}; inputs of shape (None, {}) "
                                   "need {}",
                                   name_, kernel_->shape().to_string(), fmt::join(input_shape.dims(), ", "),
                                   Shape(kernel_shape).to_string()));
    }
    return Shape(out);
  }
  contracted_ = contracted;
  new_ = added;
  kernel_ = &add_weight("kernel", osprey::ops::reshape(initialize(options_.kernel_initializer, {contracted, added}),
                                               Shape(kernel_shape)));
  if (!bias_shape.empty()) {
    bias_size_ = product(bias_shape, 0, bias_shape.size());
    bias_ = &add_weight("bias", initialize(options_.bias_initializer, Shape(bias_shape)));
  }
  return finish_build(Shape(out));
}

Tensor EinsumDense::call(const Tensor& inputs, bool) {
  const auto& s = inputs.shape();
  if (!built_) {
    const auto d = s.dims();
    build(Shape(std::vector<int64_t>(d.begin() + (d.empty() ? 0 : 1), d.end())));
  }
  bool ok = s.rank() == kept_ + (kernel_->shape().rank() - (output_shape_.rank() + 1 - kept_));
  for (int i = kept_; ok && i < s.rank(); ++i) ok = s[i] == kernel_->shape()[i - kept_];
  if (!ok) {
    throw InvalidArgumentError(fmt::format("EinsumDense '{}' ('{}') with a kernel of shape {} got inputs of shape {}",
                                           name_, equation_, kernel_->shape().to_string(), s.to_string()));
  }
  const int64_t rows = s.num_elements() / contracted_;
  const Tensor x = osprey::ops::reshape(inputs, Shape({rows, contracted_}));
  // Under a mixed policy the product runs in the compute dtype (Keras's autocast of the variables).
  const Tensor w = osprey::ops::reshape(autocast_variable(*kernel_), Shape({contracted_, new_}));
  const Tensor bias = bias_ ? autocast_variable(*bias_) : Tensor();
  const bool fused_bias = bias_ && bias_size_ == new_;
  Tensor y = osprey::ops::dense(x, w, fused_bias ? osprey::ops::reshape(bias, Shape({new_})) : Tensor(),
                        bias_ && !fused_bias ? osprey::ops::Activation::linear : activation_);
  std::vector<int64_t> out{s[0]};
  for (auto d : output_shape_.dims()) out.push_back(d);
  if (bias_ && !fused_bias) {  // a bias over fewer trailing elements than the new ones, or over kept ones too
    const int64_t total = y.num_elements();
    y = osprey::ops::add(osprey::ops::reshape(y, Shape({total / bias_size_, bias_size_})), osprey::ops::reshape(bias, Shape({bias_size_})));
    y = osprey::ops::activation(osprey::ops::reshape(y, Shape({rows, new_})), activation_);
  }
  if (composite_) y = ActivationFn::get(activation_name_)(y);
  return osprey::ops::reshape(y, Shape(out));
}

#define OSPREY_EINSUM_RULES                                                \
  {{kernel_, options_.kernel_regularizer, options_.kernel_constraint},    \
   {bias_, options_.bias_regularizer, options_.bias_constraint}}
bool EinsumDense::has_regularization() const { return detail::any_penalty(OSPREY_EINSUM_RULES); }
std::vector<Tensor> EinsumDense::regularization_losses() { return detail::penalties(OSPREY_EINSUM_RULES); }
void EinsumDense::apply_constraints() { detail::constrain(OSPREY_EINSUM_RULES); }
#undef OSPREY_EINSUM_RULES

// ---- Keras config ----

namespace ser = serialization;
using ser::json;

std::string EinsumDense::get_config() const {
  json c = ser::base_config(*this);
  json shape = json::array();
  for (auto d : partial_output_shape_) shape.push_back(d > 0 ? json(d) : json());
  c["output_shape"] = shape;
  c["equation"] = equation_;
  c["activation"] = activation_name_;
  c["bias_axes"] = options_.bias_axes.empty() ? json() : json(options_.bias_axes);
  c["kernel_initializer"] = ser::initializer(options_.kernel_initializer);
  c["bias_initializer"] = ser::initializer(options_.bias_initializer);
  c["kernel_regularizer"] = ser::regularizer(options_.kernel_regularizer);
  c["bias_regularizer"] = ser::regularizer(options_.bias_regularizer);
  c["activity_regularizer"] = nullptr;
  c["kernel_constraint"] = ser::constraint(options_.kernel_constraint);
  c["bias_constraint"] = ser::constraint(options_.bias_constraint);
  c["quantization_config"] = nullptr;
  return ser::dumps(c);
}

OSPREY_REGISTER_LAYERS(einsum_dense) {
  ser::register_layer_class("EinsumDense", {true, [](const json& c) -> std::shared_ptr<Layer> {
    ser::refuse_set(c, {"activity_regularizer", "lora_rank", "quantization_config", "gptq_unpacked_column_size"},
                    "EinsumDense", "kernel/bias regularizers and constraints");
    EinsumDenseOptions o;
    o.name = ser::name_of(c);
    o.activation = ser::activation_from(c.value("activation", json("linear")));
    if (c.contains("bias_axes") && !c["bias_axes"].is_null()) {
      if (!c["bias_axes"].is_string()) ser::unsupported("EinsumDense bias_axes", c["bias_axes"].dump(), "a string");
      o.bias_axes = c["bias_axes"].get<std::string>();
    }
    if (c.contains("kernel_initializer")) o.kernel_initializer = ser::initializer_from(c["kernel_initializer"]);
    if (c.contains("bias_initializer")) o.bias_initializer = ser::initializer_from(c["bias_initializer"]);
    o.kernel_regularizer = ser::regularizer_from(c.value("kernel_regularizer", json()));
    o.bias_regularizer = ser::regularizer_from(c.value("bias_regularizer", json()));
    o.kernel_constraint = ser::constraint_from(c.value("kernel_constraint", json()));
    o.bias_constraint = ser::constraint_from(c.value("bias_constraint", json()));
    if (!c.contains("equation") || !c["equation"].is_string()) ser::unsupported("EinsumDense equation", "missing", "a string");
    std::vector<int64_t> shape;
    const json s = c.value("output_shape", json());
    if (s.is_number_integer()) {
      shape.push_back(ser::integer(c, "output_shape", 1, int64_t{1} << 31, "EinsumDense " + o.name));
    } else if (s.is_array() && s.size() <= 8) {
      for (const auto& d : s) {
        if (d.is_null()) shape.push_back(0);
        else if (d.is_number_integer() && d.get<int64_t>() >= 1 && d.get<int64_t>() <= (int64_t{1} << 31)) shape.push_back(d.get<int64_t>());
        else ser::unsupported("EinsumDense output_shape entry", d.dump(), "positive integers or null");
      }
    } else {
      ser::unsupported("EinsumDense output_shape", s.dump().substr(0, 80), "an integer or a list of up to 8");
    }
    return std::make_shared<EinsumDense>(c["equation"].get<std::string>(), shape, o);
  }});
}

}  // namespace osprey::keras::layers
