// Keras optimizers (keras.optimizers): SGD, Adam, RMSprop with Keras 3's formulas and defaults.
#pragma once

#include <concepts>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/tensor.h"
#include "osprey/variable.h"

namespace osprey::keras::optimizers {

namespace schedules {
/// keras.optimizers.schedules.LearningRateSchedule: the learning rate as a function of the step (the optimizer's
/// iterations before the update: 0 at the first one).
class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  virtual double operator()(int64_t step) const = 0;
};
/// initial · rate^(step / decay_steps) (the exponent floored with staircase).
class ExponentialDecay : public LearningRateSchedule {
 public:
  struct Options {
    double initial_learning_rate = 0.001;
    int64_t decay_steps = 1;
    double decay_rate = 0.96;
    bool staircase = false;
  };
  explicit ExponentialDecay(Options o);
  double operator()(int64_t step) const override;
  const Options& options() const { return o_; }

 private:
  Options o_;
};
/// values[i] while step ≤ boundaries[i]; values.back() after the last boundary.
class PiecewiseConstantDecay : public LearningRateSchedule {
 public:
  PiecewiseConstantDecay(std::vector<int64_t> boundaries, std::vector<double> values);
  double operator()(int64_t step) const override;
  const std::vector<int64_t>& boundaries() const { return boundaries_; }
  const std::vector<double>& values() const { return values_; }

 private:
  std::vector<int64_t> boundaries_;
  std::vector<double> values_;
};
/// initial / (1 + rate · step / decay_steps) (the ratio floored with staircase).
class InverseTimeDecay : public LearningRateSchedule {
 public:
  struct Options {
    double initial_learning_rate = 0.001;
    int64_t decay_steps = 1;
    double decay_rate = 0.5;
    bool staircase = false;
  };
  explicit InverseTimeDecay(Options o);
  double operator()(int64_t step) const override;
  const Options& options() const { return o_; }

 private:
  Options o_;
};
/// Cosine decay from initial (or from warmup_target after a linear warm-up) to alpha·that over decay_steps.
class CosineDecay : public LearningRateSchedule {
 public:
  struct Options {
    double initial_learning_rate = 0.001;
    int64_t decay_steps = 1;
    double alpha = 0.0;
    std::optional<double> warmup_target{};
    int64_t warmup_steps = 0;
  };
  explicit CosineDecay(Options o);
  double operator()(int64_t step) const override;
  const Options& options() const { return o_; }

 private:
  Options o_;
};
}  // namespace schedules

/// A learning rate: a number, or a schedule evaluated at every update (`.learning_rate = ExponentialDecay({...})`).
class LearningRate {
 public:
  LearningRate(double value) : value_(value) {}
  template <typename S>
    requires std::derived_from<std::decay_t<S>, schedules::LearningRateSchedule>
  LearningRate(S&& s) : schedule_(std::make_shared<std::decay_t<S>>(std::forward<S>(s))) {
    value_ = (*schedule_)(0);
  }
  LearningRate(std::shared_ptr<schedules::LearningRateSchedule> s) : value_((*s)(0)), schedule_(std::move(s)) {}
  double value() const { return value_; }
  const std::shared_ptr<schedules::LearningRateSchedule>& schedule() const { return schedule_; }

 private:
  double value_ = 0.0;
  std::shared_ptr<schedules::LearningRateSchedule> schedule_;
};

/// Options every optimizer takes. At most one of the clipping options may be set. weight_decay is decoupled
/// (var −= var·wd·lr before the update), as Keras applies it for every optimizer.
struct BaseOptions {
  std::optional<double> clipnorm{}, clipvalue{}, global_clipnorm{};
  std::optional<double> weight_decay{};
};

/// Keras's LossScaleOptimizer arguments (keras.optimizers.LossScaleOptimizer; see LossScaleOptimizer below).
struct LossScaleOptions {
  double initial_scale = 32768.0;  ///< 2^15
  int64_t dynamic_growth_steps = 2000;
  std::string name = "loss_scale_optimizer";
};
/// Dynamic loss scaling's state: Keras's dynamic_scale (a float32 variable) and step_counter (the finite steps since
/// the scale last changed).
struct LossScaleState {
  LossScaleOptions options;
  float dynamic_scale = 32768.0f;
  int64_t step_counter = 0;
  /// True when the user asked for it (LossScaleOptimizer(...)); false when compile() turned it on for a model under
  /// mixed_float16, as Keras wraps the optimizer then: files record the optimizer as the user gave it.
  bool requested = true;
};

