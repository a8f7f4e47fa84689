// keras.Model (functional models) and keras.Sequential: compile / fit / evaluate / predict / summary.
#pragma once

#include <concepts>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/keras/callbacks.h"
#include "osprey/keras/data.h"
#include "osprey/keras/keras_tensor.h"
#include "osprey/keras/layers.h"
#include "osprey/keras/losses.h"
#include "osprey/data.h"
#include "osprey/keras/metrics.h"
#include "osprey/keras/optimizers.h"
#include "osprey/keras/saving.h"
#include "osprey/tensor.h"

namespace osprey::keras {

/// A model's x or y: one tensor, several (one per input or output, in order), or a name map (keys: the inputs' or
/// outputs' names). `model.fit(x, y)`, `model.fit({x_a, x_b}, y)`, `model.fit({{"a", x_a}, {"b", x_b}}, y)`.
struct Arrays {
  Arrays() = default;
  Arrays(const Tensor& t) : tensors{t} {}
  Arrays(std::initializer_list<Tensor> ts) : tensors(ts) {}
  Arrays(std::vector<Tensor> ts) : tensors(std::move(ts)) {}
  Arrays(const std::map<std::string, Tensor>& named);
  std::vector<Tensor> tensors;
  std::vector<std::string> keys;  ///< the map's keys, when given as a map
};

/// fit()'s validation_data: `{x_val, y_val}`, `{{x_a, x_b}, y_val}`, `std::make_pair(x_val, y_val)` or a
/// data::Dataset of (x, y) batches.
struct ValidationData {
  ValidationData() = default;
  ValidationData(Arrays x_val, Arrays y_val) : x(std::move(x_val)), y(std::move(y_val)) {}
  /// Keras's validation_data=(x_val, y_val, val_sample_weight): the validation loss and weighted_metrics weigh
  /// each sample (one tensor, or one per output as fit's sample_weight).
  ValidationData(Arrays x_val, Arrays y_val, Arrays val_sample_weight)
      : x(std::move(x_val)), y(std::move(y_val)), sample_weight(std::move(val_sample_weight)) {}
  template <typename X, typename Y>
  ValidationData(const std::pair<X, Y>& p) : x(p.first), y(p.second) {}
  ValidationData(const data::Dataset& d) : dataset(d) {}
  Arrays x, y;
  Arrays sample_weight{};  ///< empty: none
  std::optional<data::Dataset> dataset{};
  /// Whether validation data was given.
  bool given() const { return !x.tensors.empty() || dataset.has_value(); }
};

/// One batch from a generator: x and y as fit takes them, and optionally its sample weights (Keras's generator of
/// (x, y, sample_weight) tuples): one tensor, or one per output, as fit's sample_weight.
struct GeneratorBatch {
  Arrays x, y;
  Arrays sample_weight{};  ///< empty: none
};
/// A C++ generator (keras fit's generator data adapter): called once per batch, returns the next batch, or
/// std::nullopt when it has no more (fit then stops with Keras's "ran out of data" warning).
using Generator = std::function<std::optional<GeneratorBatch>()>;

/// compile()'s loss: one loss, one per output (a list in the outputs' order), or a map by output name.
struct LossSpec {
  LossSpec() = default;
  template <typename L>
    requires std::constructible_from<LossRef, L>
  LossSpec(L&& loss) : list{LossRef(std::forward<L>(loss))} {}
  LossSpec(std::initializer_list<LossRef> losses) : list(losses) {}
  LossSpec(const std::map<std::string, LossRef>& named);
  /// The first (or only) loss; nullptr when none was given.
  std::shared_ptr<losses::Loss> get() const { return list.empty() ? nullptr : list[0].get(); }
  const std::string& spelled() const;
  std::vector<LossRef> list;
  std::vector<std::string> keys;
};

/// compile()'s metrics: a list for a single-output model, or per output (a map by output name).
struct MetricSpec {
  MetricSpec() = default;
  MetricSpec(std::initializer_list<MetricRef> metrics) : list(metrics) {}
  MetricSpec(std::vector<MetricRef> metrics) : list(std::move(metrics)) {}
  MetricSpec(std::map<std::string, std::vector<MetricRef>> named) : by_output(std::move(named)) {}
  std::vector<MetricRef> list;
  std::map<std::string, std::vector<MetricRef>> by_output;
  /// by_output came from a list per output in output order (Keras's metrics=[[...], [...]]): a saved
  /// compile_config writes it back as that list.
  bool by_position = false;
  auto begin() const { return list.begin(); }
  auto end() const { return list.end(); }
};

/// compile()'s loss_weights: one per output in order, or a map by output name.
struct LossWeights {
  LossWeights() = default;
  LossWeights(std::initializer_list<double> ws) : list(ws) {}
  LossWeights(std::map<std::string, double> named) : by_output(std::move(named)) {}
  std::vector<double> list;
  std::map<std::string, double> by_output;
  bool empty() const { return list.empty() && by_output.empty(); }
};

/// model.compile(optimizer=..., loss=..., metrics=[...]); the optimizer defaults to "rmsprop" as in Keras.
struct CompileOptions {
  OptimizerRef optimizer = "rmsprop";
  LossSpec loss{};
  MetricSpec metrics{};
  /// Keras's weighted_metrics: metrics that weigh each sample by fit's/evaluate()'s sample_weight (and fit's
  /// class_weight), as Metric::update_state(y_true, y_pred, sample_weight); logged after `metrics`, under
  /// "weighted_<name>" where `metrics` has the name already.
  MetricSpec weighted_metrics{};
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
  /// Multi-output models: the total loss is Σ loss_weights[i] · loss_i (default 1 each).
  LossWeights loss_weights{};
  /// Keras's auto_scale_loss: for a model under the mixed_float16 policy, the optimizer gets dynamic loss scaling
  /// (Keras's LossScaleOptimizer with its defaults; optimizers::LossScaleOptimizer), so that float16 gradients
  /// neither underflow nor overflow.
  bool auto_scale_loss = true;
};

/// model.fit's keyword arguments (epochs first so that `{.epochs = 3, .batch_size = 64}` reads as in Keras).
struct FitOptions {
  int epochs = 1;
  std::optional<int> batch_size{};  ///< default 32
  int verbose = 1;                  ///< 0 silent, 1 progress bar ("auto"), 2 one line per epoch
  std::vector<CallbackRef> callbacks{};
  double validation_split = 0.0;  ///< the last fraction of the data, taken before shuffling
  ValidationData validation_data{};
  bool shuffle = true;
  int initial_epoch = 0;
  std::optional<int> steps_per_epoch{};
  /// One weight per sample (shape (N,) or (N, 1)): the loss is Σ(w·loss_i) / n per batch (not / Σw). Or, as Keras,
  /// one per position of the outputs' values: (N, T) for outputs (N, T, ...) (a sequence's steps), (N, H, W) for
  /// (N, H, W, ...) (an image's pixels); then Σ(w·loss) over the positions / their count.
  /// A multi-output model: one tensor of one weight per sample weighs every output; or one tensor per output, as
  /// Keras's list or dict: `Arrays{w_a, w_b}` in the outputs' order, or a map by output name (an undefined tensor
  /// leaves its output unweighted). Each output's loss, its logged `<name>_loss` and its weighted_metrics use its own.
  std::optional<Arrays> sample_weight{};
  /// Weight per class (integer label, the argmax of one-hot labels, or 0/1 for binary), multiplied into the
  /// sample weights; single-output models (Keras's ValueError otherwise). `metrics` are not weighted;
  /// `weighted_metrics` are (both as Keras).
  std::map<int, double> class_weight{};
  /// With a Dataset as validation_data: batches of it per validation (default: all of it).
  std::optional<int> validation_steps{};
};

struct EvaluateOptions {
  std::optional<int> batch_size{};  ///< default 32
  int verbose = 1;
  std::vector<CallbackRef> callbacks{};
  std::optional<int> steps{};  ///< with a Dataset: batches to evaluate (default: all of it)
  /// One weight per sample ((N,) or (N, 1)), or per position, or one per output, as fit's, for the loss and
  /// weighted_metrics, as Keras's evaluate(sample_weight=) (a Dataset gives them as its elements' third item).
  std::optional<Arrays> sample_weight{};
};

struct PredictOptions {
  std::optional<int> batch_size{};  ///< default 32
  int verbose = 1;
  std::vector<CallbackRef> callbacks{};  ///< on_predict_begin, on_predict_batch_begin/end, on_predict_end
  std::optional<int> steps{};  ///< with a Dataset: batches to predict (default: all of it)
};

/// What fit() returns: per-epoch values by key, the epochs run and the parameters.
struct FitHistory {
  std::map<std::string, std::vector<double>> history;
  /// Per epoch, the values of a metric with one value per class ("f1_score" → [epoch][class]; Logs::arrays).
  std::map<std::string, std::vector<std::vector<double>>> arrays;
  std::vector<int> epoch;
  TrainingParams params;
  /// Per epoch: seconds spent waiting for batches (gathering, get_batch(), copies to the device) and seconds in
  /// training steps. When waiting is more than half of an epoch, fit also logs a warning saying so.
  std::vector<double> input_seconds, step_seconds;
};

namespace trainer {
struct Batch;
}

/// One batch as train_step / test_step / predict_step see it (Keras's `data`): x per input, y per output (empty in
/// predict_step) and the sample weights (undefined when none).
class StepData {
 public:
  StepData(std::vector<Tensor> x, std::vector<Tensor> y = {}, Tensor sample_weight = {});
  /// The engine's batch (fit's shuffled rows are gathered when x() or y() is first read).
  explicit StepData(const trainer::Batch& batch);
  ~StepData();
  StepData(const StepData&) = delete;
  StepData& operator=(const StepData&) = delete;
  const std::vector<Tensor>& x() const;
  const std::vector<Tensor>& y() const;
  /// The batch's sample weights when one tensor weighs every output (undefined when none); a ValueError when they
  /// were given per output (read sample_weights()).
  const Tensor& sample_weight() const;
  /// The batch's sample weights as the engine holds them: none (empty), one tensor for every output, or one per
  /// output in the outputs' order (an undefined one: that output is unweighted).
  const std::vector<Tensor>& sample_weights() const;
  /// Rows in the batch.
  int64_t size() const;
  /// The engine's view (internal).
  const trainer::Batch& batch() const { return *batch_; }

