#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <functional>
#include <numeric>

#include <fmt/format.h>

#include "distribute/strategy_impl.h"
#include "core/logging.h"
#include "core/row_copy.h"
#include "keras/naming.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras/model.h"
#include "osprey/ops.h"
#include "osprey/random.h"
#include "ops/kernel.h"
#include "runtime/pair_runner.h"
#include "tensor/tensor_impl.h"

namespace osprey::keras {

struct Sequential::State {
  std::string name;
  std::vector<std::shared_ptr<Layer>> layers;  // without the Input
  std::shared_ptr<layers::Input> input;
  std::optional<Shape> input_shape;
  runtime::Device* device = nullptr;  // where the variables live (set by build); batches are copied there
  bool compiled = false;
  std::shared_ptr<optimizers::Optimizer> optimizer;
  std::shared_ptr<losses::Loss> loss;
  std::vector<std::shared_ptr<metrics::Metric>> metrics;
  std::shared_ptr<distribute::StrategyImpl> strategy;  // the scope() the model was created or compiled in
  bool run_eagerly = false;
  std::vector<Variable*> step_variables;  // a recorded step's list of trainable variables, refilled every step
  std::string loss_spelled;  // the loss string given to compile() (compile_config)
  std::shared_ptr<losses::Loss> logits_loss;  // the from_logits form of the loss, with tf_logits_shortcut
  // Recorded training steps, one per batch shape (the full batches and a short last one). A step split in two
  // halves (split_rows()) has one recorded part per half; `grads` is where optimizers that cannot average the
  // halves inside their update (apply_gradient_halves) get the averaged gradients.
  struct StepPlan {
    struct Part {
      int64_t begin = 0, end = 0;  // the batch rows of this part
      Tensor x, y, w, y_pred, loss;
      std::vector<Tensor> grads;
      std::vector<Tensor> metric_counts;  // per metric: batch_count() of this part's rows, or undefined
      ops::StepRecording recording;
      // On a device without host memory (a GPU), x, y and w are views of one device block, `inputs`, refilled
      // every step by one copy of `staging`, a host block of the same layout into which the rows are loaded
      // (staged_x, staged_y and staged_w are its views).
      std::shared_ptr<Storage> inputs, staging;
      Tensor staged_x, staged_y, staged_w;
    };
    Shape x_shape, y_shape;
    DType x_dtype, y_dtype;
    std::vector<Part> parts;
    std::vector<Tensor> grads;
    Tensor labels, predictions;  // the halves' labels and predictions side by side, for the metrics
    bool replayable = true;
  };
  std::vector<std::unique_ptr<StepPlan>> plans;
};

// True when steps run on several replicas (a strategy with more than one device).
static bool distributed(const Sequential::State& s) { return s.strategy && s.strategy->num_replicas() > 1; }

Sequential::Sequential(std::vector<LayerRef> layers, std::string name) : s_(std::make_unique<State>()) {
  s_->name = name.empty() ? auto_name("sequential") : name;
  s_->strategy = distribute::current_strategy();
  for (auto& l : layers) add(std::move(l));
}
Sequential::Sequential(Sequential&&) noexcept = default;
Sequential& Sequential::operator=(Sequential&&) noexcept = default;
Sequential::Sequential() = default;
Sequential::~Sequential() = default;

static Sequential::State& state(const std::unique_ptr<Sequential::State>& s) {
  if (!s) throw FailedPreconditionError("This Sequential model is empty (default-constructed); assign a model first.");
  return *s;
}

void Sequential::add(LayerRef ref) {
  if (!s_) {
    s_ = std::make_unique<State>();
    s_->name = auto_name("sequential");
    s_->strategy = distribute::current_strategy();
  }
  auto layer = ref.get();
  if (auto in = std::dynamic_pointer_cast<layers::Input>(layer)) {
    if (s_->input || !s_->layers.empty()) {
      throw ValueError("An Input can only be the first layer of a Sequential model; '" + in->name() +
                       "' was added after other layers.");
    }
    s_->input = in;
    s_->input_shape = in->shape();
    return;
  }
  for (const auto& l : s_->layers) {
    if (l->name() == layer->name()) {
      throw ValueError("All layers added to a Sequential model should have unique names. Name '" + layer->name() +
                       "' is already the name of a layer in this model.");
    }
  }
  s_->layers.push_back(layer);
  if (s_->input_shape) build(*s_->input_shape);
}

void Sequential::build(const Shape& input_shape) {
  auto& s = state(s_);
  s.plans.clear();
  Shape shape = input_shape;
  for (auto& l : s.layers) shape = l->build(shape);
  s.input_shape = input_shape;
  for (auto& l : s.layers) {
    for (auto* v : l->variables()) {
      v->set_path(s.name + "/" + l->name() + "/" + v->name());
      if (!s.device) s.device = &v->value().device_ref();
    }
  }
}

bool Sequential::built() const {
  if (!s_ || !s_->input_shape) return false;
  return std::all_of(s_->layers.begin(), s_->layers.end(), [](auto& l) { return l->built(); });
}

const std::string& Sequential::name() const { return state(s_).name; }
std::optional<Shape> Sequential::input_shape() const { return state(s_).input_shape; }
bool Sequential::compiled() const { return state(s_).compiled; }
const std::string& Sequential::compiled_loss_name() const { return state(s_).loss_spelled; }
std::vector<std::string> Sequential::compiled_metric_names() const {
  std::vector<std::string> out;
  for (auto& m : state(s_).metrics) out.push_back(m->name());
  return out;
}
bool Sequential::run_eagerly() const { return state(s_).run_eagerly; }
std::vector<std::shared_ptr<Layer>> Sequential::layers() const { return state(s_).layers; }
std::shared_ptr<optimizers::Optimizer> Sequential::optimizer() const { return state(s_).optimizer; }

std::vector<Variable*> Sequential::variables() const {
  std::vector<Variable*> out;
  for (auto& l : state(s_).layers) {
    for (auto* v : l->variables()) out.push_back(v);
  }
  return out;
}

std::vector<Variable*> Sequential::trainable_variables() const {
  std::vector<Variable*> out;
  for (auto& l : state(s_).layers) l->append_trainable_variables(out);
  return out;
}

int64_t Sequential::count_params() const {
  int64_t n = 0;
  for (auto& l : state(s_).layers) n += l->count_params();
  return n;
}

void Sequential::compile(CompileOptions options) {
  auto& s = state(s_);
  if (!options.loss.get()) {
    throw ValueError("compile() needs a loss, e.g. .loss = \"binary_crossentropy\" or \"mse\".");
  }
  if (options.loss.get()->reduction() == losses::Reduction::none) {
    throw ValueError("compile(): a loss with reduction \"none\" gives one value per sample; training needs a scalar. "
                     "Use \"sum_over_batch_size\" (the default), \"sum\" or \"mean_with_sample_weight\".");
  }
  if (!s.strategy) s.strategy = distribute::current_strategy();
  s.plans.clear();
  s.run_eagerly = options.run_eagerly;
  s.loss_spelled = options.loss.spelled();
  s.optimizer = options.optimizer.get();
  s.loss = options.loss.get();
  s.logits_loss.reset();
  if (options.tf_logits_shortcut && !s.layers.empty()) {
    auto* last = dynamic_cast<layers::Dense*>(s.layers.back().get());
    const auto act = last ? last->activation() : ops::Activation::linear;
    auto* bce = dynamic_cast<losses::BinaryCrossentropy*>(s.loss.get());
    auto* cce = dynamic_cast<losses::CategoricalCrossentropy*>(s.loss.get());
    auto* scce = dynamic_cast<losses::SparseCategoricalCrossentropy*>(s.loss.get());
    if (act == ops::Activation::sigmoid && bce && !bce->options().from_logits) {
      s.logits_loss = std::make_shared<losses::BinaryCrossentropy>(
          losses::CrossentropyOptions{bce->options().label_smoothing, true});
    } else if (act == ops::Activation::softmax && cce && !cce->options().from_logits) {
      s.logits_loss = std::make_shared<losses::CategoricalCrossentropy>(
          losses::CrossentropyOptions{cce->options().label_smoothing, true});
    } else if (act == ops::Activation::softmax && scce && !scce->options().from_logits) {
      s.logits_loss = std::make_shared<losses::SparseCategoricalCrossentropy>(
          losses::SparseCategoricalCrossentropy::Options{true});
    }
    if (s.logits_loss) s.logits_loss->set_reduction(s.loss->reduction());
  }
  s.metrics.clear();
  for (auto& m : options.metrics) s.metrics.push_back(m.get());
  s.compiled = true;
}

std::vector<std::string> Sequential::metrics_names() const {
  std::vector<std::string> names{"loss"};
  for (auto& m : state(s_).metrics) names.push_back(m->name());
  return names;
}

// Checks (and on first use builds for) a batch of inputs, before any computation or output.
static void check_input(Sequential& model, Sequential::State& s, const Tensor& x) {
  if (!x.defined() || x.shape().rank() < 2) {
    throw ValueError(fmt::format("Model '{}' expects a batch of inputs with shape (batch, features), got {}", s.name,
                                 x.defined() ? "shape " + x.shape().to_string() : std::string("an undefined tensor")));
  }
  if (!model.built()) model.build(Shape{x.shape()[-1]});
  if (x.shape()[-1] != (*s.input_shape)[-1]) {
    const std::string first = s.layers.empty() ? s.name : s.layers.front()->name();
    throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected axis -1 of input "
                                 "shape to have value {}, but received input with shape {}",
                                 first, (*s.input_shape)[-1], x.shape().to_keras_string()));
  }
}

