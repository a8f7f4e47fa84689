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

/// Options every optimizer takes. At most one of the clipping options may be set.
struct BaseOptions {
  std::optional<double> clipnorm{}, clipvalue{}, global_clipnorm{};
};

/// Base class: applies gradients to variables. Slot variables live on each variable's device.
class Optimizer {
 public:
  Optimizer(std::string name, double learning_rate, BaseOptions base);
  virtual ~Optimizer() = default;

  /// One update of `variables` with `gradients` (same order; undefined gradients are skipped), then
  /// iterations += 1. Clipping happens first.
  void apply_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable*>& variables);
  /// Creates the slot variables for `variables` if not yet done (mirrored like the variables they belong to).
  /// Distribution strategies call it before their replicas apply gradients concurrently.
  void build_slots(const std::vector<Variable*>& variables);
  /// The update of one replica under a distribution strategy (replica context: each variable's and slot's
  /// component of this thread's replica), without advancing iterations; call finish_replica_step() once after
  /// every replica has applied.
  void apply_replica_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable*>& variables);
  /// Replicas that share host memory (logical CPUs) split the update instead: replica `shard` of `num_shards`
  /// updates its slice of every variable (elements shard_range()) once, on its own component, and copies the
  /// result into the other components. `summed` holds the all-reduced gradients (at least that slice). Needs no
  /// clipping (clips() false: clipping needs whole gradients).
  void apply_sharded_gradients(const std::vector<Tensor>& summed, const std::vector<Variable*>& variables, int shard,
                               int num_shards);
  void finish_replica_step() { ++iterations_; }
  /// True when clipnorm, clipvalue or global_clipnorm is set.
  bool clips() const { return base_.clipnorm || base_.clipvalue || base_.global_clipnorm; }
  /// Keras's class name ("Adam").
  virtual std::string class_name() const = 0;
  const std::string& name() const { return name_; }
  int64_t iterations() const { return iterations_; }
  /// The learning rate, stored as float32 like Keras's variable.
  float learning_rate() const { return learning_rate_; }
  void set_learning_rate(double lr);
  /// Number of optimizer variables once built (iteration + learning_rate + slots), for summary().
  int64_t count_params() const;
  bool built() const { return built_; }

 protected:
  /// Creates the slot variables for `vars` (called once, at the first apply).
  virtual void build(const std::vector<Variable*>& vars) = 0;
  /// Updates variable `index` with its gradient (its and its slots' components of the current replica).
  void update_step(const Tensor& gradient, Variable& variable, std::size_t index);
  /// The slot variables of variable `index`, in the order update_tensors() takes them (nullptr: not used).
  virtual std::vector<Variable*> slots_of(std::size_t index) = 0;
  /// The update itself on tensors (whole variables or element ranges of them): `var` and its `slots`.
  virtual void update_tensors(const Tensor& gradient, Tensor& var, const std::vector<Tensor*>& slots) = 0;
  /// A zero slot shaped like `var`, on its device (mirrored like it).
  Variable make_slot(const Variable& var) const;
  /// Clipping then update_step() for every defined gradient.
  void update_all(const std::vector<Tensor>& gradients, const std::vector<Variable*>& variables);

  std::string name_;
  float learning_rate_;
  BaseOptions base_;
  int64_t iterations_ = 0;
  bool built_ = false;
  int64_t slot_elements_ = 0;
};

struct SGDOptions {
  double learning_rate = 0.01;
  double momentum = 0.0;
  bool nesterov = false;
  BaseOptions base{};
};
/// var -= lr·g, or with momentum m = μm − lr·g; var += m (nesterov: var += μm − lr·g).
class SGD : public Optimizer {
 public:
  explicit SGD(SGDOptions options = {});
  std::string class_name() const override { return "SGD"; }

 protected:
  void build(const std::vector<Variable*>& vars) override;
  std::vector<Variable*> slots_of(std::size_t i) override;
  void update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) override;

 private:
  SGDOptions opt_;
  std::vector<Variable> momentums_;
};

struct AdamOptions {
  double learning_rate = 0.001;
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
  std::string class_name() const override { return "Adam"; }

 protected:
  void build(const std::vector<Variable*>& vars) override;
  std::vector<Variable*> slots_of(std::size_t i) override;
  void update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) override;

 private:
  AdamOptions opt_;
  std::vector<Variable> m_, v_, vhat_;
};

struct RMSpropOptions {
  double learning_rate = 0.001;
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

 protected:
  void build(const std::vector<Variable*>& vars) override;
  std::vector<Variable*> slots_of(std::size_t i) override;
  void update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) override;

 private:
  RMSpropOptions opt_;
  std::vector<Variable> v_, mom_, mg_;
};

/// The slice of `n` elements that replica `shard` of `num_shards` handles (starts aligned to 16 elements): the
/// same split for the gradient all-reduce and the sharded optimizer update.
std::pair<int64_t, int64_t> shard_range(int64_t n, int shard, int num_shards);

/// An optimizer by Keras name ("adam", "sgd", "rmsprop"; case-insensitive) with default options.
/// Throws ValueError for unknown names.
std::shared_ptr<Optimizer> get(const std::string& name);

}  // namespace osprey::keras::optimizers

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
  const std::shared_ptr<optimizers::Optimizer>& get() const { return ptr_; }

 private:
  std::shared_ptr<optimizers::Optimizer> ptr_;
};
}  // namespace osprey::keras