/// Base class: applies gradients to variables. Slot variables live on each variable's device.
class Optimizer {
 public:
  Optimizer(std::string name, LearningRate learning_rate, BaseOptions base);
  virtual ~Optimizer() = default;

  /// One update of `variables` with `gradients` (same order; undefined gradients are skipped), then
  /// iterations += 1. Clipping happens first.
  void apply_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable*>& variables);
  /// apply_gradients() with the gradients (a + b) · 0.5 per element, in float32: the two halves of a batch. Adam
  /// averages inside its update; the others average into `scratch` first (kept by the caller between steps).
  void apply_gradient_halves(const std::vector<Tensor>& a, const std::vector<Tensor>& b,
                             const std::vector<Variable*>& variables, std::vector<Tensor>& scratch);
  /// Creates the slot variables for `variables` if not yet done (mirrored like the variables they belong to).
  /// Distribution strategies call it before their replicas apply gradients concurrently.
  void build_slots(const std::vector<Variable*>& variables);
  /// Undoes build_slots(): the slot variables are freed and built() is false again (a checkpoint load that built
  /// the slots to read them, then failed, leaves the optimizer as it found it).
  void unbuild_slots();
  /// The update of one replica under a distribution strategy (replica context: each variable's and slot's
  /// component of this thread's replica), without advancing iterations; call finish_replica_step() once after
  /// every replica has applied.
  void apply_replica_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable*>& variables);
  /// Replicas that share host memory (logical CPUs) split the update instead: replica `shard` of `num_shards`
  /// updates its slice of every variable (elements shard_range()) once, on its own component, and copies the
  /// result into the other components. `summed` holds the all-reduced gradients (at least that slice). Needs no
  /// clipping (clips() false: clipping needs whole gradients). The slots' other components are left behind (a
  /// replica only ever reads its own slice of its own component): once every replica has applied, the caller says
  /// so with defer_slot_sync(), and they are brought up to date when something else reads them.
  void apply_sharded_gradients(const std::vector<Tensor>& summed, const std::vector<Variable*>& variables, int shard,
                               int num_shards);
  /// After every replica's apply_sharded_gradients(): the slots' components are behind until the next slots_of(),
  /// sync_slots() or unsharded update, which copies every shard's slice of every slot from its replica's component
  /// into the others first.
  void defer_slot_sync(int num_shards) { stale_slot_shards_ = num_shards; }
  /// Brings slot components left behind by sharded updates up to date (nothing to do otherwise).
  void sync_slots();
  void finish_replica_step() { ++iterations_; }
  /// The slot variables of variable `index`, in the order update_tensors() takes them (nullptr: not used); every
  /// replica component up to date.
  std::vector<Variable*> slots_of(std::size_t index) {
    sync_slots();
    return slot_variables(index);
  }
  /// Restores the step count (loading a checkpoint).
  /// Sets the step count (a loaded file's); ValueError outside [0, 2^62] (the updates compute iterations + 1).
  void set_iterations(int64_t iterations);
  /// Number of variables the optimizer updates (after build_slots()).
  std::size_t num_tracked() const { return num_tracked_; }
  /// Work done once per update before the variables are touched: the learning-rate schedule is evaluated at the
  /// current iterations, and optimizers with per-step state advance it (Nadam). apply_gradients() calls it;
  /// distribution strategies call it once before their replicas apply.
  void begin_step();
  const BaseOptions& base_options() const { return base_; }
  /// True when clipnorm, clipvalue or global_clipnorm is set.
  bool clips() const { return base_.clipnorm || base_.clipvalue || base_.global_clipnorm; }
  /// True when apply_sharded_gradients() can be used: no clipping and no weight decay.
  bool shardable() const { return !clips() && !(base_.weight_decay && *base_.weight_decay != 0.0); }
  /// Keras's class name ("Adam").
  virtual std::string class_name() const = 0;
  const std::string& name() const { return name_; }
  /// Renames the optimizer (a loaded file's name: Keras's "adam_2").
  void set_name(std::string name) { name_ = std::move(name); }
  int64_t iterations() const { return iterations_; }
  /// The learning rate, stored as float32 like Keras's variable (a schedule's value at the last update).
  float learning_rate() const { return learning_rate_; }
  /// Sets a constant learning rate. ValueError when the optimizer follows a schedule.
  void set_learning_rate(double lr);
  /// Number of optimizer variables once built (iteration + learning_rate + slots), for summary().
  int64_t count_params() const;
  bool built() const { return built_; }
  /// True when the learning rate follows a schedule (then it is not a saved variable, as in Keras).
  bool has_schedule() const { return schedule_ != nullptr; }
  const std::shared_ptr<schedules::LearningRateSchedule>& schedule() const { return schedule_; }

  // ---- Dynamic loss scaling: what Keras's LossScaleOptimizer adds around an optimizer (LossScaleOptimizer below
  // turns it on, and compile() does for a model under mixed_float16). The loss is multiplied by the scale before
  // the gradients are taken; apply_gradients() then skips the update and halves the scale when a gradient has an
  // inf or NaN, else divides the gradients by the scale, updates, and doubles the scale after
  // dynamic_growth_steps finite steps in a row. Skipped steps leave iterations unchanged.

  /// Turns dynamic loss scaling on. ValueError for an initial_scale that is not a positive finite number, a
  /// dynamic_growth_steps below 1, or when it is on already.
  void enable_loss_scaling(const LossScaleOptions& options, bool requested = true);
  /// The loss-scaling state, or nullptr without loss scaling.
  const LossScaleState* loss_scale() const { return loss_scale_ ? &*loss_scale_ : nullptr; }
  /// Sets the scale and the step counter (a loaded file's or a backup's). ValueError for a scale that is not a
  /// positive finite number or a negative counter.
  void set_loss_scale_state(double dynamic_scale, int64_t step_counter);
  /// Keras's optimizer.scale_loss(): loss × the current scale with loss scaling, else `loss` itself. Take the
  /// gradients of what it returns (recorded steps read the scale from a tensor that changes in place).
  Tensor scale_loss(const Tensor& loss);
  /// With loss scaling: whether every element of every defined gradient is finite, and if so `out` = each
  /// gradient ÷ the scale (undefined ones stay undefined). Without: `out` = `scaled`, true.
  bool unscale_gradients(const std::vector<Tensor>& scaled, std::vector<Tensor>& out);
  /// After a step with loss scaling: a finite step counts towards doubling the scale; a non-finite one halves it
  /// and resets the count.
  void update_loss_scale(bool finite);

 protected:
  /// Creates the slot variables for `vars` (called once, at the first apply).
  virtual void build(const std::vector<Variable*>& vars) = 0;
  /// Frees what build() created.
  virtual void clear_slots() = 0;
  /// slots_of() without the sync: for the updates themselves.
  virtual std::vector<Variable*> slot_variables(std::size_t index) = 0;
  /// Updates variable `index` with its gradient (its and its slots' components of the current replica).
  void update_step(const Tensor& gradient, Variable& variable, std::size_t index);
  /// The update itself on tensors (whole variables or element ranges of them): `var` and its `slots`.
  virtual void update_tensors(const Tensor& gradient, Tensor& var, const std::vector<Tensor*>& slots) = 0;
  /// Updates every variable with a defined gradient in one go, where the optimizer and the backend can (Adam: one
  /// kernel over all of them); false when it did nothing and update_step() runs per variable instead.
  /// With `second_half`, the gradient of variable i is (grads[i] + (*second_half)[i]) · 0.5.
  virtual bool update_fused(const std::vector<Tensor>&, const std::vector<Variable*>&,
                            const std::vector<Tensor>* /*second_half*/) {
    return false;
  }
  /// A slot shaped like `var` filled with `value`, on its device (mirrored like it).
  Variable make_slot(const Variable& var, double value = 0.0) const;
  /// Per-step state of an optimizer (Nadam's μ product), advanced once per update by begin_step().
  virtual void advance_step_state() {}
  /// Scalars of per-step state saved with the optimizer (Nadam's u_product), counted by count_params().
  virtual int64_t step_state_params() const { return 0; }
  /// Overwrites `dst` (a variable, slot or a view of one) with `src`'s values.
  static void write_into(Tensor& dst, const Tensor& src);
  /// Clipping then update_step() for every defined gradient.
  void update_all(const std::vector<Tensor>& gradients, const std::vector<Variable*>& variables);
  /// apply_gradient_halves() once the gradients are known to be applied.
  void apply_halves(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const std::vector<Variable*>& variables,
                    std::vector<Tensor>& scratch);
  /// The current scale as a scalar of `dtype` on `device`, kept between steps and overwritten in place when the
  /// scale changes.
  Tensor scale_tensor(runtime::Device& device, DType dtype);

  std::string name_;
  float learning_rate_;
  std::shared_ptr<schedules::LearningRateSchedule> schedule_;
  BaseOptions base_;
  int64_t iterations_ = 0;
  bool built_ = false;
  std::size_t num_tracked_ = 0;
  int64_t slot_elements_ = 0;
  int stale_slot_shards_ = 0;  // defer_slot_sync()'s shard count; 0: every slot component is current
  std::optional<LossScaleState> loss_scale_;
  std::vector<Tensor> scale_tensors_;  // scale_tensor()'s, one per device and dtype
};