// The forward pass; with `logits` and the TF logits shortcut compiled in, the last Dense also leaves its
// pre-activation there.
static Tensor forward(Sequential& model, Sequential::State& s, const Tensor& x, bool training, Tensor* logits) {
  check_input(model, s, x);
  Tensor h = x;
  runtime::Device* device = s.device;
  if (s.strategy && current_replica_id() >= 0) device = s.strategy->devices()[current_replica_id()];
  if (device && &h.device_ref() != device) h = h.to(*device);
  if (h.dtype() != DType::float32) h = h.cast(DType::float32);
  const bool shortcut = logits && s.logits_loss;
  const size_t n = s.layers.size();
  for (size_t i = 0; i + (shortcut ? 1 : 0) < n; ++i) h = s.layers[i]->call(h, training);
  if (shortcut) {
    auto* last = static_cast<layers::Dense*>(s.layers.back().get());
    *logits = ops::dense(h, last->kernel()->value(), last->bias() ? last->bias()->value() : Tensor(),
                         ops::Activation::linear);
    h = ops::activation(*logits, last->activation());
  }
  return h;
}

Tensor Sequential::operator()(const Tensor& x, bool training) { return forward(*this, state(s_), x, training, nullptr); }

namespace {

// True when every value is finite: x·0 is 0 for a finite x and NaN otherwise. Eight independent sums vectorise
// (train_on_batch checks every batch; the branchy scan below only runs to report what is wrong).
bool all_finite(const float* v, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += v[i + l] * 0.f;
  }
  float sum = 0.f;
  for (; i < n; ++i) sum += v[i] * 0.f;
  for (float a : acc) sum += a;
  return sum == 0.f;
}

void check_data(const Tensor& x, const Tensor& y, const char* fn) {
  if (!x.defined() || !y.defined()) throw ValueError(fmt::format("{}: x and y must both be given", fn));
  if (x.shape().rank() < 2) {
    throw ValueError(fmt::format("{}: x must have shape (samples, features), got {}", fn, x.shape().to_string()));
  }
  if (y.shape().rank() < 1 || y.shape()[0] != x.shape()[0]) {
    throw ValueError(fmt::format("{}: Data cardinality is ambiguous. Make sure all arrays contain the same number of "
                                 "samples. 'x' sizes: {}, 'y' sizes: {}",
                                 fn, x.shape()[0], y.shape().rank() ? y.shape()[0] : 0));
  }
  if (x.shape()[0] == 0) throw ValueError(fmt::format("{}: x and y are empty (0 samples); there is nothing to do", fn));
  // NaN or infinite values would silently turn the loss into NaN: say where they are instead.
  for (const auto& [t, arg] : {std::pair<const Tensor*, const char*>{&x, "x"}, {&y, "y"}}) {
    if (t->dtype() != DType::float32 && t->dtype() != DType::float64) continue;
    std::vector<float> copy;
    const float* v = nullptr;
    if (t->dtype() == DType::float32 && t->device_ref().host_memory()) {
      v = t->data<float>();  // scanned in place: train_on_batch calls this every step
    } else {
      copy = (t->dtype() == DType::float32 ? *t : t->cast(DType::float32)).to_vector<float>();
      v = copy.data();
    }
    const int64_t count = t->num_elements();
    if (all_finite(v, count)) continue;
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < count; ++i) {
      if (!std::isfinite(v[i])) {
        if (first < 0) first = i;
        ++bad;
      }
    }
    if (bad) {
      const int64_t cols = t->shape()[0] ? count / t->shape()[0] : 1;
      throw ValueError(fmt::format("{}: `{}` contains {} NaN or infinite value(s), the first at sample {} (flat index "
                                   "{} in the sample: {}); remove or impute them before training",
                                   fn, arg, bad, first / cols, first % cols, v[first]));
    }
  }
}

int resolve_batch_size(const std::optional<int>& b, const char* fn) {
  const int v = b.value_or(32);
  if (v <= 0) throw ValueError(fmt::format("{}: batch_size must be a positive integer, got {}", fn, v));
  return v;
}

struct CallbackList {
  std::vector<std::shared_ptr<Callback>> all;
  void each(const std::function<void(Callback&)>& f) {
    for (auto& c : all) f(*c);
  }
};

}  // namespace

static double distributed_train_step(Sequential& model, Sequential::State& s, const Tensor& x, const Tensor& y,
                                     const Tensor& w);

static bool has_penalties(Sequential::State& s) {
  for (auto& l : s.layers) {
    if (l->has_regularization()) return true;
  }
  return false;
}
// Σ of every layer's weight penalties (a scalar 0 without any).
static Tensor penalty_sum(Sequential::State& s) {
  Tensor total;
  for (auto& l : s.layers) {
    for (auto& p : l->regularization_losses()) total = total.defined() ? ops::add(total, p) : p;
  }
  return total.defined() ? total : Tensor::scalar(0.0);
}
// The compiled loss of a batch, with sample weights when given: Σ(w·loss_i) / n (Keras divides by the element
// count, not by Σw).
static Tensor batch_loss(Sequential::State& s, const Tensor& y, const Tensor& y_pred, const Tensor& w,
                         const Tensor& logits = Tensor()) {
  const bool from_logits = logits.defined() && s.logits_loss;
  const losses::Loss& loss = from_logits ? *s.logits_loss : *s.loss;
  const Tensor& pred = from_logits ? logits : y_pred;
  if (!w.defined()) return loss(y, pred);
  return loss(y, pred, w);  // no copy when already there: a recorded plan reads the weights from its buffer
}

// The training loss Keras reports: the compiled loss plus the layers' regularization losses.
static Tensor with_penalties(Sequential::State& s, const Tensor& loss) {
  return has_penalties(s) ? ops::add(loss, penalty_sum(s)) : loss;
}
static void apply_constraints(Sequential::State& s) {
  for (auto& l : s.layers) l->apply_constraints();
}