 private:
  const trainer::Batch& resolved() const;
  const trainer::Batch* batch_;
  mutable std::unique_ptr<trainer::Batch> owned_;
};

/// keras.Model: a functional model (`keras::Model model(inputs, outputs)`, any graph of layers called on symbolic
/// tensors: several inputs and outputs, shared layers, residual connections, nested models) and the base of
/// Sequential. It trains with compile / fit / evaluate / predict, one training engine for every model.
class Model : public Layer {
 public:
  /// The functional model from `inputs` to `outputs` (ValueError when an output does not depend on the inputs
  /// only, or two layers share a name).
  Model(const KerasTensors& inputs, const KerasTensors& outputs, std::string name = "");
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model() override;
  OSPREY_KERAS_LAYER(Model)

  /// A model's own dtype policy (a file's model config; compile() turns loss scaling on under "mixed_float16"),
  /// settable once built: its layers keep their own, as in Keras.
  using Layer::set_dtype_policy;
  void set_dtype_policy(const mixed_precision::DTypePolicy& policy) override { dtype_policy_ = policy; }

  std::string class_name() const override;
  /// A functional model is built by its constructor: these check that inputs of these shapes fit it.
  Shape build(const Shape& input_shape) override;
  Shape build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const Tensor& inputs, bool training) override;
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;
  int num_inputs() const override;
  /// A functional or Sequential model of recordable layers (a subclass's call() may decide things per batch).
  bool recordable() const override;
  bool mixes_samples() const override;
  /// The outputs for every input (in inputs() order): model(x) of a multi-output model.
  std::vector<Tensor> call_all(const std::vector<Tensor>& inputs, bool training = false);
  /// Symbolic calls of a model of several outputs nested in another (`auto outs = inner->call_all(x)`).
  using Layer::call_all;
  int num_outputs() const override;
  std::vector<Shape> output_shapes() const override;

