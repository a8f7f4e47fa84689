// Attention layers (keras.layers.MultiHeadAttention), as Keras 3 builds them: EinsumDense projections of the
// query, key and value into heads, a scaled dot product per head (batched matmuls), a masked softmax, and an
// EinsumDense back to the output. Masks of the inputs (Embedding(mask_zero), Masking), a causal mask and an explicit
// attention mask combine as in Keras.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/keras/layers/core.h"
#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers {

class Dropout;
class Softmax;

/// MultiHeadAttention's keyword arguments besides num_heads and key_dim.
struct MultiHeadAttentionOptions {
  std::optional<int64_t> value_dim{};  ///< each head's value size; key_dim when unset
  double dropout = 0.0;                ///< on the attention probabilities, in training
  bool use_bias = true;
  /// The output's dimensions after (batch, steps); empty: the query's last dimension.
  std::vector<int64_t> output_shape{};
  /// Each query attends only to keys within sliding_window - 1 steps of it (a symmetric band), as Keras.
  std::optional<int64_t> sliding_window{};
  /// A sigmoid gate from the query multiplies the heads' outputs (Keras's use_gate).
  bool use_gate = false;
  /// The axes of the inputs attention runs over (Keras's attention_axes; negative ones count from the end as
  /// Keras's do: -2 is the last axis before the features of a rank-3 input); empty: every axis between the batch
  /// and the features. Over several axes the softmax normalises over all the key's attention axes together; the
  /// other axes between the batch and the features are batch axes.
  std::vector<int64_t> attention_axes{};
  initializers::Initializer kernel_initializer = "glorot_uniform";
  initializers::Initializer bias_initializer = "zeros";
  std::optional<Regularizer> kernel_regularizer{}, bias_regularizer{};
  std::optional<Constraint> kernel_constraint{}, bias_constraint{};
  std::optional<int64_t> seed{};  ///< kept in the config (Osprey's dropout draws from its own generator)
  /// Keras's call argument use_causal_mask, for every call of this layer in a model (each query attends to the
  /// keys up to its own step); a Keras file's calls with it load as this.
  bool use_causal_mask = false;
  /// Keras's call argument return_attention_scores, for every call in a model: a second output, the attention
  /// probabilities (batch, num_heads, T, S) (`auto outs = mha.call_all({q, v})`).
  bool return_attention_scores = false;
  /// Keras's call argument attention_mask given as a tensor of the graph, for every call in a model: the last input
  /// of each call is the mask, `mha({query, value, mask})` or `mha({query, value, key, mask})` -- a (T, S) mask per
  /// sample for a model input of shape (T, S), 1 where query t may attend to key s (any dtype, non-zero: attend).
  bool attention_mask_input = false;
  std::string name{};
  std::string dtype{};  ///< Keras's dtype: a policy name ("float32", "mixed_bfloat16"); empty: the global policy
};

/// What one eager call of MultiHeadAttention::attend takes besides the tensors (Keras's call arguments).
struct AttentionCall {
  /// (batch, T, S) or broadcastable (1 on any axis): 1 where query t may attend to key s.
  Tensor attention_mask{};
  /// Masks of the query (batch, T), value and key (batch, S) as Embedding(mask_zero) makes them.
  Tensor query_mask{}, value_mask{}, key_mask{};
  bool use_causal_mask = false;
  bool return_attention_scores = false;
  bool training = false;
};

