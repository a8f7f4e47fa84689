// keras.layers.MultiHeadAttention (keras/src/layers/attention/multi_head_attention.py): projections by EinsumDense
// sublayers, per-head products as batched matmuls over (batch * heads), the masks of the inputs, a causal band, a
// sliding window and an explicit mask combined into one, and Keras 3's two computations (dot_product_attention, or
// the Softmax layer with dropout and scores).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "keras/layers/attention/attention_masks.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/activations.h"
#include "osprey/keras/layers/attention.h"
#include "osprey/keras/layers/regularization.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

namespace {

// An attention mask's dims in Keras's layout for `full` = (batch, <other axes>, <T axes>, <S axes>), the last
// `tail` of them the attention axes': its leading axes may be left out (Keras expands the mask just before the
// attention axes; 1 where left out), each dimension that of `full` or 1. Empty when the mask does not fit.
std::vector<int64_t> mask_in_layout(const std::vector<int64_t>& mask, const std::vector<int64_t>& full, std::size_t tail) {
  if (mask.size() < tail || mask.size() > full.size()) return {};
  std::vector<int64_t> out(mask.begin(), mask.end() - static_cast<std::ptrdiff_t>(tail));
  out.resize(full.size() - tail, 1);
  out.insert(out.end(), mask.end() - static_cast<std::ptrdiff_t>(tail), mask.end());
  for (std::size_t i = 0; i < full.size(); ++i) {
    if (out[i] != full[i] && out[i] != 1) return {};
  }
  return out;
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions options)
    : MultiHeadAttention(num_heads, key_dim, num_heads, std::move(options), "multi_head_attention") {}

MultiHeadAttention::MultiHeadAttention(int64_t num_heads, int64_t key_dim, int64_t kv_heads,
                                       MultiHeadAttentionOptions options, const std::string& default_prefix)
    : Layer(options.name, default_prefix, options.dtype), kv_heads_(kv_heads), num_heads_(num_heads), key_dim_(key_dim),
      value_dim_(options.value_dim.value_or(key_dim)), o_(std::move(options)) {
  if (num_heads <= 0) {
    throw ValueError(fmt::format("Received an invalid value for argument `num_heads`, expected a positive integer. "
                                 "Received: num_heads={}",
                                 num_heads));
  }
  if (key_dim <= 0) {
    throw ValueError(fmt::format("Received an invalid value for argument `key_dim`, expected a positive integer. "
                                 "Received: key_dim={}",
                                 key_dim));
  }
  if (value_dim_ <= 0) {
    throw ValueError(fmt::format("Received an invalid value for argument `value_dim`, expected a positive integer or "
                                 "`None`. Received: value_dim={}",
                                 value_dim_));
  }
  if (!(o_.dropout >= 0.0 && o_.dropout < 1.0)) {
    throw ValueError(fmt::format("MultiHeadAttention: dropout must be in [0, 1), got {}", o_.dropout));
  }
  if (o_.sliding_window && *o_.sliding_window <= 0) {
    throw ValueError(fmt::format("MultiHeadAttention: sliding_window must be a positive integer, got {}",
                                 *o_.sliding_window));
  }
  for (auto d : o_.output_shape) {
    if (d <= 0) throw ValueError(fmt::format("MultiHeadAttention: output_shape entries must be positive, got {}", d));
  }
}

GroupedQueryAttention::GroupedQueryAttention(int64_t head_dim, int64_t num_query_heads, int64_t num_key_value_heads,
                                             MultiHeadAttentionOptions options)
    : MultiHeadAttention(num_query_heads, head_dim, num_key_value_heads, std::move(options), "grouped_query_attention") {
  if (num_key_value_heads <= 0 || num_query_heads % num_key_value_heads != 0) {
    throw ValueError(fmt::format("`num_query_heads` must be divisible by `num_key_value_heads`. Received: "
                                 "num_query_heads={}, num_key_value_heads={}",
                                 num_query_heads, num_key_value_heads));
  }
  if (this->options().value_dim.has_value() || !this->options().output_shape.empty() ||
      !this->options().attention_axes.empty()) {
    throw ValueError("GroupedQueryAttention has no value_dim, output_shape or attention_axes (every head has head_dim; "
                     "the output has the query's features; it attends over the steps)");
  }
}

MultiHeadAttention::~MultiHeadAttention() = default;
MultiHeadAttention::MultiHeadAttention(MultiHeadAttention&&) noexcept = default;

Shape MultiHeadAttention::build(const Shape& input_shape) { return build(std::vector<Shape>{input_shape, input_shape}); }

std::vector<int64_t> MultiHeadAttention::attention_axes() const {
  return axes_.empty() ? o_.attention_axes : std::vector<int64_t>(axes_.begin(), axes_.end());
}

Shape MultiHeadAttention::build(const std::vector<Shape>& shapes) {
  const std::size_t n = shapes.size() - (o_.attention_mask_input ? 1 : 0);
  if (shapes.empty() || n < 2 || n > 3) {
    throw ValueError(fmt::format("MultiHeadAttention '{}' is called on [query, value] or [query, value, key]{}; got {} "
                                 "inputs",
                                 name_, o_.attention_mask_input ? " and then the attention mask" : "", shapes.size()));
  }
  Shape out = build_attention(shapes[0], shapes[1], n == 3 ? shapes[2] : shapes[1]);
  if (o_.attention_mask_input) {  // the mask input's batch against the scores' without their heads
    const Shape& m = shapes[n];
    std::vector<int64_t> full{1}, mask{1};
    const std::size_t heads_at = scores_shape_.dims().size() - 1 - 2 * axes_.size();
    for (std::size_t i = 0; i < scores_shape_.dims().size(); ++i) {
      if (i != heads_at) full.push_back(scores_shape_.dims()[i]);
    }
    mask.insert(mask.end(), m.dims().begin(), m.dims().end());
    if (mask_in_layout(mask, full, 2 * axes_.size()).empty()) {
      throw ValueError(fmt::format("MultiHeadAttention '{}': the attention mask of shape (None, {}) does not match the "
                                   "scores' (None, {}): give one of (batch, [other axes,] query steps, key steps)",
                                   name_, fmt::join(m.dims(), ", "), fmt::join(scores_shape_.dims(), ", ")));
    }
  }
  return out;
}

Shape MultiHeadAttention::build_attention(const Shape& q, const Shape& v, const Shape& k) {
  const int r = q.rank() + 1;  // with the batch
  for (const Shape* s : {&q, &v, &k}) {
    if (s->rank() < 2 || s->rank() != q.rank()) {
      throw ValueError(fmt::format("MultiHeadAttention '{}' attends over (batch, steps..., features) inputs of one "
                                   "rank; got query (None, {}), value (None, {}) and key (None, {})",
                                   name_, fmt::join(q.dims(), ", "), fmt::join(v.dims(), ", "),
                                   fmt::join(k.dims(), ", ")));
    }
  }
  if (r > 3 && class_name() == "GroupQueryAttention") {
    throw ValueError(fmt::format("GroupQueryAttention '{}' attends over (batch, steps, features) inputs; got the query "
                                 "(None, {})",
                                 name_, fmt::join(q.dims(), ", ")));
  }
  for (int i = 0; i + 1 < v.rank(); ++i) {
    if (v[i] != k[i]) {
      throw ValueError(fmt::format("All dimensions of `value` and `key`, except the last one, must be equal. Received: "
                                   "value_shape=(None, {}) and key_shape=(None, {})",
                                   fmt::join(v.dims(), ", "), fmt::join(k.dims(), ", ")));
    }
  }
  // Keras's normalisation: an axis of the projected (rank r + 1) tensor, negative ones from its last but one.
  std::vector<int> axes;
  if (o_.attention_axes.empty()) {
    for (int i = 1; i <= r - 2; ++i) axes.push_back(i);
  }
  for (int64_t a : o_.attention_axes) {
    const int64_t axis = a < 0 ? r + a : a;
    if (axis < 1 || axis > r - 2 || std::find(axes.begin(), axes.end(), axis) != axes.end()) {
      throw ValueError(fmt::format("MultiHeadAttention '{}': attention_axes ({}) must name distinct axes between the "
                                   "batch and the features of inputs of rank {} (1 to {}, or -{} to -2)",
                                   name_, fmt::join(o_.attention_axes, ", "), r, r - 2, r - 1));
    }
    axes.push_back(static_cast<int>(axis));
  }
  std::vector<int64_t> scores, t_dims, s_dims;
  for (int i = 1; i <= r - 2; ++i) {  // the other axes: batch axes, the same for the query and the value
    if (std::find(axes.begin(), axes.end(), i) != axes.end()) continue;
    if (q[i - 1] != v[i - 1]) {
      throw ValueError(fmt::format("MultiHeadAttention '{}': the query (None, {}) and the value (None, {}) differ on "
                                   "axis {}, which is not an attention axis ({})",
                                   name_, fmt::join(q.dims(), ", "), fmt::join(v.dims(), ", "), i, fmt::join(axes, ", ")));
    }
    scores.push_back(q[i - 1]);
  }
  scores.push_back(num_heads_);
  for (int a : axes) t_dims.push_back(q[a - 1]), s_dims.push_back(v[a - 1]);
  scores.insert(scores.end(), t_dims.begin(), t_dims.end());
  scores.insert(scores.end(), s_dims.begin(), s_dims.end());
  if (built_ && axes != axes_) {
    throw ValueError(fmt::format("MultiHeadAttention '{}' was built to attend over axes {}; the query (None, {}) gives "
                                 "axes {}",
                                 name_, fmt::join(axes_, ", "), fmt::join(q.dims(), ", "), fmt::join(axes, ", ")));
  }
  axes_ = axes;
  scores_shape_ = Shape(scores);
  std::vector<int64_t> out(q.dims().begin(), q.dims().end() - 1);
  if (o_.output_shape.empty()) out.push_back(q[q.rank() - 1]);
  for (auto d : o_.output_shape) out.push_back(d);
  if (built_) {
    if (query_->kernel()->shape()[0] != q[q.rank() - 1] || value_->kernel()->shape()[0] != v[v.rank() - 1] ||
        key_->kernel()->shape()[0] != k[k.rank() - 1]) {
      throw ValueError(fmt::format("MultiHeadAttention '{}' was built for query, value and key features {}, {} and {}; "
                                   "got {}, {} and {}",
                                   name_, query_->kernel()->shape()[0], value_->kernel()->shape()[0],
                                   key_->kernel()->shape()[0], q[q.rank() - 1], v[v.rank() - 1], k[k.rank() - 1]));
    }
    return Shape(out);
  }
  auto projection = [&](const char* name, int64_t per_head, const std::string& activation, int64_t heads) {
    EinsumDenseOptions e{activation,           o_.use_bias ? "de" : "", o_.kernel_initializer, o_.bias_initializer,
                         o_.kernel_regularizer, o_.bias_regularizer,     o_.kernel_constraint,  o_.bias_constraint,
                         name,                 dtype_policy_.name()};
    return std::make_shared<EinsumDense>("abc,cde->abde", std::vector<int64_t>{0, heads, per_head}, e);
  };
  // Keras's order: query, key, gate, value, the softmax and dropout (auto-named), the output.
  // The projections see (steps, features): attend_axes flattens the other axes into the steps.
  auto steps = [&](const Shape& x) {
    int64_t n = 1;
    for (int a : axes_) n *= x[a - 1];
    return Shape({n, x[x.rank() - 1]});
  };
  query_ = projection("query", key_dim_, "", num_heads_);
  query_->build(steps(q));
  key_ = projection("key", key_dim_, "", kv_heads_);
  key_->build(steps(k));
  if (o_.use_gate) {
    gate_ = projection("gate", value_dim_, "sigmoid", num_heads_);
    gate_->build(steps(q));
  }
  value_ = projection("value", value_dim_, "", kv_heads_);
  value_->build(steps(v));
  softmax_ = std::make_shared<Softmax>();
  dropout_ = std::make_shared<Dropout>(o_.dropout);
  softmax_->set_dtype_policy(dtype_policy_);  // Keras makes MultiHeadAttention's sublayers with its dtype policy
  dropout_->set_dtype_policy(dtype_policy_);
  const std::vector<int64_t> out_dims = o_.output_shape.empty() ? std::vector<int64_t>{q[q.rank() - 1]} : o_.output_shape;
  const std::string out_letters = std::string("efghijkl").substr(0, out_dims.size());
  std::vector<int64_t> out_partial{0};
  out_partial.insert(out_partial.end(), out_dims.begin(), out_dims.end());
  output_ = std::make_shared<EinsumDense>(
      "abcd,cd" + out_letters + "->ab" + out_letters, out_partial,
      EinsumDenseOptions{"", o_.use_bias ? out_letters : "", o_.kernel_initializer, o_.bias_initializer,
                         o_.kernel_regularizer, o_.bias_regularizer, o_.kernel_constraint, o_.bias_constraint,
                         "attention_output", dtype_policy_.name()});
  output_->build(Shape({steps(q)[0], num_heads_, value_dim_}));
  for (EinsumDense* d : {query_.get(), key_.get(), gate_.get(), value_.get(), output_.get()}) {
    if (!d) continue;
    for (auto* var : d->variables()) var->set_path(name_ + "/" + var->path());  // "mha/query/kernel", as Keras
  }
  return finish_build(Shape(out));
}

// One (batch, T, S) mask of 1 (may attend) and 0 from the inputs' masks, the explicit mask and the sliding window
// (the causal band is the softmax kernel's own); undefined when there is none.
Tensor MultiHeadAttention::attention_mask(const Tensor& query, const Tensor& value, const AttentionCall& c) const {
  const int64_t B = query.shape()[0], T = query.shape()[1], S = value.shape()[1];
  std::vector<Tensor> parts;  // each (B, T, S)
  auto check = [&](const Tensor& m, const char* what, int64_t steps) {
    if (m.defined() && m.shape() != Shape({B, steps})) {
      throw ValueError(fmt::format("MultiHeadAttention '{}': {} of shape {} does not match the inputs (batch {}, {} "
                                   "steps)",
                                   name_, what, m.shape().to_string(), B, steps));
    }
  };
  check(c.query_mask, "the query's mask", T);
  check(c.value_mask, "the value's mask", S);
  check(c.key_mask, "the key's mask", S);
  const Tensor ones_t = c.value_mask.defined() || c.key_mask.defined() ? Tensor::ones({B, T, 1}) : Tensor();
  const Tensor ones_s = c.query_mask.defined() ? Tensor::ones({B, 1, S}) : Tensor();
  using detail::as_float;
  // An outer product against ones spreads a (B, T) or (B, S) mask over (B, T, S).
  if (c.query_mask.defined()) parts.push_back(osprey::ops::matmul(osprey::ops::reshape(as_float(c.query_mask), Shape({B, T, 1})), ones_s));
  for (const Tensor* m : {&c.value_mask, &c.key_mask}) {
    if (m->defined()) parts.push_back(osprey::ops::matmul(ones_t, osprey::ops::reshape(as_float(*m), Shape({B, 1, S}))));
  }
  if (o_.sliding_window) {
    const int64_t w = *o_.sliding_window;
    parts.push_back(detail::band(B, T, S, [w](int64_t t, int64_t s) { return std::abs(t - s) < w; }));
  }
  if (c.attention_mask.defined()) {
    const auto& ms = c.attention_mask.shape();
    const bool ok = (ms.rank() == 3 && (ms[0] == B || ms[0] == 1) && ms[1] == T && ms[2] == S) ||
                    (ms.rank() == 2 && ms[0] == T && ms[1] == S);
    if (!ok) {
      throw ValueError(fmt::format("MultiHeadAttention '{}': attention_mask of shape {} must be (batch, T, S) = ({}, "
                                   "{}, {}) (or (1, T, S), (T, S))",
                                   name_, ms.to_string(), B, T, S));
    }
    Tensor m = as_float(c.attention_mask);
    if (ms.rank() == 2 || ms[0] != B) {  // the same mask for every sample
      m = osprey::ops::reshape(osprey::ops::matmul(Tensor::ones({B, 1}), osprey::ops::reshape(m, Shape({1, T * S}))), Shape({B, T, S}));
    }
    parts.push_back(m);
  }
  if (parts.empty()) return Tensor();
  Tensor mask = parts[0];
  for (std::size_t i = 1; i < parts.size(); ++i) mask = osprey::ops::mul(mask, parts[i]);
  return osprey::ops::reshape(mask, Shape({B, 1, T, S}));
}

std::pair<Tensor, Tensor> MultiHeadAttention::attend(const Tensor& query, const Tensor& value, const Tensor& key_in,
                                                     const AttentionCall& c) {
  const Tensor& key = key_in.defined() ? key_in : value;
  const int r = query.shape().rank();
  for (const Tensor* t : {&query, &value, &key}) {
    if (t->shape().rank() < 3 || t->shape().rank() != r) {
      throw ValueError(fmt::format("MultiHeadAttention '{}' takes (batch, steps..., features) tensors of one rank; got "
                                   "query {}, value {} and key {}",
                                   name_, query.shape().to_string(), value.shape().to_string(), key.shape().to_string()));
    }
  }
  if (query.shape()[0] != value.shape()[0] || key.shape()[0] != value.shape()[0]) {
    throw ValueError(fmt::format("MultiHeadAttention '{}': query, value and key have batch sizes {}, {} and {}", name_,
                                 query.shape()[0], value.shape()[0], key.shape()[0]));
  }
  auto sample = [](const Tensor& t) { return Shape(std::vector<int64_t>(t.shape().dims().begin() + 1, t.shape().dims().end())); };
  build_attention(sample(query), sample(value), sample(key));
  if (r > 3) return attend_axes(query, value, key, c);
  return attend_steps(query, value, key, attention_mask(query, value, c), c.use_causal_mask, false, c.training,
                      c.return_attention_scores);
}

std::pair<Tensor, Tensor> MultiHeadAttention::attend_axes(const Tensor& query, const Tensor& value, const Tensor& key,
                                                          const AttentionCall& c) {
  if (c.query_mask.defined() || c.value_mask.defined() || c.key_mask.defined()) {
    throw ValueError(fmt::format("MultiHeadAttention '{}': masks of the inputs (Embedding's mask_zero, Masking) are "
                                 "not implemented for inputs of rank above 3 (query {}); give an attention_mask",
                                 name_, query.shape().to_string()));
  }
  if ((c.use_causal_mask || o_.sliding_window) && axes_ != std::vector<int>{1}) {
    throw ValueError(fmt::format("MultiHeadAttention '{}': use_causal_mask and sliding_window run along axis 1 (Keras "
                                 "builds them from the inputs' second axis); the attention axes are {}",
                                 name_, fmt::join(axes_, ", ")));
  }
  const int r = query.shape().rank();
  const int64_t B = query.shape()[0];
  // (batch, <other axes>, <attention axes>, features) -> (batch * others, steps, features), the others first.
  std::vector<int> perm{0}, others;
  for (int i = 1; i <= r - 2; ++i) {
    if (std::find(axes_.begin(), axes_.end(), i) == axes_.end()) others.push_back(i);
  }
  perm.insert(perm.end(), others.begin(), others.end());
  perm.insert(perm.end(), axes_.begin(), axes_.end());
  perm.push_back(r - 1);
  int64_t n_other = 1;
  for (int i : others) n_other *= query.shape()[i];
  auto steps_of = [&](const Tensor& x) {
    int64_t n = 1;
    for (int a : axes_) n *= x.shape()[a];
    return n;
  };
  const int64_t T = steps_of(query), S = steps_of(value);
  auto flat = [&](const Tensor& x) {
    return osprey::ops::reshape(osprey::ops::transpose(x, perm), Shape({B * n_other, steps_of(x), x.shape()[r - 1]}));
  };
  AttentionCall flat_call;
  if (c.attention_mask.defined()) {
    // Keras's layout: (batch, <other axes>, <T axes>, <S axes>), leading axes left out from the right end of the
    // batch axes (Keras expands the mask just before the attention axes).
    std::vector<int64_t> full{B};
    for (int i : others) full.push_back(query.shape()[i]);
    for (int a : axes_) full.push_back(query.shape()[a]);
    for (int a : axes_) full.push_back(value.shape()[a]);
    const auto expanded = mask_in_layout(c.attention_mask.shape().dims_vector(), full, 2 * axes_.size());
    if (expanded.empty()) {
      throw ValueError(fmt::format("MultiHeadAttention '{}': attention_mask of shape {} does not match (batch, <other "
                                   "axes>, <query's attention axes>, <key's attention axes>) = ({}) (each dimension "
                                   "that or 1; leading ones may be left out)",
                                   name_, c.attention_mask.shape().to_string(), fmt::join(full, ", ")));
    }
    const Tensor m = osprey::ops::broadcast_to(osprey::ops::reshape(detail::as_float(c.attention_mask), Shape(expanded)), Shape(full));
    flat_call.attention_mask = osprey::ops::reshape(m, Shape({B * n_other, T, S}));
  }
  const Tensor qf = flat(query), vf = flat(value);
  const Tensor mask = attention_mask(qf, vf, flat_call);  // with the sliding window
  auto [out, probs] = attend_steps(qf, vf, key.impl() == value.impl() ? vf : flat(key), mask, c.use_causal_mask, true,
                                   c.training, c.return_attention_scores);
  // (batch * others, T, out...) -> (batch, <others>, <T axes>, out...) -> the query's order of axes.
  std::vector<int64_t> dims{B};
  for (std::size_t i = 1; i + 1 < perm.size(); ++i) dims.push_back(query.shape()[perm[i]]);
  const std::size_t out_rank = static_cast<std::size_t>(out.shape().rank()) - 2;  // the output's own axes
  for (std::size_t i = 0; i < out_rank; ++i) dims.push_back(out.shape()[2 + static_cast<int>(i)]);
  std::vector<int> back(dims.size());
  for (std::size_t i = 0; i + 1 < perm.size(); ++i) back[perm[i]] = static_cast<int>(i);
  for (std::size_t i = 0; i < out_rank; ++i) back[perm.size() - 1 + i] = static_cast<int>(perm.size() - 1 + i);
  out = osprey::ops::transpose(osprey::ops::reshape(out, Shape(dims)), back);
  if (probs.defined()) {
    std::vector<int64_t> sdims{B};
    sdims.insert(sdims.end(), scores_shape_.dims().begin(), scores_shape_.dims().end());
    probs = osprey::ops::reshape(probs, Shape(sdims));
  }
  return {out, probs};
}

std::pair<Tensor, Tensor> MultiHeadAttention::attend_steps(const Tensor& query, const Tensor& value, const Tensor& key,
                                                           const Tensor& mask, bool causal, bool softmax_path,
                                                           bool training, bool return_scores) {
  const int64_t B = query.shape()[0], T = query.shape()[1], S = value.shape()[1], H = num_heads_;
  // Keras 3 computes dot_product_attention unless there is dropout or the scores are asked for (or the inputs have
  // other axes).
  const bool dot_product = !(o_.dropout > 0.0 || return_scores || softmax_path);
  const double scale = 1.0 / std::sqrt(static_cast<double>(key_dim_));
  // The projections compute in their policy's dtype (bfloat16 under mixed_bfloat16), and so does the attention
  // between them, as in Keras: each is called as a layer (Layer::operator() casts its input).
  auto project = [&](Layer& layer, const Tensor& x) { return layer(x, training); };
  Tensor q = project(*query_, query);
  if (!dot_product) q = osprey::ops::mul(q, Tensor::scalar(scale, q.dtype()));  // the Softmax path scales the query first
  auto heads_first = [&](const Tensor& x, int64_t steps, int64_t dim) {  // (B, steps, H, dim) -> (B·H, steps, dim)
    return osprey::ops::reshape(osprey::ops::transpose(x, {0, 2, 1, 3}), Shape({B * H, steps, dim}));
  };
  // Keys and values of kv_heads_ heads (GroupedQueryAttention), each repeated for its group of query heads (Keras's
  // ops.repeat on the heads' axis) by a product with ones.
  auto per_query_head = [&](const Tensor& x, int64_t steps, int64_t dim) {  // (B, steps, G, dim) -> (B·H, steps, dim)
    const Tensor g = osprey::ops::reshape(osprey::ops::transpose(x, {0, 2, 1, 3}), Shape({B * kv_heads_, 1, steps * dim}));
    if (kv_heads_ == H) return osprey::ops::reshape(g, Shape({B * H, steps, dim}));
    return osprey::ops::reshape(osprey::ops::matmul(Tensor::ones({B * kv_heads_, H / kv_heads_, 1}, g.dtype()), g), Shape({B * H, steps, dim}));
  };
  const Tensor qh = heads_first(q, T, key_dim_);
  const Tensor kh = per_query_head(project(*key_, key), S, key_dim_);
  const Tensor vh = per_query_head(project(*value_, value), S, value_dim_);
  Tensor logits = osprey::ops::reshape(osprey::ops::matmul(qh, kh, false, true), Shape({B, H, T, S}));
  if (dot_product) logits = osprey::ops::mul(logits, Tensor::scalar(scale, logits.dtype()));
  Tensor probs = osprey::ops::masked_softmax(logits, mask,
                                     dot_product ? osprey::ops::MaskedSoftmaxOptions{causal, -0.7f * 3.38953e38f, false}
                                                 : osprey::ops::MaskedSoftmaxOptions{causal, -1e9f, true});
  const Tensor used = o_.dropout > 0.0 ? dropout_->call(probs, training) : probs;
  Tensor out = osprey::ops::matmul(osprey::ops::reshape(used, Shape({B * H, T, S})), vh);  // (B·H, T, value_dim)
  out = osprey::ops::transpose(osprey::ops::reshape(out, Shape({B, H, T, value_dim_})), {0, 2, 1, 3});
  if (gate_) out = osprey::ops::mul(out, project(*gate_, query));
  return {project(*output_, out), return_scores ? probs : Tensor()};
}

Tensor MultiHeadAttention::call(const Tensor& inputs, bool training) { return call({inputs, inputs}, training); }

Tensor MultiHeadAttention::call(const std::vector<Tensor>& inputs, bool training) {
  return call_masked_list(inputs, training, {});
}

Tensor MultiHeadAttention::call_masked_list(const std::vector<Tensor>& inputs, bool training,
                                            const std::vector<Tensor>& masks) {
  std::vector<Tensor> unused;
  return call_outputs_masked(inputs, training, masks, unused)[0];
}

std::vector<Shape> MultiHeadAttention::output_shapes() const {
  if (!o_.return_attention_scores) return {output_shape_};
  return {output_shape_, scores_shape_};
}

std::vector<Tensor> MultiHeadAttention::call_outputs(const std::vector<Tensor>& inputs, bool training) {
  std::vector<Tensor> unused;
  return call_outputs_masked(inputs, training, {}, unused);
}

std::vector<Tensor> MultiHeadAttention::call_outputs_masked(const std::vector<Tensor>& inputs, bool training,
                                                            const std::vector<Tensor>& masks,
                                                            std::vector<Tensor>& output_masks) {
  const std::size_t n = inputs.size() - (o_.attention_mask_input && !inputs.empty() ? 1 : 0);
  if (n < 2 || n > 3) {
    throw ValueError(fmt::format("MultiHeadAttention '{}' is called on [query, value] or [query, value, key]{}; got {} "
                                 "inputs",
                                 name_, o_.attention_mask_input ? " and then the attention mask" : "", inputs.size()));
  }
  AttentionCall c;
  c.use_causal_mask = o_.use_causal_mask;
  c.training = training;
  if (masks.size() > 0) c.query_mask = masks[0];
  if (masks.size() > 1) c.value_mask = masks[1];
  if (masks.size() > 2 && n == 3) c.key_mask = masks[2];
  if (o_.attention_mask_input) c.attention_mask = inputs[n];
  c.return_attention_scores = o_.return_attention_scores;
  auto [out, scores] = attend(inputs[0], inputs[1], n == 3 ? inputs[2] : Tensor(), c);
  output_masks.assign(c.return_attention_scores ? 2 : 1, Tensor());
  output_masks[0] = c.query_mask;  // the query's mask passes on; the scores have none
  if (!c.return_attention_scores) return {out};
  return {out, scores};
}

Tensor MultiHeadAttention::compute_mask_list(const std::vector<Tensor>&, const std::vector<Tensor>& masks) {
  return masks.empty() ? Tensor() : masks[0];
}

std::vector<std::pair<std::string, Layer*>> MultiHeadAttention::sublayers() {
  if (!built_) return {};
  std::vector<std::pair<std::string, Layer*>> out{{"_dropout_layer", dropout_.get()}};
  if (gate_) out.emplace_back("_gate_dense", gate_.get());
  out.insert(out.end(), {{"_softmax", softmax_.get()},
                         {"key_dense", key_.get()},
                         {"output_dense", output_.get()},
                         {"query_dense", query_.get()},
                         {"value_dense", value_.get()}});
  return out;
}

std::vector<std::pair<std::string, Layer*>> GroupedQueryAttention::sublayers() {
  auto parts = MultiHeadAttention::sublayers();  // Keras's GroupedQueryAttention has no public aliases: "_key_dense", ...
  for (auto& [attribute, layer] : parts) {
    if (!attribute.starts_with("_")) attribute = "_" + attribute;
  }
  return parts;
}

std::vector<Variable*> MultiHeadAttention::variables() {
  std::vector<Variable*> out;
  for (EinsumDense* d : {query_.get(), key_.get(), gate_.get(), value_.get(), output_.get()}) {
    if (!d) continue;
    for (auto* v : d->variables()) out.push_back(v);
  }
  return out;
}

void MultiHeadAttention::append_trainable_variables(std::vector<Variable*>& out) {
  if (!trainable) return;
  for (EinsumDense* d : {query_.get(), key_.get(), gate_.get(), value_.get(), output_.get()}) {
    if (d) d->append_trainable_variables(out);
  }
}

int64_t MultiHeadAttention::count_params() const {
  int64_t n = 0;
  for (const EinsumDense* d : {query_.get(), key_.get(), gate_.get(), value_.get(), output_.get()}) {
    if (d) n += d->count_params();
  }
  return n;
}

std::vector<Tensor> MultiHeadAttention::regularization_losses() {
  std::vector<Tensor> out;
  for (EinsumDense* d : {query_.get(), key_.get(), gate_.get(), value_.get(), output_.get()}) {
    if (!d) continue;
    for (auto& t : d->regularization_losses()) out.push_back(t);
  }
  return out;
}

bool MultiHeadAttention::has_regularization() const {
  return o_.kernel_regularizer.has_value() || o_.bias_regularizer.has_value();
}

void MultiHeadAttention::apply_constraints() {
  for (EinsumDense* d : {query_.get(), key_.get(), gate_.get(), value_.get(), output_.get()}) {
    if (d) d->apply_constraints();
  }
}

}  // namespace osprey::keras::layers
