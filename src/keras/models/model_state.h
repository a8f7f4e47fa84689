// The state behind keras::Model: its graph or layer stack, and what compile() set up for the training engine
// (src/keras/trainers/). Private to the library.
#pragma once

#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "distribute/strategy_impl.h"
#include "keras/models/graph.h"
#include "ops/kernel.h"
#include "osprey/keras/model.h"
#include "tensor/tensor_impl.h"

namespace osprey::keras {

/// An allocator of whole, aligned cache lines. A recorded step split in two halves reads its part's input tensors
/// on the helper thread every step; held in small heap blocks they shared cache lines with data the calling thread
/// writes every step (measured: 0.6 µs more per seed step).
template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  static std::size_t bytes(std::size_t n) { return (n * sizeof(T) + 63) / 64 * 64; }
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(bytes(n), std::align_val_t{64})); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t{64}); }
  friend bool operator==(const CacheLineAllocator&, const CacheLineAllocator&) { return true; }
};
using PartTensors = std::vector<Tensor, CacheLineAllocator<Tensor>>;

/// A compiled metric: which output it watches and the name it logs under ("accuracy", "out_a_accuracy").
struct CompiledMetric {
  std::shared_ptr<metrics::Metric> metric;
  int output = 0;
  std::string log_name;
  bool weighted = false;  // from weighted_metrics: updated with the batch's sample weights
};

struct Model::State {
  // What the model is: a functional graph; for Sequential, the graph of its stack once built (as Keras 3's
  // Sequential makes a Functional), its layers and optional Input kept as given.
  std::unique_ptr<Graph> graph;
  bool sequential = false;
  bool subclassed = false;  // a Model subclass: its call_outputs() is the forward pass
  int subclass_outputs = 1;
  bool subclass_built = false;  // its call() ran once (its layers made their variables)
  std::vector<Shape> subclass_input_shapes;  // a subclass: the per-sample shapes of its first call (build_config)
  std::vector<std::string> attributes;  // a subclass: each tracked layer's attribute name ("" when unnamed)
  std::vector<std::shared_ptr<Layer>> layers;  // the graph's layers in order without Inputs (Sequential: its stack)
  std::shared_ptr<layers::Input> input;        // Sequential: its Input layer, if any
  std::optional<Shape> input_shape;            // Sequential: the shape it was built for
  runtime::Device* device = nullptr;  // where the variables live (set by build); batches are copied there

  bool compiled = false;
  std::shared_ptr<optimizers::Optimizer> optimizer;
  // Per output: its loss (nullptr: none), the from_logits form used with tf_logits_shortcut, its weight.
  std::vector<std::shared_ptr<losses::Loss>> losses, logits_losses;
  std::vector<double> loss_weights;
  std::vector<CompiledMetric> metrics;
  std::shared_ptr<distribute::StrategyImpl> strategy;  // the scope() the model was created or compiled in
  bool weights_from_chief = false;  // a multi-worker strategy's workers start from the chief's weights (once)
  /// Whether save()/save_weights() write: under a multi-worker strategy only the chief does (Keras's other workers
  /// write to temporary places and delete them).
  bool saves_files() const { return !strategy || strategy->is_chief(); }
  // Where fit is, for BackupAndRestore: the next step (epoch, step within it), the global generator's state before
  // the current pass drew its order, and how many of that pass's batches were used (0: the next step starts a pass).
  struct FitPosition {
    int epoch = 0;
    int64_t step = 0;
    uint64_t pass_seed = 0, pass_stream = 0;
    int64_t pass_used = 0;
    uint64_t seed = 0, stream = 0;  // the generator at the position (filled by the callback when it saves)
  };
  FitPosition fit_position;
  std::optional<FitPosition> resume_from;  // set in on_train_begin by BackupAndRestore: fit continues from there  // a multi-worker strategy's workers start from the chief's weights (once)
  bool run_eagerly = false;
  std::vector<Variable*> step_variables;  // a recorded step's list of trainable variables, refilled every step
  std::optional<CompileOptions> compile_options;  // what compile() was given (compile_config writes it back)
  std::vector<double> output_loss_values;  // multi-output models: the last step's loss per output (for the logs)

