// keras.layers.Attention and AdditiveAttention (keras/src/layers/attention/attention.py, additive_attention.py):
// scores from the query and key, masked positions lowered by 1e9, a softmax, the values weighted. The broadcast sum
// q + k of the concat and additive scores is built with products by ones (batched matmuls), so that every step is an
// op with a gradient on every device.
#include <tuple>

#include <fmt/format.h>

#include "keras/layers/attention/attention_masks.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/attention.h"
#include "osprey/keras/layers/regularization.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

Attention::Attention(Options options) : Attention(std::move(options), false) {}

Attention::Attention(Options options, bool additive)
    : Layer(options.name, additive ? "additive_attention" : "attention", options.dtype), o_(std::move(options)), additive_(additive) {
  if (o_.score_mode != "dot" && o_.score_mode != "concat") {
    throw ValueError(fmt::format("Invalid value for argument score_mode. Expected one of {{'dot', 'concat'}}. "
                                 "Received: score_mode={}",
                                 o_.score_mode));
  }
  if (!(o_.dropout >= 0.0 && o_.dropout < 1.0)) {
    throw ValueError(fmt::format("{}: dropout must be in [0, 1), got {}", class_name(), o_.dropout));
  }
  if (o_.dropout > 0.0) {
    dropout_ = std::make_shared<Dropout>(o_.dropout, name_ + "_dropout");
    dropout_->set_dtype_policy(dtype_policy_);
  }
}

void Attention::set_dtype_policy(const mixed_precision::DTypePolicy& policy) {
  Layer::set_dtype_policy(policy);
  if (dropout_) dropout_->set_dtype_policy(policy);
}

AdditiveAttention::AdditiveAttention(bool use_scale, double dropout, std::string name)
    : Attention(Options{.use_scale = use_scale, .score_mode = "dot", .dropout = dropout, .name = std::move(name)}, true) {}

Shape Attention::build(const Shape& input_shape) { return build(std::vector<Shape>{input_shape, input_shape}); }

Shape Attention::build(const std::vector<Shape>& shapes) {
  if (shapes.size() < 2 || shapes.size() > 3) {
    throw ValueError(fmt::format("{} layer accepts inputs list of length 2 or 3, namely [query, value] or [query, "
                                 "value, key]. Received length: {}.",
                                 class_name(), shapes.size()));
  }
  const Shape& q = shapes[0];
  const Shape& v = shapes[1];
  const Shape& k = shapes.size() == 3 ? shapes[2] : v;
  if (q.rank() != 2 || v.rank() != 2 || k.rank() != 2 || q[1] != k[1] || v[0] != k[0]) {
    throw ValueError(fmt::format("{} '{}': query (None, Tq, dim), value (None, Tv, d) and key (None, Tv, dim) expected; "
                                 "got query {}, value {}, key {}",
                                 class_name(), name_, q.to_string(), v.to_string(), k.to_string()));
  }
  if (!built_) {
    if (additive_ && o_.use_scale) {
      scale_ = &add_weight("scale", initialize("glorot_uniform", {q[1]}));
    } else if (o_.use_scale) {
      scale_ = &add_weight("scale", Tensor::ones({}));
    }
    if (!additive_ && o_.score_mode == "concat") concat_weight_ = &add_weight("concat_score_weight", Tensor::ones({}));
    return finish_build(Shape({q[0], v[1]}));
  }
  if (additive_ && scale_ && scale_->shape()[0] != q[1]) {
    throw ValueError(fmt::format("AdditiveAttention '{}' was built for features {}, got {}", name_, scale_->shape()[0], q[1]));
  }
  return Shape({q[0], v[1]});
}

// (B, Tq, Tv) scores.
Tensor Attention::scores(const Tensor& q, const Tensor& k) const {
  const int64_t B = q.shape()[0], Tq = q.shape()[1], Tv = k.shape()[1], d = q.shape()[2];
  if (!additive_ && o_.score_mode == "dot") {
    Tensor s = osprey::ops::matmul(q, k, false, true);
    return scale_ ? osprey::ops::mul(s, scale_->value()) : s;
  }
  // q + k over (B, Tq, Tv, d): each spread by a product with ones.
  const Tensor q_rep = osprey::ops::matmul(Tensor::ones({B * Tq, Tv, 1}), osprey::ops::reshape(q, Shape({B * Tq, 1, d})));
  const Tensor k_rep = osprey::ops::matmul(Tensor::ones({B, Tq, 1}), osprey::ops::reshape(k, Shape({B, 1, Tv * d})));
  const Tensor sum = osprey::ops::add(osprey::ops::reshape(q_rep, Shape({B * Tq * Tv, d})), osprey::ops::reshape(k_rep, Shape({B * Tq * Tv, d})));
  Tensor t;
  if (additive_) {
    t = osprey::ops::tanh(sum);
    if (scale_) t = osprey::ops::mul(t, scale_->value());  // a row over the features
  } else {
    t = osprey::ops::tanh(scale_ ? osprey::ops::mul(sum, scale_->value()) : sum);
  }
  Tensor s = osprey::ops::reshape(osprey::ops::reduce_sum(t, 1), Shape({B, Tq, Tv}));
  return concat_weight_ ? osprey::ops::mul(s, concat_weight_->value()) : s;
}