// A step can be recorded and replayed when nothing in it depends on host-side decisions or randomness: Dense
// layers only, on one device (the host or a GPU), without a strategy.
static bool dense_on_one_device(const Sequential::State& s) {
  if (distributed(s) || !s.device) return false;
  return std::all_of(s.layers.begin(), s.layers.end(),
                     [](const auto& l) { return dynamic_cast<const layers::Dense*>(l.get()) != nullptr; });
}
static bool dense_on_host(const Sequential::State& s) { return dense_on_one_device(s) && s.device->host_memory(); }
// Whether training steps are recorded and replayed (planned_train_step).
static bool plannable(const Sequential::State& s) { return !s.run_eagerly && dense_on_one_device(s); }

// Batches from this many rows (even) are split in two halves when the model is small enough (kSplitMaxParams).
static constexpr int64_t kSplitMinRows = 32;
// Parameters (about the forward pass's multiply-adds per batch row) up to which halves pay: beyond it the
// products are large enough for the intra-op threads to share each of them (the wide MLP has 670 k).
static constexpr int64_t kSplitMaxParams = int64_t{1} << 14;

// Where a training step of this model on this batch splits into two halves, or 0 (no split). With two intra-op
// threads, a small Dense-only model's step is two half-batch passes, run at once on two threads, whose gradients
// are averaged; eager steps split the same way, so a recorded step stays the eager step bit for bit. Keras's
// sum_over_batch_size loss of the batch is exactly the mean of the halves' (even batches): only the rounding
// differs from one pass over the batch (as it does between thread counts in TensorFlow). Not split: one intra-op
// thread (two passes would only add launches), weight penalties (they would count twice), other reductions.
static int64_t split_rows(const Sequential& model, Sequential::State& s, const Tensor& x) {
  const int64_t rows = x.shape().rank() ? x.shape()[0] : 0;
  if (rows < kSplitMinRows || rows % 2 != 0 || !runtime::pair_available() || !dense_on_host(s) ||
      has_penalties(s)) {
    return 0;
  }
  if (s.loss->reduction() != losses::Reduction::sum_over_batch_size) return 0;
  return model.count_params() <= kSplitMaxParams ? rows / 2 : 0;
}

static Tensor rows_of(const Tensor& t, int64_t begin, int64_t end) {
  return t.defined() ? t.slice_rows(begin, end) : Tensor();
}

static double eager_train_step(Sequential& model, Sequential::State& s, const Tensor& x, const Tensor& y,
                               const Tensor& w);

// A tensor shaped like `like` at `offset` bytes into `storage`.
static Tensor view_of(const std::shared_ptr<Storage>& storage, std::size_t offset, const Tensor& like) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = storage;
  impl->offset = offset;
  impl->shape = like.shape();
  impl->dtype = like.dtype();
  return Tensor(std::move(impl));
}
static std::size_t row_bytes(const Tensor& t) {
  return static_cast<std::size_t>(t.nbytes() / std::max<int64_t>(t.shape()[0], 1));
}

// A part's input buffer `dst` refilled from the batch `src`: its rows order[begin, begin + dst rows) when `order`
// is given (fit's shuffled rows of the whole arrays), else rows [begin, begin + dst rows).
static void load_rows(Tensor& dst, const Tensor& src, const int64_t* order, int64_t begin) {
  if (!dst.defined()) return;
  if (order) {
    gather_host_rows(dst.raw_data(), src.raw_data(), order + begin, dst.shape()[0], row_bytes(src));
  } else {
    std::memcpy(dst.raw_data(), static_cast<const char*>(src.raw_data()) + row_bytes(src) * begin,
                static_cast<std::size_t>(dst.nbytes()));
  }
}

// Gives a part its own input buffers, shaped like its rows of the batch: on the host, one for each of x, y and w;
// on a device, one device block for the three and its host staging block. load_part() fills them.
static void own_inputs(Sequential::State::StepPlan::Part& part, runtime::Device& device) {
  Tensor* const tensors[3] = {&part.x, &part.y, &part.w};
  if (device.host_memory()) {
    for (Tensor* t : tensors) {
      if (t->defined()) *t = Tensor::empty(t->shape(), t->dtype(), &device);
    }
    return;
  }
  constexpr std::size_t kAlign = 256;  // what cudaMalloc gives: vector loads and cuBLASLt's best alignment
  std::size_t offsets[3] = {}, bytes = 0;
  for (int i = 0; i < 3; ++i) {
    offsets[i] = bytes;
    if (tensors[i]->defined()) bytes += (static_cast<std::size_t>(tensors[i]->nbytes()) + kAlign - 1) / kAlign * kAlign;
  }
  part.inputs = std::make_shared<Storage>(device, bytes);
  part.staging = std::make_shared<Storage>(runtime::DeviceManager::get().host_device(), bytes);
  Tensor* const staged[3] = {&part.staged_x, &part.staged_y, &part.staged_w};
  for (int i = 0; i < 3; ++i) {
    if (!tensors[i]->defined()) continue;
    *staged[i] = view_of(part.staging, offsets[i], *tensors[i]);
    *tensors[i] = view_of(part.inputs, offsets[i], *tensors[i]);
  }
}

// Whether a recorded step takes x, y and w as its batch: a plannable model, and each of them host data or data
// already on the model's device (the step copies it into its own buffers).
static bool planned_takes(const Sequential::State& s, const Tensor& x, const Tensor& y, const Tensor& w = Tensor()) {
  auto usable = [&](const Tensor& t) {
    return !t.defined() || t.device_ref().host_memory() || &t.device_ref() == s.device;
  };
  return plannable(s) && usable(x) && usable(y) && usable(w);
}

// Fills a part's input buffers with its rows of x, y and w (fit's shuffled rows `order` of them when given; then
// they are host tensors). On the host the rows go straight into the buffers; on a device, host rows go through the
// staging block (one copy for all of them) and rows already on the device are copied there.
static void load_part(Sequential::State::StepPlan::Part& part, runtime::Device& device, const Tensor& x,
                      const Tensor& y, const Tensor& w, const int64_t* order) {
  if (!part.staging) {
    load_rows(part.x, x, order, part.begin);
    load_rows(part.y, y, order, part.begin);
    load_rows(part.w, w, order, part.begin);
    return;
  }
  const Tensor* const sources[3] = {&x, &y, &w};
  Tensor* const staged[3] = {&part.staged_x, &part.staged_y, &part.staged_w};
  Tensor* const buffers[3] = {&part.x, &part.y, &part.w};
  bool from_host = false;
  for (int i = 0; i < 3; ++i) {
    if (buffers[i]->defined() && sources[i]->device_ref().host_memory()) {
      load_rows(*staged[i], *sources[i], order, part.begin);
      from_host = true;
    }
  }
  if (from_host) device.platform().copy(device, part.inputs->data, true, part.staging->data, false, part.staging->bytes);
  for (int i = 0; i < 3; ++i) {
    const Tensor& src = *sources[i];
    if (!buffers[i]->defined() || src.device_ref().host_memory()) continue;
    device.platform().copy(device, buffers[i]->impl()->data(), true,
                           static_cast<const char*>(src.impl()->data()) + row_bytes(src) * part.begin, true,
                           static_cast<std::size_t>(buffers[i]->nbytes()));
  }
}

// The forward and backward pass of rows [begin, end) of the batch, eagerly: the part's predictions, loss and
// gradients (Keras's loss of those rows).
static void part_pass(Sequential& model, Sequential::State& s, Sequential::State::StepPlan::Part& part,
                      const std::vector<Variable*>& vars) {
  {
    GradientTape tape;
    Tensor logits;
    part.y_pred = forward(model, s, part.x, true, &logits);
    part.loss = with_penalties(s, batch_loss(s, part.y, part.y_pred, part.w, logits));
    part.grads = tape.gradient(part.loss, vars);
  }
  // Counting metrics count inside the part (with the halves of a split step: on both threads at once).
  part.metric_counts.clear();
  for (auto& m : s.metrics) part.metric_counts.push_back(m->batch_count(part.y, part.y_pred));
}