/// keras.layers.MultiHeadAttention(num_heads, key_dim) on (batch, T, dim) queries and (batch, S, dim) values (and
/// keys): called on {query, value} or {query, value, key}. Its weights, under Keras's names: query/key/value
/// EinsumDense kernels (dim, num_heads, key_dim) with biases (num_heads, key_dim), attention_output (num_heads,
/// value_dim, out) with bias (out,). Inputs of rank above 3 attend over their `attention_axes` (the scores are
/// (batch, <other axes>, num_heads, <query's attention axes>, <key's attention axes>), as Keras's); the causal mask
/// and the sliding window then need attention_axes {1}, and the inputs' own masks are refused (ValueError). As in
/// Keras 3 on TensorFlow, a rank-3 call without dropout that returns no scores computes dot_product_attention (a
/// query with nothing to attend to averages every value); otherwise the Softmax layer's path (its scores are 0).
class MultiHeadAttention : public Layer {
 public:
  MultiHeadAttention(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions options = {});
  ~MultiHeadAttention() override;
  MultiHeadAttention(MultiHeadAttention&&) noexcept;
  OSPREY_KERAS_LAYER(MultiHeadAttention)
  /// Under a mixed policy the projections and the attention between them run in the compute dtype (the softmax in
  /// float32 between casts), and the output is in it, as Keras's.
  bool supports_half_compute() const override { return true; }
  std::string class_name() const override { return "MultiHeadAttention"; }
  std::string get_config() const override;
  int num_inputs() const override { return 0; }
  Shape build(const Shape& input_shape) override;
  Shape build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const Tensor& inputs, bool training) override;
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;
  bool supports_masking() const override { return true; }
  Tensor call_masked_list(const std::vector<Tensor>& inputs, bool training, const std::vector<Tensor>& masks) override;
  /// The output's mask: the query's (Keras).
  Tensor compute_mask_list(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks) override;
  int num_outputs() const override { return o_.return_attention_scores ? 2 : 1; }
  std::vector<Shape> output_shapes() const override;
  std::vector<Tensor> call_outputs(const std::vector<Tensor>& inputs, bool training) override;
  std::vector<Tensor> call_outputs_masked(const std::vector<Tensor>& inputs, bool training,
                                          const std::vector<Tensor>& masks, std::vector<Tensor>& output_masks) override;
  std::vector<std::pair<std::string, Layer*>> sublayers() override;
  std::vector<Variable*> variables() override;
  void append_trainable_variables(std::vector<Variable*>& out) override;
  int64_t count_params() const override;
  std::vector<Tensor> regularization_losses() override;
  bool has_regularization() const override;
  void apply_constraints() override;

  /// The eager call with Keras's call arguments: the output (batch, T, out), and with return_attention_scores the
  /// probabilities (batch, num_heads, T, S) as the second tensor (over several axes: see the class).
  std::pair<Tensor, Tensor> attend(const Tensor& query, const Tensor& value, const Tensor& key = Tensor(),
                                   const AttentionCall& call = {});

  int64_t num_heads() const { return num_heads_; }
  int64_t key_dim() const { return key_dim_; }
  int64_t value_dim() const { return value_dim_; }
  const MultiHeadAttentionOptions& options() const { return o_; }
  /// Keras's call argument for every later call (see MultiHeadAttentionOptions::use_causal_mask).
  void set_use_causal_mask(bool on) { o_.use_causal_mask = on; }
  void set_return_attention_scores(bool on) { o_.return_attention_scores = on; }
  void set_attention_mask_input(bool on) { o_.attention_mask_input = on; }
  /// The attention axes, normalised (Keras's after build: {1} for rank-3 inputs); the options' before the build.
  std::vector<int64_t> attention_axes() const;
  EinsumDense* query_dense() { return query_.get(); }
  EinsumDense* key_dense() { return key_.get(); }
  EinsumDense* value_dense() { return value_.get(); }
  EinsumDense* output_dense() { return output_.get(); }

 protected:
  /// GroupedQueryAttention: `kv_heads` key and value heads, each shared by num_heads / kv_heads query heads.
  MultiHeadAttention(int64_t num_heads, int64_t key_dim, int64_t kv_heads, MultiHeadAttentionOptions options,
                     const std::string& default_prefix);
  int64_t kv_heads_;

 private:
  Tensor attention_mask(const Tensor& query, const Tensor& value, const AttentionCall& call) const;
  /// Builds from the query's, value's and key's shapes (without the batch; no attention mask's).
  Shape build_attention(const Shape& query, const Shape& value, const Shape& key);
  /// Attention over the steps of (batch, T, features) tensors with a (batch, 1, T, S) mask (or none); the Softmax
  /// path when `softmax_path`, else Keras's choice.
  std::pair<Tensor, Tensor> attend_steps(const Tensor& query, const Tensor& value, const Tensor& key, const Tensor& mask,
                                         bool causal, bool softmax_path, bool training, bool scores);
  /// attend() for inputs of rank above 3: the attention axes flattened into the steps, the other axes into the batch.
  std::pair<Tensor, Tensor> attend_axes(const Tensor& query, const Tensor& value, const Tensor& key,
                                        const AttentionCall& call);

  int64_t num_heads_, key_dim_, value_dim_;
  Shape scores_shape_;        // (<other axes>, num_heads, <T axes>, <S axes>) of the last build
  std::vector<int> axes_{};  // the attention axes, normalised, once built
  MultiHeadAttentionOptions o_;
  std::shared_ptr<EinsumDense> query_, key_, value_, output_, gate_;
  std::shared_ptr<Softmax> softmax_;
  std::shared_ptr<Dropout> dropout_;
};