struct SGDOptions {
  LearningRate learning_rate = 0.01;
  double momentum = 0.0;
  bool nesterov = false;
  BaseOptions base{};
};
/// var -= lr·g, or with momentum m = μm − lr·g; var += m (nesterov: var += μm − lr·g).
class SGD : public Optimizer {
 public:
  explicit SGD(SGDOptions options = {});
  std::string class_name() const override { return "SGD"; }
  const SGDOptions& options() const { return opt_; }

 protected:
  void build(const std::vector<Variable*>& vars) override;
  void clear_slots() override { momentums_.clear(); }
  std::vector<Variable*> slot_variables(std::size_t i) override;
  void update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) override;

 private:
  SGDOptions opt_;
  std::vector<Variable> momentums_;
};

struct AdamOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  BaseOptions base{};
};
/// Keras's Adam: α = lr·√(1−β2^t)/(1−β1^t); var −= m·α/(√v + ε) (ε not bias-corrected).
class Adam : public Optimizer {
 public:
  explicit Adam(AdamOptions options = {});
  /// For subclasses (AdamW): another name.
  Adam(std::string name, AdamOptions options);
  std::string class_name() const override { return "Adam"; }
  const AdamOptions& options() const { return opt_; }

 protected:
  void build(const std::vector<Variable*>& vars) override;
  void clear_slots() override { m_.clear(); v_.clear(); vhat_.clear(); }
  std::vector<Variable*> slot_variables(std::size_t i) override;
  void update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) override;
  bool update_fused(const std::vector<Tensor>& grads, const std::vector<Variable*>& vars,
                    const std::vector<Tensor>* second_half) override;

 private:
  float alpha() const;
  AdamOptions opt_;
  std::vector<Variable> m_, v_, vhat_;
};