  void compile(CompileOptions options);
  /// Trains on (x, y): x is (N, features...) per input, y (N, ...) per output. Returns the History.
  FitHistory fit(const Arrays& x, const Arrays& y, FitOptions options = {});
  /// Trains on the batches of a PyDataset (batch_size and validation_split do not apply: ValueError). Sample
  /// weights come with the batches (PyDataset::get_weighted_batch), not as FitOptions::sample_weight (ValueError);
  /// class_weight applies to each batch.
  FitHistory fit(utils::PyDataset& dataset, FitOptions options = {});
  /// Trains on a generator's batches: steps_per_epoch of them per epoch (required); batches of any size, with
  /// their sample weights (GeneratorBatch::sample_weight) and class_weight as a PyDataset's.
  FitHistory fit(Generator generator, FitOptions options);
  /// fit() on a data::Dataset of (x, y) or (x, y, sample_weight) batches, as Keras takes a tf.data.Dataset: each
  /// epoch one pass over it (a repeating one needs steps_per_epoch); batch_size, shuffle and validation_split do
  /// not apply (the dataset batches and shuffles).
  FitHistory fit(const data::Dataset& dataset, FitOptions options = {});
  /// [loss, metrics in compile order]. A metric with one value per class (F1Score without an average) is a
  /// ValueError here, before anything runs: evaluate_dict() holds its values.
  std::vector<double> evaluate(const Arrays& x, const Arrays& y, EvaluateOptions options = {});
  /// The same as a dict with sorted keys (return_dict=True); a metric with one value per class in Logs::arrays.
  Logs evaluate_dict(const Arrays& x, const Arrays& y, EvaluateOptions options = {});
  /// evaluate() on a Dataset of (x, y) or (x, y, sample_weight) batches.
  std::vector<double> evaluate(const data::Dataset& dataset, EvaluateOptions options = {});
  Logs evaluate_dict(const data::Dataset& dataset, EvaluateOptions options = {});
  /// Outputs for x, batch by batch, concatenated on CPU:0 (a single-output model; predict_all for several).
  Tensor predict(const Arrays& x, PredictOptions options = {});
  /// Every output for x, in outputs() order.
  std::vector<Tensor> predict_all(const Arrays& x, PredictOptions options = {});
  /// predict() on a Dataset of x batches (or (x, ...) tuples, whose other parts are ignored).
  Tensor predict(const data::Dataset& dataset, PredictOptions options = {});
  std::vector<Tensor> predict_all(const data::Dataset& dataset, PredictOptions options = {});
  /// One training step on one batch; returns [loss, per-output losses of a multi-output model, metrics] (metrics
  /// reset first, as Keras does). The *_on_batch calls take their arrays by value: they run every step.
  /// `sample_weight` ((N,) or (N, 1), or per position, or one per output, as fit's) and `class_weight` weigh the
  /// loss and weighted_metrics, as fit's.
  /// A metric with one value per class is a ValueError here, before the step: train_on_batch_dict() holds them.
  std::vector<double> train_on_batch(Arrays x, Arrays y, Arrays sample_weight = {},
                                     std::map<int, double> class_weight = {});
  /// train_on_batch() giving the step's logs (Keras's return_dict=True): "loss", each output's loss, the metrics
  /// (those with one value per class in Logs::arrays), or what an overriding train_step() logged.
  Logs train_on_batch_dict(Arrays x, Arrays y, Arrays sample_weight = {}, std::map<int, double> class_weight = {});
  /// One evaluation step on one batch, no update; returns the same list as train_on_batch (metrics reset first).
  std::vector<double> test_on_batch(Arrays x, Arrays y, Arrays sample_weight = {});
  /// test_on_batch() giving the step's logs (return_dict=True), as train_on_batch_dict().
  Logs test_on_batch_dict(Arrays x, Arrays y, Arrays sample_weight = {});
  /// The outputs for one batch (inference behaviour), on the model's device (a single-output model).
  Tensor predict_on_batch(Arrays x);
  /// The model's weight penalties (regularizers), summed: what fit adds to the loss. A scalar 0 without any.
  Tensor regularization_loss();

