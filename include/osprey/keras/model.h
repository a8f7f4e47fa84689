// keras.Sequential: a stack of layers with compile / fit / evaluate / predict / summary.
#pragma once

#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/keras/callbacks.h"
#include "osprey/keras/data.h"
#include "osprey/keras/layers.h"
#include "osprey/keras/losses.h"
#include "osprey/keras/metrics.h"
#include "osprey/keras/optimizers.h"
#include "osprey/tensor.h"

namespace osprey::keras {

/// model.compile(optimizer=..., loss=..., metrics=[...]); the optimizer defaults to "rmsprop" as in Keras.
struct CompileOptions {
  OptimizerRef optimizer = "rmsprop";
  LossRef loss{};
  std::vector<MetricRef> metrics{};
  /// Keras's run_eagerly. false (the default): after its first run for a batch shape, a training step of a
  /// Dense-only model on the CPU replays the recorded kernel launches on preallocated buffers (no dispatch,
  /// tape or allocation), bit-identical to the eager step. true: every step runs eagerly.
  ///
  /// With two or more intra-op threads, a small Dense-only model (up to 16 k parameters, no weight
  /// penalties, the default loss reduction) trains each even batch of 32 rows or more as two half-batch passes
  /// on two threads and averages their gradients: the batch's gradient up to rounding. Eager and recorded steps
  /// split alike; results then differ in the last bits from one intra-op thread, as in TensorFlow.
  bool run_eagerly = false;
  /// TensorFlow-backend Keras's shortcut: when the model ends in Dense(…, "sigmoid") with binary crossentropy,
  /// or Dense(…, "softmax") with categorical or sparse categorical crossentropy, the loss is computed from the
  /// Dense's logits without clipping (exact for saturated outputs; Keras 3.15 on TensorFlow does this in fit and
  /// evaluate, eager or not). Off (default): the clipped formulas, as Keras's JAX and torch backends compute them.
  bool tf_logits_shortcut = false;
};

/// model.fit's keyword arguments (epochs first so that `{.epochs = 3, .batch_size = 64}` reads as in Keras).
struct FitOptions {
  int epochs = 1;
  std::optional<int> batch_size{};  ///< default 32
  int verbose = 1;                  ///< 0 silent, 1 progress bar ("auto"), 2 one line per epoch
  std::vector<CallbackRef> callbacks{};
  double validation_split = 0.0;  ///< the last fraction of the data, taken before shuffling
  std::optional<std::pair<Tensor, Tensor>> validation_data{};
  bool shuffle = true;
  int initial_epoch = 0;
  std::optional<int> steps_per_epoch{};
  /// One weight per sample (shape (N,) or (N, 1)): the loss is Σ(w·loss_i) / n per batch (not / Σw).
  std::optional<Tensor> sample_weight{};
  /// Weight per class (integer label, the argmax of one-hot labels, or 0/1 for binary), multiplied into the
  /// sample weights. Metrics are not weighted, as Keras's `metrics=`.
  std::map<int, double> class_weight{};
};

struct EvaluateOptions {
  std::optional<int> batch_size{};  ///< default 32
  int verbose = 1;
  std::vector<CallbackRef> callbacks{};
};

struct PredictOptions {
  std::optional<int> batch_size{};  ///< default 32
  int verbose = 1;
  std::vector<CallbackRef> callbacks{};  ///< on_predict_begin, on_predict_batch_begin/end, on_predict_end
};

/// What fit() returns: per-epoch values by key, the epochs run and the parameters.
struct FitHistory {
  std::map<std::string, std::vector<double>> history;
  std::vector<int> epoch;
  TrainingParams params;
  /// Per epoch: seconds spent waiting for batches (gathering, get_batch(), copies to the device) and seconds in
  /// training steps. When waiting is more than half of an epoch, fit also logs a warning saying so.
  std::vector<double> input_seconds, step_seconds;
};

class Sequential {
 public:
  Sequential();
  /// Layers in order; with an Input first, the model is built at once (variables on the current device).
  explicit Sequential(std::vector<LayerRef> layers, std::string name = "");
  Sequential(Sequential&&) noexcept;
  Sequential& operator=(Sequential&&) noexcept;
  ~Sequential();

  /// Appends a layer (keras.Sequential.add).
  void add(LayerRef layer);
  /// Builds every layer for inputs of `input_shape` (batch excluded).
  void build(const Shape& input_shape);
  bool built() const;