  // Recorded training steps, one per batch shape (the full batches and a short last one). A step split in two
  // halves (split_rows()) has one recorded part per half; `grads` is where optimizers that cannot average the
  // halves inside their update (apply_gradient_halves) get the averaged gradients.
  struct StepPlan {
    struct Part {
      int64_t begin = 0, end = 0;  // the batch rows of this part
      PartTensors x, y;  // read on the helper thread by a split step
      std::vector<Tensor> y_pred;
      std::vector<Tensor> w;  // the sample weights as trainer::Weights holds them (none, one, one per output)
      Tensor loss;
      std::vector<Tensor> output_losses;  // per output, when there are several
      std::vector<Tensor> grads;
      std::vector<Tensor> metric_counts;  // per metric: batch_count() of this part's rows, or undefined
      std::vector<double> metric_samples;  // per metric: the samples it counted (an output's unmasked steps)
      std::vector<Tensor> masks;           // per output: its mask (undefined where none)
      osprey::ops::StepRecording recording;
      // On a device without host memory (a GPU), x, y and w are views of one device block, `inputs`, refilled
      // every step by one copy of `staging`, a host block of the same layout into which the rows are loaded
      // (staged holds its views in the order x..., y..., w).
      std::shared_ptr<Storage> inputs, staging;
      PartTensors staged;
    };
    std::vector<Shape> x_shapes, y_shapes;
    std::vector<DType> x_dtypes, y_dtypes;
    std::vector<Part> parts;
    std::vector<Tensor> grads;
    Tensor labels, predictions, weights;  // the halves' labels, predictions (and weights) side by side, for the metrics
    bool replayable = true;
  };
  std::vector<std::unique_ptr<StepPlan>> plans;
  // Whether steps can be recorded (trainer's recordable_on_one_device), worked out once: -1 until then. Reset when the
  // layers, the device or the strategy change (add, build, compile).
  mutable int recordable = -1;
  /// Whether an output carries a mask (Keras weights its loss and mean metrics by it per step): -1 until a training
  /// or evaluation pass of a model with mask-making layers saw the outputs (until then steps are not recorded).
  int output_masks = -1;

  int num_outputs() const { return graph ? static_cast<int>(graph->outputs.size()) : subclassed ? subclass_outputs : 1; }
  /// The inputs a call takes; -1 for a subclass (whatever its call() takes).
  int num_inputs() const { return graph ? static_cast<int>(graph->inputs.size()) : subclassed ? -1 : 1; }

  // The running mean of the loss over an epoch's (or an evaluation's) batches, weighted by their rows, and per
  // output for multi-output models (Keras's loss trackers); reset with the metrics.
  struct LossMeans {
    double sum = 0.0, seen = 0.0;
    std::vector<double> outputs, output_means;
    void reset(int num_outputs) {
      sum = seen = 0.0;
      outputs.assign(num_outputs > 1 ? static_cast<std::size_t>(num_outputs) : 0, 0.0);
      output_means.assign(outputs.size(), 0.0);
    }
    void add(double loss, const std::vector<double>& per_output, double rows) {
      sum += loss * rows;
      seen += rows;
      for (std::size_t o = 0; o < outputs.size() && o < per_output.size(); ++o) {
        outputs[o] += per_output[o] * rows;
        output_means[o] = outputs[o] / seen;
      }
    }
    double mean() const { return seen > 0 ? sum / seen : 0.0; }
  } loss_means;
  Logs batch_logs;  // the logs of train_on_batch / test_on_batch, kept between calls
  bool step_logs = true;  // whether the default steps write their logs (not for *_on_batch: nothing reads them)
  /// Resets the compiled metrics and the loss means (an epoch's or an evaluation's start).
  void reset_metrics() {
    for (auto& m : metrics) m.metric->reset_state();
    loss_means.reset(num_outputs());
  }
};

}  // namespace osprey::keras