  /// Keras's model.get_config() as JSON text (json.dumps's layout: ", " and ": " separators).
  std::string get_config() const override;
  /// Keras's model.to_json(): module, class_name, config, build_config and, once compiled, compile_config.
  virtual std::string to_json() const;
  /// The input shape the model was built for (batch dimension excluded), if built (the first input's).
  std::optional<Shape> input_shape() const;
  bool compiled() const;
  /// What compile() was given: the loss string ("" for a loss object), the metrics' log names, run_eagerly.
  const std::string& compiled_loss_name() const;
  std::vector<std::string> compiled_metric_names() const;
  bool run_eagerly() const;

  /// Prints Keras 3's summary table (width 76 when not a terminal).
  void summary(std::ostream& out = std::cout) const;

  /// The layers: a functional model's in graph order, its Input layers first (as Keras); Sequential's without
  /// the Input.
  std::vector<std::shared_ptr<Layer>> layers() const;
  /// The layer named `name` (ValueError listing the names when there is none).
  std::shared_ptr<Layer> get_layer(const std::string& name) const;
  /// The symbolic inputs and outputs of a functional model.
  const std::vector<KerasTensor>& inputs() const;
  const std::vector<KerasTensor>& outputs() const;
  /// The outputs' names (the layers that make them), as logs name them ("out_a_loss").
  std::vector<std::string> output_names() const;
  std::vector<Variable*> trainable_variables() const;
  std::vector<Variable*> variables() override;
  std::vector<Variable*> variables() const;
  void append_trainable_variables(std::vector<Variable*>& out) override;
  int64_t count_params() const override;
  std::vector<Tensor> regularization_losses() override;
  bool has_regularization() const override;
  void apply_constraints() override;
  /// Names of the logged values: "loss", each output's "<name>_loss" for a multi-output model, then the compiled
  /// metrics in order (what evaluate() and *_on_batch return, in this order).
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
  ///    rate, slots), readable by keras Model.load_weights (Sequential, functional and nested models);
  ///  - "*.weights.osp": Osprey's own checkpoint (layer variables only, matched by position).
  /// ValueError for any other name.
  void save_weights(const std::string& path) const;
  /// Reads weights written by save_weights() or by Keras 3 (".weights.h5": layers matched by their class and
  /// position like Keras, the optimizer's state too when the model is compiled). Shapes must match (ValueError
  /// naming the first mismatch; the model is unchanged then); NotFoundError when the file does not exist.
  void load_weights(const std::string& path);
  /// model.save(): the whole model in Keras 3's `.keras` file (architecture, weights, compile settings and the
  /// optimizer's state), replaced atomically. Keras's keras.models.load_model reads it. ValueError for what a Keras
  /// file cannot hold (a Lambda, a loss or metric that is a C++ function), NotImplementedError for a subclass
  /// without get_config(); nothing is written then.
  void save(const std::string& path) const;