/// keras.layers.GroupQueryAttention (Keras's class GroupedQueryAttention; its files say GroupQueryAttention): MultiHeadAttention whose keys and values have
/// fewer heads (num_key_value_heads), each shared by num_query_heads / num_key_value_heads query heads, all of size
/// head_dim; the output has the query's features. MultiHeadAttentionOptions without value_dim and output_shape.
/// Its weights sit under Keras's "_query_dense", "_key_dense", ... in the weights file.
class GroupedQueryAttention : public MultiHeadAttention {
 public:
  GroupedQueryAttention(int64_t head_dim, int64_t num_query_heads, int64_t num_key_value_heads,
                        MultiHeadAttentionOptions options = {});
  OSPREY_KERAS_LAYER(GroupedQueryAttention)
  std::string class_name() const override { return "GroupQueryAttention"; }
  std::string get_config() const override;
  std::vector<std::pair<std::string, Layer*>> sublayers() override;
  int64_t num_key_value_heads() const { return kv_heads_; }
};
using GroupQueryAttention = GroupedQueryAttention;

/// keras.layers.Attention (Luong's dot-product attention) and, as its `additive` form, AdditiveAttention
/// (Bahdanau's): called on {query, value} or {query, value, key} of shapes (batch, Tq, dim), (batch, Tv, dim). Scores
/// q·kᵀ ("dot", times a learned `scale` with use_scale) or Σ tanh(scale·(q + k)) ("concat", times a learned
/// concat_score_weight); AdditiveAttention's Σ scale[d]·tanh(q + k) with a learned vector. The value's mask (and the
/// causal band) lowers masked scores by 1e9 before the softmax, the query's mask zeroes masked outputs and passes on,
/// as in Keras.
class Attention : public Layer {
 public:
  struct Options {
    bool use_scale = false;
    std::string score_mode = "dot";  ///< "dot" or "concat"
    double dropout = 0.0;            ///< on the attention weights, in training
    std::optional<int64_t> seed{};   ///< kept in the config (Osprey's dropout draws from its own generator)
    bool use_causal_mask = false;    ///< Keras's call argument, for every call of this layer
    std::string name{};
    std::string dtype{};  ///< Keras's dtype: a policy name ("float32", "mixed_bfloat16"); empty: the global policy
  };
  explicit Attention(Options options);
  Attention() : Attention(Options{}) {}
  OSPREY_KERAS_LAYER(Attention)
  std::string class_name() const override { return additive_ ? "AdditiveAttention" : "Attention"; }
  std::string get_config() const override;
  int num_inputs() const override { return 0; }
  Shape build(const Shape& input_shape) override;
  Shape build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const Tensor& inputs, bool training) override;
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;
  bool supports_masking() const override { return true; }
  Tensor call_masked_list(const std::vector<Tensor>& inputs, bool training, const std::vector<Tensor>& masks) override;
  Tensor compute_mask_list(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks) override;
  /// The eager call: the output (batch, Tq, dim of value) and with `return_attention_scores` the weights
  /// (batch, Tq, Tv). Masks as Embedding(mask_zero) makes them: (batch, Tq) and (batch, Tv).
  std::pair<Tensor, Tensor> attend(const Tensor& query, const Tensor& value, const Tensor& key = Tensor(),
                                   const Tensor& query_mask = Tensor(), const Tensor& value_mask = Tensor(),
                                   bool training = false, bool return_attention_scores = false);
  const Options& options() const { return o_; }
  void set_use_causal_mask(bool on) { o_.use_causal_mask = on; }
  /// Also its dropout's (Keras makes it with the layer's dtype policy).
  using Layer::set_dtype_policy;
  void set_dtype_policy(const mixed_precision::DTypePolicy& policy) override;
  Variable* scale() { return scale_; }
  Variable* concat_score_weight() { return concat_weight_; }

 protected:
  Attention(Options options, bool additive);

 private:
  Tensor scores(const Tensor& q, const Tensor& k) const;
  Options o_;
  bool additive_;
  Variable *scale_ = nullptr, *concat_weight_ = nullptr;
  std::shared_ptr<Dropout> dropout_;
};

/// keras.layers.AdditiveAttention(use_scale=True, dropout=0.0).
class AdditiveAttention : public Attention {
 public:
  explicit AdditiveAttention(bool use_scale = true, double dropout = 0.0, std::string name = "");
  OSPREY_KERAS_LAYER(AdditiveAttention)
};

}  // namespace osprey::keras::layers