// out = a's rows then b's (host memory; allocated when its shape or dtype changes).
static void concat_rows(Tensor& out, const Tensor& a, const Tensor& b) {
  const Shape shape = a.shape().with_dim(0, a.shape()[0] + b.shape()[0]);
  if (!out.defined() || out.shape() != shape || out.dtype() != a.dtype()) {
    out = Tensor::empty(shape, a.dtype(), &a.device_ref());
  }
  const auto first = static_cast<std::size_t>(a.nbytes());
  std::memcpy(out.raw_data(), a.raw_data(), first);
  std::memcpy(static_cast<char*>(out.raw_data()) + first, b.raw_data(), static_cast<std::size_t>(b.nbytes()));
}

// Applies the step's gradients and metrics and returns its loss: one part, or the average of two halves. The
// metrics see the whole batch once: counting metrics add the parts' counts; the others see the halves' labels
// and predictions copied side by side into `labels` and `predictions` (host memory).
static double finish_step(Sequential::State& s, std::vector<Sequential::State::StepPlan::Part>& parts,
                          std::vector<Tensor>& averaged, const std::vector<Variable*>& vars, Tensor& labels,
                          Tensor& predictions) {
  double loss;
  if (parts.size() == 2) {
    s.optimizer->apply_gradient_halves(parts[0].grads, parts[1].grads, vars, averaged);
    loss = (parts[0].loss.item() + parts[1].loss.item()) / 2;
  } else {
    s.optimizer->apply_gradients(parts[0].grads, vars);
    loss = parts[0].loss.item();
  }
  apply_constraints(s);
  bool whole_batch = false;
  for (std::size_t i = 0; i < s.metrics.size(); ++i) {
    if (!parts[0].metric_counts[i].defined()) {
      whole_batch = true;
      continue;
    }
    double count = 0.0, samples = 0.0;
    for (auto& part : parts) {
      count += part.metric_counts[i].item();
      samples += static_cast<double>(part.y_pred.shape()[0]);
    }
    s.metrics[i]->add_count(count, samples);
  }
  if (!whole_batch) return loss;
  if (parts.size() == 1) {
    for (std::size_t i = 0; i < s.metrics.size(); ++i) {
      if (!parts[0].metric_counts[i].defined()) s.metrics[i]->update_state(parts[0].y, parts[0].y_pred);
    }
    return loss;
  }
  concat_rows(labels, parts[0].y, parts[1].y);
  concat_rows(predictions, parts[0].y_pred, parts[1].y_pred);
  for (std::size_t i = 0; i < s.metrics.size(); ++i) {
    if (!parts[0].metric_counts[i].defined()) s.metrics[i]->update_state(labels, predictions);
  }
  return loss;
}

static std::vector<Sequential::State::StepPlan::Part> make_parts(const Tensor& x, const Tensor& y, const Tensor& w,
                                                                 int64_t split) {
  const int64_t rows = x.shape()[0];
  std::vector<Sequential::State::StepPlan::Part> parts(split ? 2 : 1);
  parts[0].begin = 0;
  parts[0].end = split ? split : rows;
  if (split) {
    parts[1].begin = split;
    parts[1].end = rows;
  }
  for (auto& p : parts) {
    p.x = split ? x.slice_rows(p.begin, p.end) : x;
    p.y = split ? y.slice_rows(p.begin, p.end) : y;
    p.w = split ? rows_of(w, p.begin, p.end) : w;
  }
  return parts;
}

// The step as a replay of the launches recorded at its first run for this batch shape: the batch is copied into
// the plan's input buffers, the forward and backward kernels run again on their recorded buffers (the two halves
// of a split step at once, on the calling thread and the helper thread), then the optimizer (its attributes change
// every step) and the metrics run eagerly on the recorded results. With `rows`, the batch is those rows of x, y
// and w (fit's shuffled order), gathered by each part straight into its input buffers.
static double planned_train_step(Sequential& model, Sequential::State& s, const Tensor& x, const Tensor& y,
                                 const Tensor& w, const Tensor* rows = nullptr) {
  // Which variables are trainable can change between steps (layer.trainable): listed again every step, into a
  // vector that keeps its memory.
  std::vector<Variable*>& vars = s.step_variables;
  vars.clear();
  for (auto& l : s.layers) l->append_trainable_variables(vars);
  const int64_t batch = rows ? rows->shape()[0] : x.shape()[0];
  Sequential::State::StepPlan* plan = nullptr;
  for (auto& p : s.plans) {
    if (p->x_shape[0] == batch && p->y_shape[0] == batch && p->x_shape.with_dim(0, x.shape()[0]) == x.shape() &&
        p->y_shape.with_dim(0, y.shape()[0]) == y.shape() && p->x_dtype == x.dtype() && p->y_dtype == y.dtype() &&
        p->parts[0].w.defined() == w.defined()) {
      plan = p.get();
    }
  }
  if (rows && (!plan || !plan->replayable)) {  // recorded (or eager) on the gathered batch
    return planned_train_step(model, s, ops::gather_rows(x, *rows), ops::gather_rows(y, *rows),
                              w.defined() ? ops::gather_rows(w, *rows) : Tensor());
  }
  if (plan && !plan->replayable) return eager_train_step(model, s, x, y, w);
  if (plan) {
    // Each part copies (or gathers) its rows in and replays, the two halves of a split step on two threads (each
    // thread then writes the input buffers its kernels read).
    const int64_t* order = rows ? rows->data<int64_t>() : nullptr;
    auto run_part = [&](Sequential::State::StepPlan::Part& part) {
      load_part(part, *s.device, x, y, w, order);
      part.recording.replay();
    };
    if (plan->parts.size() == 1 ||
        !runtime::run_pair([&](int half) { run_part(plan->parts[static_cast<std::size_t>(half)]); })) {
      for (auto& part : plan->parts) run_part(part);
    }
  } else {
    if (s.plans.size() >= 4) s.plans.erase(s.plans.begin());
    auto p = std::make_unique<Sequential::State::StepPlan>();
    p->x_shape = x.shape();
    p->y_shape = y.shape();
    p->x_dtype = x.dtype();
    p->y_dtype = y.dtype();
    p->parts = make_parts(x, y, w, split_rows(model, s, x));
    for (auto& part : p->parts) {
      own_inputs(part, *s.device);
      load_part(part, *s.device, x, y, w, nullptr);
    }
    const uint64_t copies_inside = tensor_copies_on_this_thread();
    for (auto& part : p->parts) {
      ops::RecordingScope record(part.recording);
      part_pass(model, s, part, vars);
    }
    // A copy inside the step (not a kernel) would be frozen in the plan: such a step is never replayed.
    p->replayable = tensor_copies_on_this_thread() == copies_inside;
    plan = p.get();
    s.plans.push_back(std::move(p));
  }
  return finish_step(s, plan->parts, plan->grads, vars, plan->labels, plan->predictions);
}

// Runs `y_pred = model(x)`, the loss and its gradient, and one optimizer update; returns the batch loss.
static double train_step(Sequential& model, Sequential::State& s, const Tensor& x, const Tensor& y,
                         const Tensor& w = Tensor()) {
  if (distributed(s)) return distributed_train_step(model, s, x, y, w);
  if (planned_takes(s, x, y, w)) return planned_train_step(model, s, x, y, w);
  return eager_train_step(model, s, x, y, w);
}

namespace {
// One of fit's batches: x, y and w themselves, or, when `rows` is defined, those rows of them (host tensors).
struct Batch {
  Tensor x, y, w, rows;
  int64_t size() const { return rows.defined() ? rows.shape()[0] : x.shape()[0]; }
};
}  // namespace

static double train_step(Sequential& model, Sequential::State& s, const Batch& b) {
  if (!b.rows.defined()) return train_step(model, s, b.x, b.y, b.w);
  if (plannable(s)) return planned_train_step(model, s, b.x, b.y, b.w, &b.rows);  // fit's arrays: host tensors
  return train_step(model, s, ops::gather_rows(b.x, b.rows), ops::gather_rows(b.y, b.rows),
                    b.w.defined() ? ops::gather_rows(b.w, b.rows) : Tensor());
}