  /// What fit() runs for each batch (Keras's train_step): by default the engine's step (recorded plans, split
  /// halves, replicas) and the running loss and metrics in `logs`. Override it to customise what fit does: e.g.
  /// a GradientTape over call_all(data.x(), true), compute_loss(), optimizer()->apply_gradients(), then
  /// compute_metrics() for the logs.
  virtual void train_step(const StepData& data, Logs& logs);
  /// What evaluate() (and fit's validation) runs for each batch: forward pass, loss and metrics into `logs`.
  virtual void test_step(const StepData& data, Logs& logs);
  /// What predict() runs for each batch: the outputs for data.x().
  virtual std::vector<Tensor> predict_step(const StepData& data);
  /// The compiled loss of a batch: Σ loss_weight · loss per output, sample-weighted, plus the layers' penalties.
  Tensor compute_loss(const StepData& data, const std::vector<Tensor>& y_pred);
  /// Adds `loss` to the running loss (weighted by the batch's rows) and the batch to the compiled metrics, and
  /// writes the logs Keras shows: "loss", then the metrics.
  void compute_metrics(const StepData& data, const std::vector<Tensor>& y_pred, const Tensor& loss, Logs& logs);

  /// A subclassed model's forward pass over all its outputs; the default calls call() and gives its one output.
  std::vector<Tensor> call_outputs(const std::vector<Tensor>& inputs, bool training) override;

  struct State;
  State& state() const;

