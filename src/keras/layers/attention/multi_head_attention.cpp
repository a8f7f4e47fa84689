// keras.layers.MultiHeadAttention (keras/src/layers/attention/multi_head_attention.py): projections by EinsumDense
// sublayers, per-head products as batched matmuls over (batch * heads), the masks of the inputs, a causal band, a
// sliding window and an explicit mask combined into one, and Keras 3's two computations (dot_product_attention, or
// the Softmax layer with dropout and scores).
#include <cmath>

#include <fmt/format.h>

#include "keras/layers/attention/attention_masks.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/activations.h"
#include "osprey/keras/layers/attention.h"
#include "osprey/keras/layers/regularization.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

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
  if (this->options().value_dim.has_value() || !this->options().output_shape.empty()) {
    throw ValueError("GroupedQueryAttention has no value_dim or output_shape (every head has head_dim; the output has "
                     "the query's features)");
  }
}

MultiHeadAttention::~MultiHeadAttention() = default;
MultiHeadAttention::MultiHeadAttention(MultiHeadAttention&&) noexcept = default;

Shape MultiHeadAttention::build(const Shape& input_shape) { return build(std::vector<Shape>{input_shape, input_shape}); }

Shape MultiHeadAttention::build(const std::vector<Shape>& shapes) {
  if (shapes.size() < 2 || shapes.size() > 3) {
    throw ValueError(fmt::format("MultiHeadAttention '{}' is called on [query, value] or [query, value, key]; got {} "
                                 "inputs",
                                 name_, shapes.size()));
  }
  const Shape& q = shapes[0];
  const Shape& v = shapes[1];
  const Shape& k = shapes.size() == 3 ? shapes[2] : shapes[1];
  for (const Shape* s : {&q, &v, &k}) {
    if (s->rank() != 2) {
      throw ValueError(fmt::format("MultiHeadAttention '{}': Osprey attends over the steps of (batch, steps, features) "
                                   "inputs; got an input of shape (None, {}) (attention over several axes is not "
                                   "implemented)",
                                   name_, fmt::join(s->dims(), ", ")));
    }
  }
  if (v[0] != k[0]) {
    throw ValueError(fmt::format("All dimensions of `value` and `key`, except the last one, must be equal. Received: "
                                 "value_shape=(None, {}) and key_shape=(None, {})",
                                 fmt::join(v.dims(), ", "), fmt::join(k.dims(), ", ")));
  }
  scores_shape_ = Shape({num_heads_, q[0], v[0]});
  std::vector<int64_t> out{q[0]};
  if (o_.output_shape.empty()) out.push_back(q[1]);
  for (auto d : o_.output_shape) out.push_back(d);
  if (built_) {
    if (query_->kernel()->shape()[0] != q[1] || value_->kernel()->shape()[0] != v[1] ||
        key_->kernel()->shape()[0] != k[1]) {
      throw ValueError(fmt::format("MultiHeadAttention '{}' was built for query, value and key features {}, {} and {}; "
                                   "got {}, {} and {}",
                                   name_, query_->kernel()->shape()[0], value_->kernel()->shape()[0],
                                   key_->kernel()->shape()[0], q[1], v[1], k[1]));
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
  query_ = projection("query", key_dim_, "", num_heads_);
  query_->build(q);
  key_ = projection("key", key_dim_, "", kv_heads_);
  key_->build(k);
  if (o_.use_gate) {
    gate_ = projection("gate", value_dim_, "sigmoid", num_heads_);
    gate_->build(q);
  }
  value_ = projection("value", value_dim_, "", kv_heads_);
  value_->build(v);
  softmax_ = std::make_shared<Softmax>();
  dropout_ = std::make_shared<Dropout>(o_.dropout);
  softmax_->set_dtype_policy(dtype_policy_);  // Keras makes MultiHeadAttention's sublayers with its dtype policy
  dropout_->set_dtype_policy(dtype_policy_);
  const std::vector<int64_t> out_dims = o_.output_shape.empty() ? std::vector<int64_t>{q[1]} : o_.output_shape;
  const std::string out_letters = std::string("efghijkl").substr(0, out_dims.size());
  std::vector<int64_t> out_partial{0};
  out_partial.insert(out_partial.end(), out_dims.begin(), out_dims.end());
  output_ = std::make_shared<EinsumDense>(
      "abcd,cd" + out_letters + "->ab" + out_letters, out_partial,
      EinsumDenseOptions{"", o_.use_bias ? out_letters : "", o_.kernel_initializer, o_.bias_initializer,
                         o_.kernel_regularizer, o_.bias_regularizer, o_.kernel_constraint, o_.bias_constraint,
                         "attention_output", dtype_policy_.name()});
  output_->build(Shape({q[0], num_heads_, value_dim_}));
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
  if (c.query_mask.defined()) parts.push_back(ops::matmul(ops::reshape(as_float(c.query_mask), Shape({B, T, 1})), ones_s));
  for (const Tensor* m : {&c.value_mask, &c.key_mask}) {
    if (m->defined()) parts.push_back(ops::matmul(ones_t, ops::reshape(as_float(*m), Shape({B, 1, S}))));
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
      m = ops::reshape(ops::matmul(Tensor::ones({B, 1}), ops::reshape(m, Shape({1, T * S}))), Shape({B, T, S}));
    }
    parts.push_back(m);
  }
  if (parts.empty()) return Tensor();
  Tensor mask = parts[0];
  for (std::size_t i = 1; i < parts.size(); ++i) mask = ops::mul(mask, parts[i]);
  return ops::reshape(mask, Shape({B, 1, T, S}));
}

std::pair<Tensor, Tensor> MultiHeadAttention::attend(const Tensor& query, const Tensor& value, const Tensor& key_in,
                                                     const AttentionCall& c) {
  const Tensor& key = key_in.defined() ? key_in : value;
  for (const Tensor* t : {&query, &value, &key}) {
    if (t->shape().rank() != 3) {
      throw ValueError(fmt::format("MultiHeadAttention '{}' takes (batch, steps, features) tensors; got shape {}",
                                   name_, t->shape().to_string()));
    }
  }
  if (query.shape()[0] != value.shape()[0] || key.shape()[0] != value.shape()[0]) {
    throw ValueError(fmt::format("MultiHeadAttention '{}': query, value and key have batch sizes {}, {} and {}", name_,
                                 query.shape()[0], value.shape()[0], key.shape()[0]));
  }
  auto sample = [](const Tensor& t) { return Shape({t.shape()[1], t.shape()[2]}); };
  build(key_in.defined() ? std::vector<Shape>{sample(query), sample(value), sample(key)}
                         : std::vector<Shape>{sample(query), sample(value)});
  const int64_t B = query.shape()[0], T = query.shape()[1], S = value.shape()[1], H = num_heads_;
  const Tensor mask = attention_mask(query, value, c);
  const bool causal = c.use_causal_mask;
  // Keras 3 computes dot_product_attention unless there is dropout or the scores are asked for.
  const bool dot_product = !(o_.dropout > 0.0 || c.return_attention_scores);
  const double scale = 1.0 / std::sqrt(static_cast<double>(key_dim_));
  // The projections compute in their policy's dtype (bfloat16 under mixed_bfloat16), and so does the attention
  // between them, as in Keras: each is called as a layer (Layer::operator() casts its input).
  auto project = [&](Layer& layer, const Tensor& x) { return layer(x, c.training); };
  Tensor q = project(*query_, query);
  if (!dot_product) q = ops::mul(q, Tensor::scalar(scale, q.dtype()));  // the Softmax path scales the query first
  auto heads_first = [&](const Tensor& x, int64_t steps, int64_t dim) {  // (B, steps, H, dim) -> (B·H, steps, dim)
    return ops::reshape(ops::transpose(x, {0, 2, 1, 3}), Shape({B * H, steps, dim}));
  };
  // Keys and values of kv_heads_ heads (GroupedQueryAttention), each repeated for its group of query heads (Keras's
  // ops.repeat on the heads' axis) by a product with ones.
  auto per_query_head = [&](const Tensor& x, int64_t steps, int64_t dim) {  // (B, steps, G, dim) -> (B·H, steps, dim)
    const Tensor g = ops::reshape(ops::transpose(x, {0, 2, 1, 3}), Shape({B * kv_heads_, 1, steps * dim}));
    if (kv_heads_ == H) return ops::reshape(g, Shape({B * H, steps, dim}));
    return ops::reshape(ops::matmul(Tensor::ones({B * kv_heads_, H / kv_heads_, 1}, g.dtype()), g), Shape({B * H, steps, dim}));
  };
  const Tensor qh = heads_first(q, T, key_dim_);
  const Tensor kh = per_query_head(project(*key_, key), S, key_dim_);
  const Tensor vh = per_query_head(project(*value_, value), S, value_dim_);
  Tensor logits = ops::reshape(ops::matmul(qh, kh, false, true), Shape({B, H, T, S}));
  if (dot_product) logits = ops::mul(logits, Tensor::scalar(scale, logits.dtype()));
  Tensor probs = ops::masked_softmax(logits, mask,
                                     dot_product ? ops::MaskedSoftmaxOptions{causal, -0.7f * 3.38953e38f, false}
                                                 : ops::MaskedSoftmaxOptions{causal, -1e9f, true});
  const Tensor used = o_.dropout > 0.0 ? dropout_->call(probs, c.training) : probs;
  Tensor out = ops::matmul(ops::reshape(used, Shape({B * H, T, S})), vh);  // (B·H, T, value_dim)
  out = ops::transpose(ops::reshape(out, Shape({B, H, T, value_dim_})), {0, 2, 1, 3});
  if (gate_) out = ops::mul(out, project(*gate_, query));
  return {project(*output_, out), c.return_attention_scores ? probs : Tensor()};
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
  if (inputs.size() < 2 || inputs.size() > 3) {
    throw ValueError(fmt::format("MultiHeadAttention '{}' is called on [query, value] or [query, value, key]; got {} "
                                 "inputs",
                                 name_, inputs.size()));
  }
  AttentionCall c;
  c.use_causal_mask = o_.use_causal_mask;
  c.training = training;
  if (masks.size() > 0) c.query_mask = masks[0];
  if (masks.size() > 1) c.value_mask = masks[1];
  if (masks.size() > 2) c.key_mask = masks[2];
  c.return_attention_scores = o_.return_attention_scores;
  auto [out, scores] = attend(inputs[0], inputs[1], inputs.size() == 3 ? inputs[2] : Tensor(), c);
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