static double eager_train_step(Sequential& model, Sequential::State& s, const Tensor& x, const Tensor& y,
                               const Tensor& w) {
  const auto vars = model.trainable_variables();
  auto parts = make_parts(x, y, w, split_rows(model, s, x));
  for (auto& part : parts) part_pass(model, s, part, vars);
  std::vector<Tensor> averaged;
  Tensor labels, predictions;
  return finish_step(s, parts, averaged, vars, labels, predictions);
}

// Makes every variable of the model one component per replica (created in scope() they already are).
static void prepare_replicas(Sequential& model, Sequential::State& s) {
  if (distributed(s)) s.strategy->mirror(model.variables());
}

// The rows of a global batch of B that replica r gets: ceil(B/N) each, the last ones short or empty
// (tf.distribute's rebatching: 4 rows on 3 replicas are 2|2|0).
static std::pair<int64_t, int64_t> replica_rows(int64_t batch, int replicas, int r) {
  const int64_t per = (batch + replicas - 1) / replicas;
  const int64_t b = std::min(batch, per * r);
  return {b, std::min(batch, b + per)};
}

// One training step under a strategy: each replica computes the loss of its shard scaled by the global batch
// (sum of per-sample losses / B), its gradients, the SUM all-reduce, and the same optimizer update on its
// components. Metrics see every shard, in replica order. Returns the global batch's mean loss.
static double distributed_train_step(Sequential& model, Sequential::State& s, const Tensor& x, const Tensor& y,
                                     const Tensor& w) {
  auto& st = *s.strategy;
  const int n = st.num_replicas();
  const int64_t batch = x.shape()[0];
  const auto vars = model.trainable_variables();
  s.optimizer->build_slots(vars);  // cross-replica: slots mirrored like the variables
  std::vector<Tensor> xs(n), ys(n), preds(n);
  std::vector<std::vector<Tensor>> grads(n);
  std::vector<double> losses(n, 0.0);
  const bool sharded = st.reduces_on_host() && s.optimizer->shardable();
  if (!sharded) s.optimizer->sync_slots();  // whole-variable updates read every slice of their slots
  s.optimizer->begin_step();  // once per step: the schedule's rate, per-step state
  st.run_replicas([&](int r) {
    const auto [b, e] = replica_rows(batch, n, r);
    auto& device = *st.devices()[r];
    grads[r].resize(vars.size());
    if (e > b) {
      xs[r] = x.slice_rows(b, e).to(device);
      ys[r] = y.slice_rows(b, e).to(device);
      GradientTape tape;
      Tensor logits;
      preds[r] = forward(model, s, xs[r], true, &logits);
      // The replica's share of the global batch's mean loss, plus 1/N of the penalties (so that the SUM of the
      // replicas' gradients is the single-device one).
      const Tensor wr = w.defined() ? w.slice_rows(b, e).to(device) : Tensor();
      // A "sum" reduction adds up across replicas as it is; the means are weighted by the replica's share.
      const double share = s.loss->reduction() == losses::Reduction::sum ? 1.0 : static_cast<double>(e - b) / batch;
      Tensor loss = ops::mul(batch_loss(s, ys[r], preds[r], wr, logits), Tensor::scalar(share));
      if (has_penalties(s)) {
        loss = ops::add(loss, ops::mul(penalty_sum(s), Tensor::scalar(1.0 / n)));
      }
      grads[r] = tape.gradient(loss, vars);
      losses[r] = loss.item();
    }
    for (size_t j = 0; j < vars.size(); ++j) {  // an empty shard (or an unused variable) contributes zeros
      if (!grads[r][j].defined()) grads[r][j] = Tensor::zeros(vars[j]->shape());
    }
    if (sharded) {  // logical CPUs: each replica reduces and updates its slice of every variable, once
      st.reduce_own_slices(grads, r);
      s.optimizer->apply_sharded_gradients(grads[0], vars, r, n);
    } else {
      st.all_reduce_sum(grads, r);
      s.optimizer->apply_replica_gradients(grads[r], vars);
    }
  });
  s.optimizer->finish_replica_step();
  // The slots' other replica components are copied when something reads them (a replica only reads its own slice
  // of its own component), not every step.
  if (sharded) s.optimizer->defer_slot_sync(n);
  apply_constraints(s);
  double total = 0.0;
  for (int r = 0; r < n; ++r) {
    total += losses[r];
    if (!preds[r].defined()) continue;
    for (auto& m : s.metrics) m->update_state(ys[r], preds[r]);
  }
  return total;
}

// The forward pass of a global batch under a strategy: each replica runs its shard. Returns the shards'
// (labels, predictions) in replica order; empty shards are left undefined.
static void distributed_forward(Sequential& model, Sequential::State& s, const Tensor& x, const Tensor* y,
                                std::vector<Tensor>& ys, std::vector<Tensor>& preds,
                                std::vector<Tensor>* logits = nullptr) {
  auto& st = *s.strategy;
  const int n = st.num_replicas();
  const int64_t batch = x.shape()[0];
  ys.assign(n, Tensor());
  preds.assign(n, Tensor());
  if (logits) logits->assign(n, Tensor());
  st.run_replicas([&](int r) {
    const auto [b, e] = replica_rows(batch, n, r);
    if (e == b) return;
    auto& device = *st.devices()[r];
    preds[r] = forward(model, s, x.slice_rows(b, e).to(device), false, logits ? &(*logits)[r] : nullptr);
    if (y) ys[r] = y->slice_rows(b, e).to(device);
  });
}

// Evaluates batches of (x, y) into `logs` (loss + metrics), calling test hooks.
static void run_evaluation(Sequential& model, Sequential::State& s, const Tensor& x, const Tensor& y, int batch_size,
                           CallbackList& cbs, Logs& logs) {
  const int64_t n = x.shape()[0];
  const int steps = static_cast<int>((n + batch_size - 1) / batch_size);
  for (auto& m : s.metrics) m->reset_state();
  double loss_sum = 0.0, seen = 0.0;
  Logs empty;
  cbs.each([&](Callback& c) { c.on_test_begin(empty); });
  for (int step = 0; step < steps; ++step) {
    const int64_t b = step * static_cast<int64_t>(batch_size), e = std::min<int64_t>(n, b + batch_size);
    cbs.each([&](Callback& c) { c.on_test_batch_begin(step, empty); });
    Tensor xb = x.slice_rows(b, e), yb = y.slice_rows(b, e);
    const double penalty = has_penalties(s) ? penalty_sum(s).item() : 0.0;  // Keras's evaluate loss includes them
    loss_sum += penalty * static_cast<double>(e - b);
    if (distributed(s)) {
      std::vector<Tensor> ys, preds, logits;
      distributed_forward(model, s, xb, &yb, ys, preds, &logits);
      for (size_t r = 0; r < preds.size(); ++r) {
        if (!preds[r].defined()) continue;
        loss_sum += batch_loss(s, ys[r], preds[r], Tensor(), logits[r]).item() * static_cast<double>(preds[r].shape()[0]);
        for (auto& m : s.metrics) m->update_state(ys[r], preds[r]);
      }
    } else {
      Tensor logits;
      Tensor y_pred = forward(model, s, xb, false, &logits);
      if (auto* d = &y_pred.device_ref(); &yb.device_ref() != d) yb = yb.to(*d);
      loss_sum += batch_loss(s, yb, y_pred, Tensor(), logits).item() * static_cast<double>(e - b);
      for (auto& m : s.metrics) m->update_state(yb, y_pred);
    }
    seen += static_cast<double>(e - b);
    logs.clear();
    logs["loss"] = loss_sum / seen;
    for (auto& m : s.metrics) logs[m->name()] = m->result();
    cbs.each([&](Callback& c) { c.on_test_batch_end(step, logs); });
  }
  cbs.each([&](Callback& c) { c.on_test_end(logs); });
}