 protected:
  /// A model subclass (keras.Model subclassing): create the layers in the constructor with track() and override
  /// call() (one input and output), call(std::vector<Tensor>) (several inputs) or call_outputs() (several
  /// outputs). `num_outputs` is how many outputs call_outputs() gives (the losses compile() expects).
  explicit Model(std::string name = "", int num_outputs = 1);
  /// Makes `layer` part of this model (its variables train with it) and returns it, shared.
  template <typename L>
    requires std::derived_from<std::decay_t<L>, Layer>
  std::shared_ptr<std::decay_t<L>> track(L&& layer) {
    auto p = std::make_shared<std::decay_t<L>>(std::forward<L>(layer));
    track_layer(p);
    return p;
  }
  /// The same, under the name of the Python attribute it stands for (`self.encoder = Dense(...)` is
  /// `encoder = track("encoder", layers::Dense(...))`): Keras's weights files key a subclass's layers by those names,
  /// so give them to exchange .weights.h5 / .keras files with Keras.
  template <typename L>
    requires std::derived_from<std::decay_t<L>, Layer>
  std::shared_ptr<std::decay_t<L>> track(const std::string& attribute, L&& layer) {
    auto p = std::make_shared<std::decay_t<L>>(std::forward<L>(layer));
    track_layer(p, attribute);
    return p;
  }
  void track_layer(std::shared_ptr<Layer> layer, const std::string& attribute = "");

  /// A model without layers yet (Sequential); `name` empty: auto-named from `prefix` when first used.
  Model(std::string name, const std::string& prefix, bool defer_name);
  std::unique_ptr<State> s_;
};

/// keras.Sequential: a stack of layers, each taking the previous one's output.
class Sequential : public Model {
 public:
  Sequential();
  /// Layers in order; with an Input first, the model is built at once (variables on the current device).
  explicit Sequential(std::vector<LayerRef> layers, std::string name = "");
  Sequential(Sequential&&) noexcept;
  Sequential& operator=(Sequential&&) noexcept;
  ~Sequential() override;
  OSPREY_KERAS_LAYER(Sequential)

  std::string class_name() const override { return "Sequential"; }
  /// Appends a layer (keras.Sequential.add).
  void add(LayerRef layer);
  /// Builds every layer for inputs of `input_shape` (batch excluded).
  Shape build(const Shape& input_shape) override;
  Shape build(const std::vector<Shape>& input_shapes) override { return Layer::build(input_shapes); }
  bool built() const;
  int num_inputs() const override { return 1; }

  std::string get_config() const override;
  std::string to_json() const override;
};

namespace models {
using keras::Model;
using keras::Sequential;
struct LoadModelOptions {
  /// Compile the model as saved (optimizer with its state, loss, metrics), as keras.models.load_model(compile=True).
  bool compile = true;
  /// Compute the losses as TensorFlow-backend Keras does (CompileOptions::tf_logits_shortcut): a model ending in
  /// Dense(sigmoid) with binary crossentropy, or Dense(softmax) with (sparse) categorical crossentropy, takes the
  /// loss from the Dense's logits. A .keras file does not record the backend that wrote it; Osprey's default is the
  /// JAX/torch backends' clipped formulas. Set it for files from TensorFlow-backend Keras to get their numbers.
  bool tf_logits_shortcut = false;
  /// Keras's custom_objects: classes and functions of yours the file names, for this load only (see
  /// saving::CustomObjects; registered ones need not be listed).
  saving::CustomObjects custom_objects{};
};
/// keras.models.load_model for a `.keras` file written by Keras 3 or by Model::save(): the architecture (Sequential
/// and functional models, nested ones, and model or layer classes registered with
/// saving::register_keras_serializable), the weights and, when compiled, the optimizer's state, so that training
/// resumes where it stopped. ValueError naming anything unsupported (the model is not half-built: nothing is
/// returned); NotFoundError for a missing file. `std::dynamic_pointer_cast<Sequential>` gives a Sequential back.
std::shared_ptr<Model> load_model(const std::string& path, LoadModelOptions options = {});
/// keras.models.model_from_json: a new, uncompiled model from to_json()'s text (weights freshly initialised).
std::shared_ptr<Model> model_from_json(const std::string& json);
}  // namespace models
namespace saving {
using models::load_model;
}  // namespace saving

}  // namespace osprey::keras