struct RMSpropOptions {
  LearningRate learning_rate = 0.001;
  double rho = 0.9;
  double momentum = 0.0;
  double epsilon = 1e-7;
  bool centered = false;
  BaseOptions base{};
};
/// Keras's RMSprop: v = ρv + (1−ρ)g²; var −= lr·g/√(v + ε) (with optional momentum and centering).
class RMSprop : public Optimizer {
 public:
  explicit RMSprop(RMSpropOptions options = {});
  std::string class_name() const override { return "RMSprop"; }
  const RMSpropOptions& options() const { return opt_; }

 protected:
  void build(const std::vector<Variable*>& vars) override;
  void clear_slots() override { v_.clear(); mom_.clear(); mg_.clear(); }
  std::vector<Variable*> slot_variables(std::size_t i) override;
  void update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) override;

 private:
  RMSpropOptions opt_;
  std::vector<Variable> v_, mom_, mg_;
};

/// The slice of `n` elements that replica `shard` of `num_shards` handles (starts aligned to 16 elements): the
/// same split for the gradient all-reduce and the sharded optimizer update.
std::pair<int64_t, int64_t> shard_range(int64_t n, int shard, int num_shards);

/// Keras's AdamW: Adam with decoupled weight decay (weight_decay 0.004 by default) applied before each update.
struct AdamWOptions {
  LearningRate learning_rate = 0.001;
  double weight_decay = 0.004;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  BaseOptions base{};
};
class AdamW : public Adam {
 public:
  explicit AdamW(AdamWOptions options = {});
  std::string class_name() const override { return "AdamW"; }
};

/// Keras's Adagrad: acc += g²; var −= lr·g/√(acc + ε), acc starting at initial_accumulator_value.
struct AdagradOptions {
  LearningRate learning_rate = 0.001;
  double initial_accumulator_value = 0.1;
  double epsilon = 1e-7;
  BaseOptions base{};
};
class Adagrad : public Optimizer {
 public:
  explicit Adagrad(AdagradOptions options = {});
  std::string class_name() const override { return "Adagrad"; }
  const AdagradOptions& options() const { return opt_; }

 protected:
  void build(const std::vector<Variable*>& vars) override;
  void clear_slots() override { accumulators_.clear(); }
  std::vector<Variable*> slot_variables(std::size_t i) override;
  void update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) override;

 private:
  AdagradOptions opt_;
  std::vector<Variable> accumulators_;
};