namespace {

// Where fit's batches come from: a pass is one walk over the data; next() gives the pass's next batch.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  /// Batches in one pass.
  virtual int64_t batches_per_pass() const = 0;
  /// Starts a pass (a new order when shuffling).
  virtual void begin_pass() = 0;
  virtual Batch next() = 0;
  virtual void end_epoch() {}
};

// Tensors held on the host, cut into batches (gathered in a shuffled order, or sliced in order).
class ArraySource : public BatchSource {
 public:
  /// `rows_in_step`: the training step gathers a shuffled batch's rows itself (then a batch is the whole arrays and
  /// its row indices; else the rows are gathered here). A step that cannot gathers them with ops (train_step).
  ArraySource(const Tensor& x, const Tensor& y, const Tensor& w, int batch_size, bool shuffle, runtime::Device* device,
              bool rows_in_step)
      : batch_(batch_size), shuffle_(shuffle), device_(device), rows_in_step_(rows_in_step) {
    runtime::Device& host = runtime::DeviceManager::get().host_device();
    x_ = &x.device_ref() == &host ? x : x.to(host);
    y_ = &y.device_ref() == &host ? y : y.to(host);
    if (w.defined()) w_ = &w.device_ref() == &host ? w : w.to(host);
    n_ = x.shape()[0];
  }
  int64_t batches_per_pass() const override { return (n_ + batch_ - 1) / batch_; }
  void begin_pass() override {
    cursor_ = 0;
    order_ = shuffle_ ? random::permutation(n_).to(runtime::DeviceManager::get().host_device()) : Tensor();
    // A recorded step gathers its rows from the arrays itself (each half into its own buffers, on its own thread).
    // Otherwise data up to kShuffleCopyBytes is gathered in the pass's order once and the batches are slices of
    // that copy: the same rows in the same batches as a gather per batch, without two or three gather ops per step.
    shuffled_x_ = shuffled_y_ = shuffled_w_ = Tensor();
    direct_ = order_.defined() && !device_ && rows_in_step_;
    const int64_t bytes = x_.nbytes() + y_.nbytes() + (w_.defined() ? w_.nbytes() : 0);
    if (order_.defined() && !direct_ && bytes <= kShuffleCopyBytes) {
      shuffled_x_ = ops::gather_rows(x_, order_);
      shuffled_y_ = ops::gather_rows(y_, order_);
      if (w_.defined()) shuffled_w_ = ops::gather_rows(w_, order_);
    }
  }
  Batch next() override {
    const int64_t b = cursor_, e = std::min<int64_t>(n_, cursor_ + batch_);
    cursor_ = e;
    if (direct_) return {x_, y_, w_, order_.slice_rows(b, e)};
    Tensor xb, yb, wb;
    if (shuffled_x_.defined()) {
      xb = shuffled_x_.slice_rows(b, e);
      yb = shuffled_y_.slice_rows(b, e);
      if (shuffled_w_.defined()) wb = shuffled_w_.slice_rows(b, e);
    } else if (order_.defined()) {
      Tensor idx = order_.slice_rows(b, e);
      xb = ops::gather_rows(x_, idx);
      yb = ops::gather_rows(y_, idx);
      if (w_.defined()) wb = ops::gather_rows(w_, idx);
    } else {
      xb = x_.slice_rows(b, e);
      yb = y_.slice_rows(b, e);
      if (w_.defined()) wb = w_.slice_rows(b, e);
    }
    if (device_) {
      xb = xb.to(*device_);
      yb = yb.to(*device_);
      if (wb.defined()) wb = wb.to(*device_);
    }
    return {xb, yb, wb, Tensor()};
  }

 private:
  static constexpr int64_t kShuffleCopyBytes = int64_t{64} << 20;
  Tensor x_, y_, w_, order_, shuffled_x_, shuffled_y_, shuffled_w_;
  int64_t n_ = 0, cursor_ = 0;
  int batch_;
  bool shuffle_;
  runtime::Device* device_;
  bool rows_in_step_;
  bool direct_ = false;
};

// A PyDataset's batches in the pass's order; with workers > 1, worker threads prepare them ahead (at most
// max_queue_size), delivered in order; an exception in get_batch() reaches fit when its batch is due.
class DatasetSource : public BatchSource {
 public:
  DatasetSource(utils::PyDataset& d, bool shuffle) : d_(d), shuffle_(shuffle) {
    const auto& o = d.options();
    if (o.workers < 1) throw ValueError(fmt::format("PyDataset: workers must be >= 1, got {}", o.workers));
    if (o.max_queue_size < 1) {
      throw ValueError(fmt::format("PyDataset: max_queue_size must be >= 1, got {}", o.max_queue_size));
    }
    workers_ = o.workers;
    window_ = o.max_queue_size;
  }
  ~DatasetSource() override { stop(); }
  int64_t batches_per_pass() const override { return d_.num_batches(); }
  void begin_pass() override {
    stop();
    const int64_t n = d_.num_batches();
    order_.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order_[i] = i;
    if (shuffle_ && n > 1) {
      auto perm = random::permutation(n).to_vector<int64_t>();
      for (int64_t i = 0; i < n; ++i) order_[i] = perm[i];
    }
    next_ = 0;
    if (workers_ > 1) start();
  }
  Batch next() override {
    auto [x, y] = next_pair();
    return {x, y, Tensor(), Tensor()};
  }
  std::pair<Tensor, Tensor> next_pair() {
    if (workers_ <= 1) {
      if (next_ >= static_cast<int64_t>(order_.size())) throw InternalError("PyDataset pass exhausted");
      const int64_t k = next_++;
      return checked(d_.get_batch(order_[k]), order_[k]);
    }
    std::unique_lock lock(mu_);
    if (next_ >= static_cast<int64_t>(order_.size())) throw InternalError("PyDataset pass exhausted");
    const int64_t k = next_++;
    space_cv_.notify_all();  // the window moved
    ready_cv_.wait(lock, [&] { return slots_.count(k) > 0; });
    auto slot = std::move(slots_[k]);
    slots_.erase(k);
    space_cv_.notify_all();
    lock.unlock();
    if (slot.error) std::rethrow_exception(slot.error);
    return checked(std::move(slot.batch), order_[k]);
  }
  void end_epoch() override { d_.on_epoch_end(); }

 private:
  struct Slot {
    std::pair<Tensor, Tensor> batch;
    std::exception_ptr error;
  };
  static std::pair<Tensor, Tensor> checked(std::pair<Tensor, Tensor> b, int64_t index) {
    if (!b.first.defined() || !b.second.defined() || b.first.shape().rank() < 1 || b.second.shape().rank() < 1 ||
        b.first.shape()[0] != b.second.shape()[0] || b.first.shape()[0] == 0) {
      throw ValueError(fmt::format("PyDataset::get_batch({}) must return inputs and targets with the same, non-zero "
                                   "number of rows; got {} and {}",
                                   index, b.first.defined() ? b.first.shape().to_string() : "undefined",
                                   b.second.defined() ? b.second.shape().to_string() : "undefined"));
    }
    return b;
  }
  void start() {
    stopping_ = false;
    claimed_ = 0;
    for (int w = 0; w < workers_; ++w) {
      threads_.emplace_back([this] {
        while (true) {
          int64_t k;
          {
            std::unique_lock lock(mu_);
            space_cv_.wait(lock, [&] { return stopping_ || claimed_ < std::min<int64_t>(next_ + window_, order_.size()); });
            if (stopping_ || claimed_ >= static_cast<int64_t>(order_.size())) return;
            k = claimed_++;
          }
          Slot slot;
          try {
            slot.batch = d_.get_batch(order_[k]);
          } catch (...) {
            slot.error = std::current_exception();
          }
          std::lock_guard lock(mu_);
          slots_[k] = std::move(slot);
          ready_cv_.notify_all();
        }
      });
    }
  }
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    space_cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
    slots_.clear();
  }

  utils::PyDataset& d_;
  bool shuffle_;
  int workers_ = 1;
  int64_t window_ = 10;
  std::vector<int64_t> order_;
  int64_t next_ = 0, claimed_ = 0;
  std::mutex mu_;
  std::condition_variable ready_cv_, space_cv_;
  std::map<int64_t, Slot> slots_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