std::pair<Tensor, Tensor> Attention::attend(const Tensor& query, const Tensor& value, const Tensor& key_in,
                                            const Tensor& query_mask, const Tensor& value_mask, bool training,
                                            bool return_attention_scores) {
  const Tensor& key = key_in.defined() ? key_in : value;
  for (const Tensor* t : {&query, &value, &key}) {
    if (t->shape().rank() != 3) {
      throw ValueError(fmt::format("{} '{}' takes (batch, steps, features) tensors; got shape {}", class_name(), name_,
                                   t->shape().to_string()));
    }
  }
  auto sample = [](const Tensor& t) { return Shape({t.shape()[1], t.shape()[2]}); };
  build(key_in.defined() ? std::vector<Shape>{sample(query), sample(value), sample(key)}
                         : std::vector<Shape>{sample(query), sample(value)});
  const int64_t B = query.shape()[0], Tq = query.shape()[1], Tv = value.shape()[1];
  if (value.shape()[0] != B || key.shape()[0] != B) {
    throw ValueError(fmt::format("{} '{}': query, value and key have batch sizes {}, {} and {}", class_name(), name_, B,
                                 value.shape()[0], key.shape()[0]));
  }
  for (const auto& [m, steps, what] : {std::tuple{&query_mask, Tq, "query"}, std::tuple{&value_mask, Tv, "value"}}) {
    if (m->defined() && m->shape() != Shape({B, steps})) {
      throw ValueError(fmt::format("{} '{}': the {}'s mask of shape {} does not match (batch {}, {} steps)",
                                   class_name(), name_, what, m->shape().to_string(), B, steps));
    }
  }
  Tensor s = scores(query, key);
  // Keras: where(mask, s, s - 1e9), written as s + (mask - 1)·1e9 (the same floats).
  Tensor keep;
  if (value_mask.defined()) {
    keep = osprey::ops::matmul(Tensor::ones({B, Tq, 1}), osprey::ops::reshape(detail::as_float(value_mask), Shape({B, 1, Tv})));
  }
  if (o_.use_causal_mask) {
    const Tensor causal = detail::band(B, Tq, Tv, [](int64_t t, int64_t v) { return v <= t; });
    keep = keep.defined() ? osprey::ops::mul(keep, causal) : causal;
  }
  if (keep.defined()) s = osprey::ops::add(s, osprey::ops::mul(osprey::ops::sub(keep, Tensor::scalar(1.0)), Tensor::scalar(1e9)));
  const Tensor weights = osprey::ops::masked_softmax(s, Tensor());
  const Tensor used = dropout_ && training ? dropout_->call(weights, true) : weights;
  Tensor out = osprey::ops::matmul(used, value);  // (B, Tq, dim)
  if (query_mask.defined()) {  // masked queries output zeros
    out = osprey::ops::mul(out, osprey::ops::matmul(osprey::ops::reshape(detail::as_float(query_mask), Shape({B, Tq, 1})),
                                    Tensor::ones({B, 1, value.shape()[2]})));
  }
  return {out, return_attention_scores ? weights : Tensor()};
}

Tensor Attention::call(const Tensor& inputs, bool training) { return call({inputs, inputs}, training); }
Tensor Attention::call(const std::vector<Tensor>& inputs, bool training) { return call_masked_list(inputs, training, {}); }

Tensor Attention::call_masked_list(const std::vector<Tensor>& inputs, bool training, const std::vector<Tensor>& masks) {
  if (inputs.size() < 2 || inputs.size() > 3) {
    throw ValueError(fmt::format("{} layer accepts inputs list of length 2 or 3, namely [query, value] or [query, "
                                 "value, key]. Received length: {}.",
                                 class_name(), inputs.size()));
  }
  return attend(inputs[0], inputs[1], inputs.size() == 3 ? inputs[2] : Tensor(), masks.size() > 0 ? masks[0] : Tensor(),
                masks.size() > 1 ? masks[1] : Tensor(), training)
      .first;
}

Tensor Attention::compute_mask_list(const std::vector<Tensor>&, const std::vector<Tensor>& masks) {
  return masks.empty() ? Tensor() : masks[0];
}

}  // namespace osprey::keras::layers