  void compile(CompileOptions options);
  /// Trains on (x, y); x is (N, features), y is (N, ...) with N rows. Returns the History.
  FitHistory fit(const Tensor& x, const Tensor& y, FitOptions options = {});
  /// Trains on the batches of a PyDataset (batch_size and validation_split do not apply: ValueError).
  FitHistory fit(utils::PyDataset& dataset, FitOptions options = {});
  /// [loss, metrics in compile order].
  std::vector<double> evaluate(const Tensor& x, const Tensor& y, EvaluateOptions options = {});
  /// The same as a dict with sorted keys (return_dict=True).
  std::map<std::string, double> evaluate_dict(const Tensor& x, const Tensor& y, EvaluateOptions options = {});
  /// Outputs for x, batch by batch, concatenated on CPU:0.
  Tensor predict(const Tensor& x, PredictOptions options = {});
  /// One training step on one batch; returns [loss, metrics] (metrics reset first, as Keras does).
  std::vector<double> train_on_batch(const Tensor& x, const Tensor& y);
  /// One evaluation step on one batch, no update; returns [loss, metrics] (metrics reset first).
  std::vector<double> test_on_batch(const Tensor& x, const Tensor& y);
  /// The outputs for one batch (inference behaviour), on the model's device.
  Tensor predict_on_batch(const Tensor& x);
  /// The model's weight penalties (regularizers), summed: what fit adds to the loss. A scalar 0 without any.
  Tensor regularization_loss();
  /// Forward pass (model(x)); training selects training behaviour of layers such as Dropout.
  Tensor operator()(const Tensor& x, bool training = false);

  /// Keras's model.get_config() as JSON text (json.dumps's layout: ", " and ": " separators).
  std::string get_config() const;
  /// Keras's model.to_json(): module, class_name, config, build_config and, once compiled, compile_config.
  std::string to_json() const;
  /// The input shape the model was built for (batch dimension excluded), if built.
  std::optional<Shape> input_shape() const;
  bool compiled() const;
  /// What compile() was given: the loss string ("" for a loss object), the metrics' log names, run_eagerly.
  const std::string& compiled_loss_name() const;
  std::vector<std::string> compiled_metric_names() const;
  bool run_eagerly() const;

  /// Prints Keras 3's summary table (width 76 when not a terminal).
  void summary(std::ostream& out = std::cout) const;

  const std::string& name() const;
  std::vector<std::shared_ptr<Layer>> layers() const;
  std::vector<Variable*> trainable_variables() const;
  std::vector<Variable*> variables() const;
  int64_t count_params() const;
  /// Names of the logged metrics: "loss", then compiled metrics in order.
  std::vector<std::string> metrics_names() const;
  /// Set by a callback to end fit() after the current epoch.
  bool stop_training = false;
  std::shared_ptr<optimizers::Optimizer> optimizer() const;

  /// Copies of every variable's value, in variables() order (keras Model.get_weights), on CPU:0.
  std::vector<Tensor> get_weights() const;
  /// Sets every variable (same count, shapes and dtypes as get_weights(); ValueError otherwise).
  void set_weights(const std::vector<Tensor>& weights);
  /// Writes the weights to `path`, replaced atomically (written to a temporary file next to it, then renamed):
  ///  - "*.weights.h5": Keras 3's file (HDF5), the layers' variables and the optimizer's (iterations, learning
  ///    rate, slots), readable by keras Model.load_weights;
  ///  - "*.weights.osp": Osprey's own checkpoint (layer variables only, matched by position).
  /// ValueError for any other name.
  void save_weights(const std::string& path) const;
  /// Reads weights written by save_weights() or by Keras 3 (".weights.h5": layers matched by their class and
  /// position like Keras, the optimizer's state too when the model is compiled). Shapes must match (ValueError
  /// naming the first mismatch; the model is unchanged then); NotFoundError when the file does not exist.
  void load_weights(const std::string& path);
  /// model.save(): the whole model in Keras 3's `.keras` file (a ZIP of config.json = to_json(), metadata.json and
  /// model.weights.h5 with the optimizer's state), replaced atomically. Keras's keras.models.load_model reads it.
  /// ValueError unless the path ends in ".keras".
  void save(const std::string& path) const;

  struct State;

 private:
  std::unique_ptr<State> s_;
};

namespace models {
struct LoadModelOptions {
  /// Compile the model as saved (optimizer with its state, loss, metrics), as keras.models.load_model(compile=True).
  bool compile = true;
};
/// keras.models.load_model for a `.keras` file written by Keras 3 or by Sequential::save(): the architecture
/// (Sequential models of the layers Osprey has), the weights and, when compiled, the optimizer's state, so that
/// training resumes where it stopped. ValueError naming anything unsupported; NotFoundError for a missing file.
Sequential load_model(const std::string& path, LoadModelOptions options = {});
/// keras.models.model_from_json: a new, uncompiled model from to_json()'s text (weights freshly initialised).
Sequential model_from_json(const std::string& json);
}  // namespace models
namespace saving {
using models::load_model;
}  // namespace saving

}  // namespace osprey::keras