void check_fit_options(const FitOptions& o) {
  if (o.epochs < 0) throw ValueError(fmt::format("fit: epochs must be >= 0, got {}", o.epochs));
  if (o.verbose < 0 || o.verbose > 2) throw ValueError(fmt::format("fit: verbose must be 0, 1 or 2, got {}", o.verbose));
  if (o.validation_split < 0.0 || o.validation_split >= 1.0) {
    throw ValueError(fmt::format("fit: validation_split must be in [0, 1), got {}", o.validation_split));
  }
}

}  // namespace

// The logs of a batch's end: the loss and the metrics, nothing else. The entries of the previous batch are
// overwritten in place (no map nodes allocated per step) unless a callback changed which keys there are.
static void set_batch_logs(Logs& logs, double loss, const std::vector<std::shared_ptr<metrics::Metric>>& metrics) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    logs["loss"] = loss;
    for (auto& m : metrics) logs[m->name()] = m->result();
    if (logs.size() == 1 + metrics.size()) return;
    logs.clear();
  }
}

// The epoch loop shared by both fit()s: callbacks in Keras's order, batch-size-weighted epoch loss, validation,
// and the time spent waiting for batches against the time spent training on them.
static FitHistory fit_loop(Sequential& model, Sequential::State& s, BatchSource& source, const FitOptions& o,
                           const std::optional<std::pair<Tensor, Tensor>>& val, int val_batch_size) {
  const int64_t per_pass = source.batches_per_pass();
  const int steps = o.steps_per_epoch ? *o.steps_per_epoch : static_cast<int>(per_pass);
  if (steps <= 0) throw ValueError(fmt::format("fit: steps_per_epoch must be positive, got {}", steps));

  auto history = std::make_shared<History>();
  CallbackList cbs;
  for (auto& c : o.callbacks) cbs.all.push_back(c.get());
  cbs.all.push_back(history);
  cbs.all.push_back(std::make_shared<ProgbarLogger>(std::cout));
  TrainingParams params{o.verbose, o.epochs, steps};
  cbs.each([&](Callback& c) {
    c.set_model(&model);
    c.set_params(params);
  });
  FitHistory out;
  using clock = std::chrono::steady_clock;
  model.stop_training = false;
  Logs logs;
  cbs.each([&](Callback& c) { c.on_train_begin(logs); });
  int64_t left_in_pass = 0;  // steps_per_epoch continues a pass across epochs
  for (int epoch = o.initial_epoch; epoch < o.epochs && !model.stop_training; ++epoch) {
    if (!o.steps_per_epoch) left_in_pass = 0;  // without steps_per_epoch every epoch is one full pass
    logs.clear();
    cbs.each([&](Callback& c) { c.on_epoch_begin(epoch, logs); });
    for (auto& m : s.metrics) m->reset_state();
    double loss_sum = 0.0, seen = 0.0, input_s = 0.0, step_s = 0.0;
    for (int step = 0; step < steps; ++step) {
      const auto t0 = clock::now();
      if (left_in_pass == 0) {
        source.begin_pass();
        left_in_pass = per_pass;
      }
      const Batch batch = source.next();
      --left_in_pass;
      const auto t1 = clock::now();
      Logs batch_logs;
      cbs.each([&](Callback& c) { c.on_train_batch_begin(step, batch_logs); });
      const auto t2 = clock::now();
      const auto rows = static_cast<double>(batch.size());
      const double loss_value = train_step(model, s, batch);
      input_s += std::chrono::duration<double>(t1 - t0).count();
      step_s += std::chrono::duration<double>(clock::now() - t2).count();
      loss_sum += loss_value * rows;
      seen += rows;
      set_batch_logs(logs, loss_sum / seen, s.metrics);
      cbs.each([&](Callback& c) { c.on_train_batch_end(step, logs); });
      if (model.stop_training) break;
    }
    source.end_epoch();
    out.input_seconds.push_back(input_s);
    out.step_seconds.push_back(step_s);
    if (input_s > step_s && input_s + step_s > 0.05) {  // the seeds' "the bottleneck may be in data loading"
      log::warning(fmt::format("Epoch {}: {:.0f}% of the time went to waiting for input batches ({:.2f} s waiting, "
                               "{:.2f} s training): the input pipeline is the bottleneck. Prepare batches ahead of "
                               "the training step (PyDataset workers > 1), cache decoded data, or make "
                               "get_batch() cheaper.",
                               epoch + 1, 100.0 * input_s / (input_s + step_s), input_s, step_s));
    }
    Logs epoch_logs = logs;
    if (val) {
      Logs val_logs;
      run_evaluation(model, s, val->first, val->second, val_batch_size, cbs, val_logs);
      for (const auto& [k, v] : val_logs) epoch_logs["val_" + k] = v;
    }
    cbs.each([&](Callback& c) { c.on_epoch_end(epoch, epoch_logs); });
  }
  Logs end_logs;
  cbs.each([&](Callback& c) { c.on_train_end(end_logs); });
  out.history = history->history;
  out.epoch = history->epoch;
  out.params = params;
  return out;
}

// The per-sample weights of fit: sample_weight times class_weight[label] (undefined when neither is given).
static Tensor sample_weights(const Tensor& x, const Tensor& y, const FitOptions& o) {
  const int64_t n = x.shape()[0];
  std::vector<float> w(static_cast<size_t>(n), 1.0f);
  bool any = false;
  if (o.sample_weight) {
    const Tensor& sw = *o.sample_weight;
    if (!sw.defined() || sw.num_elements() != n || (sw.shape().rank() == 2 && sw.shape()[1] != 1) || sw.shape().rank() > 2) {
      throw ValueError(fmt::format("fit: sample_weight must have shape ({},) or ({}, 1), got {}", n, n,
                                   sw.defined() ? sw.shape().to_keras_string() : std::string("an undefined tensor")));
    }
    w = (sw.dtype() == DType::float32 ? sw : sw.cast(DType::float32)).to_vector<float>();
    any = true;
  }
  if (!o.class_weight.empty()) {
    const auto labels = (y.dtype() == DType::float32 ? y : y.cast(DType::float32)).to_vector<float>();
    const int64_t d = n ? static_cast<int64_t>(labels.size()) / n : 1;
    for (int64_t i = 0; i < n; ++i) {
      int64_t cls = 0;
      if (d == 1) {
        cls = static_cast<int64_t>(std::lround(labels[i]));
      } else {  // one-hot: the argmax
        for (int64_t j = 1; j < d; ++j) {
          if (labels[i * d + j] > labels[i * d + cls]) cls = j;
        }
      }
      auto it = o.class_weight.find(static_cast<int>(cls));
      if (it != o.class_weight.end()) w[i] *= static_cast<float>(it->second);
    }
    any = true;
  }
  if (!any) return Tensor();
  DeviceScope host("/CPU:0");
  return Tensor::from_vector(w, Shape({n}));
}

