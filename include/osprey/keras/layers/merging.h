// Merging layers (keras.layers.Add, Concatenate, Dot, ...): one output from a list of inputs.
#pragma once

#include <string>
#include <vector>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers {

/// Base of the element-wise merges: every input has the same shape, the output too.
class ElementwiseMerge : public Layer {
 public:
  using Layer::build;
  using Layer::call;
  Shape build(const Shape& input_shape) override { return build(std::vector<Shape>{input_shape}); }
  Shape build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const Tensor& inputs, bool training) override { return call(std::vector<Tensor>{inputs}, training); }
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;
  int num_inputs() const override { return 0; }
  bool supports_masking() const override { return true; }
  /// The inputs merged; their masks do not change the values (Keras 3).
  Tensor call_masked_list(const std::vector<Tensor>& inputs, bool training, const std::vector<Tensor>& masks) override;
  /// Keras 3's merge of the masks: none when an input has none, else kept where any input is kept.
  Tensor compute_mask_list(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks) override;
  bool recordable() const override { return true; }

 protected:
  ElementwiseMerge(std::string name, const std::string& prefix, std::size_t min_inputs, std::size_t max_inputs);
  /// Combines the inputs (already checked).
  virtual Tensor merge(const std::vector<Tensor>& inputs) const = 0;

 private:
  std::size_t min_inputs_, max_inputs_;
};

/// Σ inputs (keras.layers.Add).
class Add : public ElementwiseMerge {
 public:
  explicit Add(std::string name = "") : ElementwiseMerge(std::move(name), "add", 2, 0) {}
  OSPREY_KERAS_LAYER(Add)
  std::string class_name() const override { return "Add"; }

 protected:
  Tensor merge(const std::vector<Tensor>& inputs) const override;
};

/// inputs[0] − inputs[1] (keras.layers.Subtract: exactly two inputs).
class Subtract : public ElementwiseMerge {
 public:
  explicit Subtract(std::string name = "") : ElementwiseMerge(std::move(name), "subtract", 2, 2) {}
  OSPREY_KERAS_LAYER(Subtract)
  std::string class_name() const override { return "Subtract"; }

 protected:
  Tensor merge(const std::vector<Tensor>& inputs) const override;
};

/// Π inputs, element-wise (keras.layers.Multiply).
class Multiply : public ElementwiseMerge {
 public:
  explicit Multiply(std::string name = "") : ElementwiseMerge(std::move(name), "multiply", 2, 0) {}
  OSPREY_KERAS_LAYER(Multiply)
  std::string class_name() const override { return "Multiply"; }

 protected:
  Tensor merge(const std::vector<Tensor>& inputs) const override;
};

/// The mean of the inputs (keras.layers.Average).
class Average : public ElementwiseMerge {
 public:
  explicit Average(std::string name = "") : ElementwiseMerge(std::move(name), "average", 2, 0) {}
  OSPREY_KERAS_LAYER(Average)
  std::string class_name() const override { return "Average"; }

 protected:
  Tensor merge(const std::vector<Tensor>& inputs) const override;
};

/// The element-wise maximum (keras.layers.Maximum).
class Maximum : public ElementwiseMerge {
 public:
  explicit Maximum(std::string name = "") : ElementwiseMerge(std::move(name), "maximum", 2, 0) {}
  OSPREY_KERAS_LAYER(Maximum)
  std::string class_name() const override { return "Maximum"; }

 protected:
  Tensor merge(const std::vector<Tensor>& inputs) const override;
};

/// The element-wise minimum (keras.layers.Minimum).
class Minimum : public ElementwiseMerge {
 public:
  explicit Minimum(std::string name = "") : ElementwiseMerge(std::move(name), "minimum", 2, 0) {}
  OSPREY_KERAS_LAYER(Minimum)
  std::string class_name() const override { return "Minimum"; }

 protected:
  Tensor merge(const std::vector<Tensor>& inputs) const override;
};

/// Joins the inputs along `axis` (Keras's axis, the batch being axis 0; default −1, the last).
class Concatenate : public Layer {
 public:
  explicit Concatenate(int axis = -1, std::string name = "");
  OSPREY_KERAS_LAYER(Concatenate)
  std::string class_name() const override { return "Concatenate"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  using Layer::build;
  using Layer::call;
  Shape build(const Shape& input_shape) override { return build(std::vector<Shape>{input_shape}); }
  Shape build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const Tensor& inputs, bool training) override { return call(std::vector<Tensor>{inputs}, training); }
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;
  int num_inputs() const override { return 0; }
  bool recordable() const override { return true; }
  int axis() const { return axis_; }
  /// The inputs joined; their masks do not change the values (Keras 3).
  Tensor call_masked_list(const std::vector<Tensor>& inputs, bool training, const std::vector<Tensor>& masks) override;
  /// Keras 3's mask of a concatenation: along the features, kept where any input is (an input without a mask counts
  /// as kept everywhere); along another axis, the masks joined along it (all kept for an input without one).
  Tensor compute_mask_list(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks) override;

 private:
  int axis_;
  int sample_axis_ = 0;  // the axis within a sample's shape, set by build
};

/// keras.layers.Dot: per sample, the dot product of the two inputs along `axes` (one axis for both, or one each;
/// negative from the end; not the batch axis), with `normalize` of their L2-normalised vectors along it (cosine
/// similarity): the output is the first input's shape less its axis, then the second's less its batch and axis,
/// (batch, 1) when nothing is left (Keras's batch_dot): (batch, d)·(batch, d) -> (batch, 1); (batch, m, k) and
/// (batch, n, k) with axes 2 -> (batch, m, n).
class Dot : public Layer {
 public:
  explicit Dot(int axes = -1, bool normalize = false, std::string name = "");
  Dot(std::pair<int, int> axes, bool normalize = false, std::string name = "");
  OSPREY_KERAS_LAYER(Dot)
  std::string class_name() const override { return "Dot"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  using Layer::build;
  using Layer::call;
  Shape build(const Shape& input_shape) override { return build(std::vector<Shape>{input_shape}); }
  Shape build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const Tensor& inputs, bool training) override { return call(std::vector<Tensor>{inputs}, training); }
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;
  int num_inputs() const override { return 2; }
  bool recordable() const override { return true; }
  /// The two inputs' axes as given (one int gives it for both).
  std::pair<int, int> axes() const { return axes_; }
  bool normalize() const { return normalize_; }

 private:
  std::pair<int, int> resolved(int rank_x, int rank_y) const;
  std::pair<int, int> axes_;
  bool pair_ = true;  ///< axes given as a pair (Keras's config keeps the form)
  bool normalize_;
};

}  // namespace osprey::keras::layers