/// Keras's Adamax: m += (g − m)(1−β1); u = max(β2·u, |g|); var −= lr·m / ((1−β1^t)(u + ε)).
struct AdamaxOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  BaseOptions base{};
};
class Adamax : public Optimizer {
 public:
  explicit Adamax(AdamaxOptions options = {});
  std::string class_name() const override { return "Adamax"; }
  const AdamaxOptions& options() const { return opt_; }

 protected:
  void build(const std::vector<Variable*>& vars) override;
  void clear_slots() override { m_.clear(); u_.clear(); }
  std::vector<Variable*> slot_variables(std::size_t i) override;
  void update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) override;

 private:
  AdamaxOptions opt_;
  std::vector<Variable> m_, u_;
};

/// Keras's Nadam (Adam with Nesterov momentum and the 0.96 momentum schedule).
struct NadamOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  BaseOptions base{};
};
class Nadam : public Optimizer {
 public:
  explicit Nadam(NadamOptions options = {});
  std::string class_name() const override { return "Nadam"; }
  const NadamOptions& options() const { return opt_; }

 protected:
  void build(const std::vector<Variable*>& vars) override;
  void clear_slots() override { m_.clear(); v_.clear(); }
  std::vector<Variable*> slot_variables(std::size_t i) override;
  void update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) override;
  void advance_step_state() override;
  int64_t step_state_params() const override { return 1; }

 public:
  /// Keras's u_product variable (saved with the optimizer).
  double u_product() const { return u_product_; }
  void set_u_product(double v) { u_product_ = v; }

 private:
  NadamOptions opt_;
  std::vector<Variable> m_, v_;
  double u_product_ = 1.0;
};

/// An optimizer by Keras name ("adam", "sgd", "rmsprop", "adamw", "adagrad", "adamax", "nadam";
/// case-insensitive) with default options.
/// Throws ValueError for unknown names.
std::shared_ptr<Optimizer> get(const std::string& name);

}  // namespace osprey::keras::optimizers

namespace osprey::keras::optimizers {
class LossScaleOptimizer;
}

namespace osprey::keras {
/// An optimizer given by name or as an object: `.optimizer = "adam"` or `.optimizer = optimizers::Adam({...})`.
class OptimizerRef {
 public:
  OptimizerRef(const char* name) : ptr_(optimizers::get(name)) {}
  OptimizerRef(const std::string& name) : ptr_(optimizers::get(name)) {}
  template <typename O>
    requires std::derived_from<std::decay_t<O>, optimizers::Optimizer>
  OptimizerRef(O&& o) : ptr_(std::make_shared<std::decay_t<O>>(std::forward<O>(o))) {}
  OptimizerRef(std::shared_ptr<optimizers::Optimizer> o) : ptr_(std::move(o)) {}
  OptimizerRef(const optimizers::LossScaleOptimizer& o);
  const std::shared_ptr<optimizers::Optimizer>& get() const { return ptr_; }

 private:
  std::shared_ptr<optimizers::Optimizer> ptr_;
};
}  // namespace osprey::keras

namespace osprey::keras::optimizers {
/// keras.optimizers.LossScaleOptimizer (also keras::mixed_precision::LossScaleOptimizer): dynamic loss scaling
/// around `inner`, for training in float16 —
///   `.optimizer = keras::mixed_precision::LossScaleOptimizer(keras::optimizers::Adam(), {.initial_scale = 1024})`.
/// compile() does this by itself for a model under mixed_float16 (CompileOptions::auto_scale_loss). In Osprey the
/// scaling is part of the inner optimizer object (Optimizer::loss_scale() gives its state, model.optimizer() is
/// that object): iterations, the learning rate and the slots are the inner optimizer's, as Keras's wrapper
/// forwards them. An optimizer given as an object is copied first; one given as a shared_ptr gets the scaling.
class LossScaleOptimizer {
 public:
  explicit LossScaleOptimizer(OptimizerRef inner, LossScaleOptions options = {});
  /// The inner optimizer, now scaling losses.
  const std::shared_ptr<Optimizer>& optimizer() const { return inner_; }

 private:
  std::shared_ptr<Optimizer> inner_;
};
}  // namespace osprey::keras::optimizers

namespace osprey::keras {
inline OptimizerRef::OptimizerRef(const optimizers::LossScaleOptimizer& o) : ptr_(o.optimizer()) {}
namespace mixed_precision {
using optimizers::LossScaleOptimizer;
using optimizers::LossScaleOptions;
}  // namespace mixed_precision
}  // namespace osprey::keras