FitHistory Sequential::fit(const Tensor& x_all, const Tensor& y_all, FitOptions o) {
  auto& s = state(s_);
  if (!s.compiled) {
    throw FailedPreconditionError("You must call compile() before using the model (fit() on model '" + s.name +
                                  "').");
  }
  check_data(x_all, y_all, "fit");
  const int batch_size = resolve_batch_size(o.batch_size, "fit");
  check_fit_options(o);
  Tensor x = x_all, y = y_all;
  Tensor w = sample_weights(x_all, y_all, o);
  std::optional<std::pair<Tensor, Tensor>> val = o.validation_data;
  if (val) {
    check_data(val->first, val->second, "fit (validation_data)");
  } else if (o.validation_split > 0.0) {
    // The tail, before any shuffling (keras array_slicing.train_validation_split).
    const int64_t n = x_all.shape()[0];
    const auto split_at = static_cast<int64_t>(std::floor(static_cast<double>(n) * (1.0 - o.validation_split)));
    if (split_at == 0 || split_at == n) {
      throw ValueError(fmt::format("Training data contains {} samples, which is not sufficient to split it into a "
                                   "validation and training set as specified by `validation_split={}`. Either provide "
                                   "more data, or a different value for the `validation_split` argument.",
                                   n, o.validation_split));
    }
    x = x_all.slice_rows(0, split_at);
    y = y_all.slice_rows(0, split_at);
    if (w.defined()) w = w.slice_rows(0, split_at);
    val = std::make_pair(x_all.slice_rows(split_at, n), y_all.slice_rows(split_at, n));
  }
  check_input(*this, s, x);
  prepare_replicas(*this, s);
  runtime::Device& host = runtime::DeviceManager::get().host_device();
  // A recorded step gathers its rows from the host arrays and copies them to its device itself (one copy per step).
  runtime::Device* copy_to = s.device && s.device != &host && !distributed(s) && !plannable(s) ? s.device : nullptr;
  ArraySource source(x, y, w, batch_size, o.shuffle, copy_to, plannable(s));
  return fit_loop(*this, s, source, o, val, batch_size);
}

FitHistory Sequential::fit(utils::PyDataset& dataset, FitOptions o) {
  auto& s = state(s_);
  if (!s.compiled) {
    throw FailedPreconditionError("You must call compile() before using the model (fit() on model '" + s.name +
                                  "').");
  }
  check_fit_options(o);
  if (o.batch_size) {
    throw ValueError(fmt::format("fit: batch_size={} cannot be used with a PyDataset: its get_batch() makes the "
                                 "batches. Remove batch_size.",
                                 *o.batch_size));
  }
  if (o.validation_split > 0.0) {
    throw ValueError("fit: `validation_split` is only supported for Tensors, not for a PyDataset; pass "
                     "validation_data instead.");
  }
  if (dataset.num_batches() <= 0) {
    throw ValueError(fmt::format("fit: the PyDataset has {} batches; it needs at least one", dataset.num_batches()));
  }
  if (o.validation_data) check_data(o.validation_data->first, o.validation_data->second, "fit (validation_data)");
  if (!built()) {  // build from the first batch's shape
    auto first = dataset.get_batch(0);
    check_input(*this, s, first.first);
  }
  prepare_replicas(*this, s);
  DatasetSource source(dataset, o.shuffle);
  return fit_loop(*this, s, source, o, o.validation_data, 32);
}

std::map<std::string, double> Sequential::evaluate_dict(const Tensor& x, const Tensor& y, EvaluateOptions o) {
  auto& s = state(s_);
  if (!s.compiled) throw FailedPreconditionError("You must call compile() before evaluate() on model '" + s.name + "'.");
  check_data(x, y, "evaluate");
  const int batch_size = resolve_batch_size(o.batch_size, "evaluate");
  check_input(*this, s, x);
  prepare_replicas(*this, s);
  CallbackList cbs;
  for (auto& c : o.callbacks) cbs.all.push_back(c.get());
  cbs.all.push_back(std::make_shared<ProgbarLogger>(std::cout));
  const int steps = static_cast<int>((x.shape()[0] + batch_size - 1) / batch_size);
  cbs.each([&](Callback& c) {
    c.set_model(this);
    c.set_params({o.verbose, 1, steps});
  });
  Logs logs;
  run_evaluation(*this, s, x, y, batch_size, cbs, logs);
  return {logs.begin(), logs.end()};
}

std::vector<double> Sequential::evaluate(const Tensor& x, const Tensor& y, EvaluateOptions o) {
  auto logs = evaluate_dict(x, y, std::move(o));
  std::vector<double> out;
  for (const auto& name : metrics_names()) out.push_back(logs.at(name));
  return out;
}

Tensor Sequential::regularization_loss() { return penalty_sum(state(s_)); }

std::vector<double> Sequential::test_on_batch(const Tensor& x, const Tensor& y) {
  auto& s = state(s_);
  if (!s.compiled) throw FailedPreconditionError("You must call compile() before test_on_batch().");
  check_data(x, y, "test_on_batch");
  check_input(*this, s, x);
  for (auto& m : s.metrics) m->reset_state();
  Tensor yb = y, logits;
  Tensor y_pred = forward(*this, s, x, false, &logits);
  if (&yb.device_ref() != &y_pred.device_ref()) yb = yb.to(y_pred.device_ref());
  std::vector<double> out{with_penalties(s, batch_loss(s, yb, y_pred, Tensor(), logits)).item()};
  for (auto& m : s.metrics) {
    m->update_state(yb, y_pred);
    out.push_back(m->result());
  }
  return out;
}

Tensor Sequential::predict_on_batch(const Tensor& x) {
  check_input(*this, state(s_), x);
  return (*this)(x, false);
}

Tensor Sequential::predict(const Tensor& x, PredictOptions o) {
  auto& s = state(s_);
  check_input(*this, s, x);
  prepare_replicas(*this, s);
  if (x.shape()[0] == 0) throw ValueError("predict: x is empty (0 samples)");
  const int batch_size = resolve_batch_size(o.batch_size, "predict");
  const int64_t n = x.shape()[0];
  const int steps = static_cast<int>((n + batch_size - 1) / batch_size);
  CallbackList cbs;  // user callbacks, then the progress bar (Keras's order)
  for (auto& c : o.callbacks) cbs.all.push_back(c.get());
  cbs.all.push_back(std::make_shared<ProgbarLogger>(std::cout));
  cbs.each([&](Callback& c) {
    c.set_model(this);
    c.set_params({o.verbose, 1, steps});
  });
  Logs logs;
  cbs.each([&](Callback& c) { c.on_predict_begin(logs); });
  runtime::Device& host = runtime::DeviceManager::get().host_device();
  Tensor out;
  std::vector<float> values;
  Shape out_row;
  for (int step = 0; step < steps; ++step) {
    const int64_t b = step * static_cast<int64_t>(batch_size), e = std::min<int64_t>(n, b + batch_size);
    cbs.each([&](Callback& c) { c.on_predict_batch_begin(step, logs); });
    std::vector<Tensor> parts;
    if (distributed(s)) {
      std::vector<Tensor> unused;
      distributed_forward(*this, s, x.slice_rows(b, e), nullptr, unused, parts);
    } else {
      parts.push_back((*this)(x.slice_rows(b, e), false));
    }
    for (const auto& yb : parts) {  // replica order is row order
      if (!yb.defined()) continue;
      auto v = yb.to_vector<float>();
      values.insert(values.end(), v.begin(), v.end());
      out_row = yb.shape();
    }
    cbs.each([&](Callback& c) { c.on_predict_batch_end(step, logs); });
  }
  cbs.each([&](Callback& c) { c.on_predict_end(logs); });
  return Tensor::from_host(values.data(), out_row.with_dim(0, n)).to(host);
}

std::vector<double> Sequential::train_on_batch(const Tensor& x, const Tensor& y) {
  auto& s = state(s_);
  if (!s.compiled) throw FailedPreconditionError("You must call compile() before train_on_batch().");
  check_data(x, y, "train_on_batch");
  for (auto& m : s.metrics) m->reset_state();
  check_input(*this, s, x);
  prepare_replicas(*this, s);
  Tensor xb = x, yb = y;
  // A recorded step copies the batch to its device itself (one copy for x and y).
  if (s.device && !distributed(s) && !planned_takes(s, x, y)) {
    if (&xb.device_ref() != s.device) xb = xb.to(*s.device);
    if (&yb.device_ref() != s.device) yb = yb.to(*s.device);
  }
  std::vector<double> out{train_step(*this, s, xb, yb)};
  for (auto& m : s.metrics) out.push_back(m->result());
  return out;
}

}  // namespace osprey::keras
